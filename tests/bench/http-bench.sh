#!/usr/bin/env bash
# http-bench.sh [BUILD_DIR] [--pg URL] [--duration S] [--connections C] [--threads T]
#
# Throughput and latency of the HTTP pipeline with wrk, side by side:
#   GET /healthz                  public route, no auth, no database
#   GET /api/v1/credits/balance   control token (auth cache), rate limiter, one read on a
#                                 reader thread, JSON answer
# each at C connections (default 64, T=2 wrk threads) and at concurrency 1, D seconds each
# (default 10), with --latency. After every phase the server's RSS (VmRSS) is sampled.
# Prints a markdown table and the balance/healthz ratio. With --pg URL the same phases run
# again with the server on PostgreSQL (a fresh database is created on that server when psql
# can, and dropped afterwards).
#
# Builds nothing: BUILD_DIR (default ./build) must hold app/switchyard-server. Starts a
# throwaway server on 127.0.0.1 (port picked by the server), a temporary data dir, a config
# with unlimited rate limits; stops it on exit (trap). Every step is bounded in time.
set -euo pipefail

say() { printf '[http-bench] %s\n' "$*" >&2; }
die() {
    printf '[http-bench] ERROR: %s\n' "$*" >&2
    exit 1
}

BUILD=""
PG_URL=""
DURATION=10
CONNS=64
THREADS=2
while [ $# -gt 0 ]; do
    case "$1" in
        --pg) PG_URL=${2:?--pg needs a postgresql:// URL}; shift 2 ;;
        --pg=*) PG_URL=${1#--pg=}; shift ;;
        --duration) DURATION=${2:?}; shift 2 ;;
        --connections) CONNS=${2:?}; shift 2 ;;
        --threads) THREADS=${2:?}; shift 2 ;;
        -h | --help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) die "unknown option $1 (see --help)" ;;
        *) [ -z "$BUILD" ] || die "one BUILD_DIR only"; BUILD=$1; shift ;;
    esac
done
BUILD=${BUILD:-./build}
[[ "$DURATION" =~ ^[0-9]+$ && "$DURATION" -ge 1 && "$DURATION" -le 120 ]] || die "--duration: 1..120 seconds"
[[ "$CONNS" =~ ^[0-9]+$ && "$CONNS" -ge 1 ]] || die "--connections: a positive number"
[[ "$THREADS" =~ ^[0-9]+$ && "$THREADS" -ge 1 && "$THREADS" -le "$CONNS" ]] || die "--threads: 1..connections"

SERVER=$BUILD/app/switchyard-server
[ -x "$SERVER" ] || die "$SERVER not found: build it first (cmake --build $BUILD --target switchyard-server)"
command -v wrk >/dev/null || die "wrk is not installed (apt-get install wrk)"
command -v curl >/dev/null || die "curl is not installed"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/switchyard-httpbench.XXXXXX")
SERVER_PID=""
PG_DB_CREATED=""
PG_ADMIN_URL=""

stop_server() {
    [ -n "$SERVER_PID" ] || return 0
    if kill -0 "$SERVER_PID" 2>/dev/null; then
        kill -TERM "$SERVER_PID" 2>/dev/null || true
        for _ in $(seq 1 150); do # 15 s: the drain timeout is 10 s
            kill -0 "$SERVER_PID" 2>/dev/null || break
            sleep 0.1
        done
        if kill -0 "$SERVER_PID" 2>/dev/null; then
            say "server $SERVER_PID did not stop in 15 s; killing it"
            kill -KILL "$SERVER_PID" 2>/dev/null || true
        fi
    fi
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=""
}

cleanup() {
    stop_server
    if [ -n "$PG_DB_CREATED" ]; then
        timeout 30 psql -X "$PG_ADMIN_URL" -qc "DROP DATABASE IF EXISTS $PG_DB_CREATED WITH (FORCE)" \
            >/dev/null 2>&1 </dev/null || say "could not drop database $PG_DB_CREATED"
        PG_DB_CREATED=""
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

cat >"$WORK/config.json" <<'EOF'
{"rate_limits":{"default":{"default":0,"control":0}}}
EOF

CLK_TCK=$(getconf CLK_TCK)
rss_mb() { awk '/^VmRSS:/ {printf "%.1f", $2 / 1024}' "/proc/$SERVER_PID/status" 2>/dev/null || echo "?"; }
hwm_mb() { awk '/^VmHWM:/ {printf "%.1f", $2 / 1024}' "/proc/$SERVER_PID/status" 2>/dev/null || echo "?"; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$SERVER_PID/stat" 2>/dev/null || echo 0; }

# Runs the admin CLI against the backend's database; the server's env var must not leak in.
admin() { timeout 60 env -u SWITCHYARD_DATABASE "$SERVER" "$@" "${DB_ARGS[@]}" </dev/null; }

# start_server BACKEND: sets SERVER_PID, BASE_URL, TOKEN.
start_server() {
    local backend=$1 log=$WORK/server-$1.log
    if [ "$backend" = postgres ]; then
        local url=$PG_URL
        PG_ADMIN_URL=$PG_URL
        if command -v psql >/dev/null; then
            local name="sy_httpbench_$$"
            if timeout 30 psql -X "$PG_URL" -qc "CREATE DATABASE $name" >/dev/null 2>&1 </dev/null; then
                PG_DB_CREATED=$name
                local base=${PG_URL%%\?*} query=""
                [ "$base" = "$PG_URL" ] || query="?${PG_URL#*\?}"
                url="${base%/*}/$name$query"
            else
                say "cannot create a database on the --pg server; using its database as it is"
            fi
        fi
        DB_ARGS=(--database "$url")
    else
        mkdir -p "$WORK/data"
        DB_ARGS=(--data-dir "$WORK/data")
    fi
    TOKEN=$(admin tokens create --scopes credits:read --name http-bench 2>"$WORK/token.err") ||
        { cat "$WORK/token.err" >&2; die "tokens create failed"; }
    [[ "$TOKEN" == lpc_* ]] || die "tokens create printed no lpc_ token"
    admin credits grant --amount 100 >/dev/null 2>&1 || die "credits grant failed"

    env -u SWITCHYARD_DATABASE "$SERVER" serve --listen 127.0.0.1:0 --config "$WORK/config.json" \
        "${DB_ARGS[@]}" </dev/null >"$log" 2>&1 &
    SERVER_PID=$!
    BASE_URL=""
    for _ in $(seq 1 200); do # 20 s
        BASE_URL=$(sed -n 's/.*listening on \(http:\/\/127\.0\.0\.1:[0-9]*\).*/\1/p' "$log" | head -n1)
        [ -z "$BASE_URL" ] || break
        kill -0 "$SERVER_PID" 2>/dev/null || { cat "$log" >&2; die "the server exited at start"; }
        sleep 0.1
    done
    [ -n "$BASE_URL" ] || { cat "$log" >&2; die "the server did not report its address in 20 s"; }
    local code
    code=$(curl -s -o /dev/null -m 5 -w '%{http_code}' "$BASE_URL/healthz") || true
    [ "$code" = 200 ] || die "GET /healthz answered $code"
    code=$(curl -s -o "$WORK/balance.json" -m 5 -w '%{http_code}' \
        -H "Authorization: Bearer $TOKEN" "$BASE_URL/api/v1/credits/balance") || true
    [ "$code" = 200 ] || { cat "$WORK/balance.json" >&2; die "GET /api/v1/credits/balance answered $code"; }
    say "$backend: server $SERVER_PID on $BASE_URL, RSS $(rss_mb) MB at start"
}

# Converts wrk's latency (e.g. 812.00us, 1.23ms, 2.01s) to milliseconds.
to_ms() {
    awk -v v="$1" 'BEGIN {
        n = v + 0; u = v; sub(/^[0-9.]+/, "", u)
        if (u == "us") n /= 1000; else if (u == "s") n *= 1000; else if (u == "m") n *= 60000
        printf "%.3f", n }'
}

ROWS=()    # markdown rows
RATIOS=()  # backend|conns|healthz|balance

# phase BACKEND NAME PATH CONNS THREADS [HEADER]
phase() {
    local backend=$1 name=$2 path=$3 conns=$4 threads=$5 header=${6:-}
    local out=$WORK/wrk-$backend-$name-$conns.txt
    local args=(-t"$threads" -c"$conns" -d"${DURATION}s" --timeout 5s --latency)
    [ -z "$header" ] || args+=(-H "$header")
    local t0 t1
    t0=$(cpu_ticks)
    timeout $((DURATION + 30)) wrk "${args[@]}" "$BASE_URL$path" >"$out" 2>&1 ||
        { cat "$out" >&2; die "wrk failed on $path"; }
    t1=$(cpu_ticks)
    kill -0 "$SERVER_PID" 2>/dev/null || die "the server died during $name c=$conns"
    local rps p50 p99 non2xx sockerr total cpu
    rps=$(awk '/^Requests\/sec:/ {printf "%.0f", $2}' "$out")
    p50=$(to_ms "$(awk '$1 == "50%" {print $2}' "$out")")
    p99=$(to_ms "$(awk '$1 == "99%" {print $2}' "$out")")
    non2xx=$(awk '/Non-2xx or 3xx responses:/ {print $NF}' "$out")
    non2xx=${non2xx:-0}
    sockerr=$(awk '/Socket errors:/ {s = 0; for (i = 3; i <= NF; i += 2) s += $(i + 1) + 0; print s}' "$out")
    sockerr=${sockerr:-0}
    total=$(awk '/requests in/ {print $1}' "$out")
    cpu=$(awk -v a="$t0" -v b="$t1" -v hz="$CLK_TCK" -v d="$DURATION" 'BEGIN {printf "%.0f", (b - a) / hz / d * 100}')
    [ -n "$rps" ] || { cat "$out" >&2; die "could not parse wrk's output"; }
    ROWS+=("| $backend | GET $path | $conns | $rps | $p50 | $p99 | $total | $non2xx | $sockerr | $cpu | $(rss_mb) |")
    say "$backend $path c=$conns: $rps req/s, p50 $p50 ms, p99 $p99 ms, non-2xx $non2xx, RSS $(rss_mb) MB"
    [ "$non2xx" = 0 ] || say "WARNING: $non2xx non-2xx answers on $path: the figures are not those of successful requests"
    LAST_RPS=$rps
}

run_backend() {
    local backend=$1 h b
    start_server "$backend"
    local idle
    idle=$(rss_mb)
    for c in "$CONNS" 1; do
        local t=$THREADS
        [ "$c" -ge "$t" ] || t=$c
        phase "$backend" healthz /healthz "$c" "$t"
        h=$LAST_RPS
        phase "$backend" balance /api/v1/credits/balance "$c" "$t" "Authorization: Bearer $TOKEN"
        b=$LAST_RPS
        RATIOS+=("$backend|$c|$h|$b")
    done
    PEAKS+=("| $backend | $idle | $(rss_mb) | $(hwm_mb) |")
    stop_server
    if [ -n "$PG_DB_CREATED" ]; then
        timeout 30 psql -X "$PG_ADMIN_URL" -qc "DROP DATABASE IF EXISTS $PG_DB_CREATED WITH (FORCE)" \
            >/dev/null 2>&1 </dev/null || say "could not drop database $PG_DB_CREATED"
        PG_DB_CREATED=""
    fi
}

PEAKS=()
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
run_backend sqlite
[ -z "$PG_URL" ] || run_backend postgres
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

echo
echo "## http-bench: $(git -C "$(dirname "$0")" rev-parse --short HEAD 2>/dev/null || echo '?') $(date -u +%FT%TZ)"
echo
echo "$(nproc) CPUs (wrk and the server share them); ${DURATION} s per phase; wrk -t$THREADS -c$CONNS and -t1 -c1, --latency;"
echo "load average before $LOAD_BEFORE, after $LOAD_AFTER. RSS = server VmRSS right after the phase."
echo
echo "| backend | request | connections | req/s | p50 ms | p99 ms | requests | non-2xx | socket errors | server CPU % | RSS MB |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
printf '%s\n' "${ROWS[@]}"
echo
echo "| backend | connections | healthz req/s | balance req/s | balance / healthz |"
echo "|---|---:|---:|---:|---:|"
for r in "${RATIOS[@]}"; do
    IFS='|' read -r be c h b <<<"$r"
    printf '| %s | %s | %s | %s | %s |\n' "$be" "$c" "$h" "$b" \
        "$(awk -v h="$h" -v b="$b" 'BEGIN {if (h > 0) printf "%.2f", b / h; else print "-"}')"
done
echo
echo "| backend | RSS MB at start | RSS MB at the end | peak RSS (VmHWM) MB |"
echo "|---|---:|---:|---:|"
printf '%s\n' "${PEAKS[@]}"
if [ -z "$PG_URL" ]; then
    echo
    echo "(PostgreSQL not run: pass --pg postgresql://... to add it.)"
fi
