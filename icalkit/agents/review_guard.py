"""A review may not move what the episode already placed (``planner.review_keeps_placed``).

A review is asked after a copy that ended without an error, finished or not; the agent is not told
which. A review program that picks up an object the episode already placed would undo that work (a
135M reviser moved towels a copy had put in one cabinet into another); such a review is not run.
Only objects the program names by instance id are checked (a class resolves at run time), and the
check is static: a ``pickup``, ``pickup_and_place`` or ``place`` (which, with the executor's
pre-condition checks, picks up an object not in hand) of a variable bound to that id, or of an
``InteractionObject(...)`` naming it inline. It also stops reviews that would have made progress by
moving a placed object on (docs/finetune.md).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from typing import Any

MOVES = frozenset({"pickup", "pickup_and_place", "place"})
REVIEW_GUARD_TEXT = "the review was not run"


def placed_ids(calls: Iterable[Any]) -> set[str]:
    """Object ids the episode's successful ``place`` / ``pickup_and_place`` calls put somewhere."""
    return {c.object for c in calls if c.success and c.method in ("place", "pickup_and_place")}


def _instance(node: ast.AST, bound: dict[str, str]) -> str | None:
    """The instance id a variable or an ``InteractionObject(...)`` expression names, if any."""
    if isinstance(node, ast.Name):
        return bound.get(node.id)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "InteractionObject":
        arg = next((kw.value for kw in node.keywords if kw.arg == "object_instance"),
                   node.args[1] if len(node.args) > 1 else None)
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            return arg.value
    return None


def moved_placed(program: str, placed: set[str]) -> str | None:
    """The first id in ``placed`` that ``program`` would move, or None. ``program`` must parse (the
    planner has grounded it). A name assigned anything else than an id-named object loses its id."""
    bound: dict[str, str] = {}
    for stmt in ast.parse(program).body:  # in order; inside a compound statement, breadth-first
        for node in ast.walk(stmt):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        obj = _instance(node.value, bound)
                        if obj is None:
                            bound.pop(target.id, None)
                        else:
                            bound[target.id] = obj
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MOVES
                  and (obj := _instance(node.func.value, bound)) in placed):
                return obj
    return None
