"""``icalkit demo``: the end-to-end demo that `make demo` runs on the embedded defaults."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from pathlib import Path

from icalkit.commands import demos as demos_cmd
from icalkit.commands import eval as eval_cmd
from icalkit.commands import ical as ical_cmd
from icalkit.config import explicit_keys
from icalkit.eval.splits import SplitConfig

HELP = """icalkit demo — a short end-to-end run of the pipeline on the embedded defaults.

Stage 1: generates a few tasks, runs the expert and the noisy demonstrator, saves the
demonstrations (JSONL + Hugging Face datasets), writes a few frames as PNG and prints a
per-task-type table.
Stage 2: executes a program step by step in the sandbox and prints the feedback of each attempt.
Stage 3: runs the ICAL loop on a handful of the noisy demonstrations with the default model
(SmolLM2-135M on CPU unless `ical.llm.*` says otherwise) and prints what was learned; then the
same demonstrations through the human-in-the-loop phase alone (the `abstraction=false` ablation).
Stage 4: evaluates (icalkit eval) the planner with the learned memory on a few unseen
(valid_unseen) tasks, next to the copy baseline (the retrieved program run as it is; the ablation's memory
if full ICAL learned nothing, said so) and prints what succeeded.
Every stage resumes: re-running skips finished work (and the LLM response cache replays).
The stages share paths under out_dir, ICAL's model (eval.llm) and the W&B setting of `demos`,
except where you set a key yourself (e.g. ical.out_dir=..., eval.llm.model=...): yours is kept.

Examples:
  icalkit demo
  icalkit demo out_dir=runs/demo ical.limit=6 eval.split.n_per_type=2
  icalkit demo ical.llm.backend=openai ical.llm.base_url=http://127.0.0.1:8000/v1 ical.llm.model=smollm2
"""

DEMO_TYPES = ["Coffee", "Boil X", "Plate Of Toast", "Water Plant", "Salad", "Clean All X"]


@dataclass
class Config:
    out_dir: str = "runs/demo"
    demos: demos_cmd.Config = field(default_factory=lambda: demos_cmd.Config(task_types=list(DEMO_TYPES), n_per_type=1))
    ical: ical_cmd.Config = field(default_factory=lambda: ical_cmd.Config(limit=3, n_feedbacks=2))
    eval: eval_cmd.Config = field(default_factory=lambda: eval_cmd.Config(
        splits=["valid_unseen"], split=SplitConfig(task_types=DEMO_TYPES[:3], n_per_type=1), workers=2))


def _print_learned(out_dir: str) -> None:
    from icalkit.data_gen.ical import read_results

    for r in read_results(f"{out_dir}/results.jsonl"):
        status = "learned" if r.get("success") else f"not learned ({r.get('failure') or r.get('error') or 'failed'})"
        print(f"  {r.get('demo_id', '?')}: {status}; attempts={r.get('attempts', 0)}, "
              f"LLM calls={r.get('usage', {}).get('calls', 0)}")


def _learned(out_dir: str) -> int:
    """Examples an ICAL run stored (from its summary.json)."""
    return int(json.loads((Path(out_dir) / "summary.json").read_text())["memory_size"])


def _method_file(out_dir: str, name: str, mode: str, memory: str) -> str:
    """Write a method config (a method is a config) for the demo's own memory; return its path."""
    path = Path(out_dir) / "methods" / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"planner: {{mode: {mode}, k: 3, max_replans: 2}}\nmemory: {memory}\n")
    return str(path)


def derive_settings(cfg: Config) -> None:
    """Fill what the stages share (paths under ``out_dir``, one model, one W&B setting).

    Only where the user set nothing: a key given in the YAML file or on the command line (e.g.
    ``ical.out_dir=...`` or any ``eval.llm.*``) is kept as given.
    """
    _unless_given(cfg.demos, "out_dir", f"{cfg.out_dir}/demos")
    _unless_given(cfg.ical, "demos_dir", cfg.demos.out_dir)
    _unless_given(cfg.ical, "out_dir", f"{cfg.out_dir}/ical")
    _unless_given(cfg.ical.memory, "path", f"{cfg.ical.out_dir}/memory.db")
    _unless_given(cfg.eval, "out_dir", f"{cfg.out_dir}/eval")
    _unless_given(cfg.eval.split, "dir", f"{cfg.out_dir}/splits")
    _unless_given(cfg.eval, "llm", cfg.ical.llm)
    _unless_given(cfg.eval, "memory", cfg.ical.memory)
    _unless_given(cfg.ical, "wandb", cfg.demos.wandb)
    _unless_given(cfg.eval, "wandb", cfg.demos.wandb)


def _unless_given(section: object, key: str, value: object) -> None:
    if key not in explicit_keys(section):
        setattr(section, key, value)


def run(cfg: Config) -> int:
    """Stages 1-4; each writes under ``out_dir``."""
    from icalkit.agents.executor_demo import run_demo

    derive_settings(cfg)
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
    memory, name = cfg.ical.memory.path, "ical_memory"
    if _learned(cfg.ical.out_dir) == 0 and _learned(hitl.out_dir) > 0:
        memory, name = hitl.memory.path, "hitl_only_memory"
        print("(full ICAL learned nothing: stage 4 uses the memory of stage 3b)")
    if "methods" not in explicit_keys(cfg.eval):
        cfg.eval.methods = [_method_file(cfg.out_dir, name, "ical", memory),
                            _method_file(cfg.out_dir, "copy", "copy", memory)]
    print(f"\n== stage 4: evaluating on {len(cfg.eval.split.task_types) * cfg.eval.split.size} unseen tasks ==")
    eval_cmd.run(cfg.eval)
    print(f"\nall outputs under {cfg.out_dir}")
    return 0
