#!/usr/bin/env bash
# Local backing services for development and tests: PostgreSQL 17 + TimescaleDB and Redis.
#
#   scripts/services.sh up          start both (idempotent; ~0.1 s when already running)
#   scripts/services.sh down        stop what `up` started (by the PIDs in .state/*.pid only)
#   scripts/services.sh status      show what is running
#   scripts/services.sh tools       only what the servers run from (redis-server, the PostgreSQL
#                                   root), also when MONITOR_*_URL name services elsewhere: the
#                                   tests start private ones from them (tests/support/pg_cluster.py,
#                                   redis_sentinel.py, redis_server.py)
#   scripts/services.sh env run     print `export MONITOR_*_URL=...` for `make run`, and
#                                   MONITOR_SECRET_KEY from .state/secret.key (made once, 0600)
#   scripts/services.sh env test    ... for `make test` (database monitor_test, Redis db 1; no key:
#                                   the test processes get their own)
#
# Environment knobs:
#   MONITOR_PG_PORT (55432), MONITOR_REDIS_PORT (56379)   loopback ports
#   MONITOR_ROOTFS (/var/cache/monitor/rootfs-trixie-pg17) machine-wide cache of the PostgreSQL root
#   MONITOR_DEBIAN_MIRROR (http://deb.debian.org/debian)  where debootstrap fetches packages
#   MONITOR_STATE_DIR (<repo>/.state)                     data, logs and pidfiles
#
# Why a debootstrap root: TimescaleDB is not packaged for Debian 12 (the host), but Debian 13
# (trixie) ships postgresql-17 and postgresql-17-timescaledb. We bootstrap a minimal trixie root
# once per machine, and run its postgres chrooted, as the host's `postgres` system user, inside
# a private mount namespace in which the repo's .state/pg is bind-mounted. When postgres exits,
# the namespace and all its mounts disappear with it; nothing is ever mounted on the host.
#
# Needs root (chroot, mount namespaces, apt-get). Talks only to loopback and the Debian mirror.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STATE="${MONITOR_STATE_DIR:-$REPO_ROOT/.state}"
PG_PORT="${MONITOR_PG_PORT:-55432}"
REDIS_PORT="${MONITOR_REDIS_PORT:-56379}"
ROOTFS="${MONITOR_ROOTFS:-/var/cache/monitor/rootfs-trixie-pg17}"
MIRROR="${MONITOR_DEBIAN_MIRROR:-http://deb.debian.org/debian}"

PG_STATE="$STATE/pg"        # bind-mounted at $PG_MNT inside the root; owned by postgres
PG_MNT=/srv/monitor
PG_BIN=/usr/lib/postgresql/17/bin
PG_LOG="$PG_STATE/postgres.log"
PG_PIDFILE="$STATE/pg.pid"
REDIS_STATE="$STATE/redis"
REDIS_LOG="$REDIS_STATE/redis.log"
REDIS_PIDFILE="$STATE/redis.pid"
# The key that seals the secrets `make run`'s processes store (MONITOR_SECRET_KEY); kept with
# the data it seals, which is fine for a development database only.
SECRET_KEY_FILE="$STATE/secret.key"
ROOTFS_MARKER=".monitor-rootfs-complete"   # written last, before the atomic rename into place
DATABASES=(monitor monitor_test monitor_test_e2e)
# What /proc/PID/cmdline must contain for a pidfile's PID to count as ours (PID reuse guard).
PG_CMDLINE="postgres -D $PG_MNT/data"
REDIS_CMDLINE="redis-server 127.0.0.1:"

# chroot, debootstrap, etc. live in sbin, which a non-login PATH may lack.
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"

log() { printf 'services: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

for _port in "$PG_PORT" "$REDIS_PORT"; do
    if ! [[ "$_port" =~ ^[0-9]{1,5}$ ]] || ((_port == 0 || _port > 65535)); then
        die "invalid port '$_port'"
    fi
done

# Removed by the EXIT trap if set: the temporary directory of an unfinished bootstrap.
CLEANUP_DIR=""
cleanup() { [[ -z "$CLEANUP_DIR" ]] || rm -rf --one-file-system "$CLEANUP_DIR"; }
trap cleanup EXIT

# --- helpers -----------------------------------------------------------------------------------

# Exclusive lock on $STATE so that concurrent `up`/`down` calls (two terminals, make -j) serialise.
# The fd is closed in every long-lived child we spawn; otherwise postgres/redis would hold the
# lock for as long as they run.
LOCK_FD=""
take_state_lock() {
    mkdir -p "$STATE"
    exec {LOCK_FD}>>"$STATE/services.lock"
    if ! flock -n "$LOCK_FD"; then
        log "waiting for another scripts/services.sh to finish"
        flock -w 900 "$LOCK_FD" || die "timed out waiting for $STATE/services.lock"
    fi
}

# Install missing host packages (a fresh CI machine has neither). Arguments are command:package.
ensure_host_packages() {
    local spec missing=()
    for spec in "$@"; do
        command -v "${spec%%:*}" >/dev/null 2>&1 || missing+=("${spec#*:}")
    done
    ((${#missing[@]} == 0)) && return 0
    log "installing ${missing[*]} (apt-get)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >&2
    apt-get install -y -q "${missing[@]}" >&2
}

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Prints the PID from pidfile $1 if that process is alive and its command line matches $2
# (guards against a stale pidfile whose PID was reused by an unrelated process).
live_pid() {
    local pid
    [[ -f "$1" ]] || return 1
    pid="$(head -n1 "$1" 2>/dev/null | tr -dc 0-9)"
    [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null || return 1
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "$2" || return 1
    echo "$pid"
}

# wait_until SECONDS PID DESCRIPTION COMMAND...: poll COMMAND until it succeeds. Fails early if
# PID (when non-empty) exits, and at the deadline otherwise. Never a fixed long sleep.
wait_until() {
    local deadline pid="$2" what="$3"
    deadline=$(($(date +%s) + $1))
    shift 3
    until "$@" >/dev/null 2>&1; do
        if [[ -n "$pid" ]] && ! kill -0 "$pid" 2>/dev/null; then
            log "$what exited during start-up"
            return 1
        fi
        if (($(date +%s) >= deadline)); then
            log "$what not ready after the deadline"
            return 1
        fi
        sleep 0.1
    done
}

show_log_tail() { [[ -f "$1" ]] && { log "last lines of $1:"; tail -n 25 "$1" >&2; }; return 0; }

# --- the PostgreSQL root filesystem ------------------------------------------------------------

rootfs_ready() { [[ -f "$ROOTFS/$ROOTFS_MARKER" && -x "$ROOTFS$PG_BIN/postgres" ]]; }

# Bootstrap the trixie root into a temporary sibling directory and rename it into place, so an
# interrupted bootstrap can never be mistaken for a finished one. Serialised machine-wide.
build_rootfs() {
    local fd tmp start
    mkdir -p "$(dirname "$ROOTFS")"
    exec {fd}>>"$ROOTFS.lock"
    if ! flock -n "$fd"; then
        log "waiting for another bootstrap of $ROOTFS"
        flock -w 900 "$fd" || die "timed out waiting for $ROOTFS.lock"
    fi
    if rootfs_ready; then exec {fd}>&-; return 0; fi   # another clone built it meanwhile

    if [[ -e "$ROOTFS" ]]; then
        log "$ROOTFS has no completion marker (interrupted or foreign); replacing it"
        mv -T "$ROOTFS" "$ROOTFS.stale.$$"
        rm -rf --one-file-system "$ROOTFS.stale.$$"
    fi
    # Leftovers of bootstraps that were killed; safe to delete, we hold the lock.
    rm -rf --one-file-system "$ROOTFS".tmp.*

    tmp="$(mktemp -d "$ROOTFS.tmp.XXXXXX")"
    CLEANUP_DIR="$tmp"
    chmod 755 "$tmp"   # mktemp makes it 0700; it becomes "/" for the unprivileged postgres user
    start="$(now)"
    log "bootstrapping Debian trixie + postgresql-17-timescaledb into $ROOTFS (about a minute;"
    log "  log: $ROOTFS.debootstrap.log)"
    # In a private mount namespace so that the /proc and /sys debootstrap mounts in the target
    # vanish even if it is killed half-way.
    if ! unshare --mount --propagation private -- \
        debootstrap --variant=minbase --include=postgresql-17,postgresql-17-timescaledb \
        trixie "$tmp" "$MIRROR" >"$ROOTFS.debootstrap.log" 2>&1 {fd}>&-; then
        show_log_tail "$ROOTFS.debootstrap.log"
        die "debootstrap failed"
    fi
    [[ -x "$tmp$PG_BIN/postgres" ]] || die "bootstrap finished without $PG_BIN/postgres"
    rm -f "$tmp"/var/cache/apt/archives/*.deb      # ~110 MB of downloaded packages
    mkdir -p "$tmp$PG_MNT"
    chroot "$tmp" dpkg-query -W postgresql-17 postgresql-17-timescaledb >"$tmp/$ROOTFS_MARKER"
    mv -T "$tmp" "$ROOTFS"
    CLEANUP_DIR=""
    log "rootfs ready in $(elapsed "$start") s"
    exec {fd}>&-
}

# --- PostgreSQL --------------------------------------------------------------------------------

# Which host account postgres runs as: the host's own `postgres` system user (created if
# missing), with the root's /etc/passwd and /etc/group overlaid in the namespace so the same ids
# resolve to `postgres` inside too. Using the root's uid as-is would run the server under
# whichever unrelated host account happens to own that number (here: messagebus).
pg_ids() {
    if ! id -u postgres >/dev/null 2>&1; then
        log "creating the host system user postgres"
        useradd --system --user-group --home-dir /nonexistent --no-create-home \
            --shell /usr/sbin/nologin postgres
    fi
    PG_UID="$(id -u postgres)"
    PG_GID="$(id -g postgres)"
    mkdir -p "$STATE/pg-etc"
    awk -F: -v OFS=: -v u="$PG_UID" -v g="$PG_GID" '$1 == "postgres" { $3 = u; $4 = g } { print }' \
        "$ROOTFS/etc/passwd" >"$STATE/pg-etc/passwd"
    awk -F: -v OFS=: -v g="$PG_GID" '$1 == "postgres" { $3 = g } { print }' \
        "$ROOTFS/etc/group" >"$STATE/pg-etc/group"
    # Own the state dir (again, if the ids changed since it was made).
    mkdir -p "$PG_STATE"
    if [[ "$(stat -c %u:%g "$PG_STATE")" != "$PG_UID:$PG_GID" ]]; then
        chown -R "$PG_UID:$PG_GID" "$PG_STATE"
    fi
    chmod 700 "$PG_STATE"
}

# Command prefix that runs a program from the root's postgres bin dir, as postgres, chrooted, in a
# private mount namespace holding: $PG_STATE at $PG_MNT, the passwd/group overlay from pg_ids, a
# private tmpfs at /dev/shm (POSIX shared memory) and /proc. Every stage execs the next, so the PID
# of the started command is the PID of the program itself (for postgres: the postmaster).
# Usage: pg_in_root_prefix; "${PG_IN_ROOT[@]}" program args...
pg_in_root_prefix() {
    # shellcheck disable=SC2016  # the inner script expands its own positional parameters
    PG_IN_ROOT=(unshare --mount --propagation private -- /bin/bash -euc '
        state=$1 etc=$2 root=$3 mnt=$4 user=$5 bin=$6; shift 6
        mkdir -p "$root$mnt" "$root/dev/shm"
        mount --bind "$state" "$root$mnt"
        mount --bind "$etc/passwd" "$root/etc/passwd"
        mount --bind "$etc/group" "$root/etc/group"
        mount -t tmpfs -o mode=1777,nosuid,nodev shm "$root/dev/shm"
        mount -t proc -o nosuid,nodev,noexec proc "$root/proc"
        exec chroot --userspec="$user" "$root" /usr/bin/env -i LANG=C.UTF-8 PATH="$bin:/usr/bin:/bin" "$@"
    ' pg-in-root "$PG_STATE" "$STATE/pg-etc" "$ROOTFS" "$PG_MNT" "$PG_UID:$PG_GID" "$PG_BIN")
}

# The root's client tools over loopback TCP (the host may have no PostgreSQL client at all).
# As root in the chroot; no mounts needed. Clean environment: no PG* variables leak in.
pg_client() {
    local tool=$1; shift
    chroot "$ROOTFS" /usr/bin/env -i LANG=C.UTF-8 PGOPTIONS='-c client_min_messages=warning' \
        "$PG_BIN/$tool" -h 127.0.0.1 -p "$PG_PORT" -U postgres "$@" {LOCK_FD}>&-
}
pg_ready() { pg_client pg_isready -q -d postgres -t 2; }
psql_in() { local db=$1; shift; pg_client psql -X -q -w -v ON_ERROR_STOP=1 -d "$db" "$@"; }

pg_init() {
    [[ -f "$PG_STATE/data/PG_VERSION" ]] && return 0
    [[ -e "$PG_STATE/data" ]] && die "$PG_STATE/data exists but is not a PostgreSQL data directory"
    log "initialising the PostgreSQL data directory"
    # Into a scratch name first, renamed when complete: a killed initdb leaves no half-made "data".
    rm -rf "$PG_STATE/data.initdb"
    pg_in_root_prefix
    if ! "${PG_IN_ROOT[@]}" initdb -D "$PG_MNT/data.initdb" --username=postgres --auth=trust \
        --encoding=UTF8 --locale=C.UTF-8 >"$PG_STATE/initdb.log" 2>&1 {LOCK_FD}>&-; then
        show_log_tail "$PG_STATE/initdb.log"
        die "initdb failed"
    fi
    # Only loopback TCP, no passwords: this instance is for local development and tests only.
    cat >"$PG_STATE/data.initdb/pg_hba.conf" <<'EOF'
# Written by scripts/services.sh. Local dev/test instance: loopback TCP only, trust auth.
host    all    all    127.0.0.1/32    trust
EOF
    mv -T "$PG_STATE/data.initdb" "$PG_STATE/data"
}

pg_up() {
    local pid
    if pid="$(live_pid "$PG_PIDFILE" "$PG_CMDLINE")"; then
        log "postgres already running (pid $pid)"
        local port
        port="$(sed -n 4p "$PG_STATE/data/postmaster.pid" 2>/dev/null)"
        [[ "$port" == "$PG_PORT" ]] ||
            die "postgres is running on port ${port:-?}, not $PG_PORT; run '$0 down' first"
        ensure_databases
    else
        pg_ids
        pg_init
        # Adopt a postmaster whose pidfile of ours was lost; postgres' own lock file knows it.
        if pid="$(live_pid "$PG_STATE/data/postmaster.pid" "$PG_CMDLINE")"; then
            log "adopting running postgres (pid $pid)"
            echo "$pid" >"$PG_PIDFILE"
        else
            rm -f "$PG_PIDFILE" "$PG_STATE/data/postmaster.pid"   # stale: that process is gone
            port_in_use "$PG_PORT" &&
                die "port $PG_PORT is taken by another process; set MONITOR_PG_PORT"
            log "starting postgres on 127.0.0.1:$PG_PORT (log: $PG_LOG)"
            # setsid: own session, so a Ctrl-C meant for `make run` does not stop the database.
            # Settings are on the command line so that they always match this script.
            # Telemetry off: the instance must not phone home. A simple command with `&`: bash
            # forks once and execs setsid, which (not a group leader here) execs without forking.
            pg_in_root_prefix
            setsid "${PG_IN_ROOT[@]}" postgres -D "$PG_MNT/data" \
                -c listen_addresses=127.0.0.1 -c port="$PG_PORT" -c unix_socket_directories= \
                -c shared_preload_libraries=timescaledb -c timescaledb.telemetry_level=off \
                >>"$PG_LOG" 2>&1 </dev/null {LOCK_FD}>&- &
            pid=$!
            echo "$pid" >"$PG_PIDFILE"
        fi
    fi
    if ! wait_until 60 "$pid" postgres pg_ready; then
        show_log_tail "$PG_LOG"
        kill -0 "$pid" 2>/dev/null || rm -f "$PG_PIDFILE"
        die "postgres did not become ready on 127.0.0.1:$PG_PORT"
    fi
    # The postmaster's own lock file is authoritative; it equals $! because we exec all the way.
    pid="$(head -n1 "$PG_STATE/data/postmaster.pid")"
    echo "$pid" >"$PG_PIDFILE"
    ensure_databases
}

# Every database of DATABASES, with TimescaleDB; one query when they all exist (a checkout
# that adds a database to the list gets it from a postgres that is already running).
ensure_databases() {
    local db have
    have="$(psql_in postgres -tAc "SELECT string_agg(datname, ' ') FROM pg_database")"
    for db in "${DATABASES[@]}"; do
        if [[ " $have " != *" $db "* ]]; then
            log "creating database $db"
            psql_in postgres -c "CREATE DATABASE \"$db\""
            psql_in "$db" -c 'CREATE EXTENSION IF NOT EXISTS timescaledb'
        fi
    done
}

# --- Redis -------------------------------------------------------------------------------------

redis_ping() { [[ "$(redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping 2>/dev/null)" == PONG ]]; }

redis_up() {
    local pid
    if pid="$(live_pid "$REDIS_PIDFILE" "$REDIS_CMDLINE")"; then
        log "redis already running (pid $pid)"
        grep -q -- ":$REDIS_PORT" "/proc/$pid/cmdline" ||
            die "redis is running on another port than $REDIS_PORT; run '$0 down' first"
    else
        rm -f "$REDIS_PIDFILE"
        port_in_use "$REDIS_PORT" &&
            die "port $REDIS_PORT is taken by another process; set MONITOR_REDIS_PORT"
        mkdir -p "$REDIS_STATE"
        log "starting redis on 127.0.0.1:$REDIS_PORT (log: $REDIS_LOG)"
        # daemonize: redis forks, calls setsid and writes the pidfile once it is listening.
        # Loopback only; Redis 7 keeps CONFIG SET dir/dbfilename, DEBUG and MODULE disabled.
        redis-server --daemonize yes --bind 127.0.0.1 --port "$REDIS_PORT" --protected-mode yes \
            --pidfile "$REDIS_PIDFILE" --dir "$REDIS_STATE" --logfile "$REDIS_LOG" \
            --save '' --appendonly yes \
            --enable-protected-configs no --enable-debug-command no --enable-module-command no \
            </dev/null {LOCK_FD}>&-
    fi
    if ! wait_until 15 "" redis redis_ping; then
        show_log_tail "$REDIS_LOG"
        die "redis did not answer PING on 127.0.0.1:$REDIS_PORT"
    fi
    live_pid "$REDIS_PIDFILE" "$REDIS_CMDLINE" >/dev/null || die "redis answers but $REDIS_PIDFILE is not ours"
}

# --- commands ----------------------------------------------------------------------------------

# The host's Redis packages and the PostgreSQL root (built once per machine): what `up` runs the
# services from, and what the failover and restart tests run servers of their own from.
ensure_tools() {
    local pkgs=(redis-server:redis-server redis-cli:redis-tools)
    rootfs_ready || pkgs+=(debootstrap:debootstrap)
    ensure_host_packages "${pkgs[@]}"
    rootfs_ready || build_rootfs
}

cmd_tools() {
    ((EUID == 0)) || die "needs root (chroot, apt-get)"
    ensure_tools
}

cmd_up() {
    if [[ -n "${MONITOR_DATABASE_URL:-}" && -n "${MONITOR_REDIS_URL:-}" ]]; then
        log "MONITOR_DATABASE_URL and MONITOR_REDIS_URL are set: using those, provisioning nothing"
        return 0
    fi
    ((EUID == 0)) || die "needs root (chroot, mount namespaces, apt-get)"
    local start
    start="$(now)"
    ensure_tools
    take_state_lock
    redis_up
    pg_up
    log "up in $(elapsed "$start") s: postgres 127.0.0.1:$PG_PORT (databases ${DATABASES[*]}), redis 127.0.0.1:$REDIS_PORT"
}

# Stop one service by its pidfile only. $3 is the signal: postgres is stopped with SIGINT ("fast"
# shutdown, what `pg_ctl stop` uses), because its SIGTERM ("smart") waits for every client to
# disconnect, which a running `make run` never does. Redis saves and exits on SIGTERM.
stop_one() {
    local name=$1 pidfile=$2 sig=$3 pattern=$4 pid deadline
    if ! pid="$(live_pid "$pidfile" "$pattern")"; then
        if [[ -f "$pidfile" ]]; then log "$name: stale pidfile removed"; else log "$name: not running"; fi
        rm -f "$pidfile"
        return 0
    fi
    kill -s "$sig" "$pid"
    deadline=$(($(date +%s) + 30))
    while kill -0 "$pid" 2>/dev/null; do
        if (($(date +%s) >= deadline)); then
            log "$name (pid $pid) still running 30 s after SIG$sig; left alone, see its log"
            return 1
        fi
        sleep 0.1
    done
    rm -f "$pidfile"
    log "$name stopped (pid $pid)"
}

cmd_down() {
    take_state_lock
    local pg redis rc=0
    # Both at once: each takes about a second to flush and exit.
    stop_one postgres "$PG_PIDFILE" INT "$PG_CMDLINE" & pg=$!
    stop_one redis "$REDIS_PIDFILE" TERM "$REDIS_CMDLINE" & redis=$!
    wait "$pg" || rc=1
    wait "$redis" || rc=1
    return $rc
}

cmd_status() {
    local pid rc=0
    if pid="$(live_pid "$PG_PIDFILE" "$PG_CMDLINE")"; then
        echo "postgres: running, pid $pid, 127.0.0.1:$PG_PORT, data $PG_STATE/data"
    else
        echo "postgres: stopped"; rc=1
    fi
    if pid="$(live_pid "$REDIS_PIDFILE" "$REDIS_CMDLINE")"; then
        echo "redis:    running, pid $pid, 127.0.0.1:$REDIS_PORT, data $REDIS_STATE"
    else
        echo "redis:    stopped"; rc=1
    fi
    rootfs_ready && echo "rootfs:   $ROOTFS ($(tr '\n\t' ' =' <"$ROOTFS/$ROOTFS_MARKER"))" ||
        echo "rootfs:   not built ($ROOTFS)"
    return $rc
}

# A Fernet key (32 random bytes, url-safe base64), as `monitor secrets generate-key` prints.
# Made once, under the state lock, so two first runs at once agree on it.
secret_key() {
    if [[ ! -s "$SECRET_KEY_FILE" ]]; then
        take_state_lock
        if [[ ! -s "$SECRET_KEY_FILE" ]]; then
            (umask 077; head -c 32 /dev/urandom | base64 -w0 | tr '+/' '-_' >"$SECRET_KEY_FILE.tmp")
            mv -f "$SECRET_KEY_FILE.tmp" "$SECRET_KEY_FILE"
            log "made a secret key for make run: $SECRET_KEY_FILE"
        fi
    fi
    chmod 600 "$SECRET_KEY_FILE"
    cat "$SECRET_KEY_FILE"
}

cmd_env() {
    case "${1:-}" in
        run) echo "export MONITOR_DATABASE_URL=postgresql://postgres@127.0.0.1:$PG_PORT/monitor"
             echo "export MONITOR_REDIS_URL=redis://127.0.0.1:$REDIS_PORT/0"
             # Yours when you exported one (left as it is), else the one in the state dir.
             if [[ -z "${MONITOR_SECRET_KEY:-}" ]]; then
                 local key
                 key="$(secret_key)"
                 echo "export MONITOR_SECRET_KEY=$key"
             fi ;;
        test) echo "export MONITOR_DATABASE_URL=postgresql://postgres@127.0.0.1:$PG_PORT/monitor_test"
              echo "export MONITOR_REDIS_URL=redis://127.0.0.1:$REDIS_PORT/1" ;;
        *) die "usage: $0 env run|test" ;;
    esac
}

case "${1:-}" in
    up) cmd_up ;;
    down) cmd_down ;;
    status) cmd_status ;;
    tools) cmd_tools ;;
    env) cmd_env "${2:-}" ;;
    *) echo "usage: $0 up|down|status|tools|env run|test" >&2; exit 2 ;;
esac
