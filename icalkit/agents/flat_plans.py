"""Flat high-level plans for LLM-Planner and P-RAG: parsing model answers, converting programs.

- :func:`program_to_flat` turns an ICAL program (``mug = InteractionObject("Mug")`` ...
  ``mug.pickup_and_place(sink)``) into flat steps (``PickupObject Mug``, ``PutObject Mug
  SinkBasin``), so one example memory serves both the program planner and LLM-Planner.
- :func:`parse_flat_answer` reads a plan out of a model answer line by line, skipping lines that
  are not steps; :func:`parse_action` reads one action (or ``Stop``) for step-wise agents.
"""

from __future__ import annotations

import ast
import re

from icalkit.agents.api.flat import FLAT_ACTIONS, FlatPlanError, parse_flat_plan
from icalkit.agents.parsing import ParseError

STOP = "Stop"
_METHOD_TO_ACTION = {method: action for action, (method, _, _) in FLAT_ACTIONS.items()}
_STOP_WORDS = re.compile(r"^\W*(stop|done|finish(ed)?|end)\b", re.I)
_ARG_HINTS = {1: "<Object>", 2: "<Object> <Receptacle>"}


def action_space_text(with_stop: bool = True) -> str:
    """The flat actions with their arguments, e.g. ``PutObject <Object> <Receptacle>``."""
    names = [f"{a} {_ARG_HINTS[hi] if a != 'PourObject' else '<Object> <Target>'}"
             for a, (_, _, hi) in FLAT_ACTIONS.items()]
    if with_stop:
        names.append(f"{STOP} (when the task is done)")
    return ", ".join(names)


def program_to_flat(program: str) -> list[str]:
    """Flat steps of a household program (straight-line part; loops/branches are unrolled once).

    Unknown variables and non-API calls are skipped; a program that does not parse gives [].
    """
    try:
        tree = ast.parse(program)
    except SyntaxError:
        return []
    classes: dict[str, str] = {}
    steps: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            call = node.value
            if getattr(call.func, "id", None) == "InteractionObject" and call.args and \
                    isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        classes[target.id] = call.args[0].value
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name) and node.func.value.id in classes):
            continue
        subject, method = classes[node.func.value.id], node.func.attr
        args = [classes[a.id] for a in node.args if isinstance(a, ast.Name) and a.id in classes]
        where = (node.lineno, node.col_offset)
        if method == "pickup_and_place" and args:
            steps += [(*where, f"PickupObject {subject}"), (*where, f"PutObject {subject} {args[0]}")]
        elif method in _METHOD_TO_ACTION:
            steps.append((*where, " ".join([_METHOD_TO_ACTION[method], subject, *args[:1]])))
    return [s for _, _, s in sorted(steps, key=lambda s: s[:2])]  # stable: pickup before put


def parse_flat_answer(text: str) -> list[str]:
    """Flat steps in a model answer, one per line that parses; raises ParseError when none do."""
    if not isinstance(text, str):
        raise ParseError(f"expected text, got {type(text).__name__}")
    body = re.split(r"^\s*(?:\*\*)?plan(?:\*\*)?\s*:", text, maxsplit=1, flags=re.I | re.M)[-1]
    steps: list[str] = []
    for line in re.split(r"[\n;]+", body):
        if not line.strip() or _STOP_WORDS.match(line.strip()):
            continue
        try:
            steps += [str(s) for s in parse_flat_plan(line)]
        except FlatPlanError:
            continue
    if not steps:
        raise ParseError("no plan step could be read; write one step per line, e.g. "
                         "'Navigation Mug', 'PickupObject Mug', 'PutObject Mug SinkBasin'")
    return steps


def parse_action(text: str) -> str:
    """One action from a step-wise answer: ``Stop`` or a flat step such as ``PickupObject Mug``.

    Lines are read in order (an ``Action:`` prefix is allowed) and the first one that is an
    action wins. Raises ParseError naming the valid actions when no line is one.
    """
    if not isinstance(text, str):
        raise ParseError(f"expected text, got {type(text).__name__}")
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if not lines:
        raise ParseError(f"the answer is empty; reply with one action: {action_space_text()}")
    first_error = ""
    for raw in lines:
        line = re.sub(r"^(?:\*\*)?(?:next\s+)?action(?:\*\*)?\s*:\s*", "", raw, flags=re.I).strip("`* ")
        if _STOP_WORDS.match(line):
            return STOP
        try:
            return str(parse_flat_plan(line)[0])
        except FlatPlanError as exc:
            first_error = first_error or str(exc)
    raise ParseError(f"{first_error}; reply with one action: {action_space_text()}")
