"""Episode-level machinery behind the action API: primitive stepping, budgets, call records.

An :class:`ApiRuntime` wraps one :class:`~icalkit.envs.household.simulator.Simulator` for one
episode. Every API call is recorded as an :class:`ApiCall` with the primitive actions it compiled
to; every primitive counts toward the TEACh limits (``max_steps`` primitive actions and
``max_failures`` failed API calls per episode). A failed API call raises :class:`ActionFailed`
(the program stops there); running past a budget raises :class:`BudgetExceeded`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from icalkit.agents.sandbox import SandboxLimitExceeded, current_program_line
from icalkit.envs.household.actions import MOVES
from icalkit.envs.household.navigation import NavigationError, path_to_object
from icalkit.envs.household.simulator import Simulator
from icalkit.envs.household.state import SimObject, World


class ApiUsageError(ValueError):
    """The program called the API wrongly (unknown class or attribute, bad argument type)."""


class ActionFailed(Exception):
    """An API call could not be carried out; the message is meant for the planner."""


class BudgetExceeded(SandboxLimitExceeded):
    """The episode ran out of primitive steps or allowed failures (TEACh limits)."""


@dataclass
class ApiConfig:
    """Limits and knowledge of the API runtime.

    Attributes:
        max_steps: primitive actions per episode (TEACh: 1000).
        max_failures: failed API calls per episode (TEACh: 30).
        oracle_object_map: resolve objects never seen yet from the simulator's ground truth (the
            agent "knows" the map); off: only visible or previously seen objects resolve.
    """

    max_steps: int = 1000
    max_failures: int = 30
    oracle_object_map: bool = True

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


class ApiRuntime:
    """Steps the simulator for API calls and keeps the episode's counters and records.

    Args:
        sim: simulator with a world already reset.
        config: limits and oracle settings.
    """

    def __init__(self, sim: Simulator, config: ApiConfig | None = None) -> None:
        if sim.world is None:
            raise ValueError("the simulator has no world; call sim.reset(world) first")
        self.sim = sim
        self.config = config or ApiConfig()
        self._first_step = sim.steps
        self.failures = 0
        self.calls: list[ApiCall] = []
        self.beliefs: list[tuple[str, str, Any]] = []
        self.claimed: set[str] = set()
        self.seen: set[str] = set(sim.visible_objects())
        self.line_override: int | None = None
        self._current: ApiCall | None = None
        self._last_reach: tuple | None = None

    @property
    def world(self) -> World:
        return self.sim.world

    @property
    def steps(self) -> int:
        """Primitive actions sent since this runtime started (counted by the simulator)."""
        return self.sim.steps - self._first_step

    # ------------------------------------------------------------------ call records

    def call(self, method: str, subject: Any, args: tuple = ()) -> _CallScope:
        """Context recording a top-level API call (nested calls add to the outer record).

        ``subject`` and API-object ``args`` describe themselves with ``_api_label()`` (the
        resolved id once known); other arguments are recorded with ``repr``.
        """
        return _CallScope(self, method, subject, args)

    # ------------------------------------------------------------------ stepping

    def step(self, action: str, target: str | None = None) -> None:
        """Send one primitive; raises ActionFailed with the simulator's message when it fails."""
        if self.steps >= self.config.max_steps:
            raise BudgetExceeded(f"the episode's limit of {self.config.max_steps} steps is used up")
        result = self.sim.step(action, target=target)
        if self._current is not None:
            self._current.primitives.append(Primitive(result.action, result.target, result.success,
                                                      result.error))
        if result.success and (action in MOVES or action == "Open"):
            self.seen.update(self.sim.visible_objects())
        if not result.success:
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

    def candidates(self, object_type: str) -> list[SimObject]:
        """Known instances of a type, best first: unclaimed, held, visible, not shut away, nearest."""
        objs = self.world.of_type(object_type)
        visible = set(self.sim.visible_objects())
        known = [o for o in objs if o.object_id in visible or o.object_id in self.seen
                 or self.world.held == o.object_id or self.config.oracle_object_map]

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
        return self.record

    def __exit__(self, exc_type: type | None, exc: BaseException | None, tb: Any) -> None:
        record = self.record
        if record is None:
            return
        rt = self.runtime
        rt._current = None
        record.object = self.subject._api_label()
        if self.args:
            record.args = [_describe(a) for a in self.args]
        if isinstance(exc, ActionFailed):
            record.success, record.error = False, str(exc)
            rt.failures += 1
            if rt.failures > rt.config.max_failures:
                raise BudgetExceeded(f"more than {rt.config.max_failures} failed actions in "
                                     f"this episode (last: {exc})") from None


def _describe(value: Any) -> str:
    label = getattr(value, "_api_label", None)
    return label() if label is not None else repr(value)
