"""``icalkit train-retriever``: fine-tune the text embedder into a retriever on simulator pairs."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

from icalkit.memory.keys import KEY_KINDS
from icalkit.training.train_retriever import RetrieverTrainConfig

HELP = """icalkit train-retriever — fine-tune the sentence embedder that retrieves ICAL examples.

Generates (dialogue, dialogue of another instance of the same task type) and (dialogue, goal
sentence) pairs with the task generator (template and human-like dialogues), trains the embedder
contrastively (sentence-transformers, MultipleNegativesRankingLoss, one pair per task type in a
batch) within a time budget, and saves a sentence-transformers folder to `out_dir`. Use it with
`memory.text_embedder.model=<out_dir>`; its name is stored with every vector, so a memory written
with another embedder is refused. The hand-written test dialogues are never trained on (checked).

Examples:
  icalkit train-retriever
  icalkit train-retriever out_dir=runs/retriever/model train.max_minutes=5 pairs_per_type=40
  nice -n 19 icalkit train-retriever                   # what `make retriever` runs (full fine-tune, 2 threads)
  icalkit train-retriever train.method=adapter         # linear layer over frozen vectors: seconds
"""


@dataclass
class Config:
    """Retriever training run."""

    out_dir: str = "runs/retriever/model"
    task_types: list[str] = field(default_factory=list)  # empty = every registered task type
    pairs_per_type: int = 120
    keys: list[str] = field(default_factory=lambda: ["commander", "dialogue"])
    human_share: float = 0.7
    goal_share: float = 0.25
    seed: int = 1
    train: RetrieverTrainConfig = field(default_factory=RetrieverTrainConfig)

    def validate(self) -> None:
        from icalkit.envs.household.tasks.registry import TASK_TYPES

        unknown = [t for t in self.task_types if t not in TASK_TYPES]
        if unknown:
            raise ValueError(f"unknown task types {unknown}; available: {sorted(TASK_TYPES)}")
        bad = [k for k in self.keys if k not in KEY_KINDS]
        if bad or not self.keys:
            raise ValueError(f"keys must be a non-empty list of {list(KEY_KINDS)}, got {self.keys}")
        if self.pairs_per_type < 1:
            raise ValueError(f"pairs_per_type must be >= 1, got {self.pairs_per_type}")
        if not 0 <= self.human_share <= 1 or not 0 <= self.goal_share <= 1:
            raise ValueError("human_share and goal_share must be in [0, 1]")
        n_types = len(self.task_types or TASK_TYPES)
        if not 2 <= self.train.batch_size <= n_types:
            raise ValueError(f"train.batch_size must be in 2..{n_types} (one pair per task type in a batch), "
                             f"got {self.train.batch_size}")
        if self.train.max_minutes <= 0 or self.train.threads < 1:
            raise ValueError("train.max_minutes must be > 0 and train.threads >= 1")
        if self.train.base_model is not None and not Path(self.train.base_model).is_dir():
            raise ValueError(f"train.base_model {self.train.base_model} is not a local folder")


def run(cfg: Config) -> int:
    from icalkit.envs.household.tasks.hand_written import HAND_WRITTEN, load_human_dialogues
    from icalkit.envs.household.tasks.registry import TASK_TYPES
    from icalkit.training.retriever_data import training_pairs, without_held_out
    from icalkit.training.train_retriever import train_retriever

    try:
        cfg.validate()
    except ValueError as exc:
        print(f"icalkit train-retriever: {exc}", file=sys.stderr)
        return 2
    rows = training_pairs(cfg.task_types or list(TASK_TYPES), cfg.pairs_per_type, cfg.seed, cfg.keys,
                          cfg.human_share, cfg.goal_share)
    rows, dropped = without_held_out(rows, [d for path in HAND_WRITTEN for d in load_human_dialogues(path)])
    print(f"{len(rows)} training pairs ({dropped} dropped: they hold a hand-written turn); training for at most "
          f"{cfg.train.max_minutes} min on {cfg.train.threads} thread(s)")
    summary = train_retriever(rows, cfg.out_dir, cfg.train)
    print(json.dumps(summary, indent=1))
    return 0
