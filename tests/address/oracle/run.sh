#!/usr/bin/env bash
# Compares server/address/CoordTransform (through coord_oracle_cli) with the npm package
# coordtransform. ctest runs it as tst_coord_oracle; by hand:
#   bash tests/address/oracle/run.sh build/tests/address/oracle/coord_oracle_cli
# Exits 77 (ctest: skipped) only when node is not installed; installs coordtransform from
# package-lock.json (npm ci) when node_modules is missing or older than the lock file.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
cli=${1:?usage: run.sh PATH_TO_coord_oracle_cli}

if ! command -v node >/dev/null 2>&1; then
    echo "SKIP: node is not installed; the coordinate oracle needs Node.js"
    exit 77
fi

stamp=node_modules/.package-lock.json # written by npm after every install
if [ ! -f "$stamp" ] || [ package-lock.json -nt "$stamp" ]; then
    echo "installing coordtransform (npm ci) in $(pwd)"
    npm ci --no-audit --no-fund --loglevel=error
fi

exec node compare.mjs "$cli"
