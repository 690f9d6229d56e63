"""P-RAG success per round with the default model (SmolLM2-135M-Instruct) on CPU.

Self-iteration on a small fixed task set: round 1 starts from an empty trajectory database (the
baseline: no retrieval), each later round retrieves the trajectories of all earlier rounds.
Prints success rate, SPL, goal-condition rate, stop rate and invalid actions per round, each
round's success as a ratio against round 1, and the round-to-round transition table. No ground
truth is used for ``done`` (``oracle_success`` off; the success columns are the evaluation).
Resumable: results accumulate in the run folder; a re-run continues where it stopped.

Writes benchmarks/results/prag.json.

Usage: python benchmarks/bench_prag.py [--rounds 3] [--max-steps 20] [--threads 1] [--out runs/bench_prag]
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import torch

from icalkit.agents.api.runtime import ApiConfig
from icalkit.agents.executor import ExecutorLimits
from icalkit.agents.llm_session import LLMSession
from icalkit.data_gen.expert import reference_length
from icalkit.data_gen.prag import PragAgent, PragConfig, round_table, run_prag, transition_table
from icalkit.envs.household.tasks.sampler import sample_tasks
from icalkit.memory.config import build_trajectory_db
from icalkit.models.llm.factory import build_llm

TASK_TYPES = ["Coffee", "Water Plant", "Boil X", "pick_and_place", "pick_clean_then_place",
              "pick_heat_then_place", "pick_cool_then_place", "Plate Of Toast"]
RESULTS = Path(__file__).resolve().parent / "results" / "prag.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-steps", type=int, default=20)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", default="runs/bench_prag")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    out = Path(args.out)
    tasks = sample_tasks(TASK_TYPES, 1, "valid_unseen", seed=0)
    ref_lens = {t.task_id: reference_length(t) for t in tasks}
    cfg = PragConfig(k=3, max_steps=args.max_steps, batch_size=len(tasks))
    llm = build_llm("hf", cache=True, cache_path=out / "llm_cache.sqlite", device="cpu")
    agent = PragAgent(LLMSession(llm, cfg.max_new_tokens), build_trajectory_db(str(out / "trajectories.db")), cfg,
                      ExecutorLimits(api=ApiConfig()))
    start = time.perf_counter()

    def on_round(phase: str, r: int, recs: list[dict]) -> None:
        sr = sum(x["success"] for x in recs) / len(recs)
        print(f"round {r}: success {sr:.3f} after {time.perf_counter() - start:.0f} s", flush=True)

    records = run_prag(agent, "self_iterate", args.rounds, [], tasks, out / "episodes.jsonl", ref_lens, on_round)
    wall = time.perf_counter() - start
    rows = round_table(records)
    base = rows[0]["success_rate"]
    for row in rows:
        row["success_vs_round1"] = (row["success_rate"] / base) if base > 0 else None
        row["llm_calls"] = sum(x["llm"]["calls"] for x in records if x["round"] == row["round"])
    transitions = transition_table(records)
    result = {
        "benchmark": "P-RAG self-iteration, success per round",
        "model": agent.llm.model_name, "device": "cpu", "torch_threads": args.threads,
        "tasks": [t.task_id for t in tasks], "rounds": args.rounds, "max_steps": args.max_steps,
        "k": cfg.k, "oracle": {"success_flag": cfg.oracle_success, "object_map": True},
        "per_round": rows, "transitions": transitions,
        "wall_s_this_run": wall, "machine": platform.platform(), "cpu_count": torch.get_num_threads(),
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    for row in rows:
        ratio = "n/a (round 1 solved none)" if row["success_vs_round1"] is None else f"{row['success_vs_round1']:.2f}x"
        print(f"round {row['round']}: SR {row['success_rate']:.3f}  SPL {row['spl']:.3f}  GC {row['gc']:.3f}  "
              f"stop {row['stop_rate']:.2f}  invalid/ep {row['invalid_per_episode']:.1f}  vs round 1: {ratio}")
    for t in transitions:
        print(f"round {t['from_round']}->{t['to_round']}: stay solved {t['stay_solved']}, become solved "
              f"{t['become_solved']}, become unsolved {t['become_unsolved']}, stay unsolved {t['stay_unsolved']}")
    print(f"wrote {RESULTS} ({wall:.0f} s)")


if __name__ == "__main__":
    main()
