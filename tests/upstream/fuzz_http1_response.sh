#!/usr/bin/env bash
# Builds Http1Response's libFuzzer target (fuzz_http1_response.cpp) with clang, outside the main
# build, and runs it. Needs clang and libclang-rt-14-dev (libFuzzer, sanitizers) besides
# qt6-base-dev.
#   tests/upstream/fuzz_http1_response.sh [seconds (60)] [work dir (build/fuzz-http1-response)]
# Exits non-zero when the fuzzer finds a crash, a sanitizer report or a broken property; the
# input that did it is left in the work dir (crash-*).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
seconds=${1:-60}
. "$root/tests/common/fuzz-build.sh"
fuzz_workdir "${2:-$root/build/fuzz-http1-response}"
fuzz_build fuzz_http1_response "Qt6Core" -I"$root/server" \
    "$here/fuzz_http1_response.cpp" "$root/server/upstream/Http1Response.cpp"

# Seeds: byte 0 is the piece size and the HEAD flag; then answers as upstreams send them
# (lengths, chunks with extensions and trailers, interim heads, SSE until close) and broken ones.
fuzz_seeds '%b' '\x03HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n{"a":1}' \
    '\x05HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n0\r\nT: 1\r\n\r\n' \
    '\x01HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 429 Too Many\r\nContent-Length: 2\r\n\r\n{}' \
    '\x0fHTTP/1.0 200 OK\ncontent-type: text/event-stream\n\ndata: {}\n\n' \
    '\x12HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n' \
    '\x02HTTP/1.1 200 OK\r\nContent-Length: 3, 3\r\nConnection: close\r\n\r\nabcHTTP/1.1' \
    '\x04HTTP/1.1 204 No Content\r\n\r\n' '\x07HTTP/1.1 2x0\r\n\r\n' \
    '\x08HTTP/1.1 200 OK\r\n folded\r\n\r\n' \
    '\x09HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffff\r\nab'

./fuzz_http1_response -max_total_time="$seconds" -max_len=4096 -timeout=10 -print_final_stats=1 corpus
