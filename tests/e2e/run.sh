#!/usr/bin/env bash
# Runs the end-to-end tests (tests/e2e/*.test.mjs) with Node's built-in test runner.
# ctest calls this with SWITCHYARD_SERVER and FAKE_UPSTREAM set (CMakeLists.txt); by hand:
#   SWITCHYARD_SERVER=build/app/switchyard-server \
#   FAKE_UPSTREAM=build/tests/fake_upstream/fake_upstream bash tests/e2e/run.sh [FILE...]
# Exits 77 (ctest: skipped) when node is not installed; installs the SDKs from
# package-lock.json (npm ci) when node_modules is missing or older than the lock file.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

if ! command -v node >/dev/null 2>&1; then
    echo "SKIP: node is not installed; the end-to-end SDK tests need Node.js 20 or later"
    exit 77
fi
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 20 ]; then
    echo "node $(node --version) is too old: the end-to-end tests need Node.js 20 or later" >&2
    exit 1
fi

stamp=node_modules/.package-lock.json # written by npm after every install
if [ ! -f "$stamp" ] || [ package-lock.json -nt "$stamp" ]; then
    echo "installing the client SDKs (npm ci) in $(pwd)"
    npm ci --no-audit --no-fund --loglevel=error
fi

: "${SWITCHYARD_SERVER:?set SWITCHYARD_SERVER to the switchyard-server binary}"
: "${FAKE_UPSTREAM:?set FAKE_UPSTREAM to the fake_upstream binary}"
export SWITCHYARD_SERVER FAKE_UPSTREAM
if [ -n "${E2E_LOG_DIR:-}" ]; then # server and fake logs of the last run only
    rm -rf "$E2E_LOG_DIR"
    mkdir -p "$E2E_LOG_DIR"
fi

if [ $# -gt 0 ]; then
    files=("$@")
else
    files=(*.test.mjs)
fi
# Each file starts its own fake upstream and server; two files at a time on two cores.
exec node --test --test-concurrency="${E2E_CONCURRENCY:-2}" --test-reporter=spec "${files[@]}"
