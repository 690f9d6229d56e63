"""The ICAL/HELPER household action API that generated programs are written against.

``InteractionObject`` names an object by class (``"Mug"``); the instance is resolved lazily on
first use: an explicit ``object_instance`` id, else the best matching instance (visible first, then
seen, not yet used by another variable, nearest). ``parent_object`` picks the slices of a sliced
parent. Each method compiles to simulator primitives through :class:`ApiRuntime`; interactions
walk to the object first when it is out of reach.
"""

from __future__ import annotations

import difflib
import re
from typing import Any, ClassVar

from icalkit.agents.api.runtime import ActionFailed, ApiRuntime, ApiUsageError
from icalkit.envs.household.catalog import KNIVES, OBJECT_TYPES, SLICE_PRODUCTS
from icalkit.envs.household.receptacles import CLOSED_BLOCKS, can_hold
from icalkit.envs.household.state import SimObject

# attribute name the model uses -> SimObject field
ATTRIBUTES: dict[str, str] = {
    "holding": "",  # computed: the agent holds the object
    "sliced": "is_sliced",
    "toasted": "is_cooked",
    "dirty": "is_dirty",
    "cooked": "is_cooked",
    "filled": "is_filled",
    "fillLiquid": "fill_liquid",
    "toggled": "is_toggled",
    "open": "is_open",
}
NOT_FOUND = "No {} has been found."  # the failure of naming a class the agent cannot find


def classes_not_found(feedback: str) -> set[str]:
    """The object classes a failure message (:data:`NOT_FOUND`) says the agent could not find."""
    return set(re.findall(re.escape(NOT_FOUND).replace(re.escape("{}"), "([A-Z][A-Za-z]*)"), feedback))


CLASS_ALIASES = {"Sink": "SinkBasin", "BathtubBasin": "Bathtub"}  # AI2-THOR names -> catalog names
USED_NOT_STORED = frozenset({"Toaster", "CoffeeMachine", "Microwave", "StoveBurner"})  # appliances one uses, where nothing is kept
PUT_AWAY = ("Cabinet", "Drawer")  # where the checks put an object away when every surface is full
PUT_DOWN_SURFACES = ("CounterTop", "CounterTopBath", "DiningTable", "CoffeeTable", "SideTable", "Desk", "Shelf",
                     "Dresser", "Sofa", "ArmChair", "Bed")


def canonical_class(name: Any) -> str:
    """Catalog type for a class name (aliases like ``Sink`` accepted); raises ApiUsageError."""
    if not isinstance(name, str):
        raise ApiUsageError(f"object_class must be a string like 'Mug', got {type(name).__name__}")
    name = CLASS_ALIASES.get(name, name)
    if name in OBJECT_TYPES:
        return name
    close = difflib.get_close_matches(name, list(OBJECT_TYPES), n=3)
    hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    raise ApiUsageError(f"There is no object class {name!r}{hint}")


class InteractionObject:
    """An object in the household that the agent can navigate to and interact with."""

    runtime: ClassVar[ApiRuntime]
    PUBLIC_ATTRIBUTES: ClassVar[frozenset[str]] = frozenset(
        {"object_class", "object_instance", "parent_object"})

    def __init__(self, object_class: str, object_instance: str | None = None,
                 parent_object: InteractionObject | str | None = None) -> None:
        """Name an object by class, optionally by instance id or sliced parent."""
        self.object_class = canonical_class(object_class)
        if object_instance is not None and not isinstance(object_instance, str):
            raise ApiUsageError(f"object_instance must be an id string like 'Mug_2', got "
                                f"{type(object_instance).__name__}")
        if parent_object is not None and not isinstance(parent_object, (InteractionObject, str)):
            raise ApiUsageError("parent_object must be an InteractionObject or an object id")
        self.object_instance = object_instance
        self.parent_object = parent_object
        self._named = object_instance is not None  # an instance the program chose (never re-chosen)

    def __repr__(self) -> str:
        return f"InteractionObject({self.object_class!r}, object_instance={self.object_instance!r})"

    # ------------------------------------------------------------------ resolution

    def _id(self) -> str:
        return self._resolve().object_id

    def _resolve(self, repair: bool = True) -> SimObject:
        """The object this names; with pre-condition checks (``repair``), a piece named before its
        object was sliced (``TomatoSliced``) slices that object first, as HELPER's executor does."""
        world = self.runtime.world
        if self.object_instance is not None:
            obj = world.objects.get(self.object_instance)
            if obj is None:
                self._raise_if_sliced()
                raise ActionFailed(f"The {self.object_class} ({self.object_instance}) no longer "
                                   f"exists or was never in this room.")
            return obj
        candidates = self.runtime.candidates(self.object_class)
        parent_id = self._parent_id() if self.parent_object is not None else None
        own = [o for o in candidates if o.sliced_from == parent_id] if parent_id else candidates
        if not own and repair and _slice_first(self.runtime, self.object_class, parent_id):
            return self._resolve(repair=False)
        if parent_id:
            candidates = own or [o for o in candidates if o.sliced_from]
        if not candidates and repair and self.object_class in KNIVES and self.runtime.config.precondition_checks:
            candidates = [k for kind in KNIVES for k in self.runtime.candidates(kind)]  # any knife cuts
        if not candidates:
            self._raise_if_sliced()
            raise ActionFailed(NOT_FOUND.format(self.object_class))
        obj = candidates[0]
        self.object_instance = obj.object_id
        self.runtime.claimed.add(obj.object_id)
        return obj

    def _sliced_into(self) -> list[SimObject]:
        """The pieces this names when it was already sliced away (its id is gone, or no whole object
        of its class is left): a re-plan that starts over names objects an earlier attempt sliced."""
        objs = self.runtime.world.objects
        if self.object_instance is not None:
            if self.object_instance in objs:
                return []
            return [o for o in objs.values() if o.sliced_from == self.object_instance]
        piece = SLICE_PRODUCTS.get(self.object_class, ("",))[0]
        if not piece or self.runtime.candidates(self.object_class):
            return []
        return [o for o in objs.values() if o.object_type == piece and o.sliced_from]

    def _raise_if_sliced(self) -> None:
        pieces = self._sliced_into()
        if pieces:
            whole = pieces[0].sliced_from
            raise ActionFailed(f"The {self.object_class} ({whole}) was already sliced into {len(pieces)} "
                               f"{pieces[0].object_type} pieces; name one with "
                               f'InteractionObject("{pieces[0].object_type}", parent_object="{whole}").')

    def _already_sliced(self) -> list[SimObject]:
        """With the checks, the pieces of an object already sliced (then naming it reaches its pieces
        and slicing it again is a no-op, as opening an open object is); [] otherwise."""
        if not self.runtime.config.precondition_checks:
            return []
        pieces = self._sliced_into()
        if pieces and self.object_instance is None:
            self.object_instance = pieces[0].sliced_from  # its pieces are then parent_object=this
        return pieces

    def _parent_id(self) -> str:
        parent = self.parent_object
        if isinstance(parent, str):
            return parent
        if parent.object_instance is None and (pieces := parent._sliced_into()):
            parent.object_instance = pieces[0].sliced_from  # a parent an earlier attempt sliced
        if parent.object_instance is not None:
            return parent.object_instance
        return parent._id()

    def _record(self, method: str, *args: Any) -> Any:
        return self.runtime.call(method, self, args)

    def _api_label(self) -> str:
        return self.object_instance or self.object_class

    # ------------------------------------------------------------------ actions

    def go_to(self) -> None:
        """Navigate to the object so that it is in view and within reach."""
        with self._record("go_to"):
            pieces = self._already_sliced()
            self.runtime.navigate_to(pieces[0] if pieces else self._resolve())

    def pickup(self) -> None:
        """Pick up the object (the agent's hand must be empty)."""
        with self._record("pickup"):
            obj, rt = self._resolve(), self.runtime
            if rt.config.precondition_checks:
                if rt.world.held == obj.object_id:
                    return
                _take(rt, obj)
                return
            rt.interact("Pickup", obj)

    def place(self, receptacle: InteractionObject) -> None:
        """Place the held object in or on the receptacle."""
        receptacle = _check_object(receptacle, "place")
        with self._record("place", receptacle):
            obj, rt = self._resolve(), self.runtime
            if rt.world.held != obj.object_id:
                if not rt.config.precondition_checks:
                    raise ActionFailed(f"You are not holding the {self.object_class}.")
                _take(rt, obj)  # e.g. the knife a check put down to pick up a slice
            try:
                target = receptacle._resolve()
            except ActionFailed:
                if not (rt.config.precondition_checks and _not_in_room(rt, receptacle)):
                    raise
                _put_down(rt, obj)  # a put-away spot this room lacks: put it down
                return
            if rt.config.precondition_checks:
                target = _with_room(rt, receptacle, target, obj)
                _open_container_of(rt, target)  # a plate in a closed cabinet
                _open_if_closed(rt, target)
                _make_room(rt, target, obj)  # a sink full of other dishes
            rt.interact("Place", target)

    def pickup_and_place(self, receptacle: InteractionObject) -> None:
        """Pick up the object (unless held) and place it in or on the receptacle."""
        receptacle = _check_object(receptacle, "pickup_and_place")
        with self._record("pickup_and_place", receptacle):
            if self.runtime.world.held != self._id():
                self.pickup()
            self.place(receptacle)

    def put_down(self) -> None:
        """Put the held object down on a nearby free surface."""
        with self._record("put_down"):
            held = self._resolve()
            if self.runtime.world.held != held.object_id:
                raise ActionFailed(f"You are not holding the {self.object_class}.")
            _put_down(self.runtime, held)

    def open(self) -> None:
        """Open the object."""
        with self._record("open"):
            self._set_state("Open", "is_open", True)

    def close(self) -> None:
        """Close the object."""
        with self._record("close"):
            self._set_state("Close", "is_open", False)

    def toggle_on(self) -> None:
        """Turn the object on."""
        with self._record("toggle_on"):
            self._set_state("ToggleOn", "is_toggled", True)

    def toggle_off(self) -> None:
        """Turn the object off."""
        with self._record("toggle_off"):
            self._set_state("ToggleOff", "is_toggled", False)

    def slice(self) -> None:
        """Slice the object (the agent must hold a knife)."""
        with self._record("slice"):
            if self._already_sliced():
                return
            obj, rt = self._resolve(), self.runtime
            if rt.config.precondition_checks:
                _slice(rt, obj)
                return
            rt.interact("Slice", obj)

    def pour(self, target: InteractionObject) -> None:
        """Pour the liquid in the held object into the target."""
        target = _check_object(target, "pour")
        with self._record("pour", target):
            if self.runtime.world.held != self._id():
                raise ActionFailed(f"You must be holding the {self.object_class} to pour it.")
            self.runtime.interact("Pour", target._resolve())

    def _set_state(self, action: str, field_name: str, want: bool) -> None:
        """Apply a state-changing action; with precondition checks, a no-op when the state holds."""
        obj, rt = self._resolve(), self.runtime
        capable = obj.type.openable if field_name == "is_open" else obj.type.toggleable
        if rt.config.precondition_checks and capable:
            if getattr(obj, field_name) == want:
                return
            if action == "ToggleOn" and obj.type.openable and obj.is_open:
                rt.interact("Close", obj)  # a microwave runs closed
        rt.interact(action, obj)

    def check_attribute(self, attr: str, value: Any) -> bool:
        """Whether the object's attribute (holding, sliced, dirty, ...) equals the value."""
        field_name = _attribute(attr)
        with self._record("check_attribute", attr, value) as record:
            obj = self._resolve_or_sliced(attr)
            if obj is None:
                actual: Any = True
            elif attr == "holding":
                actual = self.runtime.world.held == obj.object_id
            else:
                actual = getattr(obj, field_name)
            record.result = actual == value
            return record.result

    def change_state(self, attr: str, value: Any) -> None:
        """Record the expected state change (the model's belief); does not act."""
        _attribute(attr)
        with self._record("change_state", attr, value):
            self.runtime.beliefs.append((self.object_instance or self.object_class, attr, value))

    def _resolve_or_sliced(self, attr: str) -> SimObject | None:
        """The object, or None when it was sliced away (so ``sliced`` reads True)."""
        if attr == "sliced" and self._sliced_into():
            return None
        return self._resolve(repair=False)  # a query never acts


def _attribute(attr: Any) -> str:
    if attr not in ATTRIBUTES:
        raise ApiUsageError(f"Unknown attribute {attr!r}; expected one of {', '.join(ATTRIBUTES)}")
    return ATTRIBUTES[attr]


def _check_object(value: Any, method: str) -> InteractionObject:
    if not isinstance(value, InteractionObject):
        raise ApiUsageError(f"{method}() expects an InteractionObject, got {type(value).__name__}")
    return value


def _take(rt: ApiRuntime, obj: SimObject) -> None:
    """Pick ``obj`` up as HELPER's checks do: put down what is in hand first, and open the closed
    container it sits in (the simulator's own pickup would fail on both)."""
    if rt.world.held is not None:
        _put_down(rt, rt.world.objects[rt.world.held])
    _open_container_of(rt, obj)
    rt.interact("Pickup", obj)


def _open_container_of(rt: ApiRuntime, obj: SimObject) -> None:
    """Open the closed container ``obj`` sits in, so that it can be reached."""
    if obj.parent and (container := rt.world.objects.get(obj.parent)) is not None:
        _open_if_closed(rt, container)


def _open_if_closed(rt: ApiRuntime, obj: SimObject) -> None:
    """Open ``obj`` if it is a container that blocks access while closed."""
    if obj.object_type in CLOSED_BLOCKS and not obj.is_open:
        rt.interact("Open", obj)


def _with_room(rt: ApiRuntime, receptacle: InteractionObject, target: SimObject, obj: SimObject) -> SimObject:
    """``target``, or — full, and named by class only — the best other of its class with room for
    ``obj`` (a room has several counter tops; the nearest may be full)."""
    if receptacle._named or len(target.children) < target.type.capacity:
        return target
    room = [o for o in rt.candidates(target.object_type) if _has_room(o, obj)]
    if room:
        receptacle.object_instance = room[0].object_id
        return room[0]
    return target


def _not_in_room(rt: ApiRuntime, receptacle: InteractionObject) -> bool:
    """Whether ``receptacle``, named by class only, is a class this room has none of, as far as the agent
    knows it (with the oracle object map: the whole room; without, it may lie unseen, and nothing is known)."""
    cls = receptacle.object_class
    return (receptacle.object_instance is None and rt.config.oracle_object_map and cls not in SLICE_PRODUCTS
            and not any(o.object_type == cls for o in rt.world.objects.values()))


def _make_room(rt: ApiRuntime, target: SimObject, obj: SimObject) -> None:
    """A full ``target`` gets room for the held ``obj``: its objects of another class (never one
    like ``obj``, which the program may have put there) move to free surfaces, the last first and
    those the running program put there after all others (the mug just served beside the plate),
    until one place is free (slicing a loaf on a table can leave it over capacity), and ``obj`` is
    taken up again. In an appliance one uses (a toaster, a coffee machine) one like ``obj`` that
    this program did not put there makes way too: the toasted slice an earlier attempt left in the
    toaster, the mug the coffee machine held. Too few to move: the place fails with the simulator's
    own message."""
    placed = _placed_by_program(rt)
    mine = placed if target.object_type in USED_NOT_STORED else None
    others = sorted((rt.world.objects[c] for c in target.children
                     if rt.world.objects[c].object_type != obj.object_type or (mine is not None and c not in mine)),
                    key=lambda o: o.object_id not in placed)  # what this program put there moves last
    excess = len(target.children) - target.type.capacity + 1
    if excess <= 0 or len(others) < excess:
        return
    for other in others[::-1][:excess]:
        _take(rt, other)  # puts ``obj`` down first
        _put_down(rt, other, avoid=target)
    _take(rt, obj)


def _placed_by_program(rt: ApiRuntime) -> set[str]:
    """The objects the running program's successful ``place`` / ``pickup_and_place`` calls put somewhere."""
    return {c.object for c in rt.calls[rt.program_start:] if c.success and c.method in ("place", "pickup_and_place")}


def _hold_knife(rt: ApiRuntime) -> None:
    """HELPER's check before a slice: fetch a knife unless one is in hand — the one the program
    already named, else the best candidate (none known: the slice fails with the simulator's own
    message)."""
    held = rt.world.objects.get(rt.world.held) if rt.world.held else None
    if held is not None and held.object_type in KNIVES:
        return
    knives = _named_first(rt, [k for kind in KNIVES for k in rt.candidates(kind)])
    if knives:
        _take(rt, knives[0])


def _named_first(rt: ApiRuntime, objs: list[SimObject]) -> list[SimObject]:
    """``objs`` with those the program already named (claimed) first, otherwise in their order."""
    return sorted(objs, key=lambda o: o.object_id not in rt.claimed)


def _slice_first(rt: ApiRuntime, piece_class: str, parent_id: str | None) -> bool:
    """HELPER's check for a piece named before its object was sliced: slice that object (the
    given parent, else the one the program already names, else the nearest); False when there is
    nothing to slice (the caller then reports the missing piece)."""
    if not rt.config.precondition_checks:
        return False
    sources = [s for s, (piece, _) in SLICE_PRODUCTS.items() if piece == piece_class]
    if parent_id is not None:
        whole = [o for o in (rt.world.objects.get(parent_id),) if o is not None]
    else:
        whole = _named_first(rt, [o for s in sources for o in rt.candidates(s)])
    whole = [o for o in whole if o.object_type in sources and not o.is_sliced]
    if not whole:
        return False
    _slice(rt, whole[0])
    return True


def _slice(rt: ApiRuntime, obj: SimObject) -> None:
    """Slice ``obj`` with the checks: a knife in hand, the object out of its closed container."""
    _hold_knife(rt)
    _open_container_of(rt, obj)
    rt.interact("Slice", obj)


def _has_room(receptacle: SimObject, obj: SimObject) -> bool:
    """Whether ``receptacle`` can take ``obj`` now (its kind and its capacity)."""
    return len(receptacle.children) < receptacle.type.capacity and can_hold(receptacle.object_type, obj.object_type)


def _put_down(rt: ApiRuntime, held: SimObject, avoid: SimObject | None = None) -> None:
    """Put ``held`` down on the nearest free surface (:func:`_free_surface`), opening it first where it
    is a cabinet or drawer."""
    spot = _free_surface(rt, held, avoid)
    _open_if_closed(rt, spot)
    rt.interact("Place", spot)


def _free_surface(runtime: ApiRuntime, held: SimObject, avoid: SimObject | None = None) -> SimObject:
    """The nearest surface (visible first) with room for ``held``, not ``avoid``; with the pre-condition
    checks and every counter and table full, a cabinet or drawer (:data:`PUT_AWAY`) with room."""
    world = runtime.world
    visible = set(runtime.sim.visible_objects())

    def with_room(kinds: tuple[str, ...], closed: bool) -> list[SimObject]:
        return [o for o in world.objects.values() if o.object_type in kinds and _has_room(o, held) and o is not avoid
                and (closed or not (o.object_type in CLOSED_BLOCKS and not o.is_open))]

    options = with_room(PUT_DOWN_SURFACES, closed=False) or (  # a bathroom counter full of toilet paper:
        with_room(PUT_AWAY, closed=True) if runtime.config.precondition_checks else [])  # a cabinet, opened
    if not options:
        raise ActionFailed(f"There is no free surface to put the {held.object_type} down on.")
    return min(options, key=lambda o: (o.object_id not in visible, world.distance_to(o)))


def bind_api(runtime: ApiRuntime) -> type[InteractionObject]:
    """An ``InteractionObject`` class whose instances act through ``runtime``."""
    return type("InteractionObject", (InteractionObject,), {"runtime": runtime,
                                                            "__doc__": InteractionObject.__doc__})


def public_methods() -> list[str]:
    """Names of the API methods a program may call."""
    return [n for n, v in vars(InteractionObject).items() if callable(v) and not n.startswith("_")]


def sandbox_attributes() -> frozenset[str]:
    """Every attribute name a program may read on an InteractionObject."""
    return frozenset(public_methods()) | InteractionObject.PUBLIC_ATTRIBUTES
