"""The ranker's own work at 100,000 procedures, query vector given, before and after issue 41's
column blocks, in one process and interleaved task by task (so machine load hits both alike):

    .venv/bin/python -m bench.selection_columns_ab [--languages en,de,fr,es,zh,ja,ru] [--large 100000]

"before" multiplies the whole appliesWhen and step matrices (896 columns with the default
minilm+use-multilingual backend) and normalises every signal in each weighted sum, as the ranker
did; "after" is the ranker as it is (each task reads only its model's columns, and only weighted
signals are normalised). The corpus is selection_bench's (random sentence vectors, real word
vectors); every select's result (cap 2, k 5) is asserted equal both ways. Prints a table; holds
the whole matrices beside the blocks (about 1.4 GiB more), which the ranker itself never does.
"""

from __future__ import annotations

import os
import time

import numpy as np

from . import selection_ab


def main() -> None:
    args = selection_ab.arguments(__doc__, rounds=False)
    index = selection_ab.large_index(args)
    whole = {id(index.matrix_blocks): index.matrix, id(index.step_blocks): index.step_matrix}

    def products_before(blocks, vector, rows=None):
        matrix = whole[id(blocks)]
        return (matrix if rows is None else matrix[rows]) @ vector

    def weighted_before(semantic, lexical, exact, step, body, weights):
        normalised = index.normalise(semantic, lexical, exact, step, body)
        total = np.zeros(semantic.size, dtype=np.float64)
        for name, weight in weights.items():
            if weight:
                total += weight * normalised[name]
        return total

    print(f"load average {os.getloadavg()[0]:.1f} at the start")
    print("| tasks | own work p50 before | after | after ÷ before |")
    print("| --- | ---: | ---: | ---: |")
    for language, vectors in selection_ab.language_vectors(args, index):
        tasks = list(vectors)
        spent: dict[str, list[float]] = {"before": [], "after": []}
        for round_number in range(2):
            for number, task in enumerate(tasks):
                modes = ["before", "after"] if (number + round_number) % 2 else ["after", "before"]
                results = {}
                for mode in modes:
                    if mode == "before":
                        index._products, index._weighted = products_before, weighted_before
                    started = time.perf_counter()
                    results[mode] = index.select(task=task, cap=2, k=5, query_vector=vectors[task])
                    spent[mode].append((time.perf_counter() - started) * 1000)
                    if mode == "before":
                        del index._products, index._weighted
                assert results["before"] == results["after"], task
        before, after = float(np.median(spent["before"])), float(np.median(spent["after"]))
        print(f"| {language} | {before:.1f} ms | {after:.1f} ms | {after / before:.2f}× |", flush=True)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
