"""Deterministic task sampling: task type + index + split + seed -> :class:`Task`.

A sampled task is *grounded* by default: its scene is generated and its initial-state edits are
applied exactly as ``HouseholdEnv.reset`` does (see :func:`build_world`); a scene seed whose
edits cannot be applied, or whose goal already holds at the start, is skipped. Grounding also
lets the Commander mention where objects really are.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Mapping

from icalkit.envs.household.scene import build_world
from icalkit.envs.household.tasks.checker import check_goal, is_a, resolve
from icalkit.envs.household.tasks.instructions import write_instructions
from icalkit.envs.household.tasks.registry import (
    TASK_TYPES,
    TaskSpecError,
    TaskType,
    choose_params,
    get_task_type,
)
from icalkit.envs.household.tasks.task import SPLITS, Task

SCENE_SEEDS = 100_000  # scene seeds are drawn from 0..SCENE_SEEDS-1
MAX_GROUNDING_TRIES = 20


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def _ground(task: Task, rng: random.Random, fixed_seed: bool) -> tuple[Task, list[dict]]:
    """Find a scene seed where the task starts unsolved; return the task and its start objects."""
    problems = []
    for attempt in range(1 if fixed_seed else MAX_GROUNDING_TRIES):
        if attempt:
            task.scene_seed = rng.randrange(SCENE_SEEDS)
        try:
            objects = build_world(task).metadata()
        except ValueError as e:
            problems.append(f"seed {task.scene_seed}: {e}")
            continue
        if check_goal(task, objects).success:
            problems.append(f"seed {task.scene_seed}: goal already satisfied at the start")
            continue
        overflow = capacity_problem(task, objects)
        if overflow:
            problems.append(f"seed {task.scene_seed}: {overflow}")
            continue
        return task, objects
    raise TaskSpecError(f"task {task.task_id} ({task.task_type} {task.params}) has no usable scene: "
                        + "; ".join(problems[-3:]))


def capacity_problem(task: Task, objects: list[dict]) -> str | None:
    """Why "all X in/on Y" cannot fit in this scene (too many X for Y's capacity), or None."""
    from icalkit.envs.household.catalog import OBJECT_TYPES

    rt = resolve(task.definition, task.params)
    for rel in rt.relations:
        tail = rt.components[rel["tail_entity_list"][0]]
        if tail.subtask is not None:
            continue
        want_tail = tail.conditions[tail.primary_condition]
        caps = [OBJECT_TYPES[o["objectType"]].capacity for o in objects if is_a(o, want_tail)]
        for key, det in zip(rel["head_entity_list"], rel["head_determiner_list"], strict=True):
            head = rt.components[key]
            if det != "all" or head.subtask is not None:
                continue
            n = sum(is_a(o, head.conditions[head.primary_condition]) for o in objects)
            room = max(caps, default=0) if rel["tail_determiner_list"][0] == "the" else sum(caps)
            if n > room:
                return f"{n} x {key} do not fit in/on {want_tail} (capacity {room})"
    return None


def make_task(task_type: str, params: Mapping[str, str] | None = None, *, split: str = "train",
              index: int = 0, seed: int = 0, room_type: str | None = None,
              scene_seed: int | None = None, grounded: bool = True) -> Task:
    """Build one task instance; unspecified choices are drawn deterministically.

    Args:
        task_type: a name from ``TASK_TYPES`` (e.g. ``"Boil X"``, ``"pick_and_place"``).
        params: friendly parameters, e.g. ``{"X": "Potato"}``; None draws them.
        split: train | valid_seen | valid_unseen.
        index, seed: identify the instance; the same values give the same task.
        room_type: room to use; None draws one of the task type's rooms.
        scene_seed: scene seed; None draws one.
        grounded: generate the scene to check the task starts unsolved and to mention locations.

    Raises:
        TaskSpecError: unknown task type, bad parameter (named with its allowed values), or no
            usable scene.
    """
    tt: TaskType = get_task_type(task_type)
    if split not in SPLITS:
        raise TaskSpecError(f"unknown split {split!r}; expected one of {SPLITS}")
    rng = random.Random(f"task/{tt.name}/{split}/{seed}/{index}")
    room = room_type or rng.choice(tt.rooms)
    friendly = choose_params(tt, room, rng, params)
    required, edits = tt.setup(friendly, room, rng)
    task = Task(
        task_id=f"{split}/{_slug(tt.name)}/{seed}-{index:05d}", task_type=tt.name,
        params=tt.positional(friendly), definition=tt.definition, instruction="", dialogue=[],
        room_type=room, scene_seed=rng.randrange(SCENE_SEEDS) if scene_seed is None else scene_seed,
        split=split, required_objects=required, initial_state=edits)
    objects = None
    if grounded:
        task, objects = _ground(task, rng, fixed_seed=scene_seed is not None)
    task.instruction, task.dialogue = write_instructions(tt.name, friendly, task.task_id, objects)
    return task


def sample_task(task_type: str, index: int, split: str, seed: int = 0, grounded: bool = True) -> Task:
    """The ``index``-th task of a type in a split (deterministic in all arguments)."""
    return make_task(task_type, split=split, index=index, seed=seed, grounded=grounded)


def task_from_id(task_id: str) -> Task:
    """The task a ``sample_task`` id names (``train/put_all_x_on_y/0-00003``), rebuilt.

    Raises:
        TaskSpecError: the id is not ``split/type/seed-index`` of a known task type.
    """
    parts = task_id.split("/")
    match = re.fullmatch(r"(\d+)-(\d+)", parts[-1]) if len(parts) == 3 else None
    names = {_slug(name): name for name in TASK_TYPES}
    if match is None or parts[1] not in names:
        raise TaskSpecError(f"task id {task_id!r} is not split/type/seed-index of a known task type")
    return sample_task(names[parts[1]], int(match.group(2)), parts[0], int(match.group(1)))


def sample_tasks(task_types: Iterable[str], n_per_type: int, split: str, seed: int = 0,
                 grounded: bool = True) -> list[Task]:
    """``n_per_type`` tasks of each type, in type order."""
    return [sample_task(t, i, split, seed, grounded) for t in task_types for i in range(n_per_type)]


def friendly_params(task: Task) -> dict[str, str]:
    """A task's parameters under their friendly names (``{"X": "Potato"}``)."""
    return get_task_type(task.task_type).friendly(task.params)
