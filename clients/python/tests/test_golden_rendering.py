"""The golden rendering files shared with the TypeScript client (clients/golden/rendering/): the
same records and the same expected text are checked here and by `node --test` in
clients/typescript, so both renderers produce the same bytes.

`PROCMEM_UPDATE_GOLDEN=1` rewrites the expected files from this renderer (the reference)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from procmem_client.rendering import render_block, render_procedure, render_procedures

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "rendering"
UPDATE = os.environ.get("PROCMEM_UPDATE_GOLDEN") == "1"


def _cases() -> list[dict]:
    return json.loads((GOLDEN / "cases.json").read_text(encoding="utf-8"))["cases"]


def _render(case: dict) -> tuple[str, dict]:
    records = case["records"]
    if case["render"] == "procedure":
        return render_procedure(records[0]), {}
    if case["render"] == "procedures":
        return render_procedures(records), {}
    block = render_block(records, max_chars=case["maxChars"]) if "maxChars" in case else render_block(records)
    return block["text"], {
        "included": [r["id"] for r in block["included"]],
        "chars": block["chars"],
        "tokens": block["tokens"],
    }


def test_the_golden_cases_cover_each_kind_of_rendering():
    kinds = {case["render"] for case in _cases()}
    assert kinds == {"procedure", "procedures", "block"}
    names = [case["name"] for case in _cases()]
    assert len(names) == len(set(names)) and "python_whitespace" in names and "block_cap_counts_code_points" in names


@pytest.mark.parametrize("case", _cases(), ids=lambda case: case["name"])
def test_the_renderer_matches_the_golden_file(case):
    text, facts = _render(case)
    path = GOLDEN / case["expected"]
    if UPDATE:
        path.write_bytes(text.encode("utf-8"))
    assert path.read_bytes().decode("utf-8") == text
    for key, value in facts.items():
        assert case[key] == value, f"{case['name']}: {key}"
