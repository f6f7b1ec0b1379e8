#!/usr/bin/env bash
# thread-costs.sh BUILD_DIR [--runs N] [--duration S] [--connections C] [--pg URL]
#                  [--endpoint transfer-coord|extract-phone|division-code|chat] [--rate R]
#
# Where a billed request's CPU goes, thread by thread. Starts a throwaway switchyard-server
# (SQLite in a temporary directory, or --pg URL: a throwaway PostgreSQL database), then for each
# run: wrk on GET /healthz, then wrk on the billed POST /v1/address/--endpoint (default
# transfer-coord; the bodies gateway-bench.sh sends, billed-bodies.sh), each --duration seconds
# (default 5) with --connections (default 256) on 2 threads. Around each wrk it reads
# every server thread's CPU time (/proc/PID/task/*/stat, user + system) and the bytes it wrote
# (/proc/PID/task/*/io, wchar: the writer's are the WAL's frames on SQLite) and prints them
# divided by the requests answered: microseconds and bytes of each thread per request; then the
# rest of the machine's CPU time over the same run, per request: the load generator's, every
# other process's (PostgreSQL's backends with --pg) and the idle time (/proc/stat), so that all
# the rows add up to the number of CPUs over the rate (less what the host took, if anything).
# --runs (default 3) rounds, then the medians.
#
# --endpoint chat: the billed request is a non-streaming POST /v1/chat/completions routed to
# tests/fake_upstream (BUILD_DIR's, started here on loopback at zero latency, as in
# gateway-bench.sh); the fake's CPU is then in the "other processes" row. Best with --rate:
# under wrk the threads work through batches, at a rate they wake for nearly every request, as
# in gateway-bench.sh's rate phase.
#
# --rate R: an open loop at R requests a second instead of wrk (BUILD_DIR's gateway_load, the
# load generator of gateway-bench.sh, after 0.5 s of warm-up), for the costs at a rate the
# server keeps up with rather than at saturation; the table then gives the p50 and p99 from the
# scheduled send times instead of the billed share of /healthz.
#
# The server, its data and the load stop on exit; everything binds 127.0.0.1. Needs wrk (or
# gateway_load with --rate) and curl. About 15 s a run.
set -euo pipefail
export LC_ALL=C # sort and join agree

say() { printf '[thread-costs] %s\n' "$*" >&2; }
die() {
    printf '[thread-costs] ERROR: %s\n' "$*" >&2
    exit 1
}

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/wait-listen.sh"   # wait_listen LOG PID NAME
. "$HERE/billed-bodies.sh" # BILLED_ENDPOINTS, BILLED_BODY, CHAT_BODY
. "$HERE/fake-upstream.sh" # start_fake, fake_providers

BUILD=""
RUNS=3
DURATION=5
CONNECTIONS=256
PG_URL=""
ENDPOINT=transfer-coord
RATE=""
while [ $# -gt 0 ]; do
    case "$1" in
        --runs) RUNS=${2:?}; shift 2 ;;
        --duration) DURATION=${2:?}; shift 2 ;;
        --connections) CONNECTIONS=${2:?}; shift 2 ;;
        --pg) PG_URL=${2:?}; shift 2 ;;
        --endpoint) ENDPOINT=${2:?}; shift 2 ;;
        --rate) RATE=${2:?}; shift 2 ;;
        -h | --help) awk 'NR > 1 && /^#/ {sub(/^# ?/, ""); print; next} NR > 1 {exit}' "$0"; exit 0 ;;
        -*) die "unknown option $1 (see --help)" ;;
        *) [ -z "$BUILD" ] || die "one BUILD_DIR only"; BUILD=$1; shift ;;
    esac
done
[ -n "$BUILD" ] || die "usage: thread-costs.sh BUILD_DIR [options] (see --help)"
[[ "$RUNS" =~ ^[1-9][0-9]*$ ]] || die "--runs: a positive integer"
[[ "$DURATION" =~ ^[1-9][0-9]*$ ]] || die "--duration: whole seconds"
[[ "$CONNECTIONS" =~ ^[1-9][0-9]*$ ]] || die "--connections: a positive integer"
[ -z "$RATE" ] || [[ "$RATE" =~ ^[1-9][0-9]*$ ]] || die "--rate: requests a second, a positive integer"
if [ "$ENDPOINT" = chat ]; then
    BODY=$CHAT_BODY
    BILLED_PATH=/v1/chat/completions
else
    [ -n "${BILLED_BODY[$ENDPOINT]+set}" ] || die "--endpoint: one of ${BILLED_ENDPOINTS[*]} chat"
    BODY=${BILLED_BODY[$ENDPOINT]}
    BILLED_PATH=/v1/address/$ENDPOINT
fi
SERVER=$(cd "$BUILD" && pwd)/app/switchyard-server
[ -x "$SERVER" ] || die "$SERVER not found (build the switchyard-server target)"
if [ -n "$RATE" ]; then
    LOAD=$(cd "$BUILD" && pwd)/tests/bench/gateway_load
    [ -x "$LOAD" ] || die "$LOAD not found (build the gateway_load target)"
else
    command -v wrk >/dev/null || die "wrk is not installed"
fi
command -v curl >/dev/null || die "curl is not installed"
if [ "$ENDPOINT" = chat ]; then
    FAKE=$(cd "$BUILD" && pwd)/tests/fake_upstream/fake_upstream
    [ -x "$FAKE" ] || die "$FAKE not found (build the fake_upstream target)"
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/switchyard-threads.XXXXXX")
SP=""
FAKE_PID=""
cleanup() {
    [ -z "$FAKE_PID" ] || kill "$FAKE_PID" 2>/dev/null || true
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
LIMITS='"rate_limits":{"default":{"chat":0,"default":0}}'
if [ "$ENDPOINT" = chat ]; then
    start_fake "$WORK" "$WORK/fake.log" "$FAKE"
    echo "{$(fake_providers "$FAKE_URL"), $LIMITS}" >"$WORK/config.json"
else
    echo "{$LIMITS}" >"$WORK/config.json"
fi
env -u SWITCHYARD_DATABASE "$SERVER" serve --listen 127.0.0.1:0 "${WHERE[@]}" \
    --config "$WORK/config.json" </dev/null >"$WORK/server.log" 2>&1 &
SP=$!
URL=$(wait_listen "$WORK/server.log" "$SP" "the server")
post_wrk_script "$WORK/billed.lua" "$BODY" "$KEY"
printf '%s' "$BODY" >"$WORK/billed.json"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $KEY" \
    -H 'Content-Type: application/json' --data "$BODY" "$URL$BILLED_PATH")
[ "$code" = 200 ] || die "billed $ENDPOINT answered $code"
say "server $SP on $URL ($([ -n "$PG_URL" ] && echo PostgreSQL || echo SQLite)); $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"

ticks=$(getconf CLK_TCK)
# Per thread name (threads of one name summed, spaces as _): CPU ticks and bytes written.
snapshot() {
    for t in /proc/"$SP"/task/*; do
        printf '%s %s %s\n' "$(tr ' ' _ <"$t/comm")" "$(awk '{print $14 + $15}' "$t/stat" 2>/dev/null || echo 0)" \
            "$(awk '$1 == "wchar:" {print $2}' "$t/io" 2>/dev/null || echo 0)"
    done | awk '{a[$1] += $2; w[$1] += $3} END {for (k in a) print k, a[k], w[k]}' | sort
}
# load NAME PATH: one wrk or gateway_load run; prints "NAME rps R" (and with --rate "NAME p50
# US" and "NAME p99 US"), and leaves the requests answered in $ANSWERED
load() {
    local out
    if [ -z "$RATE" ]; then
        local lua=()
        [ "$1" = healthz ] || lua=(-s "$WORK/billed.lua")
        out=$(timeout $((DURATION + 30)) wrk -t2 -c"$CONNECTIONS" -d"${DURATION}s" "${lua[@]}" "$URL$2" 2>&1) ||
            die "wrk failed: $out"
        if echo "$out" | grep -q "Non-2xx"; then die "$1: wrk saw answers other than 2xx: $out"; fi
        local rps
        rps=$(echo "$out" | awk '/^Requests\/sec:/ {print $2}')
        ANSWERED=$(awk -v r="$rps" -v d="$DURATION" 'BEGIN {printf "%.0f", r * d}')
        echo "$1 rps $rps"
        return
    fi
    local how=(--get)
    [ "$1" = healthz ] || how=(-H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
        --body-file "$WORK/billed.json")
    out=$(timeout $((DURATION + 30)) "$LOAD" rate "$URL$2" "${how[@]}" --rate "$RATE" \
        --duration "$DURATION" --warmup-s 0.5 2>>"$WORK/load.log") || die "gateway_load failed: $out"
    local errors
    errors=$(echo "$out" | tr ' ' '\n' | awk -F= '$1 == "errors" || $1 == "non200" {n += $2} END {print n + 0}')
    [ "$errors" = 0 ] || die "$1: $errors requests failed or answered other than 200: $out"
    ANSWERED=$(echo "$out" | tr ' ' '\n' | awk -F= '$1 == "ok" {print $2}')
    echo "$out" | tr ' ' '\n' | awk -F= -v n="$1" -v d="$DURATION" '
        $1 == "ok" {printf "%s rps %.0f\n", n, $2 / d}
        $1 == "p50_us" || $1 == "p99_us" {printf "%s %s %s\n", n, substr($1, 1, 3), $2}'
}
# The machine's CPU ticks: "busy idle" (idle with iowait; what the host took, steal, is in
# neither, nor in any row).
machine() { awk '$1 == "cpu" {print $2 + $3 + $4 + $7 + $8, $5 + $6}' /proc/stat; }
# CHILDREN: CPU seconds of this shell's finished children (wrk or gateway_load, and the few
# tools load runs), from the second line of `times`, which must run in this shell.
children() {
    times >"$WORK/times"
    CHILDREN=$(awk 'NR == 2 {gsub(/[ms]/, " "); print $1 * 60 + $2 + $3 * 60 + $4}' "$WORK/times")
}
# measure NAME PATH: prints what load prints, then "NAME thread us/request" and "NAME
# written:thread bytes/request" lines (the latter from 16 bytes a request: eventfd wake-ups
# write 8 bytes each, sockets are not counted), then where the rest of the machine's CPU went:
# the load generator, every other process (PostgreSQL's backends, with --pg) and idle, in us
# per request, so that the rows add up to the number of CPUs over the requests a second.
measure() {
    local before after m0 m1 c0 c1
    before=$(snapshot)
    m0=$(machine)
    children
    c0=$CHILDREN
    load "$1" "$2"
    children
    c1=$CHILDREN
    m1=$(machine)
    after=$(snapshot)
    [ "${ANSWERED:-0}" -gt 0 ] || die "$1: no request answered"
    join <(echo "$before") <(echo "$after") | awk -v n="$1" -v a="$ANSWERED" -v hz="$ticks" \
        -v m0="$m0" -v m1="$m1" -v c0="$c0" -v c1="$c1" '
        {server += $4 - $2}
        $4 > $2 {printf "%s %s %.1f\n", n, $1, ($4 - $2) / hz * 1e6 / a}
        ($5 - $3) / a >= 16 {printf "%s written:%s %.0f\n", n, $1, ($5 - $3) / a}
        END {
            split(m0, x, " "); split(m1, y, " ")
            load = (c1 - c0) * hz
            other = y[1] - x[1] - server - load
            printf "%s ~load %.1f\n", n, load / hz * 1e6 / a
            printf "%s ~other %.1f\n", n, (other > 0 ? other : 0) / hz * 1e6 / a
            printf "%s ~idle %.1f\n", n, (y[2] - x[2]) / hz * 1e6 / a
        }'
}

for run in $(seq 1 "$RUNS"); do
    measure healthz /healthz >>"$WORK/all"
    measure billed "$BILLED_PATH" >>"$WORK/all"
    awk '$2 == "rps" {r[$1] = $3} END {printf "ratio share %.3f\n", r["billed"] / r["healthz"]}' \
        <(grep " rps " "$WORK/all" | tail -n 2) >>"$WORK/all"
    say "run $run of $RUNS: $(grep -c . "$WORK/all") figures so far"
done

if [ -n "$RATE" ]; then
    HOW="an open loop at $RATE req/s for ${DURATION}s (gateway_load)"
else
    HOW="wrk -t2 -c$CONNECTIONS -d${DURATION}s"
fi
echo "# Server threads' CPU (us) and bytes written per request, then the rest of the $(nproc) CPUs' time per request, $HOW, medians of $RUNS (spread)"
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
        # the machine rows (names from ~) after the threads
        for (i = 1; i <= n; i++) if (order[i] !~ /^~/) sorted[++m] = order[i]
        for (i = 1; i <= n; i++) if (order[i] ~ /^~/) sorted[++m] = order[i]
        for (i = 1; i <= m; i++) {
            name = sorted[i]
            if (name == "share")
                continue
            if (name == "rps") label = "requests/s"
            else if (name == "p50" || name == "p99") label = name " (us, from the scheduled send)"
            else if (name ~ /^written:/) label = "bytes written by " substr(name, 9)
            else if (name == "~load") label = (rate ? "gateway_load" : "wrk") " (us)"
            else if (name == "~other") label = "other processes (us)"
            else if (name == "~idle") label = "idle CPU (us)"
            else label = "thread " name
            printf "| %s | %s | %s |\n", label, med(v["healthz" SUBSEP name]), med(v["billed" SUBSEP name])
        }
        if (!rate)
            printf "| billed / healthz | | %s |\n", med(v["ratio" SUBSEP "share"])
    }' rate="$RATE" "$WORK/all"
