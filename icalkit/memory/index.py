"""FAISS inner-product index over unit vectors, with incremental adds and filtered search.

Kinds (``index: flat|hnsw|ivf`` in the memory config):

- ``flat``: exact inner product (``IndexFlatIP``), the default; fine up to ~10^5 vectors.
- ``hnsw``: graph index (``IndexHNSWFlat``, inner product); approximate, fast at any size;
  accuracy/speed via ``ef_search``.
- ``ivf``: inverted lists (``IndexIVFFlat``); approximate; trained on the vectors present once
  there are ``min_train`` of them (searched exactly until then) and retrained when the index has
  grown ``retrain_factor`` times since training; accuracy/speed via ``nprobe``.

The vectors live only inside FAISS (no second float32 copy): :meth:`VectorIndex.vectors` reads
rows back with ``reconstruct_batch`` (IVF keeps a direct map for this), e.g. to rescore the k
results per signal. Positions (0..ntotal-1, in insertion order) are the ids returned by
:meth:`search`. Filters are an ``allowed`` boolean mask over positions, applied inside FAISS with
an ``IDSelectorBitmap``; when few positions are allowed, the search is done exactly over them
instead (approximate indexes lose recall under very selective filters).

:meth:`VectorIndex.save` / :meth:`VectorIndex.load` write and read the index with
``faiss.write_index`` / ``faiss.read_index`` (the example memory keeps it beside its store).
"""

from __future__ import annotations

import math
import os
import threading
from pathlib import Path
from typing import Any

import numpy as np

INDEX_KINDS = ("flat", "hnsw", "ivf")


def private_tmp(path: Path) -> Path:
    """A temporary name beside ``path`` that no other process or thread writing ``path`` uses."""
    return path.with_name(f"{path.name}.{os.getpid()}-{threading.get_ident()}.tmp")


class IndexConfigError(ValueError):
    """Bad index settings or query."""


class VectorIndex:
    """Inner-product index over (n, dim) float32 vectors.

    Args:
        dim: vector size.
        kind: "flat", "hnsw" or "ivf".
        hnsw_m: HNSW graph degree.
        ef_construction: HNSW build beam width.
        ef_search: HNSW search beam width (raised to k when smaller).
        nlist: IVF list count; ``None`` = round(sqrt(n)) at training time (clamped to 1..4096).
        nprobe: IVF lists visited per query.
        min_train: IVF trains once this many vectors exist (default 1024).
        retrain_factor: IVF retrains when ntotal reaches this multiple of the training size.
        exact_below: filtered searches allowing at most this many positions run exactly in numpy.
        train_points_per_list: IVF k-means uses at most this many training vectors per list.
    """

    def __init__(
        self,
        dim: int,
        kind: str = "flat",
        hnsw_m: int = 32,
        ef_construction: int = 80,
        ef_search: int = 64,
        nlist: int | None = None,
        nprobe: int = 8,
        min_train: int = 1024,
        retrain_factor: float = 8.0,
        exact_below: int = 2048,
        train_points_per_list: int = 64,
    ):
        if kind not in INDEX_KINDS:
            raise IndexConfigError(f"unknown index kind {kind!r}; available: {list(INDEX_KINDS)}")
        if dim < 1:
            raise IndexConfigError(f"index dim must be >= 1, got {dim}")
        import faiss

        self._faiss = faiss
        self.dim, self.kind = int(dim), kind
        self.hnsw_m, self.ef_construction, self.ef_search = hnsw_m, ef_construction, ef_search
        self.nlist, self.nprobe = nlist, nprobe
        self.min_train, self.retrain_factor, self.exact_below = min_train, retrain_factor, exact_below
        self.train_points_per_list = train_points_per_list
        self._trained_on = 0
        self._index = self._new_index(None)

    @property
    def ntotal(self) -> int:
        """Number of vectors added."""
        return int(self._index.ntotal)

    def vectors(self, positions: np.ndarray | list[int]) -> np.ndarray:
        """(len(positions), dim) float32 rows read back from FAISS."""
        pos = np.asarray(positions, dtype=np.int64)
        if len(pos) == 0:
            return np.zeros((0, self.dim), np.float32)
        if pos.min() < 0 or pos.max() >= self.ntotal:
            raise IndexConfigError(f"positions must be in 0..{self.ntotal - 1}, got {pos.min()}..{pos.max()}")
        return np.asarray(self._index.reconstruct_batch(pos), dtype=np.float32)

    def _new_index(self, train: np.ndarray | None) -> Any:
        """A fresh FAISS index; IVF is trained on ``train`` when given (else flat until min_train)."""
        faiss = self._faiss
        if self.kind == "hnsw":
            index = faiss.IndexHNSWFlat(self.dim, self.hnsw_m, faiss.METRIC_INNER_PRODUCT)
            index.hnsw.efConstruction = self.ef_construction
            return index
        if self.kind == "ivf" and train is not None:
            n_train = len(train)
            nlist = self.nlist or int(round(math.sqrt(n_train)))
            nlist = max(1, min(nlist, 4096, n_train))
            quantizer = faiss.IndexFlatIP(self.dim)
            index = faiss.IndexIVFFlat(quantizer, self.dim, nlist, faiss.METRIC_INNER_PRODUCT)
            index.cp.max_points_per_centroid = self.train_points_per_list  # bounds k-means cost
            index.train(train)
            index.make_direct_map()  # so rows can be read back (rescoring, exact filtered search)
            self._trained_on = n_train
            return index
        return faiss.IndexFlatIP(self.dim)

    def add(self, vectors: np.ndarray) -> np.ndarray:
        """Append (n, dim) vectors; return their positions."""
        x = np.ascontiguousarray(vectors, dtype=np.float32)
        if x.ndim != 2 or x.shape[1] != self.dim:
            raise IndexConfigError(f"index expects (n, {self.dim}) vectors, got shape {x.shape}")
        start = self.ntotal
        n = start + len(x)
        needs_ivf = self.kind == "ivf" and (
            (self._trained_on == 0 and n >= self.min_train)
            or (self._trained_on and n >= self.retrain_factor * self._trained_on)
        )
        if needs_ivf:  # (re)train on everything: a temporary copy only while training
            everything = np.concatenate([self.vectors(np.arange(start)), x])
            self._index = self._new_index(everything)
            self._index.add(everything)
        elif len(x):
            self._index.add(x)
        return np.arange(start, n, dtype=np.int64)

    def search(self, queries: np.ndarray, k: int, allowed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Top-k by inner product.

        Args:
            queries: (q, dim) float32.
            k: results per query.
            allowed: optional (ntotal,) bool mask of positions that may be returned.

        Returns:
            scores (q, k) float32 and positions (q, k) int64, best first; -1 / -inf pad missing.
        """
        q = np.ascontiguousarray(queries, dtype=np.float32)
        if q.ndim != 2 or q.shape[1] != self.dim:
            raise IndexConfigError(f"queries must be (q, {self.dim}), got shape {q.shape}")
        if k < 1:
            raise IndexConfigError(f"k must be >= 1, got {k}")
        n = self.ntotal
        if allowed is not None:
            allowed = np.asarray(allowed, dtype=bool)
            if allowed.shape != (n,):
                raise IndexConfigError(f"allowed mask must have shape ({n},), got {allowed.shape}")
            n_allowed = int(allowed.sum())
            if n_allowed == n:
                allowed = None
            elif n_allowed <= max(self.exact_below, k):
                subset = np.flatnonzero(allowed)
                return exact_search(self.vectors(subset), q, k, subset)
        kk = min(k, n)
        if kk == 0:
            return _pad(np.zeros((len(q), 0), np.float32), np.zeros((len(q), 0), np.int64), k)
        params, keep = self._params(kk, allowed)
        scores, pos = self._index.search(q, kk, params=params)
        del keep
        return _pad(scores, pos.astype(np.int64), k)

    def _params(self, k: int, allowed: np.ndarray | None) -> tuple[Any, Any]:
        faiss = self._faiss
        kwargs: dict[str, Any] = {}
        bits = None
        if allowed is not None:
            bits = np.packbits(allowed, bitorder="little")
            kwargs["sel"] = faiss.IDSelectorBitmap(self.ntotal, faiss.swig_ptr(bits))
        if self.kind == "hnsw":
            return faiss.SearchParametersHNSW(efSearch=max(self.ef_search, k), **kwargs), (bits, kwargs)
        if isinstance(self._index, faiss.IndexIVFFlat):
            return faiss.SearchParametersIVF(nprobe=self.nprobe, **kwargs), (bits, kwargs)
        return (faiss.SearchParameters(**kwargs) if kwargs else None), (bits, kwargs)

    # -- persistence -------------------------------------------------------------------------
    def save(self, path: str | Path) -> None:
        """Write the FAISS index to ``path`` (atomically: a temporary file of this process and thread, then
        a rename — evaluation workers opening one memory may build and save its index at once)."""
        path = Path(path)
        tmp = private_tmp(path)
        self._faiss.write_index(self._index, str(tmp))
        os.replace(tmp, path)

    def load(self, path: str | Path) -> None:
        """Replace this index's contents with the FAISS index saved at ``path``.

        Raises:
            IndexConfigError: the file is unreadable or holds an index of another kind or size.
        """
        try:
            index = self._faiss.read_index(str(path))
        except RuntimeError as exc:
            raise IndexConfigError(f"cannot read FAISS index {path}: {exc}") from exc
        faiss = self._faiss
        kind = ("hnsw" if isinstance(index, faiss.IndexHNSWFlat) else
                "ivf" if isinstance(index, faiss.IndexIVFFlat) else "flat")
        if index.d != self.dim or (kind != self.kind and not (self.kind == "ivf" and kind == "flat")):
            raise IndexConfigError(f"FAISS index {path} is a {kind} index of dim {index.d}; "
                                   f"expected {self.kind} of dim {self.dim}")
        if kind == "ivf":
            index.make_direct_map()  # no-op when the saved index already has it
            self._trained_on = int(index.ntotal)
        self._index = index


def exact_search(rows: np.ndarray, queries: np.ndarray, k: int, ids: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Brute-force top-k inner product with numpy over ``rows`` (whose positions are ``ids``)."""
    sims = queries @ rows.T
    kk = min(k, rows.shape[0])
    if kk == 0:
        return _pad(np.zeros((len(queries), 0), np.float32), np.zeros((len(queries), 0), np.int64), k)
    part = np.argpartition(-sims, kk - 1, axis=1)[:, :kk]
    part_scores = np.take_along_axis(sims, part, axis=1)
    order = np.argsort(-part_scores, axis=1, kind="stable")
    top = np.take_along_axis(part, order, axis=1)
    scores = np.take_along_axis(sims, top, axis=1).astype(np.float32)
    pos = top if ids is None else np.asarray(ids, dtype=np.int64)[top]
    return _pad(scores, pos.astype(np.int64), k)


def _pad(scores: np.ndarray, pos: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    if scores.shape[1] >= k:
        return scores[:, :k], pos[:, :k]
    extra = k - scores.shape[1]
    scores = np.concatenate([scores, np.full((len(scores), extra), -np.inf, np.float32)], axis=1)
    pos = np.concatenate([pos, np.full((len(pos), extra), -1, np.int64)], axis=1)
    return scores, pos
