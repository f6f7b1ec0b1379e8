#!/usr/bin/env bash
# Builds Switchyard and runs every test suite (storage and pipeline suites on SQLite and on a
# throwaway PostgreSQL server this script starts). Works on a fresh Debian 12 machine.
# Env: SWITCHYARD_BUILD_DIR (default build), SWITCHYARD_CMAKE_ARGS (extra cmake arguments).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash installer/build-deps.sh --tests

build=${SWITCHYARD_BUILD_DIR:-build}
# Extra cmake arguments, split on spaces: CI passes -DSWITCHYARD_WERROR=ON
# -DSWITCHYARD_REQUIRE_ALL=ON (.ci/run). Options stay in the build's cache, like any -D.
read -r -a extra <<<"${SWITCHYARD_CMAKE_ARGS:-}"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${extra[@]}" >/dev/null
cmake --build "$build" -j "$(nproc)"

pgdir=$(mktemp -d)
cleanup() { bash tests/pg/stop-postgres.sh "$pgdir" --remove >/dev/null 2>&1 || true; }
trap cleanup EXIT
SWITCHYARD_TEST_PG_URL=$(bash tests/pg/ensure-postgres.sh "$pgdir")
export SWITCHYARD_TEST_PG_URL
export SWITCHYARD_REQUIRE_PG=1 # a PostgreSQL row that cannot run is a failure here

ctest --test-dir "$build" --output-on-failure -j "$(nproc)"
