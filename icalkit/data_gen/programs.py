"""Primitive action sequences (demonstrations, IDM labels) -> programs over the household API.

The sequence is replayed on a copy of the initial world to learn which steps succeeded, which
object was held and where slices came from. Then:

- contiguous navigation folds into ``go_to()`` of the next interacted object;
- pickup, navigation, place of the same object becomes ``x.pickup_and_place(receptacle)``;
- slices get ``InteractionObject("XSliced", parent_object=x)``;
- the demonstrator's mistakes (useless or undone actions) are kept: this is the noisy program
  ICAL starts from. Failed primitives had no effect and are dropped unless ``keep_failed``.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from icalkit.envs.household.actions import MOVES, ActionError, canonical_action
from icalkit.envs.household.navigation import NavigationError, path_to_object
from icalkit.envs.household.simulator import Simulator
from icalkit.envs.household.state import World

VISUAL_IDM = "visual-idm"  # the ``source`` of episodes whose steps an IDM labelled from video (convert with reach)

METHODS = {"Pickup": "pickup", "Open": "open", "Close": "close", "ToggleOn": "toggle_on",
           "ToggleOff": "toggle_off", "Slice": "slice"}


@dataclass
class _Event:
    action: str
    target: str | None
    success: bool
    held: str | None  # object held before the action


def _normalize(step: Any) -> tuple[str, str | None]:
    if isinstance(step, str):
        return step, None
    if isinstance(step, dict):
        return step.get("action"), step.get("target")
    if isinstance(step, (tuple, list)) and 1 <= len(step) <= 2:
        return step[0], (step[1] if len(step) == 2 else None)
    if hasattr(step, "action"):
        return step.action, getattr(step, "target", None)
    raise ValueError(f"cannot read a primitive step from {step!r}; expected (action, target), "
                     f"a dict with 'action'/'target', or an object with .action/.target")


class ReplayMismatch(ValueError):
    """A recorded step's success differs from what the simulator gives when it is replayed."""


def _recorded_success(step: Any) -> bool | None:
    value = step.get("success") if isinstance(step, dict) else getattr(step, "success", None)
    return value if isinstance(value, bool) else None


def replay(world: World, steps: Iterable[Any], reach: bool = False) -> tuple[list[_Event], World]:
    """Replay primitives on a copy of ``world``; returns the events and the final world.

    With ``reach``, an interaction that fails where the replay stands is retried after walking to
    its target (the moves the API's ``go_to`` would make, recorded as move events). For steps
    labelled from video (IDM): a wrong navigation label leaves the replay elsewhere than the
    demonstrator, while the frames show the interaction happening.

    Raises:
        ValueError: a step is not a primitive action.
        ReplayMismatch: a step that records its success (a demonstration's dict or StepResult)
            turns out differently now: the file was recorded on another world or simulator version.
    """
    sim = Simulator(copy.deepcopy(world))
    events: list[_Event] = []
    for k, raw in enumerate(steps):
        action, target = _normalize(raw)
        try:
            action = canonical_action(action)
        except ActionError as exc:
            raise ValueError(f"step {k}: {exc}") from None
        held = sim.world.held
        result = sim.step(action, target=target)
        if reach and not result.success and target and action not in MOVES and target in sim.world.objects:
            try:
                path = path_to_object(sim.world, target)
            except NavigationError:
                path = []
            if path:
                for move in path:
                    moved = sim.step(move)
                    events.append(_Event(move, None, moved.success, sim.world.held))
                result = sim.step(action, target=target)
        recorded = _recorded_success(raw)
        if recorded is not None and recorded != result.success:
            now = f"fails now: {result.error}" if not result.success else "succeeds now"
            raise ReplayMismatch(
                f"step {k} ({action}{' ' + target if target else ''}) was recorded as "
                f"{'a success' if recorded else 'a failure'} but {now}; the demonstration was "
                "recorded on another scene or simulator version: collect it again")
        events.append(_Event(action, result.target or target, result.success, held))
    return events, sim.world


class _Writer:
    def __init__(self, world: World, final: World, with_instances: bool) -> None:
        self.types = {oid: o.object_type for oid, o in world.objects.items()}
        self.types.update({oid: o.object_type for oid, o in final.objects.items()})
        self.parents = {oid: o.sliced_from for oid, o in final.objects.items() if o.sliced_from}
        self.with_instances = with_instances
        self.names: dict[str, str] = {}
        self.lines: list[str] = []

    def var(self, oid: str) -> str:
        if oid in self.names:
            return self.names[oid]
        otype = self.types.get(oid) or oid.rsplit("_", 1)[0]
        base = re.sub(r"(?<!^)(?=[A-Z])", "_", otype).lower()
        name, n = base, 1
        while name in self.names.values():
            n += 1
            name = f"{base}_{n}"
        args = [f'"{otype}"']
        if self.with_instances:
            args.append(f'object_instance="{oid}"')
        parent = self.parents.get(oid)
        if parent is not None:
            args.append(f"parent_object={self.names[parent]}" if parent in self.names
                        else f'parent_object="{parent}"')
        self.lines.append(f"{name} = InteractionObject({', '.join(args)})")
        self.names[oid] = name
        return name

    def call(self, oid: str, method: str, arg: str | None = None, go_to: str | None = None) -> None:
        if go_to is not None:
            goal = self.var(go_to)
            self.lines.append(f"{goal}.go_to()")
        subject = self.var(oid)
        argument = self.var(arg) if arg is not None else ""
        self.lines.append(f"{subject}.{method}({argument})")


def trajectory_to_program(world: World, steps: Sequence[Any], with_instances: bool = True,
                          keep_failed: bool = False, reach: bool = False) -> str:
    """Convert a primitive trajectory on ``world`` into a program over the household API.

    Args:
        world: the initial world the trajectory starts from (not modified).
        steps: primitive steps: ``(action, target)`` pairs, dicts or StepResult-like objects.
        with_instances: name instances (``object_instance="Mug_2"``) so the program replays the
            same objects; off: classes only, resolved at run time.
        keep_failed: keep interactions that failed in the demonstration.
        reach: walk to the target of an interaction that fails where the replay stands and retry
            it (steps labelled from video, whose navigation labels may be wrong; see :func:`replay`).

    Returns:
        Program text, one API call per line.
    """
    events, final = replay(world, steps, reach)
    events = [e for e in events if e.success or (keep_failed and e.action not in MOVES)]
    writer = _Writer(world, final, with_instances)
    moved = False
    i = 0
    while i < len(events):
        e = events[i]
        if e.action in MOVES or e.action == "Stop" or e.target is None:
            moved = moved or e.action in MOVES
            i += 1
            continue
        nav = e.target if moved else None
        if e.action == "Pickup":
            j = i + 1
            while j < len(events) and events[j].action in MOVES:
                j += 1
            nxt = events[j] if j < len(events) else None
            if nxt is not None and nxt.action == "Place" and nxt.held == e.target and e.success \
                    and nxt.success:
                writer.call(e.target, "pickup_and_place", nxt.target)
                i, moved = j + 1, False
                continue
            writer.call(e.target, "pickup", go_to=nav)
        elif e.action in ("Place", "Pour"):
            if e.held is None:
                i += 1
                continue
            writer.call(e.held, e.action.lower(), e.target, go_to=nav)
        else:
            writer.call(e.target, METHODS[e.action], go_to=nav)
        i, moved = i + 1, False
    return "\n".join(writer.lines) + ("\n" if writer.lines else "")
