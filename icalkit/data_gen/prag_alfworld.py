"""P-RAG on ALFWorld games: a :class:`~icalkit.data_gen.prag.StepEpisode` over the ALFWorld engine.

The step-wise agent, retrieval and rounds are P-RAG's own; only the world differs: the model sees the
engine's admissible commands and its text feedback, answers one command (``go to fridge 1``), and
an inadmissible command is a failed step naming it. ``done`` is the agent's Stop (or, with
``oracle_success``, the engine's ``won``); goal-condition counts come from the project's checker.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from icalkit.data_gen.prag import EMPTY_VIEW, PragConfig, StepEpisode
from icalkit.envs.alfworld.commands import parse_command
from icalkit.envs.alfworld.env import AlfworldEnv, load_task
from icalkit.envs.household.tasks.task import Task

MAX_COMMANDS_SHOWN = 40


class AlfworldEpisode(StepEpisode):
    """One P-RAG episode on one ALFWorld game (``game`` is its ``game.tw-pddl``)."""

    parse = staticmethod(parse_command)

    def __init__(self, task: Task, cfg: PragConfig, game: str | Path, max_steps: int = 1000,
                 max_failures: int = 1000) -> None:
        self.task, self.cfg = task, cfg
        self.env = AlfworldEnv(max_steps=max_steps, max_failures=max_failures)
        obs, info = self.env.reset(options={"game": game})
        self.last_text, self.truncated = obs["text"], False
        self.start_trajectory()

    def scene_graph(self) -> str:
        graph = self.env.observation()["scene_graph"]
        return "; ".join(f"{s} {r} {o}" for s, r, o in graph) or EMPTY_VIEW

    def goal_result(self):  # -> GoalResult: the checker's counts, the engine's success
        goal = self.env.goal_progress()
        return dataclasses.replace(goal, success=self.env.won)

    def action_space(self) -> str:
        commands = [c for c in self.env.admissible_commands if c != "help"]
        more = f", ... ({len(commands) - MAX_COMMANDS_SHOWN} more)" if len(commands) > MAX_COMMANDS_SHOWN else ""
        return "; ".join(commands[:MAX_COMMANDS_SHOWN]) + more + "; Stop (when the task is done)"

    def observation(self, max_objects: int) -> str:
        return f"{self.last_text[-600:]} ({self.env.observation()['text_state']})"

    def act(self, action: str) -> tuple[str, bool]:
        obs, _, _, truncated, _ = self.env.step(action)
        self.last_text = obs["text"] if obs["last_action_success"] else obs["error"]
        outcome = "ok" if obs["last_action_success"] else f"failed: {obs['error'][:160]}"
        return outcome, truncated

    def steps_taken(self) -> int:
        return self.env.steps

    def oracle(self) -> dict:
        return {"success_flag": self.cfg.oracle_success, "object_map": False}


@dataclasses.dataclass
class AlfworldGames:
    """The games of a P-RAG run: each task's game file; called as P-RAG's ``episode_factory``."""

    games: dict[str, Path]
    ref_lens: dict[str, int]
    plans: dict[str, list[str]]  # the engine's expert plan of each game

    @classmethod
    def load(cls, paths: Sequence[str | Path]) -> tuple[AlfworldGames, list[Task]]:
        """Tasks and expert reference lengths of game files (the engine plans each game once)."""
        games, refs, plans, tasks = {}, {}, {}, []
        env = AlfworldEnv()
        for path in paths:
            task, _ = load_task(path)
            _, info = env.reset(options={"game": path})
            games[task.task_id], refs[task.task_id] = Path(path), info["reference_length"]
            plans[task.task_id] = info["expert_plan"]
            tasks.append(task)
        return cls(games, refs, plans), tasks

    def __call__(self, task: Task, cfg: PragConfig, limits=None) -> AlfworldEpisode:
        api = getattr(limits, "api", None)
        steps = getattr(api, "max_steps", 1000)
        return AlfworldEpisode(task, cfg, self.games[task.task_id], max_steps=steps,
                               max_failures=getattr(api, "max_failures", steps))
