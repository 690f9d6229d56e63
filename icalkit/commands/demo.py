"""``icalkit demo``: the end-to-end demo that `make demo` runs on the embedded defaults."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from icalkit.commands import demos as demos_cmd
from icalkit.commands import eval as eval_cmd
from icalkit.commands import finetune as finetune_cmd
from icalkit.commands import ical as ical_cmd
from icalkit.config import explicit_keys
from icalkit.data_gen.finetune_data import PairConfig
from icalkit.eval.splits import SplitConfig
from icalkit.training.finetune import TrainConfig

HELP = """icalkit demo — a short end-to-end run of the pipeline on the embedded defaults.

Stage 1: generates a few tasks, runs the expert and the noisy demonstrator, saves the
demonstrations (JSONL + Hugging Face datasets), writes a few frames as PNG and prints a
per-task-type table.
Stage 2: executes a program step by step in the sandbox and prints the feedback of each attempt.
Stage 3: stores the noisy demonstrations in an example memory without their detours (icalkit ical
raw_demos=true prune=true: the executor drops the actions whose removal still solves each one's
own task; no model): the few demonstrations the agent learns a task type from.
Stage 4: fine-tunes the planner's model (SmolLM2-135M, full fine-tune, bf16 on CPU) on
prompt -> program pairs of a few task types whose prompt carries the finetune.data.k examples
retrieved from that memory (k=0: zero-shot prompts), for a bounded time (finetune.train.time_budget_s).
Stage 5: evaluates (icalkit eval) on unseen (valid_unseen) tasks, with max_replans re-plans (1):
the untuned model and the fine-tuned one, both with the same retrieval, and the retrieved
program run as it is (copy baseline); prints the before/after table.
Stage 6 (opt-in, run_ical=true): the ICAL loop on ical.limit noisy demonstrations with the
default model, and what it learned.
Every stage resumes: re-running skips finished work (the fine-tune resumes from its checkpoint,
the LLM response cache replays). The stages share paths under out_dir and the W&B setting of
`demos`, except where you set a key yourself (e.g. finetune.out_dir=..., eval.llm.model=...).
The full-size fine-tune is the next command: `icalkit finetune` (configs/finetune.yaml).

Examples:
  icalkit demo
  icalkit demo finetune.train.time_budget_s=900 eval.split.n_per_type=3
  icalkit demo finetune.data.k=0          # zero-shot prompts, no memory
  icalkit demo run_ical=true ical.limit=3
"""

DEMO_TYPES = ["Coffee", "Water Plant", "Put All X On Y", "Boil X", "Plate Of Toast", "Salad"]
TUNED_TYPES = ["Coffee", "Water Plant", "Put All X On Y"]


def _demo_finetune() -> finetune_cmd.Config:
    return finetune_cmd.Config(
        # memory_path: stage 3's memory under out_dir (derive_settings) unless given
        data=PairConfig(task_types=list(TUNED_TYPES), n_per_type=10, revisions_per_task=1, valid_fraction=0.0, k=1),
        train=TrainConfig(method="full", epochs=2.0, micro_batch=4, grad_accum=1, learning_rate=3e-4, prompt_grad=False,
                          time_budget_s=540, save_steps=5, logging_steps=1, device="cpu"))


@dataclass
class Config:
    out_dir: str = "runs/demo"
    demos: demos_cmd.Config = field(default_factory=lambda: demos_cmd.Config(task_types=list(DEMO_TYPES), n_per_type=1))
    memory: ical_cmd.Config = field(default_factory=lambda: ical_cmd.Config(raw_demos=True, prune=True))
    finetune: finetune_cmd.Config = field(default_factory=_demo_finetune)
    max_replans: int = 1  # stage 5's model methods (the eval figures run 3; the untuned model's re-plans cost minutes)
    run_ical: bool = False  # stage 6 (opt-in): ICAL on ical.limit noisy demonstrations
    ical: ical_cmd.Config = field(default_factory=lambda: ical_cmd.Config(limit=3, n_feedbacks=2))
    eval: eval_cmd.Config = field(default_factory=lambda: eval_cmd.Config(
        splits=["valid_unseen"], split=SplitConfig(task_types=list(TUNED_TYPES), n_per_type=2), workers=6))


def _print_learned(out_dir: str) -> None:
    from icalkit.data_gen.ical import read_results

    for r in read_results(f"{out_dir}/results.jsonl"):
        status = "learned" if r.get("success") else f"not learned ({r.get('failure') or r.get('error') or 'failed'})"
        print(f"  {r.get('demo_id', '?')}: {status}; attempts={r.get('attempts', 0)}, "
              f"LLM calls={r.get('usage', {}).get('calls', 0)}")


def _method_file(out_dir: str, name: str, body: str) -> str:
    """Write a method config (a method is a config) under ``out_dir/methods``; return its path."""
    path = Path(out_dir) / "methods" / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body)
    return str(path)


def _tuned_folder(cfg: finetune_cmd.Config) -> str:
    return str(Path(cfg.out_dir) / ("adapter" if cfg.train.method == "lora" else "model"))


def _methods(cfg: Config, types: str) -> list[str]:
    """The before/after methods: untuned vs fine-tuned with the same prompts (+ the grounded copy
    baseline when the prompts carry retrieved demonstrations), all on the same executor (HELPER's
    pre-condition checks), every program grounded in its prompt's ids and the models' answers cut
    at a loop (as configs/methods/finetuned_retrieval.yaml deploys the tuned planner)."""
    k = cfg.finetune.data.k
    checks = "precondition_checks: true"
    mode = f"mode: ical, k: {k}" if k else "mode: zero_shot"
    planner = f"planner: {{{mode}, max_replans: {cfg.max_replans}, {checks}, ground_ids: true}}\nloop_repeats: 3\n"
    memory = f"memory: {cfg.memory.memory.path}\n" if k else ""
    with_what = f" + {k} retrieved raw demonstration(s)" if k else ", zero-shot prompt"
    methods = [_method_file(cfg.out_dir, "untuned", f"description: SmolLM2-135M as shipped{with_what}\n{planner}{memory}")]
    if k:
        methods.append(_method_file(cfg.out_dir, "copy", "description: the top retrieved demonstration's program run as "
                                    "it is, its own scene's ids as classes (no model)\n"
                                    f"planner: {{mode: copy, k: 1, {checks}, ground_ids: true}}\n{memory}"))
    methods.append(_method_file(cfg.out_dir, "fine_tuned", f"description: fine-tuned in stage 4 ({types}){with_what}\n"
                                f"{planner}{memory}llm: {{model: {_tuned_folder(cfg.finetune)}}}\n"))
    return methods


def derive_settings(cfg: Config) -> None:
    """Fill what the stages share (paths under ``out_dir``, one model, one W&B setting).

    Only where the user set nothing: a key given in the YAML file or on the command line (e.g.
    ``ical.out_dir=...`` or any ``eval.llm.*``) is kept as given.
    """
    _unless_given(cfg.demos, "out_dir", f"{cfg.out_dir}/demos")
    _unless_given(cfg.memory, "demos_dir", cfg.demos.out_dir)
    _unless_given(cfg.memory, "out_dir", f"{cfg.out_dir}/memory")
    _unless_given(cfg.memory.memory, "path", f"{cfg.memory.out_dir}/memory.db")
    _unless_given(cfg.memory, "wandb", cfg.demos.wandb)
    _unless_given(cfg.finetune.data, "memory_path", cfg.memory.memory.path if cfg.finetune.data.k else "")
    _unless_given(cfg.finetune, "out_dir", f"{cfg.out_dir}/finetune")
    _unless_given(cfg.finetune, "wandb", cfg.demos.wandb)
    _unless_given(cfg.ical, "demos_dir", cfg.demos.out_dir)
    _unless_given(cfg.ical, "out_dir", f"{cfg.out_dir}/ical")
    _unless_given(cfg.ical.memory, "path", f"{cfg.ical.out_dir}/memory.db")
    _unless_given(cfg.eval, "out_dir", f"{cfg.out_dir}/eval")
    _unless_given(cfg.eval.split, "dir", f"{cfg.out_dir}/splits")
    _unless_given(cfg.eval, "llm", cfg.ical.llm)
    _unless_given(cfg.ical, "wandb", cfg.demos.wandb)
    _unless_given(cfg.eval, "wandb", cfg.demos.wandb)


def _unless_given(section: object, key: str, value: object) -> None:
    if key not in explicit_keys(section):
        setattr(section, key, value)


def run(cfg: Config) -> int:
    """Stages 1-6; each writes under ``out_dir``."""
    from icalkit.agents.executor_demo import run_demo

    derive_settings(cfg)
    print("== stage 1: demonstrations ==")
    demos_cmd.run(cfg.demos)
    print("\n== stage 2: a program executed step by step, with feedback ==")
    run_demo()
    k = cfg.finetune.data.k
    if k:
        how = "pruned by the executor" if cfg.memory.prune else "unprocessed"
        print(f"\n== stage 3: the noisy demonstrations, {how}, in an example memory ==")
        if ical_cmd.run(cfg.memory) != 0:
            return 1
    types = ", ".join(cfg.finetune.data.task_types)
    print(f"\n== stage 4: fine-tuning the planner's model on {types} "
          f"(at most {cfg.finetune.train.time_budget_s:.0f} s per invocation) ==")
    if finetune_cmd.run(cfg.finetune) != 0:
        return 1
    summary = json.loads((Path(cfg.finetune.out_dir) / "train_summary.json").read_text())
    if not summary.get("saved"):
        print("the fine-tune saved no model; run `make demo` again to resume it")
        return 1
    if "methods" not in explicit_keys(cfg.eval):
        cfg.eval.methods = _methods(cfg, types)
    n = len(cfg.eval.split.task_types) * cfg.eval.split.size
    print(f"\n== stage 5: before / after on {n} unseen tasks ({', '.join(cfg.eval.split.task_types)}) ==")
    eval_cmd.run(cfg.eval)  # prints the before/after table
    if cfg.run_ical:
        print(f"\n== stage 6: ICAL on {cfg.ical.limit} noisy demonstrations ==")
        ical_cmd.run(cfg.ical)
        _print_learned(cfg.ical.out_dir)
    else:
        print("\n(stage 6, ICAL on the noisy demonstrations, is opt-in: icalkit demo run_ical=true)")
    print(f"\nall outputs under {cfg.out_dir}; the full-size fine-tune: icalkit finetune (configs/finetune.yaml)")
    return 0
