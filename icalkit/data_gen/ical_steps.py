"""Building blocks of ICAL learning: prompting with one re-ask, parsing, execution, state diffs.

The loop itself lives in :mod:`icalkit.data_gen.ical`. Here:

- :class:`Prompter` renders a versioned template, calls the LLM, parses the answer and on a
  :class:`~icalkit.agents.parsing.ParseError` re-asks once with the error appended; a second
  failure is returned as ``None`` with the reason (never raised). It counts calls and tokens.
- :func:`parse_abstraction`, :func:`parse_update`, :func:`parse_relabel` turn (untrusted) model
  output into :class:`Abstraction` / relabel dicts.
- :func:`execute` runs a program in a freshly reset env and records the attribute changes.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from icalkit.agents.context import full_state
from icalkit.agents.executor import Executor, ExecutorLimits, Trace
from icalkit.agents.llm_session import CallStats, LLMSession
from icalkit.agents.parsing import ParseError, numbered_items, parse_sections
from icalkit.agents.prompts import load_template
from icalkit.envs.household.tasks.task import Task

ABSTRACTION_SECTIONS = ["Summary", "Abstracted State", "Plan", "Abstraction Comments", "Program"]
ABSTRACTION_REQUIRED = ["Summary", "Plan", "Program"]
UPDATE_SECTIONS = ["Explanation", "Summary", "Plan", "Abstraction Comments", "Program"]
UPDATE_REQUIRED = ["Explanation", "Program"]
RELABEL_SECTIONS = ["Instruction", "Summary", "Plan"]

T = TypeVar("T")


@dataclass
class Abstraction:
    """A (revised) program with ICAL's language abstractions."""

    program: str
    summary: str = ""
    abstracted_state: str = ""
    plan: list[str] = field(default_factory=list)
    comments: list[str] = field(default_factory=list)
    explanation: str = ""

    @property
    def predicted_state_changes(self) -> list[str]:
        """The ``x.change_state(...)`` calls of the program (the model's predicted changes)."""
        return predicted_changes(self.program)

    def notes(self) -> str:
        """Summary, plan and comments as prompt text (for the update prompt)."""
        parts = [f"Summary: {self.summary or '-'}", "Plan:"]
        parts += [f"{k + 1}. {s}" for k, s in enumerate(self.plan)] or ["-"]
        parts += ["Abstraction Comments:"] + ([f"{k + 1}. {c}" for k, c in enumerate(self.comments)] or ["-"])
        return "\n".join(parts)


def predicted_changes(program: str) -> list[str]:
    """``var.change_state(args)`` calls found in a program, in order."""
    return [m.group(0) for m in re.finditer(r"\b\w+\.change_state\([^)\n]*\)", program)]


def check_program(program: str) -> str:
    """The program if it names at least one object with the API; ParseError otherwise."""
    if "InteractionObject(" not in program:
        raise ParseError("the Program section does not create any InteractionObject(...); write the "
                         "complete program in a ```python block")
    return program.strip("\n") + "\n"


def parse_abstraction(text: str) -> Abstraction:
    """Parse an answer to the ``ical_abstraction`` prompt (raises ParseError)."""
    s = parse_sections(text, ABSTRACTION_SECTIONS, ABSTRACTION_REQUIRED, code_section="Program")
    return Abstraction(program=check_program(s["Program"]), summary=_one_line(s["Summary"]),
                       abstracted_state=s.get("Abstracted State", ""), plan=numbered_items(s["Plan"]),
                       comments=numbered_items(s.get("Abstraction Comments", "")))


def parse_update(text: str, previous: Abstraction) -> Abstraction:
    """Parse an answer to the ``ical_update`` prompt; missing optional parts keep ``previous``.

    The explanation of the error becomes a new abstraction comment when the model adds none.
    """
    s = parse_sections(text, UPDATE_SECTIONS, UPDATE_REQUIRED, code_section="Program")
    explanation = s["Explanation"].strip()
    comments = numbered_items(s.get("Abstraction Comments", "")) or list(previous.comments)
    lesson = _one_line(explanation)
    if comments == previous.comments and lesson and lesson not in comments:
        comments.append(lesson)
    return replace(previous, program=check_program(s["Program"]), explanation=explanation,
                   summary=_one_line(s.get("Summary", "")) or previous.summary,
                   plan=numbered_items(s.get("Plan", "")) or list(previous.plan), comments=comments)


def parse_relabel(text: str) -> dict[str, Any]:
    """Parse an answer to the ``ical_relabel`` prompt into instruction, summary and plan."""
    s = parse_sections(text, RELABEL_SECTIONS)
    plan = numbered_items(s["Plan"])
    if not plan:
        raise ParseError("the Plan section has no steps; write numbered steps")
    return {"instruction": _one_line(s["Instruction"]), "summary": _one_line(s["Summary"]), "plan": plan}


def _one_line(text: str) -> str:
    return " ".join(text.split())


def truncate_lines(text: str, max_chars: int, marker: str = "# ...") -> str:
    """Cut ``text`` at a line boundary to at most ``max_chars`` characters, noting what was cut."""
    if len(text) <= max_chars:
        return text
    lines, kept, size = text.splitlines(), [], 0
    for line in lines:
        if size + len(line) + 1 > max_chars:
            break
        kept.append(line)
        size += len(line) + 1
    return "\n".join(kept + [f"{marker} ({len(lines) - len(kept)} more lines)"])


@dataclass
class Asked:
    """Result of one prompt (with its possible re-ask): the parsed value or the failure."""

    value: Any
    prompt_id: str
    raw: list[str]
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.value is not None


class Prompter:
    """Renders versioned templates and asks the model through :class:`LLMSession`.

    One re-ask with the parse error on failure, then a recorded failure (see LLMSession.ask).

    Args:
        llm: any :class:`~icalkit.models.llm.base.LLM` (cached or not).
        max_new_tokens: generation length.
        temperature: sampling temperature (0 = greedy).
        seed: sampling seed.
        template_dir: folder of templates (None: the package's).
        loop_repeats: cut an answer at its first block of lines repeated this often in a row (0: off).
    """

    def __init__(self, llm: Any, max_new_tokens: int = 384, temperature: float = 0.0, seed: int = 0,
                 template_dir: str | None = None, loop_repeats: int = 0) -> None:
        self.session = LLMSession(llm, max_new_tokens, temperature, seed, loop_repeats)
        self.template_dir = template_dir
        self.usage = CallStats()
        self.last_output = ""

    @property
    def llm(self) -> Any:
        return self.session.llm

    def template(self, name: str):
        """The loaded (and checked) template ``name``."""
        return load_template(name, self.template_dir)

    def ask(self, name: str, parse: Callable[[str], T], usage: CallStats | None = None,
            **values: object) -> Asked:
        """Render template ``name`` with ``values``, generate and parse; re-ask once on ParseError."""
        template = self.template(name)
        stats = CallStats()
        answer = self.session.ask([template.render(**values)], parse, template.prompt_id, [stats])[0]
        for total in (usage, self.usage):
            if total is not None:
                total.merge(stats)
        self.last_output = answer.text
        return Asked(answer.value, template.prompt_id, answer.raw, answer.error or "")


@dataclass
class Execution:
    """One run of a program in a freshly reset environment."""

    trace: Trace
    changes: list[dict[str, Any]]
    frame: Any = None

    @property
    def success(self) -> bool:
        return self.trace.success


def execute(env: Any, task: Task, program: str, limits: ExecutorLimits | None = None) -> Execution:
    """Reset ``env`` on ``task``, run ``program`` and diff the object states before/after."""
    obs, _ = env.reset(options={"task": task})
    before = full_state(env.sim.world)
    trace = Executor(env, limits).run(program, task)
    return Execution(trace, state_changes(before, full_state(env.sim.world)), obs.get("rgb"))


def state_changes(before: dict[str, dict], after: dict[str, dict]) -> list[dict[str, Any]]:
    """Attribute changes ``{"object", "attribute", "before", "after"}`` between two states, all of them
    (an example's end state is rebuilt from them: :mod:`icalkit.agents.demo_end_state`)."""
    out = []
    for oid in sorted(set(before) | set(after)):
        a, b = before.get(oid, {}), after.get(oid, {})
        for attr in sorted(set(a) | set(b)):
            if attr != "label" and a.get(attr) != b.get(attr):
                out.append({"object": oid, "attribute": attr, "before": a.get(attr), "after": b.get(attr)})
    return out


def changes_text(changes: list[dict[str, Any]], limit: int = 20) -> str:
    """Observed changes as prompt lines."""
    if not changes:
        return "(nothing changed)"
    lines = [f"{c['object']}.{c['attribute']}: {c['before']} -> {c['after']}" for c in changes[:limit]]
    return "\n".join(lines + ([f"... ({len(changes) - limit} more)"] if len(changes) > limit else []))
