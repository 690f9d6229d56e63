"""Flat high-level plans (LLM-Planner style): ``Navigation Mug``, ``PutObject Mug CounterTop`` ...

Plans are parsed robustly: steps may be separated by newlines, commas or semicolons and carry
numbering or bullets; action and object names are matched case-, spacing- and underscore-
insensitively, objects fuzzily (difflib) against the catalog. Steps run through the same
:class:`InteractionObject` machinery as Python programs.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any

from icalkit.agents.api.household import ActionFailed, InteractionObject
from icalkit.envs.household.catalog import OBJECT_TYPES

# action -> (API method, number of object arguments: (min, max))
FLAT_ACTIONS: dict[str, tuple[str, int, int]] = {
    "Navigation": ("go_to", 1, 1),
    "PickupObject": ("pickup", 1, 1),
    "PutObject": ("place", 1, 2),
    "OpenObject": ("open", 1, 1),
    "CloseObject": ("close", 1, 1),
    "SliceObject": ("slice", 1, 1),
    "ToggleObjectOn": ("toggle_on", 1, 1),
    "ToggleObjectOff": ("toggle_off", 1, 1),
    "PourObject": ("pour", 1, 2),
}
_ACTION_KEYS = {a.lower(): a for a in FLAT_ACTIONS} | {
    "navigate": "Navigation", "goto": "Navigation", "navigateto": "Navigation",
    "pickup": "PickupObject", "pick": "PickupObject", "put": "PutObject", "place": "PutObject",
    "putdown": "PutObject", "open": "OpenObject", "close": "CloseObject", "slice": "SliceObject",
    "toggleon": "ToggleObjectOn", "turnon": "ToggleObjectOn", "toggleoff": "ToggleObjectOff",
    "turnoff": "ToggleObjectOff", "pour": "PourObject",
}
_OBJECT_KEYS = {t.lower(): t for t in OBJECT_TYPES} | {
    "sink": "SinkBasin", "refrigerator": "Fridge", "stove": "StoveBurner", "tv": "Television",
    "coffeemaker": "CoffeeMachine", "trashcan": "GarbageCan", "bin": "GarbageCan",
    "counter": "CounterTop", "table": "DiningTable", "lamp": "FloorLamp",
}
_FILLER = {"the", "a", "an", "to", "in", "into", "on", "onto", "of", "at", "object", "up"}
_NUMBERING = re.compile(r"^\s*(?:step\s*)?(?:\d+\s*[.):]|[-*\u2022])?\s*", re.IGNORECASE)


class FlatPlanError(ValueError):
    """A flat plan step cannot be understood."""


@dataclass
class FlatStep:
    """One parsed high-level step."""

    index: int
    action: str
    objects: list[str]
    text: str

    def __str__(self) -> str:
        return " ".join([self.action, *self.objects])


def _key(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def match_object(words: list[str]) -> tuple[str, float]:
    """Catalog type best matching the words, with a similarity score in [0, 1]."""
    key = _key("".join(w for w in words if w.lower() not in _FILLER) or "".join(words))
    key = re.sub(r"\d+$", "", key)
    if key in _OBJECT_KEYS:
        return _OBJECT_KEYS[key], 1.0
    best = difflib.get_close_matches(key, list(_OBJECT_KEYS), n=1, cutoff=0.6)
    if not best:
        return "", 0.0
    return _OBJECT_KEYS[best[0]], difflib.SequenceMatcher(None, key, best[0]).ratio()


def _split_action(words: list[str]) -> tuple[str, list[str]]:
    for k in (3, 2, 1):
        if len(words) >= k and _key("".join(words[:k])) in _ACTION_KEYS:
            return _ACTION_KEYS[_key("".join(words[:k]))], words[k:]
    close = difflib.get_close_matches(_key(words[0]), list(_ACTION_KEYS), n=1, cutoff=0.75)
    if close:
        return _ACTION_KEYS[close[0]], words[1:]
    raise FlatPlanError(f"unknown action {words[0]!r}; expected one of {', '.join(FLAT_ACTIONS)}")


def _split_objects(action: str, words: list[str], text: str) -> list[str]:
    _, lo, hi = FLAT_ACTIONS[action]
    options: list[tuple[float, list[str]]] = []
    if words:
        name, score = match_object(words)
        if name:
            options.append((score, [name]))
    if hi == 2:
        for cut in range(1, len(words)):
            (a, sa), (b, sb) = match_object(words[:cut]), match_object(words[cut:])
            if a and b:
                options.append(((sa + sb) / 2 + 0.01, [a, b]))
    if not options:
        raise FlatPlanError(f"step {text!r}: no known object in {' '.join(words)!r}")
    score, names = max(options, key=lambda o: o[0])
    if len(names) < lo:
        raise FlatPlanError(f"step {text!r}: {action} needs {lo} object(s)")
    return names


def parse_flat_plan(plan: str | list[str]) -> list[FlatStep]:
    """Parse a flat plan (text or list of step strings) into steps; raises FlatPlanError."""
    if isinstance(plan, str):
        parts = re.split(r"[\n;,]+", plan)
    elif isinstance(plan, list) and all(isinstance(p, str) for p in plan):
        parts = plan
    else:
        raise FlatPlanError(f"a flat plan must be a string or a list of strings, got {type(plan).__name__}")
    steps: list[FlatStep] = []
    for raw in parts:
        text = _NUMBERING.sub("", raw.rsplit(":", 1)[-1]).strip().strip(".")
        words = re.findall(r"[A-Za-z]+(?:_\d+)?", text)
        if not words:
            continue
        action, rest = _split_action(words)
        if action in ("PutObject", "PourObject") and len(rest) > 1:
            rest = [w for w in rest if w.lower() not in _FILLER] or rest
        steps.append(FlatStep(len(steps) + 1, action, _split_objects(action, rest, text), text))
    if not steps:
        raise FlatPlanError("the plan has no steps")
    return steps


def execute_step(step: FlatStep, cls: type[InteractionObject],
                 objects: dict[str, InteractionObject]) -> Any:
    """Run one step; ``objects`` keeps one InteractionObject per class across steps.

    After a successful ``PutObject X Y``, X is forgotten, so the next step naming X resolves a
    fresh instance (unclaimed first): "put all mugs in the sink" plans repeat the same steps.
    """
    method, _, _ = FLAT_ACTIONS[step.action]

    def obj(name: str) -> InteractionObject:
        if name not in objects:
            objects[name] = cls(name)
        return objects[name]

    if method in ("place", "pour"):
        if len(step.objects) == 2:
            subject, target = obj(step.objects[0]), obj(step.objects[1])
        else:
            held = cls.runtime.world.held
            if held is None:
                raise ActionFailed(f"You are not holding anything to {method} on the "
                                   f"{step.objects[0]}.")
            subject = cls(cls.runtime.world.objects[held].object_type, object_instance=held)
            target = obj(step.objects[0])
        result = getattr(subject, method)(target)
        if method == "place":
            for name, bound in list(objects.items()):
                if bound is subject:
                    del objects[name]
        return result
    return getattr(obj(step.objects[0]), method)()
