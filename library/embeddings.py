"""Sentence embeddings on the server: the bundled all-MiniLM-L6-v2, or settings.EMBEDDING_MODEL_PATH.

The loading itself is procmem_client.embeddings (the same code an agent with the `[embeddings]` extra
runs); this module adds the Django setting and the per-text cache the review pages use. Weights are
never downloaded (HF_HUB_OFFLINE=1).
"""

from __future__ import annotations

import os
from functools import lru_cache

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
