#!/usr/bin/env bash
# gateway-runs.sh BUILD_DIR [--runs N] [--pg URL] [--before BUILD_BEFORE]
#                 [gateway-bench.sh options...]
#
# Runs tests/bench/gateway-bench.sh N times (default 3) with Switchyard on SQLite and, with
# --pg URL, N times more on that PostgreSQL database, then prints one table of the figures that
# matter, each as the median of the runs and their spread (min-max): the added latency at
# concurrency 1 and at the fixed rate, the highest rate held with p99 < 5 ms and kept up with
# p99 < 50 ms, the time to first token, the RSS with 1,000 open streams, the billed address
# requests against GET /healthz, and the RSS after the overload. Portkey runs with the SQLite
# runs only (its figures do not depend on Switchyard's database). Every run's own report stays
# in BUILD_DIR/bench-results/gateway-runs/. About 5 minutes a run on a 2-core machine.
#
# --before BUILD_BEFORE: what a change costs. Each run measures BUILD_BEFORE (the build without
# the change) and BUILD_DIR one after the other, the one measured first alternating from run to
# run, without portkey; the table gives each figure's median for both and the ratio of the
# medians (after / before). Its runs' reports are kept beside the others as before-DB-N.md.
set -euo pipefail

say() { printf '[gateway-runs] %s\n' "$*" >&2; }
die() { say "ERROR: $*"; exit 1; }

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[ $# -ge 1 ] || die "usage: gateway-runs.sh BUILD_DIR [--runs N] [--pg URL] [gateway-bench options]"
BUILD=$(cd "$1" && pwd) || die "no build directory $1"
shift
RUNS=3
PG=""
BEFORE=""
PASS=()
while [ $# -gt 0 ]; do
    case "$1" in
        --runs) RUNS=${2:?}; shift 2 ;;
        --pg) PG=${2:?}; shift 2 ;;
        --before) BEFORE=$(cd "${2:?}" && pwd) || die "no build directory $2"; shift 2 ;;
        *) PASS+=("$1"); shift ;;
    esac
done
[[ "$RUNS" =~ ^[0-9]+$ && "$RUNS" -ge 1 ]] || die "--runs: a positive integer"
OUT=$BUILD/bench-results/gateway-runs
rm -rf "$OUT"
mkdir -p "$OUT"

declare -A BUILT=()
run() { # BUILD NAME N [options]: one gateway-bench.sh run, its report in $OUT/NAME-N.md
    local build=$1 name=$2 n=$3
    shift 3
    local again=(--no-build)
    [ -n "${BUILT[$build]:-}" ] || again=()
    say "$name run $n of $RUNS"
    bash "$HERE/gateway-bench.sh" "$build" "${again[@]}" "${PASS[@]}" "$@" \
        >"$OUT/$name-$n.md" 2>"$OUT/$name-$n.log" ||
        { tail -n 20 "$OUT/$name-$n.log" >&2; die "gateway-bench.sh failed ($OUT/$name-$n.log)"; }
    BUILT[$build]=1
}
runs() { # DB [options]: the runs on one database, paired with BUILD_BEFORE's if given
    local db=$1 n
    shift
    for n in $(seq 1 "$RUNS"); do
        if [ -z "$BEFORE" ]; then
            run "$BUILD" "$db" "$n" "$@"
        elif [ $((n % 2)) = 1 ]; then
            run "$BEFORE" "before-$db" "$n" "$@" --targets direct,switchyard
            run "$BUILD" "$db" "$n" "$@" --targets direct,switchyard
        else
            run "$BUILD" "$db" "$n" "$@" --targets direct,switchyard
            run "$BEFORE" "before-$db" "$n" "$@" --targets direct,switchyard
        fi
    done
}
runs sqlite
[ -z "$PG" ] || runs postgres --pg "$PG" --targets direct,switchyard

# num FILE LABEL CELL NTH: the NTH number in cell CELL (1: direct, 2: switchyard, 3: portkey,
# 4: switchyard added, 5: portkey added) of the summary row whose label starts with LABEL
num() {
    awk -v label="$2" -v cell="$3" -v nth="$4" -F'|' '
        index($2, " " label) == 1 {
            s = $(cell + 2); k = 0
            while (match(s, /[-+]?[0-9]+(\.[0-9]+)?/)) {
                if (++k == nth) { print substr(s, RSTART, RLENGTH); exit }
                s = substr(s, RSTART + RLENGTH)
            }
        }' "$1"
}
# stat DB LABEL CELL NTH: "median (min-max)" over the runs of DB
stat() {
    local vals=() n v
    for n in $(seq 1 "$RUNS"); do
        [ -f "$OUT/$1-$n.md" ] || continue
        v=$(num "$OUT/$1-$n.md" "$2" "$3" "$4")
        [ -z "$v" ] || vals+=("$v")
    done
    [ ${#vals[@]} -gt 0 ] || { echo "-"; return; }
    printf '%s\n' "${vals[@]}" | sort -g | awk '{v[NR] = $1} END {
        m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
        if (NR == 1) print m; else printf "%s (%s-%s)\n", m, v[1], v[NR]}'
}
# ratio BEFORE AFTER: after / before of two "median (min-max)" cells
ratio() {
    awk -v b="${1%% *}" -v a="${2%% *}" 'BEGIN {
        if (b !~ /^[-+]?[0-9.]+$/ || a !~ /^[-+]?[0-9.]+$/ || b + 0 == 0) print "-"
        else printf "%.3f\n", a / b }'
}
row() { # TEXT LABEL CELL NTH [PORTKEY_CELL]
    local db cells="" b a
    if [ -n "$BEFORE" ]; then
        for db in sqlite ${PG:+postgres}; do
            b=$(stat "before-$db" "$2" "$3" "$4")
            a=$(stat "$db" "$2" "$3" "$4")
            cells+=" $b | $a | $(ratio "$b" "$a") |"
        done
        echo "| $1 |$cells"
        return
    fi
    local pg="" pk=""
    [ -z "$PG" ] || pg=" $(stat postgres "$2" "$3" "$4") |"
    [ -z "${5:-}" ] || pk="$(stat sqlite "$2" "$5" "$4")"
    echo "| $1 | $(stat sqlite "$2" "$3" "$4") |${pg} ${pk:--} |"
}

head=$(sed -n '/^## gateway-bench/,/^Times in ms/p' "$OUT/sqlite-1.md" | sed '1d')
echo
echo "## gateway-runs: $RUNS runs per database, median (min-max)"
echo
echo "$head" | grep -v "^Switchyard's database"
echo
if [ -n "$BEFORE" ]; then
    echo "Before: $BEFORE; after: $BUILD (runs alternate which is measured first)."
    echo
    if [ -n "$PG" ]; then
        echo "| figure | SQLite, before | SQLite, after | after / before | PostgreSQL, before | PostgreSQL, after | after / before |"
        echo "|---|---:|---:|---:|---:|---:|---:|"
    else
        echo "| figure | SQLite, before | SQLite, after | after / before |"
        echo "|---|---:|---:|---:|"
    fi
elif [ -n "$PG" ]; then
    echo "| figure | Switchyard, SQLite | Switchyard, PostgreSQL | portkey |"
    echo "|---|---:|---:|---:|"
else
    echo "| figure | Switchyard, SQLite | portkey |"
    echo "|---|---:|---:|"
fi
row "c=1 non-streaming: added p50 (ms)" "c=1 non-streaming p50" 4 1 5
row "c=1 non-streaming: added p99 (ms; target < 1)" "c=1 non-streaming p99" 4 1 5
row "500 req/s: added p50 (ms)" "500 req/s p50" 4 1 5
row "500 req/s: added p99 (ms)" "500 req/s p99" 4 1 5
row "highest rate with p99 < 5 ms (req/s; target >= 5,000)" "max req/s with p99" 2 1 3
row "highest rate kept up, p99 < 50 ms (req/s)" "max req/s kept up" 2 1 3
row "stream: added time to first token p50 (ms)" "stream: time to first token p50" 4 1 5
row "stream: added time to first token p99 (ms)" "stream: time to first token p99" 4 1 5
row "1,000 open streams: RSS (MB; target < 100)" "1000 streams: gateway RSS" 2 1 3
row "GET /healthz, wrk 256 connections (req/s)" "wrk 256 connections: GET /healthz" 2 1
for e in transfer-coord extract-phone division-code; do
    row "billed $e (req/s)" "wrk 256 connections: billed $e" 2 1
    row "billed $e / GET /healthz (target >= 0.5)" "wrk 256 connections: billed $e" 2 2
done
row "RSS idle after start (MB)" "gateway RSS: idle after start" 2 1
row "RSS idle after start + the address engine (MB)" "gateway RSS: idle after start" 2 2
row "RSS after the last phase (MB)" "gateway RSS: idle after start" 2 3
row "RSS 60 s later (MB; target within 10% of idle + engine)" "gateway RSS: idle after start" 2 4
echo
echo "Every run's report: $OUT/{sqlite,postgres}-N.md${BEFORE:+ (and before-*-N.md)}"
