"""Leave out of a copy the objects its room does not have and its demonstration only moved
(``planner.drop_absent``).

A noisy demonstration moves things the task does not ask for: a fork out of the sink, a paper towel
roll off the table. Copied into a room without a fork, that line fails ("No Fork has been found") and
the whole copy ends there, the coffee and the sandwich after it never made. The room cannot ask for
an object it lacks, and an object the demonstration only moved — none of its goal attributes
(dirty, cooked, sliced, filled, ...) changed — did nothing to the task's state. So its statements go:
the ``InteractionObject`` declaration and every statement that names the variable. An absent object
the demonstration changed (the bowl it washed, the bread it sliced) stays, its error is the signal
that the copy is the wrong one (``copy_fallback``), and so do knives (the executor cuts with the kind
the room has), pieces whose whole is in the room (they appear when it is cut) and places (a shelf the
room lacks: the executor puts the object down elsewhere).
"""

from __future__ import annotations

import ast
from collections.abc import Collection, Mapping
from typing import Any

from icalkit.agents.context import object_calls
from icalkit.agents.demo_end_state import GOAL_ATTRIBUTES, class_of, interaction_class, renamed
from icalkit.agents.review_guard import MOVES
from icalkit.envs.household.catalog import KNIVES, OBJECT_TYPES, SLICED_FROM


def changed_classes(example: Any, mapping: Mapping[str, str]) -> set[str]:
    """The classes (renamed by ``mapping``) of the objects whose goal attributes ``example``'s
    demonstration changed or made (a piece appears sliced)."""
    return {renamed(class_of(c["object"]), mapping) for c in example.observed_changes
            if c["attribute"] in GOAL_ATTRIBUTES}


def absent(cls: str, room: Collection[str]) -> bool:
    """Whether the room has no object of ``cls`` and, for a piece, none of its whole either."""
    return cls not in room and SLICED_FROM.get(cls, cls) not in room


def droppable(cls: str, changed: Collection[str]) -> bool:
    """Whether an absent object of ``cls`` can go: one to carry (a place the room lacks is the
    executor's to substitute), not a knife, and none of its goal attributes ``changed`` (by the
    demonstration, or by a call of the program other than a move)."""
    kind = OBJECT_TYPES.get(cls)
    return kind is not None and kind.pickupable and cls not in KNIVES and cls not in changed


def drop_absent(program: str, room: Collection[str], changed: Collection[str]) -> tuple[str, list[str]]:
    """``program`` without the objects of classes ``room`` lacks that are :func:`droppable`: their
    declarations and every statement naming them; and the classes left out. A program
    that does not parse is returned as it is (the executor reports it)."""
    try:
        body = ast.parse(program).body
    except SyntaxError:
        return program, []
    changed = {*changed, *(obj for method, obj, _ in object_calls(program, interaction_class)
                           if method not in (*MOVES, "go_to"))}  # a cup it pours from, filled and emptied
    gone: set[str] = set()  # the variables of objects left out
    kept, left_out = [], set()
    for stmt in body:
        target = stmt.targets[0].id if isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name) else None
        cls = _declared_class(stmt)
        if cls and absent(cls, room) and droppable(cls, changed):
            left_out.add(cls)
        elif not any(isinstance(n, ast.Name) and n.id in gone for n in ast.walk(stmt.value if target else stmt)):
            gone.discard(target or "")  # the name now stands for something the room has
            kept.append(ast.get_source_segment(program, stmt) or "")
            continue
        if target:
            gone.add(target)
    return ("\n".join(kept) + "\n", sorted(left_out)) if left_out else (program, [])


def _declared_class(stmt: ast.stmt) -> str | None:
    """The class of ``x = InteractionObject("Class", ...)``, else None."""
    value = stmt.value if isinstance(stmt, ast.Assign) else None
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "InteractionObject":
        return interaction_class(value)
    return None
