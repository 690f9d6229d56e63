"""Safe executor: runs a generated program against the household simulator and returns a trace.

Python programs are checked statically here (:meth:`Sandbox.check`: a refused program never leaves
this process and never touches the world), then run in a warm sandbox worker process under OS
limits (:mod:`icalkit.agents.worker_pool`, :mod:`icalkit.agents.sandbox_worker`) against a copy
of the world. The worker streams every primitive it sends to its copy; the executor replays them
on its own simulator, which stays the authoritative one (:mod:`icalkit.agents.sandbox_replay`), so
after a program, even one whose worker had to be killed, the world is the state reached by the
primitives that completed. Flat LLM-Planner plans are data, not code: they run step by step
through the same API in this process. The :class:`Trace` lists every API call with its primitive
actions, success, error and source line, the first failure with the code completed before it and
the code remaining, and the final goal-condition progress.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from icalkit.agents.api.flat import FlatPlanError, execute_step, parse_flat_plan
from icalkit.agents.api.household import InteractionObject, bind_api, sandbox_attributes
from icalkit.agents.api.runtime import (
    ActionFailed,
    ApiCall,
    ApiConfig,
    ApiRuntime,
    ApiUsageError,
    BudgetExceeded,
)
from icalkit.agents.parsing import extract_code
from icalkit.agents.sandbox import Sandbox, SandboxLimits, SandboxRefused
from icalkit.agents.sandbox_outcome import FAILURE_KINDS
from icalkit.agents.sandbox_replay import LogReplay, WorkerProtocolError, restore_runtime_state
from icalkit.agents.sandbox_worker import world_digest
from icalkit.agents.worker_pool import IsolationLimits, WorkerError, WorkerPool, shared_pool
from icalkit.envs.household.simulator import Simulator
from icalkit.envs.household.tasks.checker import GoalResult, check_goal
from icalkit.envs.household.tasks.task import Task

MODES = ("python", "flat")


@dataclass
class ExecutorLimits:
    """Limits of program execution (sandbox rules and timers, OS limits of the worker process)
    and of the episode (TEACh budgets)."""

    sandbox: SandboxLimits = field(default_factory=SandboxLimits)
    api: ApiConfig = field(default_factory=ApiConfig)
    isolation: IsolationLimits = field(default_factory=IsolationLimits)


@dataclass
class Failure:
    """Where and why a program stopped early.

    Attributes:
        kind: ``action`` (an API call failed), ``usage`` (wrong API use), ``error`` (a Python
            error in the program, or a worker that died or misbehaved), ``limit`` (time, loop,
            memory, CPU, wall clock, TEACh budget; the message names which), ``refused`` (static
            sandbox check, unusable program text or unparsable flat plan).
        message: the reason, for the planner.
        line: program line (flat mode: step number), when known.
        code: the failing line's source text.
        completed: code before the failing line.
        remaining: code from the failing line on.
    """

    kind: str
    message: str
    line: int | None = None
    code: str = ""
    completed: str = ""
    remaining: str = ""


@dataclass
class Trace:
    """Everything that happened when a program ran."""

    program: str
    mode: str
    calls: list[ApiCall]
    failure: Failure | None
    goal: GoalResult | None
    output: str = ""
    steps: int = 0
    failures: int = 0

    @property
    def completed(self) -> bool:
        """The program ran to its end without a failure."""
        return self.failure is None

    @property
    def success(self) -> bool:
        """The task's goal conditions all hold (False when there is no task)."""
        return self.goal is not None and self.goal.success

    @property
    def primitive_actions(self) -> list[tuple[str, str | None]]:
        """All primitive (action, target) pairs sent to the simulator, in order."""
        return [(p.action, p.target) for c in self.calls for p in c.primitives]

    def to_dict(self) -> dict:
        out = {k: v for k, v in asdict(self).items() if k != "goal"}
        if self.goal is not None:
            out["goal"] = {"success": self.goal.success, "satisfied": self.goal.satisfied,
                           "total": self.goal.total, "failure_descs": list(self.goal.failure_descs)}
        return out


class Executor:
    """Runs programs for one episode; the TEACh budgets carry over between runs.

    Args:
        env: a :class:`Simulator` with a world, or a ``HouseholdEnv`` after ``reset`` (its
            simulator and task are used; primitives are sent to the simulator directly).
        limits: sandbox, worker and episode limits.
        pool: worker pool (default: the process's shared pool of warm workers).

    ``run`` may be called from any thread and in any process (multiprocessing children included);
    one executor runs one program at a time.
    """

    def __init__(self, env: Any, limits: ExecutorLimits | None = None,
                 pool: WorkerPool | None = None) -> None:
        self.limits = limits or ExecutorLimits()
        self.sim = _simulator_of(env)
        self.default_task: Task | None = getattr(env, "task", None)
        self.runtime = ApiRuntime(self.sim, self.limits.api)
        self.api_class = bind_api(self.runtime)
        policy = {self.api_class: sandbox_attributes(), InteractionObject: sandbox_attributes()}
        self.sandbox = Sandbox({"InteractionObject": self.api_class}, policy, self.limits.sandbox)
        self.pool = pool

    def run(self, program: Any, task: Task | None = None, mode: str = "python") -> Trace:
        """Execute a program (``python``) or a flat high-level plan (``flat``).

        Args:
            program: the program text, or a model answer with a fenced code block (flat mode:
                text or list of steps). Any value is accepted; what is not a usable program
                gets a ``refused`` failure.
            task: task whose goal conditions are checked at the end (default: the env's task).
            mode: ``python`` or ``flat``.

        Returns:
            The trace. Never raises for anything the program does or is, and returns within the
            sandbox timeout plus the worker's grace period (plus a worker start-up, if needed).
        """
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; expected one of {MODES}")
        first_call = self.runtime.program_start = len(self.runtime.calls)
        text, output = "", ""
        try:
            if mode == "python":
                text, failure, output = self._run_python(program)
            else:
                text, failure = self._run_flat(program)
        except Exception as exc:  # a bug of ours must not end the caller's run either
            failure = Failure("error", f"internal error of the executor: {type(exc).__name__}: "
                                       f"{str(exc)[:300]}")
        task = task or self.default_task
        goal = check_goal(task, self.sim.world.metadata()) if task is not None else None
        return Trace(text, mode, self.runtime.calls[first_call:], failure, goal, output,
                     self.runtime.steps, self.runtime.failures)

    # ------------------------------------------------------------------ python programs

    def _run_python(self, program: Any) -> tuple[str, Failure | None, str]:
        text, failure = _program_text(program, self.limits.sandbox.max_source_chars)
        if failure is not None:
            return text, failure, ""
        try:
            tree = self.sandbox.check(text)  # in this process: no round trip for an ordinary mistake
        except SandboxRefused as exc:
            return text, _failure(text, "refused", str(exc), exc.lineno or None), ""
        if not tree.body:
            return text, Failure("refused", "the program is empty (no statements, only blanks "
                                            "or comments)"), ""
        return self._run_in_worker(text)

    def _run_in_worker(self, text: str) -> tuple[str, Failure | None, str]:
        iso, box = self.limits.isolation, self.limits.sandbox
        pool = self.pool or shared_pool()
        try:
            worker = pool.acquire(iso)
        except (WorkerError, OSError) as exc:
            return text, Failure("error", f"the sandbox worker could not start: {exc}"), ""
        rt = self.runtime
        request = {"program": text, "world": self.sim.world, "steps": self.sim.steps,
                   "failures": self.sim.failures, "api": self.limits.api, "sandbox": box,
                   "seen": sorted(rt.seen), "claimed": sorted(rt.claimed),
                   "last_reach": rt._last_reach, "cpu_s": iso.cpu_s or box.timeout_s + 1.0,
                   "digest": iso.verify_replay}
        replay = LogReplay(rt)
        healthy = False
        try:
            try:
                outcome = worker.run(request, box.timeout_s + iso.grace_s, replay)
            except WorkerProtocolError as exc:
                worker.kill()
                replay.interrupt(str(exc))
                replay.note_stop()
                return text, _failure(text, "error", f"the sandbox worker misbehaved: {exc}",
                                      None), ""
            answer = outcome.answer
            if answer is None:
                message = outcome.message
                replay.interrupt(f"stopped: {message}")
                replay.note_stop()
                line = outcome.line if outcome.line is not None else _last_line(replay.calls)
                kind = "limit" if outcome.stopped in ("deadline", "cpu") else "error"
                return text, _failure(text, kind, _at_line(line, message), line), ""
            healthy = (not answer.get("recycle") and isinstance(answer.get("cpu_s"), (int, float))
                       and answer["cpu_s"] + 2 * (iso.cpu_s or box.timeout_s + 1) < iso.worker_cpu_s)
            return text, self._finish(text, answer, replay), _clip(answer.get("output"), box.max_output_chars)
        finally:
            pool.release(worker, iso, healthy)

    def _finish(self, text: str, answer: dict, replay: LogReplay) -> Failure | None:
        replay.interrupt("stopped before the call returned")
        restore_runtime_state(self.runtime, answer)
        digest = answer.get("digest")
        if self.limits.isolation.verify_replay and digest != world_digest(self.sim.world):
            return Failure("error", "the replayed world differs from the worker's world")
        kind = answer.get("kind")
        if kind == "ok" and answer.get("ok") is True:
            return None
        if kind not in FAILURE_KINDS:
            return Failure("error", "the sandbox worker sent an unknown outcome")
        line = answer.get("line")
        line = line if isinstance(line, int) and not isinstance(line, bool) else None
        return _failure(text, kind, _clip(answer.get("message"), 2000) or kind, line)

    # ------------------------------------------------------------------ flat plans

    def _run_flat(self, plan: Any) -> tuple[str, Failure | None]:
        if not isinstance(plan, str) and not (isinstance(plan, (list, tuple))
                                              and all(isinstance(p, str) for p in plan)):
            return "", Failure("refused", f"a flat plan must be text or a list of steps, got "
                                          f"{type(plan).__name__}")
        size = len(plan) if isinstance(plan, str) else sum(map(len, plan))
        if size > self.limits.sandbox.max_source_chars:
            text = plan if isinstance(plan, str) else "\n".join(plan)
            return text[:200], Failure("refused", f"the plan has {size} characters "
                                                  f"(max {self.limits.sandbox.max_source_chars})")
        try:
            steps = parse_flat_plan(plan)
        except FlatPlanError as exc:
            text = plan if isinstance(plan, str) else "\n".join(map(str, plan))
            return text, Failure("refused", str(exc))
        text = "\n".join(str(s) for s in steps)
        objects: dict[str, InteractionObject] = {}
        for step in steps:
            self.runtime.line_override = step.index
            try:
                execute_step(step, self.api_class, objects)
            except (ActionFailed, ApiUsageError, BudgetExceeded) as exc:
                kind = "limit" if isinstance(exc, BudgetExceeded) else (
                    "action" if isinstance(exc, ActionFailed) else "usage")
                return text, _failure(text, kind, str(exc), step.index)
            finally:
                self.runtime.line_override = None
        return text, None


def _simulator_of(env: Any) -> Simulator:
    sim = env if isinstance(env, Simulator) else getattr(env, "sim", None)
    if not isinstance(sim, Simulator):
        raise TypeError(f"Executor needs a Simulator or an env with a .sim Simulator, got "
                        f"{type(env).__name__}")
    if sim.world is None:
        raise ValueError("the simulator has no world; reset the env (or the simulator) first")
    return sim


def _program_text(program: Any, max_chars: int) -> tuple[str, Failure | None]:
    """The program as text (bytes decoded, lists joined, a fenced block extracted), or a refusal."""
    if isinstance(program, (bytes, bytearray)):
        program = bytes(program[: 4 * max_chars + 4]).decode("utf-8", errors="replace")
    elif isinstance(program, (list, tuple)) and all(isinstance(p, str) for p in program):
        program = "\n".join(program)
    if not isinstance(program, str):
        return "", Failure("refused", f"a program must be text, got {type(program).__name__}")
    if len(program) > 4 * max_chars:  # too long even for a model answer around a program
        return program[:200], Failure("refused", f"the program text has {len(program)} characters "
                                                 f"(max {max_chars})")
    text = extract_code(program)
    if "\x00" in text:
        return text, Failure("refused", "the program text contains NUL bytes (binary data?)")
    return text, None


def _last_line(calls: list[ApiCall]) -> int | None:
    return calls[-1].line if calls else None


def _at_line(line: int | None, message: str) -> str:
    return f"line {line}: {message}" if line else message


def _clip(value: Any, limit: int) -> str:
    return value[:limit] if isinstance(value, str) else ""


def _failure(program: str, kind: str, message: str, line: int | None) -> Failure:
    lines = program.splitlines()
    if line is None or not 1 <= line <= len(lines):
        return Failure(kind, message, line)
    return Failure(kind, message, line, lines[line - 1].strip(),
                   "\n".join(lines[: line - 1]), "\n".join(lines[line - 1:]))
