"""Cost of running programs in isolated sandbox workers, and what the hostile corpus does.

Everything is timed at the level a user touches (``Executor.run`` vs API calls made directly in
this process), the same work on both sides, as the median of interleaved repeats:

- **Per API call**, worst case (one primitive per call: toggling a toaster in reach): a program of
  N calls through the isolated executor, minus the fixed per-program cost, divided by N, against
  the same N calls made directly on the API in-process (target: < 2x). Raw ``Simulator.step``
  calls are a second baseline line.
- **Fixed cost per program** (send world and program, run, answer, replay bookkeeping): a
  one-statement program through the executor, against a typical program's run time (the expert
  demonstrations of several task types converted to programs, run through the executor) and
  against the same typical programs run by the sandbox in-process without isolation.
- **Navigation workload**: a program shuttling a mug between table and counter through the
  executor, against the same API calls made directly; the same primitives sent by hand (walk only
  when the object is out of reach, as the API does, then act) as a second line.
- **Replacing a killed worker**: the kill (traceback first) and a fresh worker's start-up.
- **Security**: every program of ``tests/data/hostile_programs`` through the executor; counts by
  failure kind, the slowest return, the host's peak-memory growth, and a probe program run after
  the corpus (``host_alive`` is whether it returned the right answer).

Usage: ``python benchmarks/bench_executor.py [--calls 2000] [--repeats 15]``.
Writes ``benchmarks/results/executor.json``.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import resource
import statistics
import time
from collections import Counter
from pathlib import Path

from icalkit.agents.api import ApiConfig
from icalkit.agents.api.household import InteractionObject, bind_api, sandbox_attributes
from icalkit.agents.api.runtime import ApiRuntime
from icalkit.agents.executor import Executor, ExecutorLimits
from icalkit.agents.sandbox import Sandbox, SandboxLimits
from icalkit.agents.worker_pool import IsolationLimits, Worker, WorkerPool
from icalkit.envs.household.navigation import path_to_object
from icalkit.envs.household.scene import generate_scene
from icalkit.envs.household.simulator import Simulator
from icalkit.envs.household.state import World

ROOT = Path(__file__).resolve().parent
CORPUS = ROOT.parent / "tests" / "data" / "hostile_programs"
TYPICAL_TYPES = ("Coffee", "Plate Of Toast", "Boil X", "Salad", "Clean All X", "Water Plant")
PROBE = "mug = InteractionObject('Mug')\nprint(mug.check_attribute('holding', False))\n"


def median(values: list[float]) -> float:
    return statistics.median(values)


def fresh(world: World) -> World:
    """A copy of ``world`` sharing its furniture grid, so that the layout memo tables stay warm
    on every side of a comparison (the sandbox worker shares grids between programs too)."""
    copied = copy.deepcopy(world)
    copied.blocked = world.blocked
    return copied


def ready_world() -> World:
    """Kitchen with the agent standing where it can reach the toaster."""
    world = generate_scene(0, "train", "kitchen", {"Toaster": 1, "Mug": 1})
    sim = Simulator(world)
    for action in path_to_object(world, world.of_type("Toaster")[0].object_id):
        sim.step(action)
    return world


def limits(n_steps: int, timeout_s: float = 600.0) -> ExecutorLimits:
    return ExecutorLimits(SandboxLimits(timeout_s=timeout_s, max_loop_iterations=10 * n_steps),
                          ApiConfig(max_steps=10 * n_steps, max_failures=10))


def timed_run(ex: Executor, program: str) -> float:
    start = time.perf_counter()
    trace = ex.run(program)
    elapsed = time.perf_counter() - start
    assert trace.failure is None, trace.failure
    return elapsed


# ---------------------------------------------------------------------------- per API call

def toggles_program(n_calls: int) -> str:
    return (f"toaster = InteractionObject('Toaster')\nfor i in range({n_calls // 2}):\n"
            "    toaster.toggle_on()\n    toaster.toggle_off()\n")


def bench_direct_api(world: World, n_calls: int) -> float:
    ex = Executor(Simulator(fresh(world)), limits(n_calls))
    toaster = ex.api_class("Toaster")
    start = time.perf_counter()
    for _ in range(n_calls // 2):
        toaster.toggle_on()
        toaster.toggle_off()
    return time.perf_counter() - start


def bench_raw(world: World, n_calls: int) -> float:
    sim = Simulator(fresh(world))
    toaster = sim.world.of_type("Toaster")[0].object_id
    start = time.perf_counter()
    for _ in range(n_calls // 2):
        assert sim.step("ToggleOn", toaster).success
        assert sim.step("ToggleOff", toaster).success
    return time.perf_counter() - start


def bench_isolated(world: World, program: str, n_steps: int) -> float:
    ex = Executor(Simulator(fresh(world)), limits(n_steps))
    return timed_run(ex, program)


# ---------------------------------------------------------------------------- typical programs

def typical_programs() -> list[tuple[World, str]]:
    """Expert demonstrations of several task types, converted to programs (as ICAL stores them)."""
    import random

    from icalkit.data_gen.expert import expert_actions
    from icalkit.data_gen.programs import trajectory_to_program
    from icalkit.envs.household.scene import apply_initial_state
    from icalkit.envs.household.tasks.registry import TASK_TYPES, choose_params
    from icalkit.envs.household.tasks.task import Task

    out = []
    for name in TYPICAL_TYPES:
        tt = TASK_TYPES[name]
        room = tt.rooms[0]
        rng = random.Random(0)
        params = choose_params(tt, room, rng)
        required, initial = tt.setup(params, room, rng)
        task = Task(f"train/{name}/0", name, tt.positional(params), tt.definition, "", [], room, 0,
                    "train", required, initial)
        world = generate_scene(0, "train", room, required)
        apply_initial_state(world, initial, random.Random(f"init/{task.task_id}/0"))
        out.append((world, trajectory_to_program(world, expert_actions(task))))
    return out


def in_process(world: World, program: str) -> float:
    """The same program run by the sandbox in this process (no worker, no OS limits, no replay)."""
    sim = Simulator(fresh(world))
    runtime = ApiRuntime(sim)
    api = bind_api(runtime)
    sandbox = Sandbox({"InteractionObject": api}, {api: sandbox_attributes(),
                                                   InteractionObject: sandbox_attributes()})
    start = time.perf_counter()
    result = sandbox.run(program)
    elapsed = time.perf_counter() - start
    assert result.ok, result.message
    return elapsed


# ---------------------------------------------------------------------------- navigation workload

SHUTTLE = """\
mug = InteractionObject(OBJECT)
table = InteractionObject("DiningTable")
counter = InteractionObject("CounterTop")
for i in range(ROUNDS):
    mug.pickup_and_place(table)
    mug.pickup_and_place(counter)
"""


def shuttle_mug(world: World) -> str:
    return next(o.object_id for o in world.objects.values() if o.type.pickupable and o.parent
                and world.objects[o.parent].object_type in ("CounterTop", "DiningTable"))


def shuttle_program(world: World, rounds: int) -> str:
    mug = world.objects[shuttle_mug(world)]
    return SHUTTLE.replace("ROUNDS", str(rounds)).replace(
        "OBJECT", f'"{mug.object_type}", object_instance="{mug.object_id}"')


def bench_shuttle_program(world: World, rounds: int) -> tuple[float, int, int]:
    ex = Executor(Simulator(fresh(world)), limits(100 * rounds))
    start = time.perf_counter()
    trace = ex.run(shuttle_program(world, rounds))
    elapsed = time.perf_counter() - start
    assert trace.failure is None, trace.failure
    return elapsed, len(trace.calls), len(trace.primitive_actions)


def bench_shuttle_direct_api(world: World, rounds: int) -> float:
    """The same API calls made directly in this process."""
    ex = Executor(Simulator(fresh(world)), limits(100 * rounds))
    api = ex.api_class
    mug_id = shuttle_mug(ex.sim.world)
    start = time.perf_counter()
    mug = api(ex.sim.world.objects[mug_id].object_type, object_instance=mug_id)
    table, counter = api("DiningTable"), api("CounterTop")
    for _ in range(rounds):
        mug.pickup_and_place(table)
        mug.pickup_and_place(counter)
    return time.perf_counter() - start


def bench_shuttle_raw(world: World, rounds: int) -> float:
    """The same primitives by hand: walk only when the object is out of reach (as the API does)."""
    sim = Simulator(fresh(world))
    mug = shuttle_mug(sim.world)
    dests = (sim.world.of_type("DiningTable")[0].object_id, sim.world.of_type("CounterTop")[0].object_id)
    start = time.perf_counter()
    for _ in range(rounds):
        for dest in dests:
            for oid, action in ((mug, "Pickup"), (dest, "Place")):
                obj = sim.world.objects[oid]
                if sim.world.held != oid and not sim.interactable(obj):
                    for move in path_to_object(sim.world, oid):
                        sim.step(move)
                assert sim.step(action, target=oid).success
    return time.perf_counter() - start


# ---------------------------------------------------------------------------- workers and security

def bench_replace(repeats: int) -> dict:
    """Kill a busy worker (traceback first), then start a fresh one until it is ready."""
    iso = IsolationLimits()
    kills, starts = [], []
    for _ in range(repeats):
        t = time.perf_counter()
        worker = Worker(iso)
        worker.wait_ready(iso.start_timeout_s)
        starts.append(time.perf_counter() - t)
        t = time.perf_counter()
        worker.kill(traceback=True)
        kills.append(time.perf_counter() - t)
        worker.release_fds()
    return {"kill_seconds": round(median(kills), 4), "start_seconds": round(median(starts), 4),
            "replace_seconds": round(median(kills) + median(starts), 4)}


def security(timeout_s: float) -> dict:
    world = generate_scene(0, "train", "kitchen", {"Mug": 1})
    pool = WorkerPool()
    iso = IsolationLimits(grace_s=1.0)
    ex = Executor(Simulator(world), ExecutorLimits(SandboxLimits(timeout_s=timeout_s), isolation=iso),
                  pool=pool)
    kinds: Counter = Counter()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    slowest = 0.0
    start = time.perf_counter()
    for path in sorted(CORPUS.glob("*.py")):
        t = time.perf_counter()
        trace = ex.run(path.read_text())
        slowest = max(slowest, time.perf_counter() - t)
        kinds["completed (NOT contained)" if trace.failure is None else trace.failure.kind] += 1
    probe = ex.run(PROBE)
    total = sum(kinds.values())
    result = {"programs": total, "refused_or_contained": total - kinds["completed (NOT contained)"],
              "by_kind": dict(kinds), "seconds": round(time.perf_counter() - start, 3),
              "timeout_s": timeout_s, "grace_s": iso.grace_s,
              "slowest_return_seconds": round(slowest, 3),
              "host_peak_rss_growth_mb": round((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak) / 1024, 1),
              "workers_started": pool.started,
              "host_alive": probe.failure is None and probe.output == "True\n"}
    pool.close()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--corpus-timeout", type=float, default=2.0)
    args = parser.parse_args()
    n = args.calls
    world = ready_world()
    typical = typical_programs()
    t: dict[str, list[float]] = {k: [] for k in ("raw", "direct", "isolated", "fixed", "typical_isolated",
                                                 "typical_in_process", "shuttle_program", "shuttle_direct",
                                                 "shuttle_raw")}
    bench_isolated(world, "x = 1\n", 10)  # start the pool's first worker outside the timings
    shuttle_info = (0, 0)
    for _ in range(args.repeats):
        t["raw"].append(bench_raw(world, n))
        t["direct"].append(bench_direct_api(world, n))
        t["isolated"].append(bench_isolated(world, toggles_program(n), n))
        t["fixed"].append(bench_isolated(world, "x = 1\n", 10))
        t["typical_isolated"].append(sum(bench_isolated(w, p, 1000) for w, p in typical) / len(typical))
        t["typical_in_process"].append(sum(in_process(w, p) for w, p in typical) / len(typical))
        seconds, calls, prims = bench_shuttle_program(world, n // 200)
        t["shuttle_program"].append(seconds)
        shuttle_info = (calls, prims)
        t["shuttle_direct"].append(bench_shuttle_direct_api(world, n // 200))
        t["shuttle_raw"].append(bench_shuttle_raw(world, n // 200))
    m = {k: median(v) for k, v in t.items()}
    per_call_isolated = (m["isolated"] - m["fixed"]) / n
    per_call_direct = m["direct"] / n
    result = {
        "calls": n, "repeats": args.repeats, "statistic": "median of interleaved repeats",
        "machine": platform.processor() or platform.machine(), "python": platform.python_version(),
        "cpus": os.cpu_count(), "load_average_1min_at_end": round(os.getloadavg()[0], 2),
        "per_api_call_us": {"isolated_executor": round(per_call_isolated * 1e6, 2),
                            "direct_api": round(per_call_direct * 1e6, 2),
                            "raw_simulator_step": round(m["raw"] / n * 1e6, 2)},
        "ratio_isolated_vs_direct_per_call": round(per_call_isolated / per_call_direct, 3),
        "ratio_isolated_vs_direct_whole_program": round(m["isolated"] / m["direct"], 3),
        "ratio_direct_api_vs_raw_simulator": round(m["direct"] / m["raw"], 3),
        "target": "isolated < 2x direct per API call",
        "fixed_cost_per_program_ms": round(m["fixed"] * 1e3, 2),
        "typical_program": {
            "task_types": list(TYPICAL_TYPES),
            "isolated_ms": round(m["typical_isolated"] * 1e3, 2),
            "in_process_sandbox_ms": round(m["typical_in_process"] * 1e3, 2),
            "ratio_fixed_cost_vs_typical_isolated": round(m["fixed"] / m["typical_isolated"], 3),
            "ratio_isolated_vs_in_process": round(m["typical_isolated"] / m["typical_in_process"], 3),
        },
        "navigation_workload": {
            "api_calls": shuttle_info[0], "primitive_actions": shuttle_info[1],
            "isolated_program_seconds": round(m["shuttle_program"], 4),
            "direct_api_seconds": round(m["shuttle_direct"], 4),
            "raw_simulator_seconds": round(m["shuttle_raw"], 4),
            "ratio_isolated_program_vs_direct_api": round(m["shuttle_program"] / m["shuttle_direct"], 3),
            "ratio_direct_api_vs_raw_simulator": round(m["shuttle_direct"] / m["shuttle_raw"], 3),
        },
        "worker_replacement": bench_replace(max(3, args.repeats // 3)),
        "security": security(args.corpus_timeout),
    }
    out = ROOT / "results" / "executor.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
