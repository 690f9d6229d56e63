"""Typed configs for embedders and memories, and builders that turn them into objects.

YAML example (a ``memory:`` section of a stage config)::

    memory:
      path: runs/ical/memory.db
      weights: null                   # [λ_instruction, λ_text_state, λ_visual_state]; null = recorded
                                      # in the store, or ICAL's [0.8, 0.1, 0.1] for a new memory
      key: null                       # commander | dialogue | instruction; null = recorded / commander
      index: flat                     # flat (exact) | hnsw | ivf; saved beside the store (.faiss)
      type_vote: 0.0                  # β of the task-type vote re-ranking (memory.rerank); 0 = off
      text_embedder: {model: null}    # null = bundled all-MiniLM-L6-v2
      image_embedder: {kind: image, clip_path: null}   # CLIP if the folder exists, else randproj
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Literal

from icalkit.memory.embed import Embedder, build_embedder
from icalkit.memory.example_memory import ExampleMemory
from icalkit.memory.index import INDEX_KINDS
from icalkit.memory.keys import KEY_KINDS
from icalkit.memory.trajectory_db import TrajectoryDB


@dataclass
class TextEmbedderConfig:
    """Text embedder: a local sentence-transformers folder (``None`` = all-MiniLM-L6-v2)."""

    kind: Literal["sentence-transformers"] = "sentence-transformers"
    model: str | None = None
    device: str = "cpu"
    batch_size: int = 64
    num_threads: int | None = None


@dataclass
class ImageEmbedderConfig:
    """Image embedder for the visual-state signal.

    ``kind``: "image" = CLIP if ``clip_path`` exists locally, else the random-projection fallback;
    "clip" = CLIP, error if missing; "random-projection" = fallback always; "none" = no visual signal.
    """

    kind: Literal["image", "clip", "random-projection", "none"] = "image"
    clip_path: str | None = None
    device: str = "cpu"
    size: int = 32
    dim: int = 256
    seed: int = 0

    def validate(self) -> None:
        if self.kind == "clip" and not self.clip_path:
            raise ValueError("image_embedder.kind=clip needs image_embedder.clip_path")
        if self.size < 1 or self.dim < 1:
            raise ValueError(f"image_embedder.size and .dim must be >= 1, got {self.size}, {self.dim}")


@dataclass
class IndexConfig:
    """FAISS settings (see :class:`~icalkit.memory.index.VectorIndex`)."""

    hnsw_m: int = 32
    ef_search: int = 128
    ef_construction: int = 64
    nlist: int | None = None
    nprobe: int = 16
    min_train: int = 1024


@dataclass
class MemoryConfig:
    """Example memory: file, embedders, score weights, retrieval key kind, index kind.

    ``weights`` and ``key`` are recorded in a new store; ``None`` reuses the recorded ones (ICAL's
    (0.8, 0.1, 0.1) and ``commander`` for a new store). Other values than the recorded ones are an error.
    """

    path: str = "runs/memory/examples.db"
    weights: tuple[float, float, float] | None = None
    key: str | None = None
    index: str = "flat"
    persist_index: bool = True
    type_vote: float = 0.0
    index_params: IndexConfig = field(default_factory=IndexConfig)
    text_embedder: TextEmbedderConfig = field(default_factory=TextEmbedderConfig)
    image_embedder: ImageEmbedderConfig = field(default_factory=ImageEmbedderConfig)

    def validate(self) -> None:
        if self.index not in INDEX_KINDS:
            raise ValueError(f"memory.index {self.index!r} is not one of {list(INDEX_KINDS)}")
        if self.key is not None and self.key not in KEY_KINDS:
            raise ValueError(f"memory.key {self.key!r} is not one of {list(KEY_KINDS)} (or null)")
        if not self.type_vote >= 0:
            raise ValueError(f"memory.type_vote must be >= 0 (0 = no re-ranking), got {self.type_vote}")
        if self.weights is not None and (len(self.weights) != 3 or min(self.weights) < 0 or sum(self.weights) == 0):
            raise ValueError(f"memory.weights must be 3 non-negative numbers, not all 0; got {self.weights}")


def build_text_embedder(cfg: TextEmbedderConfig) -> Embedder:
    """Text embedder from its config."""
    return build_embedder(
        cfg.kind, model=cfg.model, device=cfg.device, batch_size=cfg.batch_size, num_threads=cfg.num_threads
    )


def build_image_embedder_from_config(cfg: ImageEmbedderConfig) -> Embedder | None:
    """Image embedder from its config (``None`` for kind "none")."""
    if cfg.kind == "none":
        return None
    if cfg.kind == "clip":
        return build_embedder("clip", path=cfg.clip_path, device=cfg.device)
    if cfg.kind == "random-projection":
        return build_embedder("random-projection", size=cfg.size, dim=cfg.dim, seed=cfg.seed)
    return build_embedder("image", clip_path=cfg.clip_path, device=cfg.device, size=cfg.size, dim=cfg.dim, seed=cfg.seed)


def build_memory(cfg: MemoryConfig, text_embedder: Embedder | None = None) -> ExampleMemory:
    """Open (or create) the example memory described by ``cfg``; reuse ``text_embedder`` if given."""
    params = {f.name: v for f in fields(cfg.index_params) if (v := getattr(cfg.index_params, f.name)) is not None}
    return ExampleMemory(
        cfg.path,
        text_embedder or build_text_embedder(cfg.text_embedder),
        build_image_embedder_from_config(cfg.image_embedder),
        weights=cfg.weights,
        index_kind=cfg.index,
        index_params=params,
        key=cfg.key,
        persist_index=cfg.persist_index,
        type_vote=cfg.type_vote,
    )


def build_trajectory_db(path: str, cfg: TextEmbedderConfig | None = None, text_embedder: Embedder | None = None) -> TrajectoryDB:
    """Open (or create) a P-RAG trajectory database at ``path``."""
    return TrajectoryDB(path, text_embedder or build_text_embedder(cfg or TextEmbedderConfig()))
