"""Run summary of ICAL learning: yield per task type, revised vs raw success, costs, plots."""

from __future__ import annotations

from collections import Counter
from typing import Any

LEARNED = ("learned", "relabeled")


def _mean(values: list[float]) -> float:
    return float(sum(values) / len(values)) if values else 0.0


def per_type_rows(records: list[dict]) -> list[dict[str, Any]]:
    """One row per task type: demos, learned, yield, revised/raw/first-attempt success, attempts."""
    groups: dict[str, list[dict]] = {}
    for r in records:
        groups.setdefault(r["task_type"], []).append(r)
    rows = []
    for task_type, rs in sorted(groups.items()):
        learned = sum(r["status"] in LEARNED for r in rs)
        rows.append({"task_type": task_type, "demos": len(rs), "learned": learned,
                     "yield": learned / len(rs), "kept_demos": sum(r["status"] == "kept_demo" for r in rs),
                     "revised_success": _mean([float(r["success"]) for r in rs]),
                     "raw_replay_success": _mean([float(r["raw_success"]) for r in rs]),
                     "first_attempt_success": _mean([float(r["first_attempt_success"]) for r in rs]),
                     "mean_attempts": _mean([float(r["attempts"]) for r in rs])})
    return rows


def summarize(records: list[dict]) -> dict[str, Any]:
    """Totals of a run (figures of the README): yield, success vs raw replay, time, LLM calls."""
    n = len(records)
    learned = sum(r["status"] in LEARNED for r in records)
    calls = sum(r.get("usage", {}).get("calls", 0) for r in records)
    cached = sum(r.get("usage", {}).get("cached", 0) for r in records)
    return {
        "demos": n,
        "learned": learned,
        "yield": learned / n if n else 0.0,
        "kept_demos": sum(r["status"] == "kept_demo" for r in records),
        "kept_after": dict(Counter(r["kept_after"] for r in records if r["status"] == "kept_demo")),
        "status_counts": dict(Counter(r["status"] for r in records)),
        "stop_reasons": dict(Counter(r.get("stop_reason") or "-" for r in records)),
        "revised_success_rate": _mean([float(r["success"]) for r in records]),
        "first_attempt_success_rate": _mean([float(r["first_attempt_success"]) for r in records]),
        "raw_replay_success_rate": _mean([float(r["raw_success"]) for r in records]),
        "mean_wall_s_per_demo": _mean([r["wall_s"] for r in records]),
        "total_wall_s": float(sum(r["wall_s"] for r in records)),
        "llm_calls": calls,
        "llm_cached_calls": cached,
        "llm_calls_per_demo": calls / n if n else 0.0,
        "llm_calls_per_learned_example": calls / learned if learned else None,
        "completion_tokens": sum(r.get("usage", {}).get("completion_tokens", 0) for r in records),
        "attempts_histogram": {str(k): v for k, v in sorted(Counter(r["attempts"] for r in records).items())},
        "feedbacks_histogram": {str(k): v for k, v in sorted(Counter(r["feedbacks"] for r in records).items())},
    }


def learned_rows(records: list[dict]) -> list[dict[str, Any]]:
    """Table of learned examples (one row each) for W&B / Markdown."""
    return [{"demo_id": r["demo_id"], "task_type": r["task_type"], "status": r["status"],
             "attempts": r["attempts"], "feedbacks": r["feedbacks"], "example_id": r["example_id"]}
            for r in records if r["status"] in LEARNED]


def write_report(logger: Any, records: list[dict]) -> dict[str, Any]:
    """Tables (per type, learned examples) and plots (yield, attempts histogram) via a RunLogger."""
    rows = per_type_rows(records)
    summary = summarize(records)
    text = logger.table("ical_per_type", rows)
    logger.table("ical_learned_examples", learned_rows(records))
    if rows:
        types = [r["task_type"] for r in rows]
        logger.bar_plot("ical_yield", types, {
            "ICAL yield": [r["yield"] for r in rows],
            "raw replay success": [r["raw_replay_success"] for r in rows],
            "first attempt success": [r["first_attempt_success"] for r in rows]}, "rate")
        hist = summary["attempts_histogram"]
        logger.bar_plot("ical_attempts_histogram", list(hist), {"demos": list(hist.values())}, "demonstrations")
    summary["per_type_markdown"] = text
    return summary
