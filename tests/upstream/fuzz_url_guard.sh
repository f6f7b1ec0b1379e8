#!/usr/bin/env bash
# Builds the URL guard's libFuzzer target (fuzz_url_guard.cpp) with clang, outside the main
# build, and runs it. Needs clang and libclang-rt-14-dev (libFuzzer, sanitizers) besides the
# build deps (qt6-base-dev, libcurl4-openssl-dev).
#   tests/upstream/fuzz_url_guard.sh [seconds (60)] [work dir (build/fuzz)]
# Exits non-zero when the fuzzer finds a crash, a sanitizer report or a broken property; the
# input that did it is left in the work dir (crash-*).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
seconds=${1:-60}
. "$root/tests/common/fuzz-build.sh"
fuzz_workdir "${2:-$root/build/fuzz}"
fuzz_build fuzz_url_guard "Qt6Core Qt6Network libcurl" -I"$root/server" \
    "$here/fuzz_url_guard.cpp" "$root/server/upstream/UrlGuard.cpp"

# Seeds: every literal form the guard normalises, and URL shapes around them.
fuzz_seeds '%s' 127.0.0.1 2130706433 0177.0.0.1 0x7f.1 127.1 127.0.1 0x7f000001 127.0.0.1. \
    '[::1]' '[::ffff:127.0.0.1]' '[fe80::1%25eth0]' '[64:ff9b::a00:1]' '[2002:a9fe:a9fe::]' \
    '%31%32%37.0.0.1' '１２７.０.０.１' example.com 'bücher.de' 1.2.3.4.5 0x 08.1 \
    'https://u:p@example.com:8443/a?b#c' 'http://0x7f.1:80/' 'https://[::1%25lo]/' \
    'https://example.com\@127.0.0.1/' 'ftp://x/' 'file:///etc/passwd'

./fuzz_url_guard -max_total_time="$seconds" -max_len=300 -timeout=10 -print_final_stats=1 corpus
