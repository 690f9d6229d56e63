"""Stand-ins for a vessel a copy pours from and the room lacks (``planner.stand_ins``).

A Water Plant demonstration filled a bottle at the sink and poured it on the plant. The new room has no
bottle, but a bowl and a cup. Copied as it is, ``bottle.pickup()`` fails ("No Bottle has been found")
and the copy ends there; so do the next copies if their demonstrations used a cup the room lacks too.
A person would carry the water in the bowl. ``drop_absent`` cannot help: the bottle is no object the
demonstration only moved.

So, for each class the (re-grounded) program pours from that the room lacks, the room's classes that
could do the same stand in for it (:func:`can_stand_in`): of the same kind, able to be filled
(:data:`NEEDS`), sharing one of its TEACh object classes (a bowl and a bottle are both water
containers), with room for what the program puts in it and a place where it puts it (a bowl is no pot
on the stove burner), and not used by the program already. The dialogue's mention ranks them ("any cup
or bowl is fine"), then the likeness of their names to the missing one's. Only where the evaluation's
object map shows the whole room: an object not seen yet is not missing.

Tried and left out (docs/finetune.md): standing in for every class a demonstration changed. Food it cut
gets potato slices in a salad that asked for none; a cup it washed under the running faucet was filled
too, and a washed cup the room lacks was noise; each lost more tasks than it won.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from icalkit.agents.absent_objects import changed_classes
from icalkit.agents.context import object_calls, program_classes
from icalkit.agents.demo_end_state import interaction_class, program_placements, renamed
from icalkit.agents.grounding import task_params
from icalkit.agents.mention_grounding import MIN_SCORE, class_phrase, mention_scores
from icalkit.envs.household.catalog import OBJECT_TYPES
from icalkit.envs.household.receptacles import can_hold

# what the program does with a vessel -> what a stand-in must be able to take
NEEDS = {"pour": "can_fill"}
FOOD_CHANGES = ("sliced", "cooked", "boiled")  # a class cut or cooked is food the request names


def can_stand_in(candidate: str, missing: str, needs: Collection[str], placements: Collection[tuple[str, str]] = ()
                 ) -> bool:
    """Whether the room's ``candidate`` can stand in for the ``missing`` vessel: the same kind, one of its
    TEACh object classes, what each of ``needs`` (:data:`NEEDS`' keys) asks, room for what the program puts
    in it and a place where it puts it (``placements``: the program's ``(object class, receptacle
    class)``; a bowl is no pot on the stove burner)."""
    c, m = OBJECT_TYPES.get(candidate), OBJECT_TYPES.get(missing)
    if c is None or m is None or candidate == missing or c.kind != m.kind or c.pickupable != m.pickupable:
        return False
    held = [obj for obj, on in placements if on == missing and obj in OBJECT_TYPES]
    places = [on for obj, on in placements if obj == missing and on in OBJECT_TYPES]
    return (all(getattr(c, NEEDS[n]) for n in needs) and bool(set(c.classes) & set(m.classes))
            and all(can_hold(candidate, h) for h in held) and all(can_hold(on, candidate) for on in places))


def vessel_needs(example: Any, program: str, mapping: Mapping[str, str]) -> dict[str, set[str]]:
    """``{class: needs}`` for each pickupable class of ``program`` (renamed by ``mapping``) that it uses as
    a vessel, one it pours from, and that ``example``'s demonstration neither cut nor cooked; needs as
    :data:`NEEDS`' keys. A class it only filled is none: a cup washed under the running faucet fills
    too. Nor is a class it only washed: a washed cup the room lacks was noise, or the task (a coffee in
    a mug) cannot be done in that room by another."""
    food = changed_classes(example, mapping, FOOD_CHANGES)
    out: dict[str, set[str]] = {}
    try:
        for method, obj, _ in object_calls(program, interaction_class):
            cls = renamed(obj, mapping) if obj else ""
            kind = OBJECT_TYPES.get(cls)
            if method in NEEDS and kind is not None and kind.pickupable and cls not in food:
                out.setdefault(cls, set()).add(method)
    except SyntaxError:
        return {}
    return out


def stand_ins(example: Any, program: str, mapping: Mapping[str, str], room: Collection[str], dialogue: Sequence[Any],
              embedder: Any) -> dict[str, str]:
    """``{example class: room class}`` for each vessel of ``program`` (``example``'s; :func:`vessel_needs`)
    that the room lacks after ``mapping`` (the re-grounding's renaming), where a room class can stand in
    (:func:`can_stand_in`): the one ``dialogue`` mentions best, else the nearest in name under
    ``embedder``. The task's own parameters (the bowl of "put all bowls in the sink") are the
    re-grounding's to replace, not this."""
    params = set((task_params(example.task_id) or {}).values())
    vessels = vessel_needs(example, program, mapping)
    placements = {(renamed(obj, mapping), renamed(on, mapping)) for obj, on in program_placements(program)}
    out: dict[str, str] = {}
    taken = {renamed(c, mapping) for c in program_classes(program)}
    for original in sorted(program_classes(program) - params):
        cls = renamed(original, mapping)
        if cls in room or cls not in vessels:
            continue
        candidates = sorted(c for c in room if c not in taken and can_stand_in(c, cls, vessels[cls], placements))
        if not candidates:
            continue
        said = mention_scores(embedder, dialogue, candidates)
        names = embedder.embed_text([class_phrase(cls), *map(class_phrase, candidates)])
        likeness = dict(zip(candidates, (names[1:] @ names[0]).round(4).tolist(), strict=True))
        best = min(candidates, key=lambda c: (-(said[c][0] if said[c][1] >= MIN_SCORE else -1e9), -likeness[c], c))
        out[original] = best
        taken.add(best)
    return out
