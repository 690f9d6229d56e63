"""Cross-replay of stored examples: does an example's program also solve its type's other tasks?

ICAL keeps an example once its program solves its own task. A deployed agent that copies an
example into another room needs more: that the program transfers. Which of a type's examples
transfer is measured here with what the memory already holds, the demonstrations' own tasks:
each example's program is copied, exactly as the deployed copy planner copies it (its scene's ids
grounded to classes, the executor's pre-condition checks), into the scene of every other stored
demonstration of its type, with that demonstration's task parameters substituted for its own
(:func:`~icalkit.agents.grounding.reground_target`; both tasks are demonstrations, so both are
known) — and, for the types a fine-tune may train on, into training-split tasks of the type
(``transfer_tasks``). The count of tasks it solves is the example's ``transfer`` score, stored with the memory
(:meth:`~icalkit.memory.example_memory.ExampleMemory.set_transfer_scores`) and read by
``planner.transfer_order``. No model; a held-out type is scored on its own demonstrations only.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from types import SimpleNamespace
from typing import Any


class _OneExample:
    """A memory that always retrieves one example (the planner's copy path runs unchanged)."""

    def __init__(self, example: Any) -> None:
        self.example = example

    def retrieve(self, *args: Any, **kwargs: Any) -> list[Any]:
        return [SimpleNamespace(example=self.example)]


def transfer_scores(examples: Iterable[Any], env: Any, limits: Any, extra: Mapping[str, Sequence[Any]] | None = None,
                    progress: bool = True) -> dict[str, list[int]]:
    """``{example_id: [tasks solved, tasks tried]}`` over the other stored demonstrations of each
    example's type and the ``extra`` tasks of its type (training tasks; see :func:`extra_tasks`).
    An example whose task id names no task is tried on the extra tasks only."""
    from tqdm import tqdm

    from icalkit.agents.planner import Planner
    from icalkit.agents.planner_config import PlannerConfig
    from icalkit.envs.household.tasks.registry import TaskSpecError
    from icalkit.envs.household.tasks.sampler import task_from_id

    tasks: dict[str, Any] = {}  # the stored demonstrations' own tasks, by id
    examples = list(examples)
    for ex in examples:
        try:
            tasks.setdefault(ex.task_id, task_from_id(ex.task_id))
        except TaskSpecError:
            continue
    cfg = PlannerConfig(mode="copy", k=1, max_replans=0, precondition_checks=True, ground_ids=True,
                        oracle_reground=True)
    scores: dict[str, list[int]] = {}
    for ex in tqdm(examples, desc="transfer", unit="example", disable=not progress):
        planner = Planner(None, _OneExample(ex), cfg, limits)
        others = [t for tid, t in tasks.items() if t.task_type == ex.task_type and tid != ex.task_id]
        others += [t for t in (extra or {}).get(ex.task_type, ()) if t.task_id not in tasks]
        wins = 0
        for task in others:
            env.reset(options={"task": task})
            wins += int(planner.run_episode(task, env).success)
        scores[ex.example_id] = [wins, len(others)]
    return scores


EXTRA_SEED = 1  # the stored demonstrations of `make pruned-memory` are seed 0's first tasks


def extra_tasks(task_types: Sequence[str], n: int, seed: int = EXTRA_SEED) -> dict[str, list[Any]]:
    """``n`` training-split tasks of each type (seed ``EXTRA_SEED``), to score the examples of the
    types a fine-tune may train on — never a held-out type's."""
    from icalkit.envs.household.tasks.sampler import sample_tasks

    return {t: sample_tasks([t], n, "train", seed) for t in task_types} if n else {}


def transfer_summary(examples: Iterable[Any], scores: dict[str, list[int]]) -> dict[str, dict[str, float]]:
    """Per task type: examples, the mean share of tasks solved, and the best example's share."""
    rows: dict[str, list[float]] = defaultdict(list)
    for ex in examples:
        wins, tried = scores.get(ex.example_id, [0, 0])
        if tried:
            rows[ex.task_type].append(wins / tried)
    return {t: {"examples": len(v), "mean": round(sum(v) / len(v), 3), "best": round(max(v), 3)}
            for t, v in sorted(rows.items())}
