"""Episode metrics, the one place where TEACh's and ALFRED's formulas live.

Follows TEACh's ``compute_metrics.py`` (``evaluate_traj`` / ``aggregate_metrics``):

- **SR**: fraction of episodes whose goal conditions all hold at the end.
- **GC** counts only the conditions that were *unsatisfied at the start*. Per episode
  ``1 - (final_total - final_sat) / (init_total - init_sat)`` (1.0 when nothing was unsatisfied
  at the start); pooled over episodes ``sum(completed) / sum(init_total - init_sat)`` with
  ``completed = (init_total - init_sat) - (final_total - final_sat)`` — negative when an agent
  undoes conditions that held. Satisfied counts above their totals are clipped (TEACh's ``min``).
- **PLW-SR / PLW-GC** are weighted by the reference length ``L``: ``sum(s_i * w_i * L_i) /
  sum(L_i)`` with ``w_i = L_i / max(T_i, L_i)`` (``T``: the agent's primitive actions).
- **SPL** (Anderson et al. 2018): ``mean(S_i * L_i / max(T_i, L_i))``.

An episode without a reference length (the expert failed) is left out of PLW-SR, PLW-GC and
SPL and counted in ``n_no_ref``; it still counts in SR and GC. Using the agent's own length
instead would give a path weight of 1 and inflate the scores.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

RECORD_KEYS = ("success", "satisfied", "total", "init_satisfied", "init_total", "steps", "ref_len")


def path_weight(ref_len: float, actual_len: float) -> float:
    """``L_ref / max(L_ref, L_agent)`` in [0, 1]; 1 when both lengths are 0."""
    if ref_len < 0 or actual_len < 0:
        raise ValueError(f"path lengths must be >= 0, got reference={ref_len}, actual={actual_len}")
    denom = max(ref_len, actual_len)
    return 1.0 if denom == 0 else ref_len / denom


@dataclass(frozen=True)
class Episode:
    """What the metrics need from one episode.

    Attributes:
        success: all goal conditions hold at the end.
        satisfied: goal conditions satisfied at the end (clipped to ``total``).
        total: goal conditions at the end.
        init_satisfied: goal conditions satisfied at the start (clipped to ``init_total``).
        init_total: goal conditions at the start.
        steps: primitive actions the agent took.
        ref_len: primitive actions of the expert's reference path; None when unknown.
    """

    success: bool
    satisfied: int
    total: int
    init_satisfied: int
    init_total: int
    steps: int
    ref_len: int | None

    def __post_init__(self) -> None:
        counts = {"satisfied": self.satisfied, "total": self.total, "init_satisfied": self.init_satisfied,
                  "init_total": self.init_total, "steps": self.steps}
        bad = {k: v for k, v in counts.items() if v < 0}
        if bad or (self.ref_len is not None and self.ref_len < 0):
            raise ValueError(f"episode counts must be >= 0, got {bad or {'ref_len': self.ref_len}}")
        object.__setattr__(self, "satisfied", min(self.satisfied, self.total))
        object.__setattr__(self, "init_satisfied", min(self.init_satisfied, self.init_total))

    @property
    def to_complete(self) -> int:
        """Conditions unsatisfied at the start (TEACh's ``total_goal_conditions``)."""
        return self.init_total - self.init_satisfied

    @property
    def completed(self) -> int:
        """Conditions completed by the agent; negative when it undid more than it did."""
        return self.to_complete - (self.total - self.satisfied)

    @property
    def gc(self) -> float:
        """Per-episode goal-condition success (1.0 when nothing was left to do at the start)."""
        return 1.0 if self.to_complete == 0 else self.completed / self.to_complete

    @property
    def weight(self) -> float | None:
        """Path weight ``L / max(T, L)``; None without a reference length."""
        return None if self.ref_len is None else path_weight(self.ref_len, self.steps)

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Episode:
        """From a result record with the keys in :data:`RECORD_KEYS` (``ref_len`` may be None)."""
        missing = [k for k in RECORD_KEYS if k not in record]
        if missing:
            raise ValueError(f"episode record {record.get('task_id', '')!s} lacks {missing} "
                             f"(records written before initial goal counts were kept cannot be scored "
                             f"with TEACh's GC; re-run them); has {sorted(record)}")
        ref = record["ref_len"]
        return cls(bool(record["success"]), int(record["satisfied"]), int(record["total"]),
                   int(record["init_satisfied"]), int(record["init_total"]), int(record["steps"]),
                   None if ref is None else int(ref))


def aggregate(episodes: Iterable[Episode]) -> dict[str, float | int]:
    """TEACh aggregate metrics of a set of episodes.

    Returns:
        ``n``; ``sr``; ``gc`` (pooled completed / to-complete, TEACh's GC) and ``gc_mean``
        (mean per-episode GC); ``plw_sr``, ``plw_gc`` (reference-length weighted, TEACh) and
        ``spl`` over the ``n_ref`` episodes with a reference length (``n_no_ref`` without);
        ``completed`` and ``to_complete`` condition counts. Scores are 0.0 for no episodes;
        ``gc`` is 1.0 when no episode had anything left to do.
    """
    eps = list(episodes)
    ref = [e for e in eps if e.ref_len is not None]
    to_complete = sum(e.to_complete for e in eps)
    completed = sum(e.completed for e in eps)
    total_len = sum(e.ref_len for e in ref)
    out: dict[str, float | int] = {
        "n": len(eps), "sr": 0.0, "gc": 0.0, "gc_mean": 0.0, "plw_sr": 0.0, "plw_gc": 0.0, "spl": 0.0,
        "n_ref": len(ref), "n_no_ref": len(eps) - len(ref), "completed": completed, "to_complete": to_complete}
    if not eps:
        return out
    out["sr"] = sum(e.success for e in eps) / len(eps)
    out["gc"] = 1.0 if to_complete == 0 else completed / to_complete
    out["gc_mean"] = sum(e.gc for e in eps) / len(eps)
    if total_len > 0:
        out["plw_sr"] = sum(float(e.success) * e.weight * e.ref_len for e in ref) / total_len
        out["plw_gc"] = sum(e.gc * e.weight * e.ref_len for e in ref) / total_len
    if ref:
        out["spl"] = sum(float(e.success) * e.weight for e in ref) / len(ref)
    return out


def spl(successes: Sequence[bool], ref_lens: Sequence[float | None], actual_lens: Sequence[float]) -> float:
    """SPL, ``mean(S_i * L_i / max(T_i, L_i))`` over the episodes with a reference length."""
    if not len(successes) == len(ref_lens) == len(actual_lens):
        raise ValueError(f"spl needs equal-length inputs, got {len(successes)}, {len(ref_lens)}, {len(actual_lens)}")
    known = [(s, r, a) for s, r, a in zip(successes, ref_lens, actual_lens, strict=True) if r is not None]
    return sum(float(s) * path_weight(r, a) for s, r, a in known) / len(known) if known else 0.0


def edit_distance(a: Sequence[Hashable], b: Sequence[Hashable]) -> int:
    """Levenshtein distance (insert, delete, substitute: cost 1) between two sequences."""
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        cur = [i]
        for j, y in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y)))
        prev = cur
    return prev[-1]


def normalized_edit_distance(a: Sequence[Hashable], b: Sequence[Hashable]) -> float:
    """Edit distance divided by the longer length, in [0, 1] (0.0 for two empty sequences)."""
    longest = max(len(a), len(b))
    return 0.0 if longest == 0 else edit_distance(a, b) / longest


def group_by(records: Iterable[Mapping[str, Any]], key: str) -> dict[str, list[Mapping[str, Any]]]:
    """Records grouped by ``record[key]`` (insertion order of first appearance)."""
    out: dict[str, list[Mapping[str, Any]]] = {}
    for r in records:
        out.setdefault(str(r[key]), []).append(r)
    return out


def table_by(records: Sequence[Mapping[str, Any]], key: str = "task_type") -> list[dict[str, Any]]:
    """One row of :func:`aggregate` metrics per value of ``key`` (sorted) plus an ``all`` row."""
    rows = [{key: name, **aggregate(Episode.from_record(r) for r in group)}
            for name, group in sorted(group_by(records, key).items())]
    rows.append({key: "all", **aggregate(Episode.from_record(r) for r in records)})
    return rows
