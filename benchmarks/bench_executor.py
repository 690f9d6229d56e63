"""Executor overhead and sandbox security figures.

Overhead, worst case (one primitive per API call): the same calls (toggle the toaster on/off with
the agent in reach) issued three ways in the same process: raw ``Simulator.step`` calls
(baseline), API methods called directly from Python, and a generated program run through the
sandboxed executor. Reports calls per second and the ratios (target: sandbox < 2x direct).
Navigation workload: a program shuttling a mug between table and counter
(``pickup_and_place``) vs the same work done by hand with ``path_to_object`` and ``Simulator.step``.

Security: every program of ``tests/data/hostile_programs`` run through the executor; counts of
refused / contained programs (the process keeps running).

Usage: ``python benchmarks/bench_executor.py [--calls 2000] [--repeats 15]`` (best of the
repeats, interleaved, so that load from other processes affects all three alike).
Writes ``benchmarks/results/executor.json``.
"""

from __future__ import annotations

import argparse
import copy
import json
import platform
import time
from collections import Counter
from pathlib import Path

from icalkit.agents.api import ApiConfig
from icalkit.agents.executor import Executor, ExecutorLimits
from icalkit.agents.sandbox import SandboxLimits
from icalkit.envs.household.navigation import path_to_object
from icalkit.envs.household.scene import generate_scene
from icalkit.envs.household.simulator import Simulator
from icalkit.envs.household.state import World

ROOT = Path(__file__).resolve().parent
CORPUS = ROOT.parent / "tests" / "data" / "hostile_programs"
CYCLE = (("ToggleOn", "Toaster"), ("ToggleOff", "Toaster"))
METHODS = {"ToggleOn": "toggle_on", "ToggleOff": "toggle_off"}


def ready_world() -> World:
    """Kitchen with the agent standing where it can reach the toaster."""
    world = generate_scene(0, "train", "kitchen", {"Toaster": 1, "Mug": 1})
    sim = Simulator(world)
    for action in path_to_object(world, world.of_type("Toaster")[0].object_id):
        sim.step(action)
    return world


def limits(n_calls: int) -> ExecutorLimits:
    return ExecutorLimits(SandboxLimits(timeout_s=600, max_loop_iterations=10 * n_calls),
                          ApiConfig(max_steps=10 * n_calls, max_failures=10))


def bench_raw(world: World, n_calls: int) -> float:
    sim = Simulator(copy.deepcopy(world))
    ids = {t: sim.world.of_type(t)[0].object_id for _, t in CYCLE}
    start = time.perf_counter()
    for k in range(n_calls // len(CYCLE)):
        for action, t in CYCLE:
            assert sim.step(action, target=ids[t]).success, (k, action)
    return time.perf_counter() - start


def bench_direct_api(world: World, n_calls: int) -> float:
    ex = Executor(Simulator(copy.deepcopy(world)), limits(n_calls))
    toaster = ex.api_class("Toaster")
    start = time.perf_counter()
    for _ in range(n_calls // len(CYCLE)):
        for action, _t in CYCLE:
            getattr(toaster, METHODS[action])()
    return time.perf_counter() - start


def bench_sandbox(world: World, n_calls: int) -> float:
    ex = Executor(Simulator(copy.deepcopy(world)), limits(n_calls))
    body = "".join(f"    toaster.{METHODS[a]}()\n" for a, _ in CYCLE)
    program = f"toaster = InteractionObject('Toaster')\nfor i in range({n_calls // len(CYCLE)}):\n{body}"
    start = time.perf_counter()
    trace = ex.run(program)
    elapsed = time.perf_counter() - start
    assert trace.failure is None, trace.failure
    return elapsed


SHUTTLE = """\
mug = InteractionObject(OBJECT)
table = InteractionObject("DiningTable")
counter = InteractionObject("CounterTop")
for i in range(ROUNDS):
    mug.pickup_and_place(table)
    mug.pickup_and_place(counter)
"""


def bench_shuttle(world: World, rounds: int) -> tuple[float, float, int, int]:
    """Navigation program vs the same work done directly with the navigator and the simulator.

    Returns:
        (program seconds, direct seconds, API calls, primitive actions).
    """
    ex = Executor(Simulator(copy.deepcopy(world)), limits(100 * rounds))
    mug = next(o for o in ex.sim.world.objects.values() if o.type.pickupable and o.parent
               and ex.sim.world.objects[o.parent].object_type in ("CounterTop", "DiningTable"))
    program = SHUTTLE.replace("ROUNDS", str(rounds)).replace(
        "OBJECT", f'"{mug.object_type}", object_instance="{mug.object_id}"')
    start = time.perf_counter()
    trace = ex.run(program)
    program_s = time.perf_counter() - start
    assert trace.failure is None, trace.failure
    sim = Simulator(copy.deepcopy(world))
    ids = {"table": sim.world.of_type("DiningTable")[0].object_id,
           "counter": sim.world.of_type("CounterTop")[0].object_id}
    start = time.perf_counter()
    for _ in range(rounds):  # the same work, planned and stepped by hand
        for dest in (ids["table"], ids["counter"]):
            for oid, action in ((mug.object_id, "Pickup"), (dest, "Place")):
                for move in path_to_object(sim.world, oid):
                    sim.step(move)
                assert sim.step(action, target=oid).success
    return program_s, time.perf_counter() - start, len(trace.calls), len(trace.primitive_actions)


def security() -> dict:
    world = generate_scene(0, "train", "kitchen", {"Mug": 1})
    ex = Executor(Simulator(world), ExecutorLimits(SandboxLimits(timeout_s=2.0)))
    kinds: Counter = Counter()
    start = time.perf_counter()
    for path in sorted(CORPUS.glob("*.py")):
        trace = ex.run(path.read_text())
        kinds["completed (NOT contained)" if trace.failure is None else trace.failure.kind] += 1
    total = sum(kinds.values())
    contained = total - kinds["completed (NOT contained)"]
    return {"programs": total, "refused_or_contained": contained, "by_kind": dict(kinds),
            "seconds": round(time.perf_counter() - start, 3), "host_alive": True}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    world = ready_world()
    timings = {"raw_simulator": [], "direct_api": [], "sandbox_program": []}
    for _ in range(args.repeats):
        timings["raw_simulator"].append(bench_raw(world, args.calls))
        timings["direct_api"].append(bench_direct_api(world, args.calls))
        timings["sandbox_program"].append(bench_sandbox(world, args.calls))
    shuttle = [bench_shuttle(world, args.calls // 200) for _ in range(args.repeats)]
    best_shuttle = min(shuttle, key=lambda r: r[0] / r[1])
    best = {k: min(v) for k, v in timings.items()}
    rate = {k: round(args.calls / v, 1) for k, v in best.items()}
    result = {
        "calls": args.calls, "repeats": args.repeats, "machine": platform.processor() or platform.machine(),
        "python": platform.python_version(), "calls_per_second": rate,
        "ratio_sandbox_vs_direct_api": round(best["sandbox_program"] / best["direct_api"], 3),
        "ratio_sandbox_vs_raw_simulator": round(best["sandbox_program"] / best["raw_simulator"], 3),
        "ratio_direct_api_vs_raw_simulator": round(best["direct_api"] / best["raw_simulator"], 3),
        "target": "sandbox < 2x direct",
        "navigation_workload": {
            "api_calls": best_shuttle[2], "primitive_actions": best_shuttle[3],
            "program_seconds": round(best_shuttle[0], 4),
            "direct_seconds": round(best_shuttle[1], 4),
            "ratio_sandbox_program_vs_direct": round(best_shuttle[0] / best_shuttle[1], 3),
        },
        "security": security(),
    }
    out = ROOT / "results" / "executor.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
