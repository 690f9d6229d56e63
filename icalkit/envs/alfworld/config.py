"""Which ALFWorld games a run plays: generated from the embedded scenes, or a directory of game files."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass
class AlfworldConfig:
    """ALFWorld game source (a config section, e.g. ``alfworld.games_dir=$ALFWORLD_DATA/json_2.1.1``).

    Attributes:
        games_dir: where games are generated (``generate: true``) or found (``generate: false``: every
            ``game.tw-pddl`` below ``games_dir/<split>``, e.g. the official data's ``json_2.1.1``).
        generate: write the games of the run's task types from the embedded simulator's scenes.
        max_games: play at most this many of the games found (0: all).
    """

    games_dir: str = "runs/alfworld_games"
    generate: bool = True
    max_games: int = 0

    def validate(self) -> None:
        if self.max_games < 0:
            raise ValueError(f"alfworld.max_games must be >= 0, got {self.max_games}")
        if not self.generate and not Path(self.games_dir).is_dir():
            raise ValueError(f"alfworld.games_dir {self.games_dir!r} is not a directory (alfworld.generate=false "
                             f"plays the game files found there)")

    def game_files(self, task_types: list[str], n_per_type: int, split: str, seed: int = 0) -> list[Path]:
        """The game files of a split: generated now (kept if present) or found under ``games_dir/split``."""
        if self.generate:
            from icalkit.envs.alfworld.games import generate_games

            return generate_games(task_types, n_per_type, split, self.games_dir, seed)
        found = sorted((Path(self.games_dir) / split).rglob("game.tw-pddl"))
        if not found:
            raise FileNotFoundError(f"no game.tw-pddl below {Path(self.games_dir) / split}")
        return found[:self.max_games] if self.max_games else found
