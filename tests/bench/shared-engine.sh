#!/usr/bin/env bash
# shared-engine.sh BUILD_DIR [--seconds N] [--runs N]
#
# The measurement behind the engine of the state several instances share (server/README.md,
# "Several instances"): the same two operations a billed request needs at its head, a rate-limit
# take and a credit hold (with its release), done by
#   postgresql  the core's function switchyard_admit (models/Migrations.cpp, core step 7), a
#               token alone or a hold alone, on a throwaway PostgreSQL
#               (tests/pg/ensure-postgres.sh), driven by pgbench with prepared statements;
#   redis       the same token bucket and hold as Lua scripts (EVALSHA) on a throwaway
#               redis-server, driven by redis-benchmark; the balance mirrored in a key, which
#               Switchyard would also have to keep in step with the ledger.
# Each at concurrency 1 (latency of one call: p50 and p99 in microseconds) and 8 (calls a
# second), N seconds each (default 5), medians of --runs (default 3), both engines in one run.
# A hold is taken and not released (a release is one more such call on either engine). Both
# engines listen on 127.0.0.1; everything they write goes away with them.
set -euo pipefail

say() { printf '[shared-engine] %s\n' "$*" >&2; }
die() { say "ERROR: $*"; exit 1; }

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
[ $# -ge 1 ] || die "usage: shared-engine.sh BUILD_DIR [--seconds N] [--runs N]"
BUILD=$(cd "$1" && pwd) || die "no build directory $1"
shift
SECONDS_EACH=5
RUNS=3
while [ $# -gt 0 ]; do
    case "$1" in
        --seconds) SECONDS_EACH=${2:?}; shift 2 ;;
        --runs) RUNS=${2:?}; shift 2 ;;
        *) die "unknown option $1" ;;
    esac
done
SERVER=$BUILD/app/switchyard-server
[ -x "$SERVER" ] || die "no $SERVER: build the switchyard-server target first"
PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[ -x "$PGBIN/pgbench" ] || die "pgbench not found (Debian's postgresql)"
command -v redis-server >/dev/null || die "redis-server not found (Debian's redis-server)"
command -v redis-benchmark >/dev/null || die "redis-benchmark not found (Debian's redis-tools)"

WORK=$(mktemp -d /tmp/switchyard-shared-engine.XXXXXX)
REDIS_PID=""
cleanup() {
    [ -n "$REDIS_PID" ] && kill "$REDIS_PID" 2>/dev/null || true
    bash "$ROOT/tests/pg/stop-postgres.sh" "$WORK/pg" >/dev/null 2>&1 || true
    rm -rf "$WORK"
}
trap cleanup EXIT

say "starting a throwaway PostgreSQL"
URL=$(env -u SWITCHYARD_TEST_PG_URL bash "$ROOT/tests/pg/ensure-postgres.sh" "$WORK/pg" 2>"$WORK/pg.log") ||
    { cat "$WORK/pg.log" >&2; die "PostgreSQL did not start"; }
# The schema, functions included, as the server makes it.
"$SERVER" keys list --data-dir "$WORK/data" --database "$URL" >/dev/null
psql() { "$PGBIN/psql" "$URL" -XAtq "$@"; }
psql -c "UPDATE accounts SET balance = 1000000000000000 WHERE id = 1" \
     -c "INSERT INTO shared_instances VALUES ('bench', 9223372036854775807)"
# (No colon in the bucket: pgbench would take ":bench" for a variable.)
cat >"$WORK/rate.sql" <<'EOF'
SELECT allowed FROM switchyard_admit('bench', 10000, '{}', '{}', '{k1_bench}', '{2000000000}', '{1}', '{0}');
EOF
cat >"$WORK/hold.sql" <<'EOF'
SELECT admitted FROM switchyard_admit('bench', 10000, '{}', '{}', '{NULL}', '{0}', '{1}', '{1000}');
EOF

say "starting a throwaway redis-server"
RPORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
redis-server --bind 127.0.0.1 --port "$RPORT" --save '' --appendonly no --dir "$WORK" \
    >"$WORK/redis.log" 2>&1 &
REDIS_PID=$!
for _ in $(seq 50); do redis-cli -p "$RPORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
rcli() { redis-cli -p "$RPORT" "$@"; }
# The same token bucket on Redis's clock, and the same hold against a mirrored balance.
RATE_SHA=$(rcli SCRIPT LOAD "
local t = redis.call('TIME'); local now = t[1] * 1000 + t[2] / 1000
local lim = tonumber(ARGV[1]); local b = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(b[1]) or lim; local at = tonumber(b[2]) or now
tokens = math.min(lim, tokens + math.max(0, now - at) * lim / 60000)
local allowed = tokens >= 1; if allowed then tokens = tokens - 1 end
redis.call('HSET', KEYS[1], 'tokens', tokens, 'at', now); redis.call('PEXPIRE', KEYS[1], 120000)
return {allowed and 1 or 0, tostring(tokens)}")
HOLD_SHA=$(rcli SCRIPT LOAD "
local balance = tonumber(redis.call('GET', KEYS[1]) or '0')
local held = 0; local h = redis.call('HVALS', KEYS[2])
for i = 1, #h do held = held + tonumber(h[i]) end
local amount = tonumber(ARGV[2])
if balance > 0 and balance - held >= amount then
  redis.call('HINCRBY', KEYS[2], ARGV[1], amount)
  return 1 end
return 0")
rcli SET balance:1 1000000000000000 >/dev/null

pg_run() { # SCRIPT CLIENTS -> "p50 p99 tps" (microseconds, calls a second)
    local script=$1 clients=$2
    rm -f "$WORK"/pgbench_log.*
    (cd "$WORK" && "$PGBIN/pgbench" -n -M prepared -f "$script" -c "$clients" -j "$clients" -T "$SECONDS_EACH" \
        --log --log-prefix="$WORK/pgbench_log" "$URL" >"$WORK/pgbench.out" 2>&1) ||
        { cat "$WORK/pgbench.out" >&2; die "pgbench failed"; }
    local tps
    tps=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$WORK/pgbench.out" | head -n 1)
    cat "$WORK"/pgbench_log.* | awk '{print $3}' | sort -n | awk -v tps="$tps" '
        { v[NR] = $1 } END { printf "%d %d %d\n", v[int(NR*0.5)+1], v[int(NR*0.99)+1], tps }'
}
redis_run() { # SHA NKEYS ARGS... with CLIENTS set -> "p50 p99 tps"
    local out
    out=$(redis-benchmark -p "$RPORT" -c "$CLIENTS" -n "$((SECONDS_EACH * (CLIENTS == 1 ? 25000 : 60000)))" \
        EVALSHA "$@" 2>&1 | tr '\r' '\n')
    local tps p50 p99
    tps=$(printf '%s\n' "$out" | sed -n 's/^ *throughput summary: \([0-9.]*\).*/\1/p' | tail -n 1)
    read -r p50 p99 < <(printf '%s\n' "$out" | awk '/latency summary/ {getline; getline;
        printf "%d %d\n", $3 * 1000, $5 * 1000}')
    printf '%d %d %d\n' "$p50" "$p99" "${tps%.*}"
}

declare -A FIG
for run in $(seq 1 "$RUNS"); do
    say "run $run of $RUNS"
    for c in 1 8; do
        FIG[pg-rate-$c-$run]=$(pg_run "$WORK/rate.sql" "$c")
        FIG[pg-hold-$c-$run]=$(pg_run "$WORK/hold.sql" "$c")
        CLIENTS=$c
        FIG[redis-rate-$c-$run]=$(redis_run "$RATE_SHA" 1 k1:bench 2000000000)
        FIG[redis-hold-$c-$run]=$(redis_run "$HOLD_SHA" 2 balance:1 holds:1 bench 1000)
    done
done

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
field() { # KEY FIELD(1..3): the median over the runs
    local key=$1 f=$2 run
    for run in $(seq 1 "$RUNS"); do echo "${FIG[$key-$run]}" | awk -v f="$f" '{print $f}'; done | median
}
echo "| operation | engine | c=1 p50 (us) | c=1 p99 (us) | c=8 calls/s |"
echo "|---|---|---:|---:|---:|"
for op in rate hold; do
    for engine in pg redis; do
        printf '| %s | %s | %s | %s | %s |\n' \
            "$([ "$op" = rate ] && echo "rate-limit take" || echo "credit hold")" \
            "$([ "$engine" = pg ] && echo PostgreSQL || echo Redis)" \
            "$(field "$engine-$op-1" 1)" "$(field "$engine-$op-1" 2)" "$(field "$engine-$op-8" 3)"
    done
done
echo
echo "Medians of $RUNS runs of ${SECONDS_EACH} s each; pgbench and redis-benchmark on loopback."
