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
            ``alfworld`` (TextWorld's PDDL engine with ALFRED's domain; the ``alfworld`` extra) or
            ``ai2thor`` (needs a GPU machine; see :mod:`icalkit.envs.thor`).
        **kwargs: passed to the environment's constructor (e.g. ``frame_size``, ``render_obs``).

    Raises:
        ValueError: unknown name (the message lists the available ones).
        RuntimeError: a known backend that cannot run here.
        ImportError: the optional dependency of a backend is missing (the message says how to install it).
    """
    key = _ALIASES.get(str(name).strip().lower())
    if key is None:
        raise ValueError(f"unknown environment {name!r}; available: {', '.join(ENV_NAMES)}")
    if key == "ai2thor":
        from icalkit.envs.thor.env import ThorEnv

        return ThorEnv(**kwargs)  # ImportError naming the install when ai2thor is missing
    if key == "alfworld":
        from icalkit.envs.alfworld.engine import require_textworld
        from icalkit.envs.alfworld.env import AlfworldEnv

        require_textworld()  # a missing extra fails here, naming the install command
        return AlfworldEnv(**kwargs)
    from icalkit.envs.household.env import HouseholdEnv

    return HouseholdEnv(**kwargs)
