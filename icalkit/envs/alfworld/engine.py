"""The optional TextWorld / ALFWorld dependency: lazy import, shipped domain and grammar, game loading."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

INSTALL_HINT = "install the extra with `make alfworld-setup` (or `pip install 'icalkit[alfworld]'`)"


class AlfworldUnavailable(ImportError, RuntimeError):
    """The ``alfworld`` / ``textworld[pddl]`` packages are not installed (a backend that cannot run here)."""


class GameFileError(ValueError):
    """A game file that cannot be read or parsed (the message names the file)."""


def require_textworld() -> Any:
    """The ``textworld.envs.pddl`` module, or a clear error saying how to install it."""
    try:
        import fast_downward  # noqa: F401
        from textworld.envs import pddl
    except ImportError as exc:
        raise AlfworldUnavailable(f"the ALFWorld backend needs the `alfworld` and `textworld[pddl]` packages "
                                  f"({exc}); {INSTALL_HINT}") from exc
    return pddl


def domain_files() -> tuple[Path, Path]:
    """Paths of ``alfred.pddl`` and ``alfred.twl2`` shipped inside the installed ``alfworld`` package."""
    try:
        import alfworld
    except ImportError as exc:
        raise AlfworldUnavailable(f"the ALFWorld backend needs the `alfworld` package; {INSTALL_HINT}") from exc
    data = Path(alfworld.__file__).parent / "data"
    paths = (data / "alfred.pddl", data / "alfred.twl2")
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise AlfworldUnavailable(f"the installed alfworld package lacks {missing}; reinstall it ({INSTALL_HINT})")
    return paths


def read_game(path: str | Path) -> dict:
    """A TextWorld PDDL game file (``*.tw-pddl``: JSON with ``pddl_domain``, ``grammar``, ``pddl_problem``)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise GameFileError(f"game file {path} does not exist") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise GameFileError(f"game file {path} is not valid JSON: {exc}") from None
    missing = [k for k in ("pddl_domain", "grammar", "pddl_problem") if not isinstance(data, dict) or k not in data]
    if missing:
        raise GameFileError(f"game file {path} lacks the key(s) {missing} of a TextWorld PDDL game")
    return data


def load_pddl_env(game: dict, path: str | Path, env: Any | None = None) -> Any:
    """A TextWorld ``PddlEnv`` with ``game`` loaded (``env`` reused when given); errors name ``path``."""
    pddl = require_textworld()
    if env is None:
        import textworld

        env = pddl.PddlEnv(textworld.EnvInfos(admissible_commands=True, facts=True))
    try:
        env.load(game)
    except Exception as exc:  # tatsu / fast downward raise many types for a broken problem
        raise GameFileError(f"game file {path} does not parse as a PDDL game: {type(exc).__name__}: "
                            f"{str(exc).splitlines()[0] if str(exc) else ''}") from exc
    return env
