"""Mention re-grounding: does a copied demonstration get the new task's parameters from its dialogue?

For each task and each demonstration of its type in the example memory (``--memory``, the
recommended method's), :func:`~icalkit.agents.mention_grounding.mention_replacements` renames the
demonstration's parameter classes by what the dialogue mentions, in the task's own room; it is right
when it equals the hidden parameters' replacements (:func:`~icalkit.agents.grounding.reground_target`,
restricted to classes the room has). Query sets:

- ``hand_written``: the 48 hand-written dialogues of tests/data/human_dialogues/tfd_dialogues.yaml,
  each in a room built for its parameters (valid_unseen); ``hand_written_dev``: the 36 dev ones;
- ``valid_seen``: 20 tasks per type of the task generator (seed 0);
- ``train``: 30 train tasks per type (seed 11; not the memory's own).

Two configurations in the same run: ``same_use`` (the code's default: a dish the demonstration puts
things in takes only a dish sharing one of its object classes) and its baseline without that rule.
The rule was chosen on ``train`` and ``valid_seen``; the hand-written sets were scored after.

Writes benchmarks/results/reground.json. Usage:
    python benchmarks/bench_reground.py [--memory runs/memories/pruned_n5_learned8.db]
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results" / "reground.json"


def query_sets(n_valid: int, n_train: int) -> dict[str, list[Any]]:
    """The tasks of each query set (hand-written ones rebuilt in a room made for their parameters)."""
    from icalkit.envs.household.tasks.registry import TFD_TYPES, TaskSpecError, get_task_type
    from icalkit.envs.household.tasks.sampler import make_task, sample_tasks
    from icalkit.training.retriever_data import DEV_DIALOGUES, HUMAN_DIALOGUES, load_human_dialogues

    def written(path: Path) -> list[Any]:
        tasks = []
        for i, d in enumerate(load_human_dialogues(path)):
            for room in get_task_type(d.task_type).rooms:  # the first room its parameters are allowed in
                try:
                    task = make_task(d.task_type, d.params or None, split="valid_unseen", index=i, seed=7, room_type=room)
                except TaskSpecError:
                    continue
                task.dialogue = [tuple(turn) for turn in d.dialogue]
                tasks.append(task)
                break
        return tasks

    return {"hand_written": written(HUMAN_DIALOGUES), "hand_written_dev": written(DEV_DIALOGUES),
            "valid_seen": sample_tasks(TFD_TYPES, n_valid, "valid_seen", 0),
            "train": sample_tasks(TFD_TYPES, n_train, "train", 11)}


def score(tasks: list[Any], examples: dict[str, list[Any]], embedder: Any) -> dict[str, Any]:
    """Right / pairs for both configurations, overall and per task type."""
    from icalkit.agents.context import example_program
    from icalkit.agents.grounding import reground_target
    from icalkit.agents.mention_grounding import mention_replacements
    from icalkit.envs.household.scene import build_world

    right: dict[str, Counter] = {"same_use": Counter(), "baseline": Counter()}
    pairs: Counter = Counter()
    for task in tasks:
        room = {o.object_type for o in build_world(task).objects.values()}
        for ex in examples.get(task.task_type, []):
            want = reground_target(ex, task, example_program(ex)) if ex.task_id != task.task_id else None
            if want is None:
                continue
            want = {a: b for a, b in want.items() if b in room}
            pairs[task.task_type] += 1
            for name, rule in (("same_use", True), ("baseline", False)):
                got = mention_replacements(ex, task.dialogue or [task.instruction], room, embedder, same_use=rule)
                right[name][task.task_type] += got == want
    n = sum(pairs.values())
    out: dict[str, Any] = {"pairs": n}
    for name, by_type in right.items():
        out[name] = {"right": sum(by_type.values()), "accuracy": round(sum(by_type.values()) / max(n, 1), 4),
                     "by_type": {t: f"{by_type[t]}/{pairs[t]}" for t in sorted(pairs)}}
    out["ratio"] = round(out["same_use"]["right"] / max(out["baseline"]["right"], 1), 4)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--memory", default="runs/memories/pruned_n5_learned8.db")
    parser.add_argument("--n-valid", type=int, default=20)
    parser.add_argument("--n-train", type=int, default=30)
    args = parser.parse_args()
    from icalkit.agents.mention_grounding import CachedEmbedder
    from icalkit.memory.embed import SentenceTransformerEmbedder
    from icalkit.memory.store import ExampleStore

    if not Path(args.memory).exists():
        raise SystemExit(f"no example memory at {args.memory}: build it with `make pruned-memory-learned`")
    examples: dict[str, list[Any]] = {}
    for ex in ExampleStore(args.memory):
        examples.setdefault(ex.task_type, []).append(ex)
    embedder = CachedEmbedder(SentenceTransformerEmbedder())
    start = time.perf_counter()
    results: dict[str, Any] = {"benchmark": "mention re-grounding against the hidden parameters",
                               "memory": args.memory, "sets": {}}
    for name, tasks in query_sets(args.n_valid, args.n_train).items():
        results["sets"][name] = fig = {"tasks": len(tasks), **score(tasks, examples, embedder)}
        print(f"{name:18s} {fig['same_use']['right']}/{fig['pairs']} right with the same-use rule, "
              f"{fig['baseline']['right']}/{fig['pairs']} without ({fig['ratio']:.3f}x)", flush=True)
    results["wall_s"] = round(time.perf_counter() - start, 1)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
