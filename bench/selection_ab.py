"""What the selection A/B benchmarks share (selection_columns_ab, selection_quantised_ab,
selection_speed_ab): their arguments, one index over `--large` records of selection_bench's corpus
(random sentence vectors, real appliesWhen word vectors) with the minilm+use-multilingual backend,
and each language's tasks with their vectors."""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from typing import Any

import numpy as np

BACKEND = "minilm+use-multilingual"


def arguments(description: str | None, *, rounds: bool = True) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--languages", default="en,de,fr,es,zh,ja,ru")
    parser.add_argument("--large", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=20)
    if rounds:
        parser.add_argument("--rounds", type=int, default=2)
    return parser.parse_args()


def large_index(args: argparse.Namespace, **config: Any):
    """The index of `args.large` records (SelectionConfig(**config)); Django set up first, as
    bench.seed_active, which selection_bench reads, imports the models."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")
    import django

    django.setup()
    from procmem_client import embeddings
    from procmem_client.ranking import EmbeddingCache, Ranker, SelectionConfig

    from .selection_bench import RandomVectors, large_records

    backend = embeddings.backend(BACKEND)
    corpus = EmbeddingCache(RandomVectors(backend.dimension()), backend=backend)
    return Ranker(cache=corpus, config=SelectionConfig(**config)).index(large_records(args.large))


def language_vectors(args: argparse.Namespace, index) -> Iterator[tuple[str, dict[str, np.ndarray]]]:
    """Each language of `args.languages` with its `args.queries` tasks and their query vectors."""
    from procmem_client import embeddings

    from .selection_bench import language_tasks, queries

    embed_query = embeddings.query_embedder(index._cache.backend)
    for language in args.languages.split(","):
        tasks = queries(args.queries) if language == "en" else language_tasks(language, args.queries)
        yield language, {task: embed_query([task])[0] for task in tasks}
