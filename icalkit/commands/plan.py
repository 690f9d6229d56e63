"""``icalkit plan``: evaluate the deployment planner (ICAL Algorithm S2 and its variants)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from icalkit.agents.planner import PlannerConfig
from icalkit.commands.demos import TFD_TYPES
from icalkit.envs.config import EnvConfig
from icalkit.memory.config import MemoryConfig
from icalkit.models.llm.factory import LLMConfig
from icalkit.tracking import RunLogger, WandbConfig

HELP = """icalkit plan — evaluate the deployment planner on tasks of a split.

For each task: retrieve the top-k learned examples from the memory written by `icalkit ical`
(aggregated similarity, the task's own id excluded), prompt the model for summary, abstracted
state, plan and program, execute it, and re-plan after execution errors (planner.max_replans).
planner.mode: ical | zero_shot (no memory) | rerank (disjoint retrieval sets, self-scored) |
flat (LLM-Planner high-level plans with grounded re-planning).
Writes episodes.jsonl (resumable: a re-run skips finished tasks), results.md/.csv with SR, GC,
PLW-SR, PLW-GC per task type, results.png and a W&B run under out_dir.

Examples:
  icalkit plan memory.path=runs/ical/memory.db n_per_type=2 out_dir=runs/plan
  icalkit plan planner.mode=zero_shot task_types='[Coffee, "Boil X"]' limit=4
  icalkit plan planner.mode=rerank llm.backend=openai llm.base_url=http://127.0.0.1:8000/v1 llm.model=m
"""


@dataclass
class Config:
    env: EnvConfig = field(default_factory=lambda: EnvConfig(render=False))
    llm: LLMConfig = field(default_factory=LLMConfig)
    memory: MemoryConfig = field(default_factory=lambda: MemoryConfig(path="runs/ical/memory.db"))
    planner: PlannerConfig = field(default_factory=PlannerConfig)
    task_types: list[str] = field(default_factory=lambda: list(TFD_TYPES))
    n_per_type: int = 1
    split: str = "valid_unseen"
    seed: int = 0
    limit: int = 0
    oracle_object_map: bool = True
    torch_threads: int = 0
    out_dir: str = "runs/plan"
    wandb: WandbConfig = field(default_factory=WandbConfig)

    def validate(self) -> None:
        from icalkit.envs.household.tasks.registry import get_task_type
        from icalkit.envs.household.tasks.task import SPLITS

        for t in self.task_types:
            get_task_type(t)
        if self.split not in SPLITS:
            raise ValueError(f"split {self.split!r} is not one of {SPLITS}")
        if self.n_per_type < 1 or self.limit < 0 or self.torch_threads < 0:
            raise ValueError("n_per_type must be >= 1, limit and torch_threads >= 0")


def check_memory(cfg: Config) -> None:
    """Fail early (before loading a model) when the planner needs a memory that does not exist."""
    if cfg.planner.mode != "zero_shot" and not Path(cfg.memory.path).is_file():
        raise SystemExit(f"icalkit plan: memory.path {cfg.memory.path} does not exist; run `icalkit ical` "
                         f"first (or point memory.path at its memory), or use planner.mode=zero_shot")


def run(cfg: Config) -> int:
    from tqdm import tqdm

    from icalkit.agents.api.runtime import ApiConfig
    from icalkit.agents.executor import ExecutorLimits
    from icalkit.agents.llm_session import LLMSession
    from icalkit.agents.planner import Planner
    from icalkit.config import to_dict
    from icalkit.data_gen.results_file import RecordWriter, load_records
    from icalkit.envs.factory import make_env
    from icalkit.envs.household.tasks.sampler import sample_tasks
    from icalkit.memory.config import build_memory
    from icalkit.metrics import reference_length, table_by
    from icalkit.models.llm.factory import build_llm_from_config

    check_memory(cfg)
    if cfg.torch_threads:
        import torch

        torch.set_num_threads(cfg.torch_threads)
    out = Path(cfg.out_dir)
    logger = RunLogger(out, to_dict(cfg), cfg.wandb, job_type="plan")
    tasks = sample_tasks(cfg.task_types, cfg.n_per_type, cfg.split, cfg.seed)
    tasks = tasks[: cfg.limit] if cfg.limit else tasks
    results_path = out / "episodes.jsonl"
    done = load_records(results_path, lambda r: r["task_id"])
    todo = [t for t in tasks if t.task_id not in done]
    print(f"{len(tasks)} tasks, {len(tasks) - len(todo)} already done, planner.mode={cfg.planner.mode}")
    if todo:
        session = LLMSession(build_llm_from_config(cfg.llm), cfg.llm.max_new_tokens, cfg.llm.temperature, cfg.seed)
        memory = build_memory(cfg.memory) if cfg.planner.mode != "zero_shot" else None
        limits = ExecutorLimits(api=ApiConfig(max_steps=cfg.env.max_steps, max_failures=cfg.env.max_failures,
                                              oracle_object_map=cfg.oracle_object_map))
        planner = Planner(session, memory, cfg.planner, limits)
        env = make_env(cfg.env.name, **cfg.env.kwargs())
        with RecordWriter(results_path) as writer, tqdm(todo, desc="plan", unit="task") as bar:
            for task in bar:
                obs, _ = env.reset(options={"task": task})
                frame = obs["rgb"] if cfg.env.render else None
                rec = planner.run_episode(task, env, reference_length(task), frame).to_dict()
                done[task.task_id] = rec
                writer.write(rec)
                logger.log({"episode/success": float(rec["success"]), "episode/replans": rec["replans"],
                            "episode/steps": rec["steps"], "episode/llm_calls": rec["llm"]["calls"]})
                bar.set_postfix(solved=sum(done[t.task_id]["success"] for t in tasks if t.task_id in done))
    records = [done[t.task_id] for t in tasks]
    rows = table_by([{**r, "ref_len": r["ref_len"] if r["ref_len"] is not None else r["steps"]} for r in records])
    rows = [{k: r[k] for k in ("task_type", "n", "sr", "gc", "plw_sr", "plw_gc")} for r in rows]
    print(logger.table("results", rows))
    types = [r["task_type"] for r in rows]
    logger.bar_plot("results", types, {m: [r[m] for r in rows] for m in ("sr", "gc", "plw_sr", "plw_gc")}, "score")
    logger.finish()
    return 0
