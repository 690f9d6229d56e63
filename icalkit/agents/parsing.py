"""Tolerant parsing of model output (untrusted text) into named sections and code.

Small open models break formats: headers come as ``Summary:``, ``**Summary**``, ``## Summary``
or ``1. Summary -``; code may be fenced, unfenced or wrapped in JSON. :func:`parse_sections`
accepts all of these and JSON objects, and raises :class:`ParseError` with a message that can be
sent back to the model in a re-ask ("missing section(s) ...").
"""

from __future__ import annotations

import ast
import json
import re

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\n(.*?)(?:```|\Z)", re.S)


class ParseError(ValueError):
    """Model output does not contain what was asked for; the message explains what is missing."""


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", name.lower()).strip()


def extract_code(text: str, language: str = "python") -> str:
    """The program in a model answer: the first fenced block (preferring ``language``), else the text."""
    blocks = [(lang.lower(), body) for lang, body in _FENCE.findall(text)]
    for lang, body in blocks:
        if lang in (language, "py") and body.strip():
            return body.strip("\n") + "\n"
    for _, body in blocks:
        if body.strip():
            return body.strip("\n") + "\n"
    return text


def _header_pattern(names: list[str]) -> re.Pattern:
    alternatives = "|".join(sorted((re.escape(n).replace(r"\ ", r"[\s_-]*") for n in names), key=len, reverse=True))
    return re.compile(
        rf"^[ \t]*(?:#+[ \t]*|\d+[.)][ \t]*|[-*][ \t]+)?(?:\*\*|__)?[ \t]*({alternatives})[ \t]*(?:\*\*|__)?"
        rf"[ \t]*(?::|-|—|\n)[ \t]*(?:\*\*|__)?",
        re.I | re.M,
    )


def _from_json(text: str, wanted: dict[str, str]) -> dict[str, str] | None:
    for match in re.finditer(r"\{", text):
        try:
            obj, _ = json.JSONDecoder().raw_decode(text[match.start():])
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            found = {wanted[_norm(k)]: v if isinstance(v, str) else json.dumps(v)
                     for k, v in obj.items() if _norm(k) in wanted}
            if found:
                return found
    return None


def parse_sections(text: str, names: list[str], required: list[str] | None = None,
                   code_section: str | None = None) -> dict[str, str]:
    """Split model output into the named sections.

    Args:
        text: the raw model output.
        names: section names in the order they are expected (matching is case/spacing-insensitive).
        required: names that must be present and non-empty (default: all).
        code_section: the section holding a program; its fenced code is extracted, and a fenced
            block anywhere in the text fills it when no header names it.

    Returns:
        ``{name: content}`` for every section found (stripped).

    Raises:
        ParseError: a required section is missing or empty (the message names them).
    """
    if not isinstance(text, str):
        raise ParseError(f"expected text, got {type(text).__name__}")
    wanted = {_norm(n): n for n in names}
    found = _from_json(text, wanted) or {}
    if not found:
        matches = list(_header_pattern(names).finditer(text))
        for k, m in enumerate(matches):
            end = matches[k + 1].start() if k + 1 < len(matches) else len(text)
            name = wanted.get(_norm(m.group(1)))
            if name and name not in found:
                found[name] = text[m.end():end].strip()
    if code_section:
        body = found.get(code_section, "")
        if "```" in body:
            found[code_section] = extract_code(body)
        elif not body.strip():
            code = extract_code(text)
            if code is not text:
                found[code_section] = code
    found = {k: v.strip("\n") if k == code_section else v.strip() for k, v in found.items()}
    missing = [n for n in (required if required is not None else names) if not found.get(n, "").strip()]
    if missing:
        raise ParseError(
            f"the answer is missing section(s) {missing}; write each section as a header line "
            f"'<Name>:' followed by its content" + (", and the program in a ```python block" if code_section else ""))
    return found


def numbered_items(text: str) -> list[str]:
    """Items of a numbered or bulleted list (``1. ...``, ``- ...``); plain lines otherwise."""
    items = []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        items.append(re.sub(r"^(?:\d+[.)]|[-*•])\s*", "", line))
    return [i for i in items if i]


SECTIONS = ["Summary", "Abstracted State", "Plan", "Program"]  # a planner's program answer


def parse_program_answer(text: str) -> dict[str, str]:
    """Sections of a program answer; the Program must be present and valid Python."""
    sections = parse_sections(text, SECTIONS, required=["Program"], code_section="Program")
    try:
        ast.parse(sections["Program"])
    except SyntaxError as exc:
        raise ParseError(f"the program is not valid Python (line {exc.lineno}: {exc.msg})") from None
    return sections


def parse_score(text: str) -> float:
    """The 0–10 score of a ``Score: N`` answer (the first number in range)."""
    for match in re.finditer(r"\d+(?:\.\d+)?", text):
        value = float(match.group())
        if 0 <= value <= 10:
            return value
    raise ParseError("no score from 0 to 10 found; reply 'Score: N'")
