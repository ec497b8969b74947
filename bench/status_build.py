"""One status page built again and again by the api's own ``StatusDesk``: how long a build takes,
how long it holds the event loop at a stretch, and how many statements it issues.

    python -m bench.status_build DSN SLUG BUILDS

Run by bench/status.py in a process of its own, from the directory of the code under test
(``--rev``), on uvloop as the api runs. The longest stall is what a visitor's request that
arrives during a build waits at most (beyond its own service): the build's longest stretch
without an ``await`` that lets the loop answer others, measured by a task that asks to wake
every millisecond. Prints one JSON object.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from typing import Any

from prometheus_client import CollectorRegistry


async def measure(dsn: str, slug: str, builds: int) -> dict[str, Any]:
    from monitor import db
    from monitor.status.service import StatusDesk

    pool = await db.create_pool(dsn, min_size=1, max_size=2)
    registry = CollectorRegistry()
    desk = StatusDesk(pool, 3600.0, registry)
    stalls: list[float] = []
    running = True

    async def ticker() -> None:
        while running:
            asked = time.perf_counter()
            await asyncio.sleep(0.001)
            stalls.append(time.perf_counter() - asked - 0.001)

    try:
        page = await desk.page(slug)  # the directory and a first build, untimed
        if page is None:
            raise RuntimeError(f"no page {slug!r}")

        def counted(name: str) -> float:
            return registry.get_sample_value(f"monitor_status_{name}_total", {"what": "page"}) or 0.0

        # From here: a connection's first statements (asyncpg's type introspection) are done.
        queries_before, builds_before = counted("queries"), counted("builds")
        task = asyncio.create_task(ticker())
        samples, longest = [], []
        for _ in range(builds):
            desk.pages.forget(slug)
            stalls.clear()
            started = time.perf_counter()
            await desk.page(slug)
            samples.append(1000 * (time.perf_counter() - started))
            longest.append(1000 * max(stalls, default=0.0))
        running = False
        await task
        queries, page_builds = counted("queries") - queries_before, counted("builds") - builds_before
        return {
            "builds": builds,
            "build_ms_p50": round(statistics.median(samples), 1),
            "build_ms_max": round(max(samples), 1),
            "loop_stall_ms_p50": round(statistics.median(longest), 1),
            "loop_stall_ms_max": round(max(longest), 1),
            "statements_per_page_build": round(queries / page_builds, 2) if page_builds else None,
            "html_bytes": len(page.html.content),
            "html_gzip_bytes": len(page.html.gzipped or b""),
            "json_bytes": len(page.json.content),
        }
    finally:
        await desk.close()
        await pool.close()


def main(argv: list[str]) -> int:
    import uvloop

    dsn, slug, builds = argv
    print(json.dumps(uvloop.run(measure(dsn, slug, int(builds)))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
