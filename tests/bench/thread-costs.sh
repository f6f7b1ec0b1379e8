#!/usr/bin/env bash
# thread-costs.sh BUILD_DIR [--runs N] [--duration S] [--connections C] [--pg URL]
#                  [--endpoint transfer-coord|extract-phone|division-code]
#
# Where a billed request's CPU goes, thread by thread. Starts a throwaway switchyard-server
# (SQLite in a temporary directory, or --pg URL: a throwaway PostgreSQL database), then for each
# run: wrk on GET /healthz, then wrk on the billed POST /v1/address/--endpoint (default
# transfer-coord; the bodies gateway-bench.sh sends, billed-bodies.sh), each --duration seconds
# (default 5) with --connections (default 256) on 2 threads. Around each wrk it reads
# every server thread's CPU time (/proc/PID/task/*/stat, user + system) and prints it divided by
# the requests answered: microseconds of each thread per request. --runs (default 3) rounds,
# each printed, then the medians. The server, its data and wrk stop on exit; everything binds
# 127.0.0.1. Needs wrk and curl. About 15 s a run.
set -euo pipefail
export LC_ALL=C # sort and join agree

say() { printf '[thread-costs] %s\n' "$*" >&2; }
die() {
    printf '[thread-costs] ERROR: %s\n' "$*" >&2
    exit 1
}

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/wait-listen.sh"   # wait_listen LOG PID NAME
. "$HERE/billed-bodies.sh" # BILLED_ENDPOINTS, BILLED_BODY

BUILD=""
RUNS=3
DURATION=5
CONNECTIONS=256
PG_URL=""
ENDPOINT=transfer-coord
while [ $# -gt 0 ]; do
    case "$1" in
        --runs) RUNS=${2:?}; shift 2 ;;
        --duration) DURATION=${2:?}; shift 2 ;;
        --connections) CONNECTIONS=${2:?}; shift 2 ;;
        --pg) PG_URL=${2:?}; shift 2 ;;
        --endpoint) ENDPOINT=${2:?}; shift 2 ;;
        -h | --help) awk 'NR > 1 && /^#/ {sub(/^# ?/, ""); print; next} NR > 1 {exit}' "$0"; exit 0 ;;
        -*) die "unknown option $1 (see --help)" ;;
        *) [ -z "$BUILD" ] || die "one BUILD_DIR only"; BUILD=$1; shift ;;
    esac
done
[ -n "$BUILD" ] || die "usage: thread-costs.sh BUILD_DIR [options] (see --help)"
[[ "$RUNS" =~ ^[1-9][0-9]*$ ]] || die "--runs: a positive integer"
[[ "$DURATION" =~ ^[1-9][0-9]*$ ]] || die "--duration: whole seconds"
[[ "$CONNECTIONS" =~ ^[1-9][0-9]*$ ]] || die "--connections: a positive integer"
[ -n "${BILLED_BODY[$ENDPOINT]+set}" ] || die "--endpoint: one of ${BILLED_ENDPOINTS[*]}"
BODY=${BILLED_BODY[$ENDPOINT]}
SERVER=$(cd "$BUILD" && pwd)/app/switchyard-server
[ -x "$SERVER" ] || die "$SERVER not found (build the switchyard-server target)"
command -v wrk >/dev/null || die "wrk is not installed"
command -v curl >/dev/null || die "curl is not installed"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/switchyard-threads.XXXXXX")
SP=""
cleanup() {
    if [ -n "$SP" ] && kill -0 "$SP" 2>/dev/null; then
        kill -TERM "$SP" 2>/dev/null || true
        for _ in $(seq 1 100); do kill -0 "$SP" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$SP" 2>/dev/null || true
    fi
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
ulimit -n 20000 2>/dev/null || true

if [ -n "$PG_URL" ]; then WHERE=(--database "$PG_URL"); else WHERE=(--data-dir "$WORK"); fi
admin() { timeout 60 env -u SWITCHYARD_DATABASE "$SERVER" "$@" "${WHERE[@]}" </dev/null; }
KEY=$(admin keys create --name threads 2>"$WORK/keys.err") || { cat "$WORK/keys.err" >&2; die "keys create failed"; }
admin credits grant --amount 100000000 >/dev/null 2>&1 || die "credits grant failed"
echo '{"rate_limits":{"default":{"chat":0,"default":0}}}' >"$WORK/config.json"
env -u SWITCHYARD_DATABASE "$SERVER" serve --listen 127.0.0.1:0 "${WHERE[@]}" \
    --config "$WORK/config.json" </dev/null >"$WORK/server.log" 2>&1 &
SP=$!
URL=$(wait_listen "$WORK/server.log" "$SP" "the server")
billed_wrk_script "$WORK/billed.lua" "$ENDPOINT" "$KEY"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $KEY" \
    -H 'Content-Type: application/json' --data "$BODY" "$URL/v1/address/$ENDPOINT")
[ "$code" = 200 ] || die "billed $ENDPOINT answered $code"
say "server $SP on $URL ($([ -n "$PG_URL" ] && echo PostgreSQL || echo SQLite)); $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"

ticks=$(getconf CLK_TCK)
# CPU ticks by thread name (threads of one name summed, spaces as _)
snapshot() {
    for t in /proc/"$SP"/task/*; do
        printf '%s %s\n' "$(tr ' ' _ <"$t/comm")" "$(awk '{print $14 + $15}' "$t/stat" 2>/dev/null || echo 0)"
    done | awk '{a[$1] += $2} END {for (k in a) print k, a[k]}' | sort
}
# measure NAME PATH [LUA]: one wrk; prints "NAME rps" then "NAME thread us/request" lines
measure() {
    local before after out rps
    before=$(snapshot)
    out=$(timeout $((DURATION + 30)) wrk -t2 -c"$CONNECTIONS" -d"${DURATION}s" ${3:+-s "$3"} "$URL$2" 2>&1) ||
        die "wrk failed: $out"
    after=$(snapshot)
    if echo "$out" | grep -q "Non-2xx"; then die "$1: wrk saw answers other than 2xx: $out"; fi
    rps=$(echo "$out" | awk '/^Requests\/sec:/ {print $2}')
    echo "$1 rps $rps"
    join <(echo "$before") <(echo "$after") | awk -v n="$1" -v r="$rps" -v d="$DURATION" -v hz="$ticks" \
        '$3 > $2 {printf "%s %s %.1f\n", n, $1, ($3 - $2) / hz * 1e6 / (r * d)}'
}

for run in $(seq 1 "$RUNS"); do
    measure healthz /healthz >>"$WORK/all"
    measure billed "/v1/address/$ENDPOINT" "$WORK/billed.lua" >>"$WORK/all"
    awk '$2 == "rps" {r[$1] = $3} END {printf "ratio share %.3f\n", r["billed"] / r["healthz"]}' \
        <(grep " rps " "$WORK/all" | tail -n 2) >>"$WORK/all"
    say "run $run of $RUNS: $(grep -c . "$WORK/all") figures so far"
done

echo "# Server threads' CPU per request (us), wrk -t2 -c$CONNECTIONS -d${DURATION}s, medians of $RUNS (spread)"
echo
echo "| what | GET /healthz | billed $ENDPOINT |"
echo "|---|---:|---:|"
awk '
    {k = $1 SUBSEP $2; v[k] = v[k] " " $3; if (!($2 in seen)) {seen[$2] = 1; order[++n] = $2}}
    function med(s,   a, m, i, j, t) {
        m = split(s, a, " "); if (m == 0) return "-"
        for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] + 0 < a[i] + 0) {t = a[i]; a[i] = a[j]; a[j] = t}
        return (m == 1) ? a[1] : sprintf("%s (%s-%s)", a[int((m + 1) / 2)], a[1], a[m])
    }
    END {
        for (i = 1; i <= n; i++) {
            name = order[i]
            if (name == "share")
                continue
            label = (name == "rps") ? "requests/s" : "thread " name
            printf "| %s | %s | %s |\n", label, med(v["healthz" SUBSEP name]), med(v["billed" SUBSEP name])
        }
        printf "| billed / healthz | | %s |\n", med(v["ratio" SUBSEP "share"])
    }' "$WORK/all"
