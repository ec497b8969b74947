"""The benchmark's target: Debian's nginx on 127.0.0.1, answering ``200 ok`` to everything
but :data:`PAGE_PATH`, a static 100 KiB HTML page whose one keyword sits just before its end.

It runs from its own prefix in a temporary directory (config, pid file, logs, temp paths, the
page), in the foreground as our child, pinned to one core. A second listener serves
``stub_status``, whose counters give the TCP connections accepted and the requests served.
"""

from __future__ import annotations

import grp
import http.client
import itertools
import os
import pwd
import shutil
import signal
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path

from bench import process

# The keyword scenario's page. The keyword is in its last hundred bytes and nowhere else, so a
# keyword assertion has to read and search the whole page, as with a footer's copyright line.
PAGE_PATH = "/page-100k.html"
PAGE_BYTES = 100 * 1024
PAGE_KEYWORD = "monitor-bench-sentinel"

_CONFIG = """\
{user}daemon off;
master_process on;
worker_processes 1;
pid {root}/nginx.pid;
error_log {root}/error.log warn;
events {{
    worker_connections 8192;
    multi_accept on;
}}
http {{
    access_log off;
    default_type text/plain;
    client_body_temp_path {root}/tmp/body;
    proxy_temp_path {root}/tmp/proxy;
    fastcgi_temp_path {root}/tmp/fastcgi;
    uwsgi_temp_path {root}/tmp/uwsgi;
    scgi_temp_path {root}/tmp/scgi;
    server {{
        listen 127.0.0.1:{port} backlog=4096;
        location / {{
            return 200 "ok\\n";
        }}
        location = {page_path} {{
            root {root}/www;
            default_type "text/html; charset=utf-8";
        }}
    }}
    server {{
        listen 127.0.0.1:{status_port};
        location / {{
            stub_status;
        }}
    }}
}}
"""


@dataclass(frozen=True)
class Counters:
    """nginx's stub_status totals: connections accepted and requests served since start."""

    accepts: int
    requests: int


def page(size: int = PAGE_BYTES, keyword: str = PAGE_KEYWORD) -> bytes:
    """An HTML page of exactly ``size`` bytes: varied paragraphs, then ``keyword`` in the footer."""
    head = '<!doctype html>\n<html lang="en">\n<head><meta charset="utf-8"><title>Bench</title></head>\n'
    tail = f"<footer><p>{keyword}</p></footer>\n</body>\n</html>\n"
    text = head + "<body>\n"
    for i in itertools.count(1):
        paragraph = (
            f"<p>Section {i}: status {200 + i % 7}, latency {i * 37 % 1000} ms, region eu-{i % 5}. "
            "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor.</p>\n"
        )
        if len(text) + len(paragraph) + len(tail) > size:
            break
        text += paragraph
    text += " " * (size - len(text) - len(tail)) + tail  # padded to the exact size
    if len(text.encode()) != size or text.count(keyword) != 1:
        raise ValueError(f"cannot make a page of {size} bytes with {keyword!r} once near its end")
    return text.encode()


def _user_directive() -> str:
    """Started as root, nginx's workers would run as ``nobody``, who cannot read the page in our
    private (0700) temporary directory: keep them as the user we are. Otherwise nothing to say."""
    if os.geteuid() != 0:
        return ""
    return f"user {pwd.getpwuid(os.getuid()).pw_name} {grp.getgrgid(os.getgid()).gr_name};\n"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Nginx:
    """Start with :meth:`start`, stop with :meth:`stop` (by PID; safe to call twice)."""

    def __init__(self, root: Path, *, core: int | None = 1) -> None:
        self.root = root
        self.core = core
        self.port = 0
        self.status_port = 0
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    @property
    def page_url(self) -> str:
        """The 100 KiB page with :data:`PAGE_KEYWORD` near its end."""
        return f"http://127.0.0.1:{self.port}{PAGE_PATH}"

    def _prepare(self) -> None:
        """Write what the config serves (a subclass serves its own site)."""
        (self.root / "www").mkdir(exist_ok=True)
        (self.root / "www" / PAGE_PATH.lstrip("/")).write_bytes(page())

    def _pick_ports(self) -> None:
        self.port, self.status_port = free_port(), free_port()

    def _config(self) -> str:
        return _CONFIG.format(
            user=_user_directive(),
            root=self.root,
            port=self.port,
            status_port=self.status_port,
            page_path=PAGE_PATH,
        )

    async def start(self, attempts: int = 3) -> None:
        binary = shutil.which("nginx") or "/usr/sbin/nginx"
        (self.root / "tmp").mkdir(parents=True, exist_ok=True)
        self._prepare()
        for attempt in range(attempts):
            # A port picked free can be taken before nginx binds it: try again with others.
            self._pick_ports()
            conf = self.root / "nginx.conf"
            conf.write_text(self._config())
            log = self.root / "nginx.out"
            argv = [binary, "-p", str(self.root), "-e", str(self.root / "error.log"), "-c", str(conf)]
            self.proc = process.spawn(argv, log=log, core=self.core)
            try:
                await process.wait_for(self._answers, within=10, what="nginx", proc=self.proc)
                return
            except RuntimeError:
                self.stop()
                if attempt == attempts - 1:
                    tail = (self.root / "error.log").read_text(errors="replace")[-2000:]
                    raise RuntimeError(f"nginx did not start; error.log ends with:\n{tail}") from None

    def _answers(self) -> bool:
        try:
            self.counters()
            return True
        except OSError:
            return False

    def counters(self) -> Counters:
        """Read stub_status. Its own request is one connection and one request, counted."""
        # http.client, not urllib: no proxy variable from the environment can reroute this.
        conn = http.client.HTTPConnection("127.0.0.1", self.status_port, timeout=2)
        try:
            conn.request("GET", "/")
            text = conn.getresponse().read().decode()
        finally:
            conn.close()
        # Line 3 holds "accepts handled requests" totals.
        accepts, _handled, requests = (int(v) for v in text.splitlines()[2].split())
        return Counters(accepts, requests)

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def stop(self) -> None:
        if self.proc is not None:
            # SIGQUIT: graceful (workers finish their requests); SIGKILL after the bound.
            process.stop(self.proc, signal.SIGQUIT, timeout=10)
            self.proc = None
