"""Safe executor: runs a generated program against the household simulator and returns a trace.

Python programs run inside :class:`~icalkit.agents.sandbox.Sandbox` with the household API bound to
an episode-level :class:`~icalkit.agents.api.runtime.ApiRuntime`; flat LLM-Planner plans run step
by step through the same API. The :class:`Trace` lists every API call with its primitive actions,
success, error and source line, the first failure with the code completed before it and the code
remaining, and the final goal-condition progress.
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
from icalkit.agents.sandbox import Sandbox, SandboxLimits, SandboxResult
from icalkit.envs.household.simulator import Simulator
from icalkit.envs.household.tasks.checker import GoalResult, check_goal
from icalkit.envs.household.tasks.task import Task

MODES = ("python", "flat")


@dataclass
class ExecutorLimits:
    """Limits of program execution (sandbox) and of the episode (TEACh budgets)."""

    sandbox: SandboxLimits = field(default_factory=SandboxLimits)
    api: ApiConfig = field(default_factory=ApiConfig)


@dataclass
class Failure:
    """Where and why a program stopped early.

    Attributes:
        kind: ``action`` (an API call failed), ``usage`` (wrong API use), ``error`` (a Python
            error in the program), ``limit`` (time/loop/memory/TEACh budget), ``refused``
            (static sandbox check or unparsable flat plan).
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
        limits: sandbox and episode limits.
    """

    def __init__(self, env: Any, limits: ExecutorLimits | None = None) -> None:
        self.limits = limits or ExecutorLimits()
        self.sim = _simulator_of(env)
        self.default_task: Task | None = getattr(env, "task", None)
        self.runtime = ApiRuntime(self.sim, self.limits.api)
        self.api_class = bind_api(self.runtime)
        policy = {self.api_class: sandbox_attributes(), InteractionObject: sandbox_attributes()}
        self.sandbox = Sandbox({"InteractionObject": self.api_class}, policy, self.limits.sandbox)

    def run(self, program: str | list[str], task: Task | None = None, mode: str = "python") -> Trace:
        """Execute a program (``python``) or a flat high-level plan (``flat``).

        Args:
            program: the program text, or a model answer with a fenced code block (flat mode:
                text or list of steps).
            task: task whose goal conditions are checked at the end (default: the env's task).
            mode: ``python`` or ``flat``.

        Returns:
            The trace; never raises for anything the program does.
        """
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; expected one of {MODES}")
        first_call = len(self.runtime.calls)
        if mode == "python":
            text = extract_code(program if isinstance(program, str) else "\n".join(program))
            failure, output = self._run_python(text)
        else:
            text, failure = self._run_flat(program)
            output = ""
        task = task or self.default_task
        goal = check_goal(task, self.sim.world.metadata()) if task is not None else None
        return Trace(text, mode, self.runtime.calls[first_call:], failure, goal, output,
                     self.runtime.steps, self.runtime.failures)

    def _run_python(self, program: str) -> tuple[Failure | None, str]:
        result = self.sandbox.run(program)
        if result.ok:
            return None, result.output
        return _failure(program, result.kind, _message(result), result.lineno, result.exception), result.output

    def _run_flat(self, plan: str | list[str]) -> tuple[str, Failure | None]:
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
                kind = "limit" if isinstance(exc, BudgetExceeded) else None
                return text, _failure(text, kind or "error", str(exc), step.index, exc)
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


def _message(result: SandboxResult) -> str:
    exc = result.exception
    if isinstance(exc, (ActionFailed, ApiUsageError, BudgetExceeded)):
        return str(exc)
    return result.message


def _failure(program: str, kind: str, message: str, line: int | None,
             exc: BaseException | None) -> Failure:
    if isinstance(exc, ActionFailed):
        kind = "action"
    elif isinstance(exc, ApiUsageError):
        kind = "usage"
    lines = program.splitlines()
    if line is None or not 1 <= line <= len(lines):
        return Failure(kind, message, line)
    return Failure(kind, message, line, lines[line - 1].strip(),
                   "\n".join(lines[: line - 1]), "\n".join(lines[line - 1:]))
