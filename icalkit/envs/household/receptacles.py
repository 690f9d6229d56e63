"""What fits in which receptacle, and where a placed object ends up inside it.

Shared by scene generation (initial placements) and the Place action, so that a scene never
contains a placement the agent could not have made itself.
"""

from __future__ import annotations

from icalkit.envs.household.catalog import OBJECT_TYPES, SUPERCLASSES
from icalkit.envs.household.state import GRID, SimObject, World

_FOOD = frozenset(SUPERCLASSES["Food"])
_DRINKWARE = frozenset(("Mug", "Cup"))
_UTENSILS = frozenset(SUPERCLASSES["KitchenUtensils"])
_HANDHELD = frozenset(SUPERCLASSES["SmallHandheldObjects"])

# Receptacle types that accept only some object types; any other receptacle takes any small
# (pickupable) object.
ALLOWED: dict[str, frozenset[str]] = {
    "Toaster": frozenset(("BreadSliced",)),
    "CoffeeMachine": _DRINKWARE,
    "StoveBurner": frozenset(("Pot", "Pan", "Kettle")),
    "Microwave": _FOOD | _DRINKWARE | frozenset(("Bowl", "Plate")),
    "TowelHolder": frozenset(("Towel", "HandTowel")),
    "Plate": _FOOD | _UTENSILS,
    "Bowl": _FOOD | _UTENSILS,
    "Pot": _FOOD | frozenset(("Ladle", "Spoon")),
    "Pan": _FOOD | frozenset(("Spatula",)),
    "Box": _HANDHELD | frozenset(("Vase", "Statue", "Candle")),
}

# Openable receptacles: closed, they hide their contents and refuse placing (as the renderer
# hides the contents of anything openable and closed).
CLOSED_BLOCKS = frozenset(n for n, t in OBJECT_TYPES.items() if t.openable and t.receptacle)

# Receptacles that never hold objects when a scene starts (the agent fills them).
APPLIANCES = frozenset(("Toaster", "CoffeeMachine", "Microwave", "StoveBurner", "Toilet"))

# Interior shelf heights (m) for tall closed furniture.
_SHELVES = {"Fridge": (0.35, 0.75, 1.15, 1.5)}


def can_hold(receptacle_type: str, object_type: str) -> bool:
    """Whether an object of ``object_type`` may be placed in/on ``receptacle_type``."""
    rt = OBJECT_TYPES[receptacle_type]
    if not rt.receptacle or not OBJECT_TYPES[object_type].pickupable:
        return False
    allowed = ALLOWED.get(receptacle_type)
    return allowed is None or object_type in allowed


def along_axis(facing: int) -> tuple[float, float]:
    """Unit (dx, dz) along the front edge of a piece that faces ``facing`` degrees."""
    return (1.0, 0.0) if facing in (0, 180) else (0.0, 1.0)


def footprint_width(obj: SimObject) -> float:
    """Width (m) of a furniture footprint along its front edge (0.3 for small receptacles)."""
    if not obj.cells:
        return 0.3
    ax = along_axis(obj.facing)
    idx = 0 if ax[0] else 1
    vals = {c[idx] for c in obj.cells}
    return len(vals) * GRID


def slot_position(world: World, parent: SimObject, slot: int, child_type: str) -> tuple[float, float, float]:
    """World position of slot ``slot`` inside/on ``parent`` for a child of ``child_type``."""
    pt = parent.type
    cap = max(pt.capacity, 1)
    width = footprint_width(parent) * 0.8
    frac = ((slot % cap) + 0.5) / cap - 0.5
    ax, az = along_axis(parent.facing)
    x, y, z = parent.position
    child_h = OBJECT_TYPES[child_type].size[1]
    shelves = _SHELVES.get(parent.object_type)
    if shelves:
        base = shelves[slot % len(shelves)]
    elif parent.cells:
        base = pt.height
    else:  # small receptacle (plate, pot): sit on top of it
        base = y + pt.size[1] / 2
        width = pt.size[0] * 0.6
    return (round(x + ax * frac * width, 4), round(base + child_h / 2, 4), round(z + az * frac * width, 4))


def free_slot(world: World, parent: SimObject, child_type: str) -> tuple[float, float, float]:
    """Position of the first slot of ``parent`` not taken by one of its children."""
    taken = {world.objects[c].position[::2] for c in parent.children if c in world.objects}
    cap = max(parent.type.capacity, 1)
    for k in range(cap):
        pos = slot_position(world, parent, k, child_type)
        if pos[::2] not in taken:
            return pos
    return slot_position(world, parent, len(parent.children), child_type)


def move_into(world: World, obj: SimObject, parent: SimObject) -> None:
    """Put ``obj`` in/on ``parent``: link both ways and move ``obj`` (and its contents)."""
    new_pos = free_slot(world, parent, obj.object_type)
    shift_tree(world, obj, new_pos)
    obj.parent = parent.object_id
    parent.children.append(obj.object_id)


def shift_tree(world: World, obj: SimObject, new_pos: tuple[float, float, float]) -> None:
    """Move ``obj`` to ``new_pos`` and its contents by the same offset."""
    dx, dy, dz = (new_pos[k] - obj.position[k] for k in range(3))
    obj.position = new_pos
    for cid in obj.children:
        child = world.objects[cid]
        cx, cy, cz = child.position
        shift_tree(world, child, (cx + dx, cy + dy, cz + dz))
