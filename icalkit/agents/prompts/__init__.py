"""Versioned prompt templates with declared placeholders, checked when loaded.

A template is a YAML file in ``templates/`` (or any folder)::

    name: ical_abstraction
    version: 1
    placeholders: [instruction, program, examples]
    system: |
      You are ...
    user: |
      Instruction: {instruction}
      ...

Loading checks that the placeholders used in the text are exactly the declared ones (so a typo
fails at start-up, not mid-run); rendering checks that exactly the declared values are given.
``template.prompt_id`` (``name@v1-<hash>``) is recorded with every generation.
"""

from __future__ import annotations

import hashlib
import string
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import yaml

TEMPLATES_DIR = Path(__file__).parent / "templates"


class PromptTemplateError(ValueError):
    """A template file is malformed or rendered with the wrong values."""


def _fields(text: str, source: str) -> set[str]:
    try:
        return {f for _, f, _, _ in string.Formatter().parse(text) if f is not None}
    except ValueError as exc:
        raise PromptTemplateError(f"{source}: bad braces in template text ({exc}); write {{{{ }}}} for literal braces") from exc


@dataclass(frozen=True)
class PromptTemplate:
    """A chat prompt: optional system text and a user text with ``{placeholders}``."""

    name: str
    version: int
    placeholders: tuple[str, ...]
    user: str
    system: str = ""
    source: str = ""

    def __post_init__(self) -> None:
        used = _fields(self.user, self.source) | _fields(self.system, self.source)
        bad = sorted(f for f in used if not f.isidentifier())
        if bad:
            raise PromptTemplateError(f"{self.source}: placeholders must be plain names, got {bad}")
        undeclared, unused = sorted(used - set(self.placeholders)), sorted(set(self.placeholders) - used)
        if undeclared or unused:
            raise PromptTemplateError(
                f"{self.source}: placeholders used but not declared: {undeclared}; declared but unused: {unused}")

    @property
    def prompt_id(self) -> str:
        digest = hashlib.sha256((self.system + "\x00" + self.user).encode()).hexdigest()[:8]
        return f"{self.name}@v{self.version}-{digest}"

    def render(self, **values: object) -> list[dict[str, str]]:
        """Chat messages with the values filled in; missing or unknown values are an error."""
        missing = sorted(set(self.placeholders) - set(values))
        extra = sorted(set(values) - set(self.placeholders))
        if missing or extra:
            raise PromptTemplateError(f"prompt {self.prompt_id}: missing values {missing}, unknown values {extra}")
        text = {k: str(v) for k, v in values.items()}
        messages = [{"role": "system", "content": self.system.format(**text)}] if self.system.strip() else []
        return messages + [{"role": "user", "content": self.user.format(**text)}]


def parse_template(data: object, source: str) -> PromptTemplate:
    if not isinstance(data, dict):
        raise PromptTemplateError(f"{source}: a template must be a YAML mapping")
    missing = [k for k in ("name", "version", "placeholders", "user") if k not in data]
    if missing:
        raise PromptTemplateError(f"{source}: missing key(s) {missing}")
    unknown = sorted(set(data) - {"name", "version", "placeholders", "user", "system", "description"})
    if unknown:
        raise PromptTemplateError(f"{source}: unknown key(s) {unknown}")
    if not isinstance(data["version"], int) or not isinstance(data["placeholders"], list):
        raise PromptTemplateError(f"{source}: version must be an int and placeholders a list")
    return PromptTemplate(name=str(data["name"]), version=data["version"],
                          placeholders=tuple(map(str, data["placeholders"])), user=str(data["user"]),
                          system=str(data.get("system") or ""), source=source)


@lru_cache(maxsize=64)
def load_template(name: str, folder: str | None = None) -> PromptTemplate:
    """Load ``<folder>/<name>.yaml`` (default: the package's templates) and check it."""
    base = Path(folder) if folder else TEMPLATES_DIR
    path = base / f"{name}.yaml"
    if not path.is_file():
        available = sorted(p.stem for p in base.glob("*.yaml"))
        raise PromptTemplateError(f"no prompt template {name!r} in {base}; available: {available}")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise PromptTemplateError(f"{path}: not valid YAML ({exc})") from exc
    template = parse_template(data, str(path))
    if template.name != name:
        raise PromptTemplateError(f"{path}: declares name {template.name!r}, expected {name!r}")
    return template


def check_all_templates(folder: str | None = None) -> list[PromptTemplate]:
    """Load every template of a folder (start-up check)."""
    base = Path(folder) if folder else TEMPLATES_DIR
    return [load_template(p.stem, folder) for p in sorted(base.glob("*.yaml"))]
