#!/usr/bin/env bash
# csv-export-bench.sh BUILD [--rows N] [--runs R]: a CSV export of N usage records (default
# 1,000,000) streamed from switchyard-server, read by curl at full speed and then by a reader
# limited to 2 MB/s, while the server's resident memory (VmRSS) is sampled every 50 ms. Prints
# per run the export's time, its size and the server's RSS before, at its peak and the growth;
# the median of R runs (default 3). The data is seeded once (tests/bench/seed_usage) into a
# throwaway SQLite data dir. README, "CSV export".
set -euo pipefail
build=${1:?usage: csv-export-bench.sh BUILD [--rows N] [--runs R]}
shift
rows=1000000
runs=3
while [ $# -gt 0 ]; do
    case "$1" in
        --rows) rows=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done
server=$build/app/switchyard-server
seed=$build/tests/bench/seed_usage
for b in "$server" "$seed"; do
    [ -x "$b" ] || { echo "missing $b (build the tests and benchmarks)" >&2; exit 1; }
done
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
work=$(mktemp -d /tmp/switchyard-csv-bench.XXXXXX)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

"$server" credits balance --data-dir "$work" >/dev/null # creates and migrates the database
"$seed" "$work" "$rows"
token=$("$server" tokens create --scopes usage:read --data-dir "$work" 2>/dev/null)
"$server" serve --listen 127.0.0.1:0 --data-dir "$work" 2>"$work/server.log" &
pid=$!
die() { echo "csv-export-bench: $*" >&2; exit 1; }
source "$here/wait-listen.sh"
url=$(wait_listen "$work/server.log" "$pid" switchyard-server)

rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$pid/status"; }

# one_run LIMIT: prints "seconds bytes rss_before_kb rss_peak_kb"
one_run() {
    local limit=$1 before peak now sampler
    before=$(rss_kb)
    peak=$before
    : >"$work/rss"
    ( while :; do rss_kb >>"$work/rss"; sleep 0.05; done ) &
    sampler=$!
    local start end
    start=$(date +%s.%N)
    curl -sS --fail ${limit:+--limit-rate "$limit"} -H "Authorization: Bearer $token" \
        -o "$work/out.csv" "$url/api/v1/usage?format=csv"
    end=$(date +%s.%N)
    kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null || true
    peak=$(sort -n "$work/rss" | tail -1)
    [ "$peak" -ge "$before" ] || peak=$before
    local lines
    lines=$(wc -l <"$work/out.csv")
    [ "$lines" -eq $((rows + 1)) ] || { echo "the export had $lines lines, expected $((rows + 1))" >&2; exit 1; }
    echo "$(awk -v a="$start" -v b="$end" 'BEGIN {print b - a}') $(stat -c %s "$work/out.csv") $before $peak"
}

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR + 1) / 2)]}'; }

for mode in full slow; do
    limit=
    n=$runs
    if [ "$mode" = slow ]; then limit=2M; n=1; fi # one run: it takes a while
    growth=()
    times=()
    for ((r = 1; r <= n; r++)); do
        read -r secs bytes before peak < <(one_run "$limit")
        printf '%-5s run %d: %6.1f s, %5d MB, RSS %4d MB before, peak %4d MB, growth %5.1f MB\n' \
            "$mode" "$r" "$secs" $((bytes / 1000000)) $((before / 1024)) $((peak / 1024)) \
            "$(awk -v p="$peak" -v b="$before" 'BEGIN {print (p - b) / 1024}')"
        growth+=("$(awk -v p="$peak" -v b="$before" 'BEGIN {print (p - b) / 1024}')")
        times+=("$secs")
    done
    printf '%-5s median: %.1f s, RSS growth %.1f MB (%d rows)\n' "$mode" \
        "$(printf '%s\n' "${times[@]}" | median)" "$(printf '%s\n' "${growth[@]}" | median)" "$rows"
done
