"""Data for the learned retriever: simulator-generated training pairs, kept apart from the hand-written test set.

Training pairs (:func:`training_pairs`) come from task instances the generator writes: two
dialogues of the same task type (different instances, template or human-like style), or a
dialogue and the goal sentence of its instance. Both sides are retrieval keys built by
:func:`~icalkit.memory.keys.key_text`, the text the memory embeds. The hand-written dialogues
(:mod:`icalkit.envs.household.tasks.hand_written`) are for measuring only: :func:`without_held_out`
drops the training pairs that contain any of their turns.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Collection, Sequence
from typing import Any

from icalkit.envs.household.tasks.hand_written import HumanDialogue
from icalkit.envs.household.tasks.instructions import write_instructions
from icalkit.envs.household.tasks.registry import TASK_TYPES, choose_params
from icalkit.memory.keys import key_text

TFD_TYPES = tuple(n for n, t in TASK_TYPES.items() if t.family == "teach")


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


# hand-written turns that are word for word one of the generators' own phrases, written by chance (round 30's
# test set asks for "a slice of lettuce and a slice of tomato", as the generator's salads do; round 37's "one slice
# of lettuce and one slice of tomato", as 208 of the request reader's 1,500 pairs do; rounds 36-41's sets say the
# other seven whole, and 95 of the retriever's and reader's pairs did too): no leakage
GENERATOR_PHRASES = frozenset({
    "a slice of lettuce and a slice of tomato", "one slice of lettuce and one slice of tomato",
    "two cooked slices of potato on a plate", "two cooked slices of tomato on a plate",
    "two cooked potato slices on a plate.", "three lettuce slices on a plate.", "put all the potatoes on one plate",
    "make a slice of toast and put it on a clean plate", "cup of coffee and some cooked potato"})


def held_out_turns(held_out: Sequence[HumanDialogue]) -> set[str]:
    """The turns no training text may hold (lower case): those longer than 30 characters that the generator does
    not say too (:data:`GENERATOR_PHRASES`); short stock phrases ("make sure the plate is clean") occur in both
    by chance."""
    return {t.strip().lower() for d in held_out for _, t in d.dialogue if len(t.strip()) > 30} - GENERATOR_PHRASES


def held_turn(text: str, turns: Collection[str]) -> str | None:
    """The first of ``turns`` (:func:`held_out_turns`) that ``text`` holds, case aside; None if it holds none."""
    text = text.lower()
    return next((t for t in turns if t in text), None)


def pair_text(row: dict[str, Any]) -> str:
    """A retriever pair's text, as the held-out check reads it: its anchor and positive."""
    return f"{row['anchor']}\n{row['positive']}"


def without_held_out(rows: Sequence[dict[str, Any]], held_out: Sequence[HumanDialogue],
                     text: Callable[[dict[str, Any]], str] = pair_text) -> tuple[list[dict[str, Any]], int]:
    """``rows`` less those whose ``text`` (:func:`pair_text`; a request-reading pair's: its own) holds a turn of a
    hand-written dialogue (:func:`held_out_turns`), and how many were dropped: the test sets never reach training.
    A generated text can say a blind writer's turn word for word by chance ("two cooked slices of potato on a
    plate"); it is dropped and counted, not fatal."""
    turns = held_out_turns(held_out)
    kept = [row for row in rows if not held_turn(text(row), turns)]
    return kept, len(rows) - len(kept)
