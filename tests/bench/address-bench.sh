#!/usr/bin/env bash
# address-bench.sh [BUILD_DIR] [--duration S] [--connections C]
#
# Requests per second of every address endpoint through the running server, on one core:
# the server is pinned to CPU 0 and wrk to CPU 1 (taskset). Each endpoint gets the first request
# body of tests/bench/address/requests.json, authenticated with an API key, billed per request
# (SQLite, group commit) like production. D seconds per endpoint (default 5) at C connections
# (default 8). Prints a markdown table with each endpoint's rate as a ratio of GET /healthz's in
# the same run (the HTTP layer alone), p50/p99, non-2xx answers, the server's RSS; then
# bench_address (in-process calls/s) when it was built.
#
# Builds nothing: BUILD_DIR (default ./build) must hold app/switchyard-server. Needs wrk, curl and
# node. Starts a throwaway server on 127.0.0.1 with a temporary data dir; stops it on exit.
set -euo pipefail
say() { printf '[address-bench] %s\n' "$*" >&2; }
die() { printf '[address-bench] ERROR: %s\n' "$*" >&2; exit 1; }

BUILD="" DURATION=5 CONNS=8
while [ $# -gt 0 ]; do
    case "$1" in
        --duration) DURATION=${2:?}; shift 2 ;;
        --connections) CONNS=${2:?}; shift 2 ;;
        -h | --help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) die "unknown option $1 (see --help)" ;;
        *) BUILD=$1; shift ;;
    esac
done
BUILD=${BUILD:-./build}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/wait-listen.sh" # wait_listen LOG PID NAME
SERVER=$BUILD/app/switchyard-server
[ -x "$SERVER" ] || die "$SERVER not found: build it first"
for tool in wrk curl node taskset; do command -v $tool >/dev/null || die "$tool is not installed"; done
[[ "$DURATION" =~ ^[0-9]+$ && "$DURATION" -ge 1 && "$DURATION" -le 120 ]] || die "--duration: 1..120"
[[ "$CONNS" =~ ^[0-9]+$ && "$CONNS" -ge 1 ]] || die "--connections: a positive number"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/switchyard-addressbench.XXXXXX")
SERVER_PID=""
cleanup() {
    if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill -TERM "$SERVER_PID" 2>/dev/null || true
        for _ in $(seq 1 150); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$SERVER_PID" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkdir -p "$WORK/data"
echo '{"rate_limits":{"default":{"default":0,"control":0}}}' >"$WORK/config.json"
admin() { timeout 60 env -u SWITCHYARD_DATABASE "$SERVER" "$@" --data-dir "$WORK/data" </dev/null; }
KEY=$(admin keys create --name address-bench 2>/dev/null) || die "keys create failed"
admin credits grant --amount 1000000 >/dev/null 2>&1 || die "credits grant failed"

CPUS=$(nproc)
PIN_SERVER=() PIN_WRK=()
if [ "$CPUS" -ge 2 ]; then PIN_SERVER=(taskset -c 0) PIN_WRK=(taskset -c 1); fi
env -u SWITCHYARD_DATABASE "${PIN_SERVER[@]}" "$SERVER" serve --listen 127.0.0.1:0 \
    --config "$WORK/config.json" --data-dir "$WORK/data" </dev/null >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
BASE_URL=$(wait_listen "$WORK/server.log" "$SERVER_PID" "the server")
rss_mb() { awk '/^VmRSS:/ {printf "%.1f", $2 / 1024}' "/proc/$SERVER_PID/status"; }
say "server on $BASE_URL (pinned: ${PIN_SERVER[*]:-no}), RSS $(rss_mb) MB"

# One body file per endpoint, in the order of requests.json.
node -e '
const fs = require("fs");
const all = JSON.parse(fs.readFileSync(process.argv[1], "utf8"));
for (const [name, bodies] of Object.entries(all)) {
  if (name.startsWith("_")) continue;
  fs.writeFileSync(`${process.argv[2]}/${name}.json`, JSON.stringify(bodies[0]));
  console.log(name);
}' "$HERE/address/requests.json" "$WORK" >"$WORK/endpoints.txt"

to_ms() {
    awk -v v="$1" 'BEGIN { n = v + 0; u = v; sub(/^[0-9.]+/, "", u)
        if (u == "us") n /= 1000; else if (u == "s") n *= 1000; printf "%.2f", n }'
}
# run NAME PATH [BODYFILE]: wrk for DURATION s; sets RPS and appends a row.
ROWS=()
run() {
    local name=$1 path=$2 body=${3:-} script=$WORK/$1.lua out=$WORK/$1.wrk
    if [ -n "$body" ]; then
        node -e 'const b = require("fs").readFileSync(process.argv[1], "utf8");
            console.log(`wrk.method = "POST"\nwrk.body = ${JSON.stringify(b)}\n` +
                `wrk.headers["Content-Type"] = "application/json"\n` +
                `wrk.headers["Authorization"] = "Bearer ${process.argv[2]}"`)' "$body" "$KEY" >"$script"
    else
        echo '' >"$script"
    fi
    timeout $((DURATION + 30)) "${PIN_WRK[@]}" wrk -t1 -c"$CONNS" -d"${DURATION}s" --latency \
        -s "$script" "$BASE_URL$path" >"$out" 2>&1 || { cat "$out" >&2; die "wrk failed on $path"; }
    RPS=$(awk '/^Requests\/sec:/ {printf "%.0f", $2}' "$out")
    local p50 p99 non2xx
    p50=$(to_ms "$(awk '$1 == "50%" {print $2}' "$out")")
    p99=$(to_ms "$(awk '$1 == "99%" {print $2}' "$out")")
    non2xx=$(awk '/Non-2xx or 3xx responses:/ {print $NF}' "$out")
    ROWS+=("$name|$RPS|$p50|$p99|${non2xx:-0}|$(rss_mb)")
    say "$name: $RPS req/s, p50 $p50 ms, p99 $p99 ms, non-2xx ${non2xx:-0}"
}

run healthz /healthz
HEALTHZ=$RPS
while read -r ep; do
    code=$(curl -s -o "$WORK/$ep.answer" -w '%{http_code}' -m 10 -H "Authorization: Bearer $KEY" \
        -H 'Content-Type: application/json' --data-binary "@$WORK/$ep.json" "$BASE_URL/v1/address/$ep") || true
    if [ "$code" = 404 ]; then say "$ep: not served by this build, skipped"; continue; fi
    [ "$code" = 200 ] || { cat "$WORK/$ep.answer" >&2; die "$ep answered $code"; }
    run "$ep" "/v1/address/$ep" "$WORK/$ep.json"
done <"$WORK/endpoints.txt"

echo
echo "Address endpoints through the server (1 server core, wrk -t1 -c$CONNS, ${DURATION}s each):"
echo
echo "| endpoint | req/s | × healthz | p50 ms | p99 ms | non-2xx | RSS MB |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for row in "${ROWS[@]}"; do
    IFS='|' read -r n r p50 p99 bad rss <<<"$row"
    ratio=$(awk -v a="$r" -v b="$HEALTHZ" 'BEGIN {printf "%.2f", a / b}')
    echo "| $n | $r | $ratio | $p50 | $p99 | $bad | $rss |"
done
if [ -x "$BUILD/tests/bench/bench_address" ]; then
    echo
    echo "In-process (bench_address, one thread):"
    "${PIN_SERVER[@]}" "$BUILD/tests/bench/bench_address" --benchmark_min_time=1s 2>/dev/null |
        grep -E '^(engine|second engine|address/)' || true
fi
