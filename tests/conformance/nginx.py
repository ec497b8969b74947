"""Debian's nginx as a conformance target: the benchmark's runner (bench/nginx.py) with our own site.

It runs from its own prefix under a temporary directory, in the foreground as our child, never
as the system service; bench's ``Nginx`` brings the process handling (spawn, readiness through
``stub_status``, stop by PID). Only the configuration differs, hence ``start`` here.
"""

from __future__ import annotations

import gzip
from pathlib import Path

from bench.nginx import Nginx, free_port

# One line each: what the table asks nginx for. Directives are nginx 1.22's (Debian 12).
_SITE = """\
daemon off;
master_process on;
worker_processes 1;
pid {root}/nginx.pid;
error_log {root}/error.log warn;
events {{
    worker_connections 256;
}}
http {{
    access_log off;
    types {{
        text/html html;
        application/json json;
        application/octet-stream bin;
    }}
    default_type application/octet-stream;
    client_body_temp_path {root}/tmp/body;
    proxy_temp_path {root}/tmp/proxy;
    fastcgi_temp_path {root}/tmp/fastcgi;
    uwsgi_temp_path {root}/tmp/uwsgi;
    scgi_temp_path {root}/tmp/scgi;
    server {{
        listen 127.0.0.1:{port};
        listen [::1]:{port};
        root {root}/www;
        location / {{
            index index.html;
        }}
        location = /status/500 {{
            return 500;
        }}
        location = /no-content {{
            return 204;
        }}
        location = /not-modified {{
            return 304;
        }}
        location = /redirect/relative {{
            absolute_redirect off;
            return 302 /;
        }}
        location = /redirect/absolute {{
            return 301 /;
        }}
        location = /redirect/loop {{
            return 302 /redirect/loop;
        }}
        location = /redirect/https {{
            return 301 https://127.0.0.1:{tls_port}/;
        }}
        location = /redirect/private {{
            return 302 /private/;
        }}
        location = /redirect/other-origin {{
            return 302 {other_origin}/no-auth;
        }}
        location /private/ {{
            auth_basic "monitor";
            auth_basic_user_file {root}/htpasswd;
        }}
        location /gzip-always/ {{
            gzip_static always;
        }}
        location = /big-cookie {{
            set $kb4 "{four_kb}";
            set $kb40 "$kb4$kb4$kb4$kb4$kb4$kb4$kb4$kb4$kb4$kb4";
            add_header Set-Cookie "session=$kb40; Path=/; HttpOnly";
            return 200 "cookie set\\n";
        }}
        location = /many-headers {{
{many_headers}
            return 200 "many headers\\n";
        }}
        location = /json/ok {{
            default_type application/json;
            return 200 '{{"status": "ok", "count": 3, "items": ["db", "cache"]}}';
        }}
        location = /json/degraded {{
            default_type application/json;
            return 200 '{{"status": "degraded", "count": 0, "items": []}}';
        }}
    }}
    server {{
        listen 127.0.0.1:{h2c_port} http2;
        location / {{
            return 200 "h2c only\\n";
        }}
    }}
    server {{
        listen 127.0.0.1:{tls_port} ssl http2;
        ssl_certificate {cert};
        ssl_certificate_key {key};
        root {root}/www;
        location / {{
            index index.html;
        }}
    }}
    server {{
        listen 127.0.0.1:{mtls_port} ssl;
        ssl_certificate {cert};
        ssl_certificate_key {key};
        ssl_client_certificate {ca};
        ssl_verify_client on;
        location / {{
            return 200 "members only\n";
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

WELCOME = b"""<!DOCTYPE html>
<html><head><title>Welcome to nginx!</title></head>
<body><h1>Welcome to nginx!</h1><p>If you see this page, the nginx web server is working.</p></body>
</html>
"""
BIG_FILE_BYTES = 2 * 1024 * 1024  # over the default 1 MiB cap
BIG_HEAD_MARK = b"BEGIN-MARKER"
BIG_TAIL_MARK = b"END-MARKER"
BASIC_USER, BASIC_PASSWORD = "monitor", "correct horse"
MANY_HEADERS = 200


class SiteNginx(Nginx):
    """nginx serving the table's site; ``url`` (bench's) is the plain port on 127.0.0.1."""

    def __init__(self, root: Path, *, cert: Path, key: Path, ca: Path, other_origin: str) -> None:
        super().__init__(root, core=None)
        self.cert, self.key, self.ca, self.other_origin = cert, key, ca, other_origin
        self.h2c_port = 0
        self.tls_port = 0
        self.mtls_port = 0

    def _prepare(self) -> None:
        self._write_site()

    def _pick_ports(self) -> None:
        super()._pick_ports()
        self.h2c_port, self.tls_port, self.mtls_port = free_port(), free_port(), free_port()

    def _config(self) -> str:
        many = "\n".join(
            f'            add_header X-Field-{n} "value-{n}";' for n in range(1, MANY_HEADERS + 1)
        )
        return _SITE.format(
            root=self.root,
            port=self.port,
            status_port=self.status_port,
            h2c_port=self.h2c_port,
            tls_port=self.tls_port,
            cert=self.cert,
            key=self.key,
            ca=self.ca,
            mtls_port=self.mtls_port,
            other_origin=self.other_origin,
            four_kb="c" * 4000,
            many_headers=many,
        )

    def _write_site(self) -> None:
        www = self.root / "www"
        for sub in ("private", "gzip-always"):
            (www / sub).mkdir(parents=True, exist_ok=True)
        (www / "index.html").write_bytes(WELCOME)
        (www / "private" / "index.html").write_bytes(b"<h1>Members only</h1>\n")
        # gzip_static always: the .gz file is sent whatever the request's Accept-Encoding.
        (www / "gzip-always" / "page.html.gz").write_bytes(gzip.compress(b"<h1>Compressed welcome</h1>\n"))
        filler = BIG_FILE_BYTES - len(BIG_HEAD_MARK) - len(BIG_TAIL_MARK) - 2
        big = BIG_HEAD_MARK + b"\n" + b"." * filler + b"\n" + BIG_TAIL_MARK
        (www / "big.bin").write_bytes(big)
        (self.root / "htpasswd").write_text(f"{BASIC_USER}:{{PLAIN}}{BASIC_PASSWORD}\n")
