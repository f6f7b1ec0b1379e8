#!/usr/bin/env bash
# The social-data pass-through beside the text gateway, in one run, against the fake upstream
# (tests/fake_upstream, serving the shared TikHub catalog), all on loopback:
#
#   tests/bench/social-bench.sh BUILD_DIR [--runs 3] [--requests 2000] [--rate 500]
#                               [--duration 5] [--big-clients 100] [--big-bytes 20000000]
#                               [--slow-rate 4M] [--no-build] [--keep]
#
# Phases, each run --runs times (the tables give the median and the spread, min to max):
#   1. concurrency 1 (closed loop, --requests after 200 warm-up): p50 and p99 of
#      GET /api/v1/douyin/app/v3/fetch_one_video straight to the fake, the same action through
#      Switchyard (GET /v1/social-media/data/..., billed 0.01 per answer), a non-streaming
#      chat completion straight to the fake and through Switchyard;
#   2. the same four at a fixed open-loop rate (--rate req/s for --duration s; latency from the
#      scheduled send time);
#   3. memory: --big-clients concurrent GETs through Switchyard of an answer of --big-bytes
#      (x-fake-bytes), read as fast as curl can and read at --slow-rate per client; the
#      server's RSS sampled every 100 ms (peak, and the growth over its idle size), every
#      answer checked for status 200 and its exact size.
# The load generator is tests/bench/gateway/gateway_load.cpp (GET with --get). Needs curl.
# Raw outputs stay in BUILD_DIR/bench-results/social-*.
set -euo pipefail

say() { printf '%s\n' "social-bench: $*" >&2; }
die() { say "$*"; exit 1; }

[ $# -ge 1 ] || die "usage: $0 BUILD_DIR [options] (see the top of the script)"
BUILD=$(cd "$1" && pwd) || die "no build directory $1"
shift
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
RUNS=3 REQUESTS=2000 RATE=500 DURATION=5 BIG_CLIENTS=100 BIG_BYTES=20000000 SLOW_RATE=4M
BUILD_IT=1 KEEP=0
while [ $# -gt 0 ]; do
    case "$1" in
        --runs) RUNS=${2:?}; shift 2 ;;
        --requests) REQUESTS=${2:?}; shift 2 ;;
        --rate) RATE=${2:?}; shift 2 ;;
        --duration) DURATION=${2:?}; shift 2 ;;
        --big-clients) BIG_CLIENTS=${2:?}; shift 2 ;;
        --big-bytes) BIG_BYTES=${2:?}; shift 2 ;;
        --slow-rate) SLOW_RATE=${2:?}; shift 2 ;;
        --no-build) BUILD_IT=0; shift ;;
        --keep) KEEP=1; shift ;;
        *) die "unknown option $1" ;;
    esac
done
for v in RUNS REQUESTS RATE DURATION BIG_CLIENTS BIG_BYTES; do
    [[ "${!v}" =~ ^[0-9]+$ && "${!v}" -ge 1 ]] || die "--${v,,}: a positive integer"
done
command -v curl >/dev/null || die "curl is not installed"
CATALOG=$ROOT/../shared/data/social/openapi-upstream.json
[ -f "$CATALOG" ] || die "the shared catalog $CATALOG is missing"
RESULTS=$BUILD/bench-results
mkdir -p "$RESULTS"

# --- build --------------------------------------------------------------------------------------

if [ "$BUILD_IT" = 1 ]; then
    say "building switchyard-server, fake_upstream and gateway_load in $BUILD"
    cmake --build "$BUILD" --target switchyard-server fake_upstream gateway_load \
        >"$RESULTS/social-build.log" 2>&1 || { tail -n 30 "$RESULTS/social-build.log" >&2; die "build failed"; }
fi
SERVER=$BUILD/app/switchyard-server
FAKE=$BUILD/tests/fake_upstream/fake_upstream
LOAD=$BUILD/tests/bench/gateway_load
for f in "$SERVER" "$FAKE" "$LOAD"; do [ -x "$f" ] || die "$f is missing (build it first)"; done

# --- processes ------------------------------------------------------------------------------------

WORK=$(mktemp -d "${TMPDIR:-/tmp}/switchyard-socialbench.XXXXXX")
FAKE_PID="" SY_PID=""
ulimit -n 20000 2>/dev/null || true
stop_pid() {
    [ -n "$1" ] || return 0
    kill -TERM "$1" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
}
cleanup() {
    stop_pid "$SY_PID"
    stop_pid "$FAKE_PID"
    exec 7>&- 2>/dev/null || true
    cp "$WORK"/*.log "$RESULTS/" 2>/dev/null || true
    if [ "$KEEP" = 1 ]; then say "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

. "$ROOT/tests/bench/wait-listen.sh"   # wait_listen LOG PID NAME
. "$ROOT/tests/bench/fake-upstream.sh" # start_fake, fake_providers

start_fake "$WORK" "$WORK/social-fake.log" "$FAKE" --social-openapi "$CATALOG"
say "fake_upstream $FAKE_PID on $FAKE_URL"

SY_DATA=$WORK/data
mkdir -p "$SY_DATA"
admin() { timeout 60 env -u SWITCHYARD_DATABASE "$SERVER" "$@" --data-dir "$SY_DATA" </dev/null; }
SY_KEY=$(admin keys create --name bench 2>"$WORK/keys.err") || { cat "$WORK/keys.err" >&2; die "keys create failed"; }
TOKEN=$(admin tokens create --scopes social:read,credits:read 2>>"$WORK/keys.err") || die "tokens create failed"
admin credits grant --amount 1000000 >/dev/null 2>&1 || die "credits grant failed"
cat >"$WORK/switchyard.json" <<EOF
{$(fake_providers "$FAKE_URL"),
 "social":{"providers":{"tikhub":{"base_url":"$FAKE_URL","keys":["th-bench"]}},
           "catalog":{"refresh_hours":0}},
 "rate_limits":{"default":{"default":0,"chat":0,"social":0}}}
EOF
env -u SWITCHYARD_DATABASE "$SERVER" serve --listen 127.0.0.1:0 --data-dir "$SY_DATA" \
    --config "$WORK/switchyard.json" </dev/null >"$WORK/social-switchyard.log" 2>&1 &
SY_PID=$!
SY_URL=$(wait_listen "$WORK/social-switchyard.log" "$SY_PID" switchyard-server)
say "switchyard-server $SY_PID on $SY_URL"
for _ in $(seq 1 200); do
    curl -s -H "Authorization: Bearer $TOKEN" "$SY_URL/api/v1/social/catalog" | grep -q '"source":"upstream"' && break
    sleep 0.1
done
curl -s -H "Authorization: Bearer $TOKEN" "$SY_URL/api/v1/social/catalog" | grep -q '"source":"upstream"' ||
    die "the catalog was not fetched from the fake"

ACTION=douyin/app/v3/fetch_one_video?aweme_id=7448118827402972455
CHAT='{"model":"vendorB-5-nano","messages":[{"role":"user","content":"hello"}]}'
printf '%s' "$CHAT" >"$WORK/chat.json"
declare -A URL HDR BODY
URL[social-direct]="$FAKE_URL/api/v1/$ACTION"
HDR[social-direct]="Authorization: Bearer th-bench"
URL[social-switchyard]="$SY_URL/v1/social-media/data/$ACTION"
HDR[social-switchyard]="Authorization: Bearer $SY_KEY"
URL[chat-direct]="$FAKE_URL/v1/chat/completions"
HDR[chat-direct]="Authorization: Bearer k1"
BODY[chat-direct]=$WORK/chat.json
URL[chat-switchyard]="$SY_URL/v1/chat/completions"
HDR[chat-switchyard]="Authorization: Bearer $SY_KEY"
BODY[chat-switchyard]=$WORK/chat.json
TARGETS=(social-direct social-switchyard chat-direct chat-switchyard)
# load MODE TARGET ARGS...: gateway_load's key=value line
load() {
    local mode=$1 t=$2 how=(--get)
    shift 2
    [ -z "${BODY[$t]:-}" ] || how=(--body-file "${BODY[$t]}")
    timeout 300 "$LOAD" "$mode" "${URL[$t]}" "${how[@]}" -H "${HDR[$t]}" "$@" 2>>"$WORK/load.log" ||
        echo "mode=$mode errors=1 non200=0 failed=1"
}
for t in "${TARGETS[@]}"; do # each must answer 200
    out=$(load latency "$t" --requests 5 --warmup 1)
    [[ " $out " == *" non200=0 "* && " $out " == *" errors=0 "* ]] || die "$t does not answer 200: $out"
done
balance_units() {
    curl -s -H "Authorization: Bearer $TOKEN" "$SY_URL/api/v1/credits/balance" |
        sed -n 's/.*"balance_units":"\{0,1\}\([0-9-]*\).*/\1/p'
}

kv() { sed -n "s/.* $2=\\([^ ]*\\).*/\\1/p" <<<" $1"; }
rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
declare -A VAL # "phase target run key" -> value

# --- 1 and 2: latency --------------------------------------------------------------------------------

for run in $(seq 1 "$RUNS"); do
    for t in "${TARGETS[@]}"; do
        out=$(load latency "$t" --requests "$REQUESTS" --warmup 200)
        echo "run $run c1 $t :: $out" >>"$WORK/social-raw.log"
        VAL["c1 $t $run p50"]=$(kv "$out" p50_us)
        VAL["c1 $t $run p99"]=$(kv "$out" p99_us)
        VAL["c1 $t $run err"]=$(($(kv "$out" errors) + $(kv "$out" non200)))
        out=$(load rate "$t" --rate "$RATE" --duration "$DURATION" --warmup-s 0.5)
        echo "run $run rate $t :: $out" >>"$WORK/social-raw.log"
        VAL["rate $t $run p50"]=$(kv "$out" p50_us)
        VAL["rate $t $run p99"]=$(kv "$out" p99_us)
        VAL["rate $t $run err"]=$(($(kv "$out" errors) + $(kv "$out" non200)))
    done
    say "run $run of $RUNS: latency phases done"
done

# --- 3: memory ------------------------------------------------------------------------------------------

# big RUN MODE: BIG_CLIENTS concurrent answers of BIG_BYTES; peak RSS, and its growth over the
# RSS before the first memory phase (BASE_KB: memory the allocator keeps after a phase shows in
# the next phase's idle figure, not as growth again)
big() {
    local run=$1 mode=$2 limit=() idle peak=0 bad=0 pids=()
    [ "$mode" = slow ] && limit=(--limit-rate "$SLOW_RATE")
    sleep 1
    idle=$(rss_kb "$SY_PID")
    for i in $(seq 1 "$BIG_CLIENTS"); do
        curl -s -o /dev/null -w '%{http_code} %{size_download}\n' "${limit[@]}" \
            -H "Authorization: Bearer $SY_KEY" \
            "$SY_URL/v1/social-media/data/$ACTION&x-fake-bytes=$BIG_BYTES&n=$run$i$mode" \
            >"$WORK/big-$i.out" 2>/dev/null &
        pids+=($!)
    done
    local start=$SECONDS
    while :; do
        local r
        r=$(rss_kb "$SY_PID")
        [ "$r" -le "$peak" ] || peak=$r
        local alive=0
        for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1 && break; done
        [ "$alive" = 1 ] || break
        [ $((SECONDS - start)) -lt 600 ] || { say "memory phase took over 10 minutes"; break; }
        sleep 0.1
    done
    wait "${pids[@]}" 2>/dev/null || true
    for i in $(seq 1 "$BIG_CLIENTS"); do
        grep -qx "200 $BIG_BYTES" "$WORK/big-$i.out" || bad=$((bad + 1))
    done
    VAL["big $mode $run idle"]=$(awk -v k="$idle" 'BEGIN {printf "%.1f", k / 1024}')
    VAL["big $mode $run peak"]=$(awk -v k="$peak" 'BEGIN {printf "%.1f", k / 1024}')
    VAL["big $mode $run growth"]=$(awk -v k="$peak" -v i="$BASE_KB" 'BEGIN {printf "%.1f", (k - i) / 1024}')
    VAL["big $mode $run secs"]=$((SECONDS - start))
    VAL["big $mode $run bad"]=$bad
    echo "run $run big $mode :: idle_kb=$idle peak_kb=$peak bad=$bad secs=$((SECONDS - start))" >>"$WORK/social-raw.log"
}
before_big=$(balance_units)
sleep 1
BASE_KB=$(rss_kb "$SY_PID")
for run in $(seq 1 "$RUNS"); do
    big "$run" fast
    big "$run" slow
    say "run $run of $RUNS: memory phases done"
done
after_big=$(balance_units)
BILLED=$(((before_big - after_big) / 10000000))

# --- report ------------------------------------------------------------------------------------------------

# med PHASE TARGET KEY [scale]: "median (min-max)" over the runs
stat() {
    local vals=()
    for run in $(seq 1 "$RUNS"); do vals+=("${VAL["$1 $2 $run $3"]}"); done
    printf '%s\n' "${vals[@]}" | sort -g | awk -v s="${4:-0.001}" -v d="${5:-3}" '
        {v[NR] = $1 * s} END {
            m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
            f = "%." d "f"
            printf(f " (" f "-" f ")", m, v[1], v[NR])}'
}
med() { stat "$@" | cut -d' ' -f1; }
added() { awk -v a="$(med "$1" "$2-switchyard" "$3")" -v b="$(med "$1" "$2-direct" "$3")" 'BEGIN {printf "%+.3f", a - b}'; }
errs() {
    local e=0
    for run in $(seq 1 "$RUNS"); do for t in "${TARGETS[@]}"; do
        e=$((e + ${VAL["$1 $t $run err"]}))
    done; done
    echo "$e"
}

echo
echo "## Social-data pass-through beside the text gateway"
echo
echo "$(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg); $RUNS runs, median (min-max); times in ms."
echo "Concurrency 1: $REQUESTS requests per run; open loop: $RATE req/s for $DURATION s."
echo
echo "| measure | social direct | social via Switchyard | social added | chat direct | chat via Switchyard | chat added |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for phase in c1 rate; do
    label="concurrency 1"
    [ "$phase" = rate ] && label="$RATE req/s"
    for q in p50 p99; do
        echo "| $label, $q | $(stat $phase social-direct $q) | $(stat $phase social-switchyard $q) | $(added $phase social $q) | $(stat $phase chat-direct $q) | $(stat $phase chat-switchyard $q) | $(added $phase chat $q) |"
    done
done
echo
echo "Errors or non-200 answers over all latency phases: concurrency 1: $(errs c1), open loop: $(errs rate)."
echo
echo "## Memory relaying $BIG_CLIENTS concurrent answers of $BIG_BYTES bytes"
echo
echo "Server RSS before the first memory phase: $(awk -v k="$BASE_KB" 'BEGIN {printf "%.1f", k / 1024}') MB (growth is over it)."
echo
echo "| readers | server RSS before the phase (MB) | peak (MB) | growth (MB) | seconds | answers not 200 or not whole |"
echo "|---|---:|---:|---:|---:|---:|"
for mode in fast slow; do
    label="as fast as curl reads"
    [ "$mode" = slow ] && label="each at $SLOW_RATE/s"
    echo "| $label | $(stat big "$mode" idle 1 1) | $(stat big "$mode" peak 1 1) | $(stat big "$mode" growth 1 1) | $(stat big "$mode" secs 1 0) | $(stat big "$mode" bad 1 0) |"
done
echo
echo "Billed during the memory phases: $BILLED answers of $((RUNS * BIG_CLIENTS * 2)) (0.01 credits each)."
echo "Raw lines: $RESULTS/social-raw.log"
