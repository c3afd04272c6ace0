"""A run ends with pytest's own exit code even when a live server's request thread is still inside
torch at the end (tests/conftest.py waits for those threads): without the wait the interpreter's
shutdown ends the thread in C++ code and the process aborts with exit 134 after every test passed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# a request the browser left behind: a daemon thread named as socketserver names a request's thread,
# embedding with MiniLM (torch) for a few seconds after the test that started it has passed
CASE = textwrap.dedent(
    """
    import threading, time
    from procmem_client import embeddings

    def test_leaves_a_request_computing():
        minilm = embeddings.backend("minilm")
        minilm.embed(["warm"])
        texts = ["a customer asks for a refund of an order that arrived broken " * 12] * 128
        def serve():
            until = time.monotonic() + 6
            while time.monotonic() < until:
                minilm.embed(texts)
        threading.Thread(target=serve, name="Thread-9 (process_request_thread)", daemon=True).start()
        time.sleep(1)
    """
)


def test_a_run_ends_with_pytests_code_while_a_request_thread_embeds():
    """Without the wait this run aborts (exit 134, "terminate called without an active exception"):
    seen three times in three here before tests/conftest.py waited for the request threads."""
    case = Path(tempfile.mkdtemp(prefix="exit_case_", dir=ROOT / "tests"))  # under tests/: its conftest applies
    try:
        (case / "test_case.py").write_text(CASE)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "clients" / "python")])}
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(case / "test_case.py")]
        run = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    finally:
        shutil.rmtree(case, ignore_errors=True)
    assert run.returncode == 0, (run.returncode, run.stdout[-2000:], run.stderr[-2000:])
    assert "1 passed" in run.stdout
