"""What a web process does once at start, before it answers its first request (procmem_site.wsgi
and asgi call `warm_up`; management commands and Celery workers do not import those modules, so
they never pay for it).

The candidate page's overlap lint and conflict check embed texts. Loaded inside the first such
request, the sentence-transformers model (torch, the weights, the first forward pass) made a fresh
process's first candidate page cost about 8× a warm one (issue 30). Here the model is loaded and
one text embedded, the URLconf imported (every view module), the templates compiled and the
database connection opened, so the first request costs about what the next ones do. (The texts
themselves are not embedded per process: the candidate page reads each version's stored vector.)
"""

from __future__ import annotations

import logging
import time

logger = logging.getLogger(__name__)



def warm_up() -> dict[str, float]:
    """Loads what the first requests would otherwise load; returns seconds per part. A part that
    fails is logged and skipped: the request that needs it will load it (and show its error)."""
    from django.conf import settings

    timings: dict[str, float] = {}
    if not getattr(settings, "PROCMEM_WARM_UP", True):
        logger.info("procmem web process ready (PROCMEM_WARM_UP=0: nothing loaded before the first request)")
        return timings
    parts = (("urls", _urls), ("templates", _templates), ("database connection", _database), ("embedding model", _embedding_model))
    for part, load in parts:
        started = time.perf_counter()
        try:
            load()
        except Exception:  # noqa: BLE001 — a start must not fail for what one page needs
            logger.exception("warm-up: loading the %s failed; the first request that needs it will load it", part)
            continue
        timings[part] = time.perf_counter() - started
    logger.info("procmem web process ready: " + ", ".join(f"{part} {seconds:.2f} s" for part, seconds in timings.items()))
    return timings


def freeze_start_heap() -> None:
    """Takes what the process has loaded so far — Django, every view module, the templates, the
    embedding model (torch and sentence-transformers: some 600,000 objects) — out of the cyclic
    garbage collector's sight: they live as long as the process. Otherwise each full collection
    walks them all, about 0.4 s of CPU in a web process (measured, bench/RESULTS.md "OTLP trace
    ingestion"), paid inside whichever request crosses the collector's threshold — most often one
    that allocates much, such as a batch of OTLP spans. Garbage made so far is collected first;
    what a request allocates later is collected as before."""
    import gc

    gc.collect()
    gc.freeze()


def _urls() -> None:
    """Every view module imported, and the tables `reverse()` reads built (Django builds each
    namespace's on its first reverse: about a third of a fresh process's first page)."""
    from django.urls import get_resolver

    resolver = get_resolver()
    resolver.reverse_dict  # imports every view module; the root's reverse table
    for _prefix, namespace in resolver.namespace_dict.values():
        namespace.reverse_dict


def _templates() -> None:
    """Every template of the project compiled into the cached loader (an {% include %} is compiled
    when it is first rendered, so the pages' own names are not enough)."""
    from pathlib import Path

    from django.conf import settings
    from django.template.loader import get_template

    for folder in settings.TEMPLATES[0]["DIRS"]:
        for path in sorted(Path(folder).rglob("*.html")):
            get_template(str(path.relative_to(folder)))


def _database() -> None:
    from django.db import connection

    connection.ensure_connection()


def _embedding_model() -> None:
    from library import embeddings

    embeddings.embed(["warm-up"])  # loads the model and runs one forward pass (torch's first call is slow)
