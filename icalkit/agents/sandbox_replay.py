"""The executor's side of a worker run: replay the worker's action log on the real simulator.

The worker writes one JSON line per event (``["c", method, line, object]`` when a top-level API
call starts, ``["p", action, target, success]`` per primitive, ``["e", object, args, success,
error, result]`` when the call ends). :class:`LogReplay` applies each primitive to the executor's
own simulator through its :class:`ApiRuntime` (so the world, the episode counters and the objects
seen are the executor's, never taken from the worker), checks that the outcome matches, and
rebuilds the call records of the trace. Everything a worker sends is treated as untrusted:
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
                record = json.loads(raw)
            except ValueError:
                raise WorkerProtocolError("malformed action-log line") from None
            if not isinstance(record, list) or not record:
                raise WorkerProtocolError("malformed action-log record")
            handler = {"c": self._started, "p": self._primitive, "e": self._ended}.get(record[0])
            if handler is None:
                raise WorkerProtocolError(f"unknown action-log record {str(record[0])[:20]!r}")
            handler(record)

    def _started(self, record: list) -> None:
        if len(record) != 4 or self.current is not None:
            raise WorkerProtocolError("bad call-start record")
        _, method, line, obj = record
        if method not in _METHODS:
            raise WorkerProtocolError(f"unknown API method {str(method)[:40]!r}")
        if line is not None and (not isinstance(line, int) or isinstance(line, bool)):
            raise WorkerProtocolError("bad line number")
        self.current = ApiCall(method, _text(obj, "object"), [], line)
        self.calls.append(self.current)
        self.runtime.calls.append(self.current)

    def _primitive(self, record: list) -> None:
        if len(record) != 4 or self.current is None:
            raise WorkerProtocolError("primitive outside an API call")
        _, action, target, success = record
        _text(action, "action")
        if target is not None:
            _text(target, "target")
        reason = self.runtime.over_budget()
        if reason is not None:
            raise WorkerProtocolError(f"the worker acted after the budget ran out ({reason})")
        result = self.runtime.apply(action, target)
        self.primitives += 1
        self.current.primitives.append(Primitive(result.action, result.target, result.success,
                                                 result.error))
        if result.success is not success:
            raise WorkerProtocolError(
                f"the replay of {action} {target or ''} {'succeeded' if result.success else 'failed'}"
                f" but the worker reported the opposite")

    def _ended(self, record: list) -> None:
        if len(record) != 6 or self.current is None:
            raise WorkerProtocolError("bad call-end record")
        _, obj, args, success, error, result = record
        call = self.current
        call.object = _text(obj, "object")
        if not isinstance(args, list):
            raise WorkerProtocolError("call arguments are not a list")
        call.args = [_text(a, "argument") for a in args[:10]]
        if not isinstance(success, bool) or not isinstance(result, _SCALARS):
            raise WorkerProtocolError("bad call outcome")
        call.success, call.error, call.result = success, _text(error, "error"), result
        self.current = None

    def interrupt(self, message: str) -> None:
        """Mark the call in flight (if any) as stopped with ``message``."""
        if self.current is not None:
            self.current.success, self.current.error = False, message
            self.current = None


def restore_runtime_state(runtime: ApiRuntime, answer: dict) -> None:
    """Take the objects a finished program claimed, its beliefs and its last reach check, keeping
    only well-formed values about objects that exist."""
    objects = runtime.world.objects
    claimed = answer.get("claimed")
    if isinstance(claimed, list):
        runtime.claimed.update(c for c in claimed[:10_000] if isinstance(c, str) and c in objects)
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
