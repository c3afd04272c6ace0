"""The golden skill folders shared with the TypeScript client (clients/golden/skills/): the same
records and the same expected files are checked here and by `node --test` in clients/typescript.

`PROCMEM_UPDATE_GOLDEN=1` rewrites the expected folders from this renderer (the reference)."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import tarfile
from pathlib import Path

import pytest

from procmem_client.skill_rendering import content_sha256, render_skill, sha256_digest, skill_archive
from procmem_client.skills import read_skill_file, skill_name_to_id

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "skills"
UPDATE = os.environ.get("PROCMEM_UPDATE_GOLDEN") == "1"
CASES = json.loads((GOLDEN / "cases.json").read_text(encoding="utf-8"))["cases"]


def _written(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_each_record_renders_to_its_golden_folder(case):
    folder = render_skill(case["record"])
    expected = GOLDEN / "expected" / case["name"]
    if UPDATE:
        shutil.rmtree(expected, ignore_errors=True)
        for path, text in folder["files"].items():
            target = expected / folder["name"] / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(text.encode("utf-8"))
    assert [p.name for p in expected.iterdir()] == [folder["name"]]
    assert _written(expected / folder["name"]) == {p: t.encode("utf-8") for p, t in folder["files"].items()}


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_a_rendered_skill_reads_back_with_its_id_version_and_description(case):
    record = case["record"]
    folder = render_skill(record)
    data, body = read_skill_file(folder["files"]["SKILL.md"])
    assert data["name"] == folder["name"] and data["description"] == folder["description"]
    assert len(folder["description"].encode("utf-16-le")) // 2 <= 1024
    metadata = data["metadata"]
    assert metadata["procmem-id"] == record["id"] and metadata["procmem-version"] == str(record["version"])
    assert metadata["procmem-content-sha256"] == content_sha256(record)
    assert all(isinstance(value, str) for value in metadata.values())
    assert f"Procedure {record['id']} v{record['version']}" in body
    if not re.fullmatch(r".*-h[0-9a-z]{10}", folder["name"]):  # a shortened name keeps its id in metadata
        assert skill_name_to_id(folder["name"]) == record["id"]


def test_the_description_says_what_and_when_and_is_cut_within_the_limit():
    by_name = {c["name"]: render_skill(c["record"]) for c in CASES}
    refund = by_name["refund_over_limit"]["description"]
    assert refund.startswith("Refund over limit: a reviewed procedure of 4 steps with lookupOrder")
    assert "Use it when: The customer asks for money back" in refund
    cut = by_name["long_applies_when_cut"]["description"]
    assert cut.endswith("…") and len(cut.encode("utf-16-le")) // 2 <= 1024 < len(CASES[4]["record"]["appliesWhen"])
    assert "tool7 and 3 more" in cut


def test_the_archive_is_the_folder_at_its_root_and_the_same_bytes_every_time():
    folder = render_skill(CASES[1]["record"])
    archive = skill_archive(folder)
    assert archive == skill_archive(render_skill(CASES[1]["record"]))
    assert sha256_digest(archive).startswith("sha256:") and len(sha256_digest(archive)) == 71
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        members = {m.name: m for m in tar.getmembers()}
        assert set(members) == {"SKILL.md", "scripts/verify.sh"}
        assert members["scripts/verify.sh"].mode == 0o755 and members["SKILL.md"].mode == 0o644
        assert tar.extractfile("SKILL.md").read() == folder["files"]["SKILL.md"].encode()
