"""The engine's PDDL facts as THOR-style object metadata, a text state and a scene graph.

ALFWorld's PDDL state has no goal-condition counts; converting it into the metadata format of the
household simulator lets the project's TEACh-format checker count them (``isClean`` -> not
``isDirty``, ``isHot`` -> ``simbotIsCooked``, ``isCool`` -> ``isCooled``, ``isOn`` -> ``isToggled``,
``holds`` -> ``isPickedUp``, ``inReceptacle`` -> ``parentReceptacles``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping

from icalkit.envs.household.catalog import OBJECT_TYPES

Fact = tuple[str, tuple[str, ...]]
_TYPE_NAMES = {f"{name.lower()}type": name for name in OBJECT_TYPES} | {"floortype": "Floor"}


def type_name(pddl_type: str) -> str:
    """``appletype`` / ``AppleType`` -> ``Apple`` (unknown types keep their spelling, minus ``Type``)."""
    key = pddl_type.lower()
    return _TYPE_NAMES.get(key, pddl_type[:-4] if key.endswith("type") else pddl_type)


def fact_tuples(props: Iterable) -> list[Fact]:
    """TextWorld propositions -> ``(name, (arg, ...))`` with lower-case names."""
    return [(p.name.lower(), tuple(a.name.lower() for a in p.arguments)) for p in props]


def _blank(object_id: str, kind: str) -> dict:
    t = OBJECT_TYPES.get(kind)
    return {"objectId": object_id, "objectType": kind, "name": object_id, "pickupable": False, "receptacle": False,
            "openable": False, "toggleable": False, "sliceable": False, "cookable": False, "dirtyable": False,
            "isOpen": False, "isToggled": False, "isDirty": False, "isCooked": False, "isSliced": False,
            "isFilledWithLiquid": False, "fillLiquid": None, "isPickedUp": False, "isBroken": False,
            "simbotIsCooked": False, "simbotIsFilledWithCoffee": False, "simbotIsFilledWithWater": False,
            "simbotIsBoiled": False, "isCooled": False, "simbotObjectClass": list(t.classes) if t else [kind],
            "simbotIsReceptacleOf": [], "parentReceptacles": [], "receptacleObjectIds": [], "slicedFrom": None}


def facts_to_metadata(facts: Iterable[Fact], object_ids: Mapping[str, str] | None = None) -> list[dict]:
    """THOR-style metadata (one dict per PDDL object and receptacle) from the engine's facts.

    Args:
        facts: ``(predicate, args)`` pairs, lower case, as :func:`fact_tuples` gives them.
        object_ids: PDDL id -> simulator object id (generated games); PDDL ids are kept otherwise.
    """
    ids = {k.lower(): v for k, v in (object_ids or {}).items()}
    by: dict[str, dict] = {}
    preds: dict[str, set] = defaultdict(set)
    for name, args in facts:
        preds[name].add(args)
        if name in ("objecttype", "receptacletype") and len(args) == 2:
            oid = ids.get(args[0], args[0])
            obj = by.setdefault(args[0], _blank(oid, type_name(args[1])))
            obj["receptacle"] |= name == "receptacletype"
    one = {p: {a[0] for a in preds[p] if a} for p in ("openable", "opened", "pickupable", "toggleable", "ison", "istoggled",
                                                     "cleanable", "isclean", "ishot", "iscool", "sliceable",
                                                     "issliced", "heatable")}
    held = {a[1] for a in preds["holds"] if len(a) == 2}
    for key, obj in by.items():
        obj.update(openable=key in one["openable"], isOpen=key in one["opened"], pickupable=key in one["pickupable"],
                   toggleable=key in one["toggleable"], isToggled=key in one["ison"] | one["istoggled"],
                   dirtyable=key in one["cleanable"], isDirty=key in one["cleanable"] and key not in one["isclean"],
                   cookable=key in one["heatable"], isCooked=key in one["ishot"], simbotIsCooked=key in one["ishot"],
                   isCooled=key in one["iscool"], sliceable=key in one["sliceable"], isSliced=key in one["issliced"],
                   isPickedUp=key in held)
    for o, r in preds["inreceptacle"]:
        if o in by and r in by:
            by[o]["parentReceptacles"].append(by[r]["objectId"])
            by[r]["receptacleObjectIds"].append(by[o]["objectId"])
            by[r]["simbotIsReceptacleOf"].append(by[o]["objectId"])
    return list(by.values())


def agent_place(facts: Iterable[Fact]) -> str | None:
    """PDDL id of the receptacle at the agent's location (None: the middle of the room)."""
    facts = list(facts)
    at = {a[1] for n, a in facts if n == "atlocation" and len(a) == 2}
    return next((a[0] for n, a in facts if n == "receptacleatlocation" and a[1] in at), None)


def scene_graph(facts: Iterable[Fact], names: Mapping[str, str]) -> list[tuple[str, str, str]]:
    """(subject, relation, object) triples of what the agent perceives: where it is, what it holds,
    and the objects in the receptacle in front of it (when that one is open or not openable)."""
    facts = list(facts)
    name = lambda x: names.get(x, x)  # noqa: E731
    place = agent_place(facts)
    triples = []
    if place is not None:
        triples.append(("agent", "at", name(place)))
        closed = any(n == "openable" and a == (place,) for n, a in facts) and \
            not any(n == "opened" and a == (place,) for n, a in facts)
        if not closed:
            triples += sorted((name(o), "in", name(r)) for n, (o, *rest) in
                              ((n, a) for n, a in facts if n == "inreceptacle") for r in rest if r == place)
    triples += [("agent", "holds", name(a[1])) for n, a in facts if n == "holds" and len(a) == 2]
    return triples


def text_state(triples: list[tuple[str, str, str]]) -> str:
    """One line: where the agent is, what it sees there, what it holds."""
    at = next((o for s, r, o in triples if s == "agent" and r == "at"), None)
    seen = [s for s, r, o in triples if r == "in"]
    held = [o for s, r, o in triples if s == "agent" and r == "holds"]
    where = f"At {at}" if at else "In the middle of the room"
    return f"{where}; in view: {', '.join(seen) or 'nothing'}. Holding: {', '.join(held) or 'nothing'}."
