"""Environment config shared by every stage that builds an environment."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class EnvConfig:
    """Which simulator to build and its episode limits (TEACh defaults: 1000 steps, 30 failures)."""

    name: str = "household"
    frame_size: int = 128
    render: bool = True
    max_steps: int = 1000
    max_failures: int = 30

    def validate(self) -> None:
        if not 32 <= self.frame_size <= 1024:
            raise ValueError(f"env.frame_size must be in [32, 1024], got {self.frame_size}")
        if self.max_steps <= 0 or self.max_failures <= 0:
            raise ValueError("env.max_steps and env.max_failures must be positive")

    def kwargs(self) -> dict:
        """Keyword arguments for :func:`icalkit.envs.factory.make_env`."""
        return {
            "frame_size": self.frame_size,
            "render_obs": self.render,
            "max_steps": self.max_steps,
            "max_failures": self.max_failures,
        }
