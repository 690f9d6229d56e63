"""State-change rules applied after every state-changing action (AI2-THOR / TEACh semantics).

* a dirty object in a SinkBasin whose Faucet is on becomes clean; fillable ones fill with water;
* a Mug/Cup in a running CoffeeMachine fills with coffee;
* BreadSliced in a running Toaster becomes cooked;
* cookable food in a running, closed Microwave becomes cooked (also on a plate/in a bowl there);
* cookable food on a StoveBurner whose StoveKnob is on, or in a Pan/Pot on it, becomes cooked;
  food in a water-filled Pot there is also boiled (``is_boiled`` and ``is_cooked``).

Movement never changes what these rules produce, so the simulator runs them only after
interactions. Pouring is an action (see ``actions.py``), not a rule.
"""

from __future__ import annotations

from collections.abc import Iterator

from icalkit.envs.household.state import SimObject, World

COFFEE_CUPS = frozenset(("Mug", "Cup"))
VESSELS = frozenset(("Pot", "Pan", "Kettle"))


def _set(obj: SimObject, name: str, value: object) -> bool:
    if getattr(obj, name) == value:
        return False
    setattr(obj, name, value)
    return True


def descendants(world: World, obj: SimObject) -> Iterator[SimObject]:
    """All objects inside/on ``obj``, recursively."""
    for cid in obj.children:
        child = world.objects[cid]
        yield child
        yield from descendants(world, child)


def _children(world: World, obj: SimObject) -> Iterator[SimObject]:
    return (world.objects[c] for c in obj.children)


def _cook(obj: SimObject, boil: bool = False) -> bool:
    if not obj.type.cookable:
        return False
    changed = _set(obj, "is_cooked", True)
    if boil:
        changed |= _set(obj, "is_boiled", True)
    return changed


def _rinse(world: World, basin: SimObject) -> bool:
    changed = False
    for obj in descendants(world, basin):
        changed |= _set(obj, "is_dirty", False)
        if obj.type.can_fill and not obj.is_filled:
            obj.is_filled, obj.fill_liquid = True, "water"
            changed = True
    return changed


def _heat_burner(world: World, burner: SimObject) -> bool:
    changed = False
    for obj in _children(world, burner):
        changed |= _cook(obj)
        if obj.object_type in VESSELS:
            boil = obj.object_type == "Pot" and obj.is_filled and obj.fill_liquid == "water"
            for food in _children(world, obj):
                changed |= _cook(food, boil)
    return changed


def _run_appliance(world: World, obj: SimObject) -> bool:
    t = obj.object_type
    if t == "Faucet" and obj.controls in world.objects:
        return _rinse(world, world.objects[obj.controls])
    if t == "StoveKnob" and obj.controls in world.objects:
        return _heat_burner(world, world.objects[obj.controls])
    changed = False
    if t == "CoffeeMachine":
        for cup in _children(world, obj):
            if cup.object_type in COFFEE_CUPS and not cup.is_coffee:
                cup.is_filled, cup.fill_liquid = True, "coffee"
                changed = True
    elif t == "Toaster":
        for food in _children(world, obj):
            if food.object_type == "BreadSliced":
                changed |= _cook(food)
    elif t == "Microwave" and not obj.is_open:
        for food in descendants(world, obj):
            changed |= _cook(food)
    elif t == "Fridge" and not obj.is_open:
        for item in descendants(world, obj):
            changed |= _set(item, "is_cooled", True)
    return changed


APPLIANCE_TYPES = frozenset(("Faucet", "StoveKnob", "CoffeeMachine", "Toaster", "Microwave", "Fridge"))
ALWAYS_ON = frozenset(("Fridge",))  # runs without being toggled on


def apply_rules(world: World, appliances: list[str] | None = None) -> bool:
    """Run every running appliance's rule once; return whether any state changed.

    Args:
        world: the world, changed in place.
        appliances: ids of the appliance objects to consider (default: scan all objects).
    """
    ids = appliances if appliances is not None else [
        o.object_id for o in world.objects.values() if o.object_type in APPLIANCE_TYPES]
    changed = False
    for oid in ids:
        obj = world.objects.get(oid)
        if obj is not None and (obj.is_toggled or obj.object_type in ALWAYS_ON):
            changed |= _run_appliance(world, obj)
    return changed
