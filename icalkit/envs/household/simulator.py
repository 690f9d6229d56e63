"""Pure-Python core of the household simulator: resolve targets, check visibility, act, run rules.

A step never raises on bad input (unknown action, missing object, bad pixel): it returns a failed
:class:`StepResult` with a message, and a failed step leaves the world unchanged.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass

from icalkit.envs.household.actions import (
    DRAINS,
    MOVES,
    ActionError,
    canonical_action,
    interact,
    move,
    precheck,
)
from icalkit.envs.household.camera import project
from icalkit.envs.household.reach import reach_distance, sees, view_test
from icalkit.envs.household.receptacles import CLOSED_BLOCKS
from icalkit.envs.household.rules import APPLIANCE_TYPES, apply_rules
from icalkit.envs.household.state import INTERACT_DISTANCE, SimObject, World

PixelLookup = Callable[[int, int], "str | None"]
VISIBLE_CACHE = 16384  # (object state, pose) -> visible ids answers kept per simulator
_STATE_IDS: dict[tuple, tuple[int, object]] = {}  # state_key -> (id, grid kept alive so ids stay unique)
_STATE_COUNTER = itertools.count(1)


def state_key(world: World) -> tuple:
    """Everything observations depend on except the agent pose: layout, held object, and every field
    of every object (a new ``SimObject`` field is included automatically)."""
    objects = tuple(tuple(tuple(v) if v.__class__ is list else v for v in o.__dict__.values())
                    for o in world.objects.values())
    return (id(world.blocked), world.scene_id, world.room_type, world.n_i, world.n_j, world.held, objects)


def state_id(world: World) -> int:
    """A number per distinct :func:`state_key` in this process (never reused, even when the table
    is emptied): equal ids mean equal object states, so answers computed for one can be reused."""
    key = state_key(world)
    found = _STATE_IDS.get(key)
    if found is None:
        if len(_STATE_IDS) >= 200_000:
            _STATE_IDS.clear()
        found = _STATE_IDS[key] = (next(_STATE_COUNTER), world.blocked)
    return found[0]


@dataclass(frozen=True, slots=True)
class StepResult:
    """Outcome of one primitive action."""

    success: bool
    error: str
    action: str
    target: str | None
    changed: bool


class Simulator:
    """Steps a :class:`World` with the TEACh primitive actions.

    Args:
        world: initial world (or call :meth:`reset` later).
        max_view_distance: objects farther than this (m) are not visible.
        pixel_to_id: instance-segmentation lookup of the current frame, used for pixel targets.
    """

    def __init__(self, world: World | None = None, max_view_distance: float = 5.0,
                 pixel_to_id: PixelLookup | None = None) -> None:
        self.max_view_distance = max_view_distance
        self.pixel_to_id = pixel_to_id
        self.world: World | None = None
        self._appliances: list[str] = []
        self._visible: dict[tuple[int, int, int, int, int], list[str]] = {}  # (state id, pose) -> ids
        self._state_id = (-1, 0)  # (version, state id)
        self.version = 0  # bumped by every change of object state (not by moves)
        self.steps = self.failures = 0  # primitive actions (and failed ones) since the last reset
        if world is not None:
            self.reset(world)

    def reset(self, world: World, known_state_id: int | None = None) -> None:
        """Start from ``world`` (used in place, not copied); runs the rules once.

        Args:
            known_state_id: the :attr:`state_id` the world has after this reset, when the caller
                knows it (the gym env does for a start world it reset to before); saves computing it.
        """
        self.world = world
        self._appliances = [o.object_id for o in world.objects.values() if o.object_type in APPLIANCE_TYPES]
        apply_rules(world, self._appliances)
        self.version += 1
        self.steps = self.failures = 0
        if known_state_id is not None:
            self._state_id = (self.version, known_state_id)

    def mark_changed(self) -> None:
        """Declare that object state was edited directly, not through :meth:`step` (cached answers
        are keyed on :attr:`state_id`, recomputed only when :attr:`version` changed)."""
        self.version += 1

    @property
    def state_id(self) -> int:
        """:func:`state_id` of the current world, recomputed only after the object state changed."""
        if self._state_id[0] != self.version:
            self._state_id = (self.version, state_id(self.world))
        return self._state_id[1]

    # ------------------------------------------------------------------ perception

    def hidden(self, obj: SimObject) -> bool:
        """Whether ``obj`` is held, or inside something held or closed."""
        w = self.world
        node: SimObject | None = obj
        first = True
        while node is not None:
            if node.object_id == w.held:
                return True
            if not first and node.object_type in CLOSED_BLOCKS and not node.is_open:
                return True
            first = False
            node = w.objects.get(node.parent) if node.parent else None
        return False

    def is_visible(self, obj: SimObject) -> bool:
        """In the camera frustum (``camera.in_view`` of its centre or, for furniture, a point of its
        top), not hidden behind furniture, within ``max_view_distance``, not held and not shut away."""
        w = self.world
        return (reach_distance(obj, w.agent) <= self.max_view_distance and sees(obj, w.agent, w)
                and not self.hidden(obj))

    def interactable(self, obj: SimObject) -> bool:
        """Visible and within interaction distance (1.5 m)."""
        return reach_distance(obj, self.world.agent) <= INTERACT_DISTANCE and self.is_visible(obj)

    def visible_objects(self) -> list[str]:
        """Ids of the visible objects (do not modify the list).

        Cached per (object state, pose): walking back to a pose, or seeing the same state again
        after a reset to the same task, costs a lookup.
        """
        a = self.world.agent
        key = (self.state_id, a.i, a.j, a.yaw, a.pitch)
        ids = self._visible.get(key)
        if ids is None:
            if len(self._visible) >= VISIBLE_CACHE:
                self._visible.clear()
            test = view_test(a)  # a point-like object out of the frustum is not visible: skip the rest
            ids = self._visible[key] = [oid for oid, o in self.world.objects.items()
                                        if (o.cells or test(o.position)) and self.is_visible(o)]
        return ids

    # ------------------------------------------------------------------ acting

    def step(self, action: str, target: str | None = None, pixel: tuple[int, int] | None = None) -> StepResult:
        """Apply one primitive action; ``target`` (object id) or ``pixel`` picks the object.

        Every call counts in ``steps`` (and ``failures`` when it fails) since the last reset, so
        an env and a program executor sharing this simulator see one episode budget.
        """
        if self.world is None:
            raise RuntimeError("Simulator.step called before reset(world)")
        result = self._step(action, target, pixel)
        self.steps += 1
        self.failures += not result.success
        return result

    def _step(self, action: str, target: str | None, pixel: tuple[int, int] | None) -> StepResult:
        try:
            name = canonical_action(action)
        except ActionError as err:
            return StepResult(False, str(err), str(action), target, False)
        if name in MOVES:
            try:
                move(self.world, name)
            except ActionError as err:
                return StepResult(False, str(err), name, None, False)
            return StepResult(True, "", name, None, True)
        if name == "Stop":
            return StepResult(True, "", name, None, False)
        try:
            obj = self._resolve(name, target, pixel)
            precheck(self.world, name, obj)
            self._check_reach(obj)
            interact(self.world, name, obj)
        except ActionError as err:
            return StepResult(False, str(err), name, target, False)
        apply_rules(self.world, self._appliances)
        self.version += 1
        return StepResult(True, "", name, obj.object_id, True)

    def _check_reach(self, obj: SimObject) -> None:
        if not self.is_visible(obj):
            raise ActionError(f"The {obj.object_type} is not visible from here.")
        dist = reach_distance(obj, self.world.agent)
        if dist > INTERACT_DISTANCE:
            raise ActionError(f"The {obj.object_type} is too far away ({dist:.1f} m); "
                              f"get within {INTERACT_DISTANCE} m.")

    def _resolve(self, action: str, target: str | None, pixel: tuple[int, int] | None) -> SimObject:
        objects = self.world.objects
        if target is not None:
            if not isinstance(target, str) or target not in objects:
                raise ActionError(f"There is no object called {target!r}.")
            return objects[target]
        if pixel is not None:
            return self._from_pixel(action, pixel)
        found = self._centre_object(action)
        if found is None:
            raise ActionError(f"{action} needs a target, and nothing in front of you can be used for it.")
        return found

    def _from_pixel(self, action: str, pixel: tuple[int, int]) -> SimObject:
        if self.pixel_to_id is None:
            raise ActionError("Pixel targets need a rendered frame; pass an object id instead.")
        try:
            x, y = (int(v) for v in pixel)
        except (TypeError, ValueError):
            raise ActionError(f"A pixel target must be two integers (x, y), got {pixel!r}.") from None
        try:
            oid = self.pixel_to_id(x, y)
        except (ValueError, IndexError) as err:
            raise ActionError(f"Pixel ({x}, {y}) cannot be used: {err}.") from None
        if oid is None or oid not in self.world.objects:
            raise ActionError(f"There is no object at pixel ({x}, {y}).")
        obj = self.world.objects[oid]
        if action == "Place" and not obj.type.receptacle and obj.parent:
            obj = self.world.objects[obj.parent]  # clicked on something lying on the receptacle
        return obj

    def _centre_object(self, action: str) -> SimObject | None:
        """The usable interactable object nearest the image centre (for targetless actions)."""
        best, best_d = None, math.inf
        for oid in self.visible_objects():
            obj = self.world.objects[oid]
            if not self._suits(action, obj) or reach_distance(obj, self.world.agent) > INTERACT_DISTANCE:
                continue
            p = project(self.world.agent, obj.position, 2)
            if p is not None and (d := abs(p[0] - 1) + abs(p[1] - 1)) < best_d:
                best, best_d = obj, d
        return best

    @staticmethod
    def _suits(action: str, obj: SimObject) -> bool:
        t = obj.type
        return {"Pickup": t.pickupable, "Place": t.receptacle, "Open": t.openable, "Close": t.openable,
                "ToggleOn": t.toggleable, "ToggleOff": t.toggleable, "Slice": t.sliceable,
                "Pour": t.can_fill or obj.object_type in DRAINS}.get(action, False)

