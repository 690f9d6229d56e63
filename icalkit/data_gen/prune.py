"""Executor-checked pruning of a noisy demonstration's program (no model).

A noisy demonstration reaches its goal with detours: an object put down on a counter and picked
up again, a look into a cabinet, a wrong object handled and dropped. Copied into another room the
detours fail first (the counter there is full, the room has no shelf). :func:`prune_program` drops
the actions whose removal still solves the demonstration's own task — checked by running the
program in the executor against that task's goal checker, the simulated feedback ICAL's
human-in-the-loop phase also has — trying runs of 3, then 2, then 1 consecutive actions, then
drops the objects no action uses any more.
"""

from __future__ import annotations

import re
from collections.abc import Callable

_ASSIGN = re.compile(r"^\s*(\w+)\s*=\s*InteractionObject\(")


def prune_program(program: str, solves: Callable[[str], bool], chunks: tuple[int, ...] = (3, 2, 1)) -> tuple[str, int]:
    """(the pruned program, how many runs of ``solves`` it took).

    Args:
        program: a program that ``solves`` accepts (otherwise it is returned unchanged).
        solves: runs a candidate program on the demonstration's task; True when it reaches the goal.
        chunks: lengths of the runs of consecutive actions tried for removal, in order.
    """
    lines = program.splitlines()
    runs = 1
    if not solves(program):
        return program, runs
    for size in chunks:
        i = 0
        while i < len(lines):
            span = [j for j in range(i, len(lines)) if _is_action(lines[j])][:size]
            if len(span) < size:
                break
            candidate = [line for j, line in enumerate(lines) if j not in span]
            runs += 1
            if solves(_join(candidate)):
                lines = candidate
            else:
                i = span[0] + 1
    tidy = _join(_drop_unused(lines))
    runs += 1
    return (tidy if solves(tidy) else _join(lines)), runs


def _is_action(line: str) -> bool:
    return bool(line.strip()) and not _ASSIGN.match(line) and not line.lstrip().startswith("#")


def _drop_unused(lines: list[str]) -> list[str]:
    """Lines without the object definitions whose variable no other line mentions."""
    kept = []
    for k, line in enumerate(lines):
        m = _ASSIGN.match(line)
        rest = "\n".join(lines[:k] + lines[k + 1:])
        if m and not re.search(rf"\b{re.escape(m.group(1))}\b", rest):
            continue
        kept.append(line)
    return kept


def _join(lines: list[str]) -> str:
    return "\n".join(lines) + "\n"
