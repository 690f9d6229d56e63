"""Episode-level machinery behind the action API: primitive stepping, budgets, call records.

An :class:`ApiRuntime` wraps one :class:`~icalkit.envs.household.simulator.Simulator` for one
episode. Every API call is recorded as an :class:`ApiCall` with the primitive actions it compiled
to; every primitive counts toward TEACh's episode budget (``max_steps`` primitive actions and
``max_failures`` failed primitive actions since the simulator's reset, checked by
:func:`~icalkit.envs.household.budget.budget_exhausted`, the same test the gym env truncates
with). A failed API call raises :class:`ActionFailed` (the program stops there); reaching a budget
raises :class:`BudgetExceeded`. A ``listener`` hears every call and primitive as it happens (the
sandbox worker streams them to the executor's process).
"""

from __future__ import annotations

import reprlib
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from icalkit.agents.sandbox import SandboxLimitExceeded, current_program_line
from icalkit.envs.household.actions import MOVES
from icalkit.envs.household.budget import TEACH_MAX_FAILURES, TEACH_MAX_STEPS, budget_exhausted
from icalkit.envs.household.navigation import NavigationError, path_to_object
from icalkit.envs.household.simulator import Simulator, StepResult
from icalkit.envs.household.state import SimObject, World


class ApiUsageError(ValueError):
    """The program called the API wrongly (unknown class or attribute, bad argument type)."""


class ActionFailed(Exception):
    """An API call could not be carried out; the message is meant for the planner."""


class BudgetExceeded(SandboxLimitExceeded):
    """The episode used up its primitive steps or allowed failed primitives (TEACh limits)."""


@dataclass
class ApiConfig:
    """Limits and knowledge of the API runtime.

    Attributes:
        max_steps: primitive actions per episode (TEACh: 1000).
        max_failures: failed primitive actions per episode (TEACh: 30).
        oracle_object_map: resolve objects never seen yet from the simulator's ground truth (the
            agent "knows" the map); off: only visible or previously seen objects resolve.
        precondition_checks: HELPER's pre-condition checks in the executor: an ``open`` /
            ``close`` / ``toggle_on`` / ``toggle_off`` whose state already holds and a ``pickup``
            of the object already held are no-ops; a ``pickup`` with another object in hand puts
            that one down first, and one from a closed container opens it; a ``place`` into a
            closed container opens it first, one of an object not in hand picks it up first,
            and one on a full receptacle named by class uses another of its class with room; a
            ``slice`` without a knife in hand fetches the
            nearest knife; a piece named before its object was sliced (``TomatoSliced``) slices
            that object first; ``toggle_on`` of an open microwave closes it; a knife class the
            room lacks resolves to its other knife; naming what an earlier attempt sliced reaches
            its pieces (``slice`` again is a no-op). Off: every call
            sends its primitive and fails as TEACh's simulator does.
    """

    max_steps: int = TEACH_MAX_STEPS
    max_failures: int = TEACH_MAX_FAILURES
    oracle_object_map: bool = True
    precondition_checks: bool = False

    def __post_init__(self) -> None:
        if self.max_steps <= 0 or self.max_failures <= 0:
            raise ValueError(f"ApiConfig limits must be positive, got max_steps={self.max_steps}, "
                             f"max_failures={self.max_failures}")


@dataclass(slots=True)
class Primitive:
    """One primitive action sent to the simulator."""

    action: str
    target: str | None
    success: bool
    error: str = ""


@dataclass(slots=True)
class ApiCall:
    """One top-level API call made by a program.

    Attributes:
        method: API method name, e.g. ``pickup_and_place``.
        object: resolved object id (or the class when resolution failed).
        args: printable arguments.
        line: program line (flat mode: step number), None outside a program.
        primitives: primitive actions the call compiled to, in order.
        success: whether the call succeeded.
        error: failure message.
        result: returned value for queries (``check_attribute``).
    """

    method: str
    object: str
    args: list[str]
    line: int | None
    primitives: list[Primitive] = field(default_factory=list)
    success: bool = True
    error: str = ""
    result: Any = None

    def to_dict(self) -> dict:
        return asdict(self)


class CallListener(Protocol):
    """Hears a runtime's top-level calls and primitives as they happen."""

    def call_started(self, record: ApiCall) -> None: ...

    def primitive(self, p: Primitive) -> None: ...

    def call_ended(self, record: ApiCall) -> None: ...


class ApiRuntime:
    """Steps the simulator for API calls and keeps the episode's records.

    Args:
        sim: simulator with a world already reset.
        config: limits and oracle settings.
    """

    def __init__(self, sim: Simulator, config: ApiConfig | None = None) -> None:
        if sim.world is None:
            raise ValueError("the simulator has no world; call sim.reset(world) first")
        self.sim = sim
        self.config = config or ApiConfig()
        self.calls: list[ApiCall] = []
        self.program_start = 0  # index in ``calls`` of the running program's first call (Executor.run)
        self.beliefs: list[tuple[str, str, Any]] = []
        self.claimed: set[str] = set()
        self.seen: set[str] = set(sim.visible_objects())
        self.line_override: int | None = None
        self.listener: CallListener | None = None
        self._current: ApiCall | None = None
        self._last_reach: tuple | None = None

    @property
    def world(self) -> World:
        return self.sim.world

    @property
    def steps(self) -> int:
        """Primitive actions sent in this episode (the simulator's count since its reset)."""
        return self.sim.steps

    @property
    def failures(self) -> int:
        """Failed primitive actions in this episode (the simulator's count since its reset)."""
        return self.sim.failures

    def over_budget(self) -> str | None:
        """Why the episode's TEACh budget is used up, or None."""
        return budget_exhausted(self.sim.steps, self.sim.failures, self.config.max_steps,
                                self.config.max_failures)

    # ------------------------------------------------------------------ call records

    def call(self, method: str, subject: Any, args: tuple = ()) -> _CallScope:
        """Context recording a top-level API call (nested calls add to the outer record).

        ``subject`` and API-object ``args`` describe themselves with ``_api_label()`` (the
        resolved id once known); other arguments are recorded with a size-bounded ``repr``.
        """
        return _CallScope(self, method, subject, args)

    # ------------------------------------------------------------------ stepping

    def apply(self, action: str, target: str | None = None, note_seen: bool = True) -> StepResult:
        """Send one primitive to the simulator (no budget check); with ``note_seen``, add what
        came into view after a move or an Open to :attr:`seen`."""
        result = self.sim.step(action, target=target)
        if note_seen and result.success and (action in MOVES or action == "Open"):
            self.seen.update(self.sim.visible_objects())
        return result

    def step(self, action: str, target: str | None = None) -> None:
        """Send one primitive; raises ActionFailed with the simulator's message when it fails,
        BudgetExceeded when the episode's budget is (or, by this failure, becomes) used up."""
        reason = self.over_budget()
        if reason is not None:
            raise BudgetExceeded(reason)
        result = self.apply(action, target)
        p = Primitive(result.action, result.target, result.success, result.error)
        if self._current is not None:
            self._current.primitives.append(p)
        if self.listener is not None:
            self.listener.primitive(p)
        if not result.success:
            reason = self.over_budget()
            if reason is not None:
                raise BudgetExceeded(f"{reason} (last: {result.error})")
            raise ActionFailed(result.error)

    def navigate_to(self, obj: SimObject) -> None:
        """Walk to a pose from which ``obj`` can be interacted with (no-op when held)."""
        if self.world.held == obj.object_id:
            return
        try:
            path = path_to_object(self.world, obj.object_id)
        except (NavigationError, KeyError) as exc:
            raise ActionFailed(f"Could not reach the {obj.object_type}: {exc}") from None
        for action in path:
            self.step(action)

    def interact(self, action: str, obj: SimObject) -> None:
        """Navigate if needed, then apply an interaction to ``obj``.

        Reach is checked with the simulator's own test, skipped when the last interaction was on
        the same object from the same pose (repeated toggles, open/close).
        """
        world = self.sim.world
        a = world.agent
        key = (a.i, a.j, a.yaw, a.pitch, obj.object_id, obj.position, obj.parent)
        if world.held != obj.object_id and key != self._last_reach and not self.sim.interactable(obj):
            self.navigate_to(obj)
        self.step(action, obj.object_id)
        self._last_reach = (a.i, a.j, a.yaw, a.pitch, obj.object_id, obj.position, obj.parent)

    # ------------------------------------------------------------------ object lookup

    def known_types(self) -> set[str]:
        """Object types :meth:`candidates` can resolve now (visible, seen, held, or all with the oracle map);
        a piece (``TomatoSliced``) counts where its whole object is known (the executor slices first)."""
        visible = set(self.sim.visible_objects())
        known = {o.object_type for o in self.world.objects.values() if self._is_known(o, visible)}
        return known | {t + "Sliced" for t in known}

    def _is_known(self, obj: SimObject, visible: set[str]) -> bool:
        """Whether the agent can name ``obj`` now: visible, seen, held, or any with the oracle map."""
        return (obj.object_id in visible or obj.object_id in self.seen or self.world.held == obj.object_id
                or self.config.oracle_object_map)

    def candidates(self, object_type: str) -> list[SimObject]:
        """Known instances of a type, best first: unclaimed, held, visible, not shut away, nearest."""
        objs = self.world.of_type(object_type)
        visible = set(self.sim.visible_objects())
        known = [o for o in objs if self._is_known(o, visible)]

        held = self.world.held

        def rank(o: SimObject) -> tuple:
            return (o.object_id in self.claimed, o.object_id != held, o.object_id not in visible,
                    o.object_id != held and self.sim.hidden(o), self.world.distance_to(o),
                    o.object_id)

        return sorted(known, key=rank)


class _CallScope:
    """Context manager behind :meth:`ApiRuntime.call` (a class: cheaper than a generator)."""

    __slots__ = ("runtime", "method", "subject", "args", "record")

    def __init__(self, runtime: ApiRuntime, method: str, subject: Any, args: tuple) -> None:
        self.runtime, self.method, self.subject, self.args = runtime, method, subject, args
        self.record: ApiCall | None = None

    def __enter__(self) -> ApiCall:
        rt = self.runtime
        if rt._current is not None:
            return rt._current
        line = rt.line_override if rt.line_override is not None else current_program_line()
        self.record = ApiCall(self.method, self.subject._api_label(), [], line)
        rt.calls.append(self.record)
        rt._current = self.record
        if rt.listener is not None:
            rt.listener.call_started(self.record)
        return self.record

    def __exit__(self, exc_type: type | None, exc: BaseException | None, tb: Any) -> None:
        record = self.record
        if record is None:
            return
        rt = self.runtime
        rt._current = None
        record.object = self.subject._api_label()
        if self.args:
            record.args = [describe(a) for a in self.args]
        if isinstance(exc, (ActionFailed, BudgetExceeded)):
            record.success, record.error = False, str(exc)
        if rt.listener is not None:
            rt.listener.call_ended(record)


_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = 80
_REPR.maxlist = _REPR.maxtuple = _REPR.maxdict = _REPR.maxset = 6
_REPR.maxlevel = 3


def describe(value: Any) -> str:
    """An argument's label: API objects name themselves, anything else a bounded repr (a huge
    argument costs no more than a small one)."""
    label = getattr(value, "_api_label", None)
    return label() if label is not None else _REPR.repr(value)
