"""AI2-THOR metadata -> the household simulator's metadata format, text state and scene graph.

THOR's ``event.metadata["objects"]`` already carries most TEACh fields (``objectId``, ``objectType``,
``parentReceptacles``, ``isPickedUp``, ``isToggled``, ``isDirty``, ``isCooked``, ``isOpen`` ...);
TEACh's simbot-only fields (``simbotIsCooked``, ``simbotIsFilledWithCoffee``, ``simbotObjectClass``,
...) are derived here from THOR's state and the catalog's classes, so that the project's goal
checker (TEACh semantics) runs on THOR scenes unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from icalkit.envs.household.catalog import OBJECT_TYPES

SIMBOT_DEFAULTS = {"simbotIsCooked": False, "simbotIsFilledWithCoffee": False, "simbotIsFilledWithWater": False,
                   "simbotIsBoiled": False, "isCooled": False, "simbotIsReceptacleOf": []}


def short_id(object_id: str, index: Mapping[str, str] | None = None) -> str:
    """A readable name for a THOR id (``Mug|-01.76|+00.90|-00.62`` -> ``Mug_2`` when ``index`` has it)."""
    if index and object_id in index:
        return index[object_id]
    return object_id.split("|", 1)[0]


def readable_ids(objects: Sequence[Mapping]) -> dict[str, str]:
    """THOR id -> ``Type_n`` numbered in a stable order (by id), as the household simulator names objects."""
    counts: dict[str, int] = {}
    out = {}
    for obj in sorted(objects, key=lambda o: o["objectId"]):
        kind = obj["objectType"]
        counts[kind] = counts.get(kind, 0) + 1
        out[obj["objectId"]] = f"{kind}_{counts[kind]}"
    return out


def to_teach_metadata(objects: Sequence[Mapping], previous: Sequence[Mapping] | None = None) -> list[dict]:
    """THOR objects with TEACh's simbot fields filled in (the input is not modified).

    ``previous`` (the last converted metadata) keeps sticky states: an object once cooked stays
    ``simbotIsCooked``; a mug filled with coffee by a toggled-on coffee machine stays filled.
    """
    before = {o["objectId"]: o for o in previous or ()}
    by_id = {o["objectId"]: o for o in objects}
    out = []
    for obj in objects:
        o = dict(obj)
        prev = before.get(o["objectId"], {})
        cat = OBJECT_TYPES.get(o["objectType"])
        for key, value in SIMBOT_DEFAULTS.items():
            o.setdefault(key, prev.get(key, value.copy() if isinstance(value, list) else value))
        o["simbotIsCooked"] = bool(o.get("isCooked") or prev.get("simbotIsCooked"))
        o["parentReceptacles"] = list(o.get("parentReceptacles") or [])
        o["receptacleObjectIds"] = list(o.get("receptacleObjectIds") or [])
        o["simbotIsReceptacleOf"] = list(o["receptacleObjectIds"])
        o["simbotObjectClass"] = list(cat.classes) if cat and cat.classes else [o["objectType"]]
        liquid = str(o.get("fillLiquid") or "").lower()
        o["simbotIsFilledWithWater"] = bool(o.get("isFilledWithLiquid")) and liquid in ("water", "")
        in_coffee_machine = any(by_id.get(p, {}).get("objectType") == "CoffeeMachine"
                                and by_id[p].get("isToggled") for p in o["parentReceptacles"])
        o["simbotIsFilledWithCoffee"] = bool(prev.get("simbotIsFilledWithCoffee") or liquid == "coffee"
                                             or (o["objectType"] in ("Mug", "Cup") and in_coffee_machine))
        hot_pot = any(by_id.get(p, {}).get("isFilledWithLiquid") and by_id[p].get("temperature") == "Hot"
                      for p in o["parentReceptacles"])
        o["simbotIsBoiled"] = bool(prev.get("simbotIsBoiled") or (o.get("isCooked") and hot_pot))
        o["isCooled"] = bool(prev.get("isCooled") or o.get("temperature") == "Cold")
        out.append(o)
    return out


def visible(objects: Sequence[Mapping]) -> list[Mapping]:
    return [o for o in objects if o.get("visible")]


def scene_graph(objects: Sequence[Mapping], index: Mapping[str, str] | None = None,
                only_visible: bool = True) -> list[tuple[str, str, str]]:
    """(object, relation, receptacle) triples: ``in`` for openable receptacles, ``on`` otherwise; held objects
    appear as ``(agent, holds, x)``."""
    by_id = {o["objectId"]: o for o in objects}
    triples = []
    for o in (visible(objects) if only_visible else objects):
        name = short_id(o["objectId"], index)
        if o.get("isPickedUp"):
            triples.append(("agent", "holds", name))
            continue
        for parent in o.get("parentReceptacles") or []:
            rel = "in" if by_id.get(parent, {}).get("openable") else "on"
            triples.append((name, rel, short_id(parent, index)))
    held = [o for o in objects if o.get("isPickedUp") and not o.get("visible")]
    triples += [("agent", "holds", short_id(o["objectId"], index)) for o in held]
    return sorted(set(triples))


_STATES = (("isOpen", "open", "closed", "openable"), ("isToggled", "on", "off", "toggleable"),
           ("isDirty", "dirty", "clean", "dirtyable"), ("isCooked", "cooked", None, "cookable"),
           ("isSliced", "sliced", None, "sliceable"), ("isFilledWithLiquid", "filled", "empty", "canFillWithLiquid"))


def attributes(obj: Mapping) -> list[str]:
    """State words of one THOR object (``open``, ``dirty``, ``filled with water`` ...)."""
    words = []
    for key, yes, no, able in _STATES:
        if not obj.get(able):
            continue
        if obj.get(key):
            words.append(f"filled with {obj.get('fillLiquid') or 'water'}" if key == "isFilledWithLiquid" else yes)
        elif no:
            words.append(no)
    return words


def text_state(metadata: Mapping, index: Mapping[str, str] | None = None, limit: int = 30) -> str:
    """The agent's view as text: visible objects with their state and place, what is held, where the agent is."""
    objects = metadata["objects"]
    by_id = {o["objectId"]: o for o in objects}
    agent = metadata.get("agent", {})
    pos, rot = agent.get("position", {}), agent.get("rotation", {})
    parts = []
    for o in sorted(visible(objects), key=lambda o: o.get("distance", math.inf))[:limit]:
        words = attributes(o)
        parent = (o.get("parentReceptacles") or [None])[0]
        where = ""
        if parent in by_id:
            where = f" {'in' if by_id[parent].get('openable') else 'on'} {short_id(parent, index)}"
        parts.append(short_id(o["objectId"], index) + (f" ({', '.join(words)})" if words else "") + where)
    held = [short_id(o["objectId"], index) for o in objects if o.get("isPickedUp")]
    return (f"Agent at x={pos.get('x', 0):.2f}, z={pos.get('z', 0):.2f}, facing {rot.get('y', 0):.0f} deg. "
            f"Visible: {'; '.join(parts) or 'nothing'}. Holding: {', '.join(held) or 'nothing'}.")
