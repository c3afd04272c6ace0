"""The documentation cites only what is in the repository: no path of one machine or of the
team's private notes, and every relative link leads to a file of the checkout."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _documents() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "*.md"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    return [ROOT / name for name in listed if "node_modules" not in name]


def test_no_document_cites_a_machine_path_or_the_private_notes():
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()[:120]}"
        for path in _documents()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if re.search(r"/work/|(?<![\w-])notes/\w", line)
    ]
    assert found == []


def test_every_relative_link_leads_to_a_file_of_the_checkout():
    broken = []
    for path in _documents():
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", path.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", target):
                continue
            resolved = (path.parent / target).resolve()
            if not resolved.exists() or ROOT not in resolved.parents:
                broken.append(f"{path.relative_to(ROOT)}: {target}")
    assert broken == []
