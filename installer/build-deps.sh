#!/usr/bin/env bash
# Installs the Debian 12 packages Switchyard builds, runs and tests with. Installs only what is
# missing, so it is quick when everything is there. Needs root (or sudo) when it installs.
set -euo pipefail

packages=(
    build-essential cmake ninja-build pkg-config
    qt6-base-dev qt6-base-dev-tools qt6-charts-dev libqt6opengl6-dev libgl-dev
    libqt6sql6-sqlite libqt6sql6-psql qt6-qpa-plugins
    postgresql curl libcurl4-openssl-dev
)
if [ "${1:-}" = "--tests" ]; then
    packages+=(xvfb wrk libbenchmark-dev)
fi

missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "Installing: ${missing[*]}" >&2
sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -q
"${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
