"""The ranker's own work over a large set, query vector given, with a Japanese or Russian task's
pieces for the cross-lingual retriever cut as before (character pairs, whole Russian words: the
analysers of procmem_client/morphology.py turned off) and as they are (content words and loanwords'
origins by MeCab, Russian words by their Snowball stem), in one process and interleaved task by task
(so machine load hits both alike):

    .venv/bin/python -m bench.selection_morphology_ab [--languages ja,ru] [--large 100000] [--queries 20] [--rounds 2]

Each task is selected once untimed each way before the timed call (the task's word vectors then in
the cache, as for a task word a recent task had). The corpus is selection_bench's (random sentence
vectors, real appliesWhen word vectors), with the minilm+use-multilingual backend as the other A/B
benches (the analysers do not depend on the third model). The rankings may differ (that is the
change); the count of tasks whose injected records differ is printed.
"""

from __future__ import annotations

import contextlib
import os
import time

import numpy as np

from . import selection_ab


@contextlib.contextmanager
def before():
    """The pieces as before the analysers: morphology's functions answer None, as without the extras."""
    from procmem_client import morphology

    japanese, russian = morphology.japanese_words, morphology.russian_stem
    morphology.japanese_words = lambda run: None  # type: ignore[assignment]
    morphology.russian_stem = lambda word: None  # type: ignore[assignment]
    try:
        yield
    finally:
        morphology.japanese_words, morphology.russian_stem = japanese, russian


def main() -> None:
    args = selection_ab.arguments(__doc__)
    if args.languages == "en,de,fr,es,zh,ja,ru":
        args.languages = "ja,ru"  # the languages the analysers read
    index = selection_ab.large_index(args)
    from procmem_client.terms import task_units

    print(f"load average {os.getloadavg()[0]:.1f} at the start")
    print(
        "| tasks | own work p50 before | after | after ÷ before | p90 before | p90 after | pieces (median) before / after | injected differ |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for language, vectors in selection_ab.language_vectors(args, index):
        spent: dict[str, list[float]] = {"before": [], "after": []}
        pieces: dict[str, list[int]] = {"before": [], "after": []}
        differ = 0
        for round_number in range(args.rounds):
            for number, (task, vector) in enumerate(vectors.items()):
                injected = {}
                ways = ["before", "after"] if (number + round_number) % 2 else ["after", "before"]
                for way in ways:
                    with before() if way == "before" else contextlib.nullcontext():
                        index.select(task=task, cap=2, query_vector=vector)  # the task's words cached
                        started = time.perf_counter()
                        selection = index.select(task=task, cap=2, query_vector=vector)
                        spent[way].append((time.perf_counter() - started) * 1000)
                        injected[way] = [r["id"] for r in selection["injected"]]
                        if round_number == 0:
                            pieces[way].append(len(task_units(task)))
                differ += injected["before"] != injected["after"]
        p50 = {way: float(np.percentile(values, 50)) for way, values in spent.items()}
        p90 = {way: float(np.percentile(values, 90)) for way, values in spent.items()}
        units = {way: float(np.median(values)) for way, values in pieces.items()}
        print(
            f"| {language} | {p50['before']:.1f} ms | {p50['after']:.1f} ms | {p50['after'] / p50['before']:.2f}× "
            f"| {p90['before']:.1f} ms | {p90['after']:.1f} ms | {units['before']:g} / {units['after']:g} "
            f"| {differ}/{args.rounds * len(vectors)} |",
            flush=True,
        )
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
