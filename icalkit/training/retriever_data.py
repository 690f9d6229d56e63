"""Data for the learned retriever: simulator-generated training pairs and the hand-written test set.

Training pairs (:func:`training_pairs`) come from task instances the generator writes: two
dialogues of the same task type (different instances, template or human-like style), or a
dialogue and the goal sentence of its instance. Both sides are retrieval keys built by
:func:`~icalkit.memory.keys.key_text`, the text the memory embeds. The hand-written dialogues
(:func:`load_human_dialogues`: the test set, and :data:`DEV_DIALOGUES`, the set settings are chosen
on) are for measuring only: :func:`check_held_out` refuses training pairs that contain any of
their turns.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from icalkit.envs.household.tasks.instructions import write_instructions
from icalkit.envs.household.tasks.registry import TASK_TYPES, TaskSpecError, choose_params
from icalkit.envs.household.tasks.sampler import make_task
from icalkit.envs.household.tasks.task import Task
from icalkit.memory.keys import key_text

HUMAN_DIALOGUES = Path(__file__).resolve().parents[2] / "tests" / "data" / "human_dialogues" / "tfd_dialogues.yaml"
# hand-written too, for choosing training settings (the test set above is scored once per choice)
DEV_DIALOGUES = HUMAN_DIALOGUES.with_name("dev_dialogues.yaml")
TFD_TYPES = tuple(n for n, t in TASK_TYPES.items() if t.family == "teach")


class RetrieverDataError(ValueError):
    """Malformed hand-written dialogue file, or training data that leaks the test set."""


@dataclass(frozen=True)
class HumanDialogue:
    """One hand-written dialogue: what it means (task type + friendly params) and its turns."""

    id: str
    task_type: str
    params: dict[str, str]
    dialogue: list[tuple[str, str]]


def load_human_dialogues(path: str | Path = HUMAN_DIALOGUES) -> list[HumanDialogue]:
    """Read and check the hand-written dialogue YAML (task types and params must be valid)."""
    import yaml

    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise RetrieverDataError(f"cannot read hand-written dialogues {path}: {exc}") from exc
    if not isinstance(raw, list) or not raw:
        raise RetrieverDataError(f"{path} must be a non-empty list of dialogues")
    out = []
    for i, item in enumerate(raw):
        where = f"{path.name} entry {i} ({item.get('id', '?') if isinstance(item, dict) else item!r})"
        if not isinstance(item, dict) or not {"id", "task_type", "params", "dialogue"} <= set(item):
            raise RetrieverDataError(f"{where}: needs id, task_type, params and dialogue")
        turns = item["dialogue"]
        if not turns or any(not isinstance(t, list) or len(t) != 2 or t[0] not in ("Commander", "Driver")
                            for t in turns):
            raise RetrieverDataError(f"{where}: dialogue must be a list of [Commander|Driver, text] pairs")
        try:
            human_task(HumanDialogue(str(item["id"]), item["task_type"], dict(item["params"]), []), grounded=False)
        except TaskSpecError as exc:
            raise RetrieverDataError(f"{where}: {exc}") from exc
        out.append(HumanDialogue(str(item["id"]), item["task_type"], {k: str(v) for k, v in item["params"].items()},
                                 [(str(s), str(t)) for s, t in turns]))
    return out


def human_task(d: HumanDialogue, index: int = 0, grounded: bool = True) -> Task:
    """A task instance with the dialogue's type and params (valid_unseen split), its dialogue replaced."""
    tt = TASK_TYPES.get(d.task_type)
    if tt is None:
        raise TaskSpecError(f"unknown task type {d.task_type!r}; available: {sorted(TASK_TYPES)}")
    errors = []
    for room in tt.rooms:
        try:
            task = make_task(d.task_type, d.params, split="valid_unseen", index=index, seed=7, room_type=room,
                             grounded=grounded)
        except TaskSpecError as exc:
            errors.append(str(exc))
            continue
        task.dialogue = list(d.dialogue)
        return task
    raise TaskSpecError("; ".join(errors))


def _instance(task_type: str, rng: random.Random, style: str, seed: str) -> tuple[str, list[tuple[str, str]]]:
    tt = TASK_TYPES[task_type]
    params = choose_params(tt, rng.choice(tt.rooms), rng)
    return write_instructions(task_type, params, seed, style=style)


def training_pairs(task_types: Sequence[str], n_per_type: int, seed: int = 0, keys: Sequence[str] = ("commander",),
                   human_share: float = 0.5, goal_share: float = 0.25) -> list[dict[str, Any]]:
    """``n_per_type`` (anchor, positive, task_type) rows per task type.

    The anchor is a dialogue's key text; the positive is another instance's dialogue of the same
    type (or, with probability ``goal_share``, the anchor instance's goal sentence). Each dialogue
    is human-like with probability ``human_share``; key kinds are drawn from ``keys``.
    """
    rng = random.Random(f"retriever-pairs/{seed}")
    rows = []
    for task_type in task_types:
        for i in range(n_per_type):
            style = lambda: "human" if rng.random() < human_share else "template"  # noqa: E731
            goal, turns = _instance(task_type, rng, style(), f"pairs/{seed}/{task_type}/{i}/a")
            anchor = key_text(goal, turns, rng.choice(keys))
            if rng.random() < goal_share:
                positive = goal
            else:
                goal_b, turns_b = _instance(task_type, rng, style(), f"pairs/{seed}/{task_type}/{i}/b")
                positive = key_text(goal_b, turns_b, rng.choice(keys))
            rows.append({"anchor": anchor, "positive": positive, "task_type": task_type})
    rng.shuffle(rows)
    return rows


def check_held_out(rows: Sequence[dict[str, Any]], held_out: Sequence[HumanDialogue]) -> None:
    """Raise if any training text contains a turn of a hand-written dialogue (test leakage).

    Turns of 30 characters or less are not checked: short stock phrases ("make sure the plate is
    clean") occur in both by chance.
    """
    turns = {t.strip().lower() for d in held_out for _, t in d.dialogue if len(t.strip()) > 30}
    for row in rows:
        for col in ("anchor", "positive"):
            text = row[col].lower()
            leaked = next((t for t in turns if t in text), None)
            if leaked:
                raise RetrieverDataError(f"training text contains the hand-written turn {leaked!r}: "
                                         "the hand-written dialogues are a held-out test set")
