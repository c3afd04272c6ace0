"""The GitHub Actions workflow a fork gets runs the same checks as our own CI: `.ci/run`, with
PostgreSQL and Redis as service containers on the addresses `.ci/run` checks."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]


def test_the_workflow_runs_ci_run_with_postgres_and_redis():
    workflow = yaml.safe_load((REPO / ".github/workflows/ci.yml").read_text())
    job = workflow["jobs"]["test"]
    services = job["services"]
    assert "5432:5432" in services["postgres"]["ports"]
    assert (
        services["postgres"]["env"]["POSTGRES_HOST_AUTH_METHOD"] == "trust"
    )  # .ci/run connects as postgres without a password
    assert "6379:6379" in services["redis"]["ports"]
    runs = [step.get("run", "") for step in job["steps"]]
    assert "bash .ci/run" in runs
    python = next(step for step in job["steps"] if step.get("uses", "").startswith("actions/setup-python"))
    assert python["with"]["python-version"] == "3.11"


def test_ci_run_looks_for_the_services_where_the_workflow_puts_them():
    script = (REPO / ".ci/run").read_text()
    assert re.search(r"pg_isready -h 127\.0\.0\.1 -p 5432", script)
    assert re.search(r"redis-cli -h 127\.0\.0\.1 -p 6379", script)
    assert "REQUIRE_SERVICES=1" in script and "make test" in script
