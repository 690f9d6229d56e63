"""Registry of task types: definition, rooms, parameter choices valid for our catalog, the
objects a scene must contain and the initial-state edits that make the task non-trivial.

Each task type names its parameters in a friendly way (``X``, ``Y``, ``N`` ...); ``order`` maps
them onto the TEACh-format definition's positional ``#0``, ``#1`` ... parameters.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from icalkit.envs.household.catalog import OBJECT_TYPES, SUPERCLASSES
from icalkit.envs.household.receptacles import APPLIANCES, CLOSED_BLOCKS, can_hold

Choices = Callable[[str, Mapping[str, str]], tuple[str, ...]]
Setup = Callable[[Mapping[str, str], str, random.Random], tuple[dict[str, int], list[dict]]]


class TaskSpecError(ValueError):
    """Unknown task type or invalid parameters for one."""


@dataclass(frozen=True)
class Param:
    """A task parameter chosen from ``choices(room, params chosen so far)``."""

    name: str
    choices: Choices


@dataclass(frozen=True)
class TaskType:
    """One task type of the benchmark."""

    name: str
    definition: str
    family: str  # "teach" (TfD) | "alfred"
    rooms: tuple[str, ...]
    params: tuple[Param, ...]
    order: tuple[str, ...]  # friendly names in the definition's positional order
    setup: Setup
    derive: Callable[[Mapping[str, str]], dict[str, str]] = lambda p: {}

    def positional(self, friendly: Mapping[str, str]) -> dict[str, str]:
        """Friendly params -> the ``{"#0": ..}`` dict the goal checker takes."""
        return {f"#{k}": str(friendly[name]) for k, name in enumerate(self.order)}

    def friendly(self, positional: Mapping[str, str]) -> dict[str, str]:
        """Inverse of :meth:`positional`."""
        return {name: positional[f"#{k}"] for k, name in enumerate(self.order)}


# ----------------------------------------------------------------------------- catalog views

SLICEABLE = ("Apple", "Bread", "Tomato", "Lettuce", "Potato")
COOKABLE_WHOLE = ("Apple", "Tomato", "Potato", "Bread", "Egg")
DIRTYABLE_KITCHEN = ("Mug", "Cup", "Bowl", "Plate", "Pot", "Pan")
LAMPS = ("FloorLamp", "DeskLamp")
_NOT_TARGETS = APPLIANCES | {"GarbageCan", "SinkBasin", "TowelHolder", "Toilet"}
SMALL_RECEPTACLES = ("Plate", "Bowl", "Pot", "Pan", "Box")
IN_ONE = {"kitchen": ("Plate", "Cabinet", "Shelf"), "living_room": ("Box", "SideTable", "Shelf"),
          "bedroom": ("SideTable", "Shelf"), "bathroom": ("Cabinet",)}
_IN_PREP = CLOSED_BLOCKS | {"Bowl", "Pot", "Pan", "Bathtub", "SinkBasin", "GarbageCan", "Fridge"}


def prep_for(receptacle: str) -> str:
    """"in" or "on", as a person would say it for this receptacle."""
    return "in" if receptacle in _IN_PREP else "on"


def room_smalls(room: str) -> tuple[str, ...]:
    """Pickupable small object types that scenes of this room contain."""
    return tuple(n for n, t in OBJECT_TYPES.items() if t.kind == "small" and t.pickupable and room in t.rooms)


def targets(room: str, obj: str, min_capacity: int = 1, small: bool = False) -> tuple[str, ...]:
    """Receptacle types of the room that can take ``obj`` (furniture; small ones too if asked)."""
    out = []
    for n, t in OBJECT_TYPES.items():
        if not t.receptacle or n in _NOT_TARGETS or n == obj or room not in t.rooms:
            continue
        if t.kind == "small" and not small:
            continue
        if t.capacity >= min_capacity and can_hold(n, obj):
            out.append(n)
    return tuple(out)


def away_from(room: str, obj: str, avoid: tuple[str, ...]) -> str:
    """The roomiest open furniture surface of the room that takes ``obj`` and is not in ``avoid``."""
    cands = [n for n in targets(room, obj) if n not in avoid and n not in CLOSED_BLOCKS]
    return max(cands, key=lambda n: (OBJECT_TYPES[n].capacity, n))


def class_members(x: str) -> tuple[str, ...]:
    """Object types meant by a type or superclass name."""
    return SUPERCLASSES.get(x, (x,))


def fixed(*values: str) -> Choices:
    return lambda room, chosen: values


# ----------------------------------------------------------------------------- setups


def _needs(*items: tuple[str, int]) -> dict[str, int]:
    out: dict[str, int] = {}
    for name, n in items:
        out[name] = max(out.get(name, 0), n)
    return out


def _maybe_dirty(obj: str, rng: random.Random) -> list[dict]:
    return [{"type": obj, "set": {"is_dirty": rng.random() < 0.5}, "count": "all"}]


def _move_away(room: str, obj: str, avoid: tuple[str, ...], count: int | str = "all"
               ) -> tuple[dict[str, int], list[dict]]:
    other = away_from(room, obj, avoid)
    return {other: 1}, [{"type": obj, "count": count, "into": other}]


def _setup_coffee(p, room, rng):
    return _needs(("Mug", 1), ("CoffeeMachine", 1), ("SinkBasin", 1)), _maybe_dirty("Mug", rng)


def _setup_water(p, room, rng):
    container = rng.choice(("Cup", "Mug", "Bowl", "Pot", "Kettle") if room == "kitchen" else ("Bottle",))
    return (_needs(("HousePlant", 1), ("SinkBasin", 1), (container, 1)),
            [{"type": "HousePlant", "set": {"is_filled": False, "fill_liquid": None}, "count": "all"}])


def _setup_boil(p, room, rng):
    return _needs((p["X"], 1), ("Pot", 1), ("StoveBurner", 1), ("SinkBasin", 1)), []


def _setup_toast(p, room, rng):
    need = _needs(("Bread", 1), ("Knife", 1), ("Toaster", 1), ("Plate", 1), ("SinkBasin", 1))
    return need, _maybe_dirty("Plate", rng)


def _setup_clean_all(p, room, rng):
    members = [m for m in class_members(p["X"]) if OBJECT_TYPES[m].dirtyable]
    need = _needs(("SinkBasin", 1), *[(m, 2 if len(members) == 1 else 1) for m in members])
    return need, [{"type": m, "set": {"is_dirty": True}, "count": "all"} for m in members]


def _setup_slices(p, room, rng, cooked: bool = False):
    need = _needs((p["X"], 1), ("Knife", 1), (p["Y"], 1), ("SinkBasin", 1))
    if cooked:
        need.update(_needs(("Microwave", 1), ("Pan", 1), ("StoveBurner", 1)))
    return need, _maybe_dirty(p["Y"], rng)


def _setup_put_all(p, room, rng):
    need, edits = _move_away(room, p["X"], (p["Y"],), count=1)
    return {**need, p["X"]: 2, p["Y"]: 2 if p["Y"] in IN_ONE[room] else 1}, edits


def _setup_salad(p, room, rng):
    need = _needs(("Knife", 1), ("Plate", 1), ("SinkBasin", 1))
    for food, key in (("Lettuce", "lettuce"), ("Tomato", "tomato"), ("Potato", "potato")):
        if p[key] != "0":
            need[food] = 1
    if p["potato"] != "0":
        need["Microwave"] = 1
    return need, _maybe_dirty("Plate", rng)


def _setup_sandwich(p, room, rng):
    need = _needs(("Bread", 1), ("Knife", 1), ("Toaster", 1), ("Plate", 1), ("SinkBasin", 1))
    for food, key in (("Lettuce", "lettuce"), ("Tomato", "tomato")):
        if p[key] != "0":
            need[food] = 1
    return need, _maybe_dirty("Plate", rng)


def _setup_breakfast(p, room, rng):
    items = BREAKFAST_MENUS[p["menu"]]
    need = _needs(("SinkBasin", 1), ("Knife", 1), (p["serve"], 1))
    plates = 0
    for item in items:
        if item == "coffee":
            need.update(_needs(("Mug", 1), ("CoffeeMachine", 1)))
        elif item in ("toast", "sandwich"):
            need.update(_needs(("Bread", 1), ("Toaster", 1)))
        if item == "sandwich":
            need.update(_needs(("Lettuce", 1), ("Tomato", 1)))
        if item == "salad":
            need.update(_needs(("Lettuce", 1), ("Tomato", 1)))
        if item == "potatoes":
            need.update(_needs(("Potato", 1), ("Microwave", 1)))
        if item == "apple":
            need["Apple"] = 1
        plates += item != "coffee"
    if plates:
        need["Plate"] = plates
    return need, [{"type": "Mug", "set": {"is_dirty": rng.random() < 0.5}, "count": "all"}]


def _setup_pick(p, room, rng, extra: tuple[tuple[str, int], ...] = (), n: int = 1, edits=()):
    need = _needs((p["X"], n), (p["Y"], 1), *extra)
    move_need, move = _move_away(room, p["X"], (p["Y"],))
    return {**move_need, **need}, [*move, *edits]


def _setup_look(p, room, rng):
    need = _needs((p["X"], 1), (p["lamp"], 1))
    if p["lamp"] == "DeskLamp":
        need["Desk"] = 1
    return need, [{"type": p["lamp"], "set": {"is_toggled": False}, "count": "all"}]


def _setup_movable(p, room, rng):
    need = _needs((p["X"], 1), (p["M"], 1), (p["Y"], 1))
    move_need, move = _move_away(room, p["X"], (p["Y"], p["M"]))
    return {**move_need, **need}, move


# ----------------------------------------------------------------------------- the registry

BREAKFAST_MENUS: dict[str, tuple[str, ...]] = {
    "coffee+toast": ("coffee", "toast"), "coffee+sandwich": ("coffee", "sandwich"),
    "coffee+apple": ("coffee", "apple"), "toast+apple": ("toast", "apple"),
    "coffee+salad": ("coffee", "salad"), "coffee+potatoes": ("coffee", "potatoes"),
    "coffee+toast+apple": ("coffee", "toast", "apple"),
}
SALADS = ("1-1-0", "1-0-1", "0-1-1", "1-1-1", "2-1-0", "1-2-0")
SANDWICHES = ("1-0", "0-1", "1-1", "2-1", "1-2")
_KITCHEN, _ALL_ROOMS = ("kitchen",), ("kitchen", "living_room", "bedroom", "bathroom")


def _breakfast_params(p: Mapping[str, str]) -> dict[str, str]:
    items = BREAKFAST_MENUS[p["menu"]]
    has = {k: "1" if k in items else "0" for k in ("coffee", "toast", "potatoes", "apple", "sandwich", "salad")}
    return {"n_coffee": has["coffee"], "n_toast": has["toast"], "n_potatoes": has["potatoes"],
            "potato_dish": "Plate", "n_apple": has["apple"], "apple_dish": "Plate",
            "n_sandwich": has["sandwich"], "sandwich_lettuce": "1", "sandwich_tomato": "1",
            "n_salad": has["salad"], "salad_lettuce": "1", "salad_tomato": "1", "salad_potato": "0"}


def _counts(names: tuple[str, ...], key: str) -> Callable[[Mapping[str, str]], dict[str, str]]:
    return lambda p: dict(zip(names, p[key].split("-"), strict=True))


def _slice_y(room: str, c: Mapping[str, str]) -> tuple[str, ...]:
    return tuple(y for y in ("Plate", "Bowl") if OBJECT_TYPES[y].capacity >= int(c["N"]))


_PLACE_X = Param("X", lambda room, c: room_smalls(room))
_PLACE_Y = Param("Y", lambda room, c: targets(room, c["X"], small=True))
_PUT_ALL = (Param("X", lambda room, c: tuple(x for x in room_smalls(room) if targets(room, x, 4))),
            Param("Y", lambda room, c: targets(room, c["X"], 4)))

TASK_TYPES: dict[str, TaskType] = {t.name: t for t in [
    TaskType("Coffee", "Coffee", "teach", _KITCHEN, (), (), _setup_coffee),
    TaskType("Water Plant", "Water Plant", "teach", ("kitchen", "bathroom"), (), (), _setup_water),
    TaskType("Boil X", "Boil X", "teach", _KITCHEN, (Param("X", fixed("Potato", "Egg")),), ("X",), _setup_boil),
    TaskType("Plate Of Toast", "Plate Of Toast", "teach", _KITCHEN, (), (), _setup_toast),
    TaskType("Clean All X", "Clean All X", "teach", _KITCHEN,
             (Param("X", fixed(*DIRTYABLE_KITCHEN, "Dishware", "Drinkware", "Cookware")),), ("X",),
             _setup_clean_all),
    TaskType("N Slices Of X In Y", "N Slices Of X In Y", "teach", _KITCHEN,
             (Param("X", fixed(*SLICEABLE)), Param("N", fixed("1", "2", "3")), Param("Y", _slice_y)),
             ("N", "X", "prep", "Y"), _setup_slices, lambda p: {"prep": prep_for(p["Y"])}),
    TaskType("N Cooked Slices Of X In Y", "N Cooked Slices Of X In Y", "teach", _KITCHEN,
             (Param("X", fixed("Potato", "Apple", "Tomato")), Param("N", fixed("1", "2")),
              Param("Y", fixed("Plate", "Bowl"))),
             ("N", "X", "prep", "Y"), lambda p, r, g: _setup_slices(p, r, g, cooked=True),
             lambda p: {"prep": prep_for(p["Y"])}),
    TaskType("Put All X On Y", "Put All X On Y", "teach", _ALL_ROOMS, _PUT_ALL, ("X", "prep", "Y"),
             _setup_put_all, lambda p: {"prep": prep_for(p["Y"])}),
    TaskType("Put All X In One Y", "Put All X In One Y", "teach", _ALL_ROOMS,
             (Param("Y", lambda room, c: IN_ONE[room]),
              Param("X", lambda room, c: tuple(x for x in room_smalls(room)
                                                if can_hold(c["Y"], x) and x != c["Y"]))),
             ("X", "prep", "Y"), _setup_put_all, lambda p: {"prep": prep_for(p["Y"])}),
    TaskType("Salad", "Salad", "teach", _KITCHEN, (Param("recipe", fixed(*SALADS)),),
             ("lettuce", "tomato", "potato"), _setup_salad, _counts(("lettuce", "tomato", "potato"), "recipe")),
    TaskType("Sandwich", "Sandwich", "teach", _KITCHEN, (Param("fillings", fixed(*SANDWICHES)),),
             ("lettuce", "tomato"), _setup_sandwich, _counts(("lettuce", "tomato"), "fillings")),
    TaskType("Breakfast", "Breakfast", "teach", _KITCHEN,
             (Param("menu", fixed(*BREAKFAST_MENUS)), Param("serve", fixed("CounterTop", "DiningTable"))),
             ("n_coffee", "n_toast", "n_potatoes", "potato_dish", "n_apple", "apple_dish", "n_sandwich",
              "sandwich_lettuce", "sandwich_tomato", "n_salad", "salad_lettuce", "salad_tomato",
              "salad_potato", "serve"), _setup_breakfast, _breakfast_params),
    TaskType("pick_and_place", "pick_and_place", "alfred", _ALL_ROOMS, (_PLACE_X, _PLACE_Y), ("X", "Y"),
             _setup_pick),
    TaskType("pick_two_and_place", "pick_two_and_place", "alfred", _ALL_ROOMS,
             (_PLACE_X, Param("Y", lambda room, c: targets(room, c["X"], 3, small=True))), ("X", "Y"),
             lambda p, r, g: _setup_pick(p, r, g, n=2)),
    TaskType("look_at_obj_in_light", "look_at_obj_in_light", "alfred", ("living_room", "bedroom"),
             (Param("X", lambda room, c: room_smalls(room)), Param("lamp", fixed(*LAMPS))), ("X", "lamp"),
             _setup_look),
    TaskType("pick_clean_then_place", "pick_clean_then_place", "alfred", ("kitchen", "bathroom"),
             (Param("X", lambda room, c: DIRTYABLE_KITCHEN if room == "kitchen" else ("Cloth",)), _PLACE_Y),
             ("X", "Y"), lambda p, r, g: _setup_pick(
                 p, r, g, (("SinkBasin", 1),), edits=({"type": p["X"], "set": {"is_dirty": True}, "count": "all"},))),
    TaskType("pick_heat_then_place", "pick_heat_then_place", "alfred", _KITCHEN,
             (Param("X", fixed(*COOKABLE_WHOLE)), _PLACE_Y), ("X", "Y"),
             lambda p, r, g: _setup_pick(p, r, g, (("Microwave", 1),))),
    TaskType("pick_cool_then_place", "pick_cool_then_place", "alfred", _KITCHEN,
             (Param("X", fixed(*COOKABLE_WHOLE, "Lettuce", "Mug", "Cup", "Bowl", "Plate", "WineBottle")),
              Param("Y", lambda room, c: tuple(y for y in targets(room, c["X"], small=True) if y != "Fridge"))),
             ("X", "Y"), lambda p, r, g: _setup_pick(p, r, g, (("Fridge", 1),))),
    TaskType("pick_and_place_with_movable_recep", "pick_and_place_with_movable_recep", "alfred",
             ("kitchen", "living_room"),
             (Param("M", lambda room, c: ("Bowl", "Plate", "Pot", "Pan") if room == "kitchen" else ("Box",)),
              Param("X", lambda room, c: tuple(x for x in room_smalls(room) if can_hold(c["M"], x))),
              Param("Y", lambda room, c: targets(room, c["M"]))),
             ("X", "M", "Y"), _setup_movable),
]}


def get_task_type(name: str) -> TaskType:
    """Look up a task type; the error lists the available ones."""
    try:
        return TASK_TYPES[name]
    except KeyError:
        raise TaskSpecError(f"unknown task type {name!r}; available: {sorted(TASK_TYPES)}") from None


def choose_params(task_type: TaskType, room: str, rng: random.Random,
                  given: Mapping[str, str] | None = None) -> dict[str, str]:
    """Pick (or, with ``given``, validate) friendly params, then add the derived ones.

    Raises:
        TaskSpecError: naming the parameter and its allowed values, or an unknown parameter.
    """
    if room not in task_type.rooms:
        raise TaskSpecError(f"task type {task_type.name!r} cannot happen in a {room!r}; "
                            f"rooms: {task_type.rooms}")
    names = [p.name for p in task_type.params]
    if given is not None:
        unknown = sorted(set(given) - set(names))
        if unknown:
            raise TaskSpecError(f"task type {task_type.name!r} has no parameter(s) {unknown}; "
                                f"its parameters are {names}")
    chosen: dict[str, str] = {}
    for p in task_type.params:
        allowed = p.choices(room, chosen)
        if given is None:
            chosen[p.name] = rng.choice(allowed)
            continue
        if p.name not in given:
            raise TaskSpecError(f"task type {task_type.name!r}: parameter {p.name!r} is missing; "
                                f"allowed values: {list(allowed)}")
        value = str(given[p.name])
        if value not in allowed:
            raise TaskSpecError(f"task type {task_type.name!r}: parameter {p.name}={value!r} is not "
                                f"allowed in a {room}; allowed values: {list(allowed)}")
        chosen[p.name] = value
    return {**chosen, **task_type.derive(chosen)}


TFD_TYPES = ("Coffee", "Water Plant", "Boil X", "Plate Of Toast", "Clean All X", "N Slices Of X In Y",
             "N Cooked Slices Of X In Y", "Put All X On Y", "Put All X In One Y", "Salad", "Sandwich",
             "Breakfast")
"""The 12 TEACh Task-from-Dialogue (TfD) task types, in TEACh's order."""
