"""Natural-language feedback on an executed program, the two kinds ICAL uses.

1. From a failed action: ``Code failed at line 7, `toaster.place(bread)`: The Toaster is full
   right now.``
2. From unmet goal conditions after the program ended, using the task definitions' failure
   descriptions: ``The program ran, but the task is not done: The toast needs to be on a clean
   plate.``

:class:`HumanFeedback` asks a person at the terminal instead, showing the state and the failure.
"""

from __future__ import annotations

from collections.abc import Callable

from icalkit.agents.executor import Trace
from icalkit.envs.household.simulator import Simulator

SUCCESS_TEXT = "The program ran to completion and the task is done."
REVIEW_TEXT = ("The program ran to its end without an error. Compare the current state with the task: "
               "write a program for what is left to do, or an empty program if the task is complete.")
DONE_PROGRAM = "# the task is complete"  # the answer to REVIEW_TEXT when nothing is left
NEXT_COPY_TEXT = "The program ran to its end without an error; the next example is copied too"  # silent_next_copy
# silent_next_copy=end_state with model_replans, once the copies are spent: the model is told what is left
UNFINISHED_TEXT = "The program ran to its end without an error, but the task is not finished"
NOT_DONE_TEXT = "The task is not done yet"  # goal_feedback (the simulator's ground truth)


def action_feedback(trace: Trace) -> str | None:
    """Feedback about the first failure of the run (None when the program completed)."""
    failure = trace.failure
    if failure is None:
        return None
    if failure.kind == "refused":
        return f"The code was rejected before running: {failure.message}"
    where = f"line {failure.line}" if failure.line else "an unknown line"
    code = f", `{failure.code}`" if failure.code else ""
    message = failure.message.removeprefix(f"line {failure.line}: ") if failure.line else failure.message
    if failure.kind == "limit":
        return f"Code stopped at {where}{code}: {message}"
    return f"Code failed at {where}{code}: {message}"


def goal_feedback(trace: Trace, max_items: int = 5) -> str | None:
    """Feedback listing unmet goal conditions (None when there is no task or it succeeded)."""
    goal = trace.goal
    if goal is None or goal.success:
        return None
    descs = [d.strip() for d in goal.failure_descs if d.strip()][:max_items]
    done = f"{goal.satisfied} of {goal.total} goal conditions hold"
    if not descs:
        return f"{NOT_DONE_TEXT} ({done})."
    text = " ".join(d if d.endswith((".", "!", "?")) else d + "." for d in descs)
    return f"{NOT_DONE_TEXT} ({done}): {text}"


def program_feedback(trace: Trace) -> str:
    """Action feedback when the run failed, else goal feedback, else a success message."""
    return action_feedback(trace) or goal_feedback(trace) or SUCCESS_TEXT


def state_summary(sim: Simulator, max_objects: int = 30) -> str:
    """Short text of what the agent sees and holds, for a person giving feedback."""
    world = sim.world
    visible = sim.visible_objects()[:max_objects]
    parts = []
    for oid in visible:
        obj = world.objects[oid]
        flags = [name for name, on in (("open", obj.is_open), ("on", obj.is_toggled),
                                       ("dirty", obj.is_dirty), ("cooked", obj.is_cooked),
                                       ("filled", obj.is_filled)) if on]
        where = f" in {obj.parent}" if obj.parent else ""
        parts.append(f"{oid}{where}" + (f" ({', '.join(flags)})" if flags else ""))
    return f"Holding: {world.held or 'nothing'}. Visible: {'; '.join(parts) or 'nothing'}."


class HumanFeedback:
    """Asks a person for feedback on a run, showing the state and the automatic feedback.

    Args:
        input_fn: reads the person's answer (default: ``input``).
        output_fn: shows text to the person (default: ``print``).
    """

    def __init__(self, input_fn: Callable[[str], str] = input,
                 output_fn: Callable[[str], None] = print) -> None:
        self.input_fn = input_fn
        self.output_fn = output_fn

    def __call__(self, trace: Trace, sim: Simulator) -> str:
        """The person's feedback; an empty answer keeps the automatic feedback."""
        automatic = program_feedback(trace)
        self.output_fn("=" * 60)
        self.output_fn("Program:\n" + trace.program)
        self.output_fn("State: " + state_summary(sim))
        self.output_fn("Automatic feedback: " + automatic)
        answer = self.input_fn("Your feedback (empty = keep automatic): ").strip()
        return answer or automatic
