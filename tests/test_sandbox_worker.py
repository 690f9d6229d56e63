"""Programs run in isolated, resource-limited worker processes; the executor's world stays exact.

Real worker processes, the real simulator and the hostile corpus; no doubles.
"""

from __future__ import annotations

import copy
import json
import multiprocessing
import os
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from icalkit.agents.api import ApiConfig
from icalkit.agents.api.runtime import ApiRuntime
from icalkit.agents.executor import Executor, ExecutorLimits
from icalkit.agents.sandbox import SandboxLimits
from icalkit.agents.sandbox_replay import LogReplay, WorkerProtocolError
from icalkit.agents.worker_pool import IsolationLimits, WorkerPool, shared_pool
from icalkit.envs.household.scene import generate_scene
from icalkit.envs.household.simulator import Simulator
from icalkit.envs.household.state import World

CORPUS = sorted((Path(__file__).parent / "data" / "hostile_programs").glob("*.py"))
C_CALL = "names = ['a'] * 100000\nmug = InteractionObject('Mug')\nbest = max(names, key=names.count)\n"
WALK_THEN_HANG = "mug = InteractionObject('Mug')\nmug.go_to()\nnames = ['a'] * 100000\nbest = max(names, key=names.count)\n"
PROBE = "mug = InteractionObject('Mug')\nprint(mug.check_attribute('holding', False))\n"


@pytest.fixture(scope="module")
def kitchen() -> World:
    return generate_scene(0, "train", "kitchen", {"Mug": 1, "Toaster": 1, "Bread": 1, "Knife": 1})


def limits(timeout_s: float = 1.0, **isolation: object) -> ExecutorLimits:
    iso = {"grace_s": 0.5, "verify_replay": True, **isolation}
    return ExecutorLimits(SandboxLimits(timeout_s=timeout_s), ApiConfig(), IsolationLimits(**iso))


def snapshot(world: World) -> tuple:
    a = world.agent
    return json.dumps(world.metadata(), sort_keys=True), (a.i, a.j, a.yaw, a.pitch), world.held


def replayed(world: World, primitives: list[tuple[str, str | None]]) -> tuple:
    """The world reached by sending ``primitives`` to a fresh simulator on a copy of ``world``."""
    sim = Simulator(copy.deepcopy(world))
    for action, target in primitives:
        sim.step(action, target)
    return snapshot(sim.world)


def children_of(pid: int) -> set[int]:
    kids: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        kids.update(int(k) for k in (task / "children").read_text().split())
    return kids


def expected_kind(path: Path) -> str:
    return path.read_text().splitlines()[0].split(":", 1)[1].strip()


# ---------------------------------------------------------------------------- the OS limits

LIMITED_CHILD = """
import json, os, threading
from icalkit.agents.sandbox_worker import apply_os_limits, _vm_size
apply_os_limits(_vm_size() + 256 * 2**20, 30)
out = {}
def attempt(name, fn):
    try:
        fn()
        out[name] = "allowed"
    except BaseException as exc:
        out[name] = type(exc).__name__
def write(path):
    with open(path, "w") as f:
        f.write("escaped")
attempt("write", lambda: write(os.environ["TARGET"]))
attempt("fork", os.fork)
attempt("thread", lambda: threading.Thread(target=print).start())
attempt("spawn", lambda: os.posix_spawn("/bin/true", ["true"], {}))
attempt("allocate_1gb", lambda: bytearray(2**30))
os.write(int(os.environ["OUT_FD"]), json.dumps(out).encode())
"""


def test_os_limits_stop_what_the_sandbox_rules_would_otherwise_have_to(tmp_path: Path) -> None:
    """Even code that got past the sandbox could not write files, fork, thread or hog memory."""
    r, w = os.pipe()
    target = tmp_path / "escaped.txt"
    env = {**os.environ, "TARGET": str(target), "OUT_FD": str(w)}
    proc = subprocess.run([sys.executable, "-c", LIMITED_CHILD], env=env, pass_fds=(w,), timeout=120,
                          capture_output=True, text=True)
    os.close(w)
    with os.fdopen(r) as f:
        out = json.loads(f.read() or "{}")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert out["write"] in ("PermissionError", "FileNotFoundError", "OSError")
    assert out["fork"] == out["spawn"] == "BlockingIOError"
    assert out["thread"] == "RuntimeError"
    assert out["allocate_1gb"] == "MemoryError"
    assert not target.exists()


# ---------------------------------------------------------------------------- static checks first

def test_refused_and_unusable_programs_never_reach_a_worker(kitchen: World) -> None:
    pool = WorkerPool()
    ex = Executor(Simulator(copy.deepcopy(kitchen)), limits(), pool=pool)
    before = snapshot(ex.sim.world)
    cases = {
        "import os\n": "line 1: import is not allowed",
        "": "the program is empty",
        "# only a comment\n\n": "the program is empty",
        b"\x00\x01\xfe\xff binary": "NUL bytes",
        "x = 1\n" * 400_000: "characters",
        "x = " + "(" * 300 + "1" + ")" * 300 + "\n": "syntax error",
        "x = 'Mug'" + ".count" * 400 + "\n": "nested more than 100 levels",
        "x = " + "[" * 90 + "]" * 90 + "\n": "",  # nested, but within the limit: runs
        12345: "must be text",
        None: "must be text",
    }
    for program, reason in cases.items():
        trace = ex.run(program)
        if not reason:
            assert trace.failure is None, trace.failure
            continue
        assert trace.failure is not None and trace.failure.kind == "refused", program
        assert reason in trace.failure.message, (reason, trace.failure.message)
    for plan, reason in ((b"\x00 binary", "must be text"), (["Navigation mug", 3], "must be text"),
                         ("Navigation mug\n" * 5000, "characters")):
        trace = ex.run(plan, mode="flat")
        assert trace.failure.kind == "refused" and reason in trace.failure.message
    assert pool.started == 1  # only the one runnable program needed a worker
    assert snapshot(ex.sim.world) == before
    pool.close()


# ---------------------------------------------------------------------------- killed workers

def test_a_killed_worker_leaves_the_world_at_its_completed_primitives(kitchen: World) -> None:
    pool = WorkerPool()
    ex = Executor(Simulator(copy.deepcopy(kitchen)), limits(), pool=pool)
    start = copy.deepcopy(ex.sim.world)
    trace = ex.run(WALK_THEN_HANG)
    f = trace.failure
    assert f.kind == "limit" and f.line == 4 and "wall-clock limit" in f.message
    assert f.code == "best = max(names, key=names.count)"
    assert [c.method for c in trace.calls] == ["go_to"] and trace.calls[0].success
    assert len(trace.primitive_actions) == trace.steps == ex.sim.steps > 0
    assert snapshot(ex.sim.world) == replayed(start, trace.primitive_actions)
    assert set(ex.sim.visible_objects()) <= ex.runtime.seen
    again = ex.run(PROBE)  # a fresh worker took the killed one's place
    assert again.failure is None and again.output == "True\n"
    assert pool.started == 2
    pool.close()


def test_cpu_limit_kills_mid_stream_and_nothing_completed_is_lost(kitchen: World) -> None:
    """SIGXCPU can land anywhere, even inside an API call: the world is what the trace says."""
    lim = limits(timeout_s=120.0, cpu_s=1.0, log_mb=64)  # 8 MB of actions took under 1 CPU second here
    lim.sandbox.max_loop_iterations = 10**9
    lim.api.max_steps = 10**8
    ex = Executor(Simulator(copy.deepcopy(kitchen)), lim)
    start = copy.deepcopy(ex.sim.world)
    trace = ex.run("t = InteractionObject('Toaster')\nwhile True:\n    t.toggle_on()\n    t.toggle_off()\n")
    assert trace.failure.kind == "limit" and "CPU-time limit" in trace.failure.message
    assert trace.failure.line in (2, 3, 4)  # any line of the loop: its test runs every turn too
    assert len(trace.calls) > 10 and trace.steps == ex.sim.steps == len(trace.primitive_actions)
    assert snapshot(ex.sim.world) == replayed(start, trace.primitive_actions)
    assert ex.run(PROBE).failure is None


def test_memory_limit_ends_a_huge_implicit_string(kitchen: World) -> None:
    ex = Executor(Simulator(copy.deepcopy(kitchen)), limits(timeout_s=30.0, memory_mb=200))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    trace = ex.run("row = ['x' * 100000] * 100000\nprint(row)\n")
    assert trace.failure.kind == "limit" and trace.failure.line == 2
    assert "memory limit" in trace.failure.message
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak < 100 * 1024  # KiB
    assert ex.run(PROBE).failure is None


def test_api_arguments_are_described_within_bounds(kitchen: World) -> None:
    ex = Executor(Simulator(copy.deepcopy(kitchen)), limits(timeout_s=5.0))
    trace = ex.run("mug = InteractionObject('Mug')\nrow = ['x' * 100000] * 100000\n"
                   "mug.check_attribute('dirty', row)\n")
    assert trace.failure is None, trace.failure
    assert set(ex.sim.visible_objects()) <= ex.runtime.seen  # the worker's agent saw what it walked past
    assert len(trace.calls[0].args[1]) < 1000 and trace.calls[0].args[1].startswith("['xxx")


# ---------------------------------------------------------------------------- everywhere it is used

def test_limits_hold_when_called_from_a_worker_thread(kitchen: World) -> None:
    ex = Executor(Simulator(copy.deepcopy(kitchen)), limits())
    traces = []
    thread = threading.Thread(target=lambda: traces.extend(ex.run(p) for p in (C_CALL, "while True:\n    x = 1\n")))
    thread.start()
    thread.join(60.0)
    assert not thread.is_alive()
    assert [t.failure.kind for t in traces] == ["limit", "limit"]
    assert traces[0].failure.line == 3


def _child(queue: multiprocessing.Queue, world: World) -> None:
    ex = Executor(Simulator(world), limits())
    hung, ok = ex.run(C_CALL), ex.run(PROBE)
    queue.put((hung.failure.kind, hung.failure.line, ok.failure, ok.output))


@pytest.mark.parametrize("method,daemon", [("fork", True), ("fork", False), ("spawn", True)])
def test_executor_works_inside_multiprocessing_children(kitchen: World, method: str, daemon: bool) -> None:
    shared_pool()  # a parent that already has a pool: a forked child must not use the parent's workers
    ctx = multiprocessing.get_context(method)
    queue = ctx.Queue()
    proc = ctx.Process(target=_child, args=(queue, copy.deepcopy(kitchen)), daemon=daemon)
    proc.start()
    result = queue.get(timeout=180)
    proc.join(30)
    assert result == ("limit", 3, None, "True\n")
    assert proc.exitcode == 0


# ---------------------------------------------------------------------------- the hostile corpus

def run_corpus(kitchen: World, paths: list[Path], timeout_s: float, grace_s: float) -> dict[str, str]:
    """Each program: the user-facing guarantees, checked one by one."""
    pool = WorkerPool()
    ex = Executor(Simulator(copy.deepcopy(kitchen)), limits(timeout_s, grace_s=grace_s), pool=pool)
    kinds = {}
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for path in paths:
        before = copy.deepcopy(ex.sim.world)
        start = time.monotonic()
        trace = ex.run(path.read_text())
        elapsed = time.monotonic() - start
        assert trace.failure is not None, path.name
        kinds[path.name] = trace.failure.kind
        assert trace.failure.kind == expected_kind(path), (path.name, trace.failure)
        assert elapsed < timeout_s + grace_s + 10.0, path.name  # returned: no hang (generous bound)
        assert snapshot(ex.sim.world) == replayed(before, trace.primitive_actions), path.name
        workers = set(pool.idle_pids())
        assert children_of(os.getpid()) >= workers
        for pid in workers:
            assert not children_of(pid), f"{path.name}: a worker has a child process"
            uid = int(Path(f"/proc/{pid}/status").read_text().split("Uid:")[1].split()[0])
            assert uid != 0 or os.geteuid() != 0  # a root host's workers run as nobody
            jail = Path(f"/proc/{pid}/root")
            if os.geteuid() == 0:
                assert not any(jail.iterdir()), f"{path.name}: something was written"
        assert ex.run(PROBE).output == "True\n", path.name  # host and executor still work
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak < 200 * 1024  # KiB
    pool.close()
    return kinds


def test_hostile_corpus_is_refused_or_contained(kitchen: World) -> None:
    kinds = run_corpus(kitchen, CORPUS, timeout_s=0.5, grace_s=0.5)
    assert len(kinds) >= 60 and set(kinds.values()) == {"refused", "limit", "error"}


@pytest.mark.slow
def test_hostile_corpus_under_the_default_limits_from_a_thread(kitchen: World) -> None:
    kinds: dict[str, str] = {}
    errors: list[BaseException] = []

    def run() -> None:
        try:
            kinds.update(run_corpus(kitchen, CORPUS, timeout_s=SandboxLimits().timeout_s,
                                    grace_s=IsolationLimits().grace_s))
        except BaseException as exc:  # reported in the main thread
            errors.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(900)
    assert not errors, errors
    assert len(kinds) == len(CORPUS)


# ---------------------------------------------------------------------------- the log is untrusted

@pytest.mark.parametrize("lines,reason", [
    ([b"\xff\xfe"], "malformed"),
    ([b"x\tjunk"], "unknown action-log record"),
    ([b"c\tteleport\t1\tMug"], "unknown API method"),
    ([b"p\tMoveAhead\t\t1"], "outside an API call"),
    ([b"c\tgo_to\t1\tMug", b"p\tPickup\tToaster_1\t1"], "reported the opposite"),
    ([b"c\tgo_to\t1\tMug", b'E\t["Mug",[],"yes","",null]'], "bad call outcome"),
    ([b"c\tgo_to\t1\tMug", b"E\t{not json"], "malformed call-end"),
])
def test_replay_rejects_what_a_correct_worker_cannot_send(kitchen: World, lines: list[bytes],
                                                          reason: str) -> None:
    runtime = ApiRuntime(Simulator(copy.deepcopy(kitchen)))
    with pytest.raises(WorkerProtocolError, match=reason):
        LogReplay(runtime)(lines)


def test_replay_refuses_primitives_past_the_budget(kitchen: World) -> None:
    runtime = ApiRuntime(Simulator(copy.deepcopy(kitchen)), ApiConfig(max_steps=2))
    replay = LogReplay(runtime)
    replay([b"c\tgo_to\t1\tMug", b"p\tRotateLeft\t\t1", b"p\tRotateLeft\t\t1"])
    with pytest.raises(WorkerProtocolError, match="budget"):
        replay([b"p\tRotateLeft\t\t1"])
    assert runtime.steps == 2
