"""The ranker's own work over a large set, query vector given, as it was before issue 41's speed
work on the float32 path and as it is, in one process and interleaved task by task (so machine
load hits both alike):

    .venv/bin/python -m bench.selection_speed_ab [--languages en,de,fr,es,zh,ja,ru] [--large 100000] [--queries 20]

Before: the float32 products by BLAS (`block @ part`, chosen rows 16 at a time and a whole
product's first rows in a multiple of 256, as semantic_read read them), the cross-lingual sum over
every record by np.add.reduceat, the semantic product computed before the other signals, the word credits' product in one BLAS
call, the totals summing every signal again
after the step shortlist's partial sum. After:
the products by numpy's einsum, one row by one loop (semantic_read.whole_products), the sum by
columns (Index._word_sums), the product beside the lexical and exact signals in a thread
(semantic_read.Beside), the word credits' product cut into one-thread BLAS products
(semantic_read.nearest_products), the totals continued from the partial sum (Index._continued). The corpus is selection_bench's (random sentence vectors, real appliesWhen
word vectors). Every task is selected both ways with cap 2 and k 5 and the results compared: the
same injected records and the same first 5 with the same eligibility and ranks (their rounded
scores within the last decimal); the count of equal results is printed and asserted whole.
"""

from __future__ import annotations

import contextlib
import os
import time

import numpy as np

from . import selection_ab

ROW_GROUP, WHOLE_ALIGN = 16, 256  # as semantic_read read BLAS's products before


def blas_rows(block: np.ndarray, part: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """`block[rows] @ part` as semantic_read read chosen rows before: 16 rows per BLAS product."""
    if rows.size == 0:
        return np.zeros(0, dtype=np.result_type(block, part))
    padded = -rows.size % ROW_GROUP
    gathered = np.take(block, np.concatenate((rows, np.repeat(rows[-1:], padded))) if padded else rows, axis=0)
    out = np.empty(gathered.shape[0], dtype=np.result_type(block, part))
    for first in range(0, gathered.shape[0], ROW_GROUP):
        np.matmul(gathered[first : first + ROW_GROUP], part, out=out[first : first + ROW_GROUP])
    return out[: rows.size]


def blas_whole(block: np.ndarray, part: np.ndarray) -> np.ndarray:
    """`block @ part` as semantic_read read it before: the first rows in a multiple of 256, the rest by `blas_rows`."""
    head = block.shape[0] - block.shape[0] % WHOLE_ALIGN
    if head == block.shape[0]:
        return block @ part
    out = np.empty(block.shape[0], dtype=np.result_type(block, part))
    if head:
        np.matmul(block[:head], part, out=out[:head])
    out[head:] = blas_rows(block, part, np.arange(head, block.shape[0]))
    return out


def blas_nearest(block: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """Each row's largest product with the queries as Index.word_credit computed it before: one BLAS product."""
    return (block @ queries.T).max(axis=1)


def main() -> None:
    args = selection_ab.arguments(__doc__)
    index = selection_ab.large_index(args)
    from procmem_client import semantic_read

    after = (
        semantic_read.whole_products,
        semantic_read.row_products,
        semantic_read.BESIDE_FROM,
        semantic_read.nearest_products,
    )

    def reduceat_sums(weighted: np.ndarray) -> np.ndarray:
        sums = np.zeros(len(index), dtype=np.float64)
        sums[index.word_has] = np.add.reduceat(weighted[index.word_rows], index.word_starts)
        return sums

    @contextlib.contextmanager
    def before():
        semantic_read.whole_products, semantic_read.row_products = blas_whole, blas_rows
        semantic_read.nearest_products = blas_nearest
        semantic_read.BESIDE_FROM = 10**12
        index._word_sums = reduceat_sums
        index._continued = lambda signals, lexical, weights: index._weighted(
            signals.semantic, lexical, signals.exact, signals.step, signals.body, weights
        )
        try:
            yield
        finally:
            (
                semantic_read.whole_products,
                semantic_read.row_products,
                semantic_read.BESIDE_FROM,
                semantic_read.nearest_products,
            ) = after
            del index._word_sums, index._continued

    def comparable(selection):
        ranked = [{**c, "scores": None, "fused": None} for c in selection["ranked"]]
        figures = [[c["fused"], *c["scores"].values()] for c in selection["ranked"]]
        return ranked, [r["id"] for r in selection["injected"]], np.asarray(figures, dtype=np.float64)

    print(f"load average {os.getloadavg()[0]:.1f} at the start")
    print("| tasks | own work p50 before | after | after ÷ before | p90 before | p90 after | equal results |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for language, vectors in selection_ab.language_vectors(args, index):
        spent: dict[str, list[float]] = {"before": [], "after": []}
        equal = compared = 0
        for round_number in range(args.rounds):
            for number, (task, vector) in enumerate(vectors.items()):
                results = {}
                ways = ["before", "after"] if (number + round_number) % 2 else ["after", "before"]
                for way in ways:
                    with before() if way == "before" else contextlib.nullcontext():
                        index.select(task=task, cap=2, query_vector=vector)  # timed below, k apart
                        started = time.perf_counter()
                        index.select(task=task, cap=2, query_vector=vector)
                        spent[way].append((time.perf_counter() - started) * 1000)
                        results[way] = comparable(index.select(task=task, cap=2, k=5, query_vector=vector))
                (ranked_a, injected_a, figures_a), (ranked_b, injected_b, figures_b) = (
                    results["after"],
                    results["before"],
                )
                compared += 1
                equal += (
                    ranked_a == ranked_b
                    and injected_a == injected_b
                    and bool(np.allclose(figures_a, figures_b, rtol=0, atol=2e-4))
                )
        p50 = {way: float(np.percentile(values, 50)) for way, values in spent.items()}
        p90 = {way: float(np.percentile(values, 90)) for way, values in spent.items()}
        print(
            f"| {language} | {p50['before']:.1f} ms | {p50['after']:.1f} ms | {p50['after'] / p50['before']:.2f}× "
            f"| {p90['before']:.1f} ms | {p90['after']:.1f} ms | {equal}/{compared} |",
            flush=True,
        )
        assert equal == compared, f"{language}: {compared - equal} results differ"
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
