"""A target to run inside a network namespace: ``python status_target.py PORT STATUS_FILE``.

It answers every request on ``127.0.0.1:PORT`` with the HTTP status written in STATUS_FILE,
read again on each request, so a test switches what one namespace sees by writing a file
(``locations.py``), with no connection into the namespace. Standard library only: it starts in
about 50 ms, and prints ``listening`` once its socket is bound.
"""

from __future__ import annotations

import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


def status(path: Path) -> int:
    """The status the file asks for; 200 while it is missing or not a status (a write in
    progress is replaced atomically, so that is only before the first write)."""
    try:
        value = int(path.read_text().strip())
    except (OSError, ValueError):
        return 200
    return value if 100 <= value <= 599 else 200


def serve(port: int, path: Path) -> None:
    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            code = status(path)
            body = f"{code}\n".encode()
            self.send_response(code)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        do_GET = do_HEAD = do_POST = _answer

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    print("listening", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    serve(int(sys.argv[1]), Path(sys.argv[2]))
