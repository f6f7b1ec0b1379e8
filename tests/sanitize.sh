#!/usr/bin/env bash
# tests/sanitize.sh [build|run]: builds the money, storage, pipeline and HTTP suites with GCC's
# AddressSanitizer (leaks included) and UndefinedBehaviorSanitizer in a build directory of their
# own, and runs them (the storage and pipeline suites on SQLite and on PostgreSQL). Any report
# stops the suite that hit it, which then fails. `build` only builds, `run` only runs what a
# `build` made (CI builds in the background and runs once its own tests are done); no argument
# does both. Qt and the other system libraries are not instrumented: a bad access inside them is
# seen only where our code made it.
#
# Env: SWITCHYARD_SANITIZE_BUILD_DIR (default build-sanitize), SWITCHYARD_SANITIZE_JOBS
# (compile and ctest jobs; default: the number of CPUs), SWITCHYARD_SANITIZE_SUITES (a space-
# separated list replacing the default one below), SWITCHYARD_SANITIZE_CXXFLAGS (optimization
# and debug flags; default -O0 -g1), SWITCHYARD_TEST_PG_URL (a PostgreSQL server to use; else
# one is started for the run and removed after it).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

step=${1:-all}
case "$step" in
    build | run | all) ;;
    *) echo "usage: bash tests/sanitize.sh [build|run]" >&2; exit 2 ;;
esac
build=${SWITCHYARD_SANITIZE_BUILD_DIR:-build-sanitize}
jobs=${SWITCHYARD_SANITIZE_JOBS:-$(nproc)}
# What fits CI's time (README, "Checks"): money and storage, the HTTP edge and the pipeline, the
# outbound HTTP/1.1 client and URL guard, the text gateway's relays (against the fake upstream,
# built with the sanitizers too), and the programs' start, admin commands and shutdown.
default_suites="tst_money tst_store tst_ledger tst_compact_json tst_router tst_http_head
    tst_multipart tst_job_queue tst_epoll_dispatcher tst_credit_gate tst_pipeline tst_http tst_http_reader
    tst_metrics_access tst_http1_response tst_upstream_client tst_url_guard tst_gateway tst_llm
    tst_file_modes"
read -r -d '' -a suites <<<"${SWITCHYARD_SANITIZE_SUITES:-$default_suites}" || true

if [ "$step" != run ]; then
    start=$SECONDS
    # Debug keeps Q_ASSERT on. -O0: the build is most of this step's time, and compiles in 60%
    # of -O1's; the suites run a little slower. -g1 gives the reports' stacks their lines. No
    # -Werror: the main build holds the warnings, and GCC warns differently with sanitizers.
    flags=${SWITCHYARD_SANITIZE_CXXFLAGS:--O0 -g1}
    cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="$flags" \
        -DSWITCHYARD_SANITIZE=address,undefined -DSWITCHYARD_JEMALLOC=OFF \
        -DSWITCHYARD_BUILD_GUI=OFF -DSWITCHYARD_WERROR=OFF -DSWITCHYARD_REQUIRE_ALL=OFF >/dev/null
    cmake --build "$build" -j "$jobs" --target "${suites[@]}"
    echo "sanitize: built ${#suites[@]} suites in $((SECONDS - start)) s"
fi
[ "$step" != build ] || exit 0

start=$SECONDS
pgdir=$(mktemp -d)
# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() { bash tests/pg/stop-postgres.sh "$pgdir" --remove >/dev/null 2>&1 || true; }
trap cleanup EXIT
SWITCHYARD_TEST_PG_URL=$(bash tests/pg/ensure-postgres.sh "$pgdir")
export SWITCHYARD_TEST_PG_URL
export SWITCHYARD_REQUIRE_PG=1

# Stop at the first report, with its stack; leaks are reported when a suite exits.
export ASAN_OPTIONS=halt_on_error=1:detect_leaks=1:check_initialization_order=1:strict_init_order=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
regex="^($(IFS='|'; echo "${suites[*]}"))\$"
rc=0
ctest --test-dir "$build" -R "$regex" --output-on-failure -j "$jobs" || rc=$?
echo "sanitize: ran ${#suites[@]} suites in $((SECONDS - start)) s"
exit "$rc"
