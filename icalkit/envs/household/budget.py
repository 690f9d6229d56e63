"""TEACh's episode budget, defined once for the gym env and the program executor.

An episode may send ``max_steps`` primitive actions (TEACh: 1000) and fail ``max_failures`` of
them (TEACh: 30 failed primitive actions). Both counts are primitives since the simulator's last
reset (:attr:`Simulator.steps` / :attr:`Simulator.failures`), whoever sent them, and the episode is
over as soon as either count *reaches* its limit: the env truncates, and a program stops before
its next primitive (or right after the failed primitive that used up the last allowed failure).
"""

from __future__ import annotations

TEACH_MAX_STEPS = 1000
TEACH_MAX_FAILURES = 30


def budget_exhausted(steps: int, failures: int, max_steps: int = TEACH_MAX_STEPS,
                     max_failures: int = TEACH_MAX_FAILURES) -> str | None:
    """Why the episode is over budget, or None while it may go on.

    Args:
        steps: primitive actions sent in the episode so far.
        failures: failed primitive actions in the episode so far.
        max_steps: step budget.
        max_failures: failure budget.
    """
    if steps >= max_steps:
        return f"the episode's limit of {max_steps} steps is used up"
    if failures >= max_failures:
        return f"the episode's limit of {max_failures} failed actions is reached"
    return None
