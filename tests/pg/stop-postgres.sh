#!/usr/bin/env bash
# stop-postgres.sh DIR [--remove]: stop the throwaway cluster that ensure-postgres.sh
# started in DIR (fast shutdown). With --remove, delete DIR afterwards. Stopping a
# cluster that is not running, or a DIR that does not exist, is not an error.
set -euo pipefail

say() { printf '[stop-postgres] %s\n' "$*" >&2; }
die() {
    printf '[stop-postgres] ERROR: %s\n' "$*" >&2
    exit 1
}

DIR=""
REMOVE=0
for arg in "$@"; do
    case "$arg" in
        --remove) REMOVE=1 ;;
        -h | --help) sed -n '2,4p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 0 ;;
        *) [ -z "$DIR" ] || die "one DIR only"; DIR=$arg ;;
    esac
done
[ -n "$DIR" ] || die "usage: stop-postgres.sh DIR [--remove]"

if [ ! -d "$DIR" ]; then
    say "$DIR does not exist; nothing to stop"
    exit 0
fi
DIR=$(cd "$DIR" && pwd)
PGHOME=$DIR
[ ! -f "$DIR/cluster-dir" ] || PGHOME=$(cat "$DIR/cluster-dir")
PGDATA_DIR="$PGHOME/data"

if [ -f "$PGDATA_DIR/PG_VERSION" ]; then
    major=$(cat "$PGDATA_DIR/PG_VERSION")
    PG_CTL=/usr/lib/postgresql/$major/bin/pg_ctl
    [ -x "$PG_CTL" ] || PG_CTL=$(command -v pg_ctl || true)
    [ -n "$PG_CTL" ] || die "pg_ctl for PostgreSQL $major is not installed"
    owner=$(stat -c %U "$PGDATA_DIR")
    if [ "$(id -u)" = 0 ] && [ "$owner" != root ]; then
        as_owner() { runuser -u "$owner" -- "$@"; }
    else
        as_owner() { "$@"; }
    fi
    if as_owner "$PG_CTL" -D "$PGDATA_DIR" status >/dev/null 2>&1; then
        as_owner "$PG_CTL" -D "$PGDATA_DIR" -m fast -w -t 60 stop >&2 || die "pg_ctl stop failed"
        say "stopped the cluster in $DIR"
    else
        say "no server running in $DIR"
    fi
else
    say "no cluster in $DIR"
fi

if [ "$REMOVE" = 1 ]; then
    [ "$PGHOME" = "$DIR" ] || rm -rf "$PGHOME"
    rm -rf "$DIR"
    say "removed $DIR"
fi
