"""Rendered frames per second of the household renderer at 128x128 on one core.

Two figures per room type, on generated scenes (``scene.generate_scene``):

* ``walk``: frames along a random walk of primitive moves (Forward/Backward/Pan/Turn/Look), the
  way an agent or demonstrator steps the simulator (the per-pose background cache is warm for
  revisited poses, as in real episodes);
* ``cold``: random poses with the background cache cleared before every frame (worst case).

Usage: ``python benchmarks/bench_render.py [--frames N] [--size 128]``. Prints frames/s and
writes ``benchmarks/results/render.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import time
from pathlib import Path

from icalkit.envs.household import render_background
from icalkit.envs.household.render import render_frame
from icalkit.envs.household.scene import generate_scene
from icalkit.envs.household.state import PITCHES, AgentPose, World

ROOMS = ("kitchen", "living_room", "bedroom", "bathroom")
TARGET_FPS = 1000.0


def _free(world: World, i: int, j: int) -> bool:
    return 0 <= i < world.n_i and 0 <= j < world.n_j and not world.blocked[i, j]


def random_walk(world: World, n: int, rng: random.Random) -> list[AgentPose]:
    """``n`` poses visited by random primitive moves from the world's start pose."""
    pose, out = world.agent.copy(), []
    for _ in range(n):
        move = rng.choice(("forward", "forward", "backward", "pan_left", "pan_right", "turn_left",
                           "turn_right", "look_up", "look_down"))
        nxt = pose.copy()
        di, dj = pose.forward_delta()
        if move in ("forward", "backward", "pan_left", "pan_right"):
            step = {"forward": (di, dj), "backward": (-di, -dj), "pan_right": (dj, -di), "pan_left": (-dj, di)}[move]
            nxt.i, nxt.j = pose.i + step[0], pose.j + step[1]
        elif move in ("turn_left", "turn_right"):
            nxt.yaw = (pose.yaw + (90 if move == "turn_right" else -90)) % 360
        else:
            k = PITCHES.index(pose.pitch) + (1 if move == "look_down" else -1)
            nxt.pitch = PITCHES[min(max(k, 0), len(PITCHES) - 1)]
        if _free(world, nxt.i, nxt.j):
            pose = nxt
        out.append(pose.copy())
    return out


def random_poses(world: World, n: int, rng: random.Random) -> list[AgentPose]:
    free = [(i, j) for i in range(world.n_i) for j in range(world.n_j) if not world.blocked[i, j]]
    return [AgentPose(*rng.choice(free), rng.choice((0, 90, 180, 270)), rng.choice(PITCHES)) for _ in range(n)]


def fps(world: World, poses: list[AgentPose], size: int, cold: bool) -> tuple[float, float]:
    """(wall-clock, CPU-time) frames per second rendering ``world`` from each pose in turn.

    CPU time is this process's own time, which is the fairer figure on a shared machine.
    """
    start, cpu = time.perf_counter(), time.process_time()
    for pose in poses:
        if cold:
            render_background.clear_cache()
        world.agent = pose
        render_frame(world, size)
    return len(poses) / (time.perf_counter() - start), len(poses) / (time.process_time() - cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--frames", type=int, default=4000, help="frames per room type and mode")
    parser.add_argument("--size", type=int, default=128)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "render.json"))
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core
    rng = random.Random(args.seed)
    rows = {}
    for room in ROOMS:
        world = generate_scene(args.seed, "train", room)
        start = world.agent.copy()
        render_frame(world, args.size)  # warm-up (ray tables)
        walk, walk_cpu = fps(world, random_walk(world, args.frames, rng), args.size, cold=False)
        world.agent = start
        cold, cold_cpu = fps(world, random_poses(world, max(200, args.frames // 10), rng), args.size, cold=True)
        rows[room] = {"objects": len(world.objects), "walk_fps": round(walk, 1), "cold_fps": round(cold, 1),
                      "walk_cpu_fps": round(walk_cpu, 1), "cold_cpu_fps": round(cold_cpu, 1)}
        print(f"{room:12s} objects={len(world.objects):3d}  walk {walk:7.1f} frames/s (cpu {walk_cpu:7.1f})"
              f"  cold {cold:7.1f} frames/s (cpu {cold_cpu:7.1f})")
    mean = {k: round(sum(r[k] for r in rows.values()) / len(rows), 1)
            for k in ("walk_fps", "cold_fps", "walk_cpu_fps", "cold_cpu_fps")}
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    print(f"mean: walk {mean['walk_fps']:.1f} frames/s ({mean['walk_fps'] / TARGET_FPS:.2f}x target "
          f"{TARGET_FPS:.0f}), cold {mean['cold_fps']:.1f} frames/s ({mean['cold_fps'] / TARGET_FPS:.2f}x); "
          f"CPU-time: walk {mean['walk_cpu_fps']:.1f}, cold {mean['cold_cpu_fps']:.1f}; load average {load}")
    result = {"benchmark": "render", "size": args.size, "frames_per_mode": args.frames, "cores": 1,
              "rooms": rows, **mean, "target_fps": TARGET_FPS, "load_average": load,
              "python": platform.python_version(), "machine": platform.processor()}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
