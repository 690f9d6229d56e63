"""``icalkit demo``: the end-to-end demo that `make demo` runs on the embedded defaults."""

from __future__ import annotations

from dataclasses import dataclass, field

from icalkit.commands import demos as demos_cmd

HELP = """icalkit demo — a short end-to-end run of the pipeline on the embedded defaults.

Stage 1: generates a few tasks, runs the expert and the noisy demonstrator, saves the
demonstrations (JSONL + Hugging Face datasets), writes a few frames as PNG and prints a
per-task-type table.
Stage 2: executes a program step by step in the sandbox and prints the feedback of each attempt.

Example:
  icalkit demo out_dir=runs/demo demos.n_per_type=2
"""

DEMO_TYPES = ["Coffee", "Boil X", "Plate Of Toast", "Water Plant", "Salad", "Clean All X"]


@dataclass
class Config:
    out_dir: str = "runs/demo"
    demos: demos_cmd.Config = field(default_factory=lambda: demos_cmd.Config(task_types=list(DEMO_TYPES), n_per_type=1))


def run(cfg: Config) -> int:
    cfg.demos.out_dir = f"{cfg.out_dir}/demos"
    print("== stage 1: demonstrations ==")
    demos_cmd.run(cfg.demos)
    print("\n== stage 2: a program executed step by step, with feedback ==")
    from icalkit.agents.executor_demo import run_demo

    run_demo()
    print(f"\nall outputs under {cfg.out_dir}")
    return 0
