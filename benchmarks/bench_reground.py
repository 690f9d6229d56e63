"""Mention re-grounding: does a copied demonstration get the new task's parameters from its dialogue?

For each task and each demonstration of its type in the example memory (``--memory``, the
recommended method's), :func:`~icalkit.agents.mention_grounding.mention_replacements` renames the
demonstration's parameter classes by what the dialogue mentions, in the task's own room; it is right
when it equals the hidden parameters' replacements (:func:`~icalkit.agents.grounding.reground_target`,
restricted to classes the room has). Query sets:

- ``hand_written``: the 48 hand-written dialogues of tests/data/human_dialogues/tfd_dialogues.yaml,
  each in a room built for its parameters (valid_unseen); ``hand_written_dev``: the 36 dev ones;
  ``hand_written_test2``: round 29's 48 (test2_dialogues.yaml, by a writer who never read this code);
  ``hand_written_test3``: round 30's 48 (test3_dialogues.yaml, another such writer);
- ``valid_seen``: 20 tasks per type of the task generator (seed 0);
- ``train``: 30 train tasks per type (seed 11; not the memory's own).

Configurations in the same run, by the rules of :data:`~icalkit.agents.mention_grounding.RULES` on:
``rules`` (the code's default, all of them), ``no_requested_places`` (a slot the demonstration puts
things on is scored on the whole dialogue, hints of where things are included: the baseline of the
ratio), ``no_same_use`` (a dish the demonstration fills may take a dish of any use) and ``none``.
The rules were chosen on ``train`` and ``valid_seen``; the hand-written sets were scored after. Round
29 made the Driver's turns ask for nothing (``requests``), read on the first hand-written set's failures;
round 30 made "a cup of coffee" name no cup (``MEASURE``), read on the second's.

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
    from icalkit.envs.household.tasks.hand_written import (
        DEV_DIALOGUES,
        HUMAN_DIALOGUES,
        TEST2_DIALOGUES,
        TEST3_DIALOGUES,
        human_task,
        load_human_dialogues,
    )
    from icalkit.envs.household.tasks.registry import TFD_TYPES
    from icalkit.envs.household.tasks.sampler import sample_tasks

    def written(path: Path) -> list[Any]:
        return [human_task(d, index=i) for i, d in enumerate(load_human_dialogues(path))]

    return {"hand_written": written(HUMAN_DIALOGUES), "hand_written_dev": written(DEV_DIALOGUES),
            "hand_written_test2": written(TEST2_DIALOGUES), "hand_written_test3": written(TEST3_DIALOGUES),
            "valid_seen": sample_tasks(TFD_TYPES, n_valid, "valid_seen", 0),
            "train": sample_tasks(TFD_TYPES, n_train, "train", 11)}


def score(tasks: list[Any], examples: dict[str, list[Any]], embedder: Any) -> dict[str, Any]:
    """Right / pairs for each configuration of rules, overall and per task type."""
    from icalkit.agents.context import example_program
    from icalkit.agents.grounding import reground_target
    from icalkit.agents.mention_grounding import RULES, mention_replacements
    from icalkit.envs.household.scene import build_world

    configs = {"rules": RULES, "no_requested_places": RULES - {"requested_places"},
               "no_same_use": RULES - {"same_use"}, "none": frozenset()}
    right: dict[str, Counter] = {name: Counter() for name in configs}
    pairs: Counter = Counter()
    for task in tasks:
        room = {o.object_type for o in build_world(task).objects.values()}
        for ex in examples.get(task.task_type, []):
            want = reground_target(ex, task, example_program(ex)) if ex.task_id != task.task_id else None
            if want is None:
                continue
            want = {a: b for a, b in want.items() if b in room}
            pairs[task.task_type] += 1
            for name, rules in configs.items():
                got = mention_replacements(ex, task.dialogue or [task.instruction], room, embedder, rules=rules)
                right[name][task.task_type] += got == want
    n = sum(pairs.values())
    out: dict[str, Any] = {"pairs": n}
    for name, by_type in right.items():
        out[name] = {"right": sum(by_type.values()), "accuracy": round(sum(by_type.values()) / max(n, 1), 4),
                     "by_type": {t: f"{by_type[t]}/{pairs[t]}" for t in sorted(pairs)}}
    out["ratio"] = round(out["rules"]["right"] / max(out["no_requested_places"]["right"], 1), 4)
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
        print(f"{name:18s} " + ", ".join(f"{c} {fig[c]['right']}" for c in ("rules", "no_requested_places",
                                                                          "no_same_use", "none"))
              + f" of {fig['pairs']} ({fig['ratio']:.3f}x against no_requested_places)", flush=True)
    results["wall_s"] = round(time.perf_counter() - start, 1)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
