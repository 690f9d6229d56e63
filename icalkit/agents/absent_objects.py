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
the room has), pieces whose whole is in the room (they appear when it is cut) and places — a
receptacle class, or one the program puts things on (a shelf or a pan the room lacks: the executor
puts the object down elsewhere). Only top-level statements are cut: a program whose loop or
condition names such an object is left as it is.

A whole the room holds only as pieces is not absent (its pieces are there), but a copy moving it is
the same case in time (``planner.drop_sliced``): a next copy after a first one that cut the bread
would fail on ``bread.pickup()`` ("The Bread was already sliced into 8 pieces"). Slicing it again is
already a no-op for the executor with its pre-condition checks; :func:`drop_sliced_moves` leaves out
the top-level moves of it as well.
"""

from __future__ import annotations

import ast
from collections.abc import Collection, Mapping
from typing import Any

from icalkit.agents.context import is_interaction, object_calls
from icalkit.agents.demo_end_state import GOAL_ATTRIBUTES, class_of, interaction_class, lacks, renamed
from icalkit.agents.review_guard import MOVES, ONLY_MOVES, PLACES
from icalkit.envs.household.catalog import KNIVES, OBJECT_TYPES, SLICE_PRODUCTS


def changed_classes(example: Any, mapping: Mapping[str, str], attributes: Collection[str] = GOAL_ATTRIBUTES) -> set[str]:
    """The classes (renamed by ``mapping``) of the objects whose ``attributes`` (its goal attributes)
    ``example``'s demonstration changed or made (a piece appears sliced)."""
    return {renamed(class_of(c["object"]), mapping) for c in example.observed_changes
            if c["attribute"] in attributes}


def droppable(cls: str, kept: Collection[str]) -> bool:
    """Whether an absent object of ``cls`` can go: one to carry, not a receptacle (a place the room
    lacks is the executor's to substitute) nor a knife, and not in ``kept`` (changed by the
    demonstration, acted on by a call of the program other than a move, or a place it uses)."""
    kind = OBJECT_TYPES.get(cls)
    return kind is not None and kind.pickupable and not kind.receptacle and cls not in KNIVES and cls not in kept


def drop_absent(program: str, room: Collection[str], changed: Collection[str]) -> tuple[str, list[str]]:
    """``program`` without the objects of classes ``room`` lacks that are :func:`droppable`: their
    declarations and every top-level statement naming them; and the classes left out. A program that
    does not parse, or whose compound statement names such an object, is returned as it is."""
    try:
        body = ast.parse(program).body
    except SyntaxError:
        return program, []
    calls = list(object_calls(program, interaction_class))
    kept = {*changed, *(obj for method, obj, _ in calls if method not in ONLY_MOVES),
            *(on for method, _, on in calls if method in PLACES)}  # a cup it pours from; a place
    gone: set[str] = set()  # the variables of objects left out
    lines, left_out = [], set()
    for stmt in body:
        targets = bound_names(stmt)
        cls = declared_class(stmt)
        if cls and lacks(room, cls) and droppable(cls, kept):
            left_out.add(cls)
        elif read_names(stmt) & gone:
            if hasattr(stmt, "body"):  # a loop or a condition: cut nothing
                return program, []
        else:
            gone -= targets  # those names now stand for something the room has
            lines.append(ast.get_source_segment(program, stmt) or ast.unparse(stmt))
            continue
        gone |= targets
    return ("\n".join(lines) + "\n", sorted(left_out)) if left_out else (program, [])


SLICED_MOVES = MOVES | {"put_down"}  # what drop_sliced leaves out (go_to on a cut whole reaches its pieces)


def drop_sliced_moves(program: str, room: Collection[str]) -> tuple[str, list[str]]:
    """``program`` without its top-level moves (:data:`SLICED_MOVES`) of a whole object ``room`` holds
    only as pieces (no object of its class, some of its pieces' class), and those classes. Moves inside
    a compound statement stay, and a name it binds no longer counts as that whole. A program that does
    not parse is returned as it is."""
    try:
        body = ast.parse(program).body
    except SyntaxError:
        return program, []
    cut = {c for c, (piece, _) in SLICE_PRODUCTS.items() if c not in room and piece in room}
    classes: dict[str, str | None] = {}  # variable -> the class it was last bound to
    lines, left_out = [], set()
    for stmt in body:
        for node in ast.walk(stmt):  # any binding (a loop's target too) ends what a name stood for
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                classes[node.id] = None
        for name in bound_names(stmt):
            classes[name] = declared_class(stmt)
        call = stmt.value if isinstance(stmt, ast.Expr) else None
        if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr in SLICED_MOVES
                and isinstance(call.func.value, ast.Name) and classes.get(call.func.value.id) in cut):
            left_out.add(classes[call.func.value.id])
            continue
        lines.append(ast.get_source_segment(program, stmt) or ast.unparse(stmt))
    return ("\n".join(lines) + "\n", sorted(left_out)) if left_out else (program, [])


def bound_names(stmt: ast.stmt) -> set[str]:
    """The names an assignment binds (every target, tuples unpacked)."""
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(
        stmt, ast.AnnAssign | ast.AugAssign) else []
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}


def read_names(stmt: ast.stmt) -> set[str]:
    """The names ``stmt`` reads (an assignment's value; any other statement whole)."""
    source = stmt.value if isinstance(stmt, ast.Assign | ast.AnnAssign) and stmt.value is not None else stmt
    return {n.id for n in ast.walk(source) if isinstance(n, ast.Name)}


def declared_class(stmt: ast.stmt) -> str | None:
    """The class of ``x = InteractionObject("Class", ...)`` (any targets), else None."""
    value = stmt.value if isinstance(stmt, ast.Assign | ast.AnnAssign) else None
    return interaction_class(value) if is_interaction(value) else None
