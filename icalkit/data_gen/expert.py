"""Expert demonstrator: solves any task from its TEACh-format goal definition.

The expert reads the instantiated definition (components, sub-tasks, relations) rather than a
hand-written script per task type, so every task type the definitions can express is solved:
for each component it chooses objects (slicing wholes when slices are needed), brings each one
to the wanted state with the :class:`Actor` skills in a fixed causal order (clean before coffee,
slice before cook, ...), then satisfies the relations by moving heads into their tail. Navigation
is shortest-path, so the number of primitives is the reference path length.
"""

from __future__ import annotations

from typing import Any

from icalkit.data_gen.actor import Actor, SkillError
from icalkit.envs.household.catalog import SLICE_PRODUCTS
from icalkit.envs.household.state import SimObject, World
from icalkit.envs.household.tasks.checker import condition_holds, is_a, resolve
from icalkit.envs.household.tasks.definitions import ResolvedComponent, ResolvedTask
from icalkit.envs.household.tasks.task import Task

SELECTION_KEYS = ("objectType", "simbotObjectClass", "receptacle")
# condition -> (order, skill name); the order encodes causal dependencies
ACHIEVERS: dict[str, tuple[int, str]] = {
    "isDirty": (0, "clean"),
    "isFilledWithLiquid": (1, "fill_water"),
    "simbotIsFilledWithCoffee": (2, "coffee"),
    "isCooked": (3, "cook"),
    "simbotIsCooked": (3, "cook"),
    "simbotIsBoiled": (3, "boil"),
    "isCooled": (4, "cool"),
    "parentReceptacles": (5, "place_in"),
    "isToggled": (6, "toggle"),
    "isOpen": (6, "open"),
    "isPickedUp": (9, "hold"),
}


def _is_a(obj: SimObject, wanted: Any) -> bool:
    """Type/superclass match with the goal checker's semantics (aliases included)."""
    return is_a({"objectType": obj.object_type, "simbotObjectClass": [obj.object_type, *obj.type.classes]}, wanted)


def _count(det: str) -> int:
    return 1 if det in ("a", "the") else int(det)


class Expert:
    """Goal-directed solver; call :meth:`solve` with a task on a freshly reset world."""

    def __init__(self, actor: Actor) -> None:
        self.actor = actor
        self.world = actor.world
        self.claimed: set[str] = set()

    def solve(self, task: Task) -> None:
        """Reach the task's goal; raises SkillError if the scene makes it impossible."""
        self.achieve(resolve(task.definition, task.params), preferred_parent=None)
        if self.actor.held is not None and not self._must_hold(task):
            self.actor.put_down()

    @staticmethod
    def _must_hold(task: Task) -> bool:
        return "look_at" in task.definition

    # ---------------------------------------------------------------- structure

    def achieve(self, rt: ResolvedTask, preferred_parent: str | None) -> dict[str, list[str]]:
        """Achieve one instance of a (sub-)task; returns object ids chosen per component."""
        tails = {rel["tail_entity_list"][0]: rel for rel in rt.relations}
        heads = {h: rel["tail_entity_list"][0] for rel in rt.relations for h in rel["head_entity_list"]}
        order = sorted(rt.components, key=lambda k: (k not in tails, k in heads))
        chosen: dict[str, list[str]] = {}
        for key in order:
            comp = rt.components[key]
            if comp.determiner == "0":
                continue
            parent = chosen[heads[key]][0] if key in heads and chosen.get(heads[key]) else None
            if comp.subtask is not None:
                chosen[key] = []
                for _ in range(_count(comp.determiner)):
                    sub = self.achieve(comp.subtask, parent)
                    anchor = comp.subtask.anchor
                    chosen[key] += sub.get(anchor, []) if anchor else []
            else:
                chosen[key] = self.achieve_atomic(comp, parent or (preferred_parent if key == rt.anchor else None))
        for rel in rt.relations:
            tail_ids = chosen.get(rel["tail_entity_list"][0]) or []
            if not tail_ids:
                raise SkillError(f"{rt.name}: nothing chosen for {rel['tail_entity_list'][0]!r}")
            for head in rel["head_entity_list"]:
                for oid in chosen.get(head, []):
                    if oid in self.world.objects and tail_ids[0] not in self._ancestors(oid):
                        self.actor.move_into(oid, tail_ids[0])
        return chosen

    def achieve_atomic(self, comp: ResolvedComponent, preferred_parent: str | None) -> list[str]:
        """Choose objects for an atomic component and bring them to the wanted state."""
        ids = self.choose(comp)
        steps = sorted((ACHIEVERS[k][0], k) for k in comp.conditions if k not in SELECTION_KEYS)
        for oid in ids:
            for _, prop in steps:
                self.reach(oid, prop, comp.conditions[prop], preferred_parent)
        if not comp.instance_shareable:
            self.claimed.update(ids)
        self.actor.protected.update(ids)
        return ids

    def choose(self, comp: ResolvedComponent) -> list[str]:
        """Objects for a component, slicing wholes when slices are wanted and missing."""
        key = comp.primary_condition if comp.primary_condition in SELECTION_KEYS else "objectType"
        wanted = comp.conditions.get(key, comp.conditions.get("objectType"))

        def candidates() -> list[SimObject]:
            objs = [o for o in self.world.objects.values() if _is_a(o, wanted)]
            if not comp.instance_shareable:
                objs = [o for o in objs if o.object_id not in self.claimed]
            if comp.conditions.get("receptacle"):
                objs = [o for o in objs if o.type.receptacle]
            return sorted(objs, key=lambda o: (-self._met(o, comp), self.world.distance_to(o), o.object_id))

        if comp.determiner == "all":
            return [o.object_id for o in candidates()]
        need = _count(comp.determiner)
        found = candidates()
        whole = next((w for w, (piece, _) in SLICE_PRODUCTS.items() if piece == wanted), None)
        while len(found) < need and whole is not None:
            wholes = [o for o in self.world.of_type(whole) if o.object_id not in self.claimed]
            if not wholes:
                break
            self.actor.slice(self.actor.nearest(wholes).object_id)
            found = candidates()
        if len(found) < need:
            raise SkillError(f"need {need} {wanted}, the scene has {len(found)}")
        return [o.object_id for o in found[:need]]

    # ---------------------------------------------------------------- conditions

    def _met(self, obj: SimObject, comp: ResolvedComponent) -> int:
        return sum(self.holds(obj, k, v) for k, v in comp.conditions.items() if k not in SELECTION_KEYS)

    def _ancestors(self, object_id: str) -> list[str]:
        out, p = [], self.world.objects[object_id].parent
        while p is not None:
            out.append(p)
            p = self.world.objects[p].parent
        return out

    def holds(self, obj: SimObject, prop: str, want: Any) -> bool:
        """Whether ``obj`` meets one goal condition, judged by the goal checker itself."""
        return condition_holds(obj.metadata(self.world), prop, want, self.world.metadata())

    def reach(self, oid: str, prop: str, want: Any, preferred_parent: str | None) -> None:
        """Bring object ``oid`` to ``prop == want``."""
        obj = self.actor.obj(oid)
        if self.holds(obj, prop, want):
            return
        if prop not in ACHIEVERS:
            raise SkillError(f"the expert cannot make {prop}={want!r} true")
        skill = ACHIEVERS[prop][1]
        if skill == "place_in":
            target = preferred_parent if preferred_parent and _is_a(self.actor.obj(preferred_parent), want) else None
            if target is None:
                target = self.actor.receptacle_for(obj.object_type, self._types_of(want)).object_id
            self.actor.move_into(oid, target)
        elif skill == "toggle":
            self.actor.set_toggle(oid, bool(want))
        elif skill == "open":
            self.actor.set_open(oid, bool(want))
        elif skill == "hold":
            self.actor.pickup(oid)
        elif skill == "clean" and want:
            raise SkillError(f"the expert cannot make {prop}={want!r} true")
        else:
            getattr(self.actor, skill)(oid)

    def _types_of(self, wanted: str) -> tuple[str, ...]:
        types = {o.object_type for o in self.world.objects.values() if _is_a(o, wanted)}
        return tuple(sorted(types)) or (wanted,)


def expert_actions(task: Task, world: World | None = None) -> list[dict]:
    """Solve ``task`` headless and return its primitive actions as env action dicts.

    Args:
        task: the task.
        world: the state to start from (copied, not modified); default: the task's initial
            scene. From a state part-way through, the actions are the rest of the solution.
    """
    import copy

    from icalkit.envs.household.scene import build_world
    from icalkit.envs.household.simulator import Simulator

    world = build_world(task) if world is None else copy.deepcopy(world)
    sim = Simulator(world)
    actions: list[dict] = []

    def step(action: str, target: str | None) -> tuple[bool, str]:
        result = sim.step(action, target)
        actions.append({"action": action, "target": target, "pixel": None})
        return result.success, result.error

    Expert(Actor(world, step)).solve(task)
    return actions


def reference_length(task: Task) -> int | None:
    """Primitive actions of the expert's solution of ``task`` (None when the expert fails)."""
    if task.reference_length:
        return int(task.reference_length)
    try:
        return len(expert_actions(task))
    except (SkillError, ValueError):
        return None
