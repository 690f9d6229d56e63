"""Batched model calls with parsing, one re-ask on a parse error, and per-episode accounting.

Planners ask the model for something parseable (a program, a plan, a score, one action). Model
output is untrusted: :meth:`LLMSession.ask` parses every answer with a caller-given function,
re-asks once (showing the parse error) for the answers that failed, and returns ``None`` for
those that fail again — the caller then counts a failed attempt; nothing here raises for bad
model output. Calls, tokens, latency and prompt ids are added to a :class:`CallStats` per item.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Generic, TypeVar

from icalkit.agents.parsing import ParseError
from icalkit.models.llm.base import LLM, Generation, Message

T = TypeVar("T")

REASK_TEXT = ("Your answer could not be used: {error}\n"
              "Answer again, following the requested format exactly.")
MAX_REASK_ECHO = 1500  # characters of a malformed answer echoed back in the re-ask


@dataclass
class CallStats:
    """Model usage of one episode (or any unit of work)."""

    calls: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    parse_failures: int = 0
    reasks: int = 0
    prompt_ids: list[str] = field(default_factory=list)

    def add(self, gen: Generation, prompt_id: str, share: float = 1.0) -> None:
        """Count one generation; ``share`` is this item's fraction of a batched call's latency."""
        self.calls += 1
        self.cached += int(gen.cached)
        self.prompt_tokens += gen.prompt_tokens
        self.completion_tokens += gen.completion_tokens
        self.latency_s += gen.latency_s * share
        if prompt_id not in self.prompt_ids:
            self.prompt_ids.append(prompt_id)

    def merge(self, other: CallStats) -> None:
        """Add another record's counts (prompt ids are united)."""
        for name in ("calls", "cached", "prompt_tokens", "completion_tokens", "latency_s",
                     "parse_failures", "reasks"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.prompt_ids += [p for p in other.prompt_ids if p not in self.prompt_ids]

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class Answer(Generic[T]):
    """A parsed answer (``value`` is None when parsing failed twice), its raw text and error.

    ``raw`` holds every text the model gave for this item (two when it was re-asked).
    """

    value: T | None
    text: str
    error: str | None = None
    raw: list[str] = field(default_factory=list)


class LLMSession:
    """Sampling settings bound to a model, for planners.

    Args:
        llm: any :class:`~icalkit.models.llm.base.LLM` backend.
        max_new_tokens: default completion length.
        temperature: sampling temperature (0 = greedy).
        seed: sampling seed.
        loop_repeats: cut answers at their first loop of a block repeated this often (0: off).
    """

    def __init__(self, llm: LLM, max_new_tokens: int = 512, temperature: float = 0.0, seed: int = 0,
                 loop_repeats: int = 0) -> None:
        self.llm = llm
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.seed = seed
        self.loop_repeats = loop_repeats

    @property
    def model_name(self) -> str:
        return getattr(self.llm, "model_name", "") or type(self.llm).__name__

    def generate(self, prompts: Sequence[list[Message]], prompt_id: str, stats: Sequence[CallStats],
                 max_new_tokens: int | None = None) -> list[str]:
        """One batched call; returns the first completion of each prompt."""
        if len(prompts) != len(stats):
            raise ValueError(f"got {len(prompts)} prompts but {len(stats)} stats records")
        if not prompts:
            return []
        gens = self.llm.generate(list(prompts), max_new_tokens=max_new_tokens or self.max_new_tokens,
                                 temperature=self.temperature, seed=self.seed, loop_repeats=self.loop_repeats)
        for gen, st in zip(gens, stats, strict=True):
            st.add(gen, prompt_id, 1.0 / len(prompts))
        return [g.text if g.texts else "" for g in gens]

    def ask(self, prompts: Sequence[list[Message]], parse: Callable[[str], T], prompt_id: str,
            stats: Sequence[CallStats], max_new_tokens: int | None = None, reask: bool = True) -> list[Answer[T]]:
        """Generate for a batch, parse each answer, re-ask once (batched) for the failures.

        Args:
            prompts: chat messages per item.
            parse: turns the raw text into a value; raises :class:`ParseError` (or ValueError)
                with a message fit to show the model.
            prompt_id: template id recorded in the stats.
            stats: one record per item.
            max_new_tokens: completion length for this call.
            reask: whether to re-ask once after a parse error.

        Returns:
            One :class:`Answer` per prompt, in order.
        """
        texts = self.generate(prompts, prompt_id, stats, max_new_tokens)
        answers = [_try(parse, t) for t in texts]
        retry = [i for i, a in enumerate(answers) if a.value is None]
        for i in retry:
            stats[i].parse_failures += 1
        if not reask or not retry:
            return answers
        follow = [list(prompts[i]) + [
            {"role": "assistant", "content": answers[i].text[:MAX_REASK_ECHO] or "(empty answer)"},
            {"role": "user", "content": REASK_TEXT.format(error=answers[i].error)}] for i in retry]
        for i in retry:
            stats[i].reasks += 1
        again = self.generate(follow, prompt_id, [stats[i] for i in retry], max_new_tokens)
        for i, text in zip(retry, again, strict=True):
            first = answers[i].text
            answers[i] = _try(parse, text)
            answers[i].raw.insert(0, first)
            if answers[i].value is None:
                stats[i].parse_failures += 1
        return answers


def _try(parse: Callable[[str], T], text: str) -> Answer[T]:
    try:
        return Answer(parse(text), text, raw=[text])
    except (ParseError, ValueError) as exc:
        return Answer(None, text, str(exc) or type(exc).__name__, raw=[text])
