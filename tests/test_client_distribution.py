"""The agent-side client is its own distribution: `pip install ./clients/python` in a clean virtual
environment brings no Django, Celery, psycopg or torch, and the client's own tests pass there.

The package is copied first so that the build leaves nothing in the checkout. pip takes numpy,
pytest and hypothesis from the package index (the same registry `make install` uses).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import venv
from pathlib import Path

import pytest

CLIENT = Path(__file__).resolve().parents[1] / "clients" / "python"
SERVER_PACKAGES = {
    "django",
    "celery",
    "kombu",
    "psycopg",
    "psycopg2",
    "psycopg-binary",
    "torch",
    "sentence-transformers",
}


@pytest.mark.slow
def test_the_client_installs_alone_and_its_tests_pass_there(tmp_path):
    source = tmp_path / "client"
    shutil.copytree(
        CLIENT, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__", ".pytest_cache")
    )
    # the golden rendering files the client's tests share with the TypeScript client lie beside it
    shutil.copytree(CLIENT.parent / "golden", tmp_path / "golden")
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"

    install = subprocess.run(
        [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", f"{source}[test]"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert install.returncode == 0, install.stderr[-3000:]

    listed = subprocess.run([python, "-m", "pip", "list", "--format=json"], capture_output=True, text=True, check=True)
    installed = {package["name"].lower() for package in json.loads(listed.stdout)}
    assert "procmem-client" in installed
    assert not installed & SERVER_PACKAGES, f"the client pulled in {sorted(installed & SERVER_PACKAGES)}"

    # the console script of the agent repository's CI check is installed
    check = subprocess.run(
        [env_dir / "bin" / "procmem", "check", "--help"], capture_output=True, text=True, timeout=120
    )
    assert check.returncode == 0 and "--tools" in check.stdout and "--snapshot" in check.stdout, check.stderr

    # run the copied tests against the installed package, not against the checkout
    tests = subprocess.run(
        [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(source / "tests")],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
        env={"PATH": f"{env_dir / 'bin'}:/usr/bin:/bin", "HF_HUB_OFFLINE": "1"},
    )
    assert tests.returncode == 0, tests.stdout[-3000:] + tests.stderr[-2000:]
    assert " passed" in tests.stdout, tests.stdout[-500:]
