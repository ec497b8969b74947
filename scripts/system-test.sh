#!/usr/bin/env bash
# make test-system: the install guide (docs/install.md) run for real, in a booted Debian 13 container.
#
# 1. A Debian trixie root with systemd, built once per machine (debootstrap, then the guide's own
#    `packages` block run in it) and cached in $MONITOR_SYSTEM_ROOTFS; each run boots a copy of it.
# 2. The release, as the guide's step 1 makes it: sdist, wheel built from the sdist, and a
#    wheelhouse of the dependencies for the container's Python 3.13 (pip download on the host).
# 3. `systemd-nspawn --boot --private-network`: the container's systemd is its PID 1 and its only
#    network is its own loopback; commands run inside with `nsenter --all`.
# 4. Inside, every block of docs/install.md marked `<!-- test-system: NAME -->`, as written, then
#    the checks: the three units active and ready (Type=notify); a monitor created with curl gets
#    check rows, and so does a ping monitor (the unit has no capability: unprivileged ICMP); kill
#    -9 of each main process and systemd restarts it and checks resume; the guide's upgrade and
#    backup blocks; `systemd-analyze security` of each unit; `systemctl stop` of each in order,
#    exit 0 and `<name>.stopped clean=true`, the scheduler writing what it held; the guide's
#    restore block; a reboot, after which the enabled units start on their own.
# About two minutes with the cached root (one more to build it). Not part of `make test`.
#
# Needs root. Talks to the Debian mirror (building the cached root) and the package index (pip
# download) from the host only; nothing in the container reaches beyond its loopback.
#
# Environment knobs:
#   MONITOR_SYSTEM_ROOTFS (/var/cache/monitor/rootfs-trixie-systemd)  the cached, booted-from root
#   MONITOR_DEBIAN_MIRROR (http://deb.debian.org/debian)              where debootstrap fetches
#   MONITOR_SYSTEM_LOGS (/var/tmp/monitor-system-test)                logs of the last run
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
GUIDE="$REPO_ROOT/docs/install.md"
ROOTFS="${MONITOR_SYSTEM_ROOTFS:-/var/cache/monitor/rootfs-trixie-systemd}"
MIRROR="${MONITOR_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
LOGS="${MONITOR_SYSTEM_LOGS:-/var/tmp/monitor-system-test}"
MARKER=".monitor-system-rootfs"     # the packages block it was built with; written last
UNITS=(monitor-api monitor-scheduler monitor-alerter)
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"

T0=$(date +%s)
say() { printf '\n[%4ds] == %s\n' "$(($(date +%s) - T0))" "$*"; }
note() { printf '[%4ds]    %s\n' "$(($(date +%s) - T0))" "$*"; }
die() { printf '\nFAIL: %s\n' "$*" >&2; exit 1; }

((EUID == 0)) || die "needs root (debootstrap, systemd-nspawn, nsenter)"

# --- the guide's blocks ----------------------------------------------------------------------------

# The fenced block right after `<!-- test-system: NAME -->` in docs/install.md.
block() {
    awk -v name="$1" '
        $0 == "<!-- test-system: " name " -->" { armed = 1; next }
        armed && /^```/ { if (inside) exit; inside = 1; next }
        inside { print }
    ' "$GUIDE"
}
for name in wheelhouse packages timescaledb redis user-venv database units verify first-key upgrade backup restore; do
    [[ -n "$(block "$name")" ]] || die "docs/install.md has no block marked test-system: $name"
done

# --- host tools and the cached root ----------------------------------------------------------------

missing=()
command -v debootstrap >/dev/null || missing+=(debootstrap)
command -v systemd-nspawn >/dev/null || missing+=(systemd-container)
command -v nsenter >/dev/null || missing+=(util-linux)
if ((${#missing[@]})); then
    say "installing ${missing[*]} on the host (apt-get)"
    DEBIAN_FRONTEND=noninteractive apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
fi

WANT="$(block packages | sha256sum | cut -c1-16)"
rootfs_ready() { [[ -f "$ROOTFS/$MARKER" && "$(head -n1 "$ROOTFS/$MARKER")" == "$WANT" ]]; }

build_rootfs() {
    local tmp fd
    mkdir -p "$(dirname "$ROOTFS")"
    exec {fd}>>"$ROOTFS.lock"
    flock -w 900 "$fd" || die "timed out waiting for $ROOTFS.lock"
    if rootfs_ready; then exec {fd}>&-; return 0; fi
    rm -rf --one-file-system "$ROOTFS".tmp.* "$ROOTFS"
    tmp="$(mktemp -d "$ROOTFS.tmp.XXXXXX")"
    chmod 755 "$tmp"
    say "bootstrapping Debian trixie with systemd into $ROOTFS (once; log $ROOTFS.log)"
    unshare --mount --propagation private -- debootstrap --variant=minbase \
        --include=systemd,systemd-sysv,dbus trixie "$tmp" "$MIRROR" >"$ROOTFS.log" 2>&1 {fd}>&- ||
        { tail -n 20 "$ROOTFS.log"; die "debootstrap failed"; }
    say "the guide's packages block in the root (with the host's network; not booted)"
    block packages | systemd-nspawn -q -D "$tmp" --register=no --keep-unit --resolv-conf=replace-host \
        --pipe /usr/bin/env DEBIAN_FRONTEND=noninteractive /bin/bash -euxo pipefail >>"$ROOTFS.log" 2>&1 {fd}>&- ||
        { tail -n 20 "$ROOTFS.log"; die "installing the packages failed"; }
    chroot "$tmp" apt-get clean
    { echo "$WANT"; chroot "$tmp" dpkg-query -W postgresql-17 postgresql-17-timescaledb redis-server python3 systemd; } \
        >"$tmp/$MARKER"
    mv -T "$tmp" "$ROOTFS"
    exec {fd}>&-
}

rootfs_ready || build_rootfs
say "cached root: $ROOTFS"
sed 1d "$ROOTFS/$MARKER" | while read -r pkg ver; do note "$pkg $ver"; done

# --- this run's directory, container and clean-up ----------------------------------------------------

WORK="$(mktemp -d /var/tmp/monitor-system-test.run.XXXXXX)"
NSPAWN_PID=""
INIT_PID=""
rm -rf "$LOGS"
mkdir -p "$LOGS"

# Power the container off from inside, and wait for the systemd-nspawn we started to exit (kill
# that one PID if it does not). The journal is kept in $LOGS first.
poweroff() {
    [[ -n "$NSPAWN_PID" ]] || return 0
    if [[ -n "$INIT_PID" ]] && kill -0 "$NSPAWN_PID" 2>/dev/null; then
        # The journal is persistent (/var/log/journal): the last dump holds every boot.
        inside 'journalctl --no-pager -o short-precise' >"$LOGS/journal.txt" 2>&1
        inside 'cat /var/log/postgresql/postgresql-17-main.log' >"$LOGS/postgresql.log" 2>&1
        inside 'systemctl poweroff' >/dev/null 2>&1
    fi
    for _ in $(seq 300); do kill -0 "$NSPAWN_PID" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$NSPAWN_PID" 2>/dev/null; then
        note "container still up 30 s after poweroff; killing systemd-nspawn ($NSPAWN_PID)"
        kill "$NSPAWN_PID"; sleep 2; kill -9 "$NSPAWN_PID" 2>/dev/null
    fi
    wait "$NSPAWN_PID" 2>/dev/null
    NSPAWN_PID="" INIT_PID=""
}

cleanup() {
    local rc=$?
    set +e
    poweroff
    rm -rf --one-file-system "$WORK"
    ((rc == 0)) && echo "PASS (logs in $LOGS)" || echo "FAILED (logs in $LOGS)" >&2
    exit "$rc"
}
trap cleanup EXIT

# Run a bash script inside the container (its namespaces, its root, a clean environment).
inside() {
    nsenter --target "$INIT_PID" --all -- /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin /bin/bash -euo pipefail -c "cd /; $1"
}
# A guide block, echoed then run inside, its output indented.
run_block() {
    say "docs/install.md, block '$1'"
    block "$1" | sed 's/^/    $ /'
    # pip's line per package is left out.
    inside "$(block "$1")${2:+
$2}" 2>&1 | { grep -Ev '^(Processing |Requirement already satisfied|Looking in links)' || true; } |
        sed 's/^/    | /'
}
# wait_for SECONDS DESCRIPTION SCRIPT: poll SCRIPT inside until it succeeds.
wait_for() {
    local deadline=$(($(date +%s) + $1)) what=$2
    until inside "$3" >/dev/null 2>&1; do
        (($(date +%s) < deadline)) || die "$what: not within $1 s"
        sleep 0.5
    done
}
psql_count() { inside "runuser -u postgres -- psql -d monitor -tAc 'SELECT count(*) FROM checks'"; }
unit_props() { inside "systemctl show -p $2 $1.service" | tr '\n' ' '; }

# Boot $WORK/root; sets NSPAWN_PID and INIT_PID (the container's PID 1, as the host sees it).
boot() {
    local pid p deadline state=""
    systemd-nspawn -q -D "$WORK/root" --boot --private-network --register=no --keep-unit \
        --machine="monitor-st-$$" >>"$LOGS/console.log" 2>&1 </dev/null &
    NSPAWN_PID=$!
    # The container's PID 1 is the descendant of systemd-nspawn named systemd.
    for _ in $(seq 200); do
        for pid in $(pgrep -x systemd 2>/dev/null); do
            p=$pid
            while ((p > 1)); do
                if ((p == NSPAWN_PID)); then INIT_PID=$pid; break 2; fi
                p=$(awk '/^PPid:/ { print $2 }' "/proc/$p/status" 2>/dev/null || echo 0)
            done
        done
        [[ -n "$INIT_PID" ]] && break
        kill -0 "$NSPAWN_PID" 2>/dev/null || { cat "$LOGS/console.log"; die "systemd-nspawn exited"; }
        sleep 0.1
    done
    [[ -n "$INIT_PID" ]] || die "no systemd under systemd-nspawn ($NSPAWN_PID)"
    # Until PID 1 has its private socket, systemctl fails at once; then --wait waits for the boot.
    deadline=$(($(date +%s) + 90))
    until [[ "$state" =~ ^(running|degraded|maintenance|stopping)$ ]]; do
        (($(date +%s) < deadline)) || die "the container did not finish booting (state '$state'); see $LOGS/console.log"
        sleep 0.2
        state=$(inside 'timeout 60 systemctl is-system-running --wait' 2>/dev/null || true)
    done
    note "booted: container PID 1 is host PID $INIT_PID; system state: $state"
    [[ "$state" == running ]] || inside 'systemctl --failed --no-legend --no-pager' | sed 's/^/    failed: /'
    return 0
}

# --- the release ----------------------------------------------------------------------------------

say "the release: sdist, wheel from the sdist (python -m build), wheelhouse for Python 3.13"
mkdir -p "$WORK/dist"
"$REPO_ROOT/.venv/bin/python" -m build --outdir "$WORK/dist" "$REPO_ROOT" >"$LOGS/build.log" 2>&1 ||
    { tail -n 20 "$LOGS/build.log"; die "python -m build failed"; }
# The guide's `pip download` line, run where .venv and dist/ are this run's.
ln -s "$REPO_ROOT/.venv" "$WORK/.venv"
(cd "$WORK" && block wheelhouse | bash -euo pipefail) >"$LOGS/wheelhouse.log" 2>&1 ||
    { tail -n 20 "$LOGS/wheelhouse.log"; die "pip download failed"; }
ls "$WORK/dist" | sed 's/^/    /'
note "wheelhouse: $(ls "$WORK/dist/wheelhouse" | wc -l) wheels"
unzip -l "$WORK"/dist/monitor-*.whl | grep -c 'monitor/sql/.*\.sql' | xargs -I{} echo "    the wheel carries {} migrations"

# --- boot ----------------------------------------------------------------------------------------

say "copying the cached root; booting it (systemd-nspawn --boot --private-network)"
cp -a "$ROOTFS" "$WORK/root"
cp -a "$WORK/dist" "$WORK/root/root/dist"
boot
note "network interfaces in the container: $(inside "ls /sys/class/net | tr '\n' ' '")"

# --- the guide, step by step ----------------------------------------------------------------------

say "docs/install.md, block 'packages': run in the cached root when it was built (the container has no network)"
block packages | sed 's/^/    $ /'
inside 'dpkg-query -W postgresql-17 postgresql-17-timescaledb redis-server python3 python3-venv curl' | sed 's/^/    | /'
run_block timescaledb
run_block redis
run_block user-venv
run_block database
say "test settings appended to /etc/monitor/monitor.env: the target is on loopback, 5 s checks, and results
    wait in memory for 10 s (so a stop has rows to write)"
inside 'cat >>/etc/monitor/monitor.env <<EOF
MONITOR_ALLOW_CIDRS=127.0.0.0/8
MONITOR_MIN_INTERVAL_SECONDS=5
MONITOR_WRITE_INTERVAL_SECONDS=10
EOF
stat -c "    %A %U:%G %n" /etc/monitor/monitor.env; grep -v PASSWORD /etc/monitor/monitor.env | sed -E "s/:[0-9a-f]{48}@/:***@/; s/^(MONITOR_SECRET_KEY=).+/\1***/; s/^/    /"'
run_block units
run_block verify
run_block first-key 'printf %s "$KEY" >/root/.test-key'

# --- all three ready -------------------------------------------------------------------------------

all_ready() {
    local u props
    for u in "${UNITS[@]}"; do
        props=$(unit_props "$u" Type,ActiveState,SubState,StatusText,MainPID)
        note "$u: $props"
        [[ "$props" == *ActiveState=active* && "$props" == *SubState=running* && "$props" == *"StatusText=${u#monitor-} serving"* ]] ||
            die "$u is not active and ready"
    done
}
say "the units: active and ready (Type=notify)"
all_ready

# --- a monitor and its checks ---------------------------------------------------------------------

say "a local HTTP target on 127.0.0.1:8000 (python3 -m http.server, a transient unit)"
start_target() {
    inside 'mkdir -p /srv/target && echo "<h1>Welcome</h1>" >/srv/target/index.html
    systemd-run --quiet --unit=test-target --property=DynamicUser=yes \
        /usr/bin/python3 -m http.server 8000 --bind 127.0.0.1 --directory /srv/target'
    wait_for 15 "the target" 'curl -fsS -o /dev/null http://127.0.0.1:8000/'
}
start_target

say "a monitor created with curl (API key from the CLI above)"
inside 'curl -sS -w "\n    HTTP %{http_code}\n" -X POST http://127.0.0.1:8080/api/v1/monitors \
    -H "Authorization: Bearer $(cat /root/.test-key)" -H "Content-Type: application/json" \
    -d "{\"name\": \"local target\", \"url\": \"http://127.0.0.1:8000/\", \"interval_seconds\": 5,
         \"timeout_seconds\": 3, \"assertions\": [{\"type\": \"keyword\", \"keyword\": \"Welcome\"}]}"' |
    sed 's/^/    /'
wait_for 60 "3 check rows" '(( $(runuser -u postgres -- psql -d monitor -tAc "SELECT count(*) FROM checks") >= 3 ))'
note "check rows (psql SELECT count(*) FROM checks): $(psql_count)"
inside "runuser -u postgres -- psql -d monitor -c 'SELECT time, monitor_id, ok, status_code, latency_ms, error FROM checks ORDER BY time DESC LIMIT 3'" |
    sed 's/^/    /'
inside 'curl -sS -H "Authorization: Bearer $(cat /root/.test-key)" http://127.0.0.1:8080/api/v1/monitors/1' |
    /usr/bin/python3 -c 'import json, sys; m = json.load(sys.stdin); print("    GET /api/v1/monitors/1: status", m["status"])'

# The hardened unit has no capability: a ping monitor works through unprivileged ICMP sockets,
# which systemd's sysctl defaults allow to every group (net.ipv4.ping_group_range).
say "a ping monitor of 127.0.0.1, pinged by the unit without CAP_NET_RAW"
inside 'echo "net.ipv4.ping_group_range = $(cat /proc/sys/net/ipv4/ping_group_range)"' | sed 's/^/    /'
inside 'curl -sS -w "\n    HTTP %{http_code}\n" -X POST http://127.0.0.1:8080/api/v1/monitors \
    -H "Authorization: Bearer $(cat /root/.test-key)" -H "Content-Type: application/json" \
    -d "{\"type\": \"ping\", \"name\": \"loopback ping\", \"host\": \"127.0.0.1\", \"interval_seconds\": 5,
         \"timeout_seconds\": 3}"' | sed 's/^/    /'
ping_rows() { inside "runuser -u postgres -- psql -d monitor -c 'SELECT time, ok, latency_ms, error, details FROM checks WHERE monitor_id = 2 ORDER BY time DESC LIMIT 3'"; }
deadline=$(($(date +%s) + 60))
until inside '(( $(runuser -u postgres -- psql -d monitor -tAc "SELECT count(*) FROM checks WHERE monitor_id = 2 AND ok") >= 1 ))' >/dev/null 2>&1; do
    (($(date +%s) < deadline)) || { ping_rows | sed 's/^/    /'; die "an ok ping check: not within 60 s"; }
    sleep 0.5
done
ping_rows | sed 's/^/    /'

# --- kill -9 and restart ---------------------------------------------------------------------------

say "kill -9 of each unit's main process: systemd restarts it"
for u in "${UNITS[@]}"; do
    old=$(inside "systemctl show -p MainPID --value $u.service")
    inside "kill -9 $old"
    wait_for 30 "$u restarted" "pid=\$(systemctl show -p MainPID --value $u.service);
        [[ \$pid != 0 && \$pid != $old ]] && [[ \$(systemctl show -p ActiveState --value $u.service) == active ]]"
    props=$(unit_props "$u" MainPID,ActiveState,SubState,NRestarts,StatusText)
    note "$u: killed MainPID=$old -> $props"
done
before=$(psql_count)
wait_for 60 "checks resuming" "(( \$(runuser -u postgres -- psql -d monitor -tAc 'SELECT count(*) FROM checks') >= $before + 2 ))"
note "checks resume: $before -> $(psql_count) rows"
inside 'curl -fsS -o /dev/null -w "    api after restart: GET /api/v1/monitors/1 -> HTTP %{http_code}\n" \
    -H "Authorization: Bearer $(cat /root/.test-key)" http://127.0.0.1:8080/api/v1/monitors/1'

# --- upgrade and backup, as the guide says ---------------------------------------------------------

run_block upgrade
for u in "${UNITS[@]}"; do note "$u: $(unit_props "$u" ActiveState,SubState,StatusText)"; done
before=$(psql_count)
wait_for 60 "checks after the upgrade" "(( \$(runuser -u postgres -- psql -d monitor -tAc 'SELECT count(*) FROM checks') >= $before + 1 ))"
note "checks after the upgrade: $before -> $(psql_count) rows"
run_block backup 'ls -l /var/backups/monitor/; cat /var/backups/monitor/*.timescaledb-version'
at_backup=$(psql_count)

say "PostgreSQL's log: warnings and errors, counted (informational)"
inside "grep -hE '(WARNING|ERROR|FATAL):' /var/log/postgresql/postgresql-17-main.log | sed -E 's/^[0-9-]+ [0-9:.]+ UTC \[[0-9]+\] //' | sort | uniq -c" |
    sed 's/^/    /' || note "none"

# --- hardening ---------------------------------------------------------------------------------------

say "systemd-analyze security (exposure: 0 is the best, 10 the worst)"
for u in "${UNITS[@]}"; do
    inside "systemd-analyze security --no-pager $u.service" >"$LOGS/security-$u.txt" 2>&1 || true
    note "$(grep -o 'Overall exposure level.*' "$LOGS/security-$u.txt" || tail -n1 "$LOGS/security-$u.txt")"
done
note "what monitor-api.service still exposes (the same for the three; full tables in $LOGS):"
grep '✗' "$LOGS/security-monitor-api.txt" | sed -E 's/ +/ /g; s/^/      /' || true

# --- systemctl stop, in order ----------------------------------------------------------------------

say "systemctl stop of each unit, in order: exit 0 and one clean summary line"
for u in "${UNITS[@]}"; do
    name=${u#monitor-}
    since=$(inside 'date "+%Y-%m-%d %H:%M:%S"')
    if [[ $u == monitor-scheduler ]]; then
        # Stop while results wait in the writer's memory: the stop must write them.
        wait_for 30 "results in the writer's buffer" \
            "curl -fsS http://127.0.0.1:8081/metrics | grep -Eq '^monitor_write_buffered_rows [1-9]'"
        buffered=$(inside "curl -fsS http://127.0.0.1:8081/metrics" | awk '/^monitor_write_buffered_rows / { print int($2) }')
    fi
    before=$(psql_count)
    inside "systemctl stop $u.service"
    props=$(unit_props "$u" ActiveState,ExecMainStatus,ExecMainCode,Result)
    line=$(inside "journalctl -u $u.service --since '$since' -o cat --no-pager" |
        /usr/bin/python3 -c '
import json, sys
for raw in sys.stdin:
    try:
        r = json.loads(raw)
    except ValueError:
        continue
    if r.get("event") == sys.argv[1] + ".stopped":
        print(r["event"], "clean=" + str(r.get("clean")).lower(), "seconds=" + str(r.get("seconds")),
              "abandoned=" + json.dumps(r.get("abandoned")))
' "$name")
    note "$u: $props"
    note "$u: log: ${line:-(no $name.stopped line)}"
    [[ "$props" == *ActiveState=inactive* && "$props" == *ExecMainStatus=0* && "$props" == *Result=success* ]] ||
        die "$u did not stop with exit 0"
    [[ "$line" == *"clean=true"* && "$line" == *"abandoned=[]"* ]] || die "$u did not stop clean"
    if [[ $u == monitor-scheduler ]]; then
        after=$(psql_count)
        note "check rows: $before in the database and $buffered in the scheduler's memory before the stop; $after after it"
        ((after >= before + buffered)) || die "the scheduler's stop lost check results"
    fi
done
# --- restore the backup, as the guide says ----------------------------------------------------------

run_block restore
all_ready
restored=$(psql_count)
note "check rows after the restore: $restored (about $at_backup when the dump was taken)"
inside 'curl -fsS -o /dev/null -w "    the key and the monitor restored: GET /api/v1/monitors/1 -> HTTP %{http_code}\n" \
    -H "Authorization: Bearer $(cat /root/.test-key)" http://127.0.0.1:8080/api/v1/monitors/1'
wait_for 60 "checks on the restored database" "(( \$(runuser -u postgres -- psql -d monitor -tAc 'SELECT count(*) FROM checks') >= $restored + 1 ))"
note "checks on the restored database: $restored -> $(psql_count) rows"

# --- a reboot: the enabled units start on their own, after PostgreSQL and Redis ------------------

say "reboot (poweroff, boot the same root again): the enabled units start at boot"
poweroff
boot
all_ready
start_target
before=$(psql_count)
wait_for 60 "checks after the reboot" "(( \$(runuser -u postgres -- psql -d monitor -tAc 'SELECT count(*) FROM checks') >= $before + 1 ))"
note "checks after the reboot: $before -> $(psql_count) rows"
inside 'systemd-analyze critical-chain --no-pager monitor-scheduler.service' 2>/dev/null | sed 's/^/    /' || true

say "all checks passed in $(($(date +%s) - T0)) s"
