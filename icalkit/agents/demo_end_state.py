"""Is a copied task finished? Compare the room with the end state its demonstration reached
(``planner.silent_next_copy: end_state``).

A copy that ends without an error may have left the task unfinished: the new room has a second pot,
a dirty plate, a third remote. The agent is not told. What it has is the copied demonstration: its
start state and the attribute changes its program made (``Example.initial_state`` and
``observed_changes``), so the state it ended in. The goal is inferred from that end state, at the level
of classes (renamed as the copy's re-grounding renamed them), and checked on the room:

- **states**: the goal attributes (dirty, cooked, sliced, filled, liquid, boiled) the objects the
  demonstration acted on ended with (a cleaned pot, the clean plate it served on, a coffee-filled
  mug): the objects of that class the episode acted on must have them too — and every object of the
  class in the room, when the demonstration's room held two or more and all ended so (wash *all*
  the dishes);
- **placements**: what the demonstration's program put where (``x.place(y)``,
  ``x.pickup_and_place(y)``) and was still there at the end: at least as many objects of the class on
  a receptacle of that class, the receptacle in the attribute states the demonstration's ended in (the
  clean plate; pieces cut where they lie are not placements) — or all of them, when its room held
  two or more and all ended there (put *all* the remotes on the sofa).

An unmet check means "not finished": the next copy runs. Every check met means finished, which can be
wrong where the demonstration itself did less than the new task asks (one slice where two are asked):
those the agent cannot see without reading the numbers in the dialogue.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from icalkit.agents.context import example_program, full_state
from icalkit.agents.mention_grounding import mention_scores
from icalkit.agents.review_guard import placed_ids

GOAL_ATTRIBUTES = ("dirty", "cooked", "sliced", "filled", "liquid", "boiled")
PLACES = frozenset({"place", "pickup_and_place"})
ALL_FROM = 2  # a demonstration room with this many objects of a class, all ending alike: "all of them"
NAMED = 0.9  # a mention's similarity to a class's own words ("potato": 1.0; "mug" for the Cup: 0.64)


@dataclass(frozen=True)
class Check:
    """One class-level fact of the demonstration's end state.

    Attributes:
        cls: object class (renamed by the copy's re-grounding).
        attrs: goal attribute values the objects must have.
        on: ``placement``: the receptacle class the objects must sit on; ``""``: a state check.
        on_attrs: ``placement``: goal attribute values the receptacle must have.
        count: ``placement``: how many the demonstration moved there and left.
        every: every object of ``cls`` in the room, not only those the episode acted on (``placement``:
            every one on such a receptacle).
    """

    cls: str
    attrs: tuple[tuple[str, Any], ...]
    on: str = ""
    on_attrs: tuple[tuple[str, Any], ...] = ()
    count: int = 0
    every: bool = False

    def text(self) -> str:
        what = self.cls + "".join(f" ({', '.join(f'{a}={v}' for a, v in attrs)})" for attrs in (self.attrs,) if attrs)
        if not self.on:
            return f"{'every' if self.every else 'each acted-on'} {what}"
        where = self.on + "".join(f" ({', '.join(f'{a}={v}' for a, v in self.on_attrs)})" if self.on_attrs else "")
        return f"{'every' if self.every else f'{self.count} or more'} {what} on a {where}"


def class_of(object_id: str) -> str:
    """``"TomatoSliced_3"`` -> ``"TomatoSliced"``."""
    return object_id.rsplit("_", 1)[0]


def renamed(cls: str, mapping: Mapping[str, str]) -> str:
    """``cls`` as the re-grounding renamed it (``"AppleSliced"`` -> ``"TomatoSliced"`` for Apple -> Tomato)."""
    base, sliced = (cls[:-6], "Sliced") if cls.endswith("Sliced") and cls[:-6] in mapping else (cls, "")
    return mapping.get(base, base) + sliced


def end_state(initial: Mapping[str, dict], changes: Iterable[Mapping[str, Any]]) -> dict[str, dict]:
    """The demonstration's end state: its start state with its changes applied; an object whose every
    attribute became None (a loaf sliced away) is gone."""
    state = {oid: dict(attrs) for oid, attrs in initial.items()}
    changed: set[str] = set()
    for c in changes:
        state.setdefault(c["object"], {})[c["attribute"]] = c["after"]
        changed.add(c["object"])
    return {oid: a for oid, a in state.items()
            if oid not in changed or any(v is not None for k, v in a.items() if k != "label")}


def program_placements(program: str) -> set[tuple[str, str]]:
    """``(object class, receptacle class)`` of every ``place`` / ``pickup_and_place`` in ``program``
    whose variables were bound to ``InteractionObject("Class", ...)``; unreadable: none."""
    try:
        tree = ast.parse(program)
    except SyntaxError:
        return set()
    bound: dict[str, str] = {}
    pairs: set[tuple[str, str]] = set()
    for node in ast.walk(tree):
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                and getattr(node.value.func, "id", "") == "InteractionObject" and node.value.args
                and isinstance(node.value.args[0], ast.Constant) and isinstance(node.value.args[0].value, str)):
            bound.update({t.id: node.value.args[0].value for t in node.targets if isinstance(t, ast.Name)})
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in PLACES
                and isinstance(node.func.value, ast.Name) and node.args and isinstance(node.args[0], ast.Name)
                and node.func.value.id in bound and node.args[0].id in bound):
            pairs.add((bound[node.func.value.id], bound[node.args[0].id]))
    return pairs


def _goal_attrs(state: Mapping[str, dict], ids: Iterable[str]) -> tuple[tuple[str, Any], ...]:
    """The goal attribute values every object of ``ids`` shares (those they disagree on left out)."""
    objs = [state[i] for i in ids]
    return tuple((a, objs[0][a]) for a in GOAL_ATTRIBUTES
                 if objs and all(a in o for o in objs) and len({repr(o[a]) for o in objs}) == 1)


def demo_checks(example: Any, program: str, mapping: Mapping[str, str]) -> list[Check]:
    """The checks of ``example``'s end state (its ``initial_state`` and ``observed_changes``), whose
    ``program`` made them, its classes renamed by ``mapping``."""
    end = end_state(example.initial_state, example.observed_changes)
    by_class: dict[str, list[str]] = {}
    for oid in end:
        by_class.setdefault(class_of(oid), []).append(oid)
    acted = {c["object"] for c in example.observed_changes if c["object"] in end}
    acted |= {c["after"] for c in example.observed_changes if c["attribute"] == "parent" and c["after"] in end}
    checks = []
    for cls in sorted({class_of(o) for o in acted}):
        ids = [o for o in acted if class_of(o) == cls]
        attrs = _goal_attrs(end, ids)
        if attrs:
            every = len(by_class[cls]) >= ALL_FROM and _goal_attrs(end, by_class[cls]) == attrs
            checks.append(Check(renamed(cls, mapping), attrs, every=every))
    start = example.initial_state
    for cls, on in sorted(program_placements(program)):
        there = [o for o in by_class.get(cls, []) if class_of(end[o].get("parent") or "_") == on]
        moved = [o for o in there if end[o]["parent"] not in _origins(start, end, o)]
        if moved:
            holders = {end[o]["parent"] for o in there}
            every = len(by_class[cls]) >= ALL_FROM and len(there) == len(by_class[cls])
            checks.append(Check(renamed(cls, mapping), _goal_attrs(end, there), renamed(on, mapping),
                                _goal_attrs(end, holders), len(moved), every))
    return checks


def _origins(start: Mapping[str, dict], end: Mapping[str, dict], oid: str) -> set[Any]:
    """Where ``oid`` was before the demonstration acted: its start parent, or for a piece cut during it
    the start parents of the objects of its class that were sliced away (a piece is cut where they lay)."""
    if oid in start:
        return {start[oid].get("parent")}
    whole = class_of(oid).removesuffix("Sliced")
    return {a.get("parent") for o, a in start.items() if o not in end and class_of(o) == whole}


def unmet(checks: Iterable[Check], state: Mapping[str, dict], acted: set[str]) -> list[Check]:
    """The checks the room's ``state`` (:func:`~icalkit.envs.household.observe.object_state_dict`)
    does not meet; ``acted``: the ids the episode acted on (named, or placed something on)."""
    def has(oid: str, attrs: tuple[tuple[str, Any], ...]) -> bool:
        return all(state[oid].get(a) == v for a, v in attrs)

    out = []
    for check in checks:
        objs = [o for o in state if class_of(o) == check.cls]
        if not check.on:
            scope = objs if check.every else [o for o in objs if o in acted]
            ok = all(has(o, check.attrs) for o in scope)
        else:
            there = [o for o in objs if has(o, check.attrs) and (p := state[o].get("parent")) in state
                     and class_of(p) == check.on and has(p, check.on_attrs)]
            ok = len(there) == len(objs) if check.every else len(there) >= check.count
        if not ok:
            out.append(check)
    return out


def unnamed_in_episode(dialogue: Sequence[Any], room: Iterable[str], acted: Iterable[str], embedder: Any,
                       min_score: float = NAMED) -> list[str]:
    """The objects the ``dialogue`` names (a pickupable class of the ``room`` whose best span similarity,
    under the mention re-grounding's embedder, is at least ``min_score``: the class's own words) of which
    the episode acted on none (``acted``: object ids; its pieces count for a sliceable object)."""
    from icalkit.envs.household.catalog import OBJECT_TYPES

    done = {class_of(o).removesuffix("Sliced") for o in acted}
    classes = sorted(c for c in set(room) if (t := OBJECT_TYPES.get(c)) is not None and t.pickupable
                     and t.kind != "sliced" and c not in done)
    scores = mention_scores(embedder, dialogue, classes)
    return [c for c in classes if scores[c][1] >= min_score]


def room_unmet(example: Any, mapping: Mapping[str, str], world: Any, calls: Sequence[Any],
               dialogue: Sequence[Any], room: Iterable[str], embedder: Any) -> list[str]:
    """Why the task may not be finished after the episode's API ``calls``: the checks of ``example``'s
    end state (its classes renamed by ``mapping``, as its copy ran) that the ``world`` does not meet,
    then the objects of the ``room`` the ``dialogue`` names that the episode never acted on."""
    acted = {c.object for c in calls if c.success}
    acted |= {p for o in placed_ids(calls) if o in world.objects and (p := world.objects[o].parent)}
    left = [c.text() for c in unmet(demo_checks(example, example_program(example), mapping), full_state(world), acted)]
    touched = acted | {p.target for c in calls for p in c.primitives if p.success and p.target}
    return left + [f"acted on the {c} the dialogue names"
                   for c in unnamed_in_episode(dialogue, room, touched, embedder)]
