"""How a ``silent_next_copy`` method decided after its copies that ended without an error, against the
simulator's ground truth.

Its diagnostic twin with ``planner.oracle_goal_feedback`` (``copy_next_oracle``) runs the same copies and
goes on exactly when the task is unfinished. Up to the first copy where the two episodes' programs
differ, the twin's record tells whether the task was finished at each silent end: an error naming the
unmet conditions (:data:`~icalkit.agents.feedback.NOT_DONE_TEXT`) where it was not, the episode's end
where it was. Left out, since nothing was decided there: the last copy ``max_replans`` allows, an end
for want of candidates (the record's ``copies_left`` is 0), and copies that failed with an error (also
a last one that failed after the task was done, which ends the episode with no error recorded: its
``trace`` shows the failed call).
"""

from __future__ import annotations

from collections.abc import Iterable

from icalkit.agents.feedback import NEXT_COPY_TEXT, NOT_DONE_TEXT

OUTCOMES = ("finished_stop", "finished_go_on", "unfinished_go_on", "unfinished_stop")


def silent_end_decisions(records: Iterable[dict], method: str, oracle: str, max_replans: int = 3) -> dict[str, int]:
    """Counts of :data:`OUTCOMES` over ``method``'s silent ends, judged by the ``oracle`` twin's episodes
    (``records``: episode records of one split holding both methods)."""
    by = {(r["method"], r["task_id"]): r for r in records}
    if not any(name == oracle for name, _ in by):
        raise ValueError(f"the records hold no episode of the oracle twin {oracle!r}")
    counts = dict.fromkeys(OUTCOMES, 0)
    for (name, task), rec in by.items():
        twin = by.get((oracle, task))
        if name != method or twin is None:
            continue
        for i, program in enumerate(rec["programs"][:max_replans]):
            if i >= len(twin["programs"]) or twin["programs"][i] != program:
                break
            mine, truth = _error(rec, i), _error(twin, i)
            if mine is not None and not mine.startswith(NEXT_COPY_TEXT) or truth is not None and not truth.startswith(NOT_DONE_TEXT):
                continue  # a copy that failed with an error, or an unfinished end with no copy left: no decision
            if mine is None and i == len(rec["programs"]) - 1 and (
                    not rec.get("copies_left", 1) or not all(c["success"] for c in rec["trace"])):
                continue  # no candidate was left, or the last copy failed after the task was done: no decision
            finished = "finished" if truth is None else "unfinished"
            counts[f"{finished}_{'stop' if mine is None else 'go_on'}"] += 1
    return counts


def _error(record: dict, attempt: int) -> str | None:
    """The feedback after ``attempt`` (None where the episode ended there without one)."""
    return record["errors"][attempt] if attempt < len(record["errors"]) else None
