#!/usr/bin/env bash
# build-deps.sh [--tests]: installs the Debian 12 packages Switchyard builds and runs with;
# with --tests also what the test suites, the format check and the benchmarks need (Node.js
# 20 or later and npm included). Installs only what is missing, so it is quick when everything
# is there. Needs root (or sudo) when it installs.
#
# installer/fresh-machine-check.sh proves that these lists are complete: it runs this script
# on a debootstrapped minimal Debian 12 and configures the full build there.
set -euo pipefail

tests=0
case "${1:-}" in
    "") ;;
    --tests) tests=1 ;;
    *) echo "usage: bash installer/build-deps.sh [--tests]" >&2; exit 2 ;;
esac

packages=(
    # the toolchain
    build-essential cmake ninja-build pkg-config
    # Qt 6.4: Core, Gui, Widgets, Network, Sql, Test (qt6-base-dev) and moc
    # (qt6-base-dev-tools); Charts for the usage panel. Qt6Charts' CMake config requires
    # Qt6OpenGL, which qt6-charts-dev does not pull in: libqt6opengl6-dev (and libgl-dev).
    qt6-base-dev qt6-base-dev-tools qt6-charts-dev libqt6opengl6-dev libgl-dev
    # Qt Multimedia for the speech playground's playing and recording (QAudioSink and
    # QAudioSource, which talk to PulseAudio/PipeWire directly)
    qt6-multimedia-dev
    # plugins loaded at run time: the SQL drivers (SQLite store, PostgreSQL store)
    libqt6sql6-sqlite libqt6sql6-psql qt6-qpa-plugins
    # SQLite's own API for the writer's settlements (the library QSQLITE loads)
    libsqlite3-dev
    # the programs' allocator (app/MemoryTrim.h; -DSWITCHYARD_JEMALLOC=OFF builds without)
    libjemalloc-dev
    # upstream calls: libcurl, and the CA certificates TLS checks them against
    libcurl4-openssl-dev ca-certificates curl
    # the PostgreSQL store for shared deployments (and its test rows)
    postgresql
    # the local audio engines (server/audio/engine):
    flite1-dev          # English speech synthesis (cmu_us_slt, rms, awb, kal16 voices)
    libespeak-ng-dev    # speech synthesis in the other languages (pulls espeak-ng-data)
    libpocketsphinx-dev # English speech recognition (pulls libsphinxbase-dev)
    pocketsphinx-en-us  # pocketsphinx's en-us acoustic model, language model and dictionary
    libavformat-dev     # FFmpeg: container detection and demuxing of uploaded audio
    libavcodec-dev      # FFmpeg: the audio decoders (mp3, aac, opus, vorbis, flac, ...)
    libswresample-dev   # FFmpeg: resampling to the engines' and the service's rates
    libavutil-dev       # FFmpeg: channel layouts, errors, logging
)
if [ "$tests" = 1 ]; then
    packages+=(
        git              # tests/format-check.sh lists the tracked files
        clang-format     # tests/format-check.sh (Debian 12: clang-format 14)
        libbenchmark-dev # tests/bench (Google Benchmark)
        wrk              # tests/bench/*-bench.sh load generator
        xvfb             # a real X server for the window (installer/package-check.sh)
        clang libclang-rt-14-dev # libFuzzer and sanitizers (tests/upstream/fuzz_url_guard.sh)
        ffmpeg           # tests/audio: encodes the decoder suite's fixtures
        pocketsphinx-testdata # tests/audio: recordings with transcriptions (goforward.raw)
        openssl          # tests/common/WebhookReceiver: makes the test's TLS certificate
        haproxy          # tests/server/tst_instances, tests/bench/instances-bench.sh
        redis-server     # tests/bench/shared-engine.sh (the engine measured against PostgreSQL)
        redis-tools      # redis-benchmark and redis-cli, for the same
    )
fi

node_major() { node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }

missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js and npm for the e2e suite (tests/e2e) and the coordinate oracle (tests/address/oracle),
# which skip without node. By command, not by package: a node from elsewhere (NodeSource's
# nodejs bundles npm) is as good as Debian's.
if [ "$tests" = 1 ]; then
    command -v node >/dev/null || missing+=(nodejs)
    command -v npm >/dev/null || missing+=(npm)
fi

sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)
export DEBIAN_FRONTEND=noninteractive
if [ ${#missing[@]} -gt 0 ]; then
    echo "Installing: ${missing[*]}" >&2
    "${sudo[@]}" apt-get update -q
    "${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
    # The tests and benchmarks start their own haproxy and redis-server on ports of their
    # choosing; the daemons their packages may have just started serve nothing here.
    for daemon in haproxy redis-server; do
        if [[ " ${missing[*]} " == *" $daemon "* ]] && command -v service >/dev/null; then
            "${sudo[@]}" service "$daemon" stop >/dev/null 2>&1 || true
        fi
    done
fi

# Debian 12's nodejs is Node.js 18 (18.20.4) with npm 9.2: the e2e suite needs Node.js 20 or
# later (node --test --test-concurrency; openai@6 supports Node 20 and later). Then take
# Node.js 20 from the npm registry's `node` package, which ships the prebuilt binary; npm
# installs it under /usr/local (/usr/local/bin/node comes first on PATH).
if [ "$tests" = 1 ] && [ "$(node_major)" -lt 20 ]; then
    echo "Installing Node.js 20 (npm install -g node@20): the node on PATH is $(node --version 2>&1)" >&2
    "${sudo[@]}" npm install -g --no-audit --no-fund --loglevel=error node@20
    hash -r
    if [ "$(node_major)" -lt 20 ]; then
        echo "build-deps: node on PATH ($(command -v node)) is still $(node --version 2>&1) after" \
            "installing node@20 into $(npm prefix -g)/bin: put that folder first on PATH" >&2
        exit 1
    fi
fi
