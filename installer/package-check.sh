#!/usr/bin/env bash
# package-check.sh: build the switchyard .deb with CPack, install it with apt-get, check
# what it installed, run the INSTALLED headless server as the switchyard user, drive it
# with the installed admin commands, stop it, purge the package and check it is gone.
#
# Normally run through the build:  cmake --build build --target package-check
# Directly:  bash installer/package-check.sh --build-dir build [--gui 0|1] [--cpack PATH]
#            bash installer/package-check.sh --deb FILE.deb --gui 0|1   (skip cpack)
# Options:   --keep   leave the package installed at the end (and after a failure)
#
# Runs as root: it installs and purges a system package. It refuses to touch a machine
# where switchyard is already installed or /var/lib/switchyard already exists (the purge
# would delete that data) unless SWITCHYARD_PACKAGE_CHECK_FORCE=1.
set -euo pipefail

PKG=switchyard
SY_USER=switchyard
DATA_DIR=/var/lib/switchyard
UNIT_NAME=switchyard-server.service

BUILD_DIR=""
CPACK_BIN=cpack
GUI=""
DEB=""
KEEP=0

log() { printf '[package-check] %s\n' "$*"; }
fail() {
    printf '\n[package-check] FAIL: %s\n\n' "$*" >&2
    exit 1
}
CHECKS=0
ok() {
    CHECKS=$((CHECKS + 1))
    printf '[package-check]   ok  %s\n' "$*"
}
usage() {
    sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
}

while [ $# -gt 0 ]; do
    case "$1" in
        --build-dir) BUILD_DIR=${2:?}; shift 2 ;;
        --cpack) CPACK_BIN=${2:?}; shift 2 ;;
        --gui) GUI=${2:?}; shift 2 ;;
        --deb) DEB=${2:?}; shift 2 ;;
        --keep) KEEP=1; shift ;;
        -h | --help) usage ;;
        *) printf 'package-check: unknown argument %s\n' "$1" >&2; usage ;;
    esac
done

[ "$(id -u)" = 0 ] || fail "run as root: this installs and purges the $PKG package"
[ -n "$BUILD_DIR" ] || [ -n "$DEB" ] || fail "give --build-dir BUILD (or --deb FILE)"
if [ -n "$BUILD_DIR" ]; then
    BUILD_DIR=$(cd "$BUILD_DIR" && pwd)
    [ -f "$BUILD_DIR/CPackConfig.cmake" ] ||
        fail "$BUILD_DIR/CPackConfig.cmake is missing: configure the project first (cmake -S . -B $BUILD_DIR)"
fi
if [ -z "$GUI" ]; then
    GUI=1
    if [ -n "$BUILD_DIR" ] &&
        grep -qiE '^SWITCHYARD_BUILD_GUI:BOOL=(OFF|0|FALSE|NO|N)$' "$BUILD_DIR/CMakeCache.txt" 2>/dev/null; then
        GUI=0
    fi
fi
case "$GUI" in 0 | 1) ;; *) fail "--gui takes 0 or 1, not '$GUI'" ;; esac

export DEBIAN_FRONTEND=noninteractive
APT_OPTS=(-y -q -o DPkg::Lock::Timeout=300)

# --- refuse to clobber a real installation ------------------------------------------

pkg_status() { dpkg-query -W -f='${db:Status-Abbrev}' "$PKG" 2>/dev/null || true; }
leftover=""
case "$(pkg_status)" in
    "" | un* | pn*) ;;
    *) leftover="$PKG is already known to dpkg ($(pkg_status))" ;;
esac
[ -n "$leftover" ] || [ ! -e "$DATA_DIR" ] || leftover="$DATA_DIR exists"
if [ -n "$leftover" ]; then
    [ "${SWITCHYARD_PACKAGE_CHECK_FORCE:-0}" = 1 ] ||
        fail "$leftover; this check ends by purging $PKG, which deletes $DATA_DIR. Remove it first or set SWITCHYARD_PACKAGE_CHECK_FORCE=1"
    # Start from a clean slate: apt-get would not reinstall a package of the same version.
    log "SWITCHYARD_PACKAGE_CHECK_FORCE=1: $leftover; purging it first"
    if [ -n "$(pkg_status)" ]; then
        apt-get purge "${APT_OPTS[@]}" "$PKG" >/dev/null 2>&1 || dpkg --purge --force-all "$PKG" >/dev/null ||
            fail "could not purge the $PKG left over from before"
    fi
    rm -rf "$DATA_DIR"
fi

# --- tools this check needs (installed if missing) ----------------------------------

need=()
command -v dpkg-shlibdeps >/dev/null || need+=(dpkg-dev)    # CPack's shlibdeps
command -v file >/dev/null || need+=(file)                  # CPack finds ELF files with it
command -v curl >/dev/null || need+=(curl)
command -v setpriv >/dev/null || need+=(util-linux)
command -v adduser >/dev/null || need+=(adduser)
if [ "$GUI" = 1 ]; then
    command -v desktop-file-validate >/dev/null || need+=(desktop-file-utils)
    command -v Xvfb >/dev/null || need+=(xvfb)   # to open the installed window on X11
fi
if [ ${#need[@]} -gt 0 ]; then
    log "installing tools: ${need[*]}"
    apt-get install "${APT_OPTS[@]}" --no-install-recommends "${need[@]}" >/dev/null ||
        { apt-get update -q >/dev/null && apt-get install "${APT_OPTS[@]}" --no-install-recommends "${need[@]}" >/dev/null; } ||
        fail "could not install ${need[*]}"
fi

# --- cleanup ------------------------------------------------------------------------

WORK=$(mktemp -d /tmp/switchyard-package-check.XXXXXX)
chmod 0755 "$WORK"
SERVER_PID=""
SERVER_LOG="$WORK/server.log"
TOUCHED_PACKAGE=0

stop_server() {
    [ -n "$SERVER_PID" ] || return 0
    if kill -0 "$SERVER_PID" 2>/dev/null; then
        kill -TERM "$SERVER_PID" 2>/dev/null || true
        for _ in $(seq 1 100); do
            kill -0 "$SERVER_PID" 2>/dev/null || break
            sleep 0.1
        done
        if kill -0 "$SERVER_PID" 2>/dev/null; then kill -KILL "$SERVER_PID" 2>/dev/null || true; fi
    fi
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=""
}

cleanup() {
    local rc=$?
    set +e
    stop_server
    if [ -n "${XVFB_PID:-}" ]; then
        kill -TERM "$XVFB_PID" 2>/dev/null
        wait "$XVFB_PID" 2>/dev/null
    fi
    if [ "$rc" != 0 ]; then
        if [ -s "$SERVER_LOG" ]; then
            printf '[package-check] --- server log (last 40 lines) ---\n' >&2
            tail -n 40 "$SERVER_LOG" >&2
            printf '[package-check] --- end of server log ---\n' >&2
        fi
        if [ "$TOUCHED_PACKAGE" = 1 ] && [ "$KEEP" = 0 ]; then
            log "cleaning up after the failure: purging $PKG" >&2
            apt-get purge "${APT_OPTS[@]}" "$PKG" >/dev/null 2>&1 || dpkg --purge "$PKG" >/dev/null 2>&1
        fi
        printf '[package-check] FAILED after %d passed checks\n' "$CHECKS" >&2
    fi
    rm -rf "$WORK"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- 1. build the package -------------------------------------------------------------

if [ -z "$DEB" ]; then
    OUT_DIR="$BUILD_DIR/package-check"
    rm -rf "$OUT_DIR"
    mkdir -p "$OUT_DIR"
    log "cpack -G DEB (output in $OUT_DIR)"
    (cd "$BUILD_DIR" && "$CPACK_BIN" -G DEB --config "$BUILD_DIR/CPackConfig.cmake" -B "$OUT_DIR") ||
        fail "cpack -G DEB failed"
    shopt -s nullglob
    debs=("$OUT_DIR/${PKG}"_*.deb)
    shopt -u nullglob
    [ ${#debs[@]} = 1 ] || fail "expected one ${PKG}_*.deb in $OUT_DIR, found ${#debs[@]}"
    DEB=${debs[0]}
fi
case "$DEB" in /*) ;; *) DEB="$PWD/$DEB" ;; esac
[ -f "$DEB" ] || fail "no such package file: $DEB"
log "package: $DEB ($(du -h "$DEB" | cut -f1))"

# --- 2. what the package declares ---------------------------------------------------

[ "$(dpkg-deb -f "$DEB" Package)" = "$PKG" ] || fail "Package field is not $PKG"
ok "Package: $PKG"
VERSION=$(dpkg-deb -f "$DEB" Version)
ok "Version: $VERSION"
DEPENDS=$(dpkg-deb -f "$DEB" Depends)
log "Depends: $DEPENDS"
for dep in libqt6sql6-sqlite libqt6sql6-psql adduser ca-certificates libqt6core6 libqt6network6 libqt6sql6 \
    pocketsphinx-en-us libflite1 libespeak-ng1 libavformat59 libswresample4 libjemalloc2; do
    grep -qE "(^|, )$dep( |,|$)" <<<"$DEPENDS" || fail "Depends lacks $dep (shlibdeps or the hand-written list)"
done
if [ "$GUI" = 1 ]; then
    grep -qE "(^|, )libqt6widgets6( |,|$)" <<<"$DEPENDS" || fail "Depends lacks libqt6widgets6 (GUI build)"
fi
ok "Depends has the Qt libraries (shlibdeps), both SQL drivers, adduser, ca-certificates, the audio engines with the recognizer's model and jemalloc"
CONTROL=$(dpkg-deb -I "$DEB")
for script in postinst prerm postrm; do
    grep -qE "^ +[0-9]+ bytes, +[0-9]+ lines +\* +$script( |$)" <<<"$CONTROL" ||
        fail "maintainer script $script missing or not executable in the package"
done
ok "maintainer scripts postinst, prerm, postrm are executable"
CONTENTS=$(dpkg-deb -c "$DEB" | awk '{print $NF}')
expect_in_deb() {
    grep -qx "$1" <<<"$CONTENTS" || fail "$1 is not in the package"
}
expect_in_deb ./usr/bin/switchyard-server
expect_in_deb ./usr/lib/systemd/system/$UNIT_NAME
if [ "$GUI" = 1 ]; then
    expect_in_deb ./usr/bin/switchyard
    expect_in_deb ./usr/share/applications/switchyard.desktop
    expect_in_deb ./usr/share/icons/hicolor/scalable/apps/switchyard.svg
fi
ok "package contents are as expected"

# --- 3. install ------------------------------------------------------------------------

log "apt-get install $DEB"
TOUCHED_PACKAGE=1
if ! apt-get install "${APT_OPTS[@]}" "$DEB" >"$WORK/apt.log" 2>&1; then
    log "apt-get install failed; refreshing the package lists and trying again"
    apt-get update -q >/dev/null 2>&1 || true
    apt-get install "${APT_OPTS[@]}" "$DEB" >"$WORK/apt.log" 2>&1 || {
        cat "$WORK/apt.log" >&2
        fail "apt-get install of the package failed"
    }
fi
case "$(pkg_status)" in ii*) ;; *) cat "$WORK/apt.log" >&2; fail "dpkg does not show $PKG as installed ($(pkg_status))" ;; esac
ok "installed with apt-get (dependencies resolved)"

# --- 4. what was installed ----------------------------------------------------------

check_binary() {
    local bin=$1
    [ -x "$bin" ] || fail "$bin is missing or not executable"
    if ldd "$bin" | grep -q 'not found'; then
        ldd "$bin" >&2
        fail "$bin has unresolved shared libraries"
    fi
    ok "$bin is installed and its libraries resolve"
}
check_binary /usr/bin/switchyard-server
if ldd /usr/bin/switchyard-server | grep -qE 'libQt6(Widgets|Gui)\.so'; then
    fail "/usr/bin/switchyard-server links Qt Gui/Widgets; the headless server must not"
fi
ok "switchyard-server does not link Qt Gui or Widgets"
got=$(/usr/bin/switchyard-server --version) || fail "switchyard-server --version failed"
grep -qF "${VERSION%%-*}" <<<"$got" || fail "switchyard-server --version says '$got', package is $VERSION"
ok "switchyard-server --version: $got"

if [ "$GUI" = 1 ]; then
    check_binary /usr/bin/switchyard
    DESKTOP=/usr/share/applications/switchyard.desktop
    [ -f "$DESKTOP" ] || fail "$DESKTOP is missing"
    grep -qx 'Exec=switchyard' "$DESKTOP" || fail "$DESKTOP does not run switchyard"
    if command -v desktop-file-validate >/dev/null; then
        desktop-file-validate "$DESKTOP" || fail "desktop-file-validate rejects $DESKTOP"
        ok "$DESKTOP is valid (desktop-file-validate)"
    else
        ok "$DESKTOP is in place (desktop-file-validate not installed)"
    fi
    [ -f /usr/share/icons/hicolor/scalable/apps/switchyard.svg ] || fail "the icon is missing"
    ok "icon is in place"
else
    [ ! -e /usr/bin/switchyard ] || fail "/usr/bin/switchyard is installed by a headless build"
    ok "headless build: no /usr/bin/switchyard"
fi

UNIT=/usr/lib/systemd/system/$UNIT_NAME
[ -f "$UNIT" ] || fail "$UNIT is missing"
grep -q '^ExecStart=/usr/bin/switchyard-server serve ' "$UNIT" || fail "$UNIT does not start /usr/bin/switchyard-server serve"
grep -qx "User=$SY_USER" "$UNIT" || fail "$UNIT does not run as $SY_USER"
if command -v systemd-analyze >/dev/null; then
    # "Failed to ... bus" lines come from hosts without a running systemd; real unit errors
    # name the unit file.
    if ! systemd-analyze verify "$UNIT" >"$WORK/verify.log" 2>&1 || grep -q "$UNIT_NAME" "$WORK/verify.log"; then
        cat "$WORK/verify.log" >&2
        fail "systemd-analyze verify rejects $UNIT"
    fi
    ok "$UNIT passes systemd-analyze verify"
else
    ok "$UNIT is in place (systemd-analyze not installed)"
fi
# The template for several instances (README, "Several instances"), checked as one instance.
TEMPLATE=/usr/lib/systemd/system/switchyard-server@.service
[ -f "$TEMPLATE" ] || fail "$TEMPLATE is missing"
grep -q -- '--listen 127.0.0.1:%i ' "$TEMPLATE" || fail "$TEMPLATE does not listen on its instance's port"
grep -qx 'EnvironmentFile=/etc/switchyard/instances.env' "$TEMPLATE" || fail "$TEMPLATE reads no shared database URL"
if command -v systemd-analyze >/dev/null; then
    cp "$TEMPLATE" "$WORK/switchyard-server@8081.service"
    if ! systemd-analyze verify "$WORK/switchyard-server@8081.service" >"$WORK/verify-at.log" 2>&1 ||
        grep -q "switchyard-server@8081.service:" "$WORK/verify-at.log"; then
        cat "$WORK/verify-at.log" >&2
        fail "systemd-analyze verify rejects $TEMPLATE"
    fi
    ok "$TEMPLATE passes systemd-analyze verify (as switchyard-server@8081)"
fi
[ -f /usr/share/doc/switchyard/examples/haproxy.cfg ] || fail "the HAProxy example is missing"
if command -v haproxy >/dev/null; then
    haproxy -c -f /usr/share/doc/switchyard/examples/haproxy.cfg >/dev/null ||
        fail "haproxy -c rejects /usr/share/doc/switchyard/examples/haproxy.cfg"
    ok "the HAProxy example passes haproxy -c"
fi

getent passwd "$SY_USER" >/dev/null || fail "postinst did not create the user $SY_USER"
sy_uid=$(id -u "$SY_USER")
[ "$sy_uid" -lt 1000 ] || fail "$SY_USER is not a system user (uid $sy_uid)"
sy_shell=$(getent passwd "$SY_USER" | cut -d: -f7)
case "$sy_shell" in */nologin | */false) ;; *) fail "$SY_USER has a login shell ($sy_shell)" ;; esac
ok "system user $SY_USER (uid $sy_uid, shell $sy_shell)"
[ -d "$DATA_DIR" ] || fail "postinst did not create $DATA_DIR"
[ "$(stat -c %U:%G "$DATA_DIR")" = "$SY_USER:$SY_USER" ] || fail "$DATA_DIR is owned by $(stat -c %U:%G "$DATA_DIR")"
[ "$(stat -c %a "$DATA_DIR")" = 700 ] || fail "$DATA_DIR has mode $(stat -c %a "$DATA_DIR"), expected 700"
ok "$DATA_DIR is owned by $SY_USER, mode 700"
WANTS_LINK=/etc/systemd/system/multi-user.target.wants/$UNIT_NAME
[ -L "$WANTS_LINK" ] || fail "postinst did not enable $UNIT_NAME ($WANTS_LINK is missing)"
ok "$UNIT_NAME is enabled ($WANTS_LINK)"

# --- 5. the service under systemd, when systemd is the running init -----------------

if [ -d /run/systemd/system ]; then
    systemctl is-enabled --quiet "$UNIT_NAME" || fail "postinst did not enable $UNIT_NAME"
    ok "$UNIT_NAME is enabled"
    active=0
    for _ in $(seq 1 100); do
        if systemctl is-active --quiet "$UNIT_NAME"; then active=1; break; fi
        sleep 0.2
    done
    [ "$active" = 1 ] || { systemctl status --no-pager "$UNIT_NAME" >&2 || true; fail "postinst did not start $UNIT_NAME"; }
    code=000
    for _ in $(seq 1 100); do
        code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 http://127.0.0.1:8080/healthz || true)
        [ "$code" = 200 ] && break
        sleep 0.2
    done
    [ "$code" = 200 ] || { journalctl -u "$UNIT_NAME" --no-pager -n 40 >&2 || true; fail "the service's /healthz on 127.0.0.1:8080 answered $code"; }
    ok "$UNIT_NAME runs and answers /healthz on 127.0.0.1:8080"
    main_pid=$(systemctl show -p MainPID --value "$UNIT_NAME")
    unit_user=$(ps -o user= -p "$main_pid" | tr -d ' ')
    [ "$unit_user" = "$SY_USER" ] || fail "$UNIT_NAME runs as '$unit_user', not $SY_USER"
    ok "$UNIT_NAME runs as $SY_USER"
    systemctl stop "$UNIT_NAME" || fail "systemctl stop $UNIT_NAME failed"
    result=$(systemctl show -p Result --value "$UNIT_NAME")
    [ "$result" = success ] || fail "$UNIT_NAME stopped with result '$result' (not a clean exit on SIGTERM)"
    ok "$UNIT_NAME stopped cleanly"
else
    log "systemd is not the running init here: the service start is not checked (the unit was verified above)"
fi

# --- 6. the installed server, run by hand as the service user -----------------------

# Like the unit (the service user, a clean environment, cwd in the data dir), but with umask 022
# instead of its 077: the files the server makes must be owner-only by its own doing (checked
# after it stopped).
# The subshell execs (env, then setpriv, then the command), so `... &` then $! is the
# command's own PID: no wrapper process stays between (runuser would fork one).
SETPRIV=$(command -v setpriv)
as_service_user() (
    cd "$DATA_DIR"
    umask 0022
    exec env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME="$DATA_DIR" LANG=C.UTF-8 \
        "$SETPRIV" --reuid="$SY_USER" --regid="$SY_USER" --init-groups -- "$@"
)

port_in_use() {
    if command -v ss >/dev/null; then
        [ -n "$(ss -Htan "( sport = :$1 )" 2>/dev/null)" ]
    else
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
    fi
}
free_port() {
    local p
    for _ in $(seq 1 200); do
        p=$((20000 + RANDOM % 40000))
        port_in_use "$p" || { echo "$p"; return 0; }
    done
    return 1
}

PORT=""
BASE=""
for attempt in 1 2 3; do
    PORT=$(free_port) || fail "found no free loopback port"
    BASE="http://127.0.0.1:$PORT"
    log "starting /usr/bin/switchyard-server serve --listen 127.0.0.1:$PORT --data-dir $DATA_DIR as $SY_USER"
    # Not through the function: a backgrounded function call forks once more, and $!
    # would be that wrapper shell instead of the server.
    (
        cd "$DATA_DIR"
        umask 0022
        exec env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME="$DATA_DIR" LANG=C.UTF-8 \
            "$SETPRIV" --reuid="$SY_USER" --regid="$SY_USER" --init-groups -- \
            /usr/bin/switchyard-server serve --listen "127.0.0.1:$PORT" --data-dir "$DATA_DIR"
    ) >"$SERVER_LOG" 2>&1 &
    SERVER_PID=$!
    code=000
    for _ in $(seq 1 150); do
        kill -0 "$SERVER_PID" 2>/dev/null || break
        code=$(curl -s -o "$WORK/healthz" -w '%{http_code}' --max-time 2 "$BASE/healthz" || true)
        [ "$code" = 200 ] && break
        sleep 0.2
    done
    [ "$code" = 200 ] && break
    if ! kill -0 "$SERVER_PID" 2>/dev/null && [ "$attempt" -lt 3 ] && port_in_use "$PORT"; then
        log "port $PORT was taken meanwhile; trying another"
        wait "$SERVER_PID" 2>/dev/null || true
        SERVER_PID=""
        continue
    fi
    kill -0 "$SERVER_PID" 2>/dev/null || fail "the installed server exited before answering /healthz"
    fail "GET /healthz on $BASE answered $code within 30 s"
done
grep -qE '"status"[[:space:]]*:[[:space:]]*"ok"' "$WORK/healthz" ||
    fail "GET /healthz answered 200 with $(head -c 200 "$WORK/healthz"), expected {\"status\":\"ok\"}"
ok "installed server answers GET /healthz: $(head -c 100 "$WORK/healthz")"
[ "$(readlink "/proc/$SERVER_PID/exe")" = /usr/bin/switchyard-server ] ||
    fail "PID $SERVER_PID is $(readlink "/proc/$SERVER_PID/exe"), not the installed server"
server_user=$(ps -o user= -p "$SERVER_PID" | tr -d ' ')
[ "$server_user" = "$SY_USER" ] || fail "the server runs as '$server_user', not $SY_USER"
ok "the server process is /usr/bin/switchyard-server, user $SY_USER"

admin() {
    # admin NAME ARGS...: run an installed admin command as the service user; stdout in
    # $WORK/NAME.out, stderr in $WORK/NAME.err.
    local name=$1
    shift
    if ! as_service_user /usr/bin/switchyard-server "$@" --data-dir "$DATA_DIR" \
        >"$WORK/$name.out" 2>"$WORK/$name.err"; then
        cat "$WORK/$name.out" "$WORK/$name.err" >&2
        fail "switchyard-server $* failed"
    fi
}

admin key keys create --name package-check
API_KEY=$(tail -n 1 "$WORK/key.out")
[[ "$API_KEY" == sk-* ]] || fail "keys create printed '$(head -c 80 "$WORK/key.out")', expected an sk- key on its last line"
ok "keys create printed an sk- key"

admin token tokens create --scopes credits:read --name package-check
TOKEN=$(tail -n 1 "$WORK/token.out")
[[ "$TOKEN" == lpc_* ]] || fail "tokens create printed '$(head -c 80 "$WORK/token.out")', expected an lpc_ token on its last line"
ok "tokens create printed an lpc_ token"

admin grant credits grant --amount 5
ok "credits grant --amount 5: $(tail -n 1 "$WORK/grant.out")"

http_get() {
    # http_get PATH [AUTH-HEADER]: prints the status code; body in $WORK/body
    local hdr=()
    [ $# -lt 2 ] || hdr=(-H "$2")
    curl -s -o "$WORK/body" -w '%{http_code}' --max-time 10 "${hdr[@]}" "$BASE$1" || echo 000
}

code=$(http_get /api/v1/credits/balance "Authorization: Bearer $TOKEN")
[ "$code" = 200 ] || fail "GET /api/v1/credits/balance with the new control token answered $code: $(head -c 300 "$WORK/body")"
grep -qE '"balance"[[:space:]]*:[[:space:]]*"?5(\.0*)?"?[[:space:]]*[,}]' "$WORK/body" ||
    fail "the balance does not show the 5 credits granted by the admin command: $(head -c 300 "$WORK/body")"
ok "GET /api/v1/credits/balance with the control token: 200 $(head -c 200 "$WORK/body")"

code=$(http_get /api/v1/credits/balance)
[ "$code" = 401 ] || fail "GET /api/v1/credits/balance without credentials answered $code, expected 401"
ok "GET /api/v1/credits/balance without credentials: 401"

code=$(http_get /api/v1/credits/balance "Authorization: Bearer $API_KEY")
case "$code" in 401 | 403) ;; *) fail "GET /api/v1/credits/balance with an API key answered $code, expected 401 or 403" ;; esac
ok "GET /api/v1/credits/balance with an API key (not a control token): $code"

log "stopping the server (SIGTERM)"
kill -TERM "$SERVER_PID"
stopped=0
for _ in $(seq 1 150); do
    kill -0 "$SERVER_PID" 2>/dev/null || { stopped=1; break; }
    sleep 0.2
done
[ "$stopped" = 1 ] || fail "the server did not exit within 30 s of SIGTERM"
rc=0
wait "$SERVER_PID" || rc=$?
SERVER_PID=""
[ "$rc" = 0 ] || fail "the server exited with status $rc after SIGTERM"
ok "server exited cleanly on SIGTERM"

bad=$(find "$DATA_DIR" ! -user "$SY_USER" -print)
[ -z "$bad" ] || fail "files in $DATA_DIR not owned by $SY_USER: $bad"
ok "everything in $DATA_DIR belongs to $SY_USER"
bad=$(find "$DATA_DIR" -perm /077 -print)
[ -z "$bad" ] || fail "files in $DATA_DIR open to other users: $bad"
ok "everything in $DATA_DIR is owner-only"

# --- 7. the installed window ---------------------------------------------------------

# gui_serves LABEL VAR=VALUE...: start the installed window with its embedded server on
# its own data directory and a free port, in that environment; wait for /healthz; stop it.
gui_serves() {
    local label=$1 code=000
    shift
    PORT=$(free_port) || fail "found no free loopback port"
    log "starting /usr/bin/switchyard --listen 127.0.0.1:$PORT ($label)"
    env "$@" /usr/bin/switchyard --listen "127.0.0.1:$PORT" --data-dir "$WORK/gui-data" \
        >"$SERVER_LOG" 2>&1 &
    SERVER_PID=$!
    for _ in $(seq 1 150); do
        kill -0 "$SERVER_PID" 2>/dev/null || break
        code=$(curl -s -o "$WORK/healthz" -w '%{http_code}' --max-time 2 "http://127.0.0.1:$PORT/healthz" || true)
        [ "$code" = 200 ] && break
        sleep 0.2
    done
    [ "$code" = 200 ] || fail "the installed window ($label) did not serve /healthz on port $PORT (got $code)"
    if grep -qiE 'could not (load|find) the qt platform plugin' "$SERVER_LOG"; then
        fail "the installed window ($label) could not load its platform plugin"
    fi
    ok "installed switchyard ($label) starts and its embedded server answers GET /healthz"
    stop_server
}

XVFB_PID=""
if [ "$GUI" = 1 ]; then
    mkdir -p "$WORK/gui-data"
    install -d -m 0700 "$WORK/xdg"
    got=$(QT_QPA_PLATFORM=offscreen XDG_RUNTIME_DIR="$WORK/xdg" timeout 30 /usr/bin/switchyard --version 2>"$WORK/gui.err") ||
        { cat "$WORK/gui.err" >&2; fail "switchyard --version (offscreen) failed"; }
    grep -qF "${VERSION%%-*}" <<<"$got" || fail "switchyard --version says '$got', package is $VERSION"
    ok "switchyard --version (offscreen): $got"

    gui_serves "offscreen" QT_QPA_PLATFORM=offscreen XDG_RUNTIME_DIR="$WORK/xdg"

    # A real X server: the xcb platform plugin and its libraries come from the Depends.
    Xvfb -displayfd 3 -nolisten tcp -screen 0 1280x800x24 3>"$WORK/display" >"$WORK/xvfb.log" 2>&1 &
    XVFB_PID=$!
    for _ in $(seq 1 100); do
        [ -s "$WORK/display" ] && break
        kill -0 "$XVFB_PID" 2>/dev/null || { cat "$WORK/xvfb.log" >&2; fail "Xvfb did not start"; }
        sleep 0.1
    done
    [ -s "$WORK/display" ] || fail "Xvfb did not report its display"
    gui_serves "xcb on Xvfb" QT_QPA_PLATFORM=xcb DISPLAY=":$(head -n 1 "$WORK/display")" XDG_RUNTIME_DIR="$WORK/xdg"
    kill -TERM "$XVFB_PID" 2>/dev/null || true
    wait "$XVFB_PID" 2>/dev/null || true
    XVFB_PID=""
fi

# --- 8. purge -------------------------------------------------------------------------

if [ "$KEEP" = 1 ]; then
    log "--keep: leaving $PKG installed"
else
    log "apt-get purge $PKG"
    apt-get purge "${APT_OPTS[@]}" "$PKG" >"$WORK/purge.log" 2>&1 || { cat "$WORK/purge.log" >&2; fail "apt-get purge $PKG failed"; }
    TOUCHED_PACKAGE=0
    [ -z "$(pkg_status)" ] || [[ "$(pkg_status)" == un* ]] || [[ "$(pkg_status)" == pn* ]] ||
        fail "dpkg still knows $PKG after the purge ($(pkg_status))"
    for path in /usr/bin/switchyard-server /usr/bin/switchyard "$UNIT" \
        /usr/share/applications/switchyard.desktop \
        /usr/share/icons/hicolor/scalable/apps/switchyard.svg "$DATA_DIR" "$WANTS_LINK"; do
        if [ -e "$path" ] || [ -L "$path" ]; then fail "$path is still there after the purge"; fi
    done
    ok "purged: binaries, desktop entry, icon, unit, its enablement and $DATA_DIR are gone"
fi

log "PASSED: all $CHECKS checks of the $PKG $VERSION package"
