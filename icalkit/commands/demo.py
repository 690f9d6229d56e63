"""``icalkit demo``: the end-to-end demo that `make demo` runs on the embedded defaults."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from pathlib import Path

from icalkit.commands import demos as demos_cmd
from icalkit.commands import ical as ical_cmd
from icalkit.commands import plan as plan_cmd

HELP = """icalkit demo — a short end-to-end run of the pipeline on the embedded defaults.

Stage 1: generates a few tasks, runs the expert and the noisy demonstrator, saves the
demonstrations (JSONL + Hugging Face datasets), writes a few frames as PNG and prints a
per-task-type table.
Stage 2: executes a program step by step in the sandbox and prints the feedback of each attempt.
Stage 3: runs the ICAL loop on a handful of the noisy demonstrations with the default model
(SmolLM2-135M on CPU unless `ical.llm.*` says otherwise) and prints what was learned; then the
same demonstrations through the human-in-the-loop phase alone (the `abstraction=false` ablation).
Stage 4: plans a few unseen (valid_unseen) tasks with the learned memory (the ablation's memory
if full ICAL learned nothing, said so) and prints what succeeded.
Every stage resumes: re-running skips finished work (and the LLM response cache replays).

Examples:
  icalkit demo
  icalkit demo out_dir=runs/demo ical.limit=6 plan.limit=4
  icalkit demo ical.llm.backend=openai ical.llm.base_url=http://127.0.0.1:8000/v1 ical.llm.model=smollm2
"""

DEMO_TYPES = ["Coffee", "Boil X", "Plate Of Toast", "Water Plant", "Salad", "Clean All X"]


@dataclass
class Config:
    out_dir: str = "runs/demo"
    demos: demos_cmd.Config = field(default_factory=lambda: demos_cmd.Config(task_types=list(DEMO_TYPES), n_per_type=1))
    ical: ical_cmd.Config = field(default_factory=lambda: ical_cmd.Config(limit=3, n_feedbacks=2))
    plan: plan_cmd.Config = field(default_factory=lambda: plan_cmd.Config(task_types=list(DEMO_TYPES), limit=3))


def _print_learned(out_dir: str) -> None:
    from icalkit.data_gen.ical import read_results

    for r in read_results(f"{out_dir}/results.jsonl"):
        status = "learned" if r.get("success") else f"not learned ({r.get('failure') or r.get('error') or 'failed'})"
        print(f"  {r.get('demo_id', '?')}: {status}; attempts={r.get('attempts', 0)}, "
              f"LLM calls={r.get('usage', {}).get('calls', 0)}")


def _learned(out_dir: str) -> int:
    """Examples an ICAL run stored (from its summary.json)."""
    return int(json.loads((Path(out_dir) / "summary.json").read_text())["memory_size"])


def run(cfg: Config) -> int:
    """Stages 1-4; each writes under ``out_dir``."""
    from icalkit.agents.executor_demo import run_demo

    cfg.demos.out_dir = f"{cfg.out_dir}/demos"
    cfg.ical.demos_dir, cfg.ical.out_dir = cfg.demos.out_dir, f"{cfg.out_dir}/ical"
    cfg.ical.memory.path = cfg.plan.memory.path = f"{cfg.out_dir}/ical/memory.db"
    cfg.plan.out_dir = f"{cfg.out_dir}/plan"
    cfg.plan.llm = cfg.ical.llm
    cfg.ical.wandb = cfg.plan.wandb = cfg.demos.wandb
    print("== stage 1: demonstrations ==")
    demos_cmd.run(cfg.demos)
    print("\n== stage 2: a program executed step by step, with feedback ==")
    run_demo()
    print(f"\n== stage 3: ICAL on {cfg.ical.limit or 'all'} noisy demonstrations ==")
    ical_cmd.run(cfg.ical)
    _print_learned(cfg.ical.out_dir)
    print("\n== stage 3b: the same demonstrations, human-in-the-loop phase only (abstraction=false) ==")
    hitl = copy.deepcopy(cfg.ical)
    hitl.abstraction, hitl.out_dir = False, f"{cfg.out_dir}/ical_hitl_only"
    hitl.memory.path = f"{hitl.out_dir}/memory.db"
    ical_cmd.run(hitl)
    _print_learned(hitl.out_dir)
    memory = "the ICAL memory"
    if _learned(cfg.ical.out_dir) == 0 and _learned(hitl.out_dir) > 0:
        cfg.plan.memory.path, memory = hitl.memory.path, "the memory of stage 3b (full ICAL learned nothing)"
        cfg.plan.out_dir = f"{cfg.out_dir}/plan_with_hitl_only_memory"  # results of another memory
    print(f"\n== stage 4: planning {cfg.plan.limit or 'all'} unseen tasks with {memory} ==")
    plan_cmd.run(cfg.plan)
    print(f"\nall outputs under {cfg.out_dir}")
    return 0
