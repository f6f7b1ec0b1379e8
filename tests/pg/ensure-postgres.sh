#!/usr/bin/env bash
# ensure-postgres.sh [DIR]: make a PostgreSQL server available to the tests and print its
# URL as the only line on stdout; everything else goes to stderr.
#
#   1. If SWITCHYARD_TEST_PG_URL is set and answers, print it and stop.
#   2. Otherwise run a throwaway cluster in DIR (default: a new mktemp directory):
#      installs Debian's postgresql if initdb is missing (as root), initdb with trust
#      auth, listening on 127.0.0.1 only, on a free port, no Unix socket; starts it with
#      pg_ctl -w, creates the database switchyard_test and prints
#      postgresql://postgres@127.0.0.1:PORT/switchyard_test
#
# Run again on the same DIR: reuses the cluster (starting it if it is stopped) and prints
# the same kind of URL. Stop it with tests/pg/stop-postgres.sh DIR [--remove].
# As root the server runs as the user postgres (PostgreSQL refuses root); as anyone
# else it runs as that user. Env: SWITCHYARD_TEST_PG_DB (default switchyard_test).
set -euo pipefail

DB_NAME=${SWITCHYARD_TEST_PG_DB:-switchyard_test}

say() { printf '[ensure-postgres] %s\n' "$*" >&2; }
die() {
    printf '[ensure-postgres] ERROR: %s\n' "$*" >&2
    exit 1
}

find_bindir() {
    local d
    # Highest installed major version first.
    for d in $(printf '%s\n' /usr/lib/postgresql/*/bin | sort -t/ -k5,5 -rn); do
        [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] && { echo "$d"; return 0; }
    done
    if command -v initdb >/dev/null && command -v pg_ctl >/dev/null; then
        dirname "$(command -v initdb)"
        return 0
    fi
    return 1
}

# pg_isready/psql from the server's bin dir, or the wrapper in PATH.
client() {
    local tool=$1
    shift
    if [ -n "${BINDIR:-}" ] && [ -x "$BINDIR/$tool" ]; then
        "$BINDIR/$tool" "$@"
    else
        "$tool" "$@"
    fi
}

# --- 1. an existing server given by the environment ---------------------------------

if [ -n "${SWITCHYARD_TEST_PG_URL:-}" ]; then
    BINDIR=$(find_bindir || true)
    if command -v psql >/dev/null || [ -x "${BINDIR:-/nonexistent}/psql" ]; then
        if client psql "$SWITCHYARD_TEST_PG_URL" -XAtqc 'select 1' >/dev/null 2>&1 </dev/null; then
            say "using SWITCHYARD_TEST_PG_URL"
            printf '%s\n' "$SWITCHYARD_TEST_PG_URL"
            exit 0
        fi
        say "SWITCHYARD_TEST_PG_URL is set but does not answer; starting a throwaway cluster instead"
    else
        say "SWITCHYARD_TEST_PG_URL is set but psql is missing to check it; starting a throwaway cluster instead"
    fi
fi

# --- 2. a throwaway cluster -------------------------------------------------------------

BINDIR=$(find_bindir || true)
if [ -z "$BINDIR" ]; then
    [ "$(id -u)" = 0 ] || die "PostgreSQL is not installed and installing it needs root: apt-get install postgresql"
    say "installing PostgreSQL (apt-get install postgresql)"
    export DEBIAN_FRONTEND=noninteractive
    {
        apt-get update -q &&
            apt-get install -y -q -o DPkg::Lock::Timeout=300 --no-install-recommends postgresql
    } >&2 || die "apt-get install postgresql failed"
    BINDIR=$(find_bindir) || die "initdb is still missing after installing postgresql"
fi

if [ "$(id -u)" = 0 ]; then
    RUN_AS=postgres
    getent passwd "$RUN_AS" >/dev/null || die "user $RUN_AS does not exist (the postgresql package creates it)"
    as_pg() { runuser -u "$RUN_AS" -- "$@"; }
else
    RUN_AS=$(id -un)
    as_pg() { "$@"; }
fi

if [ $# -ge 1 ] && [ -n "$1" ]; then
    DIR=$1
    mkdir -p "$DIR"
else
    DIR=$(mktemp -d "${TMPDIR:-/tmp}/switchyard-pg.XXXXXX")
fi
DIR=$(cd "$DIR" && pwd)
PORT_FILE="$DIR/port"

# The cluster lives in DIR when the server's user can reach it. When a parent of DIR is
# closed to that user (a checkout under /root, say), it lives in a directory under /tmp
# that DIR/cluster-dir names; stop-postgres.sh follows that too.
PGHOME=$DIR
if [ "$RUN_AS" != "$(id -un)" ]; then
    if [ -f "$DIR/cluster-dir" ]; then
        PGHOME=$(cat "$DIR/cluster-dir")
        mkdir -p "$PGHOME"
    fi
    chown "$RUN_AS:" "$PGHOME"
    chmod 0700 "$PGHOME"
    if ! as_pg test -w "$PGHOME" -a -x "$PGHOME"; then
        [ "$PGHOME" = "$DIR" ] || die "user $RUN_AS cannot reach $PGHOME"
        PGHOME=$(mktemp -d /tmp/switchyard-pg.XXXXXX)
        chown "$RUN_AS:" "$PGHOME"
        echo "$PGHOME" >"$DIR/cluster-dir"
        say "user $RUN_AS cannot reach $DIR: the cluster goes to $PGHOME"
    fi
fi
PGDATA_DIR="$PGHOME/data"
LOG="$PGHOME/postgres.log"

port_in_use() {
    if command -v ss >/dev/null; then
        [ -n "$(ss -Htan "( sport = :$1 )" 2>/dev/null)" ]
    else
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
    fi
}
# A cluster started again keeps its port (clients reconnect to the same URL) unless something
# listens there: connections the server closed when it stopped (TIME_WAIT) do not stop it from
# listening again.
port_listened() {
    if command -v ss >/dev/null; then
        [ -n "$(ss -Htln "( sport = :$1 )" 2>/dev/null)" ]
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

is_running() { as_pg "$BINDIR/pg_ctl" -D "$PGDATA_DIR" status >/dev/null 2>&1; }

if [ ! -f "$PGDATA_DIR/PG_VERSION" ]; then
    [ ! -e "$PGDATA_DIR" ] || rm -rf "$PGDATA_DIR"   # a half-made cluster from an interrupted run
    say "initdb in $PGDATA_DIR (as $RUN_AS)"
    as_pg "$BINDIR/initdb" -D "$PGDATA_DIR" -U postgres --auth=trust --encoding=UTF8 \
        --locale=C.UTF-8 >"$PGHOME/initdb.log" 2>&1 ||
        { cat "$PGHOME/initdb.log" >&2; die "initdb failed"; }
    # Loopback TCP only, trusted: this cluster holds nothing but test data.
    as_pg tee "$PGDATA_DIR/pg_hba.conf" >/dev/null <<'EOF'
# TYPE  DATABASE  USER  ADDRESS        METHOD
local   all       all                  trust
host    all       all   127.0.0.1/32   trust
EOF
    as_pg tee -a "$PGDATA_DIR/postgresql.conf" >/dev/null <<'EOF'

# --- switchyard test cluster (tests/pg/ensure-postgres.sh) ---
listen_addresses = '127.0.0.1'
unix_socket_directories = ''
max_connections = 200
# Throwaway data: durability is not wanted here, speed is.
fsync = off
synchronous_commit = off
full_page_writes = off
EOF
fi

if is_running; then
    PORT=$(cat "$PORT_FILE" 2>/dev/null || true)
    [ -n "$PORT" ] || die "a server runs on $PGDATA_DIR but $PORT_FILE is missing; stop it with tests/pg/stop-postgres.sh $DIR"
    say "reusing the running cluster in $DIR on port $PORT"
else
    started=0
    for attempt in 1 2 3 4 5; do
        PORT=$(cat "$PORT_FILE" 2>/dev/null || true)
        if [ -z "$PORT" ] || port_listened "$PORT"; then
            PORT=$(free_port) || die "found no free port"
        fi
        echo "$PORT" >"$PORT_FILE"
        say "starting PostgreSQL on 127.0.0.1:$PORT (log: $LOG)"
        if as_pg "$BINDIR/pg_ctl" -D "$PGDATA_DIR" -l "$LOG" -o "-p $PORT" -w -t 60 start >&2; then
            started=1
            break
        fi
        if port_listened "$PORT" && [ "$attempt" -lt 5 ]; then
            say "port $PORT was taken meanwhile; trying another"
            rm -f "$PORT_FILE"
            continue
        fi
        tail -n 30 "$LOG" >&2 2>/dev/null || true
        die "pg_ctl start failed"
    done
    [ "$started" = 1 ] || die "could not start PostgreSQL"
fi

psql_admin() {
    as_pg "$BINDIR/psql" -X -h 127.0.0.1 -p "$PORT" -U postgres -d postgres -Atq "$@" </dev/null
}
[[ "$DB_NAME" =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || die "SWITCHYARD_TEST_PG_DB must be a plain identifier"
if [ "$(psql_admin -c "select 1 from pg_database where datname = '$DB_NAME'")" != 1 ]; then
    psql_admin -c "create database $DB_NAME" >&2 || die "could not create database $DB_NAME"
    say "created database $DB_NAME"
fi

URL="postgresql://postgres@127.0.0.1:$PORT/$DB_NAME"
"$BINDIR/psql" -X "$URL" -Atqc 'select 1' >/dev/null </dev/null 2>&1 ||
    die "$URL does not answer"
echo "$URL" >"$DIR/url"
say "ready: $URL (stop with: bash tests/pg/stop-postgres.sh $DIR)"
printf '%s\n' "$URL"
