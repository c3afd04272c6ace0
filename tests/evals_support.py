"""Helpers for the eval tests: a small scripted HTTP server on 127.0.0.1 (an agent's eval endpoint
or an OpenAI-compatible chat-completions endpoint), Python runners the worker process can import,
and the demo candidate."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

DEMO_CANDIDATE_STEPS = [
    "Look up the order with lookupOrder({{order_id}}).",
    "Check the return window with checkReturnWindow({{order_id}}).",
    "Create an approval request with createApproval({{order_id}}).",
    "Tell the customer the expected wait with replyTemplates('approval_pending').",
]


def propose_demo_candidate(
    agent,
    key: str = "refund.over_limit",
    steps: list[str] | None = None,
    intent: str = "refund_over_limit",
    applies_when: str | None = None,
):
    """The mined refund candidate of the demo (as the miner proposes it: no human proposer)."""
    from library import services
    from library.models import Source

    steps = steps or DEMO_CANDIDATE_STEPS
    tools = [
        t
        for t in ("lookupOrder", "checkReturnWindow", "createApproval", "replyTemplates")
        if any(t in s for s in steps)
    ]
    return services.procedure_propose(
        agent=agent,
        intent=agent.intents.get(name=intent),
        key=key,
        applies_when=applies_when
        or "The customer asks for money back for an expensive order of hundreds of EUR, more than the agent may refund on its own.",
        steps=steps,
        required_tools=tools,
        forbidden_actions=["Do not promise a refund before the approval is granted."],
        source=Source.MINED,
        actor_label="miner",
    )


class ScriptedServer:
    """An HTTP server on 127.0.0.1 whose answers come from `respond(path, body, headers)`, which
    returns (status, body bytes or JSON-able, delay seconds). Every request is recorded."""

    def __init__(self, respond: Callable[[str, Any, dict], tuple[int, Any, float]]):
        self.respond = respond
        self.requests: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = raw
                server.requests.append({"path": self.path, "body": body, "headers": dict(self.headers)})
                status, payload, delay = server.respond(self.path, body, dict(self.headers))
                if delay:
                    time.sleep(delay)
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.httpd.block_on_close = False  # a handler still sleeping must not hold up the test
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> ScriptedServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


# --------------------------------------------------------------------------------------------- Python runners

CALLS: list[dict] = []


def recording_runner(*, case, instruction, procedures):
    """Passes every case it gets without the candidate's intent procedures; records each call."""
    CALLS.append({"case": case["id"], "procedures": [p["id"] for p in procedures]})
    from library.evals.simulator import simulate

    return simulate(case=case, procedures=procedures)


RECEIVED: list[dict] = []


def capturing_runner(*, case, instruction, procedures):
    """The demo simulator; keeps everything it received (instruction and procedure records)."""
    RECEIVED.append({"case": case, "instruction": instruction, "procedures": procedures})
    from library.evals.simulator import simulate

    return simulate(case=case, procedures=procedures)


def crashing_runner(*, case, instruction, procedures):
    raise RuntimeError("the agent under test crashed")


def slow_demo_runner(*, case, instruction, procedures):
    """The demo simulator, slowed down, writing its process id where the worker test can find it."""
    marker = os.environ.get("PROCMEM_TEST_PID_DIR")
    if marker:
        Path(marker, f"{os.getpid()}").write_text(str(case["id"]))
    time.sleep(float(os.environ.get("PROCMEM_TEST_RUNNER_SLEEP", "0.3")))
    from library.evals.simulator import simulate

    return simulate(case=case, procedures=procedures)


def coding_agent_runner(*, case, instruction, procedures):
    """A stand-in coding agent for evaluating a task-family procedure (library/coding/families.py):
    without a procedure that names a verify command it first runs the tests the way that fails in
    the SWE-bench containers (`python3 -m django.test <file>`), then the repository's runner; with
    one it runs the procedure's verify command at once."""
    verify = next((p.get("verifyCommand") for p in procedures if p.get("verifyCommand")), "")
    calls = [] if verify else [{"name": "django_test", "args": {"command": "python3 -m django.test tests/x/tests.py"}}]
    calls.append({"name": "runtests.py", "args": {"command": verify or "./tests/runtests.py x"}})
    return {"tool_calls": calls, "reply": "The change is in and the tests pass."}
