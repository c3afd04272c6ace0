"""The client package stands alone: importing it loads no Django, Celery, psycopg, torch or
sentence-transformers (the model is loaded only when a text is embedded, with the extra)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

FORBIDDEN = (
    "django",
    "celery",
    "kombu",
    "psycopg",
    "psycopg2",
    "torch",
    "sentence_transformers",
    "library",
    "reviews",
    "procmem_site",
)


def test_the_client_imports_without_the_server_or_the_model():
    code = (
        "import sys; import procmem_client, procmem_client.client, procmem_client.ranking, procmem_client.rendering, "
        "procmem_client.agent_checks, procmem_client.check_cli; "
        f"bad = sorted({{m.split('.')[0] for m in sys.modules}} & set({FORBIDDEN!r})); "
        "assert not bad, bad"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[1], capture_output=True, text=True
    )
    assert completed.returncode == 0, completed.stderr


def test_the_runtime_modules_import_without_the_server_or_the_model():
    """procmem-mcp, the async client and the framework providers (each with its extra installed)."""
    import importlib.util

    import pytest

    wanted = {
        "procmem_client.mcp_server": "mcp",
        "procmem_client.aio": "httpx",
        "procmem_client.openai_agents": "agents",
        "procmem_client.langchain": "langchain",
    }
    modules = [module for module, extra in wanted.items() if importlib.util.find_spec(extra) is not None]
    if not modules:
        pytest.skip("none of the [mcp], [async], [openai-agents], [langgraph] extras is installed")
    code = (
        f"import sys, importlib; [importlib.import_module(m) for m in {modules!r}]; "
        f"bad = sorted({{m.split('.')[0] for m in sys.modules}} & set({FORBIDDEN!r})); "
        "assert not bad, bad"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[1], capture_output=True, text=True
    )
    assert completed.returncode == 0, completed.stderr
