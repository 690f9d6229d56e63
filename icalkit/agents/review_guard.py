"""A review may not move what the copies put in place (``planner.review_keeps_placed``).

A review is asked after a copy that ended without an error, finished or not; the agent is not told
which. A review program that picks up an object the copies already placed would undo their work (a
135M reviser moved towels a copy had put in one cabinet into another); such a review is not run.
Only objects the program names by instance id are checked: a class resolves at run time.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from typing import Any

MOVES = frozenset({"pickup", "pickup_and_place"})
REVIEW_GUARD_TEXT = "the review was not run"


def placed_ids(calls: Iterable[Any]) -> set[str]:
    """Object ids the episode's successful ``place`` / ``pickup_and_place`` calls put somewhere."""
    return {c.object for c in calls if c.success and c.method in ("place", "pickup_and_place")}


def moved_placed(program: str, placed: set[str]) -> str | None:
    """The first id in ``placed`` that ``program`` picks up (by a variable bound to that instance, or
    inline), or None. ``program`` must parse (the planner has grounded it)."""
    bound: dict[str, str] = {}

    def instance(node: ast.AST) -> str | None:
        if isinstance(node, ast.Name):
            return bound.get(node.id)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "InteractionObject":
            for kw in node.keywords:
                if kw.arg == "object_instance" and isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str):
                    return kw.value.value
        return None

    nodes = (node for stmt in ast.parse(program).body for node in ast.walk(stmt))  # statements in order
    for node in nodes:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            if (obj := instance(node.value)) is not None:
                bound[node.targets[0].id] = obj
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MOVES
              and (obj := instance(node.func.value)) in placed):
            return obj
    return None
