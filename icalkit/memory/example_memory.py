"""ICAL example memory: durable examples + FAISS retrieval with the aggregated multi-signal score.

ICAL scores a stored example ``e`` for a query ``q`` by

    s(e) = λ_I · <q_instr, e_instr> + λ_text · <q_text, e_text> + λ_vis · <q_vis, e_vis>

with unit vectors from the text embedder (instruction, textual state) and the image embedder
(visual state). Because ``s`` is linear, it is *exactly* an inner product between the stored
concatenation ``[e_instr, e_text, e_vis]`` and the weighted query ``[λ_I q_instr, λ_text q_text,
λ_vis q_vis]``. The memory therefore keeps one FAISS index over the concatenated vectors and
searches it with the weighted query: with the default ``flat`` index the top-k is exact for any
weights (given per query if wanted); ``hnsw`` / ``ivf`` are approximate nearest-neighbour
searches of the same score (their recall is measured in tests and benchmarks). A missing signal
(an example stored without a frame, or a query without one) contributes 0 to the score.

Filters (exclude task ids, allow-list of task types) are applied inside the search, not after it,
so they never shrink the result below k when k examples pass them.

The instruction signal of an example and of a query is the same kind of text, built by
:func:`~icalkit.memory.keys.key_text` from the goal sentence and dialogue (the memory's *key
kind*). The default weights are ICAL's (0.8 instruction, 0.1 textual state, 0.1 visual state).
The key kind and weights are recorded in the store when it is created; opening it with other
settings is an error naming both. The FAISS index is saved beside the store
(:mod:`~icalkit.memory.index_file`) and reloaded when the store has not changed; otherwise it is
rebuilt, with a log line saying why.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from icalkit.memory.embed import Embedder
from icalkit.memory.example import Example, format_state
from icalkit.memory.index import IndexConfigError, VectorIndex
from icalkit.memory.index_file import IndexStamp, index_paths, read_stamp, stale_reason, write_stamp
from icalkit.memory.keys import DEFAULT_KEY, KEY_KINDS, KeyKindError, key_text
from icalkit.memory.rerank import TYPE_VOTE_POOL, type_vote
from icalkit.memory.store import ExampleStore, MixedEmbedderError, StoreError

SIGNALS = ("instruction", "text_state", "visual_state")
DEFAULT_WEIGHTS = (0.8, 0.1, 0.1)  # ICAL: instruction, textual state, visual state
LEGACY_KEY = "instruction"  # stores written before key kinds were recorded embedded goal sentences
log = logging.getLogger(__name__)


class MemorySettingsError(StoreError):
    """A memory is opened with another key kind or weighting than it was written with."""


class EmptyMemoryError(LookupError):
    """Retrieval from a memory with no (matching) examples."""


class Retrieved(NamedTuple):
    """One retrieval result: the example, its aggregated score and the per-signal similarities.

    ``signal_scores`` holds the raw (unweighted) cosine similarity of every signal present in
    both the query and the example.
    """

    example: Example
    score: float
    signal_scores: dict[str, float]


class ExampleMemory:
    """Durable example memory with aggregated-score retrieval.

    Args:
        path: SQLite file of the memory (created if missing).
        text_embedder: embeds instructions and textual states.
        image_embedder: embeds frames (visual state); ``None`` = no visual signal.
        weights: (λ_instruction, λ_text_state, λ_visual_state), non-negative, not all zero;
            ``None`` = the weights recorded in the store, or ICAL's (0.8, 0.1, 0.1) for a new one.
        index_kind: "flat" (exact), "hnsw" or "ivf"; extra settings in ``index_params``.
        index_params: keyword arguments of :class:`~icalkit.memory.index.VectorIndex`.
        key: retrieval key kind (see :mod:`~icalkit.memory.keys`); ``None`` = the recorded one,
            or ``commander`` for a new store.
        persist_index: save the FAISS index beside the store and reload it when still valid.
        type_vote: β of the task-type vote re-ranking (:mod:`~icalkit.memory.rerank`); 0 = off.

    Raises:
        MixedEmbedderError: the store was written with other embedders.
        MemorySettingsError: the store was written with another key kind or other weights.
    """

    def __init__(
        self,
        path: str | Path,
        text_embedder: Embedder,
        image_embedder: Embedder | None = None,
        weights: Sequence[float] | None = None,
        index_kind: str = "flat",
        index_params: dict[str, Any] | None = None,
        key: str | None = None,
        persist_index: bool = True,
        type_vote: float = 0.0,
    ):
        if not type_vote >= 0:
            raise ValueError(f"type_vote must be >= 0 (0 = no re-ranking), got {type_vote}")
        self.type_vote = float(type_vote)
        self.text_embedder, self.image_embedder = text_embedder, image_embedder
        self.embedders: dict[str, Embedder] = {"instruction": text_embedder, "text_state": text_embedder}
        if image_embedder is not None:
            self.embedders["visual_state"] = image_embedder
        self.signals = [s for s in SIGNALS if s in self.embedders]
        dims = [self.embedders[s].dim for s in self.signals]
        offsets = np.cumsum([0, *dims])
        self._blocks = {s: slice(int(offsets[i]), int(offsets[i + 1])) for i, s in enumerate(self.signals)}
        self.store = ExampleStore(path)
        self.store.check_embedders(self.embedder_tags())
        self.key, self.weights = self._settings(key, weights)
        self.index = VectorIndex(int(offsets[-1]), kind=index_kind, **(index_params or {}))
        self._ids = np.zeros(0, np.int64)
        self._task_ids = np.zeros(0, object)
        self._task_types = np.zeros(0, object)
        self._last_id = 0
        self._lock = threading.Lock()
        self.persist_index = persist_index
        self.index_path, self.stamp_path = index_paths(self.store.path)
        self.index_report: dict[str, Any] = {}  # how the index was obtained: loaded / built, seconds, why
        self._dirty = False
        if persist_index:
            self._load_index()

    def _settings(self, key: str | None, weights: Sequence[float] | None) -> tuple[str, tuple[float, float, float]]:
        """Key kind and weights: the configured ones, checked against those recorded in the store."""
        if key is not None and key not in KEY_KINDS:
            raise KeyKindError(f"unknown retrieval key kind {key!r}; available: {list(KEY_KINDS)}")
        wanted_w = _check_weights(weights) if weights is not None else None
        stored_key = self.store.meta("key")
        if stored_key is None and self.store.count():
            stored_key = LEGACY_KEY
            log.info("%s has no recorded key kind: treating it as %r (written before key kinds existed)",
                     self.store.path, LEGACY_KEY)
        if stored_key is not None and key is not None and key != stored_key:
            raise MemorySettingsError(
                f"{self.store.path} was written with retrieval key {stored_key!r}, but key {key!r} is "
                f"configured: its stored vectors embed another kind of text. Open it with key={stored_key!r} "
                "(or key: null), or build a new memory with the new key")
        stored_w = self.store.meta("weights")
        if stored_w is not None and wanted_w is not None and tuple(json.loads(stored_w)) != wanted_w:
            raise MemorySettingsError(
                f"{self.store.path} was written with weights {tuple(json.loads(stored_w))}, but {wanted_w} are "
                "configured. Open it with weights: null to use the recorded ones, or pass weights per "
                "retrieve() call to compare weightings")
        key = self.store.set_meta("key", key or stored_key or DEFAULT_KEY, only_if_missing=True)
        w = self.store.set_meta("weights", json.dumps(list(wanted_w or DEFAULT_WEIGHTS)), only_if_missing=True)
        return key, _check_weights(json.loads(w))

    def key_text(self, instruction: str, dialogue: Sequence[Any] = ()) -> str:
        """The retrieval text of a task or example under this memory's key kind."""
        return key_text(instruction, dialogue, self.key)

    # -- the saved index -----------------------------------------------------------------------
    def _stamp(self) -> IndexStamp:
        return IndexStamp(records=self.index.ntotal, last_id=self._last_id,
                          last_key=(self.store.key_of(self._last_id) or "") if self._last_id else "",
                          embedders={s: [n, d] for s, (n, d) in self.embedder_tags().items()},
                          key=self.key, weights=list(self.weights), index=self.index.kind, dim=self.index.dim)

    def _load_index(self) -> None:
        """Load the saved index if it fits the store and settings; otherwise say why it is rebuilt."""
        if not self.index_path.exists():
            if self.stamp_path.exists():
                log.warning("rebuilding the FAISS index of %s: %s is missing", self.store.path, self.index_path.name)
                self.index_report = {"source": "built", "why": f"{self.index_path.name} is missing"}
            return
        stamp = read_stamp(self.stamp_path)
        why = stale_reason(stamp, self._stamp(), self.store)
        start = time.perf_counter()
        if why is None and isinstance(stamp, IndexStamp):
            try:
                self.index.load(self.index_path)
            except IndexConfigError as exc:
                why = str(exc)
            else:
                if self.index.ntotal != stamp.records:
                    why = f"the index file holds {self.index.ntotal} vectors, its sidecar says {stamp.records}"
        if why is not None:
            log.warning("rebuilding the FAISS index of %s: %s", self.store.path, why)
            self.index = VectorIndex(self.index.dim, kind=self.index.kind, **self._index_params())
            self.index_report = {"source": "built", "why": why}
            return
        assert isinstance(stamp, IndexStamp)
        ids, task_ids, task_types = self.store.tags(0)
        keep = ids <= stamp.last_id
        self._ids, self._task_ids, self._task_types = ids[keep], task_ids[keep], task_types[keep]
        self._last_id = stamp.last_id
        self.index_report = {"source": "loaded", "load_s": time.perf_counter() - start, "records": stamp.records}

    def _index_params(self) -> dict[str, Any]:
        ix = self.index
        return {"hnsw_m": ix.hnsw_m, "ef_construction": ix.ef_construction, "ef_search": ix.ef_search,
                "nlist": ix.nlist, "nprobe": ix.nprobe, "min_train": ix.min_train,
                "retrain_factor": ix.retrain_factor, "exact_below": ix.exact_below,
                "train_points_per_list": ix.train_points_per_list}

    def save_index(self) -> None:
        """Write the FAISS index and its sidecar beside the store (brings the index up to date first)."""
        with self._lock:
            self._refresh()
            self.index.save(self.index_path)
            write_stamp(self.stamp_path, self._stamp())
            self._dirty = False

    def close(self) -> None:
        """Save the index if records were added since the last save (``persist_index``), close the store."""
        if self.persist_index and (self._dirty or self.store.max_id() > self._last_id):
            self.save_index()
        self.store.close()

    def embedder_tags(self) -> dict[str, tuple[str, int]]:
        """``{signal: (embedder_name, dim)}`` of this memory."""
        return {s: (e.name, e.dim) for s, e in self.embedders.items()}

    def __len__(self) -> int:
        return self.store.count()

    # -- adding ------------------------------------------------------------------------------
    def add(self, example: Example, frame: np.ndarray | None = None) -> int:
        """Embed and store one example (one transaction); return its record id."""
        return self.add_many([example], None if frame is None else [frame])[0]

    def add_many(self, examples: Sequence[Example], frames: Sequence[np.ndarray | None] | None = None) -> list[int]:
        """Embed a batch of examples (frames optional, aligned) and store each in its own transaction."""
        if frames is not None and len(frames) != len(examples):
            raise ValueError(f"got {len(frames)} frames for {len(examples)} examples")
        if not examples:
            return []
        instr = self.text_embedder.embed_text([self.key_text(e.instruction, e.dialogue) for e in examples])
        state = self.text_embedder.embed_text([e.state_text() for e in examples])
        visual: dict[int, np.ndarray] = {}
        if frames is not None and any(f is not None for f in frames):
            if self.image_embedder is None:
                raise ValueError("frames given but this memory has no image embedder")
            which = [i for i, f in enumerate(frames) if f is not None]
            visual = dict(zip(which, self.image_embedder.embed_image([frames[i] for i in which]), strict=True))
        ids = []
        for i, ex in enumerate(examples):
            vecs = {"instruction": instr[i], "text_state": state[i]}
            if i in visual:
                vecs["visual_state"] = visual[i]
            tagged = {s: (self.embedders[s].name, v) for s, v in vecs.items()}
            ids.append(self.store.add_example(ex, tagged))
        return ids

    # -- per-example statistics --------------------------------------------------------------
    def transfer_scores(self) -> dict[str, list[int]]:
        """``{example_id: [tasks solved, tasks tried]}`` of the cross-replay stored with this memory
        (:mod:`icalkit.data_gen.transfer`, ``icalkit ical transfer=true``); empty when none was run."""
        raw = self.store.meta("transfer")
        if raw is None:
            return {}
        try:
            scores = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ValueError(f"memory {self.store.path}: its transfer scores are not JSON ({exc}); "
                             "run `icalkit ical ... transfer=true` again") from None
        return {str(k): [int(v[0]), int(v[1])] for k, v in scores.items()}

    def set_transfer_scores(self, scores: dict[str, list[int]]) -> None:
        """Store cross-replay scores (replacing earlier ones); ids must be this memory's examples."""
        known = {ex.example_id for ex in self}
        unknown = sorted(set(scores) - known)
        if unknown:
            raise ValueError(f"transfer scores for examples this memory does not hold: {unknown[:3]}")
        self.store.set_meta("transfer", json.dumps(scores, sort_keys=True))

    def get(self, example_id: str) -> Example:
        """Stored example by id (``KeyError`` if absent)."""
        return self.store.get_example(example_id)

    def __iter__(self) -> Iterable[Example]:
        return iter(self.store)

    # -- index maintenance -------------------------------------------------------------------
    def refresh(self) -> int:
        """Add records written since the last refresh (by any thread/process) to the index."""
        with self._lock:
            return self._refresh()

    def _refresh(self) -> int:
        upto = self.store.max_id()
        if upto <= self._last_id:
            return 0
        from_scratch = self._last_id == 0
        start = time.perf_counter()
        ids, task_ids, task_types = self.store.tags(self._last_id)
        keep = ids <= upto
        ids, task_ids, task_types = ids[keep], task_ids[keep], task_types[keep]
        joint = np.zeros((len(ids), self.index.dim), np.float32)
        for signal in self.signals:
            sv = self.store.vectors(signal, self._last_id, upto)
            if len(sv.record_ids) == 0:
                continue
            rows = np.searchsorted(ids, sv.record_ids)
            joint[rows, self._blocks[signal]] = sv.vectors
        self.index.add(joint)
        self._ids = np.concatenate([self._ids, ids])
        self._task_ids = np.concatenate([self._task_ids, task_ids])
        self._task_types = np.concatenate([self._task_types, task_types])
        self._last_id = upto
        self._dirty = True
        if from_scratch:
            self.index_report = {**self.index_report, "source": "built", "build_s": time.perf_counter() - start,
                                 "records": len(ids)}
            if self.persist_index:  # a full build is worth keeping
                self.index.save(self.index_path)
                write_stamp(self.stamp_path, self._stamp())
                self._dirty = False
        return len(ids)

    # -- retrieval ---------------------------------------------------------------------------
    def embed_query(self, instruction: str, text_state: str | dict, frame: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """Per-signal unit query vectors (``visual_state`` only when a frame and image embedder exist)."""
        out = {
            "instruction": self.text_embedder.embed_text([instruction])[0],
            "text_state": self.text_embedder.embed_text([format_state(text_state)])[0],
        }
        if frame is not None:
            if self.image_embedder is None:
                raise ValueError("query frame given but this memory has no image embedder")
            out["visual_state"] = self.image_embedder.embed_image([frame])[0]
        return out

    def retrieve(
        self,
        query_instruction: str,
        query_text_state: str | dict,
        query_frame: np.ndarray | None = None,
        k: int = 5,
        exclude_task_ids: Iterable[str] = (),
        task_types: Iterable[str] | None = None,
        weights: Sequence[float] | None = None,
    ) -> list[Retrieved]:
        """Top-k examples by the aggregated score, best first.

        Args:
            query_instruction: retrieval text of the current task, built by :meth:`key_text`
                from its goal sentence and dialogue (as the stored examples' keys were).
            query_text_state: current object state (dict, see :func:`format_state`) or its text.
            query_frame: current RGB frame (HxWx3 uint8) for the visual signal.
            k: number of results (fewer only if fewer examples pass the filters).
            exclude_task_ids: task ids never returned (e.g. the query's own task).
            task_types: if given, only examples of these task types are returned.
            weights: per-query override of (λ_I, λ_text, λ_vis).

        Raises:
            EmptyMemoryError: the memory is empty or no example passes the filters.
        """
        query = self.embed_query(query_instruction, query_text_state, query_frame)
        return self.retrieve_vectors(query, k, exclude_task_ids, task_types, weights)

    def retrieve_vectors(
        self,
        query: dict[str, np.ndarray],
        k: int = 5,
        exclude_task_ids: Iterable[str] = (),
        task_types: Iterable[str] | None = None,
        weights: Sequence[float] | None = None,
        embedder_names: dict[str, str] | None = None,
    ) -> list[Retrieved]:
        """Like :meth:`retrieve` with precomputed per-signal query vectors.

        ``embedder_names`` (``{signal: name}``), when given, must match this memory's embedders.
        """
        self._check_query(query, embedder_names)
        lam = dict(zip(SIGNALS, _check_weights(weights) if weights is not None else self.weights, strict=True))
        joint = np.zeros((1, self.index.dim), np.float32)
        for signal, vec in query.items():
            joint[0, self._blocks[signal]] = lam[signal] * vec
        with self._lock:  # FAISS must not search while another thread adds to the index
            self._refresh()
            if self.index.ntotal == 0:
                raise EmptyMemoryError(f"example memory {self.store.path} is empty: add examples before retrieving")
            allowed = self._allowed(exclude_task_ids, task_types)
            pool = max(k, TYPE_VOTE_POOL) if self.type_vote else k
            scores, pos = self.index.search(joint, pool, allowed)
            found = [(float(score), int(p)) for score, p in zip(scores[0], pos[0], strict=True) if p >= 0]
            found = type_vote(found, self._task_types, self.type_vote)[:k]
            rows = self.index.vectors([p for _, p in found])
            results = []
            for (score, p), row in zip(found, rows, strict=True):
                per = {s: float(row[self._blocks[s]] @ query[s]) for s in query if np.any(row[self._blocks[s]])}
                results.append((int(self._ids[p]), score, per))
        examples = self.store.examples([r[0] for r in results])
        return [Retrieved(ex, score, per) for ex, (_, score, per) in zip(examples, results, strict=True)]

    def _check_query(self, query: dict[str, np.ndarray], embedder_names: dict[str, str] | None) -> None:
        for signal, vec in query.items():
            if signal not in self._blocks:
                raise ValueError(f"query signal {signal!r} not in this memory's signals {self.signals}")
            want = self.embedders[signal]
            if embedder_names and signal in embedder_names and embedder_names[signal] != want.name:
                raise MixedEmbedderError(
                    f"query {signal!r} vector comes from embedder {embedder_names[signal]!r}, "
                    f"but memory {self.store.path} uses {want.name!r}"
                )
            if np.shape(vec) != (want.dim,):
                raise MixedEmbedderError(
                    f"query {signal!r} vector has shape {np.shape(vec)}, memory expects ({want.dim},) "
                    f"from embedder {want.name!r}"
                )

    def _allowed(self, exclude_task_ids: Iterable[str], task_types: Iterable[str] | None) -> np.ndarray | None:
        if isinstance(exclude_task_ids, str) or isinstance(task_types, str):
            raise ValueError("exclude_task_ids and task_types must be lists of strings, not a single str")
        exclude = list(exclude_task_ids)
        if not exclude and task_types is None:
            return None
        mask = np.ones(len(self._ids), dtype=bool)
        if exclude:
            mask &= ~np.isin(self._task_ids, exclude)
        if task_types is not None:
            mask &= np.isin(self._task_types, list(task_types))
        if not mask.any():
            raise EmptyMemoryError(
                f"none of the {len(mask)} examples in {self.store.path} passes the filters "
                f"(exclude_task_ids={exclude}, task_types={None if task_types is None else list(task_types)})"
            )
        return mask


def _check_weights(weights: Sequence[float]) -> tuple[float, float, float]:
    w = tuple(float(x) for x in weights)
    if len(w) != 3 or any(not np.isfinite(x) or x < 0 for x in w) or sum(w) == 0:
        raise ValueError(
            f"weights must be 3 finite non-negative numbers (λ_instruction, λ_text, λ_visual), not all 0; got {weights}"
        )
    return w  # type: ignore[return-value]
