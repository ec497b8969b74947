"""A load generator for an HTTP endpoint over many paths: Debian's ``wrk``, driven by a Lua script.

wrk runs on one core with ``connections`` keep-alive connections, each sending its next request
when the last is answered, walking the paths round robin (each thread from its own place). A C
client: it costs a fraction of what the Python server it measures does per request, so the
server, not the client, is what saturates (an aiohttp client on the other core of this 2-core
machine could not keep 2,000 requests/s on schedule). The script counts the statuses and prints
the latency percentiles as one JSON line.

With ``pause_ms``, each connection waits that long after each answer before its next request
(wrk's ``delay()``): ``connections`` connections then send about ``connections / (pause +
latency)`` requests a second, a paced load below saturation. wrk has no open loop (wrk2 is not
in Debian): a server that falls behind slows its clients down rather than showing the delay as
latency, so a paced run is read with its achieved rate.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

# {paths file} {method} {body bytes} {pause ms}. Each thread starts at its own place in the paths;
# statuses are counted per thread and summed in done() (string keys: wrk copies tables).
_PAUSE_LUA = """
function delay()
  return pause
end
"""
_WRK_LUA = """
local paths, n, i, threads, made = {}, 0, 0, {}, 0
local method, body, pause = "GET", nil, 0
counts = {} -- global: done() reads each thread's with thread:get

function setup(thread)
  thread:set("id", made)
  made = made + 1
  table.insert(threads, thread)
end

function init(args)
  for line in io.lines(args[1]) do n = n + 1; paths[n] = line end
  method = args[2]
  local size = tonumber(args[3])
  if size > 0 then body = string.rep("x", size) end
  pause = tonumber(args[4])
  i = (id * 7919) % n
end

function request()
  i = i % n + 1
  if body then
    return wrk.format(method, paths[i], {["Content-Type"] = "text/plain"}, body)
  end
  return wrk.format(method, paths[i])
end

function response(status, headers, b)
  local key = tostring(status)
  counts[key] = (counts[key] or 0) + 1
end

function done(summary, latency, requests)
  local total = {}
  for _, t in ipairs(threads) do
    for k, v in pairs(t:get("counts") or {}) do total[k] = (total[k] or 0) + v end
  end
  local parts = {}
  for k, v in pairs(total) do table.insert(parts, string.format('"%s": %d', k, v)) end
  local e = summary.errors
  io.write(string.format(
    'WRK_JSON {"duration_us": %d, "requests": %d, "bytes": %d, "statuses": {%s}, ' ..
    '"errors": {"connect": %d, "read": %d, "write": %d, "timeout": %d}, ' ..
    '"latency_us": {"p50": %d, "p90": %d, "p99": %d, "p999": %d, "max": %d, "mean": %.1f}}\\n',
    summary.duration, summary.requests, summary.bytes, table.concat(parts, ", "),
    e.connect, e.read, e.write, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency:percentile(99.9), latency.max, latency.mean))
end
"""


def wrk_binary() -> str | None:
    return shutil.which("wrk") or (str(Path("/usr/bin/wrk")) if Path("/usr/bin/wrk").exists() else None)


def run_wrk(
    base_url: str,
    paths: Sequence[str],
    *,
    seconds: float,
    connections: int,
    workdir: Path,
    core: int | None,
    threads: int = 1,
    method: str = "GET",
    body_bytes: int = 0,
    pause_ms: int = 0,
    headers: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Run wrk for ``seconds`` against ``base_url`` + each of ``paths`` in turn; its figures.

    Returns ``requests``, ``seconds``, ``statuses`` (status → count), ``errors`` (socket
    errors by kind) and latency percentiles in ms. ``headers`` go with every request (wrk's
    ``-H``; not with a body, whose request carries its own).
    """
    binary = wrk_binary()
    if binary is None:
        raise RuntimeError("wrk not found: apt-get install wrk")
    script = workdir / "paths.lua"
    script.write_text(_WRK_LUA + (_PAUSE_LUA if pause_ms > 0 else ""))
    listed = workdir / "paths.txt"
    listed.write_text("".join(f"{p}\n" for p in paths))
    argv = [*(["taskset", "-c", str(core)] if core is not None else []), binary]
    argv += [
        "-t",
        str(threads),
        "-c",
        str(connections),
        "-d",
        f"{max(1, round(seconds))}s",
        "--timeout",
        "10s",
    ]
    for name, value in (headers or {}).items():
        argv += ["-H", f"{name}: {value}"]
    argv += ["-s", str(script), base_url, "--", str(listed), method, str(body_bytes), str(pause_ms)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=seconds + 60)
    line = next((x for x in done.stdout.splitlines() if x.startswith("WRK_JSON ")), None)
    if done.returncode != 0 or line is None:
        raise RuntimeError(f"wrk failed ({done.returncode}): {(done.stderr or done.stdout)[-1000:]}")
    raw = json.loads(line.removeprefix("WRK_JSON "))
    latency = {k: round(v / 1000, 2) for k, v in raw["latency_us"].items()}
    return {
        "requests": raw["requests"],
        "seconds": raw["duration_us"] / 1e6,
        "bytes": raw["bytes"],  # read, headers included
        "statuses": dict(sorted(raw["statuses"].items())),
        "errors": {k: v for k, v in raw["errors"].items() if v},
        "latency_ms": latency,
    }
