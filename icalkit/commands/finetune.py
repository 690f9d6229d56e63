"""``icalkit finetune``: build prompt → program pairs and fine-tune the planner's LLM (LoRA or full)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from icalkit.config import to_dict
from icalkit.data_gen.finetune_data import PairConfig
from icalkit.data_gen.request_pairs import RequestPairConfig
from icalkit.tracking import WandbConfig
from icalkit.training.finetune import TrainConfig

HELP = """icalkit finetune — fine-tune the planner's model on demonstrations (LoRA or full).

1. Pairs (data.*): for each task the expert solves, the prompt the deployed planner sends
   (optionally with data.k examples retrieved from data.memory_path) → the grounded program,
   kept only if it replays to success; plus revision pairs (injected mistake + executor feedback
   → correct program). data.heldout_types keeps whole task types out. Written to
   out_dir/data (pairs.jsonl, dataset/, stats.json with drop counts and token lengths);
   resumable. Skipped when `dataset=` points at an existing dataset folder; `pairs_only=true`
   stops after it (to train the pairs on another machine).
   data.env=alfworld (configs/finetune_alfworld.yaml): the ALFWorld flat planner's prompts
   (k expert-plan examples from the plan memory data.memory_path) → the expert plan of each
   train game, plus wrong-receptacle re-plan pairs.
2. Training (train.*): transformers Trainer, loss on the completion only, packing, bf16 autocast
   on CPU, checkpoints every train.save_steps, a time budget (train.time_budget_s) after which
   the run checkpoints and saves; re-running the same command resumes. Saves out_dir/adapter
   (LoRA, pointing at its base folder) or out_dir/model (full), loadable by the transformers
   backend, peft and vLLM; out_dir/train_summary.json has tokens/s and peak RSS.

   pairs=requests (configs/finetune_reader.yaml): request-reading pairs instead (requests.*;
   icalkit.data_gen.request_pairs): a dialogue -> the dishes it asks for and where they go, from
   the trained dish types only, for planner.request_reader.

Examples:
  icalkit finetune out_dir=runs/ft train.time_budget_s=600
  icalkit finetune train.method=lora train.lora_r=16 data.heldout_types='[Water Plant]'
  icalkit finetune --config configs/finetune_gpu.yaml out_dir=runs/ft_gpu
  accelerate launch --config_file accelerate_config.yaml -m icalkit.cli finetune out_dir=runs/ft
  icalkit finetune --config configs/finetune_alfworld.yaml
Then: icalkit eval / icalkit plan with llm.model=runs/ft/model (or llm.adapter=runs/ft/adapter),
or `icalkit serve` and llm.backend=openai.
"""


@dataclass
class Config:
    data: PairConfig = field(default_factory=PairConfig)
    pairs: str = "planner"  # planner: the planner's prompt -> program pairs (data.*) | requests: request reading (requests.*)
    requests: RequestPairConfig = field(default_factory=RequestPairConfig)
    dataset: str = ""
    train: TrainConfig = field(default_factory=TrainConfig)
    out_dir: str = "runs/finetune"
    pairs_only: bool = False  # build the pairs (out_dir/data) and stop: to train them elsewhere (a GPU machine)
    wandb: WandbConfig = field(default_factory=lambda: WandbConfig(enabled=False))

    def validate(self) -> None:
        if self.pairs not in ("planner", "requests"):
            raise ValueError(f"pairs must be planner or requests, got {self.pairs!r}")
        (self.data if self.pairs == "planner" else self.requests).validate()
        self.train.validate()
        if self.dataset and not Path(self.dataset).exists():
            raise ValueError(f"dataset {self.dataset} does not exist (leave it empty to build pairs from data.*)")


def build_dataset(cfg: Config) -> Path:
    """The dataset folder: ``cfg.dataset``, or pairs built (on the main process) under out_dir/data."""
    from accelerate import PartialState

    from icalkit.data_gen.finetune_data import build_pairs

    if cfg.dataset:
        return Path(cfg.dataset)
    data_dir = Path(cfg.out_dir) / "data"
    state = PartialState()
    with state.main_process_first():
        if state.is_main_process and cfg.pairs == "requests":
            from icalkit.data_gen.request_pairs import pair_text, request_pairs, write_request_pairs
            from icalkit.envs.household.tasks.hand_written import HAND_WRITTEN, load_human_dialogues
            from icalkit.training.retriever_data import without_held_out

            # a request composed of short phrases can hold a hand-written turn by chance: it is dropped, counted
            kept, dropped = without_held_out(request_pairs(cfg.requests),
                                             [d for path in HAND_WRITTEN for d in load_human_dialogues(path)],
                                             pair_text)
            print(json.dumps(write_request_pairs(kept, cfg.requests, data_dir, dropped), indent=1))
        elif state.is_main_process and cfg.data.env == "alfworld":
            from icalkit.data_gen.alfworld_plans import build_alfworld_pairs

            stats = build_alfworld_pairs(cfg.data, data_dir)
            print(json.dumps({k: stats[k] for k in ("tasks", "pairs", "by_kind", "dropped")}, indent=1))
        elif state.is_main_process:
            memory = None
            if cfg.data.retrieves() and cfg.data.memory_path:
                if not Path(cfg.data.memory_path).is_file():
                    from icalkit.data_gen.finetune_data import DatasetError

                    raise DatasetError(f"data.memory_path {cfg.data.memory_path} does not exist (data.k > 0 or ICAL "
                                       "pairs with data.ical.k > 0 retrieve examples from an example memory: "
                                       "icalkit ical raw_demos=true builds one)")
                from icalkit.memory.config import MemoryConfig, TextEmbedderConfig, build_memory

                text = TextEmbedderConfig(model=cfg.data.retriever or None)  # as the method's retriever
                memory = build_memory(MemoryConfig(path=cfg.data.memory_path, text_embedder=text))
            stats = build_pairs(cfg.data, data_dir, memory)
            print(json.dumps({k: stats[k] for k in ("tasks", "pairs", "by_kind", "dropped")}, indent=1))
            if "tokens" in stats:
                print("tokens per pair:", json.dumps(stats["tokens"]["total"]))
    return data_dir / "dataset"


def _start_run(cfg: Config, report_to: str):
    """On the main process only: write ``config.yaml`` and open the W&B run the Trainer's callback logs
    into (None elsewhere or without W&B). Opened here with the config's mode: left to the callback,
    ``wandb.init()`` takes its mode from settings an earlier stage of the same process (``icalkit
    demo``) already fixed, and asks for a login."""
    from accelerate import PartialState

    from icalkit.tracking import save_config, start_wandb

    if not PartialState().is_main_process:
        return None
    save_config(cfg.out_dir, to_dict(cfg))
    if report_to != "wandb":
        return None
    return start_wandb(cfg.wandb, Path(cfg.out_dir), job_type="finetune", config=to_dict(cfg))


def run(cfg: Config) -> int:
    from icalkit.data_gen.finetune_data import DatasetError
    from icalkit.training.finetune import train

    report_to = "wandb" if cfg.wandb.enabled and cfg.wandb.mode != "disabled" else "none"
    try:
        dataset = build_dataset(cfg)
        if cfg.pairs_only:
            print(f"pairs in {dataset}; train them with dataset={dataset}")
            return 0
        run = _start_run(cfg, report_to)
        try:
            summary = train(cfg.train, dataset, cfg.out_dir, report_to)
        finally:
            if run is not None:
                run.finish()
    except (DatasetError, FileNotFoundError) as exc:
        print(f"icalkit finetune: {exc}")
        return 1
    print(json.dumps(summary, indent=1))
    if not summary["finished"]:
        print(f"stopped early ({summary['stopped_because']}) at step {summary['global_step']}/{summary['max_steps']}; "
              f"run the same command again to resume from {cfg.out_dir}/checkpoints")
    return 0
