"""Ranking: which procedures (at most the agent's cap, default two) go into the instruction for a
task. Pure Python and numpy; the semantic retriever's model (sentence-transformers) only with the
`[embeddings]` extra, loaded on first use. The server ranks with this same module (library/serving.py
keeps the server-side index and the stored vectors), so there is one ranker.

Method (docs/design.md "Serving agents"):

1. Hard filter: when an intent is given, only records of that intent are candidates.
2. Three retrievers score every candidate against the task text:
   - semantic: cosine similarity between the task and the record's `appliesWhen`, with the bundled
     all-MiniLM-L6-v2 (embeddings computed once per distinct `appliesWhen` text and cached);
   - lexical: IDF-weighted overlap — the share of the `appliesWhen` words' IDF mass (IDF over the
     candidate set) that also appears in the task, after lower-casing, stop-word removal and a light
     suffix stemmer;
   - exact: the number of the record's `requiredTools` names, or its `id`, that appear verbatim in
     the task (as identifier tokens, so `cancel_reservation` does not match `cancel`).
3. Each retriever ranks only the candidates that reach its floor (`SelectionConfig`): below the floor
   the retriever has no opinion. Reciprocal rank fusion sums 1 / (rrf_k + rank) over the retrievers.
   A candidate is eligible when the semantic or the exact retriever ranks it, or the lexical one
   does and its semantic similarity reaches a lower supporting floor; so an unrelated task gets
   nothing, and a shared word or two is not enough.
4. The eligible candidates with the highest fused score are injected, at most `cap`.
   `k` (at most 20) returns the top k candidates by fused score with every retriever's score, for
   diagnostics; ranking is the same with or without it.

Usage:

    from procmem_client.ranking import Ranker
    ranker = Ranker()                            # the bundled model, loaded on first use
    index = ranker.index(records)                # records as GET /procedures returns them
    result = index.select(task="I want to cancel my reservation", intent=None, cap=2, k=5)
    result["injected"]                           # the records to render into the instruction

An `Index` is immutable; build one per active set (the client and the server key it by the set's
ETag). Building embeds only texts that the process has not embedded before.
"""

from __future__ import annotations

import hashlib
import math
import re
import threading
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence, TypedDict

import numpy as np

MAX_K = 20

Embedder = Callable[[list[str]], np.ndarray]

STOP_WORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have
    having he her here hers herself him himself his how i if in into is it its itself just let me more
    most my myself no nor not now of off on once only or other our ours ourselves out over own please
    same she should so some such than that the their theirs them themselves then there these they this
    those through to too under until up very was we were what when where which while who whom why will
    with would you your yours yourself yourselves also get got want wants wanted like would need needs
    customer customers user users agent asks ask asked
    """.split()
)
_WORD_RE = re.compile(r"[a-z0-9]+")
_IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)*")


@dataclass(frozen=True)
class SelectionConfig:
    """Floors and fusion constants. Scores at or above a floor make a retriever rank the candidate.

    The floors were set on the tau2-bench airline and retail tasks (clients/python/tests/test_ranking.py):
    requests for a procedure mostly score 0.35–0.75 semantically, unrelated requests below 0.27."""

    semantic_floor: float = 0.35
    lexical_floor: float = 0.50
    exact_floor: int = 1
    # Word overlap alone is weak evidence (two sentences can share "cancel" and "order" and mean
    # different things): a candidate that only the lexical retriever ranks is eligible only when its
    # semantic similarity also reaches this lower floor.
    lexical_needs_semantic: float = 0.30
    rrf_k: int = 60


class Scores(TypedDict):
    semantic: float
    lexical: float
    exact: int


class Ranks(TypedDict):
    semantic: int | None
    lexical: int | None
    exact: int | None


class RankedCandidate(TypedDict):
    id: str
    version: int
    intent: str | None
    scores: Scores
    ranks: Ranks
    fused: float
    eligible: bool
    injected: bool


class Selection(TypedDict):
    task: str
    intent: str | None
    cap: int
    injected: list[dict[str, Any]]
    ranked: list[RankedCandidate]


# --------------------------------------------------------------------------------------------- text


def stem(word: str) -> str:
    """A light suffix stemmer: enough that 'cancelled', 'cancelling' and 'cancel' meet."""
    for suffix, keep in (("ations", 3), ("ation", 3), ("ing", 3), ("ied", 3), ("ies", 3), ("ed", 3), ("es", 3), ("s", 3)):
        if word.endswith(suffix) and len(word) - len(suffix) >= keep:
            word = word[: -len(suffix)]
            if suffix in {"ied", "ies"}:
                word += "y"
            break
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeiouls":
        word = word[:-1]  # cancell → cancel, shipp → ship
    if word.endswith("ll") and len(word) > 4:
        word = word[:-1]
    return word


def words(text: str) -> list[str]:
    return [stem(w) for w in _WORD_RE.findall(text.lower()) if w not in STOP_WORDS and len(w) > 1]


def identifiers(text: str) -> set[str]:
    """Identifier-like tokens, verbatim (case kept): tool names and dotted procedure ids."""
    found = set()
    for token in _IDENT_RE.findall(text):
        found.add(token)
        found.add(token.rstrip("."))
    return found


# --------------------------------------------------------------------------------------------- embeddings


class EmbeddingCache:
    """Unit vectors per distinct `appliesWhen` text, computed once per process. Versions are
    immutable, so a text's vector never goes stale; the key is the text's sha1."""

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


# --------------------------------------------------------------------------------------------- index


class Index:
    """The prepared form of one set of procedure records: the embedding matrix, the lexical
    inverted index with IDF, and the exact-match table. Immutable after construction."""

    def __init__(self, records: Sequence[Mapping[str, Any]], *, cache: EmbeddingCache, config: SelectionConfig) -> None:
        self.records = list(records)
        self.config = config
        self._cache = cache
        n = len(self.records)
        self.matrix = cache.matrix([r["appliesWhen"] for r in self.records]) if n else np.zeros((0, 0), np.float32)

        # lexical: IDF over the set's appliesWhen texts; documents as sets of stems
        doc_terms = [set(words(r["appliesWhen"])) for r in self.records]
        df: dict[str, int] = defaultdict(int)
        for terms in doc_terms:
            for term in terms:
                df[term] += 1
        self.idf = {term: math.log(1 + n / count) for term, count in df.items()}
        postings: dict[str, list[int]] = defaultdict(list)
        for i, terms in enumerate(doc_terms):
            for term in terms:
                postings[term].append(i)
        self.postings = {term: np.asarray(ids, dtype=np.int64) for term, ids in postings.items()}
        self.doc_weight = np.asarray([sum(self.idf[t] for t in terms) for terms in doc_terms] or [0.0], dtype=np.float64)[:n]

        # exact: tool names and ids → records
        exact: dict[str, list[int]] = defaultdict(list)
        for i, record in enumerate(self.records):
            for name in {record["id"], *record.get("requiredTools", [])}:
                exact[name].append(i)
        self.exact = {name: np.asarray(ids, dtype=np.int64) for name, ids in exact.items()}

        by_intent: dict[str | None, list[int]] = defaultdict(list)
        for i, record in enumerate(self.records):
            by_intent[record.get("intent")].append(i)
        self.by_intent = {intent: np.asarray(ids, dtype=np.int64) for intent, ids in by_intent.items()}

    def __len__(self) -> int:
        return len(self.records)

    def nbytes(self) -> int:
        """Memory of the stacked embedding matrix (the per-text cache holds the same vectors again)."""
        return int(self.matrix.nbytes)

    # -- retrievers: each returns a score per record (numpy arrays of length n)

    def semantic_scores(self, task: str, query_vector: np.ndarray | None = None) -> np.ndarray:
        if not len(self):
            return np.zeros(0, dtype=np.float32)
        vector = query_vector if query_vector is not None else self._cache.embed_query(task)
        return self.matrix @ vector

    def lexical_scores(self, task: str) -> np.ndarray:
        scores = np.zeros(len(self), dtype=np.float64)
        for term in set(words(task)):
            ids = self.postings.get(term)
            if ids is not None:
                scores[ids] += self.idf[term]
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(self.doc_weight > 0, scores / np.maximum(self.doc_weight, 1e-12), 0.0)

    def exact_scores(self, task: str) -> np.ndarray:
        scores = np.zeros(len(self), dtype=np.int64)
        for token in identifiers(task):
            ids = self.exact.get(token)
            if ids is not None:
                scores[ids] += 1
        return scores

    # -- selection

    def select(
        self,
        *,
        task: str,
        intent: str | None = None,
        cap: int = 2,
        k: int | None = None,
        query_vector: np.ndarray | None = None,
    ) -> Selection:
        """Ranks the records for `task`. At most `cap` are injected; `k` (≤ 20) adds diagnostics.

        Raises ValueError for an empty task, a negative cap or k outside 1..20."""
        if not isinstance(task, str) or not task.strip():
            raise ValueError("task must be a non-empty string")
        if cap < 0:
            raise ValueError("cap must be 0 or more")
        if k is not None and not (1 <= k <= MAX_K):
            raise ValueError(f"k must be between 1 and {MAX_K}")
        if intent:
            candidates = self.by_intent.get(intent, np.zeros(0, dtype=np.int64))
        else:
            candidates = np.arange(len(self), dtype=np.int64)
        result: Selection = {"task": task, "intent": intent or None, "cap": cap, "injected": [], "ranked": []}
        if candidates.size == 0:
            return result

        semantic = self.semantic_scores(task, query_vector)[candidates]
        lexical = self.lexical_scores(task)[candidates]
        exact = self.exact_scores(task)[candidates]
        config = self.config

        fused = np.zeros(candidates.size, dtype=np.float64)
        ranks: dict[str, np.ndarray] = {}
        for name, scores, floor in (
            ("semantic", semantic, config.semantic_floor),
            ("lexical", lexical, config.lexical_floor),
            ("exact", exact, config.exact_floor),
        ):
            passing = np.flatnonzero((scores >= floor) & (scores > 0))
            rank_of = np.zeros(candidates.size, dtype=np.int64)  # 0: not ranked by this retriever
            if passing.size:
                # higher score first; ties broken by the semantic score, then by position (stable)
                order = passing[np.lexsort((-semantic[passing], -scores[passing]))]
                rank_of[order] = np.arange(1, order.size + 1)
                fused[order] += 1.0 / (config.rrf_k + rank_of[order])
            ranks[name] = rank_of

        eligible = (ranks["semantic"] > 0) | (ranks["exact"] > 0) | (
            (ranks["lexical"] > 0) & (semantic >= config.lexical_needs_semantic)
        )
        def top(positions: np.ndarray, m: int) -> list[int]:
            """The best m positions by fused score, then semantic similarity, then id
            (deterministic). Only the few that can make the top m are sorted in Python: at the
            m-th fused score everything tied with it is kept, so ties still break by the full key."""
            if positions.size == 0 or m <= 0:
                return []
            few = 4 * m + 64
            if positions.size > few:
                scores = fused[positions]
                threshold = np.partition(scores, positions.size - m)[positions.size - m]
                kept = positions[scores >= threshold]
                if kept.size > few:  # many ties at the threshold (e.g. all unranked): order them in numpy
                    kept = positions[np.lexsort((-semantic[positions], -scores))][:few]
                positions = kept
            ordered = sorted(
                positions.tolist(), key=lambda j: (-fused[j], -float(semantic[j]), self.records[candidates[j]]["id"])
            )
            return ordered[:m]

        injected_positions = top(np.flatnonzero(eligible), cap)
        order = top(np.arange(candidates.size), k) if k is not None else []
        result["injected"] = [dict(self.records[candidates[j]]) for j in injected_positions]
        if k is not None:
            injected_set = set(injected_positions)
            for j in order:
                record = self.records[candidates[j]]
                result["ranked"].append(
                    {
                        "id": record["id"],
                        "version": record["version"],
                        "intent": record.get("intent"),
                        "scores": {
                            "semantic": round(float(semantic[j]), 4),
                            "lexical": round(float(lexical[j]), 4),
                            "exact": int(exact[j]),
                        },
                        "ranks": {name: (int(r[j]) or None) for name, r in ranks.items()},  # type: ignore[typeddict-item]
                        "fused": round(float(fused[j]), 6),
                        "eligible": bool(eligible[j]),
                        "injected": j in injected_set,
                    }
                )
        return result


class Ranker:
    """Builds indexes over record sets with a shared embedding cache and configuration."""

    def __init__(
        self,
        *,
        embedder: Embedder | None = None,
        cache: EmbeddingCache | None = None,
        config: SelectionConfig | None = None,
    ) -> None:
        if cache is None:
            cache = EmbeddingCache(embedder) if embedder is not None else default_cache()
        self.cache = cache
        self.config = config or SelectionConfig()

    def index(self, records: Iterable[Mapping[str, Any]]) -> Index:
        return Index(list(records), cache=self.cache, config=self.config)

    def select(
        self, *, task: str, records: Iterable[Mapping[str, Any]], intent: str | None = None, cap: int = 2, k: int | None = None
    ) -> Selection:
        """One-shot: builds an index and selects. Build an `Index` once when the records repeat."""
        return self.index(records).select(task=task, intent=intent, cap=cap, k=k)


def select(
    *, task: str, records: Iterable[Mapping[str, Any]], intent: str | None = None, cap: int = 2, k: int | None = None
) -> Selection:
    """Module-level shortcut with the default ranker (bundled model, default floors)."""
    return Ranker().select(task=task, records=records, intent=intent, cap=cap, k=k)


__all__ = [
    "MAX_K",
    "EmbeddingCache",
    "Index",
    "RankedCandidate",
    "Ranker",
    "Selection",
    "SelectionConfig",
    "default_cache",
    "identifiers",
    "select",
    "stem",
    "words",
]
