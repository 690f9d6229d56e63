"""The TEACh primitive actions: preconditions (with messages a person would write) and effects.

Every function checks all its preconditions before it changes anything, so a failed action
(an :class:`ActionError`) leaves the world exactly as it was. Visibility and distance are checked
by the simulator before :func:`interact` is called.

Slicing removes the sliced object and creates its ``XSliced`` pieces (``TomatoSliced_3``, with
``sliced_from`` naming the removed parent) in the parent's receptacle, as TEACh does; pieces
inherit the parent's cooked/boiled state and are not counted against the receptacle's capacity.
"""

from __future__ import annotations

from icalkit.envs.household.catalog import KNIVES, SLICE_PRODUCTS
from icalkit.envs.household.receptacles import ALLOWED, CLOSED_BLOCKS, can_hold, move_into
from icalkit.envs.household.state import PITCHES, SimObject, World

ACTIONS: tuple[str, ...] = (
    "Forward", "Backward", "Turn Left", "Turn Right", "Look Up", "Look Down", "Pan Left", "Pan Right",
    "Pickup", "Place", "Open", "Close", "ToggleOn", "ToggleOff", "Slice", "Pour", "Stop",
)
MOVES = frozenset(ACTIONS[:8])
INTERACTIONS = frozenset(ACTIONS[8:16])
# where liquid may be poured without filling anything
DRAINS = frozenset(("SinkBasin", "Bathtub", "GarbageCan", "Toilet"))
_ALIASES = {a.lower().replace(" ", "").replace("_", ""): a for a in ACTIONS}
_ALIASES.update({"moveahead": "Forward", "moveback": "Backward", "rotateleft": "Turn Left",
                 "rotateright": "Turn Right", "lookup": "Look Up", "lookdown": "Look Down",
                 "pickupobject": "Pickup", "putobject": "Place", "openobject": "Open",
                 "closeobject": "Close", "toggleobjecton": "ToggleOn", "toggleobjectoff": "ToggleOff",
                 "sliceobject": "Slice", "pourobject": "Pour"})
_DIRS = {0: (0, 1), 90: (1, 0), 180: (0, -1), 270: (-1, 0)}


class ActionError(Exception):
    """An action's precondition failed; the message is meant for the agent."""


def canonical_action(name: object) -> str:
    """Canonical action name for ``name`` (case, spaces, underscores and AI2-THOR names accepted)."""
    if isinstance(name, str):
        found = _ALIASES.get(name.lower().replace(" ", "").replace("_", ""))
        if found:
            return found
    raise ActionError(f"Unknown action {name!r}; expected one of {', '.join(ACTIONS)}.")


def move(world: World, action: str) -> None:
    """Apply a navigation action (Forward ... Pan Right) to the agent pose."""
    a = world.agent
    if action in ("Turn Left", "Turn Right"):
        a.yaw = (a.yaw + (90 if action == "Turn Right" else -90)) % 360
        return
    if action in ("Look Up", "Look Down"):
        pitch = a.pitch + (30 if action == "Look Down" else -30)
        if pitch not in PITCHES:
            raise ActionError(f"You cannot look any further {'down' if action == 'Look Down' else 'up'}.")
        a.pitch = pitch
        return
    yaw = {"Forward": a.yaw, "Backward": a.yaw + 180, "Pan Left": a.yaw - 90, "Pan Right": a.yaw + 90}[action]
    di, dj = _DIRS[yaw % 360]
    i, j = a.i + di, a.j + dj
    if not (0 <= i < world.n_i and 0 <= j < world.n_j) or world.blocked[i, j]:
        direction = {"Forward": "ahead", "Backward": "behind you", "Pan Left": "to your left",
                     "Pan Right": "to your right"}[action]
        raise ActionError(f"Something blocks the way {direction}.")
    a.i, a.j = i, j


def precheck(world: World, action: str, obj: SimObject) -> None:
    """Preconditions that do not depend on where the agent stands (checked before visibility)."""
    t, name = obj.type, obj.object_type
    held = world.objects[world.held] if world.held else None
    if action == "Pickup":
        if held is not None:
            if held is obj:
                raise ActionError(f"You are already holding the {name}.")
            raise ActionError(f"You are already holding the {held.object_type}; put it down before "
                              f"picking up the {name}.")
        if not t.pickupable:
            raise ActionError(f"The {name} cannot be picked up.")
    elif action == "Place":
        if held is None:
            raise ActionError(f"You are not holding anything to place on the {name}.")
        if held is obj:
            raise ActionError(f"You cannot place the {name} in itself.")
        if not t.receptacle:
            raise ActionError(f"You cannot put things in or on the {name}.")
        if not can_hold(name, held.object_type):
            only = ", ".join(sorted(ALLOWED.get(name, ())))
            raise ActionError(f"The {name} cannot hold the {held.object_type}" + (f" (only {only})." if only else "."))
    elif action in ("Open", "Close"):
        if not t.openable:
            raise ActionError(f"The {name} cannot be opened or closed.")
    elif action in ("ToggleOn", "ToggleOff"):
        if not t.toggleable:
            raise ActionError(f"The {name} cannot be turned on or off.")
    elif action == "Slice":
        if held is None or held.object_type not in KNIVES:
            raise ActionError(f"You need to hold a knife to slice the {name}.")
        if not t.sliceable:
            raise ActionError(f"The {name} cannot be sliced.")
    elif action == "Pour":
        if held is None:
            raise ActionError(f"You are not holding anything to pour into the {name}.")
        if not held.is_filled:
            raise ActionError(f"The {held.object_type} is empty; there is nothing to pour.")
        if held is obj:
            raise ActionError(f"You cannot pour the {name} into itself.")
        if not (t.can_fill or name in DRAINS):
            raise ActionError(f"You cannot pour anything into the {name}.")


def interact(world: World, action: str, obj: SimObject) -> None:
    """Check the state-dependent preconditions of an interaction, then apply it."""
    name = obj.object_type
    if action == "Pickup":
        if obj.parent:
            world.objects[obj.parent].children.remove(obj.object_id)
        obj.parent = None
        obj.is_picked_up = True
        world.held = obj.object_id
    elif action == "Place":
        _place(world, obj)
    elif action in ("Open", "Close"):
        want = action == "Open"
        if obj.is_open == want:
            raise ActionError(f"The {name} is already {'open' if want else 'closed'}.")
        obj.is_open = want
        if want and name == "Microwave":
            obj.is_toggled = False  # opening a running microwave stops it
    elif action in ("ToggleOn", "ToggleOff"):
        want = action == "ToggleOn"
        if obj.is_toggled == want:
            raise ActionError(f"The {name} is already {'on' if want else 'off'}.")
        if want and name == "Microwave" and obj.is_open:
            raise ActionError("The Microwave is open; close it before turning it on.")
        obj.is_toggled = want
    elif action == "Slice":
        if obj.is_sliced:
            raise ActionError(f"The {name} is already sliced.")
        _slice(world, obj)
    elif action == "Pour":
        _pour(world, obj)


def _place(world: World, target: SimObject) -> None:
    held = world.objects[world.held]
    name = target.object_type
    if name in CLOSED_BLOCKS and not target.is_open:
        raise ActionError(f"The {name} is closed; open it before placing the {held.object_type} inside.")
    if len(target.children) >= target.type.capacity:
        raise ActionError(f"The {name} is full right now.")
    move_into(world, held, target)
    held.is_picked_up = False
    world.held = None


def _slice(world: World, obj: SimObject) -> None:
    piece_type, n = SLICE_PRODUCTS[obj.object_type]
    parent = world.objects[obj.parent] if obj.parent else None
    if parent is not None:
        parent.children.remove(obj.object_id)
    del world.objects[obj.object_id]
    x, y, z = obj.position
    for k in range(n):
        pid = world.new_id(piece_type)
        piece = SimObject(pid, piece_type, (round(x + (k - (n - 1) / 2) * 0.03, 4), y, z),
                          parent=parent.object_id if parent else None, sliced_from=obj.object_id,
                          is_cooked=obj.is_cooked, is_boiled=obj.is_boiled)
        world.objects[pid] = piece
        if parent is not None:
            parent.children.append(pid)


def _pour(world: World, target: SimObject) -> None:
    held = world.objects[world.held]
    if target.type.can_fill:
        if target.is_filled and target.object_type != "HousePlant":
            raise ActionError(f"The {target.object_type} is already full.")
        target.is_filled, target.fill_liquid = True, held.fill_liquid
    held.is_filled, held.fill_liquid = False, None
