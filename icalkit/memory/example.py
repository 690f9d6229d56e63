"""The ``Example`` record: one learned ICAL example, serialisable as one JSON object.

``Example.to_dict`` / ``Example.from_dict`` round-trip through JSON; ``from_dict`` checks the
schema version, unknown keys and field types, since records may come from model output or files.
Embeddings are not part of the record: the store keeps them next to it, tagged with the embedder.
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from dataclasses import dataclass, field
from typing import Any

SCHEMA_VERSION = 1
SOURCES = ("kinesthetic", "visual-idm", "agent", "raw-demo")


class ExampleFormatError(ValueError):
    """A dict/JSON record does not describe a valid Example."""


@dataclass
class ExampleStats:
    """Cost of learning the example."""

    env_steps: int = 0
    attempts: int = 0
    resets: int = 0


@dataclass
class Provenance:
    """Where an example came from (model, prompt version, demonstration, source kind).

    ``model`` and ``prompt_version`` name the model and prompts that were actually asked for this
    example; both are empty when none was (raw demonstrations, a raw program that succeeded).
    """

    source: str = "agent"
    model: str = ""
    prompt_version: str = ""
    demo_id: str = ""

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise ExampleFormatError(f"provenance.source {self.source!r} is not one of {SOURCES}")


@dataclass
class Example:
    """One ICAL example (see DESIGN.md "Example").

    States are ``{object_id: {attribute: value}}`` dicts; ``observed_changes`` items are
    ``{"object", "attribute", "before", "after"}`` dicts; ``feedback_history`` items are
    free-form dicts (e.g. ``{"attempt": 1, "feedback": "..."}``).
    """

    task_id: str
    task_type: str
    instruction: str
    dialogue: list[str] = field(default_factory=list)
    initial_state: dict[str, Any] = field(default_factory=dict)
    filtered_state: dict[str, Any] = field(default_factory=dict)
    demo_program: str = ""
    revised_program: str = ""
    summary: str = ""
    plan: list[str] = field(default_factory=list)
    explanation: str = ""
    predicted_state_changes: list[str] = field(default_factory=list)
    observed_changes: list[dict[str, Any]] = field(default_factory=list)
    abstraction_comments: list[str] = field(default_factory=list)
    feedback_history: list[dict[str, Any]] = field(default_factory=list)
    success: bool = False
    stats: ExampleStats = field(default_factory=ExampleStats)
    provenance: Provenance = field(default_factory=Provenance)
    relabeled: bool = False
    example_id: str = field(default_factory=lambda: uuid.uuid4().hex)

    def __post_init__(self) -> None:
        for name in ("task_id", "task_type", "example_id"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise ExampleFormatError(f"Example.{name} must be a non-empty string, got {value!r}")
        if not isinstance(self.instruction, str):
            raise ExampleFormatError(f"Example.instruction must be a string, got {type(self.instruction).__name__}")
        if not self.instruction.strip() and not self.dialogue:
            raise ExampleFormatError(f"example {self.task_id!r} has neither an instruction nor a dialogue")

    def instruction_text(self) -> str:
        """Text embedded for the instruction signal: the instruction, else the dialogue."""
        return self.instruction.strip() or "\n".join(self.dialogue)

    def state_text(self) -> str:
        """Text embedded for the textual-state signal: filtered state, else initial state."""
        return format_state(self.filtered_state or self.initial_state)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict, including ``schema_version``."""
        d = dataclasses.asdict(self)
        d["schema_version"] = SCHEMA_VERSION
        return d

    def to_json(self) -> str:
        """One-line JSON (keys sorted, so equal examples give equal strings)."""
        return json.dumps(self.to_dict(), sort_keys=True, ensure_ascii=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Example:
        """Build from :meth:`to_dict` output; raise :class:`ExampleFormatError` on bad input."""
        if not isinstance(data, dict):
            raise ExampleFormatError(f"an Example record must be a dict, got {type(data).__name__}")
        data = dict(data)
        version = data.pop("schema_version", SCHEMA_VERSION)
        if not isinstance(version, int) or version > SCHEMA_VERSION:
            raise ExampleFormatError(f"Example schema_version {version!r} unsupported (this code reads <= {SCHEMA_VERSION})")
        known = {f.name: f for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - set(known))
        if unknown:
            raise ExampleFormatError(f"unknown Example fields: {unknown}")
        missing = [n for n in ("task_id", "task_type", "instruction") if n not in data]
        if missing:
            raise ExampleFormatError(f"Example record lacks required fields: {missing}")
        data["stats"] = _sub(ExampleStats, data.get("stats", {}), "stats")
        data["provenance"] = _sub(Provenance, data.get("provenance", {}), "provenance")
        for name, want in _FIELD_TYPES.items():
            if name in data and not isinstance(data[name], want):
                raise ExampleFormatError(
                    f"Example.{name} must be {want.__name__}, got {type(data[name]).__name__}"
                )
        return cls(**data)

    @classmethod
    def from_json(cls, text: str) -> Example:
        """Parse one JSON record."""
        try:
            return cls.from_dict(json.loads(text))
        except json.JSONDecodeError as exc:
            raise ExampleFormatError(f"Example JSON is malformed: {exc}") from exc


_FIELD_TYPES: dict[str, type] = {
    "dialogue": list,
    "initial_state": dict,
    "filtered_state": dict,
    "demo_program": str,
    "revised_program": str,
    "summary": str,
    "plan": list,
    "explanation": str,
    "predicted_state_changes": list,
    "observed_changes": list,
    "abstraction_comments": list,
    "feedback_history": list,
    "success": bool,
    "relabeled": bool,
}


def _sub(cls: type, value: Any, name: str) -> Any:
    if isinstance(value, cls):
        return value
    if not isinstance(value, dict):
        raise ExampleFormatError(f"Example.{name} must be a dict, got {type(value).__name__}")
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(value) - known)
    if unknown:
        raise ExampleFormatError(f"unknown Example.{name} fields: {unknown}")
    return cls(**value)


def format_state(state: dict[str, Any] | str) -> str:
    """Deterministic text for an object state ``{object: {attribute: value}}`` (one object a line).

    Strings pass through, so callers may give an already formatted state.
    """
    if isinstance(state, str):
        return state
    if not isinstance(state, dict):
        raise ExampleFormatError(f"a state must be a dict or str, got {type(state).__name__}")
    lines = []
    for obj in sorted(state, key=str):
        attrs = state[obj]
        if isinstance(attrs, dict):
            body = ", ".join(f"{k}={attrs[k]}" for k in sorted(attrs, key=str))
        else:
            body = str(attrs)
        lines.append(f"{obj}: {body}" if body else str(obj))
    return "\n".join(lines)
