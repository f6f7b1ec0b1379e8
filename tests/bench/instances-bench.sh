#!/usr/bin/env bash
# instances-bench.sh BUILD_DIR [--runs N] [--rate R] [--requests N]
#
# What the state several instances share costs (server/README.md, "Several instances"), on one
# throwaway PostgreSQL (tests/pg/ensure-postgres.sh), with the cheapest billed request
# (POST /v1/address/transfer-coord, rate-limited and held like every billed request):
#   local       one instance, server.shared_state "off": rate limits and holds in memory (the
#               single-instance figures every other benchmark reports), no proxy;
#   shared      one instance, limits and holds in PostgreSQL (the default there), no proxy: the
#               difference to `local` is what the shared state costs a request;
#   haproxy-N   N = 1, 2, 3 instances, shared, behind HAProxy with installer/haproxy.cfg.
# For each: the latency at concurrency 1 (tests/bench/gateway/gateway_load, --requests after
# 200 to warm up; p50 and p99), at a fixed rate (open loop, --rate req/s for 5 s), and the
# billed requests a second wrk takes (2 threads, 64 connections, 5 s). Every configuration runs
# once per round, in the same order, for --runs rounds (default 3); the table gives medians and
# each figure's ratio to `local`. All on this machine: instances, proxy, database and load share
# its cores, so more instances cannot add capacity here; the figures say what sharing costs.
set -euo pipefail

say() { printf '[instances-bench] %s\n' "$*" >&2; }
die() { say "ERROR: $*"; exit 1; }

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
[ $# -ge 1 ] || die "usage: instances-bench.sh BUILD_DIR [--runs N] [--rate R] [--requests N]"
BUILD=$(cd "$1" && pwd) || die "no build directory $1"
shift
RUNS=3
RATE=500
REQUESTS=3000
while [ $# -gt 0 ]; do
    case "$1" in
        --runs) RUNS=${2:?}; shift 2 ;;
        --rate) RATE=${2:?}; shift 2 ;;
        --requests) REQUESTS=${2:?}; shift 2 ;;
        *) die "unknown option $1" ;;
    esac
done
SERVER=$BUILD/app/switchyard-server
LOAD=$BUILD/tests/bench/gateway_load
[ -x "$SERVER" ] || die "no $SERVER (build the switchyard-server target)"
[ -x "$LOAD" ] || die "no $LOAD (build the gateway_load target)"
command -v haproxy >/dev/null || die "haproxy not found (bash installer/build-deps.sh --tests)"
command -v wrk >/dev/null || die "wrk not found (bash installer/build-deps.sh --tests)"
# shellcheck source=tests/bench/billed-bodies.sh
. "$HERE/billed-bodies.sh"

WORK=$(mktemp -d /tmp/switchyard-instances-bench.XXXXXX)
PIDS=()
stop_all() {
    local p
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    PIDS=()
}
cleanup() {
    stop_all
    bash "$ROOT/tests/pg/stop-postgres.sh" "$WORK/pg" >/dev/null 2>&1 || true
    rm -rf "$WORK"
}
trap cleanup EXIT

say "starting a throwaway PostgreSQL"
URL=$(env -u SWITCHYARD_TEST_PG_URL bash "$ROOT/tests/pg/ensure-postgres.sh" "$WORK/pg" 2>"$WORK/pg.log") ||
    { cat "$WORK/pg.log" >&2; die "PostgreSQL did not start"; }
WHERE=(--data-dir "$WORK/data" --database "$URL")
KEY=$("$SERVER" keys create --name bench "${WHERE[@]}" 2>/dev/null)
"$SERVER" credits grant --amount 1000000 "${WHERE[@]}" >/dev/null
BODY="$WORK/body.json"
printf '%s' "${BILLED_BODY[transfer-coord]}" >"$BODY"
billed_wrk_script "$WORK/wrk.lua" transfer-coord "$KEY"

# shellcheck source=tests/bench/wait-listen.sh
. "$HERE/wait-listen.sh"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

start_instance() { # SHARED(auto|off): sets PORT (not in a subshell: PIDS must keep its pid)
    local shared=$1 cfg log url
    cfg="$WORK/config-$shared.json"
    # Limits high enough never to refuse, low enough to be taken (0 would skip the limiter).
    printf '{"server":{"shared_state":"%s"},"rate_limits":{"default":{"default":100000000}}}' \
        "$shared" >"$cfg"
    log=$(mktemp "$WORK/instance.XXXXXX.log")
    "$SERVER" serve --listen 127.0.0.1:0 --config "$cfg" --data-dir "$WORK/data" \
        --database "$URL" >"$log" 2>&1 &
    PIDS+=($!)
    url=$(wait_listen "$log" "$!" "an instance")
    PORT=${url##*:}
}

start_proxy() { # PORTS...: sets FRONT
    local front cfg
    front=$(free_port)
    cfg="$WORK/haproxy-$front.cfg"
    awk -v front="$front" -v ports="$*" '
        BEGIN { n = split(ports, p, " ") }
        /^ *bind / { print "    bind 127.0.0.1:" front; next }
        /^ *server / { if (i < n) { i++; print "    server i" i " 127.0.0.1:" p[i] " check" } next }
        { print }' "$ROOT/installer/haproxy.cfg" >"$cfg"
    haproxy -db -f "$cfg" >"$WORK/haproxy-$front.log" 2>&1 &
    PIDS+=($!)
    for _ in $(seq 1 100); do
        (exec 3<>"/dev/tcp/127.0.0.1/$front") 2>/dev/null && { FRONT=$front; return 0; }
        sleep 0.1
    done
    cat "$WORK/haproxy-$front.log" >&2
    die "haproxy did not start"
}

kv() { # LINE KEY: the value of KEY=value in gateway_load's line (times in microseconds)
    tr ' ' '\n' <<<"$1" | sed -n "s/^$2=\([0-9.]*\)$/\1/p" | cut -d. -f1
}

measure() { # NAME PORT: one round's figures of NAME into FIG
    local name=$1 port=$2 url out p50 p99 rp50 rp99 rps
    url="http://127.0.0.1:$port/v1/address/transfer-coord"
    out=$("$LOAD" latency "$url" -H "Authorization: Bearer $KEY" -H "Content-Type: application/json" \
        --body-file "$BODY" --requests "$REQUESTS" --warmup 200 2>>"$WORK/load.log")
    p50=$(kv "$out" p50_us); p99=$(kv "$out" p99_us)
    out=$("$LOAD" rate "$url" -H "Authorization: Bearer $KEY" -H "Content-Type: application/json" \
        --body-file "$BODY" --rate "$RATE" --duration 5 --warmup-s 0.5 2>>"$WORK/load.log")
    rp50=$(kv "$out" p50_us); rp99=$(kv "$out" p99_us)
    rps=$(timeout 60 wrk -t2 -c64 -d5s -s "$WORK/wrk.lua" "$url" 2>&1 | sed -n 's/^Requests\/sec: *\([0-9.]*\).*/\1/p')
    FIG[$name.p50.$ROUND]=$p50; FIG[$name.p99.$ROUND]=$p99
    FIG[$name.rp50.$ROUND]=$rp50; FIG[$name.rp99.$ROUND]=$rp99
    FIG[$name.rps.$ROUND]=${rps%.*}
    say "  $name: c=1 p50 ${p50} us p99 ${p99} us; ${RATE}/s p50 ${rp50} us p99 ${rp99} us; wrk ${rps} req/s"
}

declare -A FIG
CONFIGS=(local shared haproxy-1 haproxy-2 haproxy-3)
for ROUND in $(seq 1 "$RUNS"); do
    say "round $ROUND of $RUNS"
    start_instance off; measure local "$PORT"; stop_all
    start_instance auto; measure shared "$PORT"; stop_all
    for n in 1 2 3; do
        ports=()
        for _ in $(seq 1 "$n"); do start_instance auto; ports+=("$PORT"); done
        start_proxy "${ports[@]}"
        sleep 2.5 # haproxy's first health checks (rise 2, a second apart)
        measure "haproxy-$n" "$FRONT"
        stop_all
    done
done

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
med() { local r; for r in $(seq 1 "$RUNS"); do echo "${FIG[$1.$2.$r]:-0}"; done | median; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }
echo "| configuration | c=1 p50 (us) | c=1 p99 (us) | ${RATE}/s p50 (us) | ${RATE}/s p99 (us) | billed req/s (wrk) |"
echo "|---|---:|---:|---:|---:|---:|"
for c in "${CONFIGS[@]}"; do
    row="| $c"
    for f in p50 p99 rp50 rp99 rps; do
        v=$(med "$c" "$f")
        if [ "$c" = local ]; then row+=" | $v"; else row+=" | $v (x$(ratio "$v" "$(med local "$f")"))"; fi
    done
    echo "$row |"
done
echo
added50=$(( $(med shared p50) - $(med local p50) )); added99=$(( $(med shared p99) - $(med local p99) ))
echo "The shared state adds ${added50} us at p50 and ${added99} us at p99 to a billed request at"
echo "concurrency 1 (shared against local, one instance, no proxy). Medians of $RUNS rounds;"
echo "times in microseconds; (xR): the ratio to local."
