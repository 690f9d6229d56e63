"""Retrieval quality: does the example memory return examples of the right task type?

A memory of 60 demonstrations (5 per TEACh task type, train split, each stored with its dialogue,
goal sentence and task-relevant start state) is queried, through ``ExampleMemory.retrieve`` with
the planner's own query (:func:`~icalkit.agents.context.retrieval_query`), by three query sets:

- ``generated``: 5 valid_unseen tasks per type with the task generator's dialogues;
- ``generated_human``: the same tasks with the wider human-like dialogues (``style="human"``);
- ``hand_written``: the 48 hand-written dialogues of tests/data/human_dialogues (never trained on);
- ``hand_written_dev``: the 36 hand-written dev dialogues settings were chosen on (shown for the
  gap between the set one tunes on and the test set; never trained on).

Per retriever configuration it reports top-1 task-type accuracy and precision@5 (share of the top
5 with the query's type), overall and per task type. Configurations:

- ``before``: the code before issue 13 (keys = goal sentences, query = whole dialogue, weights
  1/1/1, state cut to 20 objects for keys and 25 for queries), untuned embedder: the baseline;
- ``untuned``: shared keys/queries (``commander`` key kind), ICAL weights 0.8/0.1/0.1;
- ``learned``: the same with the fine-tuned embedder (``--learned`` folder, from
  ``icalkit train-retriever`` / ``make retriever``);
- ``+vote``: the same with the task-type vote re-ranking (``memory.type_vote``, β = ``--type-vote``).

Training settings and β were chosen on the dev dialogues (tests/data/human_dialogues/
dev_dialogues.yaml, also hand-written), which this benchmark does not score.

Writes benchmarks/results/retrieval_quality.json. Usage:
    python benchmarks/bench_retrieval_quality.py [--learned runs/retriever/model] [--threads 1]
        [--planning runs/eval_retriever [--planning-only]]

Planning success: `icalkit eval methods='[copy, copy_learned]' split.n_per_type=2 workers=0
out_dir=runs/eval_retriever` (copy runs the top retrieved raw demonstration's program, no model),
then ``--planning runs/eval_retriever --planning-only`` adds its figures to the results file.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results" / "retrieval_quality.json"
K = 5


def build_tasks() -> tuple[list, dict[str, list]]:
    """Memory tasks and the three query sets, each task with its start world."""
    from icalkit.envs.household.scene import build_world
    from icalkit.envs.household.tasks.hand_written import DEV_DIALOGUES, human_task, load_human_dialogues
    from icalkit.envs.household.tasks.instructions import write_instructions
    from icalkit.envs.household.tasks.sampler import friendly_params, sample_task
    from icalkit.training.retriever_data import TFD_TYPES

    memory = [sample_task(t, i, "train") for t in TFD_TYPES for i in range(5)]
    generated = [sample_task(t, i, "valid_unseen") for t in TFD_TYPES for i in range(5)]
    human_like = []
    for task in generated:
        copy = type(task).from_dict(task.to_dict())
        _, copy.dialogue = write_instructions(task.task_type, friendly_params(task), f"{task.task_id}/human",
                                              style="human")
        human_like.append(copy)
    hand = [human_task(d, index=i) for i, d in enumerate(load_human_dialogues())]
    dev = [human_task(d, index=i) for i, d in enumerate(load_human_dialogues(DEV_DIALOGUES))]
    with_world = lambda tasks: [(t, build_world(t)) for t in tasks]  # noqa: E731
    return with_world(memory), {"generated": with_world(generated), "generated_human": with_world(human_like),
                                "hand_written": with_world(hand), "hand_written_dev": with_world(dev)}


class MemoEmbedder:
    """A text embedder that embeds each distinct text once per run (configurations share texts)."""

    def __init__(self, inner: Any):
        self.inner, self.name, self.dim, self.memo = inner, inner.name, inner.dim, {}

    def embed_text(self, texts: list[str]) -> Any:
        import numpy as np

        todo = [t for t in dict.fromkeys(texts) if t not in self.memo]
        if todo:
            self.memo.update(zip(todo, self.inner.embed_text(todo), strict=True))
        return np.stack([self.memo[t] for t in texts])


def build_memory(path: Path, memory_tasks: list, embedder: Any, key: str, weights: tuple, vote: float = 0.0) -> Any:
    from icalkit.agents.context import filtered_state, retrieval_state
    from icalkit.memory.example import Example
    from icalkit.memory.example_memory import ExampleMemory

    mem = ExampleMemory(path, embedder, key=key, weights=weights, type_vote=vote)
    examples = []
    for task, world in memory_tasks:
        state = filtered_state(world, task, limit=20) if key == "instruction" else retrieval_state(world, task)
        examples.append(Example(task_id=task.task_id, task_type=task.task_type, instruction=task.instruction,
                                dialogue=[f"{s}: {t}" for s, t in task.dialogue], filtered_state=state,
                                success=True))
    mem.add_many(examples)
    return mem


def evaluate(mem: Any, queries: list, before: bool) -> dict[str, Any]:
    """Top-1 accuracy and precision@5, overall and per task type."""
    from icalkit.agents.context import filtered_state, retrieval_query, task_text
    from icalkit.memory.example import format_state

    per_type: dict[str, list[tuple[float, float]]] = defaultdict(list)
    asked = []
    for task, world in queries:
        if before:  # the query of the code before issue 13
            asked.append((task_text(task, True), filtered_state(world, task, limit=25)))
        else:
            asked.append(retrieval_query(task, world, mem))
    # what retrieve() does per query, with the embedding batched over the queries
    texts = mem.text_embedder.embed_text([t for t, _ in asked])
    states = mem.text_embedder.embed_text([format_state(s) for _, s in asked])
    for (task, _), text, state in zip(queries, texts, states, strict=True):
        hits = mem.retrieve_vectors({"instruction": text, "text_state": state}, k=K)
        types = [h.example.task_type for h in hits]
        per_type[task.task_type].append((float(types[0] == task.task_type),
                                         sum(t == task.task_type for t in types) / K))
    rows = [x for v in per_type.values() for x in v]
    return {"n": len(rows), "top1": round(sum(r[0] for r in rows) / len(rows), 3),
            "precision_at_5": round(sum(r[1] for r in rows) / len(rows), 3),
            "per_type": {t: {"n": len(v), "top1": round(sum(r[0] for r in v) / len(v), 3),
                             "precision_at_5": round(sum(r[1] for r in v) / len(v), 3)} for t, v in per_type.items()}}


def planning_effect(eval_dir: Path) -> dict[str, Any]:
    """What an `icalkit eval` run of copy vs copy_learned found: per method and split, episodes, SR,
    GC (Table 1) and how often the retrieved example had the task's type (from the memories' records)."""
    import sqlite3

    from icalkit.eval.methods import load_method

    summary = json.loads((eval_dir / "summary.json").read_text(encoding="utf-8"))
    config = summary.get("config", {})
    methods = {m: load_method(m) for m in config.get("methods", [])}
    types: dict[str, str] = {}
    for method in methods.values():
        with sqlite3.connect(method.memory) as db:
            types.update(db.execute("SELECT key, task_type FROM records").fetchall())
    rows: dict[str, dict[str, Any]] = {}
    for line in (eval_dir / "episodes.jsonl").read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        row = rows.setdefault(f"{r['method']}/{r['split']}", {"n": 0, "success": 0, "right_type": 0})
        row["n"] += 1
        row["success"] += int(r["success"])
        row["right_type"] += int(bool(r["retrieved"]) and types.get(r["retrieved"][0]) == r["task_type"])
    for row in rows.values():
        row["sr"], row["right_type_retrieved"] = round(row["success"] / row["n"], 3), round(row["right_type"] / row["n"], 3)
    return {"eval_dir": str(eval_dir), "table1": (eval_dir / "table1.md").read_text(encoding="utf-8"),
            "split": config.get("split"), "methods": {m: {"memory": x.memory, "retriever": x.retriever or "untuned",
                                                          "type_vote": x.type_vote} for m, x in methods.items()},
            "per_method_split": rows}


def _train_summary(folder: Path) -> dict[str, Any] | None:
    """How the learned retriever was trained (its train_summary.json), or None."""
    path = folder / "train_summary.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--learned", default="runs/retriever/model", help="fine-tuned embedder folder (skipped if absent)")
    ap.add_argument("--keys", nargs="+", default=["commander"], help="key kinds to measure")
    ap.add_argument("--type-vote", type=float, default=3.0, help="β of the type-vote re-ranking (+vote lines)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default=str(RESULTS))
    ap.add_argument("--planning", default="", help="an `icalkit eval` run of copy vs copy_learned: add its figures "
                    "to the results file (with --planning-only, nothing else is measured)")
    ap.add_argument("--planning-only", action="store_true")
    args = ap.parse_args()
    if args.planning_only:
        out = json.loads(Path(args.out).read_text(encoding="utf-8"))
        out["planning"] = planning_effect(Path(args.planning))
        Path(args.out).write_text(json.dumps(out, indent=1), encoding="utf-8")
        print(json.dumps(out["planning"]["per_method_split"], indent=1))
        return

    import torch

    from icalkit.memory.embed import SentenceTransformerEmbedder

    torch.set_num_threads(args.threads)
    start = time.perf_counter()
    memory_tasks, query_sets = build_tasks()
    print(f"tasks and worlds built in {time.perf_counter() - start:.1f}s")
    untuned = MemoEmbedder(SentenceTransformerEmbedder())
    ical_w, vote = (0.8, 0.1, 0.1), args.type_vote
    configs: list[tuple[str, Any, str, tuple, bool, float]] = [
        ("before", untuned, "instruction", (1.0, 1.0, 1.0), True, 0.0)]
    configs += [(f"untuned/{k}{tag}", untuned, k, ical_w, False, v) for k in args.keys
                for tag, v in (("", 0.0), ("+vote", vote))]
    learned = Path(args.learned)
    if (learned / "modules.json").is_file():
        tuned = MemoEmbedder(SentenceTransformerEmbedder(learned))
        configs += [(f"learned/{k}{tag}", tuned, k, ical_w, False, v) for k in args.keys
                    for tag, v in (("", 0.0), ("+vote", vote))]
    else:
        print(f"no learned retriever at {learned}; run `icalkit train-retriever` first")
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, emb, key, weights, before, v in configs:
            t0 = time.perf_counter()
            mem = build_memory(Path(tmp) / f"{name.replace('/', '_').replace('+', '_')}.db", memory_tasks, emb, key,
                               weights, v)
            results[name] = {"embedder": emb.name, "key": key, "weights": list(weights), "type_vote": v,
                             **{s: evaluate(mem, q, before) for s, q in query_sets.items()}}
            mem.close()
            print(f"{name:28s} " + "  ".join(f"{s}: top1 {results[name][s]['top1']:.3f} p@5 "
                                             f"{results[name][s]['precision_at_5']:.3f}" for s in query_sets)
                  + f"  ({time.perf_counter() - t0:.0f}s)")
    base = results["before"]
    for r in results.values():
        for s in query_sets:
            r[s]["vs_before"] = {"top1": round(r[s]["top1"] / max(base[s]["top1"], 1e-9), 3),
                                 "precision_at_5": round(r[s]["precision_at_5"] / max(base[s]["precision_at_5"], 1e-9), 3)}
    out = {"benchmark": "example-memory retrieval quality: task type of the top-5 examples",
           "memory": "60 examples, 5 per TEACh type (train split), one record per task",
           "queries": {s: len(q) for s, q in query_sets.items()}, "k": K,
           "goal": "hand_written: top1 >= 0.9 and precision_at_5 >= 0.85", "results": results,
           "learned_model": _train_summary(learned),
           **({"planning": planning_effect(Path(args.planning))} if args.planning else {}),
           "seconds": round(time.perf_counter() - start, 1)}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1), encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
