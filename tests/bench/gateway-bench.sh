#!/usr/bin/env bash
# gateway-bench.sh BUILD_DIR [--targets direct,switchyard,portkey] [--quick] [--no-build]
#                            [--rate R] [--p99-limit-ms MS] [--streams N] [--data-parent DIR]
#                            [--pg URL] [--sustain-p99-ms MS] [--wait-quiet S] [--settle-s S]
#                            [--keep]
#
# The text-generation gateway side by side, in one run, against tests/fake_upstream at zero
# latency on loopback:
#   direct      the fake itself (the floor)
#   switchyard  BUILD_DIR/app/switchyard-server, routed to the fake (model vendorB-5-nano)
#   portkey     @portkey-ai/gateway (npm, pinned in tests/bench/gateway/package.json), routed
#               to the fake with x-portkey-provider: openai + x-portkey-custom-host
# Phases (load generator: tests/bench/gateway/gateway_load.cpp, built here):
#   1. non-streaming chat completion at concurrency 1: p50/p99, and gateway - direct
#   2. open loop at a fixed rate (--rate, default 500 req/s): p50/p99 from the scheduled time
#   3. the highest rate held with p99 under --p99-limit-ms (default 5): rates doubled from 500
#      until one fails (halved when 500 fails), then bisected twice; then the same search
#      for the highest rate kept up with p99 under --sustain-p99-ms (default 50), reusing the
#      steps already run
#   4. 64-chunk streams (2 ms apart), concurrency 1: time to first token, gaps between chunks
#   5. --streams (default 1000) slow streams at once (120 chunks, 100 ms apart): all open and
#      progressing? gateway RSS (VmRSS) while they are
#   6. switchyard only: wrk (2 threads, 256 connections, 5 s each) on GET /healthz and on the
#      cheapest billed requests (POST /v1/address/transfer-coord, extract-phone and
#      division-code): requests per second, and each as a share of /healthz
#   7. switchyard only: its RSS right after start, plus what phase 6's first requests took to
#      build the address engine (the reference: an idle server holding what it serves); right
#      after the last phase, and --settle-s (default 60) seconds later: does memory go back after
#      the overload?
# Every run prints the figures it needs for tests/bench/gateway-runs.sh, which runs this script
# several times and reports medians and spreads.
# Prints one markdown report: a summary table with the targets, then the rate steps.
#
# --wait-quiet S: before each measurement, wait (at most S seconds in all) until the other
# processes on the machine use under 10% of the CPUs; every row reports what they used anyway.
#
# Switchyard keeps its SQLite database in a fresh directory under --data-parent (default: the
# temporary directory); each billed request commits there, so the filesystem matters (the
# report names it): tmpfs hides the cost of fdatasync. --pg URL puts it on that PostgreSQL
# database instead (its tables are made there; point it at a throwaway database).
#
# Builds switchyard-server, fake_upstream and gateway_load in BUILD_DIR (--no-build: use what
# is there), installs the npm package in tests/bench/gateway/ when missing (npm ci). Every
# process it starts binds 127.0.0.1 only and is stopped on exit; every step is bounded in time.
# About 4 minutes on a 2-core machine (--quick: about 1.5). Logs stay in BUILD_DIR/bench-results/
# gateway/ (--keep also keeps the temporary data directory).
set -euo pipefail

say() { printf '[gateway-bench] %s\n' "$*" >&2; }
die() {
    printf '[gateway-bench] ERROR: %s\n' "$*" >&2
    exit 1
}

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
GW_DIR=$HERE/gateway

BUILD=""
TARGETS="direct,switchyard,portkey"
QUICK=0
DO_BUILD=1
FIXED_RATE=500
P99_LIMIT_MS=5
STREAMS=1000
KEEP=0
DATA_PARENT=${TMPDIR:-/tmp}
WAIT_QUIET=0
SUSTAIN_MS=50
PG_URL=""
SETTLE_S=60
while [ $# -gt 0 ]; do
    case "$1" in
        --targets) TARGETS=${2:?}; shift 2 ;;
        --quick) QUICK=1; shift ;;
        --no-build) DO_BUILD=0; shift ;;
        --rate) FIXED_RATE=${2:?}; shift 2 ;;
        --p99-limit-ms) P99_LIMIT_MS=${2:?}; shift 2 ;;
        --streams) STREAMS=${2:?}; shift 2 ;;
        --keep) KEEP=1; shift ;;
        --data-parent) DATA_PARENT=${2:?}; shift 2 ;;
        --wait-quiet) WAIT_QUIET=${2:?}; shift 2 ;;
        --sustain-p99-ms) SUSTAIN_MS=${2:?}; shift 2 ;;
        --pg) PG_URL=${2:?}; shift 2 ;;
        --settle-s) SETTLE_S=${2:?}; shift 2 ;;
        -h | --help) awk 'NR > 1 && /^#/ {sub(/^# ?/, ""); print; next} NR > 1 {exit}' "$0"; exit 0 ;;
        -*) die "unknown option $1 (see --help)" ;;
        *) [ -z "$BUILD" ] || die "one BUILD_DIR only"; BUILD=$1; shift ;;
    esac
done
[ -n "$BUILD" ] || die "usage: gateway-bench.sh BUILD_DIR [options] (see --help)"
[[ "$FIXED_RATE" =~ ^[0-9]+$ && "$FIXED_RATE" -ge 1 ]] || die "--rate: a positive integer"
[[ "$STREAMS" =~ ^[0-9]+$ && "$STREAMS" -ge 1 && "$STREAMS" -le 5000 ]] || die "--streams: 1..5000"
[[ "$P99_LIMIT_MS" =~ ^[0-9]+([.][0-9]+)?$ ]] || die "--p99-limit-ms: a number"
[[ "$SUSTAIN_MS" =~ ^[0-9]+([.][0-9]+)?$ ]] || die "--sustain-p99-ms: a number"
[[ "$SETTLE_S" =~ ^[0-9]+$ ]] || die "--settle-s: a whole number of seconds"
want() { [[ ",$TARGETS," == *",$1,"* ]]; }
for t in ${TARGETS//,/ }; do
    case "$t" in direct | switchyard | portkey) ;; *) die "--targets: direct, switchyard, portkey" ;; esac
done
want direct || die "--targets must include direct (the added latencies are measured against it)"

mkdir -p "$BUILD"
BUILD=$(cd "$BUILD" && pwd)
RESULTS=$BUILD/bench-results/gateway
rm -rf "$RESULTS"
mkdir -p "$RESULTS"
command -v curl >/dev/null || die "curl is not installed"

# Phase sizes (--quick for trying the script, not for figures)
if [ "$QUICK" = 1 ]; then
    LAT_N=1000; LAT_WARM=300; RATE_S=2; STEP_S=2; STREAM_N=10; HOLD_CHUNKS=60
else
    LAT_N=3000; LAT_WARM=1000; RATE_S=5; STEP_S=3; STREAM_N=30; HOLD_CHUNKS=120
fi
HOLD_INTERVAL_MS=100
MAX_STEPS=8

# --- 1. build ------------------------------------------------------------------------------

has_target() { cmake --build "$BUILD" --target help 2>/dev/null | grep -q "\\b$1\\b"; }
if [ "$DO_BUILD" = 1 ]; then
    [ -f "$BUILD/CMakeCache.txt" ] || die "$BUILD is not a configured build (cmake -S $SRC -B $BUILD first)"
    T=(switchyard-server)
    has_target fake_upstream && T+=(fake_upstream)
    has_target gateway_load && T+=(gateway_load)
    say "building ${T[*]} in $BUILD"
    timeout 3600 cmake --build "$BUILD" -j2 --target "${T[@]}" >"$RESULTS/build.log" 2>&1 ||
        { tail -n 40 "$RESULTS/build.log" >&2; die "the build failed (log: $RESULTS/build.log)"; }
    if ! has_target fake_upstream; then
        say "fake_upstream is not a target of $BUILD (tests off): building tests/fake_upstream standalone"
        GEN=()
        command -v ninja >/dev/null && GEN=(-G Ninja)
        cmake "${GEN[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -S "$SRC/tests/fake_upstream" \
            -B "$BUILD/fake-upstream" >>"$RESULTS/build.log" 2>&1 &&
            timeout 3600 cmake --build "$BUILD/fake-upstream" -j2 --target fake_upstream \
                >>"$RESULTS/build.log" 2>&1 ||
            { tail -n 40 "$RESULTS/build.log" >&2; die "building fake_upstream failed"; }
    fi
    if ! has_target gateway_load; then
        say "gateway_load is not a target of $BUILD (tests/bench not in the build): compiling it with g++"
        mkdir -p "$BUILD/bench-gateway"
        g++ -std=c++20 -O2 -g -Wall -Wextra -o "$BUILD/bench-gateway/gateway_load" \
            "$GW_DIR/gateway_load.cpp" >>"$RESULTS/build.log" 2>&1 ||
            { tail -n 40 "$RESULTS/build.log" >&2; die "compiling gateway_load failed"; }
    fi
fi
SERVER=$BUILD/app/switchyard-server
FAKE=""
for f in "$BUILD/tests/fake_upstream/fake_upstream" "$BUILD/fake-upstream/fake_upstream"; do
    [ -x "$f" ] && { FAKE=$f; break; }
done
LOAD=""
for f in "$BUILD/tests/bench/gateway_load" "$BUILD/bench-gateway/gateway_load"; do
    [ -x "$f" ] && { LOAD=$f; break; }
done
[ -n "$FAKE" ] || die "fake_upstream not found in $BUILD"
[ -n "$LOAD" ] || die "gateway_load not found in $BUILD"
! want switchyard || [ -x "$SERVER" ] || die "$SERVER not found"

# --- 2. the reference gateway ----------------------------------------------------------------

PORTKEY_NOTE=""
PORTKEY_VERSION=""
if want portkey; then
    command -v node >/dev/null || die "node is not installed (the portkey column needs Node >= 18; or --targets direct,switchyard)"
    command -v npm >/dev/null || die "npm is not installed (or --targets direct,switchyard)"
    PK_PKG=$GW_DIR/node_modules/@portkey-ai/gateway/package.json
    if [ ! -f "$PK_PKG" ] || [ "$GW_DIR/package-lock.json" -nt "$GW_DIR/node_modules/.package-lock.json" ]; then
        say "installing @portkey-ai/gateway in $GW_DIR (npm ci)"
        (cd "$GW_DIR" && timeout 600 npm ci --no-audit --no-fund) >"$RESULTS/npm.log" 2>&1 ||
            { tail -n 30 "$RESULTS/npm.log" >&2; die "npm ci failed in $GW_DIR"; }
    fi
    PORTKEY_VERSION=$(node -p "require('$PK_PKG').version")
    HONO_NODE=$(node -p "require('$GW_DIR/node_modules/@hono/node-server/package.json').version")
fi

# --- 3. processes ----------------------------------------------------------------------------

WORK=$(mktemp -d "${TMPDIR:-/tmp}/switchyard-gwbench.XXXXXX")
SY_DATA=""
SY_FS=""

FAKE_PID=""
SY_PID=""
PK_PID=""
ulimit -n 20000 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

stop_pid() { # PID NAME: SIGTERM, then SIGKILL after 15 s
    local pid=$1
    [ -n "$pid" ] || return 0
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 1 150); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        if kill -0 "$pid" 2>/dev/null; then
            say "$2 ($pid) did not stop in 15 s; killing it"
            kill -KILL "$pid" 2>/dev/null || true
        fi
    fi
    wait "$pid" 2>/dev/null || true
}
cleanup() {
    stop_pid "$PK_PID" portkey
    stop_pid "$SY_PID" switchyard-server
    stop_pid "$FAKE_PID" fake_upstream
    exec 7>&- 2>/dev/null || true
    for f in "$WORK"/*.log; do [ -f "$f" ] && cp "$f" "$RESULTS/" 2>/dev/null; done
    if [ "$KEEP" = 1 ]; then
        say "kept $WORK ${SY_DATA:-}"
    else
        rm -rf "$WORK"
        [ -z "${SY_DATA:-}" ] || rm -rf "$SY_DATA"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

. "$HERE/wait-listen.sh"   # wait_listen LOG PID NAME
. "$HERE/billed-bodies.sh" # BILLED_ENDPOINTS, BILLED_BODY, CHAT_BODY
. "$HERE/fake-upstream.sh" # start_fake, fake_providers

start_fake "$WORK" "$WORK/fake.log" "$FAKE"
FAKE_V1=$FAKE_URL/v1
say "fake_upstream $FAKE_PID on $FAKE_URL"
fake_requests() { curl -s -m 5 "$FAKE_URL/fake/stats" | sed -n 's/.*"requests":\([0-9]*\).*/\1/p'; }

STREAM64='{"model":"vendorB-5-nano","stream":true,"messages":[{"role":"user","content":"hello [fake chunks=64 interval-ms=2]"}]}'
HOLD="{\"model\":\"vendorB-5-nano\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hold [fake chunks=$HOLD_CHUNKS interval-ms=$HOLD_INTERVAL_MS]\"}]}"
printf '%s' "$CHAT_BODY" >"$WORK/nonstream.json"
printf '%s' "$STREAM64" >"$WORK/stream64.json"
printf '%s' "$HOLD" >"$WORK/hold.json"

declare -A URL PID HDRS AVAIL NOTE
URL[direct]=$FAKE_URL/v1/chat/completions
PID[direct]=$FAKE_PID
HDRS[direct]="Authorization: Bearer k1"
AVAIL[direct]=1

# check_target NAME: one non-streaming and one streaming request must answer 200 and reach
# the fake (its request counter moves by exactly 2).
check_target() {
    local name=$1 before after code args=()
    while IFS= read -r h; do [ -z "$h" ] || args+=(-H "$h"); done <<<"${HDRS[$name]}"
    before=$(fake_requests)
    code=$(curl -s -m 10 -o "$WORK/check-$name.json" -w '%{http_code}' "${args[@]}" \
        -H 'Content-Type: application/json' --data-binary @"$WORK/nonstream.json" "${URL[$name]}") || code=000
    if [ "$code" != 200 ]; then
        AVAIL[$name]=0
        NOTE[$name]="POST /v1/chat/completions answered $code: $(head -c 200 "$WORK/check-$name.json" | tr '\n' ' ')"
        say "$name: ${NOTE[$name]}"
        return 0
    fi
    code=$(curl -s -N -m 10 -o "$WORK/check-$name-stream.txt" -w '%{http_code}' "${args[@]}" \
        -H 'Content-Type: application/json' --data-binary @"$WORK/stream64.json" "${URL[$name]}") || code=000
    after=$(fake_requests)
    if [ "$code" != 200 ] || ! grep -q '\[DONE\]' "$WORK/check-$name-stream.txt"; then
        AVAIL[$name]=0
        NOTE[$name]="streaming answered $code without [DONE]: $(head -c 200 "$WORK/check-$name-stream.txt" | tr '\n' ' ')"
        say "$name: ${NOTE[$name]}"
        return 0
    fi
    if [ $((after - before)) != 2 ]; then
        AVAIL[$name]=0
        NOTE[$name]="2 requests answered 200 but the fake counted $((after - before)): not going through"
        say "$name: ${NOTE[$name]}"
        return 0
    fi
    AVAIL[$name]=1
    say "$name: a request and a stream went through to the fake"
}

if want switchyard; then
    [ -d "$DATA_PARENT" ] || die "--data-parent $DATA_PARENT: no such directory"
    SY_DATA=$(mktemp -d "$DATA_PARENT/switchyard-gwbench-data.XXXXXX")
    if [ -n "$PG_URL" ]; then
        SY_WHERE=(--database "$PG_URL")
        SY_FS="PostgreSQL"
    else
        SY_WHERE=(--data-dir "$SY_DATA")
        SY_FS=$(df -PT "$SY_DATA" 2>/dev/null | awk 'NR == 2 {print "SQLite on " $2 " (" $7 ")"}')
    fi
    admin() { timeout 60 env -u SWITCHYARD_DATABASE "$SERVER" "$@" "${SY_WHERE[@]}" </dev/null; }
    SY_KEY=$(admin keys create --name bench 2>"$WORK/keys.err") || { cat "$WORK/keys.err" >&2; die "keys create failed"; }
    [[ "$SY_KEY" == sk-* ]] || die "keys create printed no sk- key"
    admin credits grant --amount 1000000 >/dev/null 2>&1 || die "credits grant failed"
    printf '{%s, %s}\n' "$(fake_providers "$FAKE_URL")" \
        '"rate_limits":{"default":{"chat":0,"default":0}}' >"$WORK/switchyard.json"
    env -u SWITCHYARD_DATABASE "$SERVER" serve --listen 127.0.0.1:0 "${SY_WHERE[@]}" \
        --config "$WORK/switchyard.json" </dev/null >"$WORK/switchyard.log" 2>&1 &
    SY_PID=$!
    SY_URL=$(wait_listen "$WORK/switchyard.log" "$SY_PID" switchyard-server)
    say "switchyard-server $SY_PID on $SY_URL"
    URL[switchyard]=$SY_URL/v1/chat/completions
    PID[switchyard]=$SY_PID
    HDRS[switchyard]="Authorization: Bearer $SY_KEY"
    check_target switchyard
    SY_RSS_START=$(awk '/^VmRSS:/ {printf "%.1f", $2 / 1024}' "/proc/$SY_PID/status")
fi

if want portkey; then
    (cd "$GW_DIR" && exec env NODE_ENV=production node --import "$GW_DIR/loopback.mjs" \
        node_modules/@portkey-ai/gateway/build/start-server.js --port=0 --headless) \
        </dev/null >"$WORK/portkey.out" 2>"$WORK/portkey.log" &
    PK_PID=$!
    PK_URL=$(wait_listen "$WORK/portkey.log" "$PK_PID" portkey)
    say "portkey $PORTKEY_VERSION ($PK_PID) on $PK_URL"
    URL[portkey]=$PK_URL/v1/chat/completions
    PID[portkey]=$PK_PID
    HDRS[portkey]=$(printf '%s\n' "Authorization: Bearer k1" "x-portkey-provider: openai" \
        "x-portkey-custom-host: $FAKE_V1")
    check_target portkey
fi
check_target direct
[ "${AVAIL[direct]}" = 1 ] || die "the fake itself does not answer: ${NOTE[direct]}"

ORDER=()
for t in direct switchyard portkey; do
    if want "$t" && [ "${AVAIL[$t]:-0}" = 1 ]; then ORDER+=("$t"); fi
done

# --- 4. measuring ----------------------------------------------------------------------------

CLK_TCK=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
rss_mb() { awk '/^VmRSS:/ {printf "%.1f", $2 / 1024}' "/proc/$1/status" 2>/dev/null || echo "?"; }
# errsum LINE [KEY...]: errors + non200 (+ the other keys), or "failed" when the run failed
errsum() {
    local line=$1 e k v
    shift
    e=$(kv "$line" errors)
    [[ "$e" =~ ^[0-9]+$ ]] || { echo failed; return; }
    for k in non200 "$@"; do
        v=$(kv "$line" "$k")
        [[ "$v" =~ ^[0-9]+$ ]] && e=$((e + v))
    done
    echo "$e"
}
kv() { sed -n "s/.* $2=\\([^ ]*\\).*/\\1/p" <<<" $1"; } # kv LINE KEY
ms() { awk -v u="$1" 'BEGIN { if (u == "" || u < 0) print "-"; else printf "%.3f", u / 1000 }'; }
sub_ms() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || a < 0 || b < 0) print "-"; else printf "%+.3f", (a - b) / 1000 }'; }

# load NAME ARGS...: runs gateway_load against NAME; prints its key=value line, plus the CPU % of
# the gateway and of the fake during the run (cpu_gw=, cpu_fake=)
load() {
    local name=$1 mode=$2
    shift 2
    local args=() g0 f0 t0 g1 f1 t1 out
    while IFS= read -r h; do [ -z "$h" ] || args+=(-H "$h"); done <<<"${HDRS[$name]}"
    wait_quiet
    g0=$(cpu_ticks "${PID[$name]}"); f0=$(cpu_ticks "$FAKE_PID"); t0=$(date +%s.%N); a0=$(all_ticks)
    out=$(timeout 120 "$LOAD" "$mode" "${URL[$name]}" "${args[@]}" "$@" 2>>"$WORK/load-$name.log") || {
        say "gateway_load $mode against $name failed (exit $?); see $RESULTS/load-$name.log"
        out="mode=$mode errors=failed"
    }
    g1=$(cpu_ticks "${PID[$name]}"); f1=$(cpu_ticks "$FAKE_PID"); t1=$(date +%s.%N); a1=$(all_ticks)
    local cg cf co
    cg=$(awk -v a="$g0" -v b="$g1" -v s="$t0" -v e="$t1" -v hz="$CLK_TCK" 'BEGIN {printf "%.0f", (b - a) / hz / (e - s) * 100}')
    cf=$(awk -v a="$f0" -v b="$f1" -v s="$t0" -v e="$t1" -v hz="$CLK_TCK" 'BEGIN {printf "%.0f", (b - a) / hz / (e - s) * 100}')
    [ "$name" != direct ] || cg=$cf
    # CPU used by everything else on the machine meanwhile (% of one core): all busy CPU time
    # less the gateway's, the fake's and the load generator's
    co=$(awk -v a="$a0" -v b="$a1" -v s="$t0" -v e="$t1" -v hz="$CLK_TCK" -v g="$cg" -v f="$cf" \
        -v l="$(kv "$out" cpu_self)" -v d="$name" \
        'BEGIN {t = (b - a) / hz / (e - s) * 100 - f - (l + 0) - (d == "direct" ? 0 : g); printf "%.0f", (t < 0 ? 0 : t)}')
    echo "$out cpu_gw=$cg cpu_fake=$cf cpu_other=$co"
    echo "$name $mode $* :: $out cpu_gw=$cg cpu_fake=$cf cpu_other=$co" >>"$WORK/raw.log"
}
# the kernel's count of connections dropped because a listen queue was full (all sockets)
listen_overflows() {
    awk '/^TcpExt:/ {if (!h) {split($0, n); h = 1} else {for (i = 2; i <= NF; i++) if (n[i] == "ListenOverflows") print $i}}' \
        /proc/net/netstat 2>/dev/null || echo 0
}
all_ticks() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8}' /proc/stat; }

# How busy the machine is without us: CPU used over 1 s, from /proc/stat (all CPUs).
busy_pct() {
    local a b
    a=$(awk '/^cpu / {print $2+$3+$4+$7+$8, $2+$3+$4+$5+$6+$7+$8}' /proc/stat)
    sleep 1
    b=$(awk '/^cpu / {print $2+$3+$4+$7+$8, $2+$3+$4+$5+$6+$7+$8}' /proc/stat)
    awk -v a="$a" -v b="$b" 'BEGIN {split(a, x, " "); split(b, y, " "); if (y[2] > x[2]) printf "%.0f", (y[1] - x[1]) / (y[2] - x[2]) * 100; else print "?"}'
}

# wait_quiet: with --wait-quiet, waits until the machine is under 10% busy for a second (our
# own processes are idle between measurements), within what is left of the budget. The budget
# is kept in a file because load() runs in a subshell.
echo "$WAIT_QUIET" >"$WORK/quiet-budget"
wait_quiet() {
    local left b
    left=$(cat "$WORK/quiet-budget")
    while [ "$left" -gt 0 ]; do
        b=$(busy_pct)
        [ "$b" = "?" ] || [ "$b" -ge 10 ] || break
        left=$((left - 1))
        echo "$left" >"$WORK/quiet-budget"
        [ $((left % 10)) != 0 ] || say "waiting for a quiet machine (${b}% busy; $left s left of --wait-quiet)"
    done
}

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
BUSY_BEFORE=$(busy_pct)
[ "$BUSY_BEFORE" = "?" ] || [ "$BUSY_BEFORE" -lt 15 ] ||
    say "WARNING: the machine is ${BUSY_BEFORE}% busy before the run (load $LOAD_BEFORE): the figures will be noisy"
T_START=$(date +%s)
declare -A R # R[name.metric]

# Phase 1: concurrency 1
for t in "${ORDER[@]}"; do
    warm=$LAT_WARM
    say "1. $t: concurrency 1, $LAT_N requests after $warm"
    line=$(load "$t" latency --body-file "$WORK/nonstream.json" --requests "$LAT_N" --warmup "$warm")
    R[$t.lat_p50]=$(kv "$line" p50_us); R[$t.lat_p99]=$(kv "$line" p99_us)
    R[$t.lat_mean]=$(kv "$line" mean_us); R[$t.lat_err]=$(errsum "$line")
    R[$t.lat_cpu]=$(kv "$line" cpu_gw)
done

# Phase 2: fixed rate, open loop
for t in "${ORDER[@]}"; do
    say "2. $t: $FIXED_RATE req/s for ${RATE_S} s (open loop)"
    before=$(fake_requests)
    line=$(load "$t" rate --body-file "$WORK/nonstream.json" --rate "$FIXED_RATE" --duration "$RATE_S" --warmup-s 0.5)
    after=$(fake_requests)
    R[$t.fix_p50]=$(kv "$line" p50_us); R[$t.fix_p99]=$(kv "$line" p99_us)
    R[$t.fix_err]=$(errsum "$line")
    R[$t.fix_cpu]=$(kv "$line" cpu_gw)
    R[$t.fix_seen]=$((after - before))
    R[$t.fix_sent]=$(kv "$line" sent)
    sleep 0.5
done

# Phase 3: the highest rate with p99 under the limit (then under the looser "kept up" limit)
STEPS=()
declare -A P99AT ERRAT RATES # "name:rate" -> p99 (us) / errors; name -> rates run
limit_us=$(awk -v m="$P99_LIMIT_MS" 'BEGIN {printf "%d", m * 1000}')
sustain_us=$(awk -v m="$SUSTAIN_MS" 'BEGIN {printf "%d", m * 1000}')
passes() { # NAME RATE LIMIT_US: did that step keep p99 under the limit without an error?
    local p99=${P99AT[$1:$2]:-} err=${ERRAT[$1:$2]:-x}
    [ "$err" = 0 ] && [ -n "$p99" ] && awk -v p="$p99" -v l="$3" 'BEGIN {exit !(p >= 0 && p < l)}'
}
yn() { if passes "$@"; then echo yes; else echo no; fi; }
step() { # NAME RATE: runs one open-loop step (once per rate)
    [ -z "${P99AT[$1:$2]:-}" ] || return 0
    local line p99 err
    line=$(load "$1" rate --body-file "$WORK/nonstream.json" --rate "$2" --duration "$STEP_S" --warmup-s 0.5)
    p99=$(kv "$line" p99_us)
    err=$(errsum "$line")
    P99AT[$1:$2]=${p99:--1}
    ERRAT[$1:$2]=$err
    RATES[$1]="${RATES[$1]:-} $2"
    STEPS+=("| $1 | $2 | $(kv "$line" achieved_rps) | $(ms "$(kv "$line" p50_us)") | $(ms "$p99") | $err | $(kv "$line" conns) | $(kv "$line" cpu_gw) | $(kv "$line" cpu_fake) | $(kv "$line" cpu_self) | $(kv "$line" cpu_other) | $(yn "$1" "$2" "$limit_us") | $(yn "$1" "$2" "$sustain_us") |")
    say "3. $1 at $2 req/s: p99 $(ms "$p99") ms, errors $err"
    # let a gateway that fell behind drain before the next step
    passes "$1" "$2" "$sustain_us" || sleep 2
    sleep 0.3
}
# search NAME LIMIT_US: sets LO (highest rate that passed) and HI (lowest that failed above it,
# 0 if none). Starts from the steps already run: up from the best pass (doubling), or down
# from 500 (halving) when nothing passed, then bisects twice.
search() {
    local t=$1 lim=$2 r n=0 mid
    LO=0 HI=0
    for r in ${RATES[$t]:-}; do
        if passes "$t" "$r" "$lim"; then [ "$r" -le "$LO" ] || LO=$r; fi
    done
    for r in ${RATES[$t]:-}; do
        if ! passes "$t" "$r" "$lim" && [ "$r" -gt "$LO" ]; then
            [ "$HI" != 0 ] && [ "$r" -ge "$HI" ] || HI=$r
        fi
    done
    if [ "$LO" = 0 ] && [ "$HI" = 0 ]; then r=500; elif [ "$HI" = 0 ]; then r=$((LO * 2)); else r=0; fi
    while [ "$r" -gt 0 ] && [ $n -lt $MAX_STEPS ]; do
        step "$t" "$r"; n=$((n + 1))
        if passes "$t" "$r" "$lim"; then
            LO=$r
            [ "$HI" = 0 ] || break
            r=$((r * 2))
            [ $r -le 64000 ] || break
        else
            HI=$r
            [ "$LO" = 0 ] || break
            r=$((r / 2))
            [ $r -ge 30 ] || break
        fi
    done
    for _ in 1 2; do
        [ "$LO" -gt 0 ] && [ "$HI" -gt 0 ] && [ $n -lt $MAX_STEPS ] || break
        mid=$(( (LO + HI) / 2 / 50 * 50 ))
        [ $mid -gt "$LO" ] && [ $mid -lt "$HI" ] || break
        step "$t" "$mid"; n=$((n + 1))
        if passes "$t" "$mid" "$lim"; then LO=$mid; else HI=$mid; fi
    done
}
for t in "${ORDER[@]}"; do
    search "$t" "$limit_us"
    R[$t.max_rate]=$LO; R[$t.max_fail]=$HI
    # the looser search only for the gateways: the fake's own ceiling is the one above
    if [ "$t" != direct ]; then
        search "$t" "$sustain_us"
        R[$t.sus_rate]=$LO; R[$t.sus_fail]=$HI
    fi
done

# Phase 4: 64-chunk streams at concurrency 1
for t in "${ORDER[@]}"; do
    say "4. $t: $STREAM_N streams of 64 chunks, 2 ms apart"
    line=$(load "$t" stream --body-file "$WORK/stream64.json" --requests "$STREAM_N" --warmup 3 --expect-events 64)
    R[$t.ttft_p50]=$(kv "$line" ttft_p50_us); R[$t.ttft_p99]=$(kv "$line" ttft_p99_us)
    R[$t.gap_p50]=$(kv "$line" gap_p50_us); R[$t.gap_p99]=$(kv "$line" gap_p99_us)
    R[$t.gap_max]=$(kv "$line" gap_max_us)
    R[$t.stream_err]=$(errsum "$line" bad_streams)
    R[$t.stream_events]="$(kv "$line" events_min)-$(kv "$line" events_max)"
done

# Phase 5: many slow streams at once
HOLD_TIMEOUT=$(( HOLD_CHUNKS * HOLD_INTERVAL_MS / 1000 + 35 ))
for t in "${ORDER[@]}"; do
    [ "$t" != direct ] || continue
    say "5. $t: $STREAMS streams at once, $HOLD_CHUNKS chunks ${HOLD_INTERVAL_MS} ms apart"
    rss0=$(rss_mb "${PID[$t]}")
    lo0=$(listen_overflows)
    line=$(load "$t" hold --body-file "$WORK/hold.json" --streams "$STREAMS" --ramp-ms 2000 \
        --expect-events "$HOLD_CHUNKS" --progress-ms 1000 --sample-ms 1000 \
        --rss-pid "${PID[$t]}" --rss-pid "$FAKE_PID" --timeout-s "$HOLD_TIMEOUT")
    R[$t.hold_idle_rss]=$rss0
    R[$t.hold_overflows]=$(( $(listen_overflows) - lo0 ))
    R[$t.hold_line]=$line
    R[$t.hold_ok]=$(kv "$line" ok)
    R[$t.hold_err]=$(errsum "$line" short)
    R[$t.hold_allopen]=$(kv "$line" all_open_ms)
    R[$t.hold_minprog]=$(kv "$line" min_progressing)
    R[$t.hold_maxopen]=$(kv "$line" max_open)
    R[$t.hold_rss_open]=$(awk -v k="$(kv "$line" "rss_max_kb_${PID[$t]}")" 'BEGIN {if (k > 0) printf "%.1f", k / 1024; else print "-"}')
    R[$t.hold_rss_peak]=$(awk -v k="$(kv "$line" "rss_peak_kb_${PID[$t]}")" 'BEGIN {if (k > 0) printf "%.1f", k / 1024; else print "-"}')
    R[$t.hold_fake_rss]=$(awk -v k="$(kv "$line" "rss_peak_kb_$FAKE_PID")" 'BEGIN {if (k > 0) printf "%.1f", k / 1024; else print "-"}')
    R[$t.hold_cpu]=$(kv "$line" cpu_gw)
    sleep 1
done
# Phase 6: the cheapest billed requests against /healthz, at full rate (wrk)
wrk_rps() { # PATH [LUA]: requests per second, "-" when wrk failed; non-2xx counted in R[wrk_bad]
    local out
    out=$(timeout 60 wrk -t2 -c256 -d5s ${2:+-s "$2"} "$SY_URL$1" 2>&1) || { echo "-"; return; }
    echo "$out" >>"$WORK/wrk.log"
    if echo "$out" | grep -q "Non-2xx or 3xx responses"; then echo "-"; return; fi
    echo "$out" | awk '/^Requests\/sec:/ {printf "%.0f", $2}'
}
if want switchyard && [ "${AVAIL[switchyard]:-0}" = 1 ]; then
    if command -v wrk >/dev/null; then
        wait_quiet
        say "6. switchyard: wrk on GET /healthz and the cheapest billed address requests"
        # One request each builds the address engine (built on first use, about 44 MB): phase 7
        # compares with the idle size after start plus what building it took.
        sleep 6 # longer than the programs' 5 s memory trim
        R[switchyard.rss_pre_engine]=$(rss_mb "$SY_PID")
        for e in "${BILLED_ENDPOINTS[@]}"; do
            curl -s -o /dev/null -X POST -H "Authorization: Bearer $SY_KEY" \
                -H "Content-Type: application/json" --data "${BILLED_BODY[$e]}" \
                "$SY_URL/v1/address/$e" || true
        done
        sleep 6
        R[switchyard.rss_engine]=$(awk -v a="$(rss_mb "$SY_PID")" -v b="${R[switchyard.rss_pre_engine]}" \
            'BEGIN {if (a > b) printf "%.1f", a - b; else print "0.0"}')
        R[switchyard.tp_healthz]=$(wrk_rps /healthz)
        for e in "${BILLED_ENDPOINTS[@]}"; do
            billed_wrk_script "$WORK/wrk-$e.lua" "$e" "$SY_KEY"
            R[switchyard.tp_$e]=$(wrk_rps "/v1/address/$e" "$WORK/wrk-$e.lua")
        done
    else
        say "6. skipped: wrk is not installed"
    fi
    # Phase 7: memory after the overload steps and the streams
    say "7. switchyard: RSS now and $SETTLE_S s later (idle after start: $SY_RSS_START MB, the address engine took ${R[switchyard.rss_engine]:--} MB)"
    R[switchyard.rss_after_load]=$(rss_mb "$SY_PID")
    sleep "$SETTLE_S"
    R[switchyard.rss_settled]=$(rss_mb "$SY_PID")
fi
T_END=$(date +%s)
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

# --- 5. the report ---------------------------------------------------------------------------

g() { local v=${R[$1]:-}; echo "${v:--}"; }
col() { # METRIC FORMATTER: the three target cells
    local m=$1 f=$2 out="" t
    for t in direct switchyard portkey; do
        if [ "${AVAIL[$t]:-0}" = 1 ] && want "$t"; then out+=" $($f "$(g "$t.$m")") |"; else out+=" n/a |"; fi
    done
    echo "$out"
}
added() { # METRIC: gateway - direct for switchyard and portkey, ms
    local out="" t
    for t in switchyard portkey; do
        if [ "${AVAIL[$t]:-0}" = 1 ] && want "$t"; then out+=" $(sub_ms "$(g "$t.$1")" "$(g "direct.$1")") |"; else out+=" n/a |"; fi
    done
    echo "$out"
}
id() { echo "$1"; }
sy_added_p99=$(sub_ms "$(g switchyard.lat_p99)" "$(g direct.lat_p99)")
t1="n/a"
if [ "${AVAIL[switchyard]:-0}" = 1 ] && [ "$sy_added_p99" != "-" ]; then
    t1=$(awk -v a="$sy_added_p99" 'BEGIN {print (a < 1 ? "yes" : "no")}')
fi
ratio() { # KIND (max|sus): switchyard / portkey at that criterion
    local sr pr
    sr=$(g "switchyard.${1}_rate"); pr=$(g "portkey.${1}_rate")
    if [ "${AVAIL[switchyard]:-0}" != 1 ] || [ "${AVAIL[portkey]:-0}" != 1 ]; then
        echo "n/a"
    elif [ "$pr" = 0 ]; then
        echo "n/a: portkey held no rate tried"
    else
        awk -v s="$sr" -v p="$pr" 'BEGIN {printf "%.1fx, %s", s / p, (s >= 3 * p ? "yes" : "no")}'
    fi
}
t2=$(ratio max)
t2s=$(ratio sus)
t3="n/a"
t4="n/a"
if [ "${AVAIL[switchyard]:-0}" = 1 ]; then
    t3=$(awk -v r="$(g switchyard.hold_rss_open)" 'BEGIN {print (r != "-" && r + 0 < 100 ? "yes" : "no")}')
    t4=$([ "$(g switchyard.hold_minprog)" = "$STREAMS" ] && echo yes || echo no)
fi

rate_cell() { # NAME KIND
    local lo hi
    lo=$(g "$1.${2}_rate"); hi=$(g "$1.${2}_fail")
    if [ "$lo" = - ]; then
        echo "not searched"
    elif [ "$lo" = 0 ]; then
        echo "< $hi (none passed)"
    elif [ "$hi" = 0 ]; then
        echo "$lo (highest tried)"
    else
        echo "$lo (fails at $hi)"
    fi
}
rate_row() { # KIND
    local out="" t
    for t in direct switchyard portkey; do
        if [ "${AVAIL[$t]:-0}" = 1 ] && want "$t"; then out+=" $(rate_cell "$t" "$1") |"; else out+=" n/a |"; fi
    done
    echo "$out"
}
hold_cell() { # NAME
    [ "${AVAIL[$1]:-0}" = 1 ] && want "$1" || { echo "n/a"; return; }
    [ "$1" != direct ] || { echo "-"; return; }
    echo "$2"
}
hold_row() { # LABEL METRIC-FN
    local s p
    s=$(hold_cell switchyard "$($2 switchyard)")
    p=$(hold_cell portkey "$($2 portkey)")
    echo "| $1 | - | $s | $p | | | $3 |"
}
h_prog() {
    if [ "$(g "$1.hold_allopen")" = - ]; then
        echo "never all open at once (at most $(g "$1.hold_maxopen"))"
    else
        echo "$(g "$1.hold_minprog")/$STREAMS (all open at the sample $(awk -v m="$(g "$1.hold_allopen")" 'BEGIN {printf "%.0f", m / 1000}') s in)"
    fi
}
h_open() { echo "max $(g "$1.hold_maxopen") open at once; $(g "$1.hold_ok") completed, $(g "$1.hold_err") failed; $(g "$1.hold_overflows") listen-queue drops"; }
h_rss() {
    if [ "$(g "$1.hold_allopen")" = - ]; then
        echo "peak $(g "$1.hold_rss_peak") MB (before: $(g "$1.hold_idle_rss"))"
    else
        echo "$(g "$1.hold_rss_open") MB (before: $(g "$1.hold_idle_rss"), peak $(g "$1.hold_rss_peak"))"
    fi
}
h_cpu() { echo "$(g "$1.hold_cpu") %"; }
errs() { # METRIC
    local out="" t
    for t in direct switchyard portkey; do
        if [ "${AVAIL[$t]:-0}" = 1 ] && want "$t"; then out+="$t $(g "$t.$1"), "; fi
    done
    echo "${out%, }"
}

{
echo
echo "## gateway-bench: $(git -C "$SRC" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$SRC" diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)') $(date -u +%FT%TZ)"
echo
echo "$(nproc) CPUs, shared by the load generator, the gateway and the fake upstream (figures are a"
echo "floor, compare columns of one run); load average before $LOAD_BEFORE, after $LOAD_AFTER;"
echo "CPU busy before the run: ${BUSY_BEFORE}% of all CPUs; CPU taken by other processes during the"
echo "measurements: $(awk '{for (i = 1; i <= NF; i++) if ($i ~ /^cpu_other=/) {v = substr($i, 11) + 0; s += v; n++; if (v > m) m = v}}
    END {if (n) printf "mean %.0f%%, max %.0f%% of one core", s / n, m; else print "?"}' "$WORK/raw.log"); run time $((T_END - T_START)) s."
echo "Fake upstream on loopback at zero latency (non-streaming: 8 chunks, no delay). Model"
echo "vendorB-5-nano. portkey = @portkey-ai/gateway ${PORTKEY_VERSION:-not run} on Node $(node --version 2>/dev/null || echo '?')${HONO_NODE:+ (@hono/node-server $HONO_NODE)}."
[ -z "$SY_FS" ] || echo "Switchyard's database: $SY_FS."
echo "Times in ms. Rate phases are open loop: latency from the scheduled send time."
echo
echo "| metric | direct | switchyard | portkey | switchyard added | portkey added | target |"
echo "|---|---:|---:|---:|---:|---:|---|"
echo "| c=1 non-streaming p50 |$(col lat_p50 ms)$(added lat_p50) |"
echo "| c=1 non-streaming p99 |$(col lat_p99 ms)$(added lat_p99) switchyard added p99 < 1 ms: $t1 |"
echo "| $FIXED_RATE req/s p50 |$(col fix_p50 ms)$(added fix_p50) |"
echo "| $FIXED_RATE req/s p99 |$(col fix_p99 ms)$(added fix_p99) |"
t5=$(awk -v r="$(g switchyard.max_rate)" 'BEGIN {print (r ~ /^[0-9]+$/ && r >= 5000 ? "yes" : "no")}')
echo "| max req/s with p99 < $P99_LIMIT_MS ms |$(rate_row max) | | | switchyard >= 3x portkey: $t2; switchyard >= 5000: $t5 |"
echo "| max req/s kept up (p99 < $SUSTAIN_MS ms) |$(rate_row sus) | | | switchyard / portkey: $t2s |"
echo "| stream: time to first token p50 |$(col ttft_p50 ms)$(added ttft_p50) |"
echo "| stream: time to first token p99 |$(col ttft_p99 ms)$(added ttft_p99) |"
echo "| stream: gap between chunks p50 |$(col gap_p50 ms)$(added gap_p50) |"
echo "| stream: gap between chunks p99 |$(col gap_p99 ms)$(added gap_p99) |"
hold_row "$STREAMS streams: progressing (min over samples)" h_prog "switchyard all $STREAMS progressing: $t4"
hold_row "$STREAMS streams: opened / finished" h_open ""
hold_row "$STREAMS streams: gateway RSS while all open" h_rss "switchyard < 100 MB: $t3"
hold_row "$STREAMS streams: gateway CPU" h_cpu ""
if [ -n "$(g switchyard.tp_healthz)" ] && [ "$(g switchyard.tp_healthz)" != - ]; then
    h=$(g switchyard.tp_healthz)
    echo "| wrk 256 connections: GET /healthz req/s | - | $h | - | | | |"
    for e in "${BILLED_ENDPOINTS[@]}"; do
        b=$(g "switchyard.tp_$e")
        share=$(awk -v b="$b" -v h="$h" 'BEGIN {if (b ~ /^[0-9]+$/ && h > 0) printf "%.2f", b / h; else print "-"}')
        ok=$(awk -v x="$share" 'BEGIN {print (x != "-" && x >= 0.5 ? "yes" : "no")}')
        echo "| wrk 256 connections: billed $e req/s (x /healthz) | - | $b ($share) | - | | | at least half of /healthz: $ok |"
    done
fi
if [ -n "${SY_RSS_START:-}" ] && [ "$(g switchyard.rss_settled)" != - ]; then
    # The reference: the idle size after start plus what building the address engine took
    # (phase 6; nothing on a server that built it at start).
    eng=$(g switchyard.rss_engine)
    [[ "$eng" =~ ^[0-9.]+$ ]] || eng=0
    ref=$(awk -v a="$SY_RSS_START" -v b="$eng" 'BEGIN {printf "%.1f", a + b}')
    back=$(awk -v a="$(g switchyard.rss_settled)" -v i="$ref" 'BEGIN {printf "%+.0f%%", (a - i) / i * 100}')
    ok=$(awk -v a="$(g switchyard.rss_settled)" -v i="$ref" 'BEGIN {print (a <= i * 1.1 ? "yes" : "no")}')
    echo "| gateway RSS: idle after start / + the address engine / after the last phase / $SETTLE_S s later | - | $SY_RSS_START / $ref / $(g switchyard.rss_after_load) / $(g switchyard.rss_settled) MB ($back) | - | | | within 10% of idle: $ok |"
fi
echo
echo "Errors (non-2xx, resets, timeouts, short streams) per phase: c=1: $(errs lat_err); $FIXED_RATE req/s: $(errs fix_err);"
echo "streams: $(errs stream_err) (content events per stream: $(errs stream_events))."
echo "Requests the fake counted during the $FIXED_RATE req/s phase / sent (0.5 s of warm-up and one check included): $(for t in "${ORDER[@]}"; do printf '%s %s/%s, ' "$t" "$(g "$t.fix_seen")" "$(awk -v s="$(g "$t.fix_sent")" -v r="$FIXED_RATE" 'BEGIN {if (s ~ /^[0-9]+$/) print s + int(r / 2) + 1; else print "?"}')"; done | sed 's/, $//')."
bad=$(for t in "${ORDER[@]}"; do
    grep -h '^gateway_load: \(answer\|connection failed\)' "$WORK/load-$t.log" 2>/dev/null | head -n 3 |
        sed "s/^gateway_load: /- $t: /" | cut -c 1-200 || true
done)
if [ -n "$bad" ]; then
    echo
    echo "First answers other than 200, and broken connections (up to 3 per target):"
    echo
    echo "$bad"
    echo
fi
for t in switchyard portkey; do
    if want "$t" && [ "${AVAIL[$t]:-0}" != 1 ]; then echo "$t not measured: ${NOTE[$t]:-not started}"; fi
done
echo
noisy=$(awk '{o = ""; for (i = 1; i <= NF; i++) if ($i ~ /^cpu_other=/) o = substr($i, 11) + 0
    if (o > 25) {r = ""; for (i = 1; i <= NF; i++) if ($i ~ /^--rate$/) r = " " $(i + 1) " req/s"; printf "%s %s%s (%d%%), ", $1, $2, r, o}}' "$WORK/raw.log")
echo "Measurements during which other processes took over 25% of a core: ${noisy:-none}" | sed 's/, $/./'
echo
echo "Rate steps (phase 3; CPU in % of one core over the whole step; others = every other process):"
echo
echo "| target | req/s asked | req/s done | p50 | p99 | errors | connections | gateway CPU % | fake CPU % | load generator CPU % | others CPU % | p99 < $P99_LIMIT_MS ms | p99 < $SUSTAIN_MS ms |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"
printf '%s\n' "${STEPS[@]}"
echo
echo "Raw gateway_load lines: $RESULTS/raw.log; gateway logs beside it."
} | tee "$RESULTS/report.md"
