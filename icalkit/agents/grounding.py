"""Object ids a planner prompt shows, and programs grounded in them.

A model can only learn or use ids its prompt shows: a fine-tuning target names no other id, and
with ``planner.ground_ids`` the deployed planner holds the model's programs to the same rule (an
id it copied from a retrieved example of another scene becomes a class the executor resolves).
The same step binds the object variables a program uses but never defines (``plate`` in
``toast.pickup_and_place(plate)``) to their class, as an example's program would have.
"""

from __future__ import annotations

import ast
import builtins
import re
from collections.abc import Collection
from functools import lru_cache
from typing import Any

from icalkit.agents.context import program_classes
from icalkit.envs.household.tasks.task import Task

_INSTANCE = re.compile(r',\s*object_instance="([^"]+)"')
_PARENT_STR = re.compile(r',\s*parent_object="([^"]+)"')
_ID = re.compile(r'"([A-Z][A-Za-z]+_\d+)"')
_EXAMPLES_SECTION = re.compile(r"Solved examples:.*?\n\n(?=New task:|Task:)", re.S)


def shown_ids(prompt: list[dict]) -> set[str]:
    """Object ids (``Mug_2``) that the prompt shows for the task itself: anywhere in its text
    except the retrieved examples, whose ids belong to other scenes."""
    text = _EXAMPLES_SECTION.sub("", " ".join(m["content"] for m in prompt))
    return set(re.findall(r"\b[A-Z][A-Za-z]+_\d+\b", text))


def ground_program(program: str, ids: set[str]) -> str:
    """Drop every ``object_instance``/string ``parent_object`` id not in ``ids`` (class only)."""
    keep = lambda m: m.group(0) if m.group(1) in ids else ""  # noqa: E731
    return _PARENT_STR.sub(keep, _INSTANCE.sub(keep, program))


def unpin(program: str, classes: Collection[str]) -> str:
    """``program`` with the instance ids of its objects of ``classes`` dropped: the executor gives each such
    variable an object the program has not used yet where the room has one (a second plate for a second dish)."""
    return ground_program(program, {i for i in _ID.findall(program) if i.rsplit("_", 1)[0] not in classes})


def ungrounded_ids(program: str, ids: set[str]) -> list[str]:
    """Quoted instance ids in ``program`` that the prompt never shows."""
    return sorted(set(_ID.findall(program)) - ids)


def bind_object_names(program: str) -> str:
    """``program`` with a definition line (``plate = InteractionObject("Plate")``) put first for
    each variable it reads before assigning (or never assigns) whose name spells an object class
    (``dining_table``, ``counter_top``, ``bowl_2``); other names and unparsable programs unchanged
    (the executor reports them)."""
    from icalkit.agents.api.household import CLASS_ALIASES
    from icalkit.envs.household.catalog import OBJECT_TYPES

    try:
        tree = ast.parse(program)
    except (SyntaxError, ValueError):
        return program
    first_load: dict[str, int] = {}
    first_store: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            seen = first_store if isinstance(node.ctx, ast.Store) else first_load
            seen[node.id] = min(seen.get(node.id, node.lineno), node.lineno)
    lines = []
    for name, line in sorted(first_load.items(), key=lambda kv: kv[1]):
        if line >= first_store.get(name, line + 1) or hasattr(builtins, name) or name == "InteractionObject":
            continue
        cls = "".join(part.capitalize() for part in re.sub(r"_\d+$", "", name).split("_"))
        cls = CLASS_ALIASES.get(cls, cls)
        if cls in OBJECT_TYPES:
            lines.append(f'{name} = InteractionObject("{cls}")\n')
    return "".join(lines) + program


_REPLACE_LINE = re.compile(r"^\s*[-*]?\s*`?([A-Z][A-Za-z]+)`?\s*(?:->|→|=>)\s*`?([A-Z][A-Za-z]+)`?\s*$")


def parse_replacements(text: str, example_classes: Collection[str], room_classes: Collection[str]) -> dict[str, str]:
    """The class replacements of a ``planner_reground`` answer (``Replace:`` then lines
    ``CreditCard -> KeyChain``), keeping only lines that replace a class the example uses by one the
    room shows (``room_classes``) and the example does not use (that would merge two of its objects);
    ``(none)`` gives ``{}``.

    Raises:
        ValueError: the answer has no ``Replace:`` section (model output is untrusted).
    """
    head = re.search(r"Replace\s*:", text, re.I)
    if head is None:
        raise ValueError("no 'Replace:' section")
    out: dict[str, str] = {}
    for line in text[head.end():].splitlines():
        m = _REPLACE_LINE.match(line)
        if m and m.group(1) in example_classes and m.group(2) in room_classes and m.group(2) not in example_classes:
            out.setdefault(m.group(1), m.group(2))
    return out


def replacements_text(mapping: dict[str, str]) -> str:
    """A ``planner_reground`` answer for ``mapping`` (the fine-tuning target; read back by
    :func:`parse_replacements`)."""
    return "Replace:\n" + ("\n".join(f"{a} -> {b}" for a, b in mapping.items()) or "(none)")


def replace_classes(program: str, mapping: dict[str, str]) -> str:
    """``program`` with each class of ``mapping`` replaced in its string literals: the class
    (``"CreditCard"``), its pieces (``"AppleSliced"`` -> ``"TomatoSliced"``) and its instance ids
    (``"CreditCard_2"`` -> ``"KeyChain_2"``, which ``ground_program`` turns into the class unless
    the task's prompt shows that id)."""
    if not mapping:
        return program
    alternatives = "|".join(sorted(map(re.escape, mapping), key=len, reverse=True))
    pattern = re.compile(rf'"({alternatives})(Sliced)?(_\d+)?"')
    return pattern.sub(lambda m: f'"{mapping[m.group(1)]}{m.group(2) or ""}{m.group(3) or ""}"', program)


@lru_cache(maxsize=256)
def task_params(task_id: str) -> dict[str, str] | None:
    """The named parameters of the task ``task_id`` names (read once per example); None for an id
    that names no task."""
    from icalkit.envs.household.tasks.registry import TaskSpecError
    from icalkit.envs.household.tasks.sampler import friendly_params, task_from_id

    try:
        return friendly_params(task_from_id(task_id))
    except TaskSpecError:
        return None


def reground_target(example: Any, task: Task, program: str) -> dict[str, str] | None:
    """The replacements that turn ``example``'s task parameters into ``task``'s: for each parameter
    both tasks name (``X``, ``Y``: also across types, an N Cooked Slices example's ``X`` for an N
    Slices task's) whose example value is an object class ``program`` (the example's) uses and
    whose values differ. None when the example's task id names no task to read them from.

    The fine-tuning target of ``planner_reground`` (``reground`` pairs), and with
    ``planner.oracle_reground`` the evaluation's oracle answer (the task parameters are hidden
    from a deployed agent)."""
    from icalkit.envs.household.catalog import OBJECT_TYPES
    from icalkit.envs.household.tasks.sampler import friendly_params

    theirs = task_params(example.task_id)
    if theirs is None:
        return None
    used = program_classes(program)
    out: dict[str, str] = {}
    for key, ours in friendly_params(task).items():
        old = theirs.get(key, "")
        if old != ours and old in used and ours in OBJECT_TYPES:
            out.setdefault(old, ours)
    return out


def grounded_answer(program: str, prompt: list[dict]) -> str:
    """``program`` as ``ground_ids`` runs it: ids ``prompt`` does not show become classes, and the
    object variables it reads but never defines are bound to their class."""
    return bind_object_names(ground_program(program, shown_ids(prompt)))
