"""Demo: a generated program executed step by step, its feedback, and the revised program.

Run with ``python -m icalkit.agents.executor_demo`` (or from the ``icalkit demo`` command via
:func:`run_demo`). Uses the embedded simulator only; no model is needed.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

from icalkit.agents.executor import Executor, Trace
from icalkit.agents.feedback import program_feedback
from icalkit.envs.household.scene import generate_scene
from icalkit.envs.household.simulator import Simulator
from icalkit.envs.household.tasks.task import Task

PREFIX = """\
knife = InteractionObject("Knife")
knife.pickup()
bread = InteractionObject("Bread", object_instance=BREAD)
container = InteractionObject(CONTAINER_TYPE, object_instance=CONTAINER)
if not container.check_attribute("open", True):
    container.open()
"""
ATTEMPTS = (
    ("attempt 1: forgets to slice the bread", """\
knife.put_down()
bread.pickup_and_place(toaster)
toaster.toggle_on()
"""),
    ("attempt 2: toasts nothing", """\
bread.slice()
knife.put_down()
bread_slice = InteractionObject("BreadSliced", parent_object=bread)
bread_slice.pickup_and_place(toaster)
"""),
    ("attempt 3: revised after feedback", """\
bread.slice()
knife.put_down()
bread_slice = InteractionObject("BreadSliced", parent_object=bread)
bread_slice.pickup_and_place(toaster)
toaster.toggle_on()
bread_slice.change_state("toasted", True)
"""),
)


def show_trace(trace: Trace, out: Callable[[str], None] = print) -> None:
    """Print a trace call by call: line, code, primitives, outcome."""
    lines = trace.program.splitlines()
    for call in trace.calls:
        code = lines[call.line - 1].strip() if call.line and call.line <= len(lines) else call.method
        moves = sum(1 for p in call.primitives if p.target is None)
        status = "ok" if call.success else f"FAILED: {call.error}"
        result = f" -> {call.result}" if call.result is not None else ""
        out(f"  line {call.line:>2}  {code:<48} [{call.object}; {moves} moves, "
            f"{len(call.primitives) - moves} interactions] {status}{result}")
    if trace.goal is not None:
        out(f"  goal conditions: {trace.goal.satisfied}/{trace.goal.total}")
    out(f"  feedback: {program_feedback(trace)}")


def run_demo(out: Callable[[str], None] = print) -> list[Trace]:
    """Run three attempts at Toast (action failure, unmet goal, success); returns their traces."""
    required = {"Bread": 1, "Knife": 1, "Toaster": 1}
    task = Task("demo/toast/0", "Toast", {}, "Toast", "Make a slice of toast.", [], "kitchen", 0,
                "train", required)
    world = generate_scene(task.scene_seed, task.split, task.room_type, required)
    bread = world.of_type("Bread")[0]
    container = world.objects[bread.parent]
    prefix = (PREFIX.replace("BREAD", repr(bread.object_id))
              .replace("CONTAINER_TYPE", repr(container.object_type))
              .replace("CONTAINER", repr(container.object_id))
              + 'toaster = InteractionObject("Toaster")\n')
    traces = []
    for title, body in ATTEMPTS:
        program = f"# Toast a slice of bread ({title})\n" + prefix + body
        out(f"=== {title} ===")
        out(program.rstrip())
        out("--- execution ---")
        trace = Executor(Simulator(copy.deepcopy(world))).run(program, task)
        show_trace(trace, out)
        traces.append(trace)
    return traces


if __name__ == "__main__":
    run_demo()
