"""Run-time half of the sandbox: limits and the guards bound into a program's namespace."""

from __future__ import annotations

import builtins
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from icalkit.agents.sandbox_rules import SAFE_BUILTIN_NAMES

_SEQUENCES = (str, bytes, list, tuple)


class SandboxLimitExceeded(BaseException):
    """A run-time limit (time, loop iterations, allocation, attribute policy) ended the program.

    Derives from BaseException so that API code catching ``Exception`` cannot swallow it.
    """


@dataclass
class SandboxLimits:
    """Resource limits of one program run."""

    timeout_s: float = 10.0
    max_loop_iterations: int = 100_000
    max_sequence_len: int = 100_000
    max_alloc_total: int = 2_000_000
    max_int_bits: int = 65_536
    max_source_chars: int = 20_000
    max_output_chars: int = 10_000
    use_alarm: bool = True

    def __post_init__(self) -> None:
        for name in ("timeout_s", "max_loop_iterations", "max_sequence_len", "max_alloc_total"):
            if getattr(self, name) <= 0:
                raise ValueError(f"SandboxLimits.{name} must be positive, got {getattr(self, name)}")


@dataclass
class RuntimeGuards:
    """Runtime guards bound into the namespace of one run."""

    limits: SandboxLimits
    attr_policy: dict[type, frozenset[str]]
    deadline: float = 0.0
    ticks: int = 0
    allocated: int = 0
    output: list[str] = field(default_factory=list)
    output_len: int = 0

    def tick(self) -> None:
        self.ticks += 1
        if self.ticks > self.limits.max_loop_iterations:
            raise SandboxLimitExceeded(
                f"loop iteration limit of {self.limits.max_loop_iterations} exceeded")
        if not self.ticks & 31 and time.monotonic() > self.deadline:  # clock every 32 ticks
            raise SandboxLimitExceeded(f"time limit of {self.limits.timeout_s:g} s exceeded")

    def iterate(self, iterable: Any) -> Any:
        for item in iterable:
            self.tick()
            yield item

    def account(self, value: Any) -> Any:
        if isinstance(value, (*_SEQUENCES, dict, set, frozenset)):
            self._charge(len(value))
        return value

    def _charge(self, size: int) -> None:
        if size > self.limits.max_sequence_len:
            raise SandboxLimitExceeded(
                f"a value of {size} items exceeds the size limit of {self.limits.max_sequence_len}")
        self.allocated += size
        if self.allocated > self.limits.max_alloc_total:
            raise SandboxLimitExceeded(
                f"allocation budget of {self.limits.max_alloc_total} items exhausted")

    def _int_bits(self, bits: int) -> None:
        if bits > self.limits.max_int_bits:
            raise SandboxLimitExceeded(
                f"an integer of ~{bits} bits exceeds the limit of {self.limits.max_int_bits}")

    def add(self, a: Any, b: Any) -> Any:
        if isinstance(a, _SEQUENCES) and isinstance(b, _SEQUENCES):
            self._charge(len(a) + len(b))
        return a + b

    def mul(self, a: Any, b: Any) -> Any:
        for seq, n in ((a, b), (b, a)):
            if isinstance(seq, _SEQUENCES) and isinstance(n, int):
                self._charge(len(seq) * max(n, 0))
                return a * b
        if isinstance(a, int) and isinstance(b, int):
            self._int_bits(a.bit_length() + b.bit_length())
        return a * b

    def pow(self, a: Any, b: Any) -> Any:
        if isinstance(a, int) and isinstance(b, int) and abs(a) > 1 and b > 0:
            self._int_bits(a.bit_length() * b)
        return a**b

    def lshift(self, a: Any, b: Any) -> Any:
        if isinstance(a, int) and isinstance(b, int) and a != 0:
            self._int_bits(a.bit_length() + max(b, 0))
        return a << b

    def mod(self, a: Any, b: Any) -> Any:
        if isinstance(a, (str, bytes)):
            raise SandboxLimitExceeded("%-formatting of strings is not allowed; use f-strings")
        return a % b

    def attr(self, obj: Any, name: str) -> Any:
        allowed = self.attr_policy.get(type(obj))
        if allowed is None:
            allowed = next((v for t, v in self.attr_policy.items() if isinstance(obj, t)), None)
        if allowed is None or name not in allowed:
            raise SandboxLimitExceeded(
                f"attribute {name!r} is not allowed on a {type(obj).__name__} object")
        return getattr(obj, name)

    def builtins(self) -> dict[str, Any]:
        """Curated built-ins; those that build containers are size-checked."""

        def safe_range(*args: int) -> range:
            r = range(*args)
            if len(r) > self.limits.max_loop_iterations:
                raise SandboxLimitExceeded(f"range of {len(r)} items exceeds the loop limit")
            return r

        def sized(fn: Any) -> Any:
            def wrapper(*args: Any, **kwargs: Any) -> Any:
                for arg in args:
                    if isinstance(arg, (range, *_SEQUENCES, dict, set)):
                        self._charge(len(arg))
                return self.account(fn(*args, **kwargs))
            wrapper.__name__ = fn.__name__
            return wrapper

        def safe_sum(values: Iterable[Any], start: int | float = 0) -> Any:
            if not isinstance(start, (int, float)):
                raise SandboxLimitExceeded("sum() only adds numbers")
            return builtins.sum(self.iterate(values), start)

        def safe_print(*args: Any, sep: str = " ", end: str = "\n") -> None:
            text = str(sep).join(self.account(str(a)) for a in args) + str(end)
            room = self.limits.max_output_chars - self.output_len
            if room > 0:
                self.output.append(text[:room])
                self.output_len += min(len(text), room)

        names = {n: getattr(builtins, n) for n in SAFE_BUILTIN_NAMES}
        names.update(range=safe_range, sum=safe_sum, print=safe_print)
        for n in ("list", "tuple", "sorted", "str"):
            names[n] = sized(names[n])
        return names
