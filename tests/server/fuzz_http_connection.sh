#!/usr/bin/env bash
# Builds the HTTP connection state machine's libFuzzer target (fuzz_http_connection.cpp) with
# clang, outside the main build, and runs it. Needs clang and libclang-rt-14-dev (libFuzzer,
# sanitizers) besides qt6-base-dev.
#   tests/server/fuzz_http_connection.sh [seconds (60)] [work dir (build/fuzz_http_connection)]
# Exits non-zero when the fuzzer finds a crash, a sanitizer report or a broken property; the
# input that did it is left in the work dir (crash-*).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
seconds=${1:-60}
. "$root/tests/common/fuzz-build.sh"
fuzz_workdir "${2:-$root/build/fuzz_http_connection}"
fuzz_build fuzz_http_connection "Qt6Core Qt6Network" -I"$root/server" \
    "$here/fuzz_http_connection.cpp" "$root/server/http/HttpRequestReader.cpp" \
    "$root/server/http/HttpHead.cpp"

# Seeds: byte 0 the head limits, byte 1 the body limit (0xf0 and over: near the largest
# integer), byte 2 the budget, byte 3 the head step's decisions; then what a client sends:
# pipelined requests, chunked bodies (with extensions, trailers, sizes that overflow), broken
# framing.
fuzz_seeds '%b' '\x3f\x40\x00\x01GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /a HTTP/1.1\r\n\r\n' \
    '\x3f\x40\x00\x02POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\nhelloGET / HTTP/1.1\r\nConnection: close\r\n\r\n' \
    '\x3f\x80\x00\x03POST /e HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n6\r\n world\r\n0\r\nT: 1\r\n\r\nGET / HTTP/1.0\r\n\r\n' \
    '\x3f\xff\x00\x04POST /e HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n7fffffffffffffff\r\nab' \
    '\x3f\xf3\x80\x05POST /e HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n0123456789abcdef\r\n7ffffffffffffff0\r\n' \
    '\x3f\x40\x00\x06POST /e HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffffff\r\n' \
    '\x3f\x40\x00\x07POST /e HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab' \
    '\x3f\x40\x00\x08POST /e HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n' \
    '\x3f\x40\x20\x09POST /e HTTP/1.1\r\nContent-Length: 900000\r\n\r\nxyz' \
    '\x00\x40\x00\x0aGET / HTTP/1.1\r\nX-Long: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n' \
    '\x3f\x40\x00\x0bPOST /e HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n-1\r\n+5\r\n0x5\r\n'

./fuzz_http_connection -max_total_time="$seconds" -max_len=4096 -timeout=10 -print_final_stats=1 \
    corpus
