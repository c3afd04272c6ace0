"""The ranker's own work over a large set, query vector given, with the semantic scores read in
float32 (every record) and through the int8 codes (procmem_client/semantic_read.py), in one process
and interleaved task by task (so machine load hits both alike):

    .venv/bin/python -m bench.selection_quantised_ab [--languages en,de,fr,es,zh,ja,ru] [--large 100000] [--queries 20]

The corpus is selection_bench's (random sentence vectors, real appliesWhen word vectors); one index
built with SelectionConfig.quantised_from=0 serves both reads (the float32 one with its int8 copies
set aside). Every task is selected both ways with cap 2 alone and with cap 2 and k 5, and the
results are compared whole (injected records, diagnostics, scores): the share of equal results is
printed and asserted to be 1. Also printed: how many records the quantised read read again in
float32 (median per task), the index's memory with and without the int8 copies, and the time to
make them.
"""

from __future__ import annotations

import os
import resource
import time

import numpy as np

from . import selection_ab


def main() -> None:
    args = selection_ab.arguments(__doc__)
    index = selection_ab.large_index(args, quantised_from=0)
    from procmem_client import semantic_read

    quantised = index.quantised
    assert quantised is not None, "SimSIMD (the client's [fast] extra) is not installed"
    started = time.perf_counter()
    semantic_read.QuantisedBlocks(index.matrix_blocks, semantic_read.simsimd_module())
    quantise_seconds = time.perf_counter() - started
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"load average {os.getloadavg()[0]:.1f} at the start")
    print(
        "| tasks | own work p50, float32 read | quantised read | quantised ÷ float32 | with k 5: float32 | quantised | records read again (median) | equal results |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    everyone = np.arange(len(index))
    for language, vectors in selection_ab.language_vectors(args, index):
        tasks = list(vectors)
        spent: dict[str, list[float]] = {"float32": [], "quantised": [], "float32 k": [], "quantised k": []}
        equal, compared, read_again = 0, 0, []
        for round_number in range(args.rounds):
            for number, task in enumerate(tasks):
                modes = ["float32", "quantised"] if (number + round_number) % 2 else ["quantised", "float32"]
                for k in (None, 5):
                    results = {}
                    for mode in modes:
                        index.quantised = quantised if mode == "quantised" else None
                        started = time.perf_counter()
                        results[mode] = index.select(task=task, cap=2, k=k, query_vector=vectors[task])
                        spent[mode + (" k" if k else "")].append((time.perf_counter() - started) * 1000)
                    index.quantised = quantised
                    equal += results["float32"] == results["quantised"]
                    compared += 1
                if round_number == 0:
                    read_again.append(
                        semantic_read.quantised_signals(
                            index, task=task, candidates=everyone, vector=vectors[task], cap=2, k=None
                        )[1]
                    )
        p = {mode: float(np.median(values)) for mode, values in spent.items()}
        print(
            f"| {language} | {p['float32']:.1f} ms | {p['quantised']:.1f} ms | {p['quantised'] / p['float32']:.2f}× "
            f"| {p['float32 k']:.1f} ms | {p['quantised k']:.1f} ms | {float(np.median(read_again)):,.0f} "
            f"| {equal}/{compared} |",
            flush=True,
        )
        assert equal == compared, f"{language}: {compared - equal} results differ"
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    float32 = sum(block.nbytes for block in index.matrix_blocks + index.step_blocks)
    print(
        f"{len(index):,} procedures: float32 matrices {float32 / 2**20:,.1f} MiB, int8 copies "
        f"{quantised.nbytes() / 2**20:,.1f} MiB, made in {quantise_seconds:.1f} s; peak RSS after the build {rss:,.0f} MiB"
    )


if __name__ == "__main__":
    main()
