#!/usr/bin/env bash
# `make test`'s pytest: the end-to-end tests (tests/e2e, which wait on real time: reminder
# spacing, maintenance windows, flap windows) run beside the rest, each stream with a database
# and a Redis index of its own, so the suite takes about as long as its longer half instead of
# both (measured in the closing note of issue 14: about 15 min in one stream on 2 cores).
#
#   scripts/test.sh                  both streams; the e2e stream's output is shown when it ends
#   scripts/test.sh ARGS...          one pytest with these arguments (PYTEST_ARGS), as before
#
# Expects the services up and MONITOR_DATABASE_URL / MONITOR_REDIS_URL of the test database
# (the Makefile's load_env); the e2e stream uses the same server with the database
# monitor_test_e2e and the next Redis index.
set -uo pipefail

cd "$(dirname "$0")/.."
PYTEST=".venv/bin/pytest"
# Every skip fails here unless no install can avoid it (tests/support/skips.py): the Makefile
# installed what the tests need, so a skip would only hide a test. TEST_STRICT_SKIPS=0 to relax.
export TEST_STRICT_SKIPS="${TEST_STRICT_SKIPS:-1}"
# `ip` (the network-namespace tests) lives in sbin, which a non-login PATH may lack.
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"

if (($#)); then
    exec "$PYTEST" "$@"
fi

: "${MONITOR_DATABASE_URL:?MONITOR_DATABASE_URL is not set (run through make test)}"
: "${MONITOR_REDIS_URL:?MONITOR_REDIS_URL is not set (run through make test)}"
e2e_db="${MONITOR_DATABASE_URL%/*}/monitor_test_e2e"
redis_index="${MONITOR_REDIS_URL##*/}"
e2e_redis="${MONITOR_REDIS_URL%/*}/$((redis_index + 1))"
mkdir -p .state
e2e_log=".state/test-e2e.log"

# The e2e database beside the test one: services.sh makes it, a server of your own gets it
# here (CREATE DATABASE); where it cannot be made, everything runs in one stream as before.
make_db='
import asyncio, sys
import asyncpg

async def main(url: str, name: str) -> None:
    conn = await asyncpg.connect(url)
    try:
        if not await conn.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", name):
            await conn.execute(f"CREATE DATABASE \"{name}\"")
    finally:
        await conn.close()

asyncio.run(main(*sys.argv[1:]))
'
if ! .venv/bin/python -c "$make_db" "$MONITOR_DATABASE_URL" monitor_test_e2e ||
    ! MONITOR_DATABASE_URL="$e2e_db" .venv/bin/monitor migrate >/dev/null; then
    echo "pytest: no database $e2e_db for the e2e tests; running everything in one stream"
    exec "$PYTEST"
fi
echo "pytest: tests/e2e beside the rest (its output: $e2e_log, shown when it ends)"
MONITOR_DATABASE_URL="$e2e_db" MONITOR_REDIS_URL="$e2e_redis" \
    "$PYTEST" -p no:cacheprovider tests/e2e >"$e2e_log" 2>&1 &
e2e_pid=$!
# The e2e stream ends with this script, whichever way it ends.
trap 'kill "$e2e_pid" 2>/dev/null' EXIT

"$PYTEST" --ignore=tests/e2e
rest=$?
wait "$e2e_pid"
e2e=$?
trap - EXIT
echo
echo "===== tests/e2e (exit $e2e) ====="
if ((e2e)); then
    cat "$e2e_log"
else
    tail -n 5 "$e2e_log"
fi
((rest == 0 && e2e == 0))
