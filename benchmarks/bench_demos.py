"""Expert and noisy-demonstrator figures per task type.

Expert: success on every generated instance (target 100 %) and its mean path length. Noisy
demonstrator: success rate, mean extra steps over the expert (ratio to the expert's length) and
failed actions, for each of the 19 task types. Writes ``benchmarks/results/demos.json``.

Usage: python benchmarks/bench_demos.py [--n 10] [--noise 0.2] [--split train]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from icalkit.data_gen.demos import run_episode
from icalkit.envs.household.env import HouseholdEnv
from icalkit.envs.household.tasks.registry import TASK_TYPES
from icalkit.envs.household.tasks.sampler import sample_task
from icalkit.tracking import markdown_table

RESULTS = Path(__file__).parent / "results"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10, help="instances per task type")
    parser.add_argument("--noise", type=float, default=0.2)
    parser.add_argument("--split", default="train")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    env = HouseholdEnv(render_obs=False)
    rows, start = [], time.perf_counter()
    for task_type in TASK_TYPES:
        expert_ok, expert_len, noisy_ok, extra, ratio, failed, mistakes = [], [], [], [], [], [], []
        for i in range(args.n):
            task = sample_task(task_type, i, args.split, args.seed)
            expert, _ = run_episode(env, task, "expert", keep_frames=False)
            noisy, _ = run_episode(env, task, "noisy", args.noise, seed=i, keep_frames=False)
            expert_ok.append(expert.success)
            expert_len.append(expert.n_steps)
            noisy_ok.append(noisy.success)
            extra.append(noisy.n_steps - expert.n_steps)
            ratio.append(noisy.n_steps / max(1, expert.n_steps))
            failed.append(noisy.n_failed)
            mistakes.append(sum(noisy.mistakes.values()))
        rows.append({"task_type": task_type, "n": args.n, "expert_success": float(np.mean(expert_ok)),
                     "expert_mean_steps": float(np.mean(expert_len)), "noisy_success": float(np.mean(noisy_ok)),
                     "noisy_mean_extra_steps": float(np.mean(extra)), "noisy_steps_ratio": float(np.mean(ratio)),
                     "noisy_failed_actions": float(np.mean(failed)), "noisy_mistakes": float(np.mean(mistakes))})
    elapsed = time.perf_counter() - start
    print(markdown_table(rows))
    overall = {"expert_success": float(np.mean([r["expert_success"] for r in rows])),
               "noisy_success": float(np.mean([r["noisy_success"] for r in rows])),
               "noisy_steps_ratio_vs_expert": float(np.mean([r["noisy_steps_ratio"] for r in rows]))}
    print(f"\nexpert success {overall['expert_success']:.3f} (target 1.0); noisy success "
          f"{overall['noisy_success']:.3f}; noisy/expert steps = {overall['noisy_steps_ratio_vs_expert']:.2f}x "
          f"({len(rows) * args.n * 2} episodes in {elapsed:.0f} s)")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "demos.json").write_text(json.dumps({"args": vars(args), "overall": overall, "per_type": rows},
                                                   indent=2) + "\n")


if __name__ == "__main__":
    main()
