"""Issue 6 benchmark: selection over 10,000 ACTIVE procedures.

    .venv/bin/python -m bench.selection_bench [--count 10000] [--queries 40] [--repeat 3]

Reports the p50 latency of the ranker (procmem_client.ranking, in-process) and of
GET /api/v1/agents/{agent}/select (gunicorn, 2 workers, through the SELECT-only role) against the
floor: embedding one query alone with the same model. Target: both at most 1.5x the floor. Also
the memory of the cached embeddings of the 10,000 versions. Queries are tau2-bench task texts;
each measurement alternates floor and ranker on the same query so that machine load hits both
alike. Needs PostgreSQL (BENCH_SELECTION_DATABASE_URL, default
postgres://postgres@127.0.0.1:5432/procmem_h6_bench_sel; dropped and recreated). Appends to
bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from . import common

PORT = 8061
TAUBENCH = Path(os.environ.get("TAUBENCH_DIR", "/work/shared/data/taubench"))


def rss_bytes() -> int:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def queries(n: int) -> list[str]:
    texts = []
    for name in ("tau2_airline_tasks.json", "tau2_retail_tasks.json"):
        for task in json.loads((TAUBENCH / name).read_text()):
            texts.append(" ".join(task["user_scenario"]["instructions"]["reason_for_call"].split()))
    step = max(1, len(texts) // n)
    return texts[::step][:n]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    database_url = os.environ.get("BENCH_SELECTION_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/procmem_h6_bench_sel")
    role = "procmem_h6_bench_sel_reader"
    common.OUT.mkdir(parents=True, exist_ok=True)
    started_on = common.machine()
    env, tokens = common.prepare(database_url, {"bench_10k": args.count}, role)
    token = tokens["bench_10k"]
    texts = queries(args.queries)

    # --- in-process: the ranker against the floor
    os.environ.update({k: v for k, v in env.items() if k in {"DJANGO_SETTINGS_MODULE", "DATABASE_URL", "DB_CONN_MAX_AGE", "HF_HUB_OFFLINE"}})
    import django

    django.setup()
    from library import embeddings, serving
    from library.models import Agent
    from procmem_client.ranking import Ranker

    agent = Agent.objects.get(name="bench_10k")
    served = serving.active_set_for_agent(agent=agent, using="default")
    records = served.procedures
    assert len(records) == args.count, len(records)
    embeddings.embed(["warm the model up"])
    ranker = Ranker()
    rss_before = rss_bytes()
    started = time.perf_counter()
    index = ranker.index(records)
    build_seconds = time.perf_counter() - started
    rss_after = rss_bytes()
    cache_bytes = ranker.cache.nbytes()
    matrix_bytes = index.nbytes()

    floor_ms: list[float] = []
    ranker_ms: list[float] = []
    retrievers_ms: list[float] = []
    injected_counts = []

    def time_floor(text: str) -> None:
        started = time.perf_counter()
        embeddings.embed([text])
        floor_ms.append((time.perf_counter() - started) * 1000)

    def time_ranker(text: str) -> None:
        started = time.perf_counter()
        result = index.select(task=text, cap=2)
        ranker_ms.append((time.perf_counter() - started) * 1000)
        injected_counts.append(len(result["injected"]))

    for repeat in range(args.repeat):
        for number, text in enumerate(texts):
            # alternate which goes first, so that neither always runs on a warmer cache
            first, second = (time_floor, time_ranker) if (number + repeat) % 2 == 0 else (time_ranker, time_floor)
            first(text)
            second(text)
            # the ranker's own work: the same selection with the query vector already computed
            vector = embeddings.embed([text])[0]
            started = time.perf_counter()
            index.select(task=text, cap=2, query_vector=vector)
            retrievers_ms.append((time.perf_counter() - started) * 1000)

    # --- the endpoint on gunicorn
    endpoint_ms: list[float] = []
    served_floor_ms: list[float] = []
    base = f"http://127.0.0.1:{PORT}/api/v1/agents/bench_10k/select"

    def call(text: str) -> float:
        url = f"{base}?{urllib.parse.urlencode({'task': text})}"
        started = time.perf_counter()
        with urllib.request.urlopen(urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"}), timeout=900) as r:
            body = json.loads(r.read())
        assert len(body["injected"]) <= body["cap"]
        return (time.perf_counter() - started) * 1000

    def embed_only(text: str) -> float:
        """The floor as served: bench/urls.py's view that only embeds the task, same process and middleware."""
        url = f"http://127.0.0.1:{PORT}/bench/embed?{urllib.parse.urlencode({'task': text})}"
        started = time.perf_counter()
        with urllib.request.urlopen(url, timeout=900) as r:
            r.read()
        return (time.perf_counter() - started) * 1000

    try:
        with common.gunicorn(env, port=PORT, workers=2, timeout=900):
            started = time.perf_counter()
            with ThreadPoolExecutor(max_workers=4) as pool:  # both workers embed the 10k texts once
                list(pool.map(call, texts[:8]))
            warm_seconds = time.perf_counter() - started
            for repeat in range(args.repeat):
                for number, text in enumerate(texts):
                    if (number + repeat) % 2 == 0:
                        endpoint_ms.append(call(text))
                        served_floor_ms.append(embed_only(text))
                    else:
                        served_floor_ms.append(embed_only(text))
                        endpoint_ms.append(call(text))
    finally:
        common.drop_role(database_url, role)

    floor = statistics.median(floor_ms)
    rank = statistics.median(ranker_ms)
    endpoint = statistics.median(endpoint_ms)
    served_floor = statistics.median(served_floor_ms)
    section = "\n".join(
        [
            "## Issue 6: selection over 10,000 ACTIVE procedures ({stamp})",
            "",
            f"Command: `.venv/bin/python -m bench.selection_bench --count {args.count} --queries {args.queries} --repeat {args.repeat}`",
            "",
            f"{args.count:,} ACTIVE versions (distinct appliesWhen sentences), all-MiniLM-L6-v2 on CPU, "
            f"{len(texts)} tau2-bench task texts x {args.repeat}; {started_on}.",
            "",
            "| measure | p50 | vs floor |",
            "| --- | ---: | ---: |",
            f"| floor: embed one query alone | {floor:.1f} ms | 1.00x |",
            f"| ranker (procmem_client.ranking, in-process: embed + 3 retrievers + fusion) | {rank:.1f} ms | {rank / floor:.2f}x |",
            f"| ranker's own work (query vector given: 3 retrievers + fusion over {args.count:,}) | {statistics.median(retrievers_ms):.1f} ms | {statistics.median(retrievers_ms) / floor:.2f}x |",
            f"| GET /select on gunicorn (2 workers, readonly role), client-side | {endpoint:.1f} ms | {endpoint / floor:.2f}x |",
            f"| served floor: GET /bench/embed on the same gunicorn (embeds the task, nothing else) | {served_floor:.1f} ms | {served_floor / floor:.2f}x |",
            "",
            f"Targets: at most 1.5x the floor: ranker **{rank / floor:.2f}x**, endpoint **{endpoint / floor:.2f}x** of the "
            f"in-process floor and **{endpoint / served_floor:.2f}x** of the served floor (embedding in a gunicorn worker is "
            f"slower than in this process; the endpoint's own work is the difference to the served floor). "
            f"p90: floor {statistics.quantiles(floor_ms, n=10)[-1]:.1f} ms, ranker {statistics.quantiles(ranker_ms, n=10)[-1]:.1f} ms, "
            f"endpoint {statistics.quantiles(endpoint_ms, n=10)[-1]:.1f} ms.",
            "",
            f"Memory of the cached embeddings of {args.count:,} versions: {cache_bytes / 2**20:.1f} MiB of vectors in the "
            f"per-text cache plus {matrix_bytes / 2**20:.1f} MiB for the index's stacked matrix "
            f"(process RSS grew {(rss_after - rss_before) / 2**20:.1f} MiB while building the index, lexical tables included). "
            f"Building the index (embedding {args.count:,} texts once) took {build_seconds:.1f} s in-process; warming "
            f"both gunicorn workers took {warm_seconds:.1f} s. Selections that injected something: "
            f"{sum(1 for c in injected_counts if c)} of {len(injected_counts)}.",
        ]
    )
    common.append_results(section)
    print(section)


if __name__ == "__main__":
    sys.exit(main())
