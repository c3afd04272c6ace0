"""Sentence embeddings on the server: the bundled all-MiniLM-L6-v2, or settings.EMBEDDING_MODEL_PATH.

The loading itself is procmem_client.embeddings (the same code an agent with the `[embeddings]` extra
runs); this module adds the Django setting and the per-text cache the review pages use. Weights are
never downloaded (HF_HUB_OFFLINE=1).
"""

from __future__ import annotations

import hashlib
import os
from functools import lru_cache
from pathlib import Path

import numpy as np

from procmem_client import embeddings as client_embeddings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def default_model_path() -> str:
    """EMBEDDING_MODEL_PATH from the environment or the settings, else the bundled model."""
    if not os.environ.get("EMBEDDING_MODEL_PATH"):
        from django.conf import settings

        if settings.configured and getattr(settings, "EMBEDDING_MODEL_PATH", None):
            return settings.EMBEDDING_MODEL_PATH
    return client_embeddings.default_model_path()


def get_model():
    return client_embeddings.get_model(default_model_path())


def embed(texts: list[str]) -> np.ndarray:
    """Embeds texts; returns an (n, d) float32 array of unit vectors."""
    return client_embeddings.embed(list(texts), default_model_path())


@lru_cache(maxsize=4096)
def embed_one(text: str) -> np.ndarray:
    vector = embed([text])[0]
    vector.setflags(write=False)
    return vector


def dimension() -> int:
    return client_embeddings.dimension(default_model_path())


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b))


_model_key_value: str | None = None


def model_key() -> str:
    """Identifies the embedding model across machines: the model directory's name and a digest of
    its config files (not its path, which differs between installs). VersionEmbedding rows are
    keyed by it."""
    global _model_key_value
    if _model_key_value is None:
        path = Path(default_model_path())
        digest = hashlib.sha256()
        for name in ("config.json", "modules.json", "sentence_bert_config.json", "1_Pooling/config.json"):
            if (path / name).is_file():
                digest.update(name.encode() + b"\0" + (path / name).read_bytes())
        _model_key_value = (
            f"{path.parent.name if path.name == 'model' else path.name}"[:40] + ":" + digest.hexdigest()[:16]
        )
    return _model_key_value


def version_vectors(versions) -> dict[int, np.ndarray]:
    """The stored appliesWhen vector of each version (VersionEmbedding, one per version and model);
    the ones nobody has stored yet are embedded here and stored, so each version is embedded once.
    Versions are immutable (an erased one has no text and is skipped)."""
    return stored_vectors({v.pk: v.applies_when for v in versions if v.applies_when})


def stored_vectors(texts: dict[int, str]) -> dict[int, np.ndarray]:
    """`version_vectors` from version ids and their appliesWhen texts (the caller read them)."""
    from .models import VersionEmbedding

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
