"""Build an environment by name; heavy backends are imported only when asked for."""

from __future__ import annotations

from typing import Any

import gymnasium

ENV_NAMES = ("household", "ai2thor", "alfworld")
_ALIASES = {"household": "household", "icalkit/household-v0": "household", "embedded": "household",
            "ai2thor": "ai2thor", "teach": "ai2thor", "alfworld": "alfworld"}


def make_env(name: str = "household", **kwargs: Any) -> gymnasium.Env:
    """Create an environment.

    Args:
        name: ``household`` (the embedded simulator; aliases ``embedded``, ``icalkit/Household-v0``),
            ``ai2thor`` or ``alfworld`` (not available in this build).
        **kwargs: passed to the environment's constructor (e.g. ``frame_size``, ``render_obs``).

    Raises:
        ValueError: unknown name (the message lists the available ones).
        RuntimeError: a known backend that cannot run here.
    """
    key = _ALIASES.get(str(name).strip().lower())
    if key is None:
        raise ValueError(f"unknown environment {name!r}; available: {', '.join(ENV_NAMES)}")
    if key == "ai2thor":
        raise RuntimeError(
            "the AI2-THOR backend needs a machine with a GPU and an X server / CloudRendering, plus the "
            "`ai2thor` package (`pip install ai2thor`); it is not wired up in icalkit yet — use "
            "make_env('household') for the embedded simulator")
    if key == "alfworld":
        raise RuntimeError("the ALFWorld backend is not available yet (it would need `pip install alfworld` "
                           "and its data); use make_env('household')")
    from icalkit.envs.household.env import HouseholdEnv

    return HouseholdEnv(**kwargs)
