#!/usr/bin/env bash
# Builds the HTTP request head parser's libFuzzer target (fuzz_http_head.cpp) with clang, outside
# the main build, and runs it. Needs clang and libclang-rt-14-dev (libFuzzer, sanitizers) besides
# qt6-base-dev.
#   tests/server/fuzz_http_head.sh [seconds (60)] [work dir (build/fuzz_http_head)]
# Exits non-zero when the fuzzer finds a crash, a sanitizer report or a broken property; the
# input that did it is left in the work dir (crash-*).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
seconds=${1:-60}
. "$root/tests/common/fuzz-build.sh"
fuzz_workdir "${2:-$root/build/fuzz_http_head}"
fuzz_build fuzz_http_head "Qt6Core Qt6Network" -I"$root/server" \
    "$here/fuzz_http_head.cpp" "$root/server/http/HttpHead.cpp"

# Seeds: byte 0 is the header-line limit (200 and over: 100); then heads as clients send them,
# and broken ones.
fuzz_seeds '%b' '\xc8GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: curl/7.88.1\r\nAccept: */*' \
    '\xc8POST /v1/chat/completions?x=1&y=%20 HTTP/1.1\r\nAuthorization: Bearer sk-a\r\nContent-Type: application/json\r\nContent-Length: 12\r\nExpect: 100-continue' \
    '\x03GET /a%2Fb HTTP/1.0\nConnection: keep-alive\n\nX:  spaced \t' \
    '\xc8GET  / HTTP/1.1' '\xc8GET / HTTP/2.0' '\xc8GET http://x/ HTTP/1.1' \
    '\x01GET / HTTP/1.1\r\nA: 1\r\nB: 2' '\xc8GET / HTTP/1.1\r\n folded: x' \
    '\xc8GET / HTTP/1.1\r\n: empty\r\nBad Name: x' '\xc8G\xe4T /\xe4\xb8\xad HTTP/1.1\r\nX: \xe4\xb8\xad'

./fuzz_http_head -max_total_time="$seconds" -max_len=2048 -timeout=10 -print_final_stats=1 corpus
