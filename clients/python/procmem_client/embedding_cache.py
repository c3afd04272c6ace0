"""Sentence embeddings per distinct text, computed once per process and shared by every index
(ranking.py). The model is the configured embedding backend's (embeddings.py: EMBEDDING_BACKEND,
the `[embeddings]` or `[multilingual]` extra), loaded on first use; an embedder of one's own can
stand in for it. One cache holds one model's vectors: the default cache is per backend."""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .embeddings import Backend

Embedder = Callable[[list[str]], np.ndarray]

# Tasks' words kept per cache (the most recently used): customers of one language reuse a small
# vocabulary, so most of a new task's words were embedded for an earlier task. 20,000 words of a
# 512-dimension word model are 40 MiB.
TASK_WORDS_KEPT = 20_000


class EmbeddingCache:
    """Unit vectors per distinct text (appliesWhen sentences and steps), computed once per process.
    Versions are immutable, so a text's vector never goes stale; the key is the text's sha1."""

    def __init__(self, embedder: Embedder | None = None, *, backend: Backend | None = None) -> None:
        """`embedder`: a function of one's own (cosines used as they are); `backend`: an
        embeddings.Backend (its embed and its calibration); neither: the configured backend."""
        self._embedder = embedder
        self._backend = backend
        self._vectors: dict[str, np.ndarray] = {}
        self._words: dict[str, np.ndarray] = {}  # the backend's embed_words, apart from the texts
        self._task_words: OrderedDict[str, np.ndarray] = OrderedDict()  # tasks' words, least recent first
        self._lock = threading.Lock()

    @property
    def backend(self) -> Backend | None:
        if self._backend is None and self._embedder is None:
            from . import embeddings  # the configured backend's extra

            self._backend = embeddings.backend()
        return self._backend

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            backend = self.backend
            assert backend is not None
            self._embedder = backend.embed
        return self._embedder

    @property
    def model_id(self) -> str | None:
        backend = self.backend
        return backend.model_id if backend is not None else None

    def calibrate(self, scores: np.ndarray) -> np.ndarray:
        """Cosines on the scale the floors were set on (embeddings.py); as they are for an embedder
        of one's own."""
        backend = self.backend
        return backend.calibrate(scores) if backend is not None else scores

    def third_calibrate(self, scores: np.ndarray) -> np.ndarray:
        """A routed backend's third model's cosines on the floors' scale (embeddings.RoutedBackend)."""
        backend = self.backend
        calibrate = getattr(backend, "third_calibrate", None) if backend is not None else None
        return calibrate(scores) if calibrate is not None else scores

    @staticmethod
    def key(text: str) -> str:
        return hashlib.sha1(text.encode("utf-8")).hexdigest()

    def matrix(self, texts: Sequence[str]) -> np.ndarray:
        """An (n, d) float32 matrix for the texts, embedding only the unseen ones (one batch)."""
        keys = self._embed_unseen(texts)
        with self._lock:
            if not keys:
                return np.zeros((0, 0), dtype=np.float32)
            return np.stack([self._vectors[k] for k in keys]).astype(np.float32, copy=False)

    def _embed_unseen(self, texts: Sequence[str]) -> list[str]:
        """The texts' keys, once every text has its vector (the unseen ones embedded in one batch)."""
        keys = [self.key(t) for t in texts]
        with self._lock:
            missing = {k: t for k, t in zip(keys, texts) if k not in self._vectors}
        if missing:
            vectors = self.embedder(list(missing.values()))
            with self._lock:
                for k, vector in zip(missing.keys(), vectors):
                    self._vectors[k] = np.asarray(vector, dtype=np.float32)
        return keys

    def matrix_blocks(
        self, texts: Sequence[str], tail: int, third: int = 0, *, with_third: bool = True
    ) -> list[np.ndarray]:
        """The texts' `matrix` as contiguous column blocks, the first width minus `tail` (and minus
        `third`) columns and the next `tail` (one block when the vectors are no wider than `tail`),
        then, with a routed backend's third model (`third` > 0), its last `third` columns as a block
        of their own (left out with `with_third=False`); filled a few thousand rows at a time so that
        the whole matrix is never held twice. A routed backend's task vector fills one of the first
        blocks only (ranking.Index.semantic_scores); the third block is read apart
        (Index.third_scores)."""
        if not texts:
            return [np.zeros((0, 0), dtype=np.float32)]
        keys = self._embed_unseen(texts)
        with self._lock:
            width = self._vectors[keys[0]].shape[0]
            first_width = width - third
            bounds = (
                [(0, first_width - tail), (first_width - tail, first_width)]
                if 0 < tail < first_width
                else [(0, first_width)]
            )
            if third and with_third:
                bounds.append((first_width, width))
            blocks = [np.empty((len(keys), end - start), dtype=np.float32) for start, end in bounds]
            for first in range(0, len(keys), 8192):
                chunk = np.stack([self._vectors[k] for k in keys[first : first + 8192]])
                for block, (start, end) in zip(blocks, bounds):
                    block[first : first + len(chunk)] = chunk[:, start:end]
        return blocks

    def word_matrix(self, words: Sequence[str]) -> np.ndarray | None:
        """The backend's word vectors (`embed_words`, a routed backend's multilingual model) for
        library words, each embedded once per process; None when the backend has none."""
        backend = self.backend
        embed_words = getattr(backend, "embed_words", None) if backend is not None else None
        if embed_words is None or not words:
            return None
        with self._lock:
            missing = [w for w in words if w not in self._words]
        if missing:
            vectors = embed_words(missing)
            with self._lock:
                for word, vector in zip(missing, vectors):
                    self._words[word] = np.asarray(vector, dtype=np.float32)
        with self._lock:
            return np.stack([self._words[w] for w in words]).astype(np.float32, copy=False)

    def embed_words(self, words: list[str]) -> np.ndarray:
        """A task's pieces by the same word model, all of them embedded now (nothing kept)."""
        return np.asarray(self.backend.embed_words(list(words)), dtype=np.float32)  # type: ignore[union-attr]

    def task_word_matrix(self, words: list[str]) -> np.ndarray:
        """A task's pieces by the same word model, embedding (in one batch) only those that no
        recent task had: the TASK_WORDS_KEPT most recently used are kept. A word's vector does not
        depend on what else is in the batch beyond float rounding (≤ 2e-7 measured with USE); the
        rankings of the multilingual set are the same with the cache cold or warm
        (tests/library/test_selection_eval.py)."""
        with self._lock:
            missing = [w for w in dict.fromkeys(words) if w not in self._task_words]
        fresh = dict(zip(missing, self.embed_words(missing))) if missing else {}
        with self._lock:
            self._task_words.update(fresh)
            rows = []
            for word in words:
                vector = fresh.get(word)
                rows.append(self._task_words[word] if vector is None else vector)
                if word in self._task_words:
                    self._task_words.move_to_end(word)
            while len(self._task_words) > TASK_WORDS_KEPT:
                self._task_words.popitem(last=False)
            return np.stack(rows)

    def forget_task_words(self) -> None:
        """Empties the cache of tasks' words (the benchmark's cold measurement)."""
        with self._lock:
            self._task_words.clear()

    def has(self, text: str) -> bool:
        with self._lock:
            return self.key(text) in self._vectors

    def put(self, text: str, vector: np.ndarray) -> None:
        """Adds a vector computed elsewhere (e.g. stored by the server for this text)."""
        with self._lock:
            self._vectors[self.key(text)] = np.asarray(vector, dtype=np.float32)

    def embed_query(self, text: str, *, third: bool = True) -> np.ndarray:
        """A task's vector: the backend's query side where it has one (embeddings.query_embedder).
        `third=False`: a routed backend's third model is not run, its columns left zero (an index
        that does not weigh its signal, SelectionConfig.third_model_weight 0, reads nothing there)."""
        backend = self.backend
        if not third and getattr(backend, "third", None) is not None:
            return np.asarray(backend.embed_query([text], third=False)[0], dtype=np.float32)
        if backend is not None:
            from .embeddings import query_embedder

            return np.asarray(query_embedder(backend)([text])[0], dtype=np.float32)
        return np.asarray(self.embedder([text])[0], dtype=np.float32)

    def __len__(self) -> int:
        return len(self._vectors)

    def nbytes(self) -> int:
        return sum(v.nbytes for v in self._vectors.values())


_default_caches: dict[str, EmbeddingCache] = {}
_default_cache_lock = threading.Lock()


def default_cache() -> EmbeddingCache:
    """The process's cache for the configured backend (EMBEDDING_BACKEND)."""
    from . import embeddings

    spec = embeddings.configured_spec()
    with _default_cache_lock:
        if spec not in _default_caches:
            _default_caches[spec] = EmbeddingCache(backend=embeddings.backend(spec))
        return _default_caches[spec]
