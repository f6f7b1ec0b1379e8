#!/usr/bin/env bash
# paired-builds.sh BUILD_A BUILD_B [--rounds N] [--pairs P] [--duration S] [--connections C]
#                  [--pg URL] [--endpoint healthz|transfer-coord|extract-phone|division-code]
#                  [--env-a NAME=VALUE]... [--env-b NAME=VALUE]...
#
# Two builds against each other under wrk, in pairs: a throwaway switchyard-server of each
# (SQLite in a temporary directory each, or --pg URL: a new database each, made there and
# dropped on exit). Each round runs wrk (2 threads, --connections, default 256, --duration
# seconds, default 5) on A and on B, one after the other (A first in odd rounds, B first in even
# ones), on --endpoint (default extract-phone; the bodies of billed-bodies.sh, or GET /healthz).
# The pair is started --pairs times (default 4), the --rounds (default 8, a multiple of
# --pairs) shared out among them: each time both servers are new, and A and B take turns to be
# started first. It prints each round's requests per second, each server's CPU per request (all
# its threads, /proc/PID/task/*/stat) and B's rate over A's; then the median and spread of that
# ratio over all rounds, the figure to quote, and its median in each pair. --env-a and --env-b
# add to one server's environment (MALLOC_CONF=..., say), so that BUILD_A and BUILD_B may be
# the same build.
#
# Why pairs: on a small shared machine the rate of one build moves by a third from one minute to
# the next, while two runs a few seconds apart move together; a ratio of neighbours is what
# reruns reproduce. Why several pairs: two servers of the same build kept an offset of their
# own for as long as they ran, up to 10% (B / A of one pair over its rounds: 0.894 to 1.050,
# the server started first more often the faster; tests/bench/README.md, the sixteenth round),
# and only new pairs average it out. Each server's database grows as it answers, the same for
# both. Everything binds 127.0.0.1; the servers, their data and wrk stop on exit. Needs wrk and
# curl (and psql with --pg).
set -euo pipefail
export LC_ALL=C

say() { printf '[paired-builds] %s\n' "$*" >&2; }
die() {
    printf '[paired-builds] ERROR: %s\n' "$*" >&2
    exit 1
}

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/wait-listen.sh"   # wait_listen LOG PID NAME
. "$HERE/billed-bodies.sh" # BILLED_ENDPOINTS, BILLED_BODY

[ $# -ge 2 ] || die "usage: paired-builds.sh BUILD_A BUILD_B [--rounds N] [--pairs P] [--duration S] [--connections C] [--pg URL] [--endpoint E]"
BUILDS=("$1" "$2")
shift 2
ROUNDS=8
PAIRS=4
DURATION=5
CONNECTIONS=256
PG_URL=""
ENDPOINT=extract-phone
ENV_A=()
ENV_B=()
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) ROUNDS=${2:?}; shift 2 ;;
        --pairs) PAIRS=${2:?}; shift 2 ;;
        --duration) DURATION=${2:?}; shift 2 ;;
        --connections) CONNECTIONS=${2:?}; shift 2 ;;
        --pg) PG_URL=${2:?}; shift 2 ;;
        --endpoint) ENDPOINT=${2:?}; shift 2 ;;
        --env-a) ENV_A+=("${2:?}"); shift 2 ;;
        --env-b) ENV_B+=("${2:?}"); shift 2 ;;
        -h | --help) awk 'NR > 1 && /^#/ {sub(/^# ?/, ""); print; next} NR > 1 {exit}' "$0"; exit 0 ;;
        *) die "unknown argument $1" ;;
    esac
done
[ "$PAIRS" -ge 1 ] && [ "$ROUNDS" -ge "$PAIRS" ] && [ $((ROUNDS % PAIRS)) = 0 ] ||
    die "--rounds: a multiple of --pairs ($PAIRS)"
[ "$ENDPOINT" = healthz ] || [ -n "${BILLED_BODY[$ENDPOINT]:-}" ] ||
    die "--endpoint: healthz or one of ${BILLED_ENDPOINTS[*]}"
command -v wrk >/dev/null || die "wrk is not installed"
command -v curl >/dev/null || die "curl is not installed"
[ -z "$PG_URL" ] || command -v psql >/dev/null || die "psql is not installed"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/switchyard-paired.XXXXXX")
PIDS=()
DATABASES=()
stop_servers() {
    for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    for p in "${PIDS[@]}"; do
        for _ in $(seq 1 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$p" 2>/dev/null || true
    done
    wait 2>/dev/null || true
    PIDS=()
}
cleanup() {
    stop_servers
    for d in "${DATABASES[@]}"; do
        psql -q "$PG_URL" -c "DROP DATABASE IF EXISTS $d" >/dev/null 2>&1 || true
    done
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
ulimit -n 20000 2>/dev/null || true

# start NAME BUILD [NAME=VALUE...]: a server with a funded key and that environment, on a new
# database; writes WORK/NAME/{pid,url,billed.lua}
start() {
    local dir=$WORK/$1 server where key url db
    rm -rf "$dir"
    local extra=("${@:3}")
    server=$(cd "$2" && pwd)/app/switchyard-server
    [ -x "$server" ] || die "$server not found (build the switchyard-server target)"
    mkdir -p "$dir/data"
    if [ -n "$PG_URL" ]; then
        db=switchyard_paired_${1,,}_${PAIR}_$$
        psql -q "$PG_URL" -c "CREATE DATABASE $db" >/dev/null || die "cannot create database $db"
        DATABASES+=("$db")
        where=(--database "${PG_URL%/*}/$db")
    else
        where=(--data-dir "$dir/data")
    fi
    key=$(timeout 60 env -u SWITCHYARD_DATABASE "$server" keys create --name paired "${where[@]}" \
        </dev/null 2>"$dir/keys.err") || { cat "$dir/keys.err" >&2; die "$1: keys create failed"; }
    timeout 60 env -u SWITCHYARD_DATABASE "$server" credits grant --amount 1000000000 "${where[@]}" \
        </dev/null >/dev/null 2>&1 || die "$1: credits grant failed"
    echo '{"rate_limits":{"default":{"chat":0,"default":0}}}' >"$dir/config.json"
    env -u SWITCHYARD_DATABASE "${extra[@]}" "$server" serve --listen 127.0.0.1:0 "${where[@]}" \
        --config "$dir/config.json" </dev/null >"$dir/server.log" 2>&1 &
    PIDS+=($!)
    echo $! >"$dir/pid"
    url=$(wait_listen "$dir/server.log" "$!" "server $1")
    echo "$url" >"$dir/url"
    if [ "$ENDPOINT" != healthz ]; then
        billed_wrk_script "$dir/billed.lua" "$ENDPOINT" "$key"
        local code
        code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $key" \
            -H 'Content-Type: application/json' --data "${BILLED_BODY[$ENDPOINT]}" "$url/v1/address/$ENDPOINT")
        [ "$code" = 200 ] || die "$1: billed $ENDPOINT answered $code"
    fi
    say "$1: $2${extra[*]:+ with ${extra[*]}}, server $(cat "$dir/pid") on $url"
}

ticks() { cat /proc/"$1"/task/*/stat 2>/dev/null | awk '{s += $14 + $15} END {print s + 0}'; }
# measure NAME: one wrk; prints "rps us_per_request"
measure() {
    local dir=$WORK/$1 pid before after out rps
    pid=$(cat "$dir/pid")
    before=$(ticks "$pid")
    if [ "$ENDPOINT" = healthz ]; then
        out=$(timeout $((DURATION + 30)) wrk -t2 -c"$CONNECTIONS" -d"${DURATION}s" "$(cat "$dir/url")/healthz" 2>&1)
    else
        out=$(timeout $((DURATION + 30)) wrk -t2 -c"$CONNECTIONS" -d"${DURATION}s" -s "$dir/billed.lua" \
            "$(cat "$dir/url")/v1/address/$ENDPOINT" 2>&1)
    fi || die "wrk failed: $out"
    after=$(ticks "$pid")
    if echo "$out" | grep -q "Non-2xx"; then die "$1: wrk saw answers other than 2xx: $out"; fi
    rps=$(echo "$out" | awk '/^Requests\/sec:/ {print $2}')
    awk -v r="$rps" -v d="$DURATION" -v t=$((after - before)) -v hz="$(getconf CLK_TCK)" \
        'BEGIN {printf "%.0f %.1f\n", r, t / hz * 1e6 / (r * d)}'
}

echo "# A: ${BUILDS[0]} ${ENV_A[*]}, B: ${BUILDS[1]} ${ENV_B[*]}; wrk -t2 -c$CONNECTIONS -d${DURATION}s on $ENDPOINT$([ -n "$PG_URL" ] && echo ', PostgreSQL' || echo ', SQLite')"
echo
echo "| round | pair, started first | A req/s | A CPU µs/req | B req/s | B CPU µs/req | B / A |"
echo "|---:|---|---:|---:|---:|---:|---:|"
EACH=$((ROUNDS / PAIRS))
for PAIR in $(seq 1 "$PAIRS"); do
    stop_servers
    if [ $((PAIR % 2)) = 1 ]; then
        first=A
        start A "${BUILDS[0]}" "${ENV_A[@]}"
        start B "${BUILDS[1]}" "${ENV_B[@]}"
    else
        first=B
        start B "${BUILDS[1]}" "${ENV_B[@]}"
        start A "${BUILDS[0]}" "${ENV_A[@]}"
    fi
    say "$(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); pair $PAIR, $first started first: $EACH rounds of ${DURATION}s on $ENDPOINT"
    for round in $(seq $(((PAIR - 1) * EACH + 1)) $((PAIR * EACH))); do
        if [ $((round % 2)) = 1 ]; then
            a=$(measure A)
            b=$(measure B)
        else
            b=$(measure B)
            a=$(measure A)
        fi
        echo "$round $PAIR $first $a $b" |
            awk '{printf "| %d | %d, %s | %s | %s | %s | %s | %.3f |\n", $1, $2, $3, $4, $5, $6, $7, $6 / $4}' |
            tee -a "$WORK/rounds"
    done
done
echo
awk -F'|' '{split($3, p, ","); print p[1] + 0, $8 + 0, $5 + 0, $7 + 0}' "$WORK/rounds" | awk '
    function median(v, k,    i, j, t) {
        for (i = 2; i <= k; i++) for (j = i; j > 1 && v[j - 1] > v[j]; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
        return k % 2 ? v[(k + 1) / 2] : (v[k / 2] + v[k / 2 + 1]) / 2
    }
    {all[++n] = $2; per[$1, ++m[$1]] = $2; a += $3; b += $4; if ($1 > pairs) pairs = $1}
    END {
        mid = median(all, n)
        line = ""
        for (p = 1; p <= pairs; p++) {
            delete v
            for (i = 1; i <= m[p]; i++) v[i] = per[p, i]
            line = line sprintf("%s%.3f", p > 1 ? ", " : "", median(v, m[p]))
        }
        printf "B / A: median %.3f (%.3f-%.3f) over %d rounds in %d pairs (medians by pair: %s); CPU per request, mean: A %.1f µs, B %.1f µs\n",
            mid, all[1], all[n], n, pairs, line, a / n, b / n
    }'
