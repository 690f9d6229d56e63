"""P-RAG trajectory database: (goal, per-step scene graphs, history, done) with situation retrieval.

P-RAG scores a stored trajectory ``τ`` for the current goal ``g`` and scene graph ``G`` by

    s(τ) = sim(g, τ.goal) + max_t sim(G, τ.scene_graph[t])

(cosine similarities of text embeddings). Scoring is exact and vectorised: one matrix product
over all goal vectors, one over all step vectors, and a segmented max (``np.maximum.reduceat``).
Records are durable in SQLite through :class:`~icalkit.memory.store.RecordStore`.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from icalkit.memory.embed import Embedder
from icalkit.memory.example_memory import EmptyMemoryError
from icalkit.memory.store import RecordStore

SCHEMA_VERSION = 1


def scene_graph_text(scene_graph: str | dict | list) -> str:
    """Text for a scene graph: strings pass through, structures become sorted-key JSON."""
    if isinstance(scene_graph, str):
        return scene_graph
    if isinstance(scene_graph, (dict, list)):
        return json.dumps(scene_graph, sort_keys=True, ensure_ascii=False)
    raise ValueError(f"a scene graph must be str, dict or list, got {type(scene_graph).__name__}")


@dataclass
class TrajectoryRecord:
    """One P-RAG trajectory: goal, scene graph at every step, (action, observation) history, done."""

    goal: str
    scene_graphs: list[str]
    history: list[tuple[str, str]] = field(default_factory=list)
    done: bool = False
    task_id: str = ""
    task_type: str = ""
    round: int = 0
    record_id: str = field(default_factory=lambda: uuid.uuid4().hex)

    def __post_init__(self) -> None:
        if not isinstance(self.goal, str) or not self.goal.strip():
            raise ValueError(f"trajectory goal must be a non-empty string, got {self.goal!r}")
        if not self.scene_graphs:
            raise ValueError(f"trajectory {self.record_id} has no scene graphs (need one per step)")
        self.scene_graphs = [scene_graph_text(g) for g in self.scene_graphs]
        bad = [i for i, h in enumerate(self.history) if len(h) != 2]
        if bad:
            raise ValueError(f"history items {bad[:5]} are not (action, observation) pairs")
        self.history = [(str(a), str(o)) for a, o in self.history]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict with ``schema_version``."""
        d = asdict(self)
        d["history"] = [list(h) for h in self.history]
        d["schema_version"] = SCHEMA_VERSION
        return d

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrajectoryRecord:
        """Inverse of :meth:`to_dict`."""
        data = dict(data)
        version = data.pop("schema_version", SCHEMA_VERSION)
        if version > SCHEMA_VERSION:
            raise ValueError(f"trajectory schema_version {version} unsupported (<= {SCHEMA_VERSION})")
        data["history"] = [tuple(h) for h in data.get("history", [])]
        return cls(**data)


class ScoredTrajectory(NamedTuple):
    """A retrieved trajectory with its P-RAG score and the parts of it."""

    record: TrajectoryRecord
    score: float
    goal_sim: float
    best_step_sim: float
    best_step: int


class TrajectoryDB:
    """Durable P-RAG trajectory database.

    Args:
        path: SQLite file.
        embedder: text embedder for goals and scene graphs.
    """

    def __init__(self, path: str | Path, embedder: Embedder):
        self.embedder = embedder
        self.store = RecordStore(path, kind="trajectories")
        self.store.check_embedders({s: (embedder.name, embedder.dim) for s in ("goal", "scene_graph")})
        self._last_id = 0
        self._ids = np.zeros(0, np.int64)
        self._done = np.zeros(0, bool)
        self._task_ids = np.zeros(0, object)
        self._goals = np.zeros((0, embedder.dim), np.float32)
        self._steps = np.zeros((0, embedder.dim), np.float32)
        self._counts = np.zeros(0, np.int64)

    def __len__(self) -> int:
        return self.store.count()

    def add(self, record: TrajectoryRecord) -> int:
        """Embed and store one trajectory (one transaction); return its id."""
        goal = self.embedder.embed_text([record.goal])
        steps = self.embedder.embed_text(record.scene_graphs)
        name = self.embedder.name
        return self.store.add(
            record.record_id,
            record.to_dict(),
            {"goal": (name, goal), "scene_graph": (name, steps)},
            task_id=record.task_id,
            task_type=record.task_type,
        )

    def refresh(self) -> int:
        """Load records written since the last call (by any process) into the in-memory arrays."""
        upto = self.store.max_id()
        if upto <= self._last_id:
            return 0
        ids, task_ids, _ = self.store.tags(self._last_id)
        keep = ids <= upto
        goal = self.store.vectors("goal", self._last_id, upto)
        steps = self.store.vectors("scene_graph", self._last_id, upto)
        if not (np.array_equal(goal.record_ids, ids[keep]) and np.array_equal(steps.record_ids, ids[keep])):
            raise RuntimeError(f"{self.store.path}: some trajectories lack goal or scene-graph vectors")
        self._ids = np.concatenate([self._ids, ids[keep]])
        self._task_ids = np.concatenate([self._task_ids, task_ids[keep]])
        done = [bool(p.get("done")) for p in self.store.payloads(ids[keep])]
        self._done = np.concatenate([self._done, np.array(done, dtype=bool)])
        self._goals = np.concatenate([self._goals, goal.vectors])
        self._steps = np.concatenate([self._steps, steps.vectors])
        self._counts = np.concatenate([self._counts, steps.counts])
        self._last_id = upto
        return int(keep.sum())

    def scores(self, goal_vec: np.ndarray, scene_vec: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """P-RAG scores of every loaded record.

        Args:
            goal_vec: (d,) unit goal query vector.
            scene_vec: (d,) unit scene-graph query vector.

        Returns:
            goal_sim (R,), best_step_sim (R,), best_step index within each record (R,).
        """
        goal_sim = self._goals @ goal_vec
        step_sim = self._steps @ scene_vec
        starts = np.concatenate([[0], np.cumsum(self._counts)[:-1]]).astype(np.int64)
        best = np.maximum.reduceat(step_sim, starts) if len(starts) else np.zeros(0, np.float32)
        # index of the (first) best step inside each record
        owner = np.repeat(np.arange(len(starts)), self._counts)
        is_best = step_sim == best[owner]
        first = np.full(len(starts), len(step_sim), np.int64)
        hit = np.flatnonzero(is_best)
        np.minimum.at(first, owner[hit], hit)
        return goal_sim, best, first - starts

    def retrieve(
        self,
        goal: str,
        current_scene_graph: str | dict | list,
        k: int = 3,
        done_only: bool = False,
        exclude_task_ids: Iterable[str] = (),
    ) -> list[ScoredTrajectory]:
        """Top-k trajectories by ``sim(goal) + max_t sim(scene graph, step t)``, best first.

        Raises:
            EmptyMemoryError: the database is empty or nothing passes the filters.
        """
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        self.refresh()
        if len(self._ids) == 0:
            raise EmptyMemoryError(f"trajectory database {self.store.path} is empty")
        q = self.embedder.embed_text([goal, scene_graph_text(current_scene_graph)])
        goal_sim, best, best_step = self.scores(q[0], q[1])
        total = goal_sim + best
        mask = np.ones(len(total), bool)
        if done_only:
            mask &= self._done
        exclude = list(exclude_task_ids)
        if exclude:
            mask &= ~np.isin(self._task_ids, exclude)
        if not mask.any():
            raise EmptyMemoryError(
                f"no trajectory in {self.store.path} passes the filters (done_only={done_only}, exclude={exclude})"
            )
        cand = np.flatnonzero(mask)
        order = cand[np.argsort(-total[cand], kind="stable")[:k]]
        payloads = self.store.payloads(self._ids[order])
        return [
            ScoredTrajectory(TrajectoryRecord.from_dict(p), float(total[i]), float(goal_sim[i]), float(best[i]), int(best_step[i]))
            for p, i in zip(payloads, order, strict=True)
        ]

    def records(self) -> Sequence[TrajectoryRecord]:
        """All stored trajectories in insertion order."""
        return [TrajectoryRecord.from_dict(p) for _, p in self.store.iter_payloads()]
