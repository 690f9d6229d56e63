"""Household env speed against MiniGrid, both through ``gymnasium.make``, in the same run.

Lines (each a ratio against MiniGrid ``MiniGrid-Empty-8x8-v0`` measured in the same run):

* ``unrendered``: ``gymnasium.make("icalkit/Household-v0", render_obs=False)`` with random actions
  from its action space (observation: text state, scene graph, success/error; episodes reset on
  termination/truncation as a user's loop does) against MiniGrid's full ``env.step`` (its
  observation is the symbolic 7x7 view).
* ``rendered``: the household env with ``render_obs=True`` (a ``size`` x ``size`` RGB frame and
  segmentation in every observation) against MiniGrid ``env.step`` + ``env.render()`` at the same
  frame size (``tile_size = size / 8``).
* ``task``: the unrendered env on TEACh tasks (goal conditions checked for the reward).
* ``bare_simulator``: ``Simulator.step`` alone (no observation, no goal check), second line.

Each line is timed in ``--rounds`` interleaved rounds (household, then MiniGrid) after a warm-up
of ``--warmup`` steps on both sides; figures are medians over rounds of CPU-time rates (this
process's own time, fair on a shared machine) and of per-round ratios. The cold rate (the warm-up
itself: scene generation, first visibility answers) is recorded too. Writes
``benchmarks/results/simulator.json``.

Usage: python benchmarks/bench_simulator.py [--seconds 2] [--rounds 5] [--warmup 20000] [--size 128]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import gymnasium as gym  # noqa: E402

import icalkit.envs  # noqa: E402,F401  (registers icalkit/Household-v0)
from icalkit.envs.household.actions import ACTIONS  # noqa: E402
from icalkit.envs.household.scene import generate_scene  # noqa: E402
from icalkit.envs.household.simulator import Simulator  # noqa: E402

RESULTS = Path(__file__).parent / "results"
TARGET_RATIO = 1.5
MINIGRID_ID = "MiniGrid-Empty-8x8-v0"


def env_stepper(env: gym.Env, seed: int, render: bool = False) -> Callable[[], None]:
    """One random-action step of ``env`` (reset on termination/truncation; ``render()`` if asked)."""
    env.reset(seed=seed)
    env.action_space.seed(seed)

    def step() -> None:
        _, _, term, trunc, _ = env.step(env.action_space.sample())
        if render:
            env.render()
        if term or trunc:
            env.reset()

    return step


def bare_stepper(seed: int = 0) -> Callable[[], None]:
    """Random primitive actions on ``Simulator.step`` (moves, and interactions on visible objects)."""
    rng = random.Random(seed)
    sim = Simulator(generate_scene(seed, "train", "kitchen"))
    moves = ("Forward", "Backward", "Turn Left", "Turn Right", "Look Up", "Look Down", "Pan Left", "Pan Right")
    interactions = [a for a in ACTIONS if a not in moves and a != "Stop"]

    def step() -> None:
        if rng.random() < 0.7:
            sim.step(rng.choice(moves))
        else:
            visible = sim.visible_objects()
            sim.step(rng.choice(interactions), rng.choice(visible) if visible else None)

    return step


def rate(step: Callable[[], None], seconds: float) -> float:
    """Steps per CPU-second of ``step`` over about ``seconds`` of CPU time."""
    n, start = 0, time.process_time()
    while True:
        for _ in range(50):
            step()
        n += 50
        elapsed = time.process_time() - start
        if elapsed >= seconds:
            return n / elapsed


def cold_rate(step: Callable[[], None], n: int) -> float:
    start = time.process_time()
    for _ in range(n):
        step()
    return n / max(time.process_time() - start, 1e-9)


class TaskPool:
    """Picks one of ``n_per_type`` tasks of each TEACh TfD type (sampled once, before timing), as a
    user's loop over a task list does; the env checks the goal conditions for every reward."""

    def __init__(self, n_per_type: int = 4) -> None:
        from icalkit.envs.household.tasks.registry import TFD_TYPES
        from icalkit.envs.household.tasks.sampler import sample_tasks

        self.tasks = sample_tasks(TFD_TYPES, n_per_type, "train")

    def __call__(self, np_random) -> object:
        return self.tasks[int(np_random.integers(len(self.tasks)))]


def compare(name: str, ours: Callable[[], None], theirs: Callable[[], None] | None, args) -> dict:
    """Warm both up, then time them in interleaved rounds; medians of rates and ratios."""
    cold = cold_rate(ours, args.warmup)
    their_cold = cold_rate(theirs, args.warmup) if theirs is not None else None
    rows = []
    for _ in range(args.rounds):
        a = rate(ours, args.seconds)
        b = rate(theirs, args.seconds) if theirs is not None else None
        rows.append((a, b))
    out = {"steps_per_s": round(statistics.median(r[0] for r in rows), 1),
           f"cold_steps_per_s_first_{args.warmup}": round(cold, 1), "rounds": [[round(v, 1) if v else v for v in r] for r in rows]}
    msg = f"{name:15s} {out['steps_per_s']:9,.0f} steps/s (first {args.warmup} steps, cold: {cold:,.0f}/s)"
    if theirs is not None:
        out["minigrid_steps_per_s"] = round(statistics.median(r[1] for r in rows), 1)
        out["ratio_vs_minigrid"] = round(statistics.median(r[0] / r[1] for r in rows), 3)
        out["target_ratio"] = TARGET_RATIO
        out[f"cold_ratio_vs_minigrid_first_{args.warmup}"] = round(cold / their_cold, 3)
        msg += (f" = {out['ratio_vs_minigrid']:.2f}x MiniGrid ({out['minigrid_steps_per_s']:,.0f}/s)"
                f"  [target >= {TARGET_RATIO}x: {'met' if out['ratio_vs_minigrid'] >= TARGET_RATIO else 'NOT met'}]")
    print(msg, flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="CPU seconds per side per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=20000, help="steps per side before timing (timed too: the cold rate)")
    parser.add_argument("--size", type=int, default=128, help="frame side for the rendered line (multiple of 8)")
    parser.add_argument("--out", default=str(RESULTS / "simulator.json"))
    args = parser.parse_args()
    if args.size % 8:
        parser.error("--size must be a multiple of 8 (MiniGrid-Empty-8x8 draws 8 tiles per side)")
    import minigrid  # noqa: F401  (registers the MiniGrid environments)

    lines = {
        "unrendered": compare("unrendered", env_stepper(gym.make("icalkit/Household-v0", render_obs=False), 0),
                              env_stepper(gym.make(MINIGRID_ID), 0), args),
        "rendered": compare(f"rendered {args.size}", env_stepper(gym.make(
            "icalkit/Household-v0", render_obs=True, frame_size=args.size), 0), env_stepper(gym.make(
                MINIGRID_ID, render_mode="rgb_array", tile_size=args.size // 8), 0, render=True), args),
        "task": compare("task (goals)", env_stepper(gym.make(
            "icalkit/Household-v0", render_obs=False, task_sampler=TaskPool()), 0),
            env_stepper(gym.make(MINIGRID_ID), 0), args),
        "bare_simulator": compare("bare Simulator", bare_stepper(), None, args),
    }
    result = {
        "benchmark": "simulator", "level": "gymnasium.make, random actions from the action space",
        "baseline": MINIGRID_ID, "frame_size": args.size, "minigrid_tile_size": args.size // 8,
        "timer": "process CPU time", "seconds_per_side_per_round": args.seconds, "rounds": args.rounds,
        "warmup_steps": args.warmup, **lines,
        "load_average": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
        "python": platform.python_version(), "gymnasium": gym.__version__,
        "command": "python benchmarks/bench_simulator.py " + " ".join(
            f"--{k} {v}" for k, v in vars(args).items() if k != "out"),
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
