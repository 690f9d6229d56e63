"""Gymnasium wrapper of the household simulator (registered as ``icalkit/Household-v0``).

Actions: an int (index into :data:`ACTIONS`), an action name, or a dict
``{"action": int | str, "target": object id | None, "pixel": (x, y) | None}``. An interaction
without target or pixel uses the suitable object nearest the image centre.
Reward: 1.0 on the step at which the task's goal is first met, else 0.0.
Episodes terminate on Stop or success; they are truncated after ``max_steps`` steps or
``max_failures`` failed actions.

Speed: nothing is computed twice for the same state. Built start worlds are kept per task (a reset
copies one); the text state, scene graph and frame are remembered per (object state, agent pose),
where the object state is ``Simulator.state_id`` (recomputed only after an action changed it), so
they are reused after turning back or after a reset to a task seen before; goal progress is checked
once per object state. Code that edits ``env.world`` directly must call ``env.sim.mark_changed()``.
``obs_keys`` leaves out observation entries a user does not need (they are then not
computed at all); :meth:`HouseholdEnv.observation` gives any of them on request. For batch
collection use gymnasium's vector API: ``gymnasium.make_vec("icalkit/Household-v0", num_envs=8,
vectorization_mode="async", vector_kwargs={"shared_memory": False}, render_obs=False)`` (text
entries have no fixed size, so async envs pass observations by pipe; "sync" needs no kwargs).
"""

from __future__ import annotations

import string
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from icalkit.envs.household.actions import ACTIONS
from icalkit.envs.household.budget import TEACH_MAX_FAILURES, TEACH_MAX_STEPS, budget_exhausted
from icalkit.envs.household.observe import scene_graph, text_state
from icalkit.envs.household.render import render_frame
from icalkit.envs.household.scene import N_SEEN_LAYOUTS, build_world
from icalkit.envs.household.simulator import Simulator, StepResult
from icalkit.envs.household.state import World
from icalkit.envs.household.tasks.task import Task

TEXT_CHARSET = string.printable + "°–—…’“”×·"
TEXT_MAX = 200_000
TaskSampler = Callable[[np.random.Generator], Task]
OBS_KEYS = ("rgb", "segmentation", "text_state", "scene_graph", "last_action_success", "error")
WORLD_CACHE = 64  # start worlds kept (per process) so that resetting to a task seen before is a copy
FRAME_CACHE = 128  # frames kept per env, by (object state, pose); 14 MiB at 128x128
TEXT_CACHE = 8192  # (text state, scene graph) pairs kept per env, by (object state, pose)
GOAL_CACHE = 1024  # goal-checker results kept per env, by (task, object state)
_WORLDS: OrderedDict[str, World] = OrderedDict()
_WORLDS_LOCK = threading.Lock()


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
        obs_keys: the observation entries to compute and return (default: all of :data:`OBS_KEYS`);
            e.g. ``("rgb", "last_action_success", "error")`` for pixel-only agents.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 10}

    def __init__(self, frame_size: int = 128, render_obs: bool = True, max_steps: int = TEACH_MAX_STEPS,
                 max_failures: int = TEACH_MAX_FAILURES, task_sampler: TaskSampler | None = None,
                 render_mode: str | None = None, obs_keys: Sequence[str] | None = None) -> None:
        for name, value in (("frame_size", frame_size), ("max_steps", max_steps), ("max_failures", max_failures)):
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode {render_mode!r} is not supported; use None or 'rgb_array'")
        self.frame_size, self.render_obs, self.render_mode = frame_size, render_obs, render_mode
        self.max_steps, self.max_failures, self.task_sampler = max_steps, max_failures, task_sampler
        self.obs_keys = tuple(OBS_KEYS if obs_keys is None else obs_keys)
        unknown = [k for k in self.obs_keys if k not in OBS_KEYS]
        if unknown or not self.obs_keys or len(set(self.obs_keys)) != len(self.obs_keys):
            raise ValueError(f"obs_keys must be distinct names from {OBS_KEYS}, got {obs_keys!r}")
        text = spaces.Text(TEXT_MAX, min_length=0, charset=TEXT_CHARSET)
        name = spaces.Text(200, min_length=0, charset=TEXT_CHARSET)
        self.action_space = spaces.Discrete(len(ACTIONS))
        full = {
            "rgb": spaces.Box(0, 255, (frame_size, frame_size, 3), np.uint8),
            "segmentation": spaces.Box(0, np.iinfo(np.int32).max, (frame_size, frame_size), np.int32),
            "text_state": text,
            "scene_graph": spaces.Sequence(spaces.Tuple((name, name, name))),
            "last_action_success": spaces.Discrete(2),
            "error": text,
        }
        self.observation_space = spaces.Dict({k: full[k] for k in self.obs_keys})
        self.sim = Simulator()
        self.task: Task | None = None
        self.world: World | None = None
        self._blank = (np.zeros((frame_size, frame_size, 3), np.uint8), np.zeros((frame_size, frame_size), np.int32), [])
        self._succeeded = False
        self._frames: OrderedDict[tuple, tuple[np.ndarray, np.ndarray, list[str]]] = OrderedDict()
        self._texts: dict[tuple, tuple[str, tuple]] = {}
        self._goals: dict[tuple[str, int], Any] = {}  # (task repr, state id) -> GoalResult | None
        self._task_key = ""
        self._start_ids: dict[str, int] = {}  # task repr -> state id of its start world after reset

    # ------------------------------------------------------------------ gymnasium API

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[dict, dict]:
        """Start the task's episode (``options={"task": Task}``; default: the sampler or free play)
        from a copy of its start world: its scene with the initial state applied (:func:`start_world`)."""
        super().reset(seed=seed)
        task = (options or {}).get("task")
        if task is None:
            task = self.task_sampler(self.np_random) if self.task_sampler else free_play_task(
                int(self.np_random.integers(0, N_SEEN_LAYOUTS)))
        if not isinstance(task, Task):
            raise TypeError(f"options['task'] must be a Task, got {type(task).__name__}")
        self.task, self._task_key = task, repr(task)
        self.world = start_world(task, self._task_key)
        self.sim.reset(self.world, self._start_ids.get(self._task_key))
        if len(self._start_ids) >= WORLD_CACHE:
            self._start_ids.clear()
        self._start_ids[self._task_key] = self.sim.state_id
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

    def observation(self, keys: Sequence[str] | None = None) -> dict:
        """The current observation, e.g. after a program ran on ``self.sim`` through the executor.

        Args:
            keys: entries to return. Default: this env's ``obs_keys``, as ``step`` returns them
                (zero frames when ``render_obs`` is False). Given explicitly, any of
                :data:`OBS_KEYS`, and ``rgb`` / ``segmentation`` are rendered even when
                ``render_obs`` is False.
        """
        if self.world is None:
            raise RuntimeError("call reset() before observation()")
        if keys is None:
            return self._observe(True, "")
        keys = tuple(keys)
        unknown = [k for k in keys if k not in OBS_KEYS]
        if unknown:
            raise ValueError(f"unknown observation keys {unknown}; choose from {OBS_KEYS}")
        return self._observe(True, "", keys, render=True)

    def render(self) -> np.ndarray | None:
        """The current RGB frame (render_mode "rgb_array"), rendered if it was not yet."""
        if self.render_mode != "rgb_array":
            return None
        if self.world is None:
            return self._blank[0].copy()
        return self._frame()[0].copy()

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
        _, seg, ids = self._frame() if self.render_obs else self._blank
        if not (0 <= x < seg.shape[1] and 0 <= y < seg.shape[0]):
            raise ValueError(f"it is outside the {seg.shape[1]}x{seg.shape[0]} frame")
        k = int(seg[y, x])
        return ids[k - 1] if 0 < k <= len(ids) else None

    def _key(self) -> tuple[int, int, int, int, int]:
        """(object state id, agent pose): what a frame, text state or scene graph depends on."""
        a = self.world.agent
        return (self.sim.state_id, a.i, a.j, a.yaw, a.pitch)

    def _frame(self) -> tuple[np.ndarray, np.ndarray, list[str]]:
        """``render_frame`` of the current state (cached, LRU; the arrays must not be modified)."""
        key = self._key()
        frame = self._frames.get(key)
        if frame is None:
            frame = self._frames[key] = render_frame(self.world, self.frame_size)
            if len(self._frames) > FRAME_CACHE:
                self._frames.popitem(last=False)
        else:
            self._frames.move_to_end(key)
        return frame

    def _text(self) -> tuple[str, tuple]:
        """(text state, scene graph) of the current state (cached)."""
        key = self._key()
        found = self._texts.get(key)
        if found is None:
            if len(self._texts) >= TEXT_CACHE:
                self._texts.clear()
            visible = self.sim.visible_objects()
            graph = tuple(tuple(t) for t in scene_graph(self.world, visible))
            found = self._texts[key] = (text_state(self.world, visible), graph)
        return found

    def _observe(self, success: bool, error: str, keys: Sequence[str] | None = None,
                 render: bool | None = None) -> dict:
        """Observation entries ``keys`` (default: ``obs_keys``); frames are drawn when ``render``
        (default: ``render_obs``), else zero."""
        keys = self.obs_keys if keys is None else keys
        obs: dict[str, Any] = {}
        if "rgb" in keys or "segmentation" in keys:
            rgb, seg, _ = self._frame() if (self.render_obs if render is None else render) else self._blank
            if "rgb" in keys:
                obs["rgb"] = rgb.copy()
            if "segmentation" in keys:
                obs["segmentation"] = seg.copy()
        if "text_state" in keys or "scene_graph" in keys:
            text, graph = self._text()
            if "text_state" in keys:
                obs["text_state"] = text
            if "scene_graph" in keys:
                obs["scene_graph"] = graph
        if "last_action_success" in keys:
            obs["last_action_success"] = int(success)
        if "error" in keys:
            obs["error"] = error
        return obs

    def _info(self, result: StepResult) -> dict:
        info: dict[str, Any] = {"action": result.action, "target": result.target, "action_success": result.success,
                                "error": result.error, "steps": self.sim.steps, "failures": self.sim.failures,
                                "task_id": self.task.task_id if self.task else None,
                                "held": self.world.held}
        key = (self._task_key, self.sim.state_id)  # goal conditions depend on object state only
        if key not in self._goals:
            if len(self._goals) >= GOAL_CACHE:
                self._goals.clear()
            self._goals[key] = _check(self.task, self.world)
        goal = self._goals[key]
        if goal is not None:
            info["goal_progress"] = {"satisfied": goal.satisfied, "total": goal.total,
                                     "success": goal.success, "failure_descs": list(goal.failure_descs)}
        return info


def start_world(task: Task, key: str | None = None) -> World:
    """A fresh copy of ``build_world(task)``; built worlds are kept (LRU, :data:`WORLD_CACHE`) under
    ``key`` (default ``repr(task)``: every field of the task)."""
    key = repr(task) if key is None else key
    with _WORLDS_LOCK:
        world = _WORLDS.get(key)
        if world is not None:
            _WORLDS.move_to_end(key)
    if world is None:  # built outside the lock; two threads may both build it, both get equal worlds
        world = build_world(task)
        with _WORLDS_LOCK:
            _WORLDS[key] = world
            if len(_WORLDS) > WORLD_CACHE:
                _WORLDS.popitem(last=False)
    return world.copy()


def _check(task: Task | None, world: World):  # -> GoalResult | None
    if task is None or not task.definition:
        return None
    try:
        from icalkit.envs.household.tasks.checker import check_goal
    except ImportError:
        return None
    return check_goal(task, world.metadata())
