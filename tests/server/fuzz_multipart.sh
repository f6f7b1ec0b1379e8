#!/usr/bin/env bash
# Builds the multipart/form-data parser's libFuzzer target (fuzz_multipart.cpp) with clang,
# outside the main build, and runs it. Needs clang and libclang-rt-14-dev (libFuzzer,
# sanitizers) besides the build deps (qt6-base-dev).
#   tests/server/fuzz_multipart.sh [seconds (60)] [work dir (build/fuzz_multipart)]
# Exits non-zero when the fuzzer finds a crash, a sanitizer report or a broken property; the
# input that did it is left in the work dir (crash-*).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
seconds=${1:-60}
. "$root/tests/common/fuzz-build.sh"
fuzz_workdir "${2:-$root/build/fuzz_multipart}"
fuzz_build fuzz_multipart "Qt6Core" -I"$root/server" \
    "$here/fuzz_multipart.cpp" "$root/server/http/Multipart.cpp"

# Seeds: byte 0 picks the boundary (0 "b", 1 "--", 2 "abc", 3 "aab", 4 a browser's; +128 small
# limits), byte 1 seeds the split; then a body around the shapes the parser handles.
cd_file='Content-Disposition: form-data; name='
fuzz_seeds '%b' \
    "\x02\x07--abc\r\n${cd_file}\"a\"\r\n\r\nvalue\r\n--abc--\r\n" \
    "\x02\x01preamble\r\n--abc\r\n${cd_file}a\r\n\r\n\r\n--ab\r\n--abc\r\n${cd_file}\"f\"; filename=\"C:\\\\x\\\\y.wav\"\r\nContent-Type: audio/wav\r\n\r\nRIFF\r\n--abc--epilogue" \
    "\x82\x03--abc\r\n${cd_file}\"f\"; filename=\"../../etc/passwd\"\r\n\r\n0123456789\r\n--abc--" \
    "\x03\x05--aab  \r\n${cd_file}\"q\\\\\"n\"; filename*=UTF-8''r%C3%A9.txt\r\n\r\n\r\n--aa\r\n--aab\r\n--aab--" \
    "\x00\x09--b\r\n${cd_file}x\r\n\r\n\r\n--b\r\n${cd_file}x\r\n\r\n--b\r\n${cd_file}y\r\n\r\nz\r\n--b--" \
    "\x01\x02----\r\n\r\n\r\n------" \
    "\x84\x04------WebKitFormBoundary7MA4YWxkTrZu0gW\r\n${cd_file}\"model\"\r\n\r\ntts-1\r\n------WebKitFormBoundary7MA4YWxkTrZu0gW--\r\n" \
    "multipart/form-data; boundary=\"a b:c?\"" \
    "Multipart/Form-Data ; charset=utf-8;  BOUNDARY = abc  "

./fuzz_multipart -max_total_time="$seconds" -max_len=4096 -timeout=10 -print_final_stats=1 corpus
