"""Serve as many pieces as the dialogue asks (``planner.piece_counts``).

A demonstration of a sandwich put one slice of lettuce on the plate; the new dialogue asks for "two
slices of lettuce and a slice of tomato". The copy does everything else right and the task stays
unfinished, and nothing in the copied demonstration's end state says so. The numbers are in the
dialogue, next to the food: "two slices of tomato", "an apple slice", "2 lettuce slices".
:func:`asked_pieces` reads them; :func:`serve_pieces` adds to the copy, after its last placement of a
piece of that food on the receptacle holding most of them (the plate), the placements of as many
further pieces as are missing (``InteractionObject("LettuceSliced", parent_object=lettuce)``: the
executor gives each variable a piece no other one holds). Only pieces the program does nothing to
but move, and puts in no appliance, pan or pot, are added (a raw slice, not a cooked one or a
toast), and none is removed: a goal asks for at least that many.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from typing import Any

from icalkit.agents.demo_end_state import interaction_class
from icalkit.agents.review_guard import MOVES, PLACES
from icalkit.envs.household.catalog import SLICE_PRODUCTS
from icalkit.envs.household.receptacles import APPLIANCES

COOKWARE = APPLIANCES | {"Pan", "Pot"}  # a piece put there is being cooked

NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
_COUNT = r"\b(a|an|one|two|three|four|five|six|[1-6])\s+(?:cooked\s+|raw\s+)?"
SLICE_OF = re.compile(_COUNT + r"slices?\s+of\s+(?:the\s+)?(?:cooked\s+)?([a-z]+)")  # "two slices of tomato"
FOOD_SLICE = re.compile(_COUNT + r"([a-z]+)\s+slices?\b")  # "an apple slice", "2 lettuce slices"
PIECES = {whole.lower(): piece for whole, (piece, n) in SLICE_PRODUCTS.items() if n > 1}  # "lettuce" -> LettuceSliced


def asked_pieces(texts: Iterable[str]) -> dict[str, int]:
    """Piece class -> the largest number of its pieces the ``texts`` ask for (the dialogue's words)."""
    asked: dict[str, int] = {}
    for text in texts:
        for pattern in (SLICE_OF, FOOD_SLICE):
            for number, food in pattern.findall(text.lower()):
                piece = PIECES.get(food)
                if piece:
                    asked[piece] = max(asked.get(piece, 0), NUMBERS.get(number) or int(number))
    return asked


def serve_pieces(program: str, asked: dict[str, int]) -> tuple[str, dict[str, int]]:
    """``program`` with further raw pieces placed where it places most of a class's pieces, up to the
    number ``asked``; and the pieces added per class. A program that does not parse is returned as it
    is (the executor reports it)."""
    try:
        body = ast.parse(program).body
    except SyntaxError:
        return program, {}
    declared: dict[str, tuple[str, ast.Call]] = {}  # piece variable -> (class, its InteractionObject call)
    classes: dict[str, str] = {}  # every object variable -> its class
    placed: dict[str, tuple[str, int]] = {}  # piece variable -> (receptacle variable, statement index)
    worked: set[str] = set()  # piece variables something other than a move is done to (cooked, ...)
    for i, stmt in enumerate(body):
        if isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name) and isinstance(stmt.value, ast.Call):
            cls = interaction_class(stmt.value) if _is_interaction(stmt.value) else None
            classes[stmt.targets[0].id] = cls or ""
            if cls in asked:
                declared[stmt.targets[0].id] = (cls, stmt.value)
        for node in ast.walk(stmt):
            call = _method_call(node)
            if call is None or call[0] not in declared:
                continue
            var, method, args = call
            if method in PLACES and args and isinstance(args[0], ast.Name):
                placed[var] = (args[0].id, i)
                if classes.get(args[0].id) in COOKWARE:
                    worked.add(var)
            elif method not in (*MOVES, "go_to"):
                worked.add(var)
    lines = [ast.get_source_segment(program, s) or "" for s in body]
    added: dict[str, int] = {}
    for cls, want in sorted(asked.items()):
        pieces = [v for v, (c, _) in declared.items() if c == cls and v in placed]
        if not pieces or any(v in worked for v in pieces):
            continue
        by_place: dict[str, list[str]] = {}
        for v in pieces:
            by_place.setdefault(placed[v][0], []).append(v)
        place, served = max(by_place.items(), key=lambda kv: (len(kv[1]), max(placed[v][1] for v in kv[1])))
        if len(served) >= want:
            continue
        parent = next((kw.value for kw in declared[served[0]][1].keywords if kw.arg == "parent_object"), None)
        source = f", parent_object={ast.get_source_segment(program, parent)}" if parent is not None else ""
        last = max(placed[v][1] for v in served)
        extra = []
        for n in range(want - len(served)):
            var = f"{served[0]}_more_{n}"
            extra += [f'{var} = InteractionObject("{cls}"{source})', f"{var}.pickup_and_place({place})"]
        lines[last] = "\n".join([lines[last], *extra])
        added[cls] = want - len(served)
    return ("\n".join(lines) + "\n", added) if added else (program, {})


def _is_interaction(call: ast.Call) -> bool:
    return isinstance(call.func, ast.Name) and call.func.id == "InteractionObject"


def _method_call(node: Any) -> tuple[str, str, list[ast.expr]] | None:
    """``(variable, method, args)`` of ``variable.method(args)``, else None."""
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)):
        return node.func.value.id, node.func.attr, node.args
    return None
