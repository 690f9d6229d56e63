"""``icalkit alfworld-plan``: the flat LLM-Planner on ALFWorld games (kNN expert-plan examples, re-planning)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from icalkit.config import refuse_keys
from icalkit.envs.alfworld.config import AlfworldConfig
from icalkit.envs.config import EnvConfig
from icalkit.memory.config import TextEmbedderConfig
from icalkit.models.llm.factory import LLMConfig
from icalkit.tracking import RunLogger, WandbConfig

HELP = """icalkit alfworld-plan — LLM-Planner (flat plans of text commands) on ALFWorld games.

Each test game: the k most similar (instruction, expert plan) examples of the example games, a flat
plan of commands from the model, executed one by one; an inadmissible command triggers a grounded
re-plan (steps done, the error, objects observed so far). Success is the engine's `won`; goal
conditions come from the project's checker. Needs the alfworld extra (make alfworld-setup).
Writes episodes.jsonl (resumable per game), results.md/.csv (SR, GC, PLW per task type) and a W&B run.

Examples:
  icalkit alfworld-plan n_per_type=2 out_dir=runs/alfworld_plan
  icalkit alfworld-plan alfworld.generate=false alfworld.games_dir=$ALFWORLD_DATA/json_2.1.1 example_split=train
  icalkit alfworld-plan llm.backend=openai llm.base_url=http://127.0.0.1:8000/v1 llm.model=m
"""


@dataclass
class Config:
    env: EnvConfig = field(default_factory=lambda: EnvConfig(name="alfworld", render=False, max_steps=50,
                                                             max_failures=50))
    llm: LLMConfig = field(default_factory=lambda: LLMConfig(max_new_tokens=128))
    alfworld: AlfworldConfig = field(default_factory=AlfworldConfig)
    task_types: list[str] = field(default_factory=lambda: ["pick_and_place", "pick_heat_then_place"])
    n_per_type: int = 1
    split: str = "valid_unseen"
    example_split: str = "train"
    n_examples_per_type: int = 2
    k: int = 3
    max_replans: int = 3
    seed: int = 0
    torch_threads: int = 0
    embedder: TextEmbedderConfig = field(default_factory=TextEmbedderConfig)
    out_dir: str = "runs/alfworld_plan"
    wandb: WandbConfig = field(default_factory=WandbConfig)

    def validate(self) -> None:
        from icalkit.envs.alfworld.games import ALFWORLD_TYPES
        from icalkit.envs.household.tasks.task import SPLITS

        if self.env.name != "alfworld":
            raise ValueError(f"alfworld-plan plays ALFWorld games; env.name must be 'alfworld', got {self.env.name!r}")
        bad = [t for t in self.task_types if t not in ALFWORLD_TYPES]
        if bad:
            raise ValueError(f"task_types {bad} have no ALFWorld games; available: {list(ALFWORLD_TYPES)}")
        if self.split not in SPLITS or self.example_split not in SPLITS:
            raise ValueError(f"split and example_split must be in {SPLITS}")
        if min(self.n_per_type, self.k) < 1 or min(self.n_examples_per_type, self.max_replans, self.torch_threads) < 0:
            raise ValueError("n_per_type and k must be >= 1; n_examples_per_type, max_replans, torch_threads >= 0")
        self.alfworld.validate()
        refuse_keys(self.embedder, "embedder", {"num_threads": "torch_threads"})


def run(cfg: Config) -> int:
    from icalkit.agents.llm_session import LLMSession
    from icalkit.agents.planner_alfworld import AlfworldFlatPlanner
    from icalkit.config import to_dict
    from icalkit.data_gen.alfworld_plans import plan_examples
    from icalkit.data_gen.results_file import RecordWriter, load_records
    from icalkit.envs.alfworld.engine import AlfworldUnavailable, GameFileError
    from icalkit.envs.factory import make_env
    from icalkit.memory.config import build_text_embedder
    from icalkit.metrics import Episode, aggregate
    from icalkit.models.llm.factory import build_llm_from_config

    if cfg.torch_threads:
        import torch

        torch.set_num_threads(cfg.torch_threads)
    out = Path(cfg.out_dir)
    pool = []
    try:  # a missing extra or a game file that does not parse ends the run here, naming it
        env = make_env("alfworld", max_steps=cfg.env.max_steps, max_failures=cfg.env.max_failures)
        games = cfg.alfworld.game_files(cfg.task_types, cfg.n_per_type, cfg.split, cfg.seed)
        if cfg.n_examples_per_type:
            pool = plan_examples(cfg.alfworld.game_files(cfg.task_types, cfg.n_examples_per_type, cfg.example_split,
                                                         cfg.seed), env)
    except (AlfworldUnavailable, GameFileError, FileNotFoundError) as exc:
        print(f"icalkit alfworld-plan: {exc}")
        return 2
    logger = RunLogger(out, to_dict(cfg), cfg.wandb, job_type="alfworld_plan")
    session = LLMSession(build_llm_from_config(cfg.llm), cfg.llm.max_new_tokens, cfg.llm.temperature, cfg.seed)
    planner = AlfworldFlatPlanner(session, pool, build_text_embedder(cfg.embedder) if pool else None, cfg.k,
                                  cfg.max_replans)
    path = out / "episodes.jsonl"
    done = load_records(path, lambda r: r["game"])
    print(f"LLM-Planner on ALFWorld: {len(games)} games, {len(pool)} examples, k={cfg.k}")
    with RecordWriter(path) as writer:
        for game in games:
            if str(game) in done:
                continue
            rec = planner.run_episode(env, game) | {"game": str(game)}
            writer.write(rec)
            done[str(game)] = rec
            print(f"  {rec['task_id']}: {'success' if rec['success'] else 'failed'} "
                  f"({rec['satisfied']}/{rec['total']} conditions, {rec['steps']} commands, {rec['replans']} re-plans)")
    records = [done[str(g)] for g in games]
    rows = []
    for kind in [*dict.fromkeys(r["task_type"] for r in records), "all"]:
        recs = [r for r in records if kind in ("all", r["task_type"])]
        m = aggregate(Episode(r["success"], r["satisfied"], r["total"], r["init_satisfied"], r["init_total"],
                              r["steps"], r["ref_len"]) for r in recs)
        rows.append({"task_type": kind, "n": m["n"], "sr": m["sr"], "gc": m["gc"], "plw_sr": m["plw_sr"],
                     "plw_gc": m["plw_gc"]})
    print(logger.table("results", rows))
    logger.log({"sr": rows[-1]["sr"], "gc": rows[-1]["gc"]})
    logger.finish()
    return 0
