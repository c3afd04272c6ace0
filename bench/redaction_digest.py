"""A fingerprint of what redaction produces on the real sessions, to prove a speed change changed
nothing (docs/redaction.md): run it before and after, the digests must be equal.

    .venv/bin/python -m bench.redaction_digest [--show]

No database. Per session, what ingest stores from the redactor (library/ingest/store.py `session_prepare`):
the redacted excerpt, the task key and the session's known values, and the parsed tool calls
(activities and targets of the coding sessions) — for the 231 SWE-bench coding
sessions (mini-swe-agent), the 140 of six other repositories (`coding-other`, since 2026-12-06), the 200 tau-bench airline sessions and the 228 retail sessions the
tau-bench tests build; plus every text of bench/redaction_compare.py's two labelled corpora through
a shape-only redactor and through the session's redactor (echo). One sha256 per corpus.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _digest(rows) -> tuple[str, int]:
    digest, count = hashlib.sha256(), 0
    for row in rows:
        digest.update(json.dumps(row, sort_keys=True, ensure_ascii=False, default=str).encode("utf-8"))
        digest.update(b"\n")
        count += 1
    return digest.hexdigest(), count


def _stored(items, fmt: str, options, shared: bool) -> list:
    from library.ingest.formats import parse_item
    from library.ingest.store import build_excerpt, redactor_for, task_key_for
    from library.redaction.echo import RedactionCache

    agent = SimpleNamespace(redaction_patterns=[])  # what redactor_for reads of an Agent
    cache = RedactionCache() if shared else None  # one per batch, as sessions_store does
    rows = []
    for item in items:
        session = parse_item(item, fmt=fmt, options=options)
        redactor = redactor_for(session, agent.redaction_patterns, cache)  # as session_prepare does
        redacted_task = redactor.text(session.task) if session.task else ""
        excerpt = build_excerpt(session, redactor, redacted_task=redacted_task)
        task_key = task_key_for(session, redactor, redacted_task=redacted_task)
        rows.append(
            [
                session.session_id,
                task_key,
                excerpt,
                sorted(redactor.known.values.items()),
                session.tool_calls,
                session.skeleton,
            ]
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--no-cache",
        action="store_true",
        help="redact each session on its own (no RedactionCache shared by the sessions)",
    )
    parser.add_argument(
        "--show", action="store_true", help="write the rows of each corpus to /tmp/redaction_digest_<corpus>.jsonl"
    )
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "procmem_site.settings")
    os.environ.setdefault("DEBUG", "1")
    import django

    django.setup()
    import bench.coding_bench as coding_bench
    from bench.coding_bench import DATASETS, RESULTS, plain_parse
    from bench.redaction_compare import synthetic_corpus, taubench_corpus
    from library.ingest.formats import ImportOptions, outcomes_from_results
    from library.redaction.redactor import Redactor, redactor_for_session
    from tests.conftest import TAUBENCH_DIR
    from tests.library.taubench_retail import retail_sessions

    corpora = {}
    started = time.perf_counter()
    outcomes = outcomes_from_results(json.loads(RESULTS.read_text()))
    corpora["coding"] = _stored(plain_parse(), "mini-swe-agent", ImportOptions(outcomes=outcomes), not args.no_cache)
    coding_bench.TRAJS, other_results, _files = DATASETS["other"]
    other_outcomes = outcomes_from_results(json.loads(other_results.read_text()))
    corpora["coding-other"] = _stored(
        plain_parse(), "mini-swe-agent", ImportOptions(outcomes=other_outcomes), not args.no_cache
    )
    airline = json.loads((TAUBENCH_DIR / "gpt-4o-airline.json").read_text())
    corpora["airline"] = _stored(airline, "auto", ImportOptions(intent_from="taubench-actions"), not args.no_cache)
    corpora["retail"] = _stored(
        retail_sessions(TAUBENCH_DIR), "openai", ImportOptions(intent_from="taubench-actions"), not args.no_cache
    )
    shapes = Redactor()
    for name, corpus in (
        ("texts-airline", taubench_corpus(TAUBENCH_DIR)),
        ("texts-synthetic", synthetic_corpus(TAUBENCH_DIR)),
    ):
        redactors: dict[int, Redactor] = {}
        rows = []
        for text, _spans, structured in corpus:
            echo = redactors.setdefault(id(structured), redactor_for_session(structured=structured, texts=[]))
            rows.append([shapes.text(text), echo.text(text)])
        corpora[name] = rows
    for name, rows in corpora.items():
        digest, count = _digest(rows)
        print(f"{name:16} {count:5} rows  sha256 {digest}")
        if args.show:
            with open(f"/tmp/redaction_digest_{name}.jsonl", "w", encoding="utf-8") as handle:
                for row in rows:
                    handle.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
    print(f"({time.perf_counter() - started:.1f} s)")


if __name__ == "__main__":
    main()
