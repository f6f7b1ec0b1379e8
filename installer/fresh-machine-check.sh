#!/usr/bin/env bash
# fresh-machine-check.sh: proves that installer/build-deps.sh names every Debian package the
# build and the tests need. A package installed by hand on a developer's machine or on CI's
# hides a gap in the lists; a clean system shows it. So this:
#   1. debootstraps a minimal Debian 12 (bookworm, --variant=minbase) into a new temporary
#      folder, from the Debian mirror the host's apt uses;
#   2. copies the checkout's tracked files in (as they are in the work tree), and ../shared
#      beside it when present, as the tests expect;
#   3. inside, runs `bash installer/build-deps.sh --tests`, then configures the FULL build
#      (both programs, the tests, the benchmarks) with -DSWITCHYARD_REQUIRE_ALL=ON, which
#      turns every optional part into a requirement, and checks the tools the test scripts
#      run (node 20+, npm, clang-format, wrk, Xvfb, PostgreSQL's initdb) and that npm installs
#      the e2e suite's client SDKs and node loads them;
#   4. deletes the chroot, also after a failure; unmounts what it mounted.
# Nothing is cached between runs. Prints how long it took. .ci/run runs it.
#
# Usage (as root):  bash installer/fresh-machine-check.sh [--keep]
#   --keep  leave the chroot (unmounted) for a look; its path is printed
# Env: SWITCHYARD_FRESH_MIRROR     Debian mirror (default: the host's apt source)
#      SWITCHYARD_FRESH_SECURITY   Debian security mirror (default: the host's, if any)
#      SWITCHYARD_FRESH_TMPDIR     where the chroot goes (default: $TMPDIR, else /var/tmp)
set -euo pipefail

SUITE=bookworm
KEEP=0
while [ $# -gt 0 ]; do
    case "$1" in
        --keep) KEEP=1 ;;
        -h | --help) sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "fresh-machine-check: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done

START=$SECONDS
log() { printf '[fresh-machine-check %s] %s\n' "$(elapsed)" "$*"; }
elapsed() {
    local s=$((SECONDS - START))
    printf '%dm%02ds' $((s / 60)) $((s % 60))
}
fail() {
    printf '[fresh-machine-check] FAIL: %s\n' "$*" >&2
    exit 1
}

[ "$(id -u)" = 0 ] || fail "run as root: debootstrap and chroot need it"
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
git -C "$SRC" rev-parse --git-dir >/dev/null 2>&1 || fail "$SRC is not a git checkout: the check copies its tracked files"
export DEBIAN_FRONTEND=noninteractive

# --- the host's Debian mirror ----------------------------------------------------------

# host_uris SUITE: the http(s) URIs of the host's enabled `deb` sources for SUITE, from
# /etc/apt/sources.list(.d/*.list) (one-line form) and /etc/apt/sources.list.d/*.sources
# (deb822 form), in order.
host_uris() {
    local suite=$1 f
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -f "$f" ] || continue
        awk -v want="$suite" '
            $1 == "deb" {
                i = 2
                if ($i ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
                if ($(i + 1) == want) print $i
            }' "$f"
    done
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] || continue
        awk -v want="$suite" '
            function flush() {
                if ((" " types " ") ~ / deb / && enabled != "no" && (" " suites " ") ~ (" " want " ")) {
                    n = split(uris, u, /[ \t]+/)
                    for (k = 1; k <= n; k++) if (u[k] != "") print u[k]
                }
                types = uris = suites = enabled = ""
            }
            /^[ \t]*#/ { next }
            /^[ \t]*$/ { flush(); next }
            { line = $0; key = tolower(line); sub(/:.*/, "", key); sub(/^[^:]*:[ \t]*/, "", line) }
            key == "types" { types = line } key == "uris" { uris = line }
            key == "suites" { suites = line } key == "enabled" { enabled = tolower(line) }
            END { flush() }' "$f"
    done | grep -E '^https?://' || true
}
MIRROR=${SWITCHYARD_FRESH_MIRROR:-$(host_uris "$SUITE" | head -n 1)}
if [ -z "$MIRROR" ]; then
    echo "fresh-machine check: no Debian $SUITE source in the host's apt configuration;" \
        "set SWITCHYARD_FRESH_MIRROR to a Debian mirror URL" >&2
    exit 2
fi
SECURITY=${SWITCHYARD_FRESH_SECURITY:-$(host_uris "$SUITE-security" | head -n 1)}
MIRROR=${MIRROR%/}
SECURITY=${SECURITY%/}

# --- debootstrap on the host -----------------------------------------------------------

if ! command -v debootstrap >/dev/null; then
    log "installing debootstrap"
    apt-get install -y -q --no-install-recommends debootstrap >/dev/null ||
        { apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends debootstrap >/dev/null; } ||
        fail "could not install debootstrap"
fi

# --- the chroot, and its removal -------------------------------------------------------

PARENT=${SWITCHYARD_FRESH_TMPDIR:-${TMPDIR:-/var/tmp}}
ROOT=$(mktemp -d "$PARENT/switchyard-fresh.XXXXXX")
ROOT=$(cd "$ROOT" && pwd -P)
chmod 0755 "$ROOT"
DEBOOTSTRAP_LOG=$(mktemp "$PARENT/switchyard-fresh-debootstrap.XXXXXX.log")

mounts_under_root() { awk -v r="$ROOT" '$2 == r || index($2, r "/") == 1 { print $2 }' /proc/mounts | sort -r; }

cleanup() {
    local rc=$? p m
    set +e
    trap - EXIT INT TERM
    # Processes left inside (a server a maintainer script or a test started): end them first.
    for p in /proc/[0-9]*; do
        [ "$(readlink "$p/root" 2>/dev/null)" = "$ROOT" ] && kill -KILL "${p#/proc/}" 2>/dev/null
    done
    for m in $(mounts_under_root); do
        umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
    done
    rm -f "$DEBOOTSTRAP_LOG"
    if [ -n "$(mounts_under_root)" ]; then
        printf '[fresh-machine-check] still mounted, NOT removing %s:\n%s\n' "$ROOT" "$(mounts_under_root)" >&2
        rc=1
    elif [ "$KEEP" = 1 ]; then
        log "--keep: the chroot stays at $ROOT"
    else
        rm -rf --one-file-system "$ROOT"
        [ ! -e "$ROOT" ] || { echo "[fresh-machine-check] could not remove $ROOT" >&2; rc=1; }
    fi
    if [ "$rc" = 0 ]; then
        log "PASSED in $(elapsed) (debootstrap $SUITE minbase, build-deps.sh --tests, full configure)"
    else
        printf '[fresh-machine-check] FAILED (exit %d) after %s\n' "$rc" "$(elapsed)" >&2
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

log "debootstrap --variant=minbase $SUITE into $ROOT from $MIRROR"
include=()
case "$MIRROR$SECURITY" in *https://*) include=(--include=ca-certificates) ;; esac
debootstrap --variant=minbase "${include[@]}" "$SUITE" "$ROOT" "$MIRROR" >"$DEBOOTSTRAP_LOG" 2>&1 || {
    tail -n 30 "$DEBOOTSTRAP_LOG" >&2
    fail "debootstrap failed"
}
log "debootstrap done"

# A fresh Debian 12 as an installer leaves it: the release, its updates and security.
cat >"$ROOT/etc/apt/sources.list" <<EOF
deb $MIRROR $SUITE main
deb $MIRROR $SUITE-updates main
EOF
# Security updates where the host has a source for them.
[ -z "$SECURITY" ] || echo "deb $SECURITY $SUITE-security main" >>"$ROOT/etc/apt/sources.list"
# No service starts inside the chroot (postgresql's maintainer scripts try to).
printf '#!/bin/sh\nexit 101\n' >"$ROOT/usr/sbin/policy-rc.d"
chmod 0755 "$ROOT/usr/sbin/policy-rc.d"
# The host's network settings: its resolver, and the CA certificates added on it (a network
# with TLS inspection needs them for npm; ca-certificates' postinst adds them to the bundle).
cp -L /etc/resolv.conf "$ROOT/etc/resolv.conf"
if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
    mkdir -p "$ROOT/usr/local/share/ca-certificates"
    cp -L /usr/local/share/ca-certificates/*.crt "$ROOT/usr/local/share/ca-certificates/"
fi
# A throwaway system: dpkg need not fsync every file, apt need not fetch translations.
echo force-unsafe-io >"$ROOT/etc/dpkg/dpkg.cfg.d/switchyard-fresh-check"
echo 'Acquire::Languages "none";' >"$ROOT/etc/apt/apt.conf.d/99switchyard-fresh-check"
[ -s "$ROOT/etc/hosts" ] || printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' >"$ROOT/etc/hosts"

mount -t proc proc "$ROOT/proc"
mkdir -p "$ROOT/dev/pts" "$ROOT/dev/shm"
mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts "$ROOT/dev/pts"
mount -t tmpfs -o mode=1777 tmpfs "$ROOT/dev/shm"

# The checkout's tracked files as they are in the work tree (CI's clean clone: HEAD), and
# ../shared beside it (tests read ../shared/data).
mkdir -p "$ROOT/src/switchyard"
(
    cd "$SRC"
    git ls-files -z | while IFS= read -r -d '' f; do
        if [ -e "$f" ] || [ -L "$f" ]; then printf '%s\0' "$f"; fi
    done | tar --null --no-recursion -T - -cf -
) | tar -xf - -C "$ROOT/src/switchyard"
if [ -d "$SRC/../shared" ]; then
    mkdir -p "$ROOT/src/shared"
    cp -a "$SRC/../shared/." "$ROOT/src/shared/"
    shared_note="and ../shared"
else
    shared_note="(no ../shared beside the checkout)"
fi
log "copied $(git -C "$SRC" ls-files | wc -l) tracked files $shared_note"

in_chroot() {
    # NODE_EXTRA_CA_CERTS: node (npm) also trusts the system's bundle, with the host's CAs.
    chroot "$ROOT" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb CI="${CI:-}" \
        DEBIAN_FRONTEND=noninteractive PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt \
        /bin/bash -c "$1" </dev/null
}

log "bash installer/build-deps.sh --tests (inside; its output in a log, shown on failure)"
before=$(in_chroot 'dpkg-query -W -f "\${db:Status-Abbrev}\n" | grep -c "^ii"')
in_chroot 'cd /src/switchyard && bash installer/build-deps.sh --tests >/src/build-deps.log 2>&1' || {
    echo "--- last 60 lines of the output of build-deps.sh --tests ---" >&2
    tail -n 60 "$ROOT/src/build-deps.log" >&2
    fail "installer/build-deps.sh --tests failed on a fresh $SUITE"
}
after=$(in_chroot 'dpkg-query -W -f "\${db:Status-Abbrev}\n" | grep -c "^ii"')
grep -E '^(Installing|Fetched) ' "$ROOT/src/build-deps.log" | sed 's/^/  /' | cut -c1-400
log "build-deps.sh --tests installed $((after - before)) packages (from $before to $after)"

log "tools the test scripts run"
in_chroot '
    set -e
    ok=1
    need() { if command -v "$1" >/dev/null; then printf "  %-13s %s\n" "$1" "$2"; else echo "  MISSING: $1 ($3)" >&2; ok=0; fi; }
    need node "$(node --version 2>/dev/null)" "e2e and coordinate-oracle suites"
    need npm "$(npm --version 2>/dev/null)" "e2e and coordinate-oracle suites"
    need clang-format "$(clang-format --version 2>/dev/null)" "tests/format-check.sh"
    need git "$(git --version 2>/dev/null)" "tests/format-check.sh"
    need wrk "" "tests/bench"
    need Xvfb "" "installer/package-check.sh"
    need curl "" "installer/package-check.sh, tests/bench"
    initdb=$(ls /usr/lib/postgresql/*/bin/initdb 2>/dev/null | sort -V | tail -n 1)
    if [ -n "$initdb" ]; then printf "  %-13s %s\n" initdb "$initdb"; else echo "  MISSING: initdb (tests/pg)" >&2; ok=0; fi
    [ "$ok" = 1 ]
    [ "$(node -p "process.versions.node.split(\".\")[0]")" -ge 20 ] || { echo "  node is older than 20" >&2; exit 1; }
' || fail "a tool the tests run is missing after build-deps.sh --tests"

log "npm ci in tests/e2e and tests/address/oracle; node loads the client SDKs"
in_chroot '
    set -e
    cd /src/switchyard/tests/e2e
    npm ci --no-audit --no-fund --loglevel=error
    node --input-type=module -e "
        const sdks = [\"openai\", \"@anthropic-ai/sdk\", \"anthropic1\"];
        for (const name of sdks) await import(name);
        console.log(\"  node \" + process.version + \" loads \" + sdks.join(\", \"));"
    cd /src/switchyard/tests/address/oracle
    npm ci --no-audit --no-fund --loglevel=error
' || fail "the e2e suite's client SDKs do not install or load on a fresh $SUITE"

log "cmake: the full build (GUI, server, tests, benchmarks), SWITCHYARD_REQUIRE_ALL=ON"
in_chroot 'cd /src/switchyard && cmake -S . -B /src/build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DSWITCHYARD_BUILD_GUI=ON -DSWITCHYARD_BUILD_TESTS=ON -DSWITCHYARD_REQUIRE_ALL=ON >/src/configure.log 2>&1 ||
    { cat /src/configure.log; exit 1; }
    grep -E "^-- Node.js" /src/configure.log | sed "s/^-- /  /" || true
    sed -n "s/^benchmark_DIR:PATH=/  Google Benchmark: /p" /src/build/CMakeCache.txt
    for t in switchyard switchyard-server bench_charges; do
        grep -q "^build $t: phony" /src/build/build.ninja ||
            { echo "no $t target in the configured build" >&2; exit 1; }
    done
    echo "  $(ctest --test-dir /src/build -N | tail -n 1)"' ||
    fail "CMake cannot configure the full build on a fresh $SUITE with what build-deps.sh --tests installed"
log "configured"

