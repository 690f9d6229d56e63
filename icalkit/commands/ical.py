"""``icalkit ical``: learn a memory of abstracted examples from noisy demonstrations (ICAL)."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Literal

from icalkit.config import refuse_keys
from icalkit.data_gen.ical_settings import ICALSettings
from icalkit.envs.config import EnvConfig
from icalkit.memory.config import MemoryConfig
from icalkit.models.llm.base import check_loop_repeats
from icalkit.models.llm.factory import LLMConfig
from icalkit.tracking import RunLogger, WandbConfig

HELP = """icalkit ical — In-Context Abstraction Learning from noisy demonstrations.

Reads `demos_dir/episodes.jsonl` (from `icalkit demos`), turns each noisy demonstration into a
program, lets the LLM revise it with language abstractions (summary, plan, abstraction comments,
change_state predictions), executes it, feeds failures back (simulated from the executor, or
from you with feedback=human) and saves successful examples to the example memory
(`memory.path`). Writes results.jsonl (one line per demo: a re-run resumes), tables, plots and
summary.json under `out_dir`.

Examples:
  icalkit ical demos_dir=runs/demos out_dir=runs/ical
  icalkit ical demos_dir=runs/demos llm.backend=openai llm.base_url=http://127.0.0.1:8000/v1 llm.model=Qwen
  icalkit ical demos_dir=runs/demos feedback=human limit=3
  icalkit ical demos_dir=runs/demos llm.model=runs/finetune_ical/model keep_demo=true loop_repeats=3   # a weak
      model: keep the demonstrations it cannot improve, cut its looping answers
  icalkit ical demos_dir=runs/demos raw_demos=true out_dir=runs/ical_raw memory.path=runs/ical_raw/memory.db
  icalkit ical demos_dir=runs/demos raw_demos=true prune=true ...   # the executor drops the detours, no model
  icalkit ical ... transfer=true   # then copy each example into its type's other demonstrations' scenes
  icalkit ical ... transfer=true transfer_tasks=20 'transfer_types=[Coffee, Salad]'   # and 20 training tasks of these types
"""

FEEDBACK_KINDS = ("simulated", "human")


THREADS = "torch_threads (torch's thread count is one setting for the whole process)"


@dataclass
class Config(ICALSettings):
    """The loop's settings (:class:`ICALSettings`, top-level keys) plus inputs, model and outputs.

    One key per setting: generation length is ``llm.max_new_tokens``, the episode budget is
    ``env.max_steps`` / ``env.max_failures`` (also the executor's), torch threads are
    ``torch_threads``; ``llm.threads`` and ``memory.text_embedder.num_threads`` are refused.
    ``loop_repeats`` cuts an answer at its first block of lines repeated that often in a row (0:
    off; as the evaluation's method files): a weak model that loops inside a program otherwise
    writes until ``llm.max_new_tokens``, and with the hf backend the cut also stops generating.
    """

    demos_dir: str = "runs/demos"
    out_dir: str = "runs/ical"
    demonstrators: list[str] = field(default_factory=lambda: ["noisy"])
    task_types: list[str] | None = None
    limit: int | None = None
    feedback: Literal["simulated", "human"] = "simulated"
    oracle_object_map: bool = True
    torch_threads: int = 0
    loop_repeats: int = 0
    env: EnvConfig = field(default_factory=EnvConfig)
    llm: LLMConfig = field(default_factory=lambda: LLMConfig(max_new_tokens=384))
    memory: MemoryConfig = field(default_factory=lambda: MemoryConfig(path="runs/ical/memory.db"))
    wandb: WandbConfig = field(default_factory=WandbConfig)

    def validate(self) -> None:
        from icalkit.data_gen.demos import DEMONSTRATORS
        from icalkit.envs.household.tasks.registry import get_task_type

        self.check()
        bad = [d for d in self.demonstrators if d not in DEMONSTRATORS]
        if bad or not self.demonstrators:
            raise ValueError(f"demonstrators {self.demonstrators} must be a non-empty subset of {list(DEMONSTRATORS)}")
        for t in [*(self.task_types or []), *self.transfer_types]:
            get_task_type(t)
        if self.feedback not in FEEDBACK_KINDS:
            raise ValueError(f"feedback {self.feedback!r} is not one of {list(FEEDBACK_KINDS)}")
        if self.torch_threads < 0:
            raise ValueError("torch_threads must be >= 0")
        check_loop_repeats(self.loop_repeats)
        if self.limit is not None and self.limit < 1:
            raise ValueError(f"limit must be >= 1 (or null for all), got {self.limit}")
        if self.llm.max_new_tokens < 16:
            raise ValueError(f"llm.max_new_tokens must be >= 16 for ICAL's answers, got {self.llm.max_new_tokens}")
        if self.raw_demos and (self.relabel or self.feedback == "human"):
            raise ValueError("raw_demos=true stores demonstrations without the model: relabel and "
                             "feedback=human do not apply")
        refuse_keys(self.llm, "llm", {"threads": THREADS})
        refuse_keys(self.memory.text_embedder, "memory.text_embedder", {"num_threads": THREADS})

    def settings(self) -> ICALSettings:
        """The loop's :class:`ICALSettings` (this config's own top-level keys)."""
        return ICALSettings(**{f.name: getattr(self, f.name) for f in fields(ICALSettings)})

    def limits(self):
        """Executor limits: the env's TEACh budget, and the object-map oracle flag."""
        from icalkit.agents.api.runtime import ApiConfig
        from icalkit.agents.executor import ExecutorLimits

        return ExecutorLimits(api=ApiConfig(max_steps=self.env.max_steps, max_failures=self.env.max_failures,
                                            oracle_object_map=self.oracle_object_map))


def build_learner(cfg: Config, feedback_fn=None):
    """Env, memory, LLM prompter and learner from the config (the LLM is skipped for raw_demos)."""
    from icalkit.agents.feedback import HumanFeedback
    from icalkit.agents.prompts import check_all_templates
    from icalkit.data_gen.ical import ICALLearner
    from icalkit.data_gen.ical_steps import Prompter
    from icalkit.envs.factory import make_env
    from icalkit.memory.config import build_memory
    from icalkit.models.llm.factory import build_llm_from_config

    check_all_templates()  # a malformed template fails here, before any model is loaded
    if cfg.torch_threads:
        import torch

        torch.set_num_threads(cfg.torch_threads)
    prompter = None
    if not cfg.raw_demos:
        prompter = Prompter(build_llm_from_config(cfg.llm), cfg.llm.max_new_tokens, cfg.llm.temperature,
                            loop_repeats=cfg.loop_repeats)
    if feedback_fn is None and cfg.feedback == "human":
        human = HumanFeedback()
        feedback_fn = lambda run, env: human(run.trace, env.sim)  # noqa: E731
    env = make_env(cfg.env.name, **cfg.env.kwargs())
    return ICALLearner(env, build_memory(cfg.memory), prompter, cfg.settings(), feedback_fn, cfg.limits())


def score_transfer(learner, cfg: Config) -> dict:
    """Cross-replay the memory's examples (``transfer=true``), store the scores with it and in
    ``out_dir/transfer.json``; the per-type summary."""
    from icalkit.data_gen.transfer import extra_tasks, transfer_scores, transfer_summary

    examples = list(learner.memory)
    extra = extra_tasks(cfg.transfer_types, cfg.transfer_tasks)
    scores = transfer_scores(examples, learner.env, cfg.limits(), extra)
    learner.memory.set_transfer_scores(scores)
    (Path(cfg.out_dir) / "transfer.json").write_text(json.dumps(scores, indent=1, sort_keys=True) + "\n")
    return transfer_summary(examples, scores)


def run(cfg: Config) -> int:
    from icalkit.config import to_dict
    from icalkit.data_gen.demos import read_episodes
    from icalkit.data_gen.ical import run_ical, select_episodes
    from icalkit.data_gen.ical_report import LEARNED, write_report

    path = Path(cfg.demos_dir) / "episodes.jsonl"
    if not path.is_file():
        raise SystemExit(f"icalkit ical: no demonstrations at {path}; collect them with `icalkit demos out_dir={cfg.demos_dir}`")
    episodes = select_episodes(read_episodes(path), cfg.demonstrators, cfg.task_types, cfg.limit)
    if not episodes:
        raise SystemExit(f"icalkit ical: {path} has no episodes of demonstrators {cfg.demonstrators}"
                         + (f" and task types {cfg.task_types}" if cfg.task_types else ""))
    logger = RunLogger(cfg.out_dir, to_dict(cfg), cfg.wandb, job_type="ical")
    learner = build_learner(cfg)
    step = {"n": 0}

    def log_result(r: dict) -> None:
        step["n"] += 1
        logger.log({"demo/success": float(r["success"]), "demo/attempts": r["attempts"],
                    "demo/feedbacks": r["feedbacks"], "demo/learned": float(r["status"] in LEARNED),
                    "demo/llm_calls": r["usage"].get("calls", 0), "demo/wall_s": r["wall_s"]}, step=step["n"])

    start = time.perf_counter()
    records = run_ical(learner, episodes, cfg.out_dir, on_result=log_result)
    summary = write_report(logger, records)
    if cfg.transfer:
        summary["transfer"] = score_transfer(learner, cfg)
    summary.update(run_wall_s=time.perf_counter() - start, memory_size=len(learner.memory),
                   mode=cfg.settings().mode(), model=learner.model,
                   oracle={"goal_feedback": cfg.feedback == "simulated", "success_check": "simulator",
                           "object_map": cfg.oracle_object_map})
    table = summary.pop("per_type_markdown")
    (Path(cfg.out_dir) / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(table)
    kept = f", kept {summary['kept_demos']} demonstrations as they were" if cfg.keep_demo else ""
    print(f"learned {summary['learned']}/{summary['demos']} examples (yield {summary['yield']:.2f}){kept}; "
          f"revised success {summary['revised_success_rate']:.2f} vs raw replay "
          f"{summary['raw_replay_success_rate']:.2f}; memory {cfg.memory.path} holds {summary['memory_size']}")
    logger.finish()
    return 0
