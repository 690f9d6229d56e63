"""Episode metrics shared by data generation and evaluation.

- TEACh **success rate** (SR): fraction of episodes whose goal conditions all hold.
- **Goal-condition success** (GC): satisfied / total goal conditions (summed over episodes, as
  TEACh reports it, or averaged per episode).
- **Path-length weighted** scores (TEACh/ALFRED): ``score * L_ref / max(L_ref, L_agent)`` for
  SR (PLW-SR) and GC (PLW-GC), where ``L`` counts primitive actions.
- **SPL** (Anderson et al. 2018): ``mean(S_i * l_i / max(p_i, l_i))`` with binary success.
- **Normalized edit distance** between action sequences: Levenshtein distance divided by the
  longer length (0 = identical, 1 = nothing in common).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any


def _check_lengths(ref_len: float, actual_len: float) -> None:
    if ref_len < 0 or actual_len < 0:
        raise ValueError(f"path lengths must be >= 0, got reference={ref_len}, actual={actual_len}")


def path_weight(ref_len: float, actual_len: float) -> float:
    """``L_ref / max(L_ref, L_agent)`` in [0, 1]; 1 when both lengths are 0."""
    _check_lengths(ref_len, actual_len)
    denom = max(ref_len, actual_len)
    return 1.0 if denom == 0 else ref_len / denom


def plw(score: float, ref_len: float, actual_len: float) -> float:
    """Path-length weighted score: ``score * L_ref / max(L_ref, L_agent)``."""
    return float(score) * path_weight(ref_len, actual_len)


def goal_condition_rate(satisfied: int, total: int) -> float:
    """Fraction of goal conditions satisfied (1.0 for a task with no conditions)."""
    if satisfied < 0 or total < 0 or satisfied > total:
        raise ValueError(f"bad goal-condition counts: satisfied={satisfied}, total={total}")
    return 1.0 if total == 0 else satisfied / total


@dataclass(frozen=True)
class Episode:
    """What the metrics need from one episode.

    Attributes:
        success: all goal conditions hold at the end.
        satisfied: goal conditions satisfied at the end.
        total: goal conditions of the task.
        steps: primitive actions the agent took.
        ref_len: primitive actions of the expert's reference path.
    """

    success: bool
    satisfied: int
    total: int
    steps: int
    ref_len: int

    def __post_init__(self) -> None:
        goal_condition_rate(self.satisfied, self.total)
        _check_lengths(self.ref_len, self.steps)

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Episode:
        """From a result record with keys success, satisfied, total, steps, ref_len."""
        missing = [k for k in ("success", "satisfied", "total", "steps", "ref_len") if k not in record]
        if missing:
            raise ValueError(f"episode record lacks {missing}; has {sorted(record)}")
        return cls(bool(record["success"]), int(record["satisfied"]), int(record["total"]),
                   int(record["steps"]), int(record["ref_len"]))


def aggregate(episodes: Iterable[Episode]) -> dict[str, float]:
    """TEACh-style aggregate metrics of a set of episodes.

    Returns:
        ``n``, ``sr``, ``gc`` (pooled: sum satisfied / sum total, as in TEACh), ``gc_mean``
        (per-episode average), ``plw_sr``, ``plw_gc`` (pooled, path-length weighted per episode
        with weights ``total``), ``spl``; all 0.0 for no episodes.
    """
    eps = list(episodes)
    n = len(eps)
    if n == 0:
        return {"n": 0, "sr": 0.0, "gc": 0.0, "gc_mean": 0.0, "plw_sr": 0.0, "plw_gc": 0.0, "spl": 0.0}
    total = sum(e.total for e in eps)
    weights = [path_weight(e.ref_len, e.steps) for e in eps]
    sr = sum(e.success for e in eps) / n
    gc = 1.0 if total == 0 else sum(e.satisfied for e in eps) / total
    plw_sr = sum(float(e.success) * w for e, w in zip(eps, weights, strict=True)) / n
    plw_gc = 1.0 if total == 0 else sum(e.satisfied * w for e, w in zip(eps, weights, strict=True)) / total
    return {"n": n, "sr": sr, "gc": gc,
            "gc_mean": sum(goal_condition_rate(e.satisfied, e.total) for e in eps) / n,
            "plw_sr": plw_sr, "plw_gc": plw_gc, "spl": plw_sr}


def spl(successes: Sequence[bool], ref_lens: Sequence[float], actual_lens: Sequence[float]) -> float:
    """Success weighted by path length, ``mean(S_i * l_i / max(p_i, l_i))`` (0.0 for none)."""
    if not len(successes) == len(ref_lens) == len(actual_lens):
        raise ValueError(f"spl needs equal-length inputs, got {len(successes)}, {len(ref_lens)}, {len(actual_lens)}")
    if not successes:
        return 0.0
    return sum(plw(float(s), r, a) for s, r, a in zip(successes, ref_lens, actual_lens, strict=True)) / len(successes)


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
    """One row of :func:`aggregate` metrics per value of ``key`` plus an ``all`` row."""
    rows = []
    for name, group in sorted(group_by(records, key).items()):
        rows.append({key: name, **aggregate(Episode.from_record(r) for r in group)})
    rows.append({key: "all", **aggregate(Episode.from_record(r) for r in records)})
    return rows


def reference_length(task: Any) -> int | None:
    """Primitive actions of the expert's solution of ``task`` (None when the expert fails)."""
    if getattr(task, "reference_length", None):
        return int(task.reference_length)
    from icalkit.data_gen.actor import SkillError
    from icalkit.data_gen.expert import expert_actions

    try:
        return len(expert_actions(task))
    except (SkillError, ValueError):
        return None
