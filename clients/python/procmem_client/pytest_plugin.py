"""A pytest plugin for the agent repository: the three checks of `procmem check` as assertions.

Switch it on in the agent's conftest.py (`pytest_plugins = ["procmem_client.pytest_plugin"]`) or
with `-p procmem_client.pytest_plugin`, then:

    def test_procmem_tools(procmem):
        procmem.check_tools("tools.txt")            # or "myagent.tools:TOOLS", "mcp:python -m myagent.mcp"

    def test_procmem_selection(procmem):
        procmem.check_selection("procmem/selection.yaml")

    def test_procmem_snapshot(procmem):
        procmem.check_snapshots("procmem/snapshots")    # `pytest --procmem-update` rewrites them

The library comes from --procmem-url/--procmem-agent/--procmem-token (default PROCMEM_URL,
PROCMEM_AGENT, PROCMEM_TOKEN) or --procmem-export DIR, read once per test session. A failing check
fails the test with the same lines `procmem check` prints (and the snapshot's diff).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .agent_checks import (
    CheckError,
    Library,
    Outcome,
    check_selection,
    check_snapshots,
    check_tools,
    export_library,
    live_library,
    load_tools,
)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("procmem", "procmem: the agent's procedure library")
    group.addoption("--procmem-url", help="procmem's address (default: PROCMEM_URL)")
    group.addoption("--procmem-agent", help="the agent (default: PROCMEM_AGENT)")
    group.addoption("--procmem-token", help="a read token (default: PROCMEM_TOKEN)")
    group.addoption("--procmem-export", type=Path, help="an export directory instead of a server")
    group.addoption(
        "--procmem-update", action="store_true", help="rewrite the rendering snapshots instead of comparing"
    )


class ProcmemChecks:
    """The fixture's object: each method fails the test when any of its outcomes failed."""

    def __init__(self, config: pytest.Config) -> None:
        self._config = config
        self._library: Library | None = None
        self.update = bool(config.getoption("procmem_update"))

    @property
    def library(self) -> Library:
        if self._library is None:
            option = self._config.getoption
            try:
                if option("procmem_export"):
                    self._library = export_library(
                        directory=option("procmem_export"),
                        agent=option("procmem_agent") or os.environ.get("PROCMEM_AGENT"),
                    )
                else:
                    self._library = live_library(
                        url=option("procmem_url") or os.environ.get("PROCMEM_URL", ""),
                        agent=option("procmem_agent") or os.environ.get("PROCMEM_AGENT", ""),
                        token=option("procmem_token") or os.environ.get("PROCMEM_TOKEN", ""),
                    )
            except CheckError as exc:
                pytest.fail(f"procmem: {exc}", pytrace=False)
        return self._library

    def _assert(self, run) -> list[Outcome]:
        try:
            outcomes = run()
        except CheckError as exc:
            pytest.fail(f"procmem: {exc}", pytrace=False)
        failed = [o for o in outcomes if not o.ok]
        if failed:
            lines = []
            for outcome in failed:
                lines.append(f"FAIL {outcome.check}: {outcome.message}")
                lines.extend(f"    {line}" for line in outcome.detail.splitlines())
            pytest.fail(f"{len(failed)} of {len(outcomes)} failed:\n" + "\n".join(lines), pytrace=False)
        return outcomes

    def check_tools(self, spec: str | os.PathLike[str]) -> list[Outcome]:
        def run() -> list[Outcome]:
            names, label = load_tools(str(spec))
            return check_tools(self.library, names, label)

        return self._assert(run)

    def check_selection(self, path: str | os.PathLike[str]) -> list[Outcome]:
        return self._assert(lambda: check_selection(self.library, Path(path)))

    def check_snapshots(self, directory: str | os.PathLike[str]) -> list[Outcome]:
        return self._assert(lambda: check_snapshots(self.library, Path(directory), update=self.update))


@pytest.fixture(scope="session")
def procmem(pytestconfig: pytest.Config) -> ProcmemChecks:
    return ProcmemChecks(pytestconfig)
