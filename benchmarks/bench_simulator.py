"""Simulator throughput vs. MiniGrid, measured in the same run on one core.

Figures (issue targets): primitive steps per second without rendering (>= 20,000) and rendered
frames per second at 128x128 (>= 1,000), each printed as a ratio against MiniGrid
(``MiniGrid-Empty-8x8-v0``: plain ``step`` for the unrendered baseline, ``render()`` in
``rgb_array`` mode for the rendered one). Writes ``benchmarks/results/simulator.json``.

Usage: python benchmarks/bench_simulator.py [--seconds 3] [--size 128]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

from icalkit.envs.household.actions import ACTIONS  # noqa: E402
from icalkit.envs.household.render import render_frame  # noqa: E402
from icalkit.envs.household.scene import generate_scene  # noqa: E402
from icalkit.envs.household.simulator import Simulator  # noqa: E402

RESULTS = Path(__file__).parent / "results"


def _timed(fn, seconds: float) -> float:
    """Calls per second of ``fn`` over about ``seconds``."""
    n, start = 0, time.perf_counter()
    while True:
        for _ in range(100):
            fn()
        n += 100
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return n / elapsed


def household_step_rate(seconds: float, seed: int = 0) -> float:
    """Random primitive actions (moves and interactions on visible objects), no rendering."""
    rng = random.Random(seed)
    world = generate_scene(seed, "train", "kitchen")
    sim = Simulator(world)
    moves = [a for a in ACTIONS if a in ("Forward", "Backward", "Turn Left", "Turn Right", "Look Up",
                                          "Look Down", "Pan Left", "Pan Right")]
    interactions = [a for a in ACTIONS if a not in moves and a != "Stop"]

    def step() -> None:
        if rng.random() < 0.7:
            sim.step(rng.choice(moves))
        else:
            visible = sim.visible_objects()
            sim.step(rng.choice(interactions), rng.choice(visible) if visible else None)

    return _timed(step, seconds)


def household_frame_rate(seconds: float, size: int, seed: int = 0) -> float:
    """Step + render a frame, from poses that change every step."""
    rng = random.Random(seed)
    world = generate_scene(seed, "train", "kitchen")
    sim = Simulator(world)
    moves = ("Forward", "Turn Left", "Turn Right", "Look Down", "Look Up", "Backward")

    def frame() -> None:
        sim.step(rng.choice(moves))
        render_frame(world, size)

    return _timed(frame, seconds)


def minigrid_rates(seconds: float) -> tuple[float, float]:
    import gymnasium as gym
    import minigrid  # noqa: F401  (registers the environments)

    env = gym.make("MiniGrid-Empty-8x8-v0", render_mode="rgb_array")
    env.reset(seed=0)
    rng = random.Random(0)

    def step() -> None:
        _, _, term, trunc, _ = env.step(rng.randrange(3))
        if term or trunc:
            env.reset()

    def frame() -> None:
        step()
        env.render()

    return _timed(step, seconds), _timed(frame, seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--size", type=int, default=128)
    args = parser.parse_args()
    steps = household_step_rate(args.seconds)
    frames = household_frame_rate(args.seconds, args.size)
    mg_steps, mg_frames = minigrid_rates(args.seconds)
    result = {
        "household_steps_per_s": round(steps, 1),
        "household_frames_per_s": round(frames, 1),
        "frame_size": args.size,
        "minigrid_steps_per_s": round(mg_steps, 1),
        "minigrid_frames_per_s": round(mg_frames, 1),
        "steps_ratio_vs_minigrid": round(steps / mg_steps, 3),
        "frames_ratio_vs_minigrid": round(frames / mg_frames, 3),
        "targets": {"steps_per_s": 20000, "frames_per_s": 1000},
    }
    print(f"unrendered: {steps:,.0f} steps/s  = {steps / mg_steps:.2f}x MiniGrid ({mg_steps:,.0f} steps/s)"
          f"  [target >= 20,000: {'met' if steps >= 20000 else 'NOT met'}]")
    print(f"rendered {args.size}x{args.size}: {frames:,.0f} frames/s = {frames / mg_frames:.2f}x MiniGrid "
          f"rgb_array ({mg_frames:,.0f} frames/s)  [target >= 1,000: {'met' if frames >= 1000 else 'NOT met'}]")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "simulator.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
