"""Evaluation tables and plots: ICAL's Table 1, the per-type table (Table S3), the learning curve.

Every number comes from the per-episode records through :func:`icalkit.metrics.aggregate`, so a
table can always be rebuilt from ``episodes.jsonl`` alone (``icalkit report``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from icalkit.metrics import Episode, aggregate, group_by

SPLIT_SHORT = {"valid_unseen": "unseen", "valid_seen": "seen", "train": "train"}
METRICS = ("sr", "gc", "plw_sr", "plw_gc")


def _metrics(records: Sequence[dict]) -> dict[str, Any]:
    return aggregate(Episode.from_record(r) for r in records)


def table1(records: Sequence[dict], methods: Sequence[str], splits: Sequence[str]) -> list[dict[str, Any]]:
    """One row per method: SR, GC, PLW-SR, PLW-GC and the episode count per split."""
    by = group_by(records, "method")
    rows = []
    for m in methods:
        row: dict[str, Any] = {"method": m}
        for split in splits:
            recs = [r for r in by.get(m, []) if r["split"] == split]
            agg = _metrics(recs)
            short = SPLIT_SHORT.get(split, split)
            row |= {f"{short} {k.upper().replace('_', '-')}": agg[k] for k in METRICS}
            row[f"{short} n"] = agg["n"]
        rows.append(row)
    return rows


def per_type_table(records: Sequence[dict], methods: Sequence[str], split: str, metric: str = "sr") -> list[dict]:
    """ICAL Table S3: one row per task type, one column per method (``metric``), plus episode counts."""
    recs = [r for r in records if r["split"] == split]
    types = sorted({r["task_type"] for r in recs})
    rows = []
    for t in types:
        row: dict[str, Any] = {"task_type": t}
        for m in methods:
            group = [r for r in recs if r["method"] == m and r["task_type"] == t]
            row[m] = _metrics(group)[metric] if group else None
        row["n"] = max((sum(1 for r in recs if r["method"] == m and r["task_type"] == t) for m in methods), default=0)
        rows.append(row)
    return rows


def curve_points(records: Sequence[dict], methods: Sequence[str], split: str) -> dict[str, list[tuple[int, dict]]]:
    """Learning curves: for each base method evaluated as ``base@N``, (N, metrics) sorted by N."""
    curves: dict[str, list[tuple[int, dict]]] = {}
    for m in methods:
        match = re.fullmatch(r"(.+)@(\d+)", m)
        if not match:
            continue
        recs = [r for r in records if r["method"] == m and r["split"] == split]
        if recs:
            curves.setdefault(match.group(1), []).append((int(match.group(2)), _metrics(recs)))
    return {k: sorted(v, key=lambda p: p[0]) for k, v in curves.items()}


def write_report(logger: Any, records: Sequence[dict], methods: Sequence[str], splits: Sequence[str]) -> dict:
    """Write every table and plot of an evaluation through ``logger``; return the tables as data."""
    out: dict[str, Any] = {"table1": table1(records, methods, splits)}
    logger.table("table1", out["table1"])
    main_split = "valid_unseen" if "valid_unseen" in splits else splits[0]
    flat = [m for m in methods if "@" not in m]
    if flat:
        logger.bar_plot("table1", flat, {f"{SPLIT_SHORT.get(s, s)} {k.upper()}": [
            next(r for r in out["table1"] if r["method"] == m)[f"{SPLIT_SHORT.get(s, s)} {k.upper()}"] for m in flat]
            for s in splits for k in ("sr", "gc")}, "score")
    for split in splits:
        name = f"per_type_{SPLIT_SHORT.get(split, split)}"
        out[name] = per_type_table(records, methods, split)
        logger.table(name, out[name])
    curves = curve_points(records, methods, main_split)
    out["learning_curve"] = {base: [{"examples": n, **{k: m[k] for k in ("n", *METRICS)}} for n, m in pts]
                             for base, pts in curves.items()}
    for base, pts in curves.items():
        xs = [n for n, _ in pts]
        logger.table(f"learning_curve_{base}", out["learning_curve"][base])
        logger.line_plot(f"learning_curve_{base}", xs, {f"{SPLIT_SHORT.get(main_split)} SR": [m["sr"] for _, m in pts],
                                                        f"{SPLIT_SHORT.get(main_split)} GC": [m["gc"] for _, m in pts]},
                         "examples in memory", "score")
    return out


def paired(base: Sequence[dict], ours: Sequence[dict], base_method: str, our_method: str) -> dict[str, Any]:
    """Episode by episode (same split and task id), ``our_method`` in ``ours`` against ``base_method`` in
    ``base``: the successes of each over the episodes both ran, and the episodes gained and lost, by task type
    (the paired figures a blind set's rules compare: "+11 −0")."""
    def by_episode(records: Sequence[dict], method: str) -> dict[tuple[str, str], dict]:
        return {(r["split"], r["task_id"]): r for r in records if r["method"] == method}

    a, b = by_episode(base, base_method), by_episode(ours, our_method)
    both = sorted(a.keys() & b.keys())
    gained = [k for k in both if b[k]["success"] and not a[k]["success"]]
    lost = [k for k in both if a[k]["success"] and not b[k]["success"]]

    def by_type(keys: list[tuple[str, str]]) -> str:
        return ", ".join(f"{t} {n}" for t, n in sorted(Counter(b[k]["task_type"] for k in keys).items()))

    return {"baseline": base_method, "method": our_method, "episodes": len(both),
            "baseline successes": sum(bool(a[k]["success"]) for k in both),
            "successes": sum(bool(b[k]["success"]) for k in both), "gained": len(gained), "lost": len(lost),
            "gained by type": by_type(gained), "lost by type": by_type(lost)}
