"""Sentence embeddings per distinct text, computed once per process and shared by every index
(ranking.py). The model itself is the `[embeddings]` extra's (embeddings.py), loaded on first use;
an embedder of one's own can stand in for it."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Sequence

import numpy as np

Embedder = Callable[[list[str]], np.ndarray]


class EmbeddingCache:
    """Unit vectors per distinct text (appliesWhen sentences and steps), computed once per process.
    Versions are immutable, so a text's vector never goes stale; the key is the text's sha1."""

    def __init__(self, embedder: Embedder | None = None) -> None:
        self._embedder = embedder
        self._vectors: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            from . import embeddings  # the [embeddings] extra

            self._embedder = embeddings.embed
        return self._embedder

    @staticmethod
    def key(text: str) -> str:
        return hashlib.sha1(text.encode("utf-8")).hexdigest()

    def matrix(self, texts: Sequence[str]) -> np.ndarray:
        """An (n, d) float32 matrix for the texts, embedding only the unseen ones (one batch)."""
        keys = [self.key(t) for t in texts]
        with self._lock:
            missing = {k: t for k, t in zip(keys, texts) if k not in self._vectors}
        if missing:
            vectors = self.embedder(list(missing.values()))
            with self._lock:
                for k, vector in zip(missing.keys(), vectors):
                    self._vectors[k] = np.asarray(vector, dtype=np.float32)
        with self._lock:
            if not keys:
                return np.zeros((0, 0), dtype=np.float32)
            return np.stack([self._vectors[k] for k in keys]).astype(np.float32, copy=False)

    def has(self, text: str) -> bool:
        with self._lock:
            return self.key(text) in self._vectors

    def put(self, text: str, vector: np.ndarray) -> None:
        """Adds a vector computed elsewhere (e.g. stored by the server for this text)."""
        with self._lock:
            self._vectors[self.key(text)] = np.asarray(vector, dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return np.asarray(self.embedder([text])[0], dtype=np.float32)

    def __len__(self) -> int:
        return len(self._vectors)

    def nbytes(self) -> int:
        return sum(v.nbytes for v in self._vectors.values())


_default_cache: EmbeddingCache | None = None
_default_cache_lock = threading.Lock()


def default_cache() -> EmbeddingCache:
    global _default_cache
    with _default_cache_lock:
        if _default_cache is None:
            _default_cache = EmbeddingCache()
        return _default_cache
