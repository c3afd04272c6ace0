"""The Agent Skills reference validator for the tests: npm `skills-ref` (tests/skills_ref, installed
by `make test`), run with node on skill folders."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from tests.conftest import _missing

SKILLS_REF = Path(__file__).resolve().parent / "skills_ref"


def skills_ref_errors(folders: list[Path]) -> dict[str, list[str]]:
    """{folder: the validator's errors} for each skill folder (an empty list: valid). Skips, or
    fails under REQUIRE_SERVICES=1, without node or without `npm ci` in tests/skills_ref."""
    if not shutil.which("node"):
        _missing("the skills tests need node (apt-get install -y nodejs)")
    if not (SKILLS_REF / "node_modules" / "skills-ref").exists():
        _missing("tests/skills_ref/node_modules is missing: `make test` runs `npm ci` there (make skills-ref)")
    done = subprocess.run(
        ["node", str(SKILLS_REF / "validate.mjs"), *map(str, folders)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def skills_ref_cli(folder: Path) -> subprocess.CompletedProcess:
    """`skills-ref validate FOLDER`, the command line a skill author runs."""
    return subprocess.run(
        ["node", str(SKILLS_REF / "node_modules" / "skills-ref" / "dist" / "cli.js"), "validate", str(folder)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
