"""`manage.py scan_erased`: proves that no stored text holds a word window of an erased text, by the
keyed fingerprints each erasure kept (library/services/erasure_sweep.py), in every column the erasure sweep
searches, every version's text, the session store when asked, and the procedure export."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..interchange.procedure_files import export_library
from ..models import AgentSession, ProcedureVersion
from ..services.erasure_sweep import VERSION_TEXT_FIELDS, FingerprintMatcher, swept_columns


@dataclass(frozen=True)
class ErasedCopy:
    model: str
    pk: Any
    field: str


def scan_erased(*, include_sessions: bool = False, include_export: bool = True) -> list[ErasedCopy]:
    """Every stored text value (each swept column, every version's text, the session excerpts when
    asked, the procedure export) that holds a word window of an erased text. Read-only."""
    matcher = FingerprintMatcher()
    if not matcher:
        return []
    hits: list[ErasedCopy] = []
    targets = [*swept_columns(), (ProcedureVersion, [ProcedureVersion._meta.get_field(n) for n in VERSION_TEXT_FIELDS])]
    if include_sessions:
        targets.append(
            (AgentSession, [AgentSession._meta.get_field(n) for n in ("task", "redacted_excerpt", "tool_calls")])
        )
    for model, columns in targets:
        label = f"{model._meta.app_label}.{model.__name__}"
        names = [c.attname for c in columns]
        for row in model._default_manager.order_by("pk").values_list("pk", *names).iterator(chunk_size=1000):
            for name, value in zip(names, row[1:]):
                if value in (None, "", [], {}):
                    continue
                if any(matcher.matches(text) for text in _strings(value)):
                    hits.append(ErasedCopy(label, row[0], name))
    if include_export:
        hits.extend(_export_copies(matcher))
    return hits


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _export_copies(matcher: FingerprintMatcher) -> Iterator[ErasedCopy]:
    with tempfile.TemporaryDirectory(prefix="procmem-erased-") as tmp:
        for path in export_library(Path(tmp)):
            if matcher.matches(path.read_text(encoding="utf-8")):
                yield ErasedCopy("export", str(path.relative_to(tmp)), "(file)")
