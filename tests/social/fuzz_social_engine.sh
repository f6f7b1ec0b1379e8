#!/usr/bin/env bash
# Builds the social engine's libFuzzer target (fuzz_social_engine.cpp: EnvelopeScanner and
# SocialCatalog) with clang, outside the main build, and runs it. Needs clang and
# libclang-rt-14-dev (libFuzzer, sanitizers) besides qt6-base-dev.
#   tests/social/fuzz_social_engine.sh [seconds (60)] [work dir (build/fuzz-social-engine)]
# Exits non-zero when the fuzzer finds a crash, a sanitizer report or a broken property; the
# input that did it is left in the work dir (crash-*).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
seconds=${1:-60}
. "$root/tests/common/fuzz-build.sh"
fuzz_workdir "${2:-$root/build/fuzz-social-engine}"
fuzz_build fuzz_social_engine "Qt6Core" -I"$root/server/social/engine" \
    "$here/fuzz_social_engine.cpp" "$root/server/social/engine/EnvelopeScanner.cpp" \
    "$root/server/social/engine/SocialCatalog.cpp"

# Seeds: envelopes (the cases the scanner must get right) and small OpenAPI documents.
fuzz_seeds '%s' '{"code":200,"data":{"a":[1,2.5e-3,true,null,"x"]}}' '{"code":0}' \
    '{"data":{"code":200},"code":404}' '{"\u0063ode":200}' '{"code":-0}' '{"code":200.0}' \
    '{"code":2e2}' '{"code":0200}' '{"code":9223372036854775807}' \
    '{"code":-9223372036854775809}' '{"code":200,"code":500}' '[{"code":200}]' \
    $'\xEF\xBB\xBF {"code":200}' '{"x":"\"code\":200\\","code":1}' '{"code":200}x' \
    '{"code":200,"a":"\ud800 é 中 😀"}' \
    $'{"code":200,"\xE0\xA0\x80":"\xED\x9F\xBF\xF0\x90\x80\x80\xF4\x8F\xBF\xBF\xC2\x80\x7F"}' \
    '{"code":200,"a":1e400}' '{"code":200,"a":[[[{}]]]}' \
    '{"openapi":"3.1.0","info":{"title":"t","version":"1"},"paths":{"/api/v1/a/b":{"get":{"operationId":"x","parameters":[{"name":"q","in":"query","required":true,"schema":{"type":"string"}},{"$ref":"#/components/parameters/P"}]}},"/api/v1/b/c":{"post":{"operationId":"x","requestBody":{"content":{"application/json":{"schema":{"$ref":"#/components/schemas/S"}}}}}}},"components":{"parameters":{"P":{"name":"p","in":"query","schema":{"$ref":"#/components/schemas/E"}}},"schemas":{"S":{"properties":{"s":{"$ref":"#/components/schemas/S"},"t":{"items":{"$ref":"#/components/schemas/E"}}}},"E":{"enum":["a"]}}}}' \
    '{"openapi":"3.0.0","paths":{"/api/v1/c/d":{"parameters":[{"name":"a","in":"query"}],"get":{"tags":["t"],"summary":"s","parameters":[{"name":"a","in":"query","required":true}]}},"/api/v1/x/y":{"get":{}}}}' \
    '{"openapi":"3.1.0","paths":{"/api/v1/c/{id}":{"get":{}},"/api/v1/c//d":{"get":{}}}}'

# A dictionary of the tokens both parsers care about.
cat > social.dict <<'EOF'
"\"code\""
"\"\\u0063ode\""
"\\u00"
"\\\""
"\\\\"
"\xEF\xBB\xBF"
"-0"
"200"
"9223372036854775808"
"e+"
"\"openapi\":\"3.1.0\""
"\"paths\""
"\"/api/v1/"
"\"get\""
"\"post\""
"\"parameters\""
"\"in\":\"query\""
"\"name\""
"\"required\":true"
"\"schema\""
"\"$ref\""
"\"#/components/schemas/"
"\"#/components/parameters/"
"\"#/components/requestBodies/"
"\"components\""
"\"schemas\""
"\"requestBody\""
"\"content\""
"\"application/json\""
"\"operationId\""
"\"items\""
"\"allOf\""
EOF

./fuzz_social_engine -max_total_time="$seconds" -max_len=2048 -timeout=10 -dict=social.dict \
    -print_final_stats=1 corpus
