"""Gymnasium wrapper of the household simulator (registered as ``icalkit/Household-v0``).

Actions: an int (index into :data:`ACTIONS`), an action name, or a dict
``{"action": int | str, "target": object id | None, "pixel": (x, y) | None}``. An interaction
without target or pixel uses the suitable object nearest the image centre.
Reward: 1.0 on the step at which the task's goal is first met, else 0.0.
Episodes terminate on Stop or success; they are truncated after ``max_steps`` steps or
``max_failures`` failed actions.
"""

from __future__ import annotations

import string
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from icalkit.envs.household.actions import ACTIONS
from icalkit.envs.household.budget import TEACH_MAX_FAILURES, TEACH_MAX_STEPS, budget_exhausted
from icalkit.envs.household.scene import N_SEEN_LAYOUTS, build_world
from icalkit.envs.household.simulator import Simulator, StepResult
from icalkit.envs.household.state import World
from icalkit.envs.household.tasks.task import Task

TEXT_CHARSET = string.printable + "°–—…’“”×·"
TEXT_MAX = 200_000
TaskSampler = Callable[[np.random.Generator], Task]


def free_play_task(scene_seed: int, room_type: str = "kitchen") -> Task:
    """A task without goal conditions (exploration / free play) in a train scene."""
    return Task(task_id=f"free_play/{room_type}/{scene_seed}", task_type="free_play", params={},
                definition="", instruction="Explore the room.", dialogue=[], room_type=room_type,
                scene_seed=scene_seed, split="train")


class HouseholdEnv(gym.Env):
    """Embedded household simulator with AI2-THOR / TEACh semantics.

    Args:
        frame_size: side of the square RGB / segmentation frames (pixels).
        render_obs: draw frames (False: zero frames, fast text-only episodes).
        max_steps: truncate after this many steps.
        max_failures: truncate after this many failed actions.
        task_sampler: ``f(np_random) -> Task`` used when reset gets no task (default: free play).
        render_mode: None or "rgb_array".
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 10}

    def __init__(self, frame_size: int = 128, render_obs: bool = True, max_steps: int = TEACH_MAX_STEPS,
                 max_failures: int = TEACH_MAX_FAILURES, task_sampler: TaskSampler | None = None,
                 render_mode: str | None = None) -> None:
        for name, value in (("frame_size", frame_size), ("max_steps", max_steps), ("max_failures", max_failures)):
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode {render_mode!r} is not supported; use None or 'rgb_array'")
        self.frame_size, self.render_obs, self.render_mode = frame_size, render_obs, render_mode
        self.max_steps, self.max_failures, self.task_sampler = max_steps, max_failures, task_sampler
        text = spaces.Text(TEXT_MAX, min_length=0, charset=TEXT_CHARSET)
        name = spaces.Text(200, min_length=0, charset=TEXT_CHARSET)
        self.action_space = spaces.Discrete(len(ACTIONS))
        self.observation_space = spaces.Dict({
            "rgb": spaces.Box(0, 255, (frame_size, frame_size, 3), np.uint8),
            "segmentation": spaces.Box(0, np.iinfo(np.int32).max, (frame_size, frame_size), np.int32),
            "text_state": text,
            "scene_graph": spaces.Sequence(spaces.Tuple((name, name, name))),
            "last_action_success": spaces.Discrete(2),
            "error": text,
        })
        self.sim = Simulator()
        self.task: Task | None = None
        self.world: World | None = None
        self._frame = (np.zeros((frame_size, frame_size, 3), np.uint8), np.zeros((frame_size, frame_size), np.int32), [])
        self._succeeded = False

    # ------------------------------------------------------------------ gymnasium API

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[dict, dict]:
        """Generate the task's scene and apply its initial state (``options={"task": Task}``)."""
        super().reset(seed=seed)
        task = (options or {}).get("task")
        if task is None:
            task = self.task_sampler(self.np_random) if self.task_sampler else free_play_task(
                int(self.np_random.integers(0, N_SEEN_LAYOUTS)))
        if not isinstance(task, Task):
            raise TypeError(f"options['task'] must be a Task, got {type(task).__name__}")
        self.task = task
        self.world = build_world(task)
        self.sim.reset(self.world)
        self.sim.pixel_to_id = self._pixel_to_id
        self._succeeded = False
        info = self._info(StepResult(True, "", "Reset", None, False))
        return self._observe(True, ""), info

    def step(self, action: int | str | dict) -> tuple[dict, float, bool, bool, dict]:
        """Apply one action; see the module docstring for the accepted forms."""
        if self.world is None:
            raise RuntimeError("call reset() before step()")
        name, target, pixel = self._parse(action)
        result = self.sim.step(name, target, pixel)
        info = self._info(result)
        progress = info.get("goal_progress", {})
        newly = bool(progress.get("success")) and not self._succeeded
        self._succeeded |= newly
        terminated = (result.action == "Stop" and result.success) or self._succeeded
        truncated = not terminated and budget_exhausted(
            self.sim.steps, self.sim.failures, self.max_steps, self.max_failures) is not None
        return self._observe(result.success, result.error), float(newly), terminated, truncated, info

    def observation(self) -> dict:
        """The current observation, e.g. after a program ran on ``self.sim`` through the executor."""
        if self.world is None:
            raise RuntimeError("call reset() before observation()")
        return self._observe(True, "")

    def render(self) -> np.ndarray | None:
        """The last RGB frame (render_mode "rgb_array")."""
        if self.render_mode != "rgb_array":
            return None
        if not self.render_obs and self.world is not None:
            from icalkit.envs.household.render import render_frame

            return render_frame(self.world, self.frame_size)[0]
        return self._frame[0]

    # ------------------------------------------------------------------ helpers

    def _parse(self, action: Any) -> tuple[Any, Any, Any]:
        target = pixel = None
        if isinstance(action, dict):
            target, pixel = action.get("target"), action.get("pixel")
            action = action.get("action")
        if isinstance(action, (int, np.integer)) and not isinstance(action, bool):
            if not 0 <= action < len(ACTIONS):
                return f"action index {int(action)} (valid: 0..{len(ACTIONS) - 1})", target, pixel
            action = ACTIONS[int(action)]
        return action, target, pixel

    def _pixel_to_id(self, x: int, y: int) -> str | None:
        seg, ids = self._frame[1], self._frame[2]
        if not (0 <= x < seg.shape[1] and 0 <= y < seg.shape[0]):
            raise ValueError(f"it is outside the {seg.shape[1]}x{seg.shape[0]} frame")
        k = int(seg[y, x])
        return ids[k - 1] if 0 < k <= len(ids) else None

    def _observe(self, success: bool, error: str) -> dict:
        world = self.world
        if self.render_obs:
            from icalkit.envs.household.render import render_frame

            self._frame = render_frame(world, self.frame_size)
        visible = self.sim.visible_objects()
        text, graph = _describe(world, visible)
        rgb, seg = (self._frame[0], self._frame[1]) if self.render_obs else (
            np.zeros_like(self._frame[0]), np.zeros_like(self._frame[1]))
        return {"rgb": rgb, "segmentation": seg, "text_state": text,
                "scene_graph": graph, "last_action_success": int(success), "error": error}

    def _info(self, result: StepResult) -> dict:
        info: dict[str, Any] = {"action": result.action, "target": result.target, "action_success": result.success,
                                "error": result.error, "steps": self.sim.steps, "failures": self.sim.failures,
                                "task_id": self.task.task_id if self.task else None,
                                "held": self.world.held}
        goal = _check(self.task, self.world)
        if goal is not None:
            info["goal_progress"] = {"satisfied": goal.satisfied, "total": goal.total,
                                     "success": goal.success, "failure_descs": list(goal.failure_descs)}
        return info


def _describe(world: World, visible: list[str]) -> tuple[str, tuple[tuple[str, str, str], ...]]:
    """Text state and scene graph from the observation module, or a plain listing without it."""
    try:
        from icalkit.envs.household.observe import scene_graph, text_state
    except ImportError:
        held = f"Holding: {world.held or 'nothing'}."
        return "Visible: " + ", ".join(visible) + ". " + held, ()
    return text_state(world, visible), tuple(tuple(t) for t in scene_graph(world, visible))


def _check(task: Task | None, world: World):  # -> GoalResult | None
    if task is None or not task.definition:
        return None
    try:
        from icalkit.envs.household.tasks.checker import check_goal
    except ImportError:
        return None
    return check_goal(task, world.metadata())
