"""Selection latency with the step signal on, over 10,000 and 100,000 ACTIVE procedures.

    .venv/bin/python -m bench.selection_bench [--count 10000] [--large 100000] [--queries 40] [--repeat 3] [--no-endpoint]

The floor is embedding one query alone with the same model (all-MiniLM-L6-v2 on CPU); every ranker
measurement alternates with a floor measurement on the same query, so that machine load hits both
alike. Targets: p50 at most 1.5x the floor over 10,000 procedures, at most 3x over 100,000.

- 10,000: ACTIVE versions seeded in PostgreSQL (BENCH_SELECTION_DATABASE_URL, default
  postgres://postgres@127.0.0.1:5432/procmem_h8_bench_sel; dropped and recreated), indexed through
  the server's path (appliesWhen and step vectors embedded once and stored in VersionEmbedding);
  then `Index.select` in-process and, unless --no-endpoint, GET /api/v1/agents/{agent}/select on
  gunicorn (2 workers, the SELECT-only role), whose workers read the stored vectors.
- 100,000: records built in memory with distinct appliesWhen texts and three distinct steps each
  (300,000 step texts). Embedding 400,000 texts would take hours on this CPU, so their vectors are
  random unit vectors (seeded); ranking costs the same whatever the vectors hold. Queries are
  embedded for real.
Queries are tau2-bench task texts. Appends to bench/RESULTS.md.

    .venv/bin/python -m bench.selection_bench --backend e5-small [--large 100000] [--queries 20] [--repeat 2] [--reembed-sample 100]
        [--languages en,de,ja]

With --backend (an EMBEDDING_BACKEND name; no database, no endpoint): the 100,000 run with that
backend's query embedding as the floor and its dimension and calibration, and the cost of
re-embedding 100,000 procedures (`manage.py reembed_library`), extrapolated from timing the
backend on --reembed-sample procedures of the same shape (appliesWhen and three steps each).
--languages: "en" is the tau2 task texts; any other language is that language's tasks of the
multilingual selection set (tests/library/data/multilingual_selection/), which a routed backend
embeds with its multilingual model and ranks with the cross-lingual lexical retriever (the task's
words embedded by the word model, matched against the appliesWhen words' vectors, which the index
embeds once at build: their count, build time and memory are reported). The appliesWhen word
vectors are the backend's real ones; only the sentence vectors of the corpus are random.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from public_data import data_dir

from . import common

PORT = 8108
TAUBENCH = data_dir("taubench")  # public_data/taubench; TAUBENCH_DIR or SHARED_DATA_DIR overrides
MULTILINGUAL = Path(__file__).resolve().parents[1] / "tests" / "library" / "data" / "multilingual_selection"


def queries(n: int) -> list[str]:
    texts = []
    for name in ("tau2_airline_tasks.json", "tau2_retail_tasks.json"):
        for task in json.loads((TAUBENCH / name).read_text()):
            texts.append(" ".join(task["user_scenario"]["instructions"]["reason_for_call"].split()))
    step = max(1, len(texts) // n)
    return texts[::step][:n]


def language_tasks(language: str, n: int) -> list[str]:
    """The first n tasks in `language` of the multilingual selection set (airline, retail, demo)."""
    found = []
    for domain in ("airline", "retail", "demo"):
        for line in (MULTILINGUAL / f"{domain}.jsonl").read_text(encoding="utf-8").splitlines():
            if line.strip() and json.loads(line)["language"] == language:
                found.append(json.loads(line)["task"])
    return found[:n]


def large_records(count: int) -> list[dict]:
    from bench.seed_active import ACTIONS, OBJECTS, QUALIFIERS, TOOLS

    records = []
    for i in range(count):
        action, obj, qualifier = (
            ACTIONS[i % len(ACTIONS)],
            OBJECTS[(i // len(ACTIONS)) % len(OBJECTS)],
            QUALIFIERS[(i // 900) % len(QUALIFIERS)],
        )
        tools = [TOOLS[i % len(TOOLS)], TOOLS[(i * 7 + 3) % len(TOOLS)]]
        records.append(
            {
                "id": f"bench.q{i:06d}",
                "version": 1,
                "intent": f"intent_{i % 20:02d}",
                "appliesWhen": f"The customer wants to {action} {obj} {qualifier} (case {i}).",
                "steps": [
                    f"Call {tools[0]}({{{{id}}}}) for record {i}.",
                    f"Check rule {i} with {tools[1]}.",
                    f"Tell the customer outcome {i}.",
                ],
                "requiredTools": list(dict.fromkeys(tools)),
                "forbiddenActions": [],
            }
        )
    return records


class RandomVectors:
    """Deterministic random unit vectors per text: the corpus side of the 100,000 run."""

    def __init__(self, dimensions: int) -> None:
        self.dimensions = dimensions
        self.rng = np.random.default_rng(2026)

    def __call__(self, texts: list[str]) -> np.ndarray:
        vectors = self.rng.standard_normal((len(texts), self.dimensions)).astype(np.float32)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def interleaved(texts: list[str], repeat: int, floor, measured) -> tuple[list[float], list[float]]:
    floor_ms: list[float] = []
    measured_ms: list[float] = []
    for round_number in range(repeat):
        for number, text in enumerate(texts):
            pair = [(floor, floor_ms), (measured, measured_ms)]
            if (number + round_number) % 2:
                pair.reverse()  # alternate which goes first
            for function, sink in pair:
                started = time.perf_counter()
                function(text)
                sink.append((time.perf_counter() - started) * 1000)
    return floor_ms, measured_ms


def own_work(index, texts: list[str], embed) -> list[float]:
    """The ranker's own milliseconds per task, its query vector given."""
    spent = []
    for text in texts:
        vector = embed([text])[0]
        started = time.perf_counter()
        index.select(task=text, cap=2, query_vector=vector)
        spent.append((time.perf_counter() - started) * 1000)
    return spent


def p(values: list[float], q: int = 50) -> float:
    return float(np.percentile(values, q))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--large", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-endpoint", action="store_true", help="Skip the gunicorn endpoint measurement")
    parser.add_argument("--backend", help="Only the 100,000 run and the re-embedding cost, with this backend")
    parser.add_argument("--reembed-sample", type=int, default=100, help="procedures embedded to time re-embedding")
    parser.add_argument(
        "--languages", default="en", help="with --backend: en (tau2 tasks) and/or languages of the multilingual set"
    )
    parser.add_argument(
        "--quantised-from",
        type=int,
        help="with --backend: SelectionConfig.quantised_from (the int8 semantic read from this many procedures on)",
    )
    args = parser.parse_args()
    if args.backend:
        return backend_run(args)
    database_url = os.environ.get(
        "BENCH_SELECTION_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/procmem_h8_bench_sel"
    )
    role = "procmem_h8_bench_sel_reader"
    common.OUT.mkdir(parents=True, exist_ok=True)
    started_on = common.machine()
    env, tokens = common.prepare(database_url, {"bench_10k": args.count}, role)
    token = tokens["bench_10k"]
    texts = queries(args.queries)

    os.environ.update(
        {
            k: v
            for k, v in env.items()
            if k in {"DJANGO_SETTINGS_MODULE", "DATABASE_URL", "DB_CONN_MAX_AGE", "HF_HUB_OFFLINE"}
        }
    )
    import django

    django.setup()
    from library import embeddings
    from library.models import Agent
    from library.serving import active_set as serving
    from procmem_client.ranking import EmbeddingCache, Ranker, SelectionConfig

    embeddings.embed(["warm the model up"])
    config = SelectionConfig()
    assert config.use_steps and config.step_weight > 0, "the benchmark measures the step signal on"

    # --- 10,000 through the server's path
    agent = Agent.objects.get(name="bench_10k")
    served = serving.active_set_for_agent(agent=agent, using="default")
    assert len(served.procedures) == args.count, len(served.procedures)
    ranker = Ranker(cache=EmbeddingCache(), config=config)
    started = time.perf_counter()
    index = served.index(ranker)  # embeds appliesWhen and steps once and stores them
    build_seconds = time.perf_counter() - started

    def floor(text: str) -> None:
        embeddings.embed([text])

    floor_10k, rank_10k = interleaved(texts, args.repeat, floor, lambda text: index.select(task=text, cap=2))
    own_10k = []
    for text in texts:
        vector = embeddings.embed([text])[0]
        started = time.perf_counter()
        index.select(task=text, cap=2, query_vector=vector)
        own_10k.append((time.perf_counter() - started) * 1000)

    # --- 100,000 in memory, random corpus vectors
    records = large_records(args.large)
    corpus = EmbeddingCache(RandomVectors(embeddings.dimension()))
    started = time.perf_counter()
    large_index = Ranker(cache=corpus, config=config).index(records)
    large_build = time.perf_counter() - started

    def select_large(text: str) -> None:
        large_index.select(task=text, cap=2, query_vector=embeddings.embed([text])[0])

    floor_100k, rank_100k = interleaved(texts, args.repeat, floor, select_large)
    own_100k = own_work(large_index, texts, embeddings.embed)

    # --- the endpoint on gunicorn (10,000)
    endpoint_line = ""
    if not args.no_endpoint:
        base = f"http://127.0.0.1:{PORT}/api/v1/agents/bench_10k/select"

        def call(text: str) -> None:
            url = f"{base}?{urllib.parse.urlencode({'task': text})}"
            with urllib.request.urlopen(
                urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"}), timeout=900
            ) as r:
                body = json.loads(r.read())
            assert len(body["injected"]) <= body["cap"]

        def embed_only(text: str) -> None:
            with urllib.request.urlopen(
                f"http://127.0.0.1:{PORT}/bench/embed?{urllib.parse.urlencode({'task': text})}", timeout=900
            ) as r:
                r.read()

        try:
            with common.gunicorn(env, port=PORT, workers=2, timeout=900):
                started = time.perf_counter()
                with ThreadPoolExecutor(max_workers=4) as pool:  # both workers load the stored vectors
                    list(pool.map(call, texts[:8]))
                warm = time.perf_counter() - started
                served_floor, endpoint = interleaved(texts, args.repeat, embed_only, call)
        finally:
            common.drop_role(database_url, role)
        endpoint_line = (
            f"| GET /select on gunicorn (2 workers, readonly role), client-side, vs GET /bench/embed on the same server "
            f"| {p(endpoint):.1f} ms | {p(endpoint) / p(served_floor):.2f}x of the served floor ({p(served_floor):.1f} ms); "
            f"warming both workers from the stored vectors took {warm:.1f} s |"
        )
    else:
        common.drop_role(database_url, role)

    r10, r100 = p(rank_10k) / p(floor_10k), p(rank_100k) / p(floor_100k)
    section = "\n".join(
        [
            "## Selection with the step signal on, 10,000 and 100,000 ACTIVE procedures ({stamp})",
            "",
            f"Command: `.venv/bin/python -m bench.selection_bench --count {args.count} --large {args.large} --queries {args.queries} "
            f"--repeat {args.repeat}{' --no-endpoint' if args.no_endpoint else ''}`",
            "",
            f"Ranker defaults (weights semantic {config.semantic_weight}, lexical {config.lexical_weight}, exact "
            f"{config.exact_weight}, step {config.step_weight}; step shortlist {config.step_shortlist}); "
            f"{len(texts)} tau2-bench task texts x {args.repeat}, each ranker call alternating with a floor call; {started_on}.",
            "",
            "| measure | p50 | p90 | vs floor (p50) |",
            "| --- | ---: | ---: | ---: |",
            f"| floor (10,000 run): embed one query alone | {p(floor_10k):.1f} ms | {p(floor_10k, 90):.1f} ms | 1.00x |",
            f"| select over {args.count:,}, in-process (embed + 4 signals + order) | {p(rank_10k):.1f} ms | {p(rank_10k, 90):.1f} ms | **{r10:.2f}x** |",
            f"| its own work (query vector given) | {p(own_10k):.1f} ms | {p(own_10k, 90):.1f} ms | {p(own_10k) / p(floor_10k):.2f}x |",
            f"| floor (100,000 run): embed one query alone | {p(floor_100k):.1f} ms | {p(floor_100k, 90):.1f} ms | 1.00x |",
            f"| select over {args.large:,}, in-process (embed + 4 signals + order) | {p(rank_100k):.1f} ms | {p(rank_100k, 90):.1f} ms | **{r100:.2f}x** |",
            f"| its own work (query vector given) | {p(own_100k):.1f} ms | {p(own_100k, 90):.1f} ms | {p(own_100k) / p(floor_100k):.2f}x |",
            *([endpoint_line] if endpoint_line else []),
            "",
            f"Targets: 10,000 at most 1.5x: **{r10:.2f}x** ({'met' if r10 <= 1.5 else 'NOT met'}); 100,000 at most 3x: "
            f"**{r100:.2f}x** ({'met' if r100 <= 3 else 'NOT met'}).",
            "",
            f"10,000: building the index through the server's path (embedding {args.count:,} appliesWhen texts and "
            f"{index.distinct_steps:,} distinct step texts once, storing them) took {build_seconds:.1f} s; "
            f"matrices {index.nbytes() / 2**20:.1f} MiB. 100,000: {large_index.distinct_steps:,} distinct steps, "
            f"random corpus vectors, index built in {large_build:.1f} s, matrices {large_index.nbytes() / 2**20:.1f} MiB.",
        ]
    )
    common.append_results(section)
    print(section)


def backend_run(args) -> None:
    """The 100,000 run and the re-embedding cost with one backend (module docstring)."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")  # bench.seed_active imports the models
    import django

    django.setup()
    from procmem_client import embeddings
    from procmem_client.ranking import EmbeddingCache, Ranker, SelectionConfig
    from procmem_client.terms import task_units

    backend = embeddings.backend(args.backend)
    started_on = common.machine()
    languages = [language.strip() for language in args.languages.split(",") if language.strip()]
    texts = {lang: queries(args.queries) if lang == "en" else language_tasks(lang, args.queries) for lang in languages}
    backend.embed(["warm the models up", "Modelle aufwärmen"])
    config = SelectionConfig(quantised_from=args.quantised_from)

    # random unit vectors for the corpus's sentences; the backend's calibration and its word model
    # (the appliesWhen words' real vectors, for the cross-lingual lexical retriever)
    corpus = EmbeddingCache(RandomVectors(backend.dimension()), backend=backend)
    records = large_records(args.large)
    started = time.perf_counter()
    large_index = Ranker(cache=corpus, config=config).index(records)
    large_build = time.perf_counter() - started
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    word_matrix = getattr(large_index, "word_matrix", None)
    words_line = (
        "no word model: the cross-lingual lexical retriever is off"
        if word_matrix is None
        else f"{word_matrix.shape[0]:,} distinct appliesWhen words ({large_index.word_rows.size:,} word places), "
        f"word vectors {word_matrix.nbytes / 2**20:.2f} MiB"
    )
    built_words = getattr(large_index, "cross_lingual_build_seconds", None)
    if built_words is not None:
        words_line += f", embedded and prepared in {built_words:.1f} s of the build"

    embed_query = embeddings.query_embedder(backend)  # a task as the ranker embeds it

    def floor(text: str) -> None:
        embed_query([text])

    def select_large(text: str) -> None:
        large_index.select(task=text, cap=2, query_vector=embed_query([text])[0])

    forget = getattr(corpus, "forget_task_words", None)

    def select_cold(text: str) -> None:
        forget()  # every word of the task embedded again, as for a task whose words the process never saw
        select_large(text)

    rows, ratios = [], {}
    for lang in languages:
        label = "tau2 task texts (English)" if lang == "en" else f"{lang} tasks of the multilingual set"
        floor_ms, rank_ms = interleaved(texts[lang], args.repeat, floor, select_large)
        own = own_work(large_index, texts[lang], embed_query)
        ratios[lang] = p(rank_ms) / p(floor_ms)
        rows += [
            f"| {label}: floor, embed one query alone | {p(floor_ms):.1f} ms | {p(floor_ms, 90):.1f} ms | 1.00x |",
            f"| {lang}: select over {args.large:,}, in-process (embed + signals + order) | {p(rank_ms):.1f} ms "
            f"| {p(rank_ms, 90):.1f} ms | **{ratios[lang]:.2f}x** |",
        ]
        if lang != "en" and forget is not None:
            cold_floor, cold_ms = interleaved(texts[lang], 1, floor, select_cold)
            rows.append(
                f"| {lang}: the same, the task-word cache emptied before each call (alternating with its own floor, "
                f"p50 {p(cold_floor):.1f} ms) | {p(cold_ms):.1f} ms | {p(cold_ms, 90):.1f} ms | {p(cold_ms) / p(cold_floor):.2f}x |"
            )
        if lang != "en":
            units = [len(task_units(t)) for t in texts[lang]]
            rows.append(f"| {lang}: words of a task (median) | {float(np.median(units)):.0f} | | |")
        rows.append(
            f"| {lang}: its own work (query vector given) | {p(own):.1f} ms | {p(own, 90):.1f} ms | {p(own) / p(floor_ms):.2f}x |"
        )

    # re-embedding: the texts reembed_library embeds per procedure (appliesWhen, its steps), in batches
    sample = large_records(args.reembed_sample)
    started = time.perf_counter()
    for start in range(0, len(sample), 32):
        chunk = sample[start : start + 32]
        backend.embed([r["appliesWhen"] for r in chunk])
        backend.embed([step for r in chunk for step in r["steps"]])
    per_procedure = (time.perf_counter() - started) / len(sample)
    counts = ", ".join(f"{lang} {len(texts[lang])}" for lang in languages)
    verdicts = "; ".join(f"{lang} **{r:.2f}x** ({'met' if r <= 3 else 'NOT met'})" for lang, r in ratios.items())
    section = "\n".join(
        [
            f"## Selection over {args.large:,} procedures with the {backend.name} backend, and re-embedding cost ({{stamp}})",
            "",
            f"Command: `.venv/bin/python -m bench.selection_bench --backend {args.backend} --large {args.large} "
            f"--queries {args.queries} --repeat {args.repeat} --reembed-sample {args.reembed_sample} --languages {args.languages}"
            f"{'' if args.quantised_from is None else f' --quantised-from {args.quantised_from}'}`",
            "",
            f"Model {backend.model_id} ({backend.dimension()} dimensions); ranker defaults, step signal on; "
            f"tasks per language: {counts}, x {args.repeat}, each ranker call alternating with a floor call "
            f"(the task embedded as the ranker embeds it: a routed backend's model for the task's language); "
            f"{started_on}; load average {os.getloadavg()[0]:.1f} at the end.",
            "",
            "| measure | p50 | p90 | vs floor (p50) |",
            "| --- | ---: | ---: | ---: |",
            *rows,
            "",
            f"Target at most 3x: {verdicts}. Index over {args.large:,} (random corpus vectors) built in "
            f"{large_build:.1f} s, matrices {large_index.nbytes() / 2**20:.1f} MiB; {words_line}; peak RSS of the "
            f"process after the build {rss_mib:,.0f} MiB.",
            "",
            f"Re-embedding (`manage.py reembed_library`): {per_procedure * 1000:.1f} ms per procedure (appliesWhen and "
            f"three steps, batches of 32, timed on {len(sample)}), so **{per_procedure * 100_000 / 3600:.2f} h of one "
            f"process for 100,000 procedures** at this load (extrapolated, not run whole).",
        ]
    )
    common.append_results(section)
    print(section)


if __name__ == "__main__":
    sys.exit(main())
