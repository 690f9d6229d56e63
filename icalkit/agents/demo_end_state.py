"""Is a copied task finished? Compare the room with the end state its demonstration reached
(``planner.silent_next_copy: end_state``).

A copy that ends without an error may have left the task unfinished: the new room has a second pot,
a dirty plate, a third remote. The agent is not told. What it has is the copied demonstration: its
start state and the attribute changes its program made (``Example.initial_state`` and
``observed_changes``), so the state it ended in. The goal is inferred from that end state, at the level
of classes (renamed as the copy's re-grounding renamed them), and checked on the room
(:func:`demo_checks`, :func:`unmet`):

- **states**: the goal attributes (dirty, cooked, sliced, filled, liquid, boiled) the objects the
  demonstration acted on ended with (a cleaned pot, the clean plate it served on, a coffee-filled
  mug): the objects of that class the episode acted on must have them too — and every object of the
  class in the room, when the demonstration's room held two or more, all ended so and it changed one
  (wash *all* the dishes);
- **placements**: what the demonstration's program put where (``x.place(y)``,
  ``x.pickup_and_place(y)``) and was still there at the end: at least as many objects of the class on
  a receptacle of that class, the receptacle in the attribute states the demonstration's ended in (the
  clean plate; pieces cut where they lie are not placements) — or all of them, when all its objects
  of the class ended there and it moved two or more (put *all* the remotes on the sofa). A knife is
  a tool: where it ends is no goal.

A demonstration may also do less than the new dialogue asks (a salad without the potato the dialogue
wants), so the objects the dialogue names must have been touched by the episode
(:func:`unnamed_in_episode`). An unmet check means "not finished": the next copy runs. Every check
met means finished, which can be wrong where the task asks what the demonstration's end state does
not show (two slices where it served one; everything on one and the same plate).

The room is the executor's world as it is (with the evaluation's oracle object map the agent can name
every object in it). A memory built before ICAL kept all of an example's changes holds at most 60 of
them per example: rebuild it (``make pruned-memory pruned-memory-learned``) before using this check.
"""

from __future__ import annotations

import ast
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from icalkit.agents.context import example_program, object_calls
from icalkit.agents.mention_grounding import mention_scores
from icalkit.agents.review_guard import PLACES
from icalkit.envs.household.catalog import KNIVES, OBJECT_TYPES, SLICE_PRODUCTS, SLICED_FROM
from icalkit.envs.household.receptacles import ALLOWED, APPLIANCES

GOAL_ATTRIBUTES = ("dirty", "cooked", "sliced", "filled", "liquid", "boiled")
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
        count: ``placement``: how many the demonstration moved there and left; 0: each object of ``cls``
            the episode acted on (a container served where the dialogue asks).
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
        """E.g. ``every Pot (dirty=False)``, ``2 or more TomatoSliced (sliced=True) on a Plate (dirty=False)``."""
        def values(attrs: tuple[tuple[str, Any], ...]) -> str:
            return f" ({', '.join(f'{a}={v}' for a, v in attrs)})" if attrs else ""

        what = self.cls + values(self.attrs)
        if not self.on:
            return f"{'every' if self.every else 'each acted-on'} {what}"
        many = "every" if self.every else f"{self.count} or more" if self.count else "each acted-on"
        return f"{many} {what} on a {self.on}{values(self.on_attrs)}"


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
    """``(object class, receptacle class)`` of every ``place`` / ``pickup_and_place`` in ``program`` on
    objects named ``InteractionObject("Class", ...)``; unreadable: none."""
    try:
        return {(obj, on) for method, obj, on in object_calls(program, interaction_class) if method in PLACES and obj and on}
    except SyntaxError:
        return set()


def interaction_class(call: ast.Call) -> str | None:
    """The class an ``InteractionObject("Class", ...)`` expression names."""
    arg = call.args[0] if call.args else None
    return arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else None


def applicable(cls: str, attrs: tuple[tuple[str, Any], ...]) -> tuple[tuple[str, Any], ...]:
    """``attrs`` without those an object of ``cls`` cannot have: a pot's demonstration renamed to plates
    asks them clean, not filled with water (no plate holds any)."""
    t = OBJECT_TYPES.get(cls)
    can = {"dirty": t.dirtyable, "cooked": t.cookable, "boiled": t.cookable, "sliced": t.sliceable or t.kind == "sliced",
           "filled": t.can_fill, "liquid": t.can_fill} if t is not None else {}
    return tuple((a, v) for a, v in attrs if can.get(a, True))


def _goal_attrs(state: Mapping[str, dict], ids: Iterable[str], as_cls: str = "") -> tuple[tuple[str, Any], ...]:
    """The goal attribute values every object of ``ids`` shares (those they disagree on left out; an id
    the state lacks does not count); with ``as_cls``, only those an object of that class can have
    (:func:`applicable`)."""
    objs = [state[i] for i in ids if i in state]
    return applicable(as_cls, tuple((a, objs[0][a]) for a in GOAL_ATTRIBUTES
                                    if objs and all(a in o for o in objs) and len({repr(o[a]) for o in objs}) == 1))


def acted_on(start: Mapping[str, dict], end: Mapping[str, dict], among: Iterable[str] | None = None) -> set[str]:
    """The objects whose state differs between ``start`` and ``end`` (made, changed or moved) — of
    ``among`` only, where given (an episode's: what its calls targeted, not a cup the running faucet
    filled beside them) — and the receptacles they were moved onto: what was acted on."""
    changed = {o for o in end if start.get(o) != end[o]}
    if among is not None:
        changed &= set(among)
    return changed | {p for o in changed if (p := end[o].get("parent")) in end and p != start.get(o, {}).get("parent")}


def demo_checks(example: Any, mapping: Mapping[str, str], places: Collection[str] = ()) -> list[Check]:
    """The checks of ``example``'s end state (its ``initial_state`` and ``observed_changes``, made by its
    program), its classes renamed by ``mapping``; a knife is a tool, where it ends is no goal (and the
    executor cuts with whichever kind the room has). "Every" object of a class needs two or more in the
    demonstration's room: for a state, all ending alike and one of them changed by it (a washed bowl,
    not two plates clean from the start); for a placement, all ending there and two or more moved there
    by it (not a cup put beside one that stood there). A container its program put things on (the
    sandwich's plate) that ended on a receptacle of a class in ``places`` (renamed; the places the new
    dialogue names) must end there too, moved there or not: "all on the dining table"."""
    start = example.initial_state
    end = end_state(start, example.observed_changes)
    by_class: dict[str, list[str]] = {}
    for oid in end:
        by_class.setdefault(class_of(oid), []).append(oid)
    acted = acted_on(start, end)
    made = {class_of(c["object"]) for c in example.observed_changes
            if c["attribute"] in GOAL_ATTRIBUTES and c["before"] is not None}
    checks = []
    for cls in sorted({class_of(o) for o in acted} - set(KNIVES)):
        attrs = _goal_attrs(end, [o for o in acted if class_of(o) == cls])
        if asked := applicable(renamed(cls, mapping), attrs):
            every = (len(by_class[cls]) >= ALL_FROM and cls in made and _goal_attrs(end, by_class[cls]) == attrs)
            checks.append(Check(renamed(cls, mapping), asked, every=every))
    placements = program_placements(example_program(example))
    for cls, on in sorted(p for p in placements if p[0] not in KNIVES):
        there = [o for o in by_class.get(cls, []) if class_of(end[o].get("parent") or "_") == on]
        moved = [o for o in there if end[o]["parent"] not in _origins(start, end, o)]
        if moved:
            every = len(there) == len(by_class[cls]) and len(moved) >= ALL_FROM
            cls_to, on_to = renamed(cls, mapping), renamed(on, mapping)
            checks.append(Check(cls_to, _goal_attrs(end, there, cls_to), on_to,
                                _goal_attrs(end, {end[o]["parent"] for o in there}, on_to), len(moved), every))
    placed = {(c.cls, c.on) for c in checks if c.on}
    for holder in sorted(holders(end, placements)):
        parent = end[holder].get("parent")
        cls, on = renamed(class_of(holder), mapping), renamed(class_of(parent or "_"), mapping)
        kind = OBJECT_TYPES.get(class_of(holder))
        if parent in end and on in places and (cls, on) not in placed and kind is not None and kind.pickupable:
            checks.append(Check(cls, _goal_attrs(end, [holder], cls), on, _goal_attrs(end, [parent], on)))
            placed.add((cls, on))
    return checks


def holders(end: Mapping[str, dict], placements: Collection[tuple[str, str]]) -> set[str]:
    """The objects of ``end`` that hold something a program's ``placements`` (object class, receptacle
    class; :func:`program_placements`) put on their class (the sandwich's plate)."""
    return {p for x, a in end.items() if (p := a.get("parent")) in end and (class_of(x), class_of(p)) in placements}


def _origins(start: Mapping[str, dict], end: Mapping[str, dict], oid: str) -> set[Any]:
    """Where ``oid`` was before the demonstration acted: its start parent, or for a piece cut during it
    the start parents of the objects it can be cut from that were sliced away (a piece is cut where
    they lay; one moved and then sliced counts where it was cut, which the end state cannot tell)."""
    if oid in start:
        return {start[oid].get("parent")}
    whole = SLICED_FROM.get(class_of(oid))
    return {a.get("parent") for o, a in start.items() if o not in end and class_of(o) == whole}


def unmet(checks: Iterable[Check], state: Mapping[str, dict], acted: set[str],
          start: Mapping[str, dict] | None = None) -> list[Check]:
    """The checks the room's ``state`` (:func:`~icalkit.envs.household.observe.object_state_dict`)
    does not meet; ``acted``: the ids the episode acted on (:func:`acted_on`). A placement of a class
    the room had none of (nor of its whole) in ``start``, its state when the episode began, is met:
    the room cannot ask for it (``planner.drop_absent`` leaves such objects out of the copy; a bread
    the episode cut up still counts, and a place the room lacks is another matter: the executor puts
    the object down elsewhere, and the next copy may do better)."""
    out = []
    for check in checks:
        objs = objects_of(state, check.cls)
        if not check.on:
            scope = objs if check.every else [o for o in objs if o in acted]
            ok = all(has_attrs(state, o, check.attrs) for o in scope)
        elif start is not None and lacks({class_of(o) for o in start}, check.cls):
            ok = True  # the room never had such an object (nor its whole): nothing to do
        else:
            there = _there(check, state)
            ok = (len(there) == len(objs) if check.every else len(there) >= check.count if check.count
                  else all(o in there for o in objs if o in acted))
        if not ok:
            out.append(check)
    return out


def has_attrs(state: Mapping[str, dict], oid: str, attrs: tuple[tuple[str, Any], ...]) -> bool:
    """Whether object ``oid`` of ``state`` has the attribute values ``attrs``."""
    return all(state[oid].get(a) == v for a, v in attrs)


def objects_of(state: Mapping[str, dict], cls: str, attrs: tuple[tuple[str, Any], ...] = (),
              first: Collection[str] = ()) -> list[str]:
    """The objects of class ``cls`` in ``state`` with the values ``attrs``, those in ``first`` first."""
    return sorted((o for o in state if class_of(o) == cls and has_attrs(state, o, attrs)), key=lambda o: (o not in first, o))


def _there(check: Check, state: Mapping[str, dict]) -> list[str]:
    """The objects of a placement ``check``'s class, in its states, on a receptacle of its class and states."""
    return [o for o in objects_of(state, check.cls, check.attrs) if (p := state[o].get("parent")) in state
            and class_of(p) == check.on and has_attrs(state, p, check.on_attrs)]


def placement_repair(checks: Sequence[Check], state: Mapping[str, dict], acted: set[str],
                     places: Collection[str]) -> str:
    """A program that makes unmet placement ``checks`` hold by moving objects of the room (by id, as the
    object map names them): those the episode acted on first, onto a receptacle of the class and states
    asked (one the episode acted on first); "" when a check is no placement onto one of ``places`` (the
    receptacles the dialogue names: a demonstration's put-away shelf is no goal of the new task) or
    nothing can be moved."""
    lines: list[str] = []
    for n, check in enumerate(checks):
        if check.on not in places:
            return ""
        there = set(_there(check, state))
        objs = [o for o in objects_of(state, check.cls, check.attrs, acted) if o not in there]
        if not check.every:
            objs = ([o for o in objs if o in acted] if not check.count
                    else objs[:max(0, check.count - len(there))])
        spots = objects_of(state, check.on, check.on_attrs, acted)
        if not objs or not spots:
            return ""
        lines.append(f'spot_{n} = InteractionObject("{check.on}", object_instance="{spots[0]}")')
        for i, oid in enumerate(objs):
            lines += [f'item_{n}_{i} = InteractionObject("{check.cls}", object_instance="{oid}")',
                      f"item_{n}_{i}.pickup_and_place(spot_{n})"]
    return "\n".join(lines) + "\n" if lines else ""


def named_classes(dialogue: Sequence[Any], room: Iterable[str], embedder: Any, min_score: float = NAMED,
                  skip: Iterable[str] = (), places: bool = False) -> list[str]:
    """The objects the ``dialogue`` names: the pickupable classes of the ``room`` (not pieces, not
    ``skip``) whose best span similarity, under the mention re-grounding's embedder, is at least
    ``min_score`` (the class's own words); with ``places``, the places to put things on instead: its
    receptacles that cannot be picked up and take any object (the counter, the dining table; not the
    toaster "toast" is close to)."""
    skip = set(skip)
    classes = sorted(c for c in set(room) if (t := OBJECT_TYPES.get(c)) is not None and c not in SLICED_FROM
                     and (is_place(c) if places else t.pickupable))
    scores = mention_scores(embedder, dialogue, classes)  # a skipped class still holds its words ("hand towels")
    return [c for c in classes if scores[c][1] >= min_score and c not in skip]


def is_place(cls: str) -> bool:
    """Whether ``cls`` is a place to put things on: a receptacle that cannot be picked up and takes any
    object (the counter, the dining table; not the toaster nor the sink's allowed few)."""
    t = OBJECT_TYPES.get(cls)
    return t is not None and t.receptacle and not t.pickupable and cls not in ALLOWED and cls not in APPLIANCES


def goal_places(example: Any, mapping: Mapping[str, str]) -> set[str]:
    """The places among ``example``'s task parameters (the Y of "put all X on Y"), renamed by ``mapping``:
    where its task, not only its program, put things; empty for an example whose id names no task."""
    from icalkit.agents.grounding import task_params

    return {to for v in (task_params(example.task_id) or {}).values() if is_place(to := renamed(v, mapping))}


def lacks(room: Collection[str], cls: str) -> bool:
    """Whether the ``room``'s classes hold no object of ``cls`` nor, for a piece, of its whole, nor, for a
    whole, its pieces (a bread already cut is in the room as its slices)."""
    return cls not in room and SLICED_FROM.get(cls, cls) not in room and SLICE_PRODUCTS.get(cls, ("",))[0] not in room


def handled(classes: Iterable[str]) -> set[str]:
    """The objects ``classes`` (of a program, or of what an episode acted on) handle: a piece counts for
    the object it is cut from."""
    return {SLICED_FROM.get(c, c) for c in classes}


def unnamed_in_episode(dialogue: Sequence[Any], room: Iterable[str], acted: Iterable[str], embedder: Any,
                       min_score: float = NAMED) -> list[str]:
    """The objects the ``dialogue`` names (:func:`named_classes`) of which the episode touched none
    (``acted``: object ids; its pieces count for a sliceable object)."""
    return named_classes(dialogue, room, embedder, min_score, skip=handled(map(class_of, acted)))

