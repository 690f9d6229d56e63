"""``icalkit prag``: P-RAG rounds (progressive retrieval-augmented planning without ground truth)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from icalkit.config import refuse_keys
from icalkit.data_gen.prag import PRAG_MODES, PragConfig
from icalkit.envs.alfworld.config import AlfworldConfig
from icalkit.envs.config import EnvConfig
from icalkit.memory.config import TextEmbedderConfig
from icalkit.models.llm.factory import LLMConfig
from icalkit.tracking import RunLogger, WandbConfig

HELP = """icalkit prag — P-RAG: plan step by step with a trajectory database that grows every round.

Round r: every task of the set is solved one high-level action at a time (Navigation, PickupObject,
PutObject, ... or Stop) from the goal, the current observation and the top-k stored trajectories
(goal similarity + best scene-graph similarity, with their done flags); after the round all
trajectories are added. mode=self_iterate runs the rounds on the test set; mode=train_then_test
runs them on the train set, then one test round. `done` is the agent's own Stop unless
prag.oracle_success=true (recorded in every result).
Writes episodes.jsonl (resumable per round and task), rounds.md/.csv (success rate and SPL per
round), success_vs_round.png, transitions.md (stay/become solved/unsolved) and a W&B run.

Examples:
  icalkit prag rounds=3 n_per_type=1 out_dir=runs/prag
  icalkit prag mode=train_then_test rounds=2 prag.max_steps=20 prag.oracle_success=true

One key per setting: the completion length is llm.max_new_tokens (prag.max_new_tokens is refused),
torch threads are torch_threads, the episode budget of the executor is env.max_steps/max_failures.
"""

THREADS = "torch_threads (torch's thread count is one setting for the whole process)"


@dataclass
class Config:
    env: EnvConfig = field(default_factory=lambda: EnvConfig(render=False))
    alfworld: AlfworldConfig = field(default_factory=AlfworldConfig)  # games when env.name=alfworld
    llm: LLMConfig = field(default_factory=lambda: LLMConfig(max_new_tokens=24))
    prag: PragConfig = field(default_factory=PragConfig)
    mode: str = "self_iterate"
    rounds: int = 3
    task_types: list[str] = field(default_factory=lambda: ["Coffee", "Water Plant", "Boil X", "pick_and_place"])
    n_per_type: int = 1
    train_split: str = "train"
    test_split: str = "valid_unseen"
    seed: int = 0
    oracle_object_map: bool = True
    torch_threads: int = 0
    embedder: TextEmbedderConfig = field(default_factory=TextEmbedderConfig)
    out_dir: str = "runs/prag"
    wandb: WandbConfig = field(default_factory=WandbConfig)

    def validate(self) -> None:
        from icalkit.envs.household.tasks.registry import get_task_type
        from icalkit.envs.household.tasks.task import SPLITS

        if self.env.name not in ("household", "alfworld"):
            raise ValueError(f"P-RAG runs on env.name=household or alfworld, not {self.env.name!r}")
        if self.env.name == "alfworld":
            self.alfworld.validate()
        if self.mode not in PRAG_MODES:
            raise ValueError(f"mode {self.mode!r} is not one of {PRAG_MODES}")
        for t in self.task_types:
            get_task_type(t)
        bad = [s for s in (self.train_split, self.test_split) if s not in SPLITS]
        if bad:
            raise ValueError(f"split(s) {bad} not in {SPLITS}")
        if self.rounds < 1 or self.n_per_type < 1 or self.torch_threads < 0:
            raise ValueError("rounds and n_per_type must be >= 1, torch_threads >= 0")
        refuse_keys(self.prag, "prag", {"max_new_tokens": "llm.max_new_tokens"})
        refuse_keys(self.llm, "llm", {"threads": THREADS})
        refuse_keys(self.embedder, "embedder", {"num_threads": THREADS})


def report(logger: RunLogger, records: list[dict]) -> None:
    """Round table, success-vs-round plot and transition table of a run."""
    from icalkit.data_gen.prag import round_table, transition_table

    rows = round_table(records)
    print(logger.table("rounds", rows))
    series: dict[str, list[float]] = {}
    for phase in dict.fromkeys(r["phase"] for r in rows if r["phase"] != "test"):
        series[f"{phase} success"] = [r["success_rate"] for r in rows if r["phase"] == phase]
        series[f"{phase} SPL"] = [r["spl"] for r in rows if r["phase"] == phase]
    if series:
        x = [r["round"] for r in rows if r["phase"] != "test"]
        x = list(dict.fromkeys(x))
        logger.line_plot("success_vs_round", x, series, "round", "rate", ylim=(-0.02, 1.02))
    transitions = transition_table(records)
    print(logger.table("transitions", transitions))


def run(cfg: Config) -> int:
    from icalkit.agents.api.runtime import ApiConfig
    from icalkit.agents.executor import ExecutorLimits
    from icalkit.agents.llm_session import LLMSession
    from icalkit.config import to_dict
    from icalkit.data_gen.expert import reference_length
    from icalkit.data_gen.prag import PragAgent, run_prag
    from icalkit.envs.household.tasks.sampler import sample_tasks
    from icalkit.memory.config import build_trajectory_db
    from icalkit.models.llm.factory import build_llm_from_config

    if cfg.torch_threads:
        import torch

        torch.set_num_threads(cfg.torch_threads)
    out = Path(cfg.out_dir)
    logger = RunLogger(out, to_dict(cfg), cfg.wandb, job_type="prag")
    factory = None
    if cfg.env.name == "alfworld":  # ALFWorld games: the engine's commands, expert plans as reference
        from icalkit.data_gen.prag_alfworld import AlfworldGames

        splits = [cfg.test_split] + ([cfg.train_split] if cfg.mode == "train_then_test" else [])
        factory, found = AlfworldGames.load([p for s in splits for p in cfg.alfworld.game_files(
            cfg.task_types, cfg.n_per_type, s, cfg.seed)])
        test = [t for t in found if t.split == cfg.test_split or cfg.mode == "self_iterate"]
        train = [t for t in found if t not in test]
        ref_lens = dict(factory.ref_lens)
    else:
        test = sample_tasks(cfg.task_types, cfg.n_per_type, cfg.test_split, cfg.seed)
        train = sample_tasks(cfg.task_types, cfg.n_per_type, cfg.train_split, cfg.seed) if cfg.mode == "train_then_test" else []
        ref_lens = {t.task_id: reference_length(t) for t in [*train, *test]}
    limits = ExecutorLimits(api=ApiConfig(max_steps=cfg.env.max_steps, max_failures=cfg.env.max_failures,
                                          oracle_object_map=cfg.oracle_object_map))
    settings = dataclasses.replace(cfg.prag, max_new_tokens=cfg.llm.max_new_tokens)
    session = LLMSession(build_llm_from_config(cfg.llm), cfg.llm.max_new_tokens, cfg.llm.temperature, cfg.seed)
    agent = PragAgent(session, build_trajectory_db(str(out / "trajectories.db"), cfg.embedder), settings, limits, factory,
                      "prag_step_alfworld" if factory else "prag_step")
    print(f"P-RAG {cfg.mode}: {cfg.rounds} round(s), {len(train)} train / {len(test)} test tasks, "
          f"oracle_success={cfg.prag.oracle_success}")

    def on_round(phase: str, r: int, records: list[dict]) -> None:
        sr = sum(x["success"] for x in records) / max(1, len(records))
        print(f"  {phase} round {r}: success {sr:.2f} ({len(records)} tasks), database {len(agent.db)} trajectories")
        logger.log({f"{phase}/success_rate": sr, f"{phase}/round": r})

    records = run_prag(agent, cfg.mode, cfg.rounds, train, test, out / "episodes.jsonl", ref_lens, on_round)
    report(logger, records)
    logger.finish()
    return 0
