"""``icalkit ical``: learn a memory of abstracted examples from noisy demonstrations (ICAL)."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from icalkit.agents.api.runtime import ApiConfig
from icalkit.envs.config import EnvConfig
from icalkit.memory.config import MemoryConfig
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
  icalkit ical demos_dir=runs/demos raw_demos=true out_dir=runs/ical_raw memory.path=runs/ical_raw/memory.db
"""

FEEDBACK_KINDS = ("simulated", "human")


@dataclass
class Config:
    demos_dir: str = "runs/demos"
    out_dir: str = "runs/ical"
    demonstrators: list[str] = field(default_factory=lambda: ["noisy"])
    task_types: list[str] | None = None
    limit: int | None = None
    n_feedbacks: int = 5
    abstraction: bool = True
    hitl: bool = True
    raw_demos: bool = False
    relabel: bool = False
    feedback: Literal["simulated", "human"] = "simulated"
    k: int = 2
    use_dialogue: bool = True
    max_new_tokens: int = 384
    max_program_chars: int = 2500
    max_example_chars: int = 1500
    max_state_objects: int = 20
    source: Literal["kinesthetic", "visual-idm", "agent"] = "kinesthetic"
    torch_threads: int = 0
    env: EnvConfig = field(default_factory=EnvConfig)
    api: ApiConfig = field(default_factory=ApiConfig)
    llm: LLMConfig = field(default_factory=LLMConfig)
    memory: MemoryConfig = field(default_factory=lambda: MemoryConfig(path="runs/ical/memory.db"))
    wandb: WandbConfig = field(default_factory=WandbConfig)

    def validate(self) -> None:
        from icalkit.data_gen.demos import DEMONSTRATORS
        from icalkit.envs.household.tasks.registry import get_task_type

        bad = [d for d in self.demonstrators if d not in DEMONSTRATORS]
        if bad or not self.demonstrators:
            raise ValueError(f"demonstrators {self.demonstrators} must be a non-empty subset of {list(DEMONSTRATORS)}")
        for t in self.task_types or []:
            get_task_type(t)
        if self.feedback not in FEEDBACK_KINDS:
            raise ValueError(f"feedback {self.feedback!r} is not one of {list(FEEDBACK_KINDS)}")
        if self.n_feedbacks < 0 or self.k < 0 or self.torch_threads < 0:
            raise ValueError("n_feedbacks, k and torch_threads must be >= 0")
        if self.limit is not None and self.limit < 1:
            raise ValueError(f"limit must be >= 1 (or null for all), got {self.limit}")
        if self.max_new_tokens < 16 or min(self.max_program_chars, self.max_example_chars, self.max_state_objects) < 1:
            raise ValueError("max_new_tokens must be >= 16 and the max_* prompt limits >= 1")
        if self.raw_demos and (self.relabel or self.feedback == "human"):
            raise ValueError("raw_demos=true stores demonstrations without the model: relabel and "
                             "feedback=human do not apply")
        if not self.abstraction and not self.hitl and not self.raw_demos:
            raise ValueError("abstraction=false and hitl=false leave nothing to learn; use raw_demos=true "
                             "for the unprocessed-demonstration baseline")

    def settings(self):
        """The loop's :class:`~icalkit.data_gen.ical.ICALSettings`."""
        from icalkit.data_gen.ical import ICALSettings

        return ICALSettings(n_feedbacks=self.n_feedbacks, abstraction=self.abstraction, hitl=self.hitl,
                            raw_demos=self.raw_demos, relabel=self.relabel, k=self.k,
                            use_dialogue=self.use_dialogue, max_program_chars=self.max_program_chars,
                            max_example_chars=self.max_example_chars,
                            max_state_objects=self.max_state_objects, source=self.source)


def build_learner(cfg: Config, feedback_fn=None):
    """Env, memory, LLM prompter and learner from the config (the LLM is skipped for raw_demos)."""
    from icalkit.agents.executor import ExecutorLimits
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
        prompter = Prompter(build_llm_from_config(cfg.llm), cfg.max_new_tokens, cfg.llm.temperature)
    if feedback_fn is None and cfg.feedback == "human":
        human = HumanFeedback()
        feedback_fn = lambda run, env: human(run.trace, env.sim)  # noqa: E731
    env = make_env(cfg.env.name, **cfg.env.kwargs())
    return ICALLearner(env, build_memory(cfg.memory), prompter, cfg.settings(), feedback_fn,
                       ExecutorLimits(api=cfg.api))


def run(cfg: Config) -> int:
    from icalkit.config import to_dict
    from icalkit.data_gen.demos import read_episodes
    from icalkit.data_gen.ical import run_ical, select_episodes
    from icalkit.data_gen.ical_report import write_report

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
                    "demo/feedbacks": r["feedbacks"], "demo/learned": float(r["status"] in ("learned", "relabeled")),
                    "demo/llm_calls": r["usage"].get("calls", 0), "demo/wall_s": r["wall_s"]}, step=step["n"])

    start = time.perf_counter()
    records = run_ical(learner, episodes, cfg.out_dir, on_result=log_result)
    summary = write_report(logger, records)
    summary.update(run_wall_s=time.perf_counter() - start, memory_size=len(learner.memory),
                   mode=cfg.settings().mode(), model=learner.model,
                   oracle={"goal_feedback": cfg.feedback == "simulated", "success_check": "simulator",
                           "object_map": cfg.api.oracle_object_map})
    table = summary.pop("per_type_markdown")
    (Path(cfg.out_dir) / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(table)
    print(f"learned {summary['learned']}/{summary['demos']} examples (yield {summary['yield']:.2f}); "
          f"revised success {summary['revised_success_rate']:.2f} vs raw replay "
          f"{summary['raw_replay_success_rate']:.2f}; memory {cfg.memory.path} holds {summary['memory_size']}")
    logger.finish()
    return 0
