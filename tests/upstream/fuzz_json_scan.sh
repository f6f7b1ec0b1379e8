#!/usr/bin/env bash
# Builds JsonScan's libFuzzer target (fuzz_json_scan.cpp) with clang, outside the main build,
# and runs it. Needs clang and libclang-rt-14-dev (libFuzzer, sanitizers) besides qt6-base-dev.
#   tests/upstream/fuzz_json_scan.sh [seconds (60)] [work dir (build/fuzz-json-scan)]
# Exits non-zero when the fuzzer finds a crash, a sanitizer report or a broken property; the
# input that did it is left in the work dir (crash-*).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
seconds=${1:-60}
. "$root/tests/common/fuzz-build.sh"
fuzz_workdir "${2:-$root/build/fuzz-json-scan}"
fuzz_build fuzz_json_scan "Qt6Core" -I"$root/server" \
    "$here/fuzz_json_scan.cpp" "$root/server/upstream/JsonScan.cpp"

# Seeds: answers of the three protocols, broken ones, deep nesting.
fuzz_seeds '%b' '{"id":"c","model":"m","choices":[{"message":{"content":"hi"}}],"usage":{"prompt_tokens":3}}' \
    '{"type":"message","model":"m","content":[{"type":"text","text":"x"}],"usage":{"input_tokens":1}}' \
    '{"model":"m","output":[],"usage":{"input_tokens":1,"output_tokens":2}}' \
    '{"a":{"b":{"c":"d"}},"e":[1,-2,true,false,null]}' '{"model":"\u00e9\n\"x\""}' \
    '{"model":' '{"a":1,}' '[[[[[[[[[[]]]]]]]]]]' ' { } ' '{"x":"\xe4\xb8\xad"}'

./fuzz_json_scan -max_total_time="$seconds" -max_len=2048 -timeout=10 -print_final_stats=1 corpus
