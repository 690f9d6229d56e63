"""The LLM interface shared by every backend, its result type and its errors.

A backend implements :meth:`LLM._generate` for already-validated prompts; :meth:`LLM.generate`
checks the arguments once for all backends. A prompt is either a plain string or a list of chat
messages (``{"role": "system" | "user" | "assistant", "content": str}``); backends apply the
model's chat template themselves.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, field
from typing import Any

Message = dict[str, str]
Prompt = str | list[Message]
CHAT_ROLES = ("system", "user", "assistant")


class LLMError(RuntimeError):
    """Base class of every error raised by an LLM backend."""


class ModelNotFoundError(LLMError):
    """The model folder or file does not exist (or is not a model)."""


class ModelLoadError(LLMError):
    """The model folder exists but could not be loaded (corrupt or incomplete)."""


class AdapterError(LLMError):
    """A LoRA adapter path is missing, incomplete, or does not fit the base model."""


class BackendUnavailableError(LLMError):
    """The backend's library or hardware (e.g. vLLM, a GPU) is not available here."""


class UnknownBackendError(LLMError):
    """No backend is registered under the requested name."""


class ServerUnreachableError(LLMError):
    """An HTTP backend could not connect to its server."""


class UnknownModelError(LLMError):
    """The server does not serve the requested model name."""


class GenerationError(LLMError):
    """The backend failed while generating (bad request, server error after retries...)."""


@dataclass(frozen=True)
class SamplingParams:
    """Sampling settings of one ``generate`` call (part of the response-cache key)."""

    max_new_tokens: int = 256
    temperature: float = 0.0
    stop: tuple[str, ...] = ()
    n: int = 1
    seed: int = 0
    loop_repeats: int = 0

    @property
    def greedy(self) -> bool:
        """Whether decoding is greedy (temperature 0)."""
        return self.temperature == 0.0

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (JSON-serialisable)."""
        data = asdict(self)
        data["stop"] = list(self.stop)
        if not self.loop_repeats:  # absent = off: cache keys of requests without it stay as they were
            del data["loop_repeats"]
        return data


@dataclass
class Generation:
    """The completions of one prompt.

    Attributes:
        texts: the ``n`` completions (stop strings and the end-of-turn token removed).
        prompt_tokens: tokens in the prompt after the chat template.
        completion_tokens: generated tokens, summed over the ``n`` completions.
        latency_s: wall time of the call that produced it (shared by a batch); for a cache hit,
            the lookup time.
        model: model name (folder, file or served name).
        backend: backend name ("hf", "vllm", "openai").
        cached: True when replayed from the response cache.
        finish_reasons: per completion, "stop" (end of turn or stop string), "loop" (cut by
            ``loop_repeats``) or "length".
    """

    texts: list[str]
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    model: str
    backend: str
    cached: bool = False
    finish_reasons: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        """The first completion."""
        return self.texts[0]

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (JSON-serialisable)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Generation:
        """Inverse of :meth:`to_dict`."""
        return cls(**data)


def check_prompt(prompt: Any, index: int) -> Prompt:
    """Validate one prompt (string or chat messages) and return it; raise ValueError otherwise."""
    if isinstance(prompt, str):
        return prompt
    if not isinstance(prompt, list) or not prompt:
        raise ValueError(
            f"prompt {index} must be a string or a non-empty list of chat messages, "
            f"got {type(prompt).__name__}"
        )
    for j, msg in enumerate(prompt):
        if not isinstance(msg, dict) or set(msg) - {"role", "content"} or "role" not in msg:
            raise ValueError(f"prompt {index}, message {j}: expected {{'role', 'content'}}, got {msg!r}")
        if msg["role"] not in CHAT_ROLES:
            raise ValueError(f"prompt {index}, message {j}: role {msg['role']!r} not in {CHAT_ROLES}")
        if not isinstance(msg.get("content"), str):
            raise ValueError(f"prompt {index}, message {j}: content must be a string")
    return [dict(m) for m in prompt]


def check_loop_repeats(value: Any) -> None:
    """Raise ValueError unless ``value`` is 0 (no loop cut) or an int >= 2."""
    if not isinstance(value, int) or value < 0 or value == 1:
        raise ValueError(f"loop_repeats must be 0 (off) or >= 2, got {value!r}")


def make_params(
    max_new_tokens: int, temperature: float, stop: list[str] | None, n: int, seed: int, loop_repeats: int = 0
) -> SamplingParams:
    """Check sampling arguments and bundle them; raise ValueError naming a bad one."""
    if not isinstance(max_new_tokens, int) or max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be a positive integer, got {max_new_tokens!r}")
    if not isinstance(temperature, (int, float)) or temperature < 0:
        raise ValueError(f"temperature must be >= 0, got {temperature!r}")
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    if n > 1 and temperature == 0:
        raise ValueError(f"n={n} completions need sampling: set temperature > 0")
    if isinstance(stop, str):
        stop = [stop]
    stop = list(stop or [])
    if any(not isinstance(s, str) or not s for s in stop):
        raise ValueError(f"stop must be a list of non-empty strings, got {stop!r}")
    check_loop_repeats(loop_repeats)
    return SamplingParams(int(max_new_tokens), float(temperature), tuple(stop), n, int(seed), loop_repeats)


def truncate_at_stop(text: str, stop: tuple[str, ...] | list[str]) -> tuple[str, bool]:
    """Cut ``text`` at the earliest stop string (excluded); return (text, whether cut)."""
    cut = min((i for i in (text.find(s) for s in stop) if i >= 0), default=-1)
    return (text[:cut], True) if cut >= 0 else (text, False)


def loop_end(text: str, repeats: int) -> int | None:
    """Where ``text`` first loops: the end of the first complete line at which the lines so far
    end with one block of lines repeated ``repeats`` times in a row (None: no loop, or ``repeats``
    < 2). A degenerate model repeats such a block until it runs out of tokens."""
    if repeats < 2:
        return None
    lines, end = text.split("\n")[:-1], 0  # complete lines only
    for n, line in enumerate(lines, start=1):
        end += len(line) + 1
        for k in range(1, n // repeats + 1):
            block = lines[n - k:n]
            if all(lines[n - (r + 1) * k:n - r * k] == block for r in range(1, repeats)):
                return end
    return None


def finish_text(text: str, params: SamplingParams) -> tuple[str, str | None]:
    """A completion cut at its first stop string, then at its first loop (``params.loop_repeats``);
    returns (text, "stop" / "loop" when cut, else None). Every backend returns its text through
    this, so greedy outputs agree whether or not a backend also stopped generating early."""
    text, stopped = truncate_at_stop(text, params.stop)
    end = loop_end(text, params.loop_repeats)
    if end is not None:
        return text[:end], "loop"
    return text, "stop" if stopped else None


class LLM(ABC):
    """A batched text generator. Subclasses set ``backend`` and ``model_name``."""

    backend: str = "base"
    model_name: str = ""

    def generate(
        self,
        prompts: list[str] | list[list[Message]] | list[Prompt],
        max_new_tokens: int = 256,
        temperature: float = 0.0,
        stop: list[str] | None = None,
        n: int = 1,
        seed: int = 0,
        loop_repeats: int = 0,
    ) -> list[Generation]:
        """Generate completions for a batch of prompts.

        Args:
            prompts: strings or chat-message lists; the chat template is applied inside.
            max_new_tokens: most tokens generated per completion.
            temperature: 0 for greedy decoding, > 0 to sample.
            stop: strings that end a completion (the stop string is not returned).
            n: completions per prompt (needs temperature > 0 when > 1).
            seed: random seed for sampling.
            loop_repeats: cut a completion once its lines end with one block of lines repeated
                this many times in a row (0: off; see :func:`loop_end`). The hf backend also
                stops generating there.

        Returns:
            One :class:`Generation` per prompt, in order.

        Raises:
            ValueError: a malformed prompt or sampling argument.
            LLMError: the backend failed (subclass names the cause).
        """
        if isinstance(prompts, (str, dict)) or not isinstance(prompts, (list, tuple)):
            raise ValueError("prompts must be a list of prompts (wrap a single prompt in a list)")
        checked = [check_prompt(p, i) for i, p in enumerate(prompts)]
        params = make_params(max_new_tokens, temperature, stop, n, seed, loop_repeats)
        if not checked:
            return []
        return self._generate(checked, params)

    @abstractmethod
    def _generate(self, prompts: list[Prompt], params: SamplingParams) -> list[Generation]:
        """Generate for validated prompts; one Generation per prompt."""

    def cache_identity(self) -> dict[str, Any]:
        """What identifies this model for the response cache (backend, model, adapter...)."""
        return {"backend": self.backend, "model": self.model_name}

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model_name!r})"


class Timer:
    """Context manager measuring wall time in seconds (``.elapsed``)."""

    def __enter__(self) -> Timer:
        self.start = time.perf_counter()
        self.elapsed = 0.0
        return self

    def __exit__(self, *exc: object) -> None:
        self.elapsed = time.perf_counter() - self.start
