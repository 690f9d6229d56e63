"""Skills over the primitive actions, shared by the expert and the noisy demonstrator.

An :class:`Actor` wraps a step function (the simulator's or the gymnasium env's) and offers
reliable high-level skills — go to, pick up (opening a closed container first), place, put down,
clean, fill, cook, cool, slice — each compiled to TEACh primitives with shortest-path navigation.
Skills raise :class:`SkillError` when the world makes them impossible.
"""

from __future__ import annotations

from collections.abc import Callable

from icalkit.envs.household.catalog import KNIVES
from icalkit.envs.household.navigation import NavigationError, path_to_object
from icalkit.envs.household.receptacles import APPLIANCES, CLOSED_BLOCKS, can_hold
from icalkit.envs.household.state import SimObject, World

StepFn = Callable[[str, "str | None"], tuple[bool, str]]

SURFACES = ("CounterTop", "DiningTable", "CoffeeTable", "SideTable", "Desk", "Dresser", "TVStand",
            "Shelf", "CounterTopBath", "Bed", "Sofa", "ArmChair", "Ottoman")
FILLABLE_TOOLS = ("Cup", "Mug", "Bowl", "Pot", "Kettle", "Bottle")


class SkillError(RuntimeError):
    """A skill cannot be carried out in this world (missing object, unreachable, ...)."""


class Actor:
    """High-level skills on top of primitive actions.

    Args:
        world: the live world the step function acts on (read to plan; never written here).
        step: ``step(action, target) -> (success, error)`` executing one primitive.
        max_steps: safety budget of primitive actions.
    """

    def __init__(self, world: World, step: StepFn, max_steps: int = 1000) -> None:
        self.world = world
        self._step = step
        self.max_steps = max_steps
        self.n_steps = 0
        self.protected: set[str] = set()  # goal objects that make_room must not move

    # ---------------------------------------------------------------- primitives

    def act(self, action: str, target: str | None = None, check: bool = True) -> bool:
        """One primitive action; raises SkillError on failure when ``check``."""
        if self.n_steps >= self.max_steps:
            raise SkillError(f"step budget of {self.max_steps} actions exhausted")
        self.n_steps += 1
        ok, error = self._step(action, target)
        if check and not ok:
            raise SkillError(f"{action} {target or ''} failed: {error}")
        return ok

    def obj(self, object_id: str) -> SimObject:
        try:
            return self.world.objects[object_id]
        except KeyError:
            raise SkillError(f"no object {object_id!r} in the scene") from None

    @property
    def held(self) -> SimObject | None:
        return self.world.objects[self.world.held] if self.world.held else None

    def goto(self, object_id: str) -> None:
        """Shortest path to a pose from which ``object_id`` can be interacted with."""
        try:
            path = path_to_object(self.world, object_id)
        except (NavigationError, KeyError) as exc:
            raise SkillError(str(exc)) from exc
        for action in path:
            self.act(action)

    def interact(self, action: str, object_id: str) -> None:
        self.goto(object_id)
        self.act(action, object_id)

    # ---------------------------------------------------------------- finding things

    def nearest(self, candidates: list[SimObject]) -> SimObject:
        if not candidates:
            raise SkillError("no suitable object in the scene")
        return min(candidates, key=lambda o: (self.world.distance_to(o), o.object_id))

    def find(self, object_type: str, exclude: set[str] | frozenset[str] = frozenset()) -> SimObject:
        found = [o for o in self.world.of_type(object_type) if o.object_id not in exclude]
        if not found:
            raise SkillError(f"there is no {object_type} in the scene")
        return self.nearest(found)

    def container_of(self, obj: SimObject) -> SimObject | None:
        """The closed container (if any) that hides ``obj``."""
        p = obj.parent
        while p is not None:
            parent = self.world.objects[p]
            if parent.object_type in CLOSED_BLOCKS and not parent.is_open:
                return parent
            p = parent.parent
        return None

    def free_receptacle(self, object_type: str, types: tuple[str, ...] = SURFACES,
                        exclude: set[str] | frozenset[str] = frozenset()) -> SimObject:
        options = [o for o in self.world.objects.values()
                   if o.object_type in types and o.object_id not in exclude
                   and can_hold(o.object_type, object_type) and len(o.children) < o.type.capacity]
        if not options:
            raise SkillError(f"no free place to put the {object_type}")
        return self.nearest(options)

    # ---------------------------------------------------------------- skills

    def pickup(self, object_id: str) -> None:
        """Pick up an object (putting down what is held, opening its container and closing it)."""
        obj = self.obj(object_id)
        if self.world.held == object_id:
            return
        if self.held is not None:
            self.put_down()
        box = self.container_of(obj)
        if box is not None:
            self.interact("Open", box.object_id)
        self.interact("Pickup", object_id)
        if box is not None:
            self.interact("Close", box.object_id)

    def place(self, receptacle_id: str, keep_open: bool = False) -> None:
        """Place the held object in/on a receptacle (opening and re-closing it if closed)."""
        rec = self.obj(receptacle_id)
        box = self.container_of(rec) or (rec if rec.object_type in CLOSED_BLOCKS and not rec.is_open else None)
        if box is not None:
            self.interact("Open", box.object_id)
        self.interact("Place", receptacle_id)
        if box is not None and not keep_open:
            self.interact("Close", box.object_id)

    def put_down(self, exclude: set[str] | frozenset[str] = frozenset()) -> None:
        """Free the hands on the nearest surface (else any free receptacle) that takes the held object."""
        held = self.held
        if held is None:
            return
        try:
            target = self.free_receptacle(held.object_type, exclude=exclude)
        except SkillError:
            storage = tuple(t for t in {o.object_type for o in self.world.objects.values()}
                            if t not in APPLIANCES and t != "SinkBasin")
            target = self.free_receptacle(held.object_type, types=storage, exclude=exclude)
        self.place(target.object_id)

    def move_into(self, object_id: str, receptacle_id: str) -> None:
        obj = self.obj(object_id)
        if obj.parent == receptacle_id:
            return
        self.make_room(self.obj(receptacle_id), object_id)
        self.pickup(object_id)
        self.place(receptacle_id)

    def set_toggle(self, object_id: str, on: bool) -> None:
        if self.obj(object_id).is_toggled != on:
            self.interact("ToggleOn" if on else "ToggleOff", object_id)

    def set_open(self, object_id: str, is_open: bool) -> None:
        if self.obj(object_id).is_open != is_open:
            self.interact("Open" if is_open else "Close", object_id)

    def under_faucet(self, object_id: str) -> None:
        """Put an object in a sink basin and run the faucet (cleans it, fills it with water)."""
        sink = self.find("SinkBasin")
        faucets = [o for o in self.world.of_type("Faucet") if o.controls == sink.object_id]
        if not faucets:
            raise SkillError(f"{sink.object_id} has no faucet")
        self.make_room(sink, object_id)
        self.move_into(object_id, sink.object_id)
        self.set_toggle(faucets[0].object_id, True)
        self.set_toggle(faucets[0].object_id, False)

    def clean(self, object_id: str) -> None:
        if self.obj(object_id).is_dirty:
            self.under_faucet(object_id)

    def fill_water(self, object_id: str) -> None:
        obj = self.obj(object_id)
        if obj.object_type == "HousePlant":
            self.water_plant(object_id)
        elif not (obj.is_filled and obj.fill_liquid == "water"):
            self.under_faucet(object_id)

    def water_plant(self, plant_id: str) -> None:
        tools = [o for t in FILLABLE_TOOLS for o in self.world.of_type(t)]
        tool = self.nearest(tools)
        self.fill_water(tool.object_id)
        self.pickup(tool.object_id)
        self.interact("Pour", plant_id)

    def coffee(self, mug_id: str) -> None:
        if self.obj(mug_id).is_coffee:
            return
        machine = self.find("CoffeeMachine")
        self.make_room(machine, mug_id)
        self.move_into(mug_id, machine.object_id)
        self.set_toggle(machine.object_id, True)
        self.set_toggle(machine.object_id, False)

    def cook(self, object_id: str) -> None:
        obj = self.obj(object_id)
        if obj.is_cooked:
            return
        if obj.object_type == "BreadSliced" and self.world.of_type("Toaster"):
            self._run_in(object_id, self.find("Toaster"))
        elif self.world.of_type("Microwave"):
            self._run_in(object_id, self.find("Microwave"))
        else:
            self._on_burner(object_id, "Pan", fill=False)

    def boil(self, object_id: str) -> None:
        if not self.obj(object_id).is_boiled:
            self._on_burner(object_id, "Pot", fill=True)

    def cool(self, object_id: str) -> None:
        obj = self.obj(object_id)
        if obj.is_cooled:
            return
        fridge = self.find("Fridge")
        self.move_into(object_id, fridge.object_id)  # place() closes the fridge again

    def receptacle_for(self, object_type: str, types: tuple[str, ...]) -> SimObject:
        """A receptacle of one of ``types`` for the object: a free one, else the nearest emptied."""
        try:
            return self.free_receptacle(object_type, types)
        except SkillError:
            full = [o for o in self.world.objects.values()
                    if o.object_type in types and can_hold(o.object_type, object_type)]
            if not full:
                raise
            target = self.nearest(full)
            self.make_room(target, keep="")
            return target

    def make_room(self, receptacle: SimObject, keep: str) -> None:
        """Take other objects out of a full receptacle so that ``keep`` fits in."""
        held = self.world.held
        if held is not None and held != keep and len(receptacle.children) >= receptacle.type.capacity:
            self.put_down(exclude={receptacle.object_id})
        others = [c for c in receptacle.children if c != keep and c not in self.protected]
        while others and keep not in receptacle.children and len(receptacle.children) >= receptacle.type.capacity:
            self.pickup(others.pop())
            self.put_down(exclude={receptacle.object_id})

    def _run_in(self, object_id: str, appliance: SimObject) -> None:
        self.make_room(appliance, object_id)
        self.pickup(object_id)
        self.place(appliance.object_id)  # closes the microwave door again
        self.set_toggle(appliance.object_id, True)
        self.set_toggle(appliance.object_id, False)
        self.pickup(object_id)  # take it out: the appliance is free for the next one
        self.put_down(exclude={appliance.object_id})

    def _on_burner(self, object_id: str, vessel_type: str, fill: bool) -> None:
        vessel = self.find(vessel_type)
        if fill:
            self.fill_water(vessel.object_id)
        burner = self._burner_for(vessel)
        self.move_into(vessel.object_id, burner.object_id)
        self.move_into(object_id, vessel.object_id)
        knob = next(o for o in self.world.of_type("StoveKnob") if o.controls == burner.object_id)
        self.set_toggle(knob.object_id, True)
        self.set_toggle(knob.object_id, False)

    def _burner_for(self, vessel: SimObject) -> SimObject:
        if vessel.parent and self.obj(vessel.parent).object_type == "StoveBurner":
            return self.obj(vessel.parent)
        burners = [b for b in self.world.of_type("StoveBurner") if not b.children
                   and any(k.controls == b.object_id for k in self.world.of_type("StoveKnob"))]
        return self.nearest(burners)

    def slice(self, object_id: str) -> list[str]:
        """Slice an object with a knife; returns the ids of the new slices."""
        obj = self.obj(object_id)
        if self.container_of(obj) is not None or obj.is_picked_up:
            self.pickup(object_id)
            self.put_down()
        knife = self.nearest([o for t in KNIVES for o in self.world.of_type(t)])
        self.pickup(knife.object_id)
        before = set(self.world.objects)
        self.interact("Slice", object_id)
        pieces = sorted(set(self.world.objects) - before, key=lambda i: int(i.rsplit("_", 1)[1]))
        self.put_down()
        return pieces
