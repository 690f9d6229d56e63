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

from icalkit.agents.context import object_calls

PLACES = frozenset({"place", "pickup_and_place"})
MOVES = PLACES | {"pickup"}
ONLY_MOVES = MOVES | {"go_to", "put_down", "check_attribute"}  # calls that change no goal attribute of their object
REVIEW_GUARD_TEXT = "the review was not run"


def placed_ids(calls: Iterable[Any]) -> set[str]:
    """Object ids the episode's successful ``place`` / ``pickup_and_place`` calls put somewhere."""
    return {c.object for c in calls if c.success and c.method in PLACES}


def _instance(call: ast.Call) -> str | None:
    """The instance id an ``InteractionObject(...)`` expression names, if any."""
    arg = next((kw.value for kw in call.keywords if kw.arg == "object_instance"),
               call.args[1] if len(call.args) > 1 else None)
    return arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else None


def moved_placed(program: str, placed: set[str]) -> str | None:
    """The first id in ``placed`` that ``program`` would move, or None. ``program`` must parse (the
    planner has grounded it). A name assigned anything else than an id-named object loses its id."""
    return next((obj for method, obj, _ in object_calls(program, _instance) if method in MOVES and obj in placed), None)
