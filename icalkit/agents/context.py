"""What planners and the ICAL loop show a model: task text, (filtered) object state, examples.

One place for turning a task and a world into prompt text, shared by ICAL learning, the
deployment planner and P-RAG, so that learning and deployment see the same format.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from icalkit.envs.household.observe import object_state_dict
from icalkit.envs.household.state import World
from icalkit.envs.household.tasks.task import Task
from icalkit.memory.keys import DEFAULT_KEY, key_text

RETRIEVAL_STATE_OBJECTS = 20  # objects in the retrieval state, the same when learning and deploying

_FIXED_CONTEXT = ("SinkBasin", "Faucet", "Fridge", "Microwave", "Toaster", "CoffeeMachine", "StoveBurner",
                  "StoveKnob", "CounterTop", "DiningTable")


def task_text(task: Task, use_dialogue: bool = True) -> str:
    """The task as the model sees it: the dialogue (TEACh style) or the goal sentence."""
    if use_dialogue and task.dialogue:
        return task.dialogue_text()
    return task.instruction


def full_state(world: World) -> dict[str, dict]:
    """Attribute dicts of every object of the world (those in closed containers and the held one too)."""
    return object_state_dict(world, list(world.objects))


def relevant_types(task: Task, program: str = "") -> set[str]:
    """Object types the task mentions (its parameters and required objects) or a program names."""
    words = set(re.findall(r"[A-Z][A-Za-z]+", " ".join(map(str, task.params.values()))))
    words |= set(task.required_objects)
    words |= program_classes(program)
    words |= {w + "Sliced" for w in list(words)}
    return words


def filtered_state(world: World, task: Task, program: str = "", limit: int = 25) -> dict[str, dict]:
    """ICAL's abstracted state: only the task-relevant objects (plus the key appliances)."""
    wanted = relevant_types(task, program) | set(_FIXED_CONTEXT)
    state = {oid: attrs for oid, attrs in full_state(world).items() if attrs.get("label") in wanted}
    return dict(list(state.items())[:limit])


def planner_state(world: World, task: Task, limit: int = 25) -> dict[str, dict]:
    """The state a planner prompt shows: :func:`filtered_state` plus the openable containers
    (drawers, cabinets, fridge, ...) that hold a listed object, with their ``open`` state, right
    after their contents, so that a program can know it must open one before a pickup."""
    state = filtered_state(world, task, limit=limit)
    out: dict[str, dict] = {}
    for oid, attrs in state.items():
        out[oid] = attrs
        parent = attrs.get("parent")
        if parent and parent not in state and parent not in out and world.objects[parent].type.openable:
            out[parent] = object_state_dict(world, [parent])[parent]
    return out


def retrieval_state(world: World, task: Task) -> dict[str, dict]:
    """The textual-state signal of a retrieval key or query: the task-relevant objects at the start.

    Built from the task alone (no program, which deployment does not have) and cut to
    :data:`RETRIEVAL_STATE_OBJECTS`, so an example learned from a task and the same task at
    deployment get the same state.
    """
    return filtered_state(world, task, limit=RETRIEVAL_STATE_OBJECTS)


def retrieval_text(task: Task, memory: Any = None) -> str:
    """The text a task is looked up by: :func:`~icalkit.memory.keys.key_text` of its goal sentence
    and dialogue under the memory's key kind, the same function that built the stored examples' keys."""
    return key_text(task.instruction, task.dialogue, getattr(memory, "key", DEFAULT_KEY))


def retrieval_query(task: Task, world: World, memory: Any = None) -> tuple[str, dict[str, dict]]:
    """(text, state) a task is looked up by in an example memory, for learning and deployment alike."""
    return retrieval_text(task, memory), retrieval_state(world, task)


def state_text(state: dict[str, dict]) -> str:
    """Compact one-line-per-object rendering of an attribute-dict state (``open=False`` is kept:
    a closed container is the one thing a planner must act on)."""
    lines = []
    for oid, attrs in state.items():
        parts = [f"{k}={v}" for k, v in attrs.items()
                 if k != "label" and (v not in (None, False, "") or (k == "open" and v is False))]
        lines.append(f"{oid}: " + (", ".join(parts) if parts else "-"))
    return "\n".join(lines)


def example_program(example: Any) -> str:
    """The program an example contributes (ICAL's revision, else the demonstration's own)."""
    return example.revised_program or example.demo_program


def program_class_order(program: str) -> list[str]:
    """Object classes a program names (``InteractionObject("Mug", ...)``), in order of first use."""
    return unique(re.findall(r"InteractionObject\(\s*['\"]([A-Za-z]+)['\"]", program))


def program_classes(program: str) -> set[str]:
    """Object classes a program names, as a set."""
    return set(program_class_order(program))


def is_interaction(node: ast.AST | None) -> bool:
    """Whether ``node`` is an ``InteractionObject(...)`` call."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "InteractionObject"


def object_calls(program: str, value_of: Callable[[ast.Call], Any]) -> Iterator[tuple[str, Any, Any]]:
    """The method calls of ``program`` on objects, in order (inside a compound statement breadth-first):
    ``(method, receiver, first argument)``, each the value ``value_of`` gives the ``InteractionObject(...)``
    expression it is, or its name was last bound to (None for anything else). Raises SyntaxError for a
    program that does not parse."""
    bound: dict[str, Any] = {}

    def value(node: ast.AST) -> Any:
        if isinstance(node, ast.Name):
            return bound.get(node.id)
        return value_of(node) if is_interaction(node) else None

    for stmt in ast.parse(program).body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        if (v := value(node.value)) is None:
                            bound.pop(target.id, None)
                        else:
                            bound[target.id] = v
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                yield node.func.attr, value(node.func.value), value(node.args[0]) if node.args else None


def transfer_rate(score: Sequence[int] | None) -> float:
    """The smoothed share of tasks solved, ``(wins + 1) / (tried + 2)``: 0.5 for an example never
    tried, so one trial does not outrank many."""
    if not score:
        return 0.5
    wins, tried = score
    return (wins + 1) / (tried + 2)


def transfer_rates(memory: Any) -> dict[str, float]:
    """Example id -> :func:`transfer_rate` of the memory's stored transfer scores (none stored: empty)."""
    return {eid: transfer_rate(s) for eid, s in getattr(memory, "transfer_scores", dict)().items()}


def room_fit_order(examples: Sequence[Any], room: set[str], transfer: Mapping[str, float] | None = None) -> list[Any]:
    """Retrieved examples (best first) re-ordered so that the room can follow the first: those of the
    top hit's task type first; with ``transfer`` (example id -> the smoothed share of its type's
    other stored tasks it solved when copied, :func:`transfer_rate`) each
    group by that, best first; then by the share of its program's object classes in ``room`` (most
    first); ties in retrieval order."""
    if not examples:
        return []
    top = examples[0].task_type
    rates = transfer or {}

    def key(item: tuple[int, Any]) -> tuple:
        rank, ex = item
        classes = program_classes(example_program(ex))
        share = len(classes & room) / len(classes) if classes else 1.0
        return (ex.task_type != top, -rates.get(ex.example_id, 0.5) if rates else 0.0, -share, rank)

    return [ex for _, ex in sorted(enumerate(examples), key=key)]


def format_example(example: Any, index: int | None = None) -> str:
    """One learned example as in-context text (instruction, state, summary, plan, program).

    The state is rendered as the planner renders the new task's state (:func:`state_text`), and
    empty Summary / Plan sections (raw demonstrations) are left out: every token of an example
    is paid for at each call and in each training pair.
    """
    head = f"Example {index}" if index is not None else "Example"
    state = example.filtered_state or example.initial_state
    compact = isinstance(state, dict) and all(isinstance(a, dict) for a in state.values())
    parts = [f"### {head}", f"Instruction: {example.instruction_text()}",
             f"Abstracted State:\n{state_text(state) if compact else example.state_text()}"]
    if example.summary:
        parts.append(f"Summary: {example.summary}")
    if example.plan:
        parts.append("Plan:\n" + "\n".join(f"{k + 1}. {step}" for k, step in enumerate(example.plan)))
    parts.append(f"Program:\n```python\n{example_program(example).strip()}\n```")
    return "\n".join(parts)


def format_examples(examples: Sequence[Any]) -> str:
    """Several examples, numbered; a clear placeholder when there are none."""
    if not examples:
        return "(no examples yet)"
    return "\n\n".join(format_example(e, k + 1) for k, e in enumerate(examples))


def unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(i for i in items if i))
