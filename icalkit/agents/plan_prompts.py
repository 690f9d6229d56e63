"""The program planner's prompts as functions of (task, world, examples).

One source for the prompts the deployment planner sends and the prompts of the fine-tuning
pairs (:mod:`icalkit.data_gen.finetune_data`), so a tuned model is trained on exactly what it is
asked at deployment. Flat (LLM-Planner) prompts stay in the planner.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from icalkit.agents.api.docs import api_documentation
from icalkit.agents.context import (
    example_program,
    format_examples,
    planner_state,
    program_class_order,
    state_text,
    task_text,
)
from icalkit.agents.prompts import PromptTemplate, load_template
from icalkit.envs.household.state import World
from icalkit.envs.household.tasks.task import Task

ZERO_SHOT_EXAMPLES = ("(no examples) Think step by step: say what the task needs, which objects "
                      "matter and in which order to act, then write the program.")


@lru_cache(maxsize=8)
def template(name: str) -> PromptTemplate:
    """A planner template, loaded once per process."""
    return load_template(name)


@lru_cache(maxsize=1)
def api_text() -> str:
    """The API documentation shown in every program prompt."""
    return api_documentation()


def examples_text(examples: Sequence[Any]) -> str:
    """Retrieved examples as prompt text; the zero-shot instruction when there are none."""
    return format_examples(examples) if examples else ZERO_SHOT_EXAMPLES


def planner_state_text(world: World, task: Task, max_state_objects: int = 25) -> str:
    """The abstracted (task-relevant) state of ``world`` as the planner shows it."""
    return state_text(planner_state(world, task, limit=max_state_objects))


def program_prompt(task: Task, world: World, examples: Sequence[Any], use_dialogue: bool = True,
                   max_state_objects: int = 25) -> list[dict]:
    """Chat messages of the first planning prompt (template ``planner``) for ``task`` in ``world``."""
    return template("planner").render(api=api_text(), examples=examples_text(examples),
                                      task=task_text(task, use_dialogue),
                                      state=planner_state_text(world, task, max_state_objects))


def replan_program_prompt(task: Task, world: World, examples: Sequence[Any], program: str, completed: str,
                          error: str, use_dialogue: bool = True, max_state_objects: int = 25) -> list[dict]:
    """Chat messages of the re-planning prompt (template ``planner_replan``) after a failed program."""
    return template("planner_replan").render(
        api=api_text(), examples=examples_text(examples), task=task_text(task, use_dialogue),
        completed=completed or "(nothing)", error=error, program=program or "(none)",
        state=planner_state_text(world, task, max_state_objects))


def reground_classes(task: Task, world: World, example: Any, max_state_objects: int = 25) -> tuple[list[str], list[str]]:
    """(the classes ``example``'s program uses, in order of first use; the classes of the state the
    planner shows for ``task``): what a ``planner_reground`` prompt lists."""
    shown = planner_state(world, task, limit=max_state_objects)
    room = list(dict.fromkeys(a.get("label", oid.rsplit("_", 1)[0]) for oid, a in shown.items()))
    return program_class_order(example_program(example)), room


def reground_prompt(task: Task, example: Any, used: Sequence[str], room: Sequence[str],
                    use_dialogue: bool = True) -> list[dict]:
    """Chat messages asking which of ``example``'s object classes stand for which of the task's
    (template ``planner_reground``; ``planner.reground``): the example's goal sentence, the classes
    its program uses and the room's (:func:`reground_classes`), and the task."""
    return template("planner_reground").render(
        example_task=example.instruction_text(), example_objects=", ".join(used) or "(none)",
        task=task_text(task, use_dialogue), objects=", ".join(room) or "(none)")
