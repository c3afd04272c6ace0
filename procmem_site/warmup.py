"""What a web process does once at start, before it answers its first request (procmem_site.wsgi
and asgi call `warm_up`; management commands and Celery workers do not import those modules, so
they never pay for it).

The candidate page's overlap lint and conflict check embed texts. Loaded inside the first such
request, the sentence-transformers model (torch, the weights, the first forward pass) made a fresh
process's first candidate page cost about 8× a warm one (issue 30). Here the model is loaded and
one text embedded, the URLconf imported (every view module), the templates compiled and the
database connection opened, so the first request costs about what the next ones do. (The texts
themselves are not embedded per process: the candidate page reads each version's stored vector.)

With those, a fresh process's first candidate page still cost 1.5–2.7× a warm one: a profile of
its first request against its second (bench/first_request.py) found the rest spread over caches
that Python, Django and PostgreSQL fill on first use — the regular expressions `reverse()` matches
each URL against, the modules named in settings (context processors, authentication backends,
message storage, session serializer) and the date formats, the content types guardian and the
rights queries look up, each model's field maps, and the PostgreSQL backend's catalog entries for
every table and index the page reads (its first query on a table plans several times slower). Each
is filled here too: the parts below are named after what they load.
"""

from __future__ import annotations

import gc
import logging
import re
import threading
import time
from pathlib import Path

from django.apps import apps
from django.conf import settings
from django.contrib.auth import get_backends
from django.contrib.contenttypes.models import ContentType
from django.db import DatabaseError, connection, router
from django.template import engines
from django.template.loader import get_template
from django.urls import URLResolver, get_resolver, get_script_prefix
from django.urls.resolvers import get_ns_resolver
from django.utils import formats, timezone
from django.utils.module_loading import import_string

from library import embeddings

logger = logging.getLogger(__name__)

# the URL namespaces whose reverse() regexes are compiled at start: the pages' own. The admin's
# 250 are left out: compiled too they would crowd the `re` module's cache of 512 patterns.
URL_NAMESPACES_NOT_WARMED = frozenset({"admin"})


# Set once the warm-up is complete (the model loaded, the heap frozen): `wait_until_ready`.
ready = threading.Event()


def warm_up(*, model_in_background: bool | None = None) -> dict[str, float]:
    """Loads what the first requests would otherwise load, then freezes the heap
    (`freeze_start_heap`), and only then logs that the process is ready; returns seconds per part.
    A part that fails is logged and skipped: the request that needs it will load it (and show its
    error).

    With `model_in_background` (settings.PROCMEM_WARM_UP_MODEL_IN_BACKGROUND, on by default) the
    embedding model — 30-60 s of a fresh worker on a loaded machine, most of the warm-up — loads in a
    thread of this process after the rest, so the process answers at once: after its workers were
    killed, the health check and every page that needs no model no longer wait for it (issue 42),
    and a request that needs the model waits for that one load (procmem_client.embeddings holds a
    lock over it), never loads it twice. The thread then compiles the URL regexes again (the model's
    own pushed them out of `re`'s cache), freezes the heap and logs the ready line; `ready` is set."""

    timings: dict[str, float] = {}
    if not getattr(settings, "PROCMEM_WARM_UP", True):
        freeze_start_heap()
        ready.set()
        logger.info("procmem web process ready (PROCMEM_WARM_UP=0: nothing loaded before the first request)")
        return timings
    if model_in_background is None:
        model_in_background = getattr(settings, "PROCMEM_WARM_UP_MODEL_IN_BACKGROUND", True)
    # the model before the URLs (or the URLs again after it): loading it compiles enough regular
    # expressions to push the URLs' out of the `re` module's cache (512 patterns, the oldest dropped first)
    parts = [
        ("urls", _urls),
        ("templates", _templates),
        ("request machinery", _request_machinery),
        ("database", _database),
    ]
    if model_in_background:
        _load(parts, timings)
        threading.Thread(target=_finish_in_background, args=(timings,), name="procmem-warm-up", daemon=True).start()
        return timings
    _load([("embedding model", _embedding_model), *parts], timings)
    _freeze_and_say_ready(timings)
    return timings


def wait_until_ready(timeout: float | None = None) -> bool:
    """Waits for the warm-up (the model included); True when it is complete."""
    return ready.wait(timeout)


def _load(parts, timings: dict[str, float]) -> None:
    for part, load in parts:
        started = time.perf_counter()
        try:
            load()
        except Exception:  # noqa: BLE001 — a start must not fail for what one page needs
            logger.exception("warm-up: loading the %s failed; the first request that needs it will load it", part)
            continue
        timings[part] = timings.get(part, 0.0) + time.perf_counter() - started


def _finish_in_background(timings: dict[str, float]) -> None:
    try:
        _load([("embedding model", _embedding_model), ("urls", _urls)], timings)
        _freeze_and_say_ready(timings)
    finally:
        ready.set()


def _freeze_and_say_ready(timings: dict[str, float]) -> None:
    # last, and before the process says it is ready: collecting the 600,000 objects took 0.4-1.3 s,
    # which the first request waited for when it came right after the line below
    started = time.perf_counter()
    freeze_start_heap()
    timings["frozen heap"] = time.perf_counter() - started
    ready.set()
    logger.info(
        "procmem web process ready: " + ", ".join(f"{part} {seconds:.2f} s" for part, seconds in timings.items())
    )


def freeze_start_heap() -> None:
    """Takes what the process has loaded so far — Django, every view module, the templates, the
    embedding model (torch and sentence-transformers: some 600,000 objects) — out of the cyclic
    garbage collector's sight: they live as long as the process. Otherwise each full collection
    walks them all, about 0.4 s of CPU in a web process (measured, bench/RESULTS.md "OTLP trace
    ingestion"), paid inside whichever request crosses the collector's threshold — most often one
    that allocates much, such as a batch of OTLP spans. Garbage made so far is collected first;
    what a request allocates later is collected as before."""

    gc.collect()
    gc.freeze()


def _urls() -> None:
    """Every view module imported, the tables `reverse()` reads built (Django builds each
    namespace's on its first reverse: about a third of a fresh process's first page), and the
    regular expressions compiled: the one each URL pattern resolves with (compiled on its first
    match) and the one reverse() checks each candidate URL against (one per pattern, kept in `re`'s
    cache: the candidate page reverses 24)."""

    resolver = get_resolver()
    resolver.reverse_dict  # imports every view module; the root's reverse table
    resolvers = [resolver]
    for name, (extra, namespace) in resolver.namespace_dict.items():
        namespace.reverse_dict
        if name in URL_NAMESPACES_NOT_WARMED:
            continue
        # a namespace under a prefix ("api/") is reversed through a resolver of its own, which
        # reverse() builds (and caches) on its first use: the same one, built now
        resolvers.append(
            get_ns_resolver(extra, namespace, tuple(namespace.pattern.converters.items())) if extra else namespace
        )
    _resolving_regexes(resolver)
    prefix = re.escape(get_script_prefix())
    for each in resolvers:
        # as URLResolver._reverse_with_prefix searches: "^<script prefix><pattern>"
        for _key, possibilities in each.reverse_dict.lists():
            for _possibility, pattern, _defaults, _converters in possibilities:
                re.compile(f"^{prefix}{pattern}")


def _resolving_regexes(resolver) -> None:
    resolver.pattern.regex
    for entry in resolver.url_patterns:
        if isinstance(entry, URLResolver):
            _resolving_regexes(entry)
        else:
            entry.pattern.regex


def _templates() -> None:
    """Every template of the project compiled into the cached loader (an {% include %} is compiled
    when it is first rendered, so the pages' own names are not enough), the context processors
    imported (Django imports them on the first render with a request), and the date formats of
    the default language looked up (the first |date loads the locale's format module)."""

    for folder in settings.TEMPLATES[0]["DIRS"]:
        for path in sorted(Path(folder).rglob("*.html")):
            get_template(str(path.relative_to(folder)))
    for engine in engines.all():
        getattr(engine, "engine", engine).template_context_processors
    for name in ("DATE_FORMAT", "DATETIME_FORMAT", "SHORT_DATE_FORMAT", "DECIMAL_SEPARATOR", "THOUSAND_SEPARATOR"):
        formats.get_format(name)
    formats.date_format(timezone.now(), "Y-m-d H:i")  # compiles the date formatter's expressions


def _request_machinery() -> None:
    """The modules settings name and Django imports on first use inside a request: the
    authentication backends (guardian's answers object permissions), the message storage, the
    session serializer; and each model's field maps and relation tree (built on a model's first
    query: the candidate page's queries touch most models)."""

    get_backends()
    import_string(settings.MESSAGE_STORAGE)
    import_string(settings.SESSION_SERIALIZER)
    for model in apps.get_models():
        model._meta.get_fields()  # the relation tree of every model, once, and this model's fields
        model._meta.fields_map  # name → field, as filters and select_related look fields up


def _database() -> None:
    """The connection opened, the content types of every model cached (guardian and the rights
    queries look them up by model: one query each on a fresh process), and one query on each
    table, which has the PostgreSQL backend of this connection load the table's and its indexes'
    catalog entries (a first query on a table plans several times slower). On a database that is
    not migrated yet this stops at the first missing table: the process starts all the same."""

    connection.ensure_connection()
    models = [
        m for m in apps.get_models() if m._meta.managed and not m._meta.proxy and router.db_for_read(m) == "default"
    ]
    try:
        ContentType.objects.get_for_models(*models)
        for model in models:
            model._base_manager.exists()  # SELECT 1 FROM <table> LIMIT 1: planned with every index
    except DatabaseError as exc:  # not migrated (yet): the requests would fail the same way
        logger.warning(
            "warm-up: the database is not ready (%s); its tables were not read", str(exc).strip().splitlines()[0]
        )


def _embedding_model() -> None:
    embeddings.embed(["warm-up"])  # loads the model and runs one forward pass (torch's first call is slow)
