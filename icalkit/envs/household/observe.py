"""Text observations of the household simulator: text state, scene graph, abstracted object state.

The simulator decides which objects are visible (``visible_ids``); these functions only describe
them. Attribute words are the ones the action API uses (open, toggled, dirty, cooked, sliced,
filled, boiled, broken), relations are ``in`` / ``on`` (receptacles), ``near`` (small objects within
:data:`NEAR_DISTANCE` m), ``holds`` (agent) and ``left_of`` / ``right_of`` (in the agent's view).
"""

from __future__ import annotations

import math

from icalkit.envs.household.camera import to_camera
from icalkit.envs.household.render_style import IN_RECEPTACLES
from icalkit.envs.household.state import SimObject, World

NEAR_DISTANCE = 0.5
_SIDE_GAP = 0.15  # metres (camera x) two objects must differ by to be left/right of each other


def _get(world: World, oid: str) -> SimObject:
    try:
        return world.objects[oid]
    except KeyError:
        raise KeyError(f"object {oid!r} is not in scene {world.scene_id}") from None


def relation_to_parent(world: World, obj: SimObject) -> tuple[str, str] | None:
    """``("in" | "on", parent id)`` for an object held by a receptacle, else None."""
    if not obj.parent or obj.parent not in world.objects:
        return None
    return ("in" if world.objects[obj.parent].object_type in IN_RECEPTACLES else "on"), obj.parent


def attributes(obj: SimObject) -> list[str]:
    """State words that apply to the object's type, e.g. ``["closed"]``, ``["dirty", "filled with water"]``."""
    t = obj.type
    out: list[str] = []
    if t.openable:
        out.append("open" if obj.is_open else "closed")
    if t.toggleable:
        out.append("toggled on" if obj.is_toggled else "toggled off")
    if t.dirtyable:
        out.append("dirty" if obj.is_dirty else "clean")
    if t.cookable and obj.is_cooked:
        out.append("cooked")
    if t.sliceable or t.kind == "sliced":
        out.append("sliced" if obj.is_sliced or t.kind == "sliced" else "whole")
    if t.can_fill:
        out.append(f"filled with {obj.fill_liquid or 'water'}" if obj.is_filled else "empty")
    if obj.is_boiled:
        out.append("boiled")
    if obj.is_broken:
        out.append("broken")
    return out


def text_state(world: World, visible_ids: list[str]) -> str:
    """One line per visible object (id, type, position, attributes, parent) plus what is held.

    Example line: ``Mug_1 (Mug) at (2.15, 0.96, 2.50): dirty, empty; on CounterTop_1``.
    """
    lines = []
    for oid in visible_ids:
        obj = _get(world, oid)
        x, y, z = obj.position
        line = f"{oid} ({obj.object_type}) at ({x:.2f}, {y:.2f}, {z:.2f})"
        attrs = attributes(obj)
        if attrs:
            line += ": " + ", ".join(attrs)
        rel = relation_to_parent(world, obj)
        if rel is not None:
            line += f"; {rel[0]} {rel[1]}"
        lines.append(line)
    if world.held is not None:
        held = _get(world, world.held)
        attrs = attributes(held)
        lines.append(f"Holding: {held.object_id} ({held.object_type})" + (": " + ", ".join(attrs) if attrs else ""))
    else:
        lines.append("Holding: nothing")
    return "\n".join(lines)


def scene_graph(world: World, visible_ids: list[str]) -> list[tuple[str, str, str]]:
    """Relation triples ``(subject, relation, object)`` among the visible (and held) objects.

    Relations: ``in`` / ``on`` (object to its receptacle), ``near`` (small objects within
    0.5 m, both directions), ``holds`` (``agent`` to the held object), ``left_of`` / ``right_of``
    (each object and its nearest neighbour more than 0.15 m to its right in the agent's view).
    """
    objs = [_get(world, oid) for oid in visible_ids]
    triples: list[tuple[str, str, str]] = []
    if world.held is not None:
        triples.append(("agent", "holds", _get(world, world.held).object_id))
    for obj in objs:
        rel = relation_to_parent(world, obj)
        if rel is not None:
            triples.append((obj.object_id, rel[0], rel[1]))
    small = [o for o in objs if o.type.kind in ("small", "sliced") and o.object_id != world.held]
    for n, a in enumerate(small):
        for b in small[n + 1:]:
            if math.dist(a.position, b.position) <= NEAR_DISTANCE:
                triples += [(a.object_id, "near", b.object_id), (b.object_id, "near", a.object_id)]
    side = sorted((to_camera(world.agent, o.position)[0], o.object_id) for o in objs if o.object_id != world.held)
    for n, (xa, a) in enumerate(side):  # each object to its nearest clearly-right neighbour
        b = next((b for xb, b in side[n + 1:] if xb - xa > _SIDE_GAP), None)
        if b is not None:
            triples += [(a, "left_of", b), (b, "right_of", a)]
    return triples


def scene_graph_text(triples: list[tuple[str, str, str]]) -> str:
    """Compact prompt text, e.g. ``"Mug_1 in Fridge_1; agent holds Knife_1"`` ("" if empty)."""
    return "; ".join(f"{s} {r} {o}" for s, r, o in triples)


def object_state_dict(world: World, ids: list[str]) -> dict[str, dict]:
    """Compact attribute dicts (abstracted state for ICAL prompts), only the keys that apply.

    Keys: ``label`` (type), ``parent``, ``holding``, and where the type allows them ``open``,
    ``toggled``, ``dirty``, ``cooked``, ``sliced``, ``filled`` + ``liquid``, ``boiled``,
    ``broken``.
    """
    out: dict[str, dict] = {}
    for oid in ids:
        obj = _get(world, oid)
        t = obj.type
        d: dict = {"label": obj.object_type, "parent": obj.parent, "holding": world.held == oid}
        if t.openable:
            d["open"] = obj.is_open
        if t.toggleable:
            d["toggled"] = obj.is_toggled
        if t.dirtyable:
            d["dirty"] = obj.is_dirty
        if t.cookable:
            d["cooked"] = obj.is_cooked
        if t.sliceable or t.kind == "sliced":
            d["sliced"] = obj.is_sliced or t.kind == "sliced"
        if t.can_fill:
            d["filled"] = obj.is_filled
            d["liquid"] = obj.fill_liquid if obj.is_filled else None
        if obj.is_boiled:
            d["boiled"] = True
        if obj.is_broken:
            d["broken"] = True
        out[oid] = d
    return out
