"""Wash the dish a copy serves in when it is dirty (``planner.wash_served``).

A Sandwich demonstration served on the clean plate of its room. In the new room the plate is dirty (the
task's setup dirties the served dish in half of the tasks); the copy serves on it, and the task stays
unfinished ("not yet each acted-on Plate (dirty=False)"). The next copies are of demonstrations that
did not wash either. A person washes the plate first.

:func:`wash_served` puts, before the first use of each dish the copied program serves in (puts something
on or in it, or puts it in the coffee machine) and does not take to the sink before that, the check the
API offers and the wash the demonstrations do: if the dish is dirty, into the sink, the faucet on and
off, and a dish that can hold water emptied there. The check resolves the dish the program goes on to
use, in any room, with or without the evaluation's object map. No model is asked.
"""

from __future__ import annotations

import ast

from icalkit.agents.absent_objects import bound_names, declared_class, read_names
from icalkit.agents.review_guard import PLACES
from icalkit.agents.state_repair import free_prefix
from icalkit.envs.household.catalog import OBJECT_TYPES

SINK, FILLS = "SinkBasin", "CoffeeMachine"  # washed there; served by it (a mug put in it is served coffee)
TABLEWARE = "Tableware"  # the dishes food and drink are served in (not a pot or pan: one may hold the water it boils)


def _wash(var: str, cls: str, prefix: str) -> str:
    """The statement that washes ``var``'s dish (of ``cls``) if it is dirty, emptying one that fills with water."""
    sink, faucet = f"{prefix}sink", f"{prefix}faucet"
    empty = f"\n    {var}.pickup()\n    {var}.pour({sink})" if OBJECT_TYPES[cls].can_fill else ""
    return (f'if {var}.check_attribute("dirty", True):\n'
            f'    {sink} = InteractionObject("{SINK}")\n    {faucet} = InteractionObject("Faucet")\n'
            f"    {var}.pickup_and_place({sink})\n    {faucet}.toggle_on()\n    {faucet}.toggle_off(){empty}")


def is_dish(cls: str) -> bool:
    """Whether ``cls`` is tableware that can be dirty, a dish food or drink is served in (a plate, bowl, mug or
    cup; not a bottle)."""
    t = OBJECT_TYPES.get(cls)
    return t is not None and t.dirtyable and TABLEWARE in t.classes


def served_dishes(body: list[ast.stmt]) -> dict[str, tuple[int, str]]:
    """``{variable: (index of the first top-level statement that uses it, its class)}`` for each variable
    ``body`` binds once to tableware that can be dirty (a plate, bowl, mug or cup) and serves in (a
    ``place`` / ``pickup_and_place`` onto it, or of it into the coffee machine) without taking it to the
    sink before."""
    binds: dict[str, int] = {}
    classes: dict[str, str] = {}
    for stmt in (n for s in body for n in ast.walk(s) if isinstance(n, ast.stmt)):  # inside an if too
        names = bound_names(stmt)
        for name in names:
            binds[name] = binds.get(name, 0) + 1
        if (cls := declared_class(stmt)) is not None and len(names) == 1:
            classes[next(iter(names))] = cls
    dishes = {v for v, c in classes.items() if binds[v] == 1 and is_dish(c)}
    served: set[str] = set()
    sunk: set[str] = set()
    for stmt in body:
        for node in ast.walk(stmt):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in PLACES
                    and isinstance(node.func.value, ast.Name) and node.args and isinstance(node.args[0], ast.Name)):
                continue
            obj, on = node.func.value.id, node.args[0].id
            if obj in dishes and classes.get(on) == SINK and obj not in served:
                sunk.add(obj)
            served |= {v for v in (on, obj if classes.get(on) == FILLS else "") if v in dishes and v not in sunk}
    first: dict[str, tuple[int, str]] = {}
    for i, stmt in enumerate(body):
        for v in sorted(served & read_names(stmt) - set(first) - bound_names(stmt)):
            first[v] = (i, classes[v])
    return first


def wash_served(program: str) -> tuple[str, list[str]]:
    """``program`` with each dish it serves in (:func:`served_dishes`) washed before its first use if it
    is dirty then; and the dishes' variables. A program that does not parse is returned as it is (the
    executor reports it)."""
    try:
        body = ast.parse(program).body
    except SyntaxError:
        return program, []
    first = served_dishes(body)
    if not first:
        return program, []
    prefix = free_prefix({n.id for n in ast.walk(ast.Module(body=body, type_ignores=[])) if isinstance(n, ast.Name)},
                         "wash")
    lines = [ast.get_source_segment(program, s) or ast.unparse(s) for s in body]
    for n, (var, (at, cls)) in enumerate(sorted(first.items(), key=lambda kv: kv[1])):
        lines[at] = f"{_wash(var, cls, f'{prefix}{n}_')}\n{lines[at]}"
    return "\n".join(lines) + "\n", sorted(first)
