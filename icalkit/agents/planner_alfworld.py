"""LLM-Planner (flat mode) on ALFWorld games: kNN examples, a flat plan of text commands, grounded re-planning.

The same prompts as the household flat planner (``planner_flat`` / ``planner_flat_replan``); the
steps are the engine's commands (``go to fridge 1``). Examples are (instruction, expert plan) pairs of
other games retrieved by instruction similarity (the task's own game excluded). The plan runs command
by command; a command the engine does not admit stops it and triggers a re-plan that lists the steps
done, the error and the objects observed so far (up to ``max_replans``). A plan that runs out is the
agent's claim of completion; success is the engine's ``won`` (evaluation only).
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from icalkit.agents.llm_session import CallStats, LLMSession
from icalkit.agents.parsing import ParseError
from icalkit.agents.prompts import load_template
from icalkit.envs.alfworld.commands import COMMAND_HELP, STOP, parse_command


def parse_command_plan(text: str) -> list[str]:
    """Every line of an answer that is a command, in order (up to a Stop); ParseError when none is."""
    if not isinstance(text, str):
        raise ParseError(f"expected text, got {type(text).__name__}")
    body = re.split(r"^\s*plan\s*:", text, maxsplit=1, flags=re.I | re.M)[-1]
    steps = []
    for line in re.split(r"[\n;]+", body):
        try:
            command = parse_command(line)
        except ValueError:
            continue
        if command == STOP:
            break
        steps.append(command)
    if not steps:
        raise ParseError(f"no command could be read; write one command per line: {COMMAND_HELP}")
    return steps


OBJECT_NAME = re.compile(r"\b[a-z]+ \d+\b")  # "fridge 1", "apple 2": what an observation names


def goal_text(obs_text: str) -> str:
    """The goal sentence of a game's first observation (after "Your task is to:")."""
    return obs_text.rsplit("Your task is to:", 1)[-1].strip()


def step_error(command: str, obs: dict) -> str:
    """How a failed command reads in the re-plan prompt (deployment and training pairs alike)."""
    return f"`{command}`: {obs['error']}"


@dataclass
class PlanExample:
    """One (instruction, flat plan) example, e.g. another game's expert plan."""

    task_id: str
    instruction: str
    plan: list[str]


@dataclass
class PromptState:
    """What the flat planner's prompts show for one game: goal, retrieved examples, objects seen so far."""

    goal: str
    examples: list[PlanExample]
    seen: set[str]

    def values(self) -> dict[str, str]:
        return {"actions": COMMAND_HELP, "examples": AlfworldFlatPlanner.examples_text(self.examples),
                "task": self.goal, "objects": ", ".join(sorted(self.seen)) or "(none)"}


class AlfworldFlatPlanner:
    """LLM-Planner on ALFWorld; one instance plans many games.

    Args:
        llm_session: model with sampling settings.
        examples: the example pool (instruction, plan); empty means zero-shot.
        embedder: text embedder with ``embed_text`` (normalised vectors) for kNN retrieval.
        k: examples per prompt.
        max_replans: re-plans after a failed command.
    """

    def __init__(self, llm_session: LLMSession, examples: Sequence[PlanExample], embedder: Any = None,
                 k: int = 3, max_replans: int = 3) -> None:
        if examples and embedder is None:
            raise ValueError("kNN examples need an embedder (or pass no examples for zero-shot)")
        self.llm, self.examples, self.k, self.max_replans = llm_session, list(examples), k, max_replans
        self.vectors = embedder.embed_text([e.instruction for e in self.examples]) if self.examples else None
        self.embedder = embedder
        self.t_plan, self.t_replan = load_template("planner_flat"), load_template("planner_flat_replan")

    def retrieve(self, instruction: str, exclude: str) -> list[PlanExample]:
        """The ``k`` examples whose instructions are most similar (the task's own excluded)."""
        if not self.examples:
            return []
        scores = self.vectors @ np.asarray(self.embedder.embed_text([instruction]))[0]
        order = [i for i in np.argsort(-scores) if self.examples[i].task_id != exclude]
        return [self.examples[i] for i in order[:self.k]]

    @staticmethod
    def examples_text(examples: Sequence[PlanExample]) -> str:
        return "\n\n".join(f"Task: {e.instruction}\nPlan:\n" + "\n".join(e.plan) for e in examples) or "(no examples)"

    def start(self, obs_text: str, task_id: str, instruction: str | None = None, default_goal: str = "") -> PromptState:
        """The prompt state after ``reset``: the goal (``instruction``, else the observation's "Your task is
        to:", else ``default_goal``), the k examples retrieved for it (``task_id``'s own excluded) and the
        objects the first observation names. Training pairs are built with the same function."""
        goal = instruction or goal_text(obs_text) or default_goal
        examples = self.retrieve(goal, task_id)
        return PromptState(goal, examples, set(OBJECT_NAME.findall(obs_text)))

    def plan_prompt(self, state: PromptState) -> list[dict[str, str]]:
        """The first prompt: examples, task, visible objects."""
        return self.t_plan.render(**state.values())

    def replan_prompt(self, state: PromptState, done: Sequence[str], error: str) -> list[dict[str, str]]:
        """The grounded re-plan prompt: steps done, the failed step's error, the objects observed so far."""
        return self.t_replan.render(**state.values(), completed="\n".join(done) or "(nothing)", error=error)

    def run_episode(self, env: Any, game: Any, instruction: str | None = None) -> dict[str, Any]:
        """Plan and play one game on an :class:`~icalkit.envs.alfworld.env.AlfworldEnv`; returns its record."""
        start, stats = time.perf_counter(), CallStats()
        obs, info = env.reset(options={"game": game})
        task, init = env.task, info["goal_progress"]
        state = self.start(obs["text"], task.task_id, instruction, task.instruction)
        examples = state.examples
        answer = self.llm.ask([self.plan_prompt(state)], parse_command_plan, self.t_plan.prompt_id, [stats])[0]
        plans, errors, done, replans, failed = [], [], [], 0, 0
        for attempt in range(self.max_replans + 1):
            error = None
            if answer.value is None:
                failed += 1
                error = f"the answer could not be read ({answer.error})"
            else:
                plans.append(answer.value)
                for command in answer.value:
                    obs, _, terminated, truncated, info = env.step(command)
                    state.seen |= set(OBJECT_NAME.findall(obs["text"]))
                    if not obs["last_action_success"]:
                        failed += 1
                        error = step_error(command, obs)
                        break
                    done.append(command)
                    if terminated or truncated:
                        break
            if error is None or info.get("won") or env.steps >= env.max_steps:
                break
            errors.append(error)
            if attempt == self.max_replans:
                break
            replans += 1
            answer = self.llm.ask([self.replan_prompt(state, done, error)], parse_command_plan,
                                  self.t_replan.prompt_id, [stats])[0]
        goal_state = info["goal_progress"]
        return {"task_id": task.task_id, "task_type": task.task_type, "split": task.split, "mode": "flat",
                "success": bool(info.get("won")), "satisfied": goal_state["satisfied"], "total": goal_state["total"],
                "init_satisfied": init["satisfied"], "init_total": init["total"],
                "steps": env.steps, "ref_len": info["reference_length"], "attempts": replans + 1, "replans": replans,
                "failed_attempts": failed, "model": self.llm.model_name, "llm": stats.to_dict(),
                "retrieved": [e.task_id for e in examples], "programs": ["\n".join(p) for p in plans],
                "errors": errors, "oracle": {"goal_feedback": False, "object_map": False},
                "wall_s": time.perf_counter() - start}
