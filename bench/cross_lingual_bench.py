"""What the cross-lingual lexical retriever costs a task in another language than the library's
(docs/selection.md, "The lexical retriever across languages"): embedding the task's words (one batch
of the multilingual model) against embedding the task itself, with the default routed backend, on
non-English tasks of the multilingual selection set. English tasks do not pay it.

    .venv/bin/python -m bench.cross_lingual_bench [--tasks 40]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

from procmem_client import embeddings
from procmem_client.terms import is_english, task_units

SET = Path(__file__).resolve().parents[1] / "tests" / "library" / "data" / "multilingual_selection"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=40)
    args = parser.parse_args()
    backend = embeddings.backend("minilm+use-multilingual")
    embed_query = embeddings.query_embedder(backend)
    tasks = [
        json.loads(line)["task"]
        for domain in ("airline", "retail", "demo")
        for line in (SET / f"{domain}.jsonl").read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    tasks = [t for t in tasks if not is_english(t)][::7][: args.tasks]
    embed_query([tasks[0]])  # load the models
    backend.embed_words(task_units(tasks[0]))
    task_ms, words_ms, counts = [], [], []
    for task in tasks:
        started = time.perf_counter()
        embed_query([task])
        task_ms.append((time.perf_counter() - started) * 1000)
        units = task_units(task)
        counts.append(len(units))
        started = time.perf_counter()
        backend.embed_words(units)
        words_ms.append((time.perf_counter() - started) * 1000)
    ratio = statistics.median(words_ms) / statistics.median(task_ms)
    print(
        f"{len(tasks)} non-English tasks, {statistics.median(counts):.0f} words each (median); load average "
        f"{os.getloadavg()[0]:.1f}\n\n| measure | p50 | vs embedding the task |\n| --- | ---: | ---: |\n"
        f"| embed the task (the floor) | {statistics.median(task_ms):.1f} ms | 1.00x |\n"
        f"| embed its words (cross-lingual lexical) | {statistics.median(words_ms):.1f} ms | {ratio:.2f}x |"
    )


if __name__ == "__main__":
    main()
