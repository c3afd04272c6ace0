"""A small HTTP server on 127.0.0.1 that plays a webhook receiver in tests: it records every POST
(headers and raw body) and answers with the next status of a script (then the last one for ever)."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    at: float = 0.0  # time.monotonic() on arrival


@dataclass
class Receiver:
    statuses: list[int] = field(default_factory=lambda: [200])
    received: list[Received] = field(default_factory=list)
    url: str = ""
    port: int = 0  # 0: any free port

    def __enter__(self) -> Receiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                receiver.received.append(
                    Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body, time.monotonic())
                )
                status = receiver.statuses[min(len(receiver.received) - 1, len(receiver.statuses) - 1)]
                reply = b"ok" if status < 400 else b"receiver says no"
                self.send_response(status)
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args):
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/hook"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()
