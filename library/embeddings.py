"""Sentence embeddings on the server: the backend settings.EMBEDDING_BACKEND names (default the
bundled all-MiniLM-L6-v2; docs/selection.md, "Embedding backends").

The backends themselves are procmem_client.embeddings (the same code an agent's local ranker runs);
this module adds the Django setting, the stored vectors and the per-text cache the review pages use.
Weights are never downloaded (HF_HUB_OFFLINE=1).
"""

from __future__ import annotations

import os
from functools import lru_cache

import numpy as np
from django.conf import settings

from procmem_client import embeddings as client_embeddings

from .models import ProcedureVersion, VersionEmbedding

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def backend_spec() -> str:
    """EMBEDDING_BACKEND from the environment or the settings (EMBEDDING_MODEL_PATH, older, as a
    sentence-transformers path), else the default (procmem_client.embeddings)."""
    if not os.environ.get("EMBEDDING_BACKEND") and not os.environ.get("EMBEDDING_MODEL_PATH"):
        if settings.configured:
            if getattr(settings, "EMBEDDING_BACKEND", None):
                return settings.EMBEDDING_BACKEND
            if getattr(settings, "EMBEDDING_MODEL_PATH", None):
                return f"sentence-transformers:{settings.EMBEDDING_MODEL_PATH}"
    return client_embeddings.configured_spec()


def backend() -> client_embeddings.Backend:
    return client_embeddings.backend(backend_spec())


def default_model_path() -> str:
    """The sentence-transformers model of the configured backend (the bundled MiniLM for others)."""
    chosen = backend()
    return getattr(chosen, "source", None) or client_embeddings.default_model_path()


def embed(texts: list[str]) -> np.ndarray:
    """Embeds texts; returns an (n, d) float32 array of unit vectors."""
    return backend().embed(list(texts))


@lru_cache(maxsize=4096)
def _embed_one(spec: str, text: str, as_query: bool) -> np.ndarray:
    chosen = client_embeddings.backend(spec)
    embed_with = client_embeddings.query_embedder(chosen) if as_query else chosen.embed
    vector = np.asarray(embed_with([text])[0], dtype=np.float32)
    vector.setflags(write=False)
    return vector


def embed_one(text: str) -> np.ndarray:
    """A procedure's text embedded (kept per process)."""
    return _embed_one(backend_spec(), text, False)


def embed_query_one(text: str) -> np.ndarray:
    """A task embedded as the ranker embeds a query (kept per process)."""
    return _embed_one(backend_spec(), text, True)


def _clear() -> None:
    _embed_one.cache_clear()


embed_one.cache_clear = _clear  # type: ignore[attr-defined]


def dimension() -> int:
    return backend().dimension()


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    """Two procedures' stored vectors compared (the backend's own comparison where it has one:
    a routed backend compares procedures with its English model)."""
    similarity = getattr(backend(), "similarity", None)
    return similarity(a, b) if similarity is not None else float(np.dot(a, b))


def model_key() -> str:
    """Identifies the embedding model across machines (the backend's model id: for a
    sentence-transformers model the directory's name and a digest of its config files, not its
    path). VersionEmbedding rows are keyed by it; vectors of another key are never compared."""
    return backend().model_id


def version_vectors(versions) -> dict[int, np.ndarray]:
    """The stored appliesWhen vector of each version (VersionEmbedding, one per version and model);
    the ones nobody has stored yet are embedded here and stored, so each version is embedded once.
    Versions are immutable (an erased one has no text and is skipped)."""
    return stored_vectors({v.pk: v.applies_when for v in versions if v.applies_when})


def stored_vectors(texts: dict[int, str]) -> dict[int, np.ndarray]:
    """`version_vectors` from version ids and their appliesWhen texts (the caller read them)."""

    texts = {pk: text for pk, text in texts.items() if text}
    if not texts:
        return {}
    key = model_key()
    stored = dict(
        VersionEmbedding.objects.filter(version_id__in=list(texts), model_key=key).values_list("version_id", "vector")
    )
    vectors = {vid: np.frombuffer(bytes(raw), dtype="<f4") for vid, raw in stored.items()}
    missing = [pk for pk in texts if pk not in vectors]
    if missing:
        computed = embed([texts[pk] for pk in missing])
        VersionEmbedding.objects.bulk_create(
            [
                VersionEmbedding(
                    version_id=pk, model_key=key, dimensions=int(vec.shape[0]), vector=vec.astype("<f4").tobytes()
                )
                for pk, vec in zip(missing, computed)
            ],
            ignore_conflicts=True,
        )
        vectors.update({pk: np.asarray(vec, dtype=np.float32) for pk, vec in zip(missing, computed)})
    return vectors


# --------------------------------------------------------------------------------------------- re-embedding

REEMBED_STATUSES = ("ACTIVE", "APPROVED", "CANDIDATE")  # what can be served or replayed


def reembed_pending():
    """The versions that can be served or replayed (ACTIVE, APPROVED, CANDIDATE, with an appliesWhen)
    and have no vector of the configured model yet, oldest first."""

    return (
        ProcedureVersion.objects.filter(status__in=REEMBED_STATUSES)
        .exclude(applies_when="")
        .exclude(embeddings__model_key=model_key())
        .order_by("pk")
    )


def reembed_library(*, batch_size: int = 256, progress=None) -> int:
    """Embeds every pending version (appliesWhen and steps) with the configured backend and stores
    the vectors, one committed batch at a time: a stopped run resumes where it stopped, and a
    second run finds nothing to do. Vectors of other models stay (switching back costs nothing).
    `progress(done, total)` is called after each batch. Returns how many versions were embedded."""

    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    key = model_key()
    total = reembed_pending().count()
    done = 0
    while True:
        batch = list(reembed_pending().values_list("pk", "applies_when", "steps")[:batch_size])
        if not batch:
            break
        vectors = embed([applies_when for _, applies_when, _ in batch])
        step_texts = sorted({step for _, _, steps in batch for step in steps or []})
        step_vectors = dict(zip(step_texts, embed(step_texts))) if step_texts else {}
        VersionEmbedding.objects.bulk_create(
            [
                VersionEmbedding(
                    version_id=pk,
                    model_key=key,
                    dimensions=int(vector.shape[0]),
                    vector=vector.astype("<f4").tobytes(),
                    steps_vectors=np.stack([step_vectors[s] for s in steps]).astype("<f4").tobytes() if steps else None,
                )
                for (pk, _, steps), vector in zip(batch, vectors)
            ],
            ignore_conflicts=True,  # a serving process stored it meanwhile: the same vectors
        )
        done += len(batch)
        if progress is not None:
            progress(min(done, total), total)
    return done
