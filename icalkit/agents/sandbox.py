"""Sandbox for untrusted generated programs (model output is untrusted input).

A program is checked statically, instrumented, compiled and executed in-process with an empty
``__builtins__`` and a curated namespace. Rules:

Allowed: assignments (``x = ...``, ``x += ...`` on plain names, ``a[i] = ...``), expression
statements, ``if`` / ``for`` / ``while`` (with ``break`` / ``continue`` / ``pass`` / ``else``),
comparisons, boolean and arithmetic operators, literals (numbers, strings, f-strings without format
specs, lists, tuples, dicts, sets), comprehensions, subscripts and slices, conditional
expressions, comments, calls to whitelisted names (the API names given to :class:`Sandbox` plus
``range len print min max abs round sum any all enumerate zip reversed sorted list tuple str int
float bool``), and method calls / attribute reads whose attribute name is public (no leading
underscore) and belongs to the API or to a few safe container methods (``append pop index count
insert remove get keys values items startswith endswith``).

Refused before running, with the line and the construct named: imports, ``def`` / ``lambda`` /
``class`` (plans are straight-line code: functions would bring recursion and closures, and
nothing in the API needs callbacks), ``try`` / ``with`` / ``raise`` / ``global`` / ``del`` /
``assert`` / ``yield`` / ``await`` / walrus / starred arguments, any name or attribute starting
with ``_``, the names ``exec eval open compile getattr setattr delattr globals locals vars type
object input breakpoint dir help super memoryview exit quit``, calls of anything but a
whitelisted name or a method, attribute assignment, ``%`` string formatting, format specs.

Contained while running (the program ends, the host process keeps running): every loop iteration
(``for``, ``while``, comprehension item) ticks a shared counter that also checks the wall clock;
``* ** << + %`` go through guards that refuse oversize sequences or integers before building them;
strings, lists and f-strings built by the program count against an allocation budget; ``range``
is capped; attribute reads are re-checked at run time against the owning type (API objects expose
only their declared names); a ``SIGALRM`` timer (main thread only) backs up the wall clock.
Ordinary errors (``NameError``, ``TypeError``, ...) are reported with their program line.
"""

from __future__ import annotations

import ast
import signal
import sys
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from icalkit.agents.sandbox_guards import RuntimeGuards, SandboxLimitExceeded, SandboxLimits
from icalkit.agents.sandbox_rules import (
    FORBIDDEN_NAMES,
    PROGRAM_FILENAME,
    SAFE_BUILTIN_NAMES,
    SAFE_METHODS,
    Instrumenter,
    SandboxRefused,
    validate,
)

__all__ = [
    "FORBIDDEN_NAMES", "PROGRAM_FILENAME", "SAFE_BUILTIN_NAMES", "SAFE_METHODS", "Sandbox",
    "SandboxLimitExceeded", "SandboxLimits", "SandboxRefused", "SandboxResult",
    "current_program_line", "validate",
]


@dataclass
class SandboxResult:
    """Outcome of one program run.

    Attributes:
        ok: the program ran to its end.
        kind: ``ok`` | ``refused`` (static check) | ``limit`` (time/loop/memory) | ``error``
            (an exception raised by the program or by the API it called).
        message: human-readable reason, naming the line when known.
        lineno: program line of the refusal or of the error.
        exception: the exception object (API failures can be recognised by type).
        output: text printed by the program (capped).
    """

    ok: bool
    kind: str
    message: str = ""
    lineno: int | None = None
    exception: BaseException | None = None
    output: str = ""
    loop_iterations: int = 0


def current_program_line() -> int | None:
    """Line of the sandboxed program currently executing (called from inside API methods)."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename == PROGRAM_FILENAME:
            return frame.f_lineno
        frame = frame.f_back
    return None


class Sandbox:
    """Validates and runs untrusted programs against a curated API namespace.

    Args:
        api: names the program may use (callables and constants), e.g. ``{"InteractionObject": cls}``.
        attr_policy: for each API type, the attribute names a program may read on its instances.
        limits: resource limits; defaults are generous for plans and small for attacks.
    """

    def __init__(self, api: Mapping[str, Any], attr_policy: Mapping[type, Iterable[str]] | None = None,
                 limits: SandboxLimits | None = None) -> None:
        bad = [n for n in api if n.startswith("_") or n in FORBIDDEN_NAMES]
        if bad:
            raise ValueError(f"API names {bad} are not allowed in the sandbox namespace")
        self.api = dict(api)
        self.limits = limits or SandboxLimits()
        self.attr_policy = {t: frozenset(v) for t, v in (attr_policy or {}).items()}
        for t, v in SAFE_METHODS.items():
            self.attr_policy.setdefault(t, v)
        self.callables = frozenset(n for n, v in self.api.items() if callable(v))
        self.attributes = frozenset().union(*self.attr_policy.values())

    def check(self, source: str) -> ast.Module:
        """Static check only; raises :class:`SandboxRefused`."""
        return validate(source, self.callables, self.attributes, self.limits.max_source_chars)

    def compile(self, source: str) -> Any:
        """Validate, instrument and compile a program to a code object."""
        tree = self.check(source)
        try:
            tree = ast.fix_missing_locations(Instrumenter().visit(tree))
            return compile(tree, PROGRAM_FILENAME, "exec")
        except (RecursionError, MemoryError, ValueError, SyntaxError) as exc:
            raise SandboxRefused(0, "program cannot be compiled", type(exc).__name__,
                                 verdict="") from None

    def run(self, source: str) -> SandboxResult:
        """Run a program; never raises for anything the program does (limits, errors, refusals)."""
        try:
            code = self.compile(source)
        except SandboxRefused as exc:
            return SandboxResult(False, "refused", str(exc), exc.lineno or None, exc)
        guards = RuntimeGuards(self.limits, self.attr_policy)
        namespace: dict[str, Any] = {"__builtins__": {}}
        namespace.update(guards.builtins())
        namespace.update(self.api)
        namespace.update(_sb_tick=guards.tick, _sb_iter=guards.iterate, _sb_account=guards.account,
                         _sb_attr=guards.attr, _sb_add=guards.add, _sb_mul=guards.mul,
                         _sb_pow=guards.pow, _sb_lshift=guards.lshift, _sb_mod=guards.mod)
        guards.deadline = time.monotonic() + self.limits.timeout_s
        result = self._execute(code, namespace, guards)
        result.output = "".join(guards.output)
        result.loop_iterations = guards.ticks
        return result

    def _execute(self, code: Any, namespace: dict[str, Any], guards: RuntimeGuards) -> SandboxResult:
        alarm = (self.limits.use_alarm and hasattr(signal, "setitimer")
                 and threading.current_thread() is threading.main_thread())
        old_handler = signal.signal(signal.SIGALRM, _alarm_handler(self.limits.timeout_s)) if alarm else None
        try:
            if alarm:
                signal.setitimer(signal.ITIMER_REAL, self.limits.timeout_s + 0.5)
            try:
                exec(code, namespace)  # noqa: S102 - validated, instrumented, empty __builtins__
                return SandboxResult(True, "ok")
            except SandboxLimitExceeded as exc:
                line = _program_line(exc)
                return SandboxResult(False, "limit", _at_line(line, str(exc)), line, exc)
            except MemoryError as exc:  # the worker's address-space limit (RLIMIT_AS)
                line = _program_line(exc)
                return SandboxResult(False, "limit", _at_line(line, "memory limit reached"), line, exc)
            except Exception as exc:  # program or API error (RecursionError included)
                line = _program_line(exc)
                msg = f"{type(exc).__name__}: {exc}"
                return SandboxResult(False, "error", _at_line(line, msg), line, exc)
            finally:
                _disarm(alarm, old_handler)
        except SandboxLimitExceeded as exc:  # the alarm fired while a result was being built
            _disarm(alarm, old_handler)
            return SandboxResult(False, "limit", str(exc), None, exc)


def _disarm(alarm: bool, old_handler: Any) -> None:
    if alarm:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old_handler)


def _alarm_handler(timeout_s: float) -> Any:
    def handler(signum: int, frame: Any) -> None:
        raise SandboxLimitExceeded(f"time limit of {timeout_s:g} s exceeded (alarm)")
    return handler


def _program_line(exc: BaseException) -> int | None:
    line = None
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == PROGRAM_FILENAME:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def _at_line(line: int | None, msg: str) -> str:
    return f"line {line}: {msg}" if line else msg
