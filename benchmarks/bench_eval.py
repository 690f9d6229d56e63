"""Evaluation harness throughput: episodes/hour and model-busy fraction, parallel vs one after another.

Runs the same episodes (zero-shot planner, the default SmolLM2-135M-Instruct on CPU, response
cache off so every call generates) through ``icalkit eval`` twice: ``workers=0`` (one episode after
another in one process: the baseline) and ``workers=N`` (episode worker processes whose model calls
are batched in the parent). Prints episodes/hour of each and the ratio, the fraction of wall time
the model was generating, and the mean batch size; checks that both runs scored the same.

Writes benchmarks/results/eval.json.

Usage: python benchmarks/bench_eval.py [--types 6] [--workers 6] [--max-new-tokens 128] [--threads 2]
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
from pathlib import Path

from icalkit.cli import main as icalkit

RESULTS = Path(__file__).resolve().parent / "results" / "eval.json"
TYPES = ["Coffee", "Water Plant", "Boil X", "Plate Of Toast", "Clean All X", "N Slices Of X In Y",
         "N Cooked Slices Of X In Y", "Put All X On Y", "Put All X In One Y", "Salad", "Sandwich", "Breakfast"]


def run(out: Path, workers: int, args: argparse.Namespace) -> dict:
    shutil.rmtree(out, ignore_errors=True)
    types = ", ".join(f'"{t}"' for t in TYPES[: args.types])
    code = icalkit(["eval", "methods=[zero_shot]", "splits=[valid_unseen]", f"split.task_types=[{types}]",
                    "split.n_per_type=1", f"split.dir={out.parent / 'splits'}", f"workers={workers}",
                    f"torch_threads={args.threads}", f"llm.max_new_tokens={args.max_new_tokens}", "llm.cache=false",
                    f"llm.batch_size={max(1, workers)}", f"out_dir={out}", "wandb.mode=disabled"])
    summary = json.loads((out / "summary.json").read_text())
    summary["exit_code"] = code
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--types", type=int, default=6)
    parser.add_argument("--workers", type=int, default=6)
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", default="runs/bench_eval")
    args = parser.parse_args()
    out = Path(args.out)
    seq = run(out / "sequential", 0, args)
    par = run(out / f"workers{args.workers}", args.workers, args)
    s, p = seq["run"], par["run"]
    ratio = p["episodes_per_hour"] / s["episodes_per_hour"] if s["episodes_per_hour"] else 0.0
    same = seq["tables"]["table1"] == par["tables"]["table1"]
    result = {
        "episodes": p["episodes"], "workers": args.workers, "max_new_tokens": args.max_new_tokens,
        "torch_threads": args.threads, "model": "SmolLM2-135M-Instruct (hf, CPU)",
        "sequential": {k: s[k] for k in ("episodes_per_hour", "model_busy_fraction", "mean_batch", "wall_s", "model_calls")},
        "parallel": {k: p[k] for k in ("episodes_per_hour", "model_busy_fraction", "mean_batch", "wall_s", "model_calls")},
        "episodes_per_hour_ratio": ratio, "same_table": same,
        "table1_parallel": par["tables"]["table1"], "machine": platform.processor() or platform.machine(),
    }
    print(f"one after another: {s['episodes_per_hour']:.1f} episodes/h, model busy {s['model_busy_fraction']:.0%}")
    print(f"{args.workers} workers:       {p['episodes_per_hour']:.1f} episodes/h, model busy "
          f"{p['model_busy_fraction']:.0%}, mean batch {p['mean_batch']:.1f}")
    print(f"ratio: {ratio:.2f}x episodes/hour; same scores: {same}")
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
