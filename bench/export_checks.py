"""Raw data out at scale: ``python -m bench.export_checks --rows 1000000``.

Writes ``--rows`` check rows for one monitor (COPY, 5 s apart: 58 days, inside a 90-day
retention), then streams them through a real ``monitor api`` process as CSV and as NDJSON
(``GET /api/v1/monitors/{id}/checks?format=...``), reading as fast as it can. Reports rows/s,
bytes, and the api process's RSS before, its peak (sampled every 50 ms) and the growth: flat
growth whatever ``--rows`` is the "constant memory" claim (``domain/exports.py``: keyset
batches of 2,000 rows). Uses the database of ``MONITOR_DATABASE_URL`` (its own account
``bench-export``, dropped at the end), loopback only.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import asyncpg

from bench import process
from bench.api import _started
from bench.database import BENCH_SECRET_KEY
from bench.proc import rss_kib
from monitor import db as monitor_db
from monitor.domain import keys as api_keys

ACCOUNT = "bench-export"
T0 = datetime(2026, 1, 1, tzinfo=UTC)


async def _load(conn: asyncpg.Connection, rows: int) -> tuple[int, int]:
    await conn.execute("DELETE FROM accounts WHERE name = $1", ACCOUNT)
    account = await conn.fetchval("INSERT INTO accounts (name) VALUES ($1) RETURNING id", ACCOUNT)
    mid = await conn.fetchval(
        """INSERT INTO monitors (account_id, name, url, type, interval_seconds, timeout_seconds, paused)
           VALUES ($1, 'bench', 'https://bench.example/', 'http', 30, 10, true) RETURNING id""",
        account,
    )
    step = 100_000
    for first in range(0, rows, step):
        records = [
            (T0 + timedelta(seconds=5 * i), mid, i % 50 != 0, 200 if i % 50 else 503, 42.0 + i % 17,
             None if i % 50 else "HTTP 503, \"unavailable\"", 3.0, 5.0, 9.0, 30.0)
            for i in range(first, min(rows, first + step))
        ]  # fmt: skip
        await conn.copy_records_to_table(
            "checks", records=records,
            columns=["time", "monitor_id", "ok", "status_code", "latency_ms", "error", "dns_ms",
                     "connect_ms", "tls_ms", "ttfb_ms"],
        )  # fmt: skip
    return account, mid


async def _stream(url: str, key: str, pid: int, fmt: str) -> dict[str, Any]:
    before = rss_kib(pid)
    peak, done = before, False

    async def sample() -> None:
        nonlocal peak
        while not done:
            peak = max(peak, rss_kib(pid))
            await asyncio.sleep(0.05)

    sampler = asyncio.create_task(sample())
    size, lines = 0, 0
    started = time.perf_counter()
    timeout = aiohttp.ClientTimeout(total=None, sock_read=60)
    async with aiohttp.ClientSession(timeout=timeout, trust_env=False) as session:
        async with session.get(
            url, params={"format": fmt}, headers={"Authorization": f"Bearer {key}"}
        ) as resp:
            assert resp.status == 200, await resp.text()
            async for chunk in resp.content.iter_chunked(1 << 16):
                size += len(chunk)
                lines += chunk.count(b"\n")
    seconds = time.perf_counter() - started
    done = True
    await sampler
    rows = lines - (1 if fmt == "csv" else 0)
    return {
        "format": fmt,
        "rows": rows,
        "seconds": round(seconds, 2),
        "rows_per_s": round(rows / seconds),
        "mib": round(size / 2**20, 1),
        "rss_before_mib": round(before / 1024, 1),
        "rss_peak_mib": round(peak / 1024, 1),
        "rss_growth_mib": round((peak - before) / 1024, 1),
    }


async def run(rows: int, port: int) -> list[dict[str, Any]]:
    dsn = os.environ["MONITOR_DATABASE_URL"]
    conn = await monitor_db.connect(dsn)
    proc = None
    try:
        loaded = time.perf_counter()
        account, mid = await _load(conn, rows)
        print(f"loaded {rows} rows in {time.perf_counter() - loaded:.1f} s", file=sys.stderr)
        key = (await api_keys.create_key(conn, account, "bench", role="viewer")).key
        env = {k: v for k, v in os.environ.items() if not k.startswith("MONITOR_")}
        env.update(
            MONITOR_DATABASE_URL=dsn,
            MONITOR_SECRET_KEY=BENCH_SECRET_KEY,
            MONITOR_API_HOST="127.0.0.1",
            MONITOR_API_PORT=str(port),
            MONITOR_LOG_FORMAT="json",
            MONITOR_LOG_LEVEL="info",
        )
        if "MONITOR_REDIS_URL" in os.environ:
            env["MONITOR_REDIS_URL"] = os.environ["MONITOR_REDIS_URL"]
        log = Path(tempfile.mkdtemp(prefix="bench-export-")) / "api.log"
        proc = process.spawn([sys.executable, "-m", "monitor", "api"], log=log, env=env)
        await process.wait_for(lambda: _started(log), within=60, what="api", proc=proc)
        url = f"http://127.0.0.1:{port}/api/v1/monitors/{mid}/checks"
        return [await _stream(url, key, proc.pid, fmt) for fmt in ("csv", "ndjson")]
    finally:
        if proc is not None:
            process.stop(proc)
        await conn.execute(
            "DELETE FROM checks WHERE monitor_id IN (SELECT m.id FROM monitors m JOIN accounts a"
            " ON a.id = m.account_id WHERE a.name = $1)",
            ACCOUNT,
        )
        await conn.execute("DELETE FROM accounts WHERE name = $1", ACCOUNT)
        await conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--port", type=int, default=18931)
    args = parser.parse_args()
    for r in asyncio.run(run(args.rows, args.port)):
        print(" ".join(f"{k}={v}" for k, v in r.items()))


if __name__ == "__main__":
    main()
