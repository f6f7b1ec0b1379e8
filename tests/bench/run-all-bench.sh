#!/usr/bin/env bash
# run-all-bench.sh [BUILD_DIR] [--no-pg] [--pg-fast] [--seconds S] [--duration S]
#
# Builds bench_charges and switchyard-server in BUILD_DIR (default ./build; configured
# headless if it is not configured yet), starts a throwaway PostgreSQL with
# tests/pg/ensure-postgres.sh, runs bench_charges (SQLite and PostgreSQL rows) and
# http-bench.sh (SQLite and PostgreSQL), prints every result table, stops PostgreSQL.
#
#   --no-pg       SQLite only
#   --pg-fast     keep the test cluster's settings (fsync=off, synchronous_commit=off) for
#                 the charge rows; by default this script switches its own throwaway cluster
#                 to durable commits (fsync=on, synchronous_commit=on, full_page_writes=on)
#                 so that PostgreSQL pays for a commit as a production server does, then
#                 adds one short fsync=off pass for comparison
#   --seconds S   measured seconds per bench_charges row (default 2)
#   --duration S  seconds per wrk phase (default 10)
#
# Without tests/pg/ensure-postgres.sh, set SWITCHYARD_BENCH_PG_URL to a server of your own.
# Logs and raw outputs stay in BUILD_DIR/bench-results/.
set -euo pipefail

say() { printf '[run-all-bench] %s\n' "$*" >&2; }
die() {
    printf '[run-all-bench] ERROR: %s\n' "$*" >&2
    exit 1
}

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
BUILD=""
USE_PG=1
PG_FAST=0
SECONDS_PER_ROW=${SWITCHYARD_BENCH_SECONDS:-2}
DURATION=10
while [ $# -gt 0 ]; do
    case "$1" in
        --no-pg) USE_PG=0; shift ;;
        --pg-fast) PG_FAST=1; shift ;;
        --seconds) SECONDS_PER_ROW=${2:?}; shift 2 ;;
        --duration) DURATION=${2:?}; shift 2 ;;
        -h | --help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) die "unknown option $1 (see --help)" ;;
        *) [ -z "$BUILD" ] || die "one BUILD_DIR only"; BUILD=$1; shift ;;
    esac
done
BUILD=${BUILD:-./build}
mkdir -p "$BUILD"
BUILD=$(cd "$BUILD" && pwd)
RESULTS=$BUILD/bench-results
rm -rf "$RESULTS"
mkdir -p "$RESULTS"

# --- 1. build ---------------------------------------------------------------------------

GEN=()
command -v ninja >/dev/null && GEN=(-G Ninja)
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
    say "configuring $BUILD (headless, no tests)"
    cmake "${GEN[@]}" -DSWITCHYARD_BUILD_GUI=OFF -DSWITCHYARD_BUILD_TESTS=OFF -S "$SRC" -B "$BUILD" \
        >"$RESULTS/configure.log" 2>&1 || { tail -n 30 "$RESULTS/configure.log" >&2; die "configure failed"; }
fi
say "building switchyard-server"
timeout 3600 cmake --build "$BUILD" --target switchyard-server >"$RESULTS/build.log" 2>&1 ||
    { tail -n 30 "$RESULTS/build.log" >&2; die "building switchyard-server failed"; }

# bench_charges is a target of the main build when it has the tests and Google Benchmark
# (tests/CMakeLists.txt: add_subdirectory(bench)); otherwise build tests/bench standalone.
if cmake --build "$BUILD" --target help 2>/dev/null | grep -q '\bbench_charges\b'; then
    say "building bench_charges in $BUILD"
    timeout 3600 cmake --build "$BUILD" --target bench_charges >>"$RESULTS/build.log" 2>&1 ||
        { tail -n 30 "$RESULTS/build.log" >&2; die "building bench_charges failed"; }
    BENCH=$(find "$BUILD" -path "$BUILD/bench-standalone" -prune -o -name bench_charges -type f -executable -print | head -n1)
else
    say "bench_charges is not a target of $BUILD (tests off, or tests/CMakeLists.txt lacks add_subdirectory(bench)): building tests/bench standalone in $BUILD/bench-standalone"
    BT=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$BUILD/CMakeCache.txt")
    cmake "${GEN[@]}" -DCMAKE_BUILD_TYPE="${BT:-RelWithDebInfo}" -S "$HERE" -B "$BUILD/bench-standalone" \
        >>"$RESULTS/build.log" 2>&1 || { tail -n 30 "$RESULTS/build.log" >&2; die "configuring tests/bench failed"; }
    timeout 3600 cmake --build "$BUILD/bench-standalone" --target bench_charges >>"$RESULTS/build.log" 2>&1 ||
        { tail -n 30 "$RESULTS/build.log" >&2; die "building bench_charges failed"; }
    BENCH=$BUILD/bench-standalone/bench_charges
fi
[ -x "${BENCH:-}" ] || die "bench_charges was built but not found"

# --- 2. PostgreSQL ------------------------------------------------------------------------

PG_URL=""
PG_DIR=""
OWN_CLUSTER=0
stop_pg() {
    if [ -n "$PG_DIR" ]; then
        timeout 120 bash "$SRC/tests/pg/stop-postgres.sh" "$PG_DIR" --remove >/dev/null 2>&1 ||
            say "could not stop PostgreSQL in $PG_DIR"
        PG_DIR=""
    fi
}
trap stop_pg EXIT
trap 'exit 130' INT TERM

psql_bin() {
    local d
    command -v psql 2>/dev/null && return 0
    for d in /usr/lib/postgresql/*/bin; do [ -x "$d/psql" ] && { echo "$d/psql"; return 0; }; done
    return 1
}

if [ "$USE_PG" = 1 ]; then
    if [ -f "$SRC/tests/pg/ensure-postgres.sh" ]; then
        PG_DIR=$(mktemp -d "${TMPDIR:-/tmp}/switchyard-bench-pg.XXXXXX")
        say "starting a throwaway PostgreSQL (tests/pg/ensure-postgres.sh $PG_DIR)"
        if PG_URL=$(timeout 900 bash "$SRC/tests/pg/ensure-postgres.sh" "$PG_DIR" 2>"$RESULTS/postgres.log"); then
            # ensure-postgres.sh writes DIR/port only for a cluster it runs itself (not for
            # SWITCHYARD_TEST_PG_URL): only that one may have its settings changed.
            [ -f "$PG_DIR/port" ] && OWN_CLUSTER=1
        else
            tail -n 20 "$RESULTS/postgres.log" >&2
            say "PostgreSQL did not start: PostgreSQL rows are skipped"
            PG_URL=""
        fi
    elif [ -n "${SWITCHYARD_BENCH_PG_URL:-}" ]; then
        say "tests/pg/ensure-postgres.sh is missing: using SWITCHYARD_BENCH_PG_URL"
        PG_URL=$SWITCHYARD_BENCH_PG_URL
    else
        say "tests/pg/ensure-postgres.sh is missing and SWITCHYARD_BENCH_PG_URL is not set: PostgreSQL rows are skipped"
    fi
fi

PSQL=$(psql_bin || true)
pg_settings() {
    [ -n "$PSQL" ] || { echo "?"; return; }
    timeout 30 "$PSQL" -X "$PG_URL" -Atc "select string_agg(name || '=' || setting, ', ' order by name) from pg_settings where name in ('fsync', 'synchronous_commit', 'full_page_writes')" </dev/null 2>/dev/null || echo "?"
}
pg_durable() { # on|off: only on our own throwaway cluster
    [ "$OWN_CLUSTER" = 1 ] && [ -n "$PSQL" ] || return 1
    timeout 30 "$PSQL" -X "$PG_URL" -Atq >/dev/null 2>&1 <<EOF || return 1
ALTER SYSTEM SET fsync = $1;
ALTER SYSTEM SET synchronous_commit = $1;
ALTER SYSTEM SET full_page_writes = $1;
SELECT pg_reload_conf();
EOF
    sleep 1 # the reload is asynchronous
}

# --- 3. bench_charges ---------------------------------------------------------------------

export SWITCHYARD_BENCH_SECONDS=$SECONDS_PER_ROW
PG_MODE="not run"
if [ -n "$PG_URL" ]; then
    if [ "$PG_FAST" = 0 ] && pg_durable on; then
        PG_MODE="durable"
    else
        PG_MODE="as found"
        [ "$PG_FAST" = 1 ] || say "cannot change the server's settings (not our cluster, or no psql): PostgreSQL runs as configured"
    fi
    PG_MODE="$PG_MODE ($(pg_settings))"
fi
say "bench_charges: SQLite and PostgreSQL [$PG_MODE], $SECONDS_PER_ROW s per row"
SWITCHYARD_BENCH_PG_URL=$PG_URL timeout 900 "$BENCH" 2>&1 | tee "$RESULTS/bench_charges.txt"
[ "${PIPESTATUS[0]}" = 0 ] || die "bench_charges failed (see above)"

FAST_DONE=0
if [ -n "$PG_URL" ] && [ "$PG_MODE" != "${PG_MODE#durable}" ] && pg_durable off; then
    say "bench_charges: PostgreSQL again with fsync=off (the test cluster's settings), group rows only"
    SWITCHYARD_BENCH_PG_URL=$PG_URL timeout 900 "$BENCH" --benchmark_filter=postgres --no-direct --prefill=0 \
        2>&1 | tee "$RESULTS/bench_charges_pg_fast.txt"
    [ "${PIPESTATUS[0]}" = 0 ] || die "bench_charges (fsync=off) failed (see above)"
    FAST_DONE=1
    pg_durable on || true
fi

# --- 4. http-bench ------------------------------------------------------------------------

HTTP_ARGS=("$BUILD" --duration "$DURATION")
[ -z "$PG_URL" ] || HTTP_ARGS+=(--pg "$PG_URL")
say "http-bench.sh ${HTTP_ARGS[*]}"
timeout 1200 bash "$HERE/http-bench.sh" "${HTTP_ARGS[@]}" 2>&1 | tee "$RESULTS/http-bench.txt"
[ "${PIPESTATUS[0]}" = 0 ] || die "http-bench.sh failed (see above)"

stop_pg

# --- 5. everything together -----------------------------------------------------------------

echo
echo "# Switchyard benchmarks ($(git -C "$SRC" rev-parse --short HEAD 2>/dev/null || echo '?'), $(date -u +%FT%TZ))"
echo
echo "PostgreSQL for the charge rows: $PG_MODE"
sed -n '/^## bench_charges summary/,$p' "$RESULTS/bench_charges.txt"
if [ "$FAST_DONE" = 1 ]; then
    echo
    echo "### PostgreSQL with fsync=off, synchronous_commit=off (group commit rows only)"
    sed -n '/^| backend/,/^$/p' "$RESULTS/bench_charges_pg_fast.txt"
fi
echo
sed -n '/^## http-bench/,$p' "$RESULTS/http-bench.txt"
echo
echo "Raw outputs: $RESULTS"
