"""AI2-THOR behind the household Env interface (``ai2thor.controller.Controller``, TEACh floor plans).

Needs the ``ai2thor`` package and a machine that can start its Unity build (a GPU with an X server,
or ``platform=CloudRendering``); the build downloads on first use. Actions are the TEACh primitives of
the household simulator (``{"action": "Pickup", "target": "Mug|-01.76|+00.90|-00.62"}`` or
``"Turn Left"``); ``{"action": "GoTo", "target": id}`` walks the shortest path over THOR's reachable
positions. ``info["goal_progress"]`` comes from the project's TEACh checker on THOR's metadata.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from icalkit.envs.household.tasks.task import Task
from icalkit.envs.thor.actions import ActionError, thor_step
from icalkit.envs.thor.convert import readable_ids, scene_graph, text_state, to_teach_metadata
from icalkit.envs.thor.navigation import NoPath, plan_path

INSTALL_HINT = ("the AI2-THOR backend needs `pip install ai2thor` and a machine that can start its Unity build "
                "(GPU + X server, or platform=CloudRendering); see docs/backends.md")


class ThorUnavailable(ImportError, RuntimeError):
    """``ai2thor`` is not installed (a backend that cannot run here)."""


def require_ai2thor() -> Any:
    """The ``ai2thor.controller`` module, or a clear error saying what is missing."""
    try:
        from ai2thor import controller
    except ImportError as exc:
        raise ThorUnavailable(f"{INSTALL_HINT} ({exc})") from exc
    return controller


def goal_progress(task: Task, teach_objects: list[dict]) -> dict:
    """TEACh goal conditions of ``task`` on converted THOR metadata (satisfied / total / unmet descriptions)."""
    from icalkit.envs.household.tasks.checker import check_goal

    goal = check_goal(task, teach_objects)
    return {"satisfied": goal.satisfied, "total": goal.total, "success": goal.success,
            "failure_descs": list(goal.failure_descs)}


class ThorEnv(gym.Env):
    """AI2-THOR with the household Env's observation and info keys.

    Args:
        floor_plan: default scene (``FloorPlan1`` ...); a task's ``params["floor_plan"]`` overrides it.
        frame_size: width/height of the frames.
        max_steps, max_failures: TEACh budgets.
        controller_kwargs: passed to ``Controller`` (e.g. ``platform=CloudRendering``).
    """

    metadata = {"render_modes": ["rgb_array"]}

    def __init__(self, floor_plan: str = "FloorPlan1", frame_size: int = 300, max_steps: int = 1000,
                 max_failures: int = 30, render_obs: bool = True, **controller_kwargs: Any) -> None:
        controller = require_ai2thor()
        self.floor_plan, self.max_steps, self.max_failures = floor_plan, max_steps, max_failures
        self.controller = controller.Controller(scene=floor_plan, gridSize=0.25, width=frame_size, height=frame_size,
                                                renderInstanceSegmentation=render_obs, **controller_kwargs)
        self.task: Task | None = None
        self.objects: list[dict] = []
        self.index: dict[str, str] = {}
        self.steps = self.failures = 0
        self._event: Any = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[dict, dict]:
        super().reset(seed=seed)
        self.task = (options or {}).get("task")
        scene = (self.task.params.get("floor_plan") if self.task else None) or self.floor_plan
        self._event = self.controller.reset(scene=scene)
        self.objects = to_teach_metadata(self._event.metadata["objects"])
        self.index = readable_ids(self.objects)
        self.steps = self.failures = 0
        return self._observe(), self._info("Reset", True, "")

    def step(self, action: str | dict) -> tuple[dict, float, bool, bool, dict]:
        name, target = (action.get("action"), action.get("target")) if isinstance(action, dict) else (action, None)
        ok, error = True, ""
        try:
            if name == "GoTo":
                for prim in self._path_to(target):
                    self._event = self.controller.step(**thor_step(prim))
                    self.steps += 1
            else:
                kwargs = thor_step(name, target)
                if kwargs is not None:
                    self._event = self.controller.step(**kwargs)
                self.steps += 1
            ok = bool(self._event.metadata["lastActionSuccess"])
            error = self._event.metadata.get("errorMessage", "") if not ok else ""
        except (ActionError, NoPath) as exc:
            ok, error = False, str(exc)
            self.steps += 1
        self.failures += not ok
        self.objects = to_teach_metadata(self._event.metadata["objects"], self.objects)
        info = self._info(name, ok, error)
        terminated = name == "Stop" or info.get("goal_progress", {}).get("success", False)
        truncated = not terminated and (self.steps >= self.max_steps or self.failures >= self.max_failures)
        return self._observe(ok, error), float(terminated and name != "Stop"), terminated, truncated, info

    def _path_to(self, target: str | None) -> list[str]:
        obj = next((o for o in self.objects if o["objectId"] == target), None)
        if obj is None:
            raise ActionError(f"GoTo: no object {target!r} in {self.floor_plan}")
        reach = self.controller.step(action="GetReachablePositions").metadata["actionReturn"]
        agent = self._event.metadata["agent"]
        return plan_path(reach, agent["position"], agent["rotation"]["y"], obj["position"], name=target)

    def _observe(self, ok: bool = True, error: str = "") -> dict:
        frame = getattr(self._event, "frame", None)
        return {"rgb": np.asarray(frame) if frame is not None else None,
                "text_state": text_state({**self._event.metadata, "objects": self.objects}, self.index),
                "scene_graph": tuple(scene_graph(self.objects, self.index)),
                "last_action_success": int(ok), "error": error}

    def _info(self, action: str, ok: bool, error: str) -> dict:
        info = {"action": action, "action_success": ok, "error": error, "steps": self.steps,
                "failures": self.failures, "task_id": self.task.task_id if self.task else None}
        if self.task is not None and self.task.definition:
            info["goal_progress"] = goal_progress(self.task, self.objects)
        return info

    def close(self) -> None:
        self.controller.stop()
