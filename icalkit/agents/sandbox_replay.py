"""The executor's side of a worker run: replay the worker's action log on the real simulator.

The worker writes one line per event (see :class:`~icalkit.agents.sandbox_worker.ActionLog`:
a call starts, a primitive, a call ends). :class:`LogReplay` applies each primitive to the
executor's own simulator through its :class:`ApiRuntime` (so the world, the episode counters and
the objects seen are the executor's, never taken from the worker), checks that the outcome
matches, and rebuilds the call records of the trace. Everything a worker sends is treated as untrusted:
malformed lines, unknown methods, a primitive past the episode budget or an outcome that differs
from the replay raise :class:`WorkerProtocolError`.
"""

from __future__ import annotations

import json
from typing import Any

from icalkit.agents.api.household import public_methods
from icalkit.agents.api.runtime import ApiCall, ApiRuntime, Primitive

_METHODS = frozenset(public_methods())
_MAX_TEXT = 2000
_SCALARS = (bool, int, float, str, type(None))


class WorkerProtocolError(RuntimeError):
    """The worker sent something that a correct worker cannot send."""


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise WorkerProtocolError(f"{what} is not text")
    return value[:_MAX_TEXT]


class LogReplay:
    """Applies a worker's action log to ``runtime`` and collects the call records.

    Args:
        runtime: the executor's runtime (its simulator is the authoritative one).
    """

    def __init__(self, runtime: ApiRuntime) -> None:
        self.runtime = runtime
        self.calls: list[ApiCall] = []
        self.current: ApiCall | None = None
        self.primitives = 0

    def __call__(self, lines: list[bytes]) -> None:
        for raw in lines:
            try:
                kind, *fields = raw.decode().split("\t")
            except UnicodeDecodeError:
                raise WorkerProtocolError("malformed action-log line") from None
            if kind == "p":
                self._primitive(fields)
            elif kind == "c":
                self._started(fields)
            elif kind == "e":
                self._ended_plain(fields)
            elif kind == "E" and len(fields) == 1:
                try:
                    record = json.loads(fields[0])
                except ValueError:
                    raise WorkerProtocolError("malformed call-end record") from None
                self._ended(record)
            else:
                raise WorkerProtocolError(f"unknown action-log record {kind[:20]!r}")

    def _started(self, fields: list[str]) -> None:
        if len(fields) != 3 or self.current is not None:
            raise WorkerProtocolError("bad call-start record")
        method, line, obj = fields
        if method not in _METHODS:
            raise WorkerProtocolError(f"unknown API method {method[:40]!r}")
        if line and not line.isdigit():
            raise WorkerProtocolError("bad line number")
        self.current = ApiCall(method, obj[:_MAX_TEXT], [], int(line) if line else None)
        self.calls.append(self.current)
        self.runtime.calls.append(self.current)

    def _primitive(self, fields: list[str]) -> None:
        if len(fields) != 3 or self.current is None or fields[2] not in ("0", "1"):
            raise WorkerProtocolError("bad primitive record (or a primitive outside an API call)")
        action, target, success = fields
        reason = self.runtime.over_budget()
        if reason is not None:
            raise WorkerProtocolError(f"the worker acted after the budget ran out ({reason})")
        result = self.runtime.apply(action, target or None, note_seen=False)
        self.primitives += 1
        self.current.primitives.append(Primitive(result.action, result.target, result.success,
                                                 result.error))
        if result.success is not (success == "1"):
            raise WorkerProtocolError(
                f"the replay of {action} {target} {'succeeded' if result.success else 'failed'}"
                f" but the worker reported the opposite")

    def _ended_plain(self, fields: list[str]) -> None:
        if len(fields) != 2 or fields[1] not in ("0", "1"):
            raise WorkerProtocolError("bad call-end record")
        self._ended([fields[0], [], fields[1] == "1", "", None])

    def _ended(self, record: Any) -> None:
        if not isinstance(record, list) or len(record) != 5 or self.current is None:
            raise WorkerProtocolError("bad call-end record")
        obj, args, success, error, result = record
        call = self.current
        call.object = _text(obj, "object")
        if not isinstance(args, list):
            raise WorkerProtocolError("call arguments are not a list")
        call.args = [_text(a, "argument") for a in args[:10]]
        if not isinstance(success, bool) or not isinstance(result, _SCALARS):
            raise WorkerProtocolError("bad call outcome")
        call.success, call.error, call.result = success, _text(error, "error"), result
        self.current = None

    def note_stop(self) -> None:
        """After a killed run: what the agent sees now and the objects its calls used count as
        seen and claimed (what it saw on the way is not recomputed)."""
        rt = self.runtime
        rt.seen.update(rt.sim.visible_objects())
        rt.claimed.update(c.object for c in self.calls if c.object in rt.world.objects)
        rt._last_reach = None

    def interrupt(self, message: str) -> None:
        """Mark the call in flight (if any) as stopped with ``message``."""
        if self.current is not None:
            self.current.success, self.current.error = False, message
            self.current = None


def restore_runtime_state(runtime: ApiRuntime, answer: dict) -> None:
    """Take what a finished program's agent learned: the objects it saw (the replay does not
    recompute visibility after every move) and claimed, its beliefs and its last reach check,
    keeping only well-formed values about objects that exist."""
    objects = runtime.world.objects
    for name in ("seen", "claimed"):
        ids = answer.get(name)
        if isinstance(ids, list):
            getattr(runtime, name).update(c for c in ids[:10_000] if isinstance(c, str) and c in objects)
    beliefs = answer.get("beliefs")
    if isinstance(beliefs, list):
        for b in beliefs[:10_000]:
            if (isinstance(b, list) and len(b) == 3 and isinstance(b[0], str) and isinstance(b[1], str)
                    and isinstance(b[2], _SCALARS)):
                runtime.beliefs.append((b[0][:200], b[1][:200], b[2]))
    last = answer.get("last_reach")
    runtime._last_reach = None
    if (isinstance(last, list) and len(last) == 7 and all(isinstance(v, int) for v in last[:4])
            and last[4] in objects and isinstance(last[5], list) and len(last[5]) == 3
            and all(isinstance(v, (int, float)) for v in last[5]) and isinstance(last[6], (str, type(None)))):
        runtime._last_reach = (*last[:5], tuple(last[5]), last[6])
