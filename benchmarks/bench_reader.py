"""Request reading: the trained request reader against the rules, on every breakfast request of the given sets.

A breakfast is composed from one demonstration per dish its request lists
(:mod:`icalkit.agents.composition`). This checks the step before any episode runs: read the request
(by the rules, by the fine-tuned model of ``--method``, ``planner.request_reader``, and by the model where
:func:`~icalkit.agents.request_reading.grounded_reading` keeps its reading, as the planner does, with the
method's fill, ``planner.fill_missed_dishes``), retrieve a demonstration for each item, and compare the dish types
of those demonstrations and the serving place (read as the planner reads it, the dialogue's table where no clause
names a place) with the task's own (its menu and ``serve``). A reading is right only when both match. The
same memory, retriever, transfer order and room fit as the method's; the room is the task's whole
room. Sets: hand-written dialogue files (``--sets``, names under tests/data/human_dialogues) and the
generated dialogues of ``--per-seed`` Breakfast tasks for each of ``--seeds`` (valid_unseen). The
figure is the model's right readings over the rules' (same requests, same run), with the model's
seconds per reading. It also reads every single dish of a trained dish type in the sets (a coffee, slices in a
bowl, a salad; not a sandwich, a held-out type): a reading is right when it is that one dish in the reader's own
words (:func:`~icalkit.data_gen.request_pairs.dish_item`: count, food, cooked, vessel), by the model and grounded
(the rules read no count). ``--model`` reads with another trained reader (an earlier one, for a
ratio). With ``--episodes READER_RUN=BASELINE_RUN ...`` it also counts, per pair of
``icalkit eval`` runs, the successes of ``--method`` in the first and of ``--baseline`` in the second on
the same (split, task) — the end-to-end figure of the same reading (the same method in both, run by other
code, is told apart as "… (second run)"). Writes
``benchmarks/results/reader.json`` (every reading, the model's raw answer with it).

Usage: python benchmarks/bench_reader.py [--method copy_next_reader] [--sets tfd dev test2 test3]
       [--seeds 0 1 ... 9] [--per-seed 5] [--model DIR] [--baseline copy_next_stand_ins] [--episodes RUN=RUN ...]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from tqdm import tqdm

from icalkit.agents.composition import Composer, serving_place
from icalkit.agents.context import transfer_rates
from icalkit.agents.llm_session import CallStats, LLMSession
from icalkit.agents.mention_grounding import CachedEmbedder
from icalkit.agents.request_reading import READ_REQUEST, grounded_reading, parse_reading, reader_prompt
from icalkit.data_gen.request_pairs import DISH_TYPES, dish_item
from icalkit.envs.household.scene import build_world
from icalkit.envs.household.tasks.definitions import package_definitions
from icalkit.envs.household.tasks.hand_written import HUMAN_DIALOGUES, human_task, load_human_dialogues
from icalkit.envs.household.tasks.sampler import friendly_params, sample_tasks
from icalkit.envs.household.tasks.task import Task
from icalkit.eval.methods import MethodConfig, effective_llm, load_method
from icalkit.memory.config import MemoryConfig, TextEmbedderConfig, build_memory
from icalkit.memory.embed import SentenceTransformerEmbedder
from icalkit.models.llm.factory import LLMConfig, build_llm_from_config

RESULTS = Path(__file__).parent / "results"
READERS = ("rules", "model", "grounded")  # grounded: the model's reading where grounded_reading keeps it, else the rules


def breakfasts(sets: list[str], seeds: list[int], per_seed: int) -> list[tuple[str, str, Task]]:
    """(set name, dialogue or task id, task) for every Breakfast of the dialogue files and of the generated seeds."""
    tasks = []
    for name in sets:
        path = HUMAN_DIALOGUES.with_name(f"{name}_dialogues.yaml")
        if not path.is_file():
            sys.exit(f"no dialogue set {name!r}: {path} does not exist")
        tasks += [(name, d.id, human_task(d)) for d in load_human_dialogues(path) if d.task_type == "Breakfast"]
    for seed in seeds:
        tasks += [(f"seed{seed}", t.task_id, t) for t in sample_tasks(["Breakfast"], per_seed, "valid_unseen", seed)]
    return tasks


def single_dishes(sets: list[str]) -> list[tuple[str, str, Task, str]]:
    """(set name, dialogue id, task, its dish as the reader writes it) for every dialogue of a trained dish type."""
    out = []
    for name in sets:
        for d in load_human_dialogues(HUMAN_DIALOGUES.with_name(f"{name}_dialogues.yaml")):
            if d.task_type in DISH_TYPES:
                task = human_task(d)
                out.append((name, d.id, task, dish_item(d.task_type, friendly_params(task))))
    return out


def single_readings(session: LLMSession, dishes: list[tuple[str, str, Task, str]]) -> dict[str, Any]:
    """Each single dish read by the model: right when its reading (as it is; grounded) is that dish alone."""
    right, rows = Counter(), []
    for name, tid, task, want in tqdm(dishes, desc="single-dish requests"):
        dialogue = task.dialogue or [task.instruction]
        answer = session.ask([reader_prompt(dialogue)], parse_reading, READ_REQUEST, [CallStats()])[0]
        for reader, reading in (("model", answer.value), ("grounded", grounded_reading(answer.value, dialogue))):
            ok = reading is not None and reading[0] == [want]
            right[reader, name] += ok
            rows.append({"set": name, "id": tid, "type": task.task_type, "reader": reader, "right": ok, "dish": want,
                         "read": reading[0] if reading else None, "raw": answer.text if reader == "model" else None})
    sizes = Counter(name for name, *_ in dishes)
    return {"requests": len(dishes), **{f"{r}_right": sum(right[r, g] for g in sizes) for r in READERS[1:]},
            "per_set": {g: {"requests": n, **{f"{r}_right": right[r, g] for r in READERS[1:]}} for g, n in sizes.items()},
            "readings": rows}


def group_of(name: str) -> str:
    return "seeds" if name.startswith("seed") else name


def readings(method: MethodConfig, session: LLMSession, tasks: list[tuple[str, str, Task]]) -> dict[str, Any]:
    """Each request read by the rules and by the model, composed, and checked against the task's menu."""
    memory = build_memory(MemoryConfig(path=method.memory, text_embedder=TextEmbedderConfig(model=method.retriever)))
    composer = Composer(memory, transfer_rates(memory) if method.planner.transfer_order else None,
                        method.planner.room_fit)
    embedder = CachedEmbedder(SentenceTransformerEmbedder())
    dishes = package_definitions()["Breakfast"].components  # the TEACh definition's: "toast" -> Plate Of Toast
    right, rows, model_s = Counter(), [], 0.0
    for name, tid, task in tqdm(tasks, desc="breakfast requests"):
        params = friendly_params(task)
        want = sorted(c["task_name"] for key, c in dishes.items() if params.get(f"n_{key}") == "1")
        room = {o["objectType"] for o in build_world(task).metadata()}
        dialogue = task.dialogue or [task.instruction]
        start = time.perf_counter()
        answer = session.ask([reader_prompt(dialogue)], parse_reading, READ_REQUEST, [CallStats()])[0]
        model_s += time.perf_counter() - start
        for reader, reading in (("rules", None), ("model", answer.value),
                                ("grounded", grounded_reading(answer.value, dialogue, method.planner.fill_missed_dishes))):
            found, serving = composer.parts(dialogue, "Breakfast", room, task.task_id, reading)
            got = sorted(ex.task_type for _, ex in found)
            place = serving_place(serving, room, embedder, dialogue)  # as the planner: the table the Commander names
            ok = got == want and place == params["serve"]
            right[reader, group_of(name)] += ok
            rows.append({"set": name, "id": tid, "reader": reader, "right": ok, "dishes": want,
                         "read": got, "serve": params["serve"], "read_serve": place, "items": [i for i, _ in found],
                         "raw": answer.text if reader == "model" else None})
    sizes = Counter(group_of(name) for name, *_ in tasks)
    total = {r: sum(right[r, g] for g in sizes) for r in READERS}
    return {"requests": len(tasks), **{f"{r}_right": total[r] for r in READERS},
            **{f"{r}_over_rules": round(total[r] / max(total["rules"], 1), 3) for r in READERS[1:]},
            "model_s_per_reading": round(model_s / max(len(tasks), 1), 3),
            "per_set": {g: {"requests": n, **{f"{r}_right": right[r, g] for r in READERS}} for g, n in sizes.items()},
            "readings": rows}


def episodes(pairs: list[str], method: str, baseline: str) -> dict[str, Any]:
    """Successes of ``method`` (first run of each pair) and ``baseline`` (second) on the same (split, task)."""
    def successes(run: str, name: str) -> dict[tuple[str, str], dict]:
        path = Path(run) / "episodes.jsonl"
        if not path.is_file():
            sys.exit(f"--episodes: no {path}")
        records = (json.loads(line) for line in path.read_text().splitlines() if line.strip())
        return {(r["split"], r["task_id"]): r for r in records if r["method"] == name}

    per_run, totals = {}, Counter()
    base_key = f"{baseline} (second run)" if baseline == method else baseline  # the same method, other code
    for pair in pairs:
        ours_run, _, base_run = pair.partition("=")
        ours, base = successes(ours_run, method), successes(base_run or ours_run, baseline)
        keys = sorted(ours.keys() & base.keys())
        if not keys:
            sys.exit(f"--episodes {pair}: no (split, task) with both {method} and {baseline}")
        row = {"episodes": len(keys), method: sum(bool(ours[k]["success"]) for k in keys),
               base_key: sum(bool(base[k]["success"]) for k in keys),
               "gained": [f"{s}/{t}" for s, t in keys if ours[s, t]["success"] and not base[s, t]["success"]],
               "lost": [f"{s}/{t}" for s, t in keys if base[s, t]["success"] and not ours[s, t]["success"]]}
        per_run[pair] = row
        totals.update({"episodes": row["episodes"], method: row[method], base_key: row[base_key],
                       "gained": len(row["gained"]), "lost": len(row["lost"])})
    return {"method": method, "baseline": base_key, **totals, "per_run": per_run}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--method", default="copy_next_reader", help="a method with planner.request_reader")
    parser.add_argument("--sets", nargs="*", default=["tfd", "dev", "test2", "test3"])
    parser.add_argument("--seeds", nargs="*", type=int, default=list(range(10)))
    parser.add_argument("--per-seed", type=int, default=5)
    parser.add_argument("--model", default="", help="read with this trained reader (default: the method's)")
    parser.add_argument("--baseline", default="copy_next_stand_ins", help="--episodes: the method compared with")
    parser.add_argument("--episodes", nargs="*", default=[], metavar="RUN=RUN",
                        help="icalkit eval out_dirs: one with --method, = one with --baseline (omitted: the same)")
    parser.add_argument("--out", default=str(RESULTS / "reader.json"))
    args = parser.parse_args()
    method = load_method(args.method)
    llm_cfg = dataclasses.replace(effective_llm(method, LLMConfig()), cache=False)  # timed: no replayed answers
    llm_cfg = dataclasses.replace(llm_cfg, model=args.model) if args.model else llm_cfg
    if not method.planner.request_reader or not Path(llm_cfg.model).is_dir():
        sys.exit(f"method {method.name}: needs planner.request_reader and a trained reader at {llm_cfg.model!r} "
                 "(make reader)")
    session = LLMSession(build_llm_from_config(llm_cfg), max_new_tokens=128)  # one model for both readings
    result = {"args": vars(args), "model": llm_cfg.model,
              **readings(method, session, breakfasts(args.sets, args.seeds, args.per_seed))}
    print(f"{result['requests']} breakfast requests read right: " + ", ".join(
        f"{r} {result[f'{r}_right']}" for r in READERS) + f" (grounded {result['grounded_over_rules']}x the rules); "
        f"{result['model_s_per_reading']} s per model reading")
    for g, c in result["per_set"].items():
        print(f"  {g}: " + ", ".join(f"{r} {c[f'{r}_right']}/{c['requests']}" for r in READERS))
    one = result["single_dishes"] = single_readings(session, single_dishes(args.sets))
    print(f"{one['requests']} single-dish requests read as that dish alone: model {one['model_right']}, "
          f"grounded {one['grounded_right']}")
    if args.episodes:
        ep = result["episodes"] = episodes(args.episodes, method.name, args.baseline)
        print(f"episodes: {method.name} {ep[method.name]}, {ep['baseline']} {ep[ep['baseline']]} of {ep['episodes']} "
              f"(+{ep['gained']} -{ep['lost']})")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
