#!/usr/bin/env bash
# Builds Switchyard and runs it: the window where a display exists, the headless server
# otherwise. Extra arguments go to the program (e.g. --listen 127.0.0.1:9090 --data-dir DIR).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash installer/build-deps.sh
build=${SWITCHYARD_BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j "$(nproc)" --target switchyard switchyard-server

if [ -n "${DISPLAY:-}" ] || [ -n "${WAYLAND_DISPLAY:-}" ]; then
    echo "Opening the Switchyard window; the API listens on http://127.0.0.1:8080 (see the status bar)." >&2
    exec "$build/app/switchyard" "$@"
fi
exec "$build/app/switchyard-server" serve "$@"
