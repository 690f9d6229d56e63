"""ICAL's own prompts as fine-tuning pairs (``data.ical_pairs``), so a tuned model can run ICAL.

The planner's pairs teach a model to write programs. ICAL asks two other things: to rewrite a
noisy demonstration with a summary and a plan (``ical_abstraction``) and to explain a failure and
fix the program (``ical_update``). A model tuned on the planner's pairs alone answers both with a
bare ``Program`` section, which ICAL's parser refuses. For each training task:

- **abstraction pair**: the ``ical_abstraction`` prompt :class:`~icalkit.data_gen.ical.ICALLearner`
  sends for a noisy demonstration of the task (the noisy demonstrator's run, as ``icalkit demos``
  records it; examples retrieved from the memory among the other task types, so that the program
  can only come from the demonstration, as on a new type's first demonstration) -> the expert's
  program, grounded in the prompt's ids, then a Summary and a Plan read from it (the classes it
  acts on; one step per action that changes something); kept only if the program solves the task
  from a reset. The program comes first: SmolLM2-135M tuned to write the plan first looped in it
  and never reached the program.
- **update pair**: the ``ical_update`` prompt after a mistake injected into that program
  (:func:`~icalkit.data_gen.mistakes.inject_mistake`) and the executor's feedback on it, as
  ICAL's simulated feedback gives it -> Explanation (the error and the change that fixes it) and
  the whole corrected program (ICAL runs an update from a reset).

Summary, plan and explanation are written by rule from the program, not by a person: they teach
the answer's sections and their tie to the program, not new knowledge.
"""

from __future__ import annotations

import difflib
import random
import re
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from icalkit.agents.feedback import action_feedback, program_feedback
from icalkit.agents.grounding import ground_program, shown_ids, ungrounded_ids
from icalkit.agents.prompts import load_template
from icalkit.data_gen.ical import ical_examples, ical_prompt_values
from icalkit.data_gen.ical_steps import (
    Abstraction,
    execute,
    parse_abstraction,
    parse_update,
    truncate_lines,
)
from icalkit.envs.household.tasks.task import Task

if TYPE_CHECKING:  # finetune_data imports this module when it builds pairs
    from icalkit.data_gen.finetune_data import PairBuilder

_DEF = re.compile(r'^(\w+) = InteractionObject\("([A-Za-z]+)"')
_CALL = re.compile(r"^(\w+)\.(\w+)\((\w*)")
_PHRASES = {"pickup": "Pick up the {obj}", "put_down": "Put the held object down",
            "place": "Put the held object in or on the {arg}", "pickup_and_place": "Put the {obj} in or on the {arg}",
            "open": "Open the {obj}", "close": "Close the {obj}", "toggle_on": "Turn on the {obj}",
            "toggle_off": "Turn off the {obj}", "slice": "Slice the {obj}", "pour": "Pour the {obj} into the {arg}"}


def plan_steps(program: str) -> list[str]:
    """One plain-language step per action of ``program`` that changes something (no ``go_to``;
    ``change_state`` and checks are not actions)."""
    classes: dict[str, str] = {}
    steps = []
    for line in program.splitlines():
        line = line.strip()
        if m := _DEF.match(line):
            classes[m.group(1)] = m.group(2)
        elif (m := _CALL.match(line)) and m.group(2) in _PHRASES:
            var, method, arg = m.groups()
            steps.append(_PHRASES[method].format(obj=classes.get(var, var), arg=classes.get(arg, arg)))
    return steps


def program_summary(program: str) -> str:
    """One short sentence on ``program``, read from it: its number of steps, its first and last.
    (A list of every class it uses made the tuned 135M model loop.)"""
    steps = plan_steps(program) or ["nothing"]
    return f"{len(steps)} steps, from '{steps[0]}' to '{steps[-1]}'."


def explanation(feedback: str, wrong: str, right: str) -> str:
    """The feedback's first line and the first change from ``wrong`` to ``right``, as one answer."""
    a, b = wrong.strip().splitlines(), right.strip().splitlines()
    change = "repeats the same steps"
    for op, i1, _, j1, _ in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op == "replace":
            change = f"uses `{b[j1].strip()}` instead of `{a[i1].strip()}`"
        elif op == "insert":
            change = f"adds `{b[j1].strip()}`"
        elif op == "delete":
            change = f"drops `{a[i1].strip()}`"
        if op != "equal":
            break
    first = (feedback.strip().splitlines() or ["The program did not solve the task."])[0]
    return f"{first} The new program {change}."


def sections_text(sections: dict[str, str | list[str]]) -> str:
    """An answer in ICAL's section format, in the given order: ``Program`` as a python block, a list
    as numbered items, other text after ``Name:``."""
    parts = []
    for name, value in sections.items():
        if name == "Program":
            parts.append(f"Program:\n```python\n{str(value).strip()}\n```")
        elif isinstance(value, list):
            parts.append(f"{name}:\n" + "\n".join(f"{k + 1}. {v}" for k, v in enumerate(value)))
        else:
            parts.append(f"{name}: {value}")
    return "\n".join(parts)


def noisy_episode(env: Any, task: Task, seed: int) -> dict:
    """The noisy demonstrator's episode of ``task`` (as ``icalkit demos`` records it) for pairs of ``seed``."""
    from icalkit.data_gen.demos import run_episode

    episode, _ = run_episode(env, task, "noisy", seed=random.Random(f"{seed}/{task.task_id}/ical").randrange(2**31),
                             keep_frames=False)
    return asdict(episode)


def ical_rows(builder: PairBuilder, task: Task, expert: str, out: Any) -> list[dict]:
    """The abstraction pair and one update pair of ``task`` (fewer when one fails; reasons in ``out``),
    from the expert's (ungrounded) program, with a :class:`~icalkit.data_gen.finetune_data.PairBuilder`'s
    env, memory, limits and settings."""
    from icalkit.agents.context import filtered_state
    from icalkit.data_gen.mistakes import INJECTED, absent_classes, inject_mistake
    from icalkit.data_gen.programs import trajectory_to_program
    from icalkit.envs.household.scene import build_world

    env, memory, limits, settings, seed = builder.env, builder.memory, builder.limits, builder.cfg.ical, builder.cfg.seed
    world = build_world(task)
    rng = random.Random(f"{seed}/{task.task_id}/ical/mistakes")
    try:
        demo = trajectory_to_program(build_world(task), noisy_episode(env, task, seed)["steps"])
    except Exception:  # noqa: BLE001 - a task the noisy demonstrator cannot do is counted, not fatal
        out.drop("ical_demo_failed")
        return []
    state = filtered_state(world, task, demo, limit=settings.max_state_objects)
    values = ical_prompt_values(task, state, ical_examples(memory, task, world, settings, other_types=True), settings)
    prompt = load_template("ical_abstraction").render(**values, program=truncate_lines(demo, settings.max_program_chars))
    ids = shown_ids(prompt)
    program = ground_program(expert, ids)
    if ungrounded_ids(program, ids) or not execute(env, task, program, limits).success:
        out.drop("ical_program_fails")
        return []
    meta = {"task_id": task.task_id, "task_type": task.task_type, "retrieved": []}
    notes = Abstraction(program=program, summary=program_summary(program), plan=plan_steps(program))
    # the program first, then what is read from it: a 135M model asked for the plan first loops in it
    rows = [{**meta, "kind": "ical_abstraction", "mistake": "", "mistaken_program": demo, "prompt": prompt,
             "completion": sections_text({"Program": program, "Summary": notes.summary, "Plan": notes.plan})}]
    classes = sorted({i.rsplit("_", 1)[0] for i in ids})
    injected = [m for m in builder.cfg.mistakes if m in INJECTED]
    for kind in rng.sample(injected, len(injected)):
        wrong = inject_mistake(program, kind, rng, classes, absent_classes(world))
        if wrong is None:
            continue
        run = execute(env, task, wrong, limits)
        if run.success:
            continue
        feedback = program_feedback(run.trace)
        prompt = load_template("ical_update").render(
            **values, feedback=feedback, abstractions=notes.notes(),
            program=truncate_lines(wrong, settings.max_program_chars))
        answer = sections_text({"Explanation": explanation(action_feedback(run.trace) or feedback, wrong, program),
                                "Program": program})
        rows.append({**meta, "kind": "ical_update", "mistake": kind, "mistaken_program": wrong, "prompt": prompt,
                     "completion": answer})
        break
    else:
        out.drop("ical_update_no_mistake_fails")
    for row, parse in zip(rows, (parse_abstraction, lambda t: parse_update(t, notes)), strict=False):
        parse(row["completion"])  # ICAL's own parsers read what the model is taught to write
    return rows
