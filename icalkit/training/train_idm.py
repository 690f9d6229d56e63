"""Train the inverse dynamics model with accelerate; resumable, time-bounded per invocation.

Runs plainly or under ``accelerate launch``::

    python -m icalkit.training.train_idm --config configs/idm.yaml [key=value ...]
    accelerate launch --config_file accelerate_config.yaml -m icalkit.training.train_idm --config configs/idm.yaml

Outputs under ``out_dir``: ``checkpoint/`` (accelerate state + ``trainer_state.json``; a re-run
resumes from it, mid-epoch included), ``model/`` (last) and ``best/`` (lowest held-out loss)
saved as config.json + model.safetensors, ``eval.json`` (held-out metrics of ``best/``),
``metrics.jsonl``, confusion-matrix plots and a W&B run. Only the main process logs and saves.
"""

from __future__ import annotations

import json
import math
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch

from icalkit.data_gen.idm_data import Augment, FramePairs, build_idm_dataset, household_vocabulary, read_meta
from icalkit.models.idm import IDMConfig, build
from icalkit.models.idm.modeling_idm import InverseDynamicsModel
from icalkit.tracking import RunLogger, WandbConfig
from icalkit.training.idm_engine import EvalResult, evaluate, train_one_epoch


@dataclass
class DataConfig:
    """Where the frame-pair dataset is (``dir``) and what it is built from (``demo_dirs``).

    ``build``: build ``dir`` from ``demo_dirs`` when it does not exist yet (true) or always
    (``rebuild``). ``max_heldout_pairs``: evaluate on an evenly spaced subset (null = all).
    """

    dir: str = "runs/idm/data"
    demo_dirs: list[str] = field(default_factory=lambda: ["runs/idm/demos_train", "runs/idm/demos_unseen"])
    build: bool = True
    rebuild: bool = False
    max_heldout_pairs: int | None = None


@dataclass
class TrainConfig:
    """Optimisation (paper: AdamW 2e-5, batch 64, StepLR 0.1 every 30 epochs, 45 epochs, early stop).

    ``pairs_per_epoch``: sample this many training pairs per epoch (null = all, once each).
    ``action_balance``: in [0, 1]; pairs are sampled with weight count(action)^-balance (0 =
    uniform); the loss's class weights use the resulting distribution. ``time_limit_min``: stop
    after this much training in one invocation, saving a checkpoint to resume from (0 = none).
    ``mixed_precision``: "" = accelerate's setting (launch config), else no | bf16 | fp16.
    ``channels_last``: convolutions in channels-last memory format.
    ``class_weighting``: "inverse" = cross-entropy weighted by inverse class frequency of the
    (sampled) training stream (ICAL); "none" = plain cross-entropy, which optimises the accuracy
    over all pairs (with ``action_balance`` already over-sampling the rare actions).
    ``object_loss_coef``: multiplier of the object term of the loss.
    """

    epochs: int = 45
    batch_size: int = 64
    lr: float = 2e-5
    weight_decay: float = 1e-4
    lr_step_epochs: int = 30
    lr_gamma: float = 0.1
    patience: int = 5
    pairs_per_epoch: int | None = None
    action_balance: float = 0.0
    max_grad_norm: float = 1.0
    num_workers: int = 0
    torch_threads: int = 0
    seed: int = 0
    time_limit_min: float = 0.0
    mixed_precision: str = ""
    channels_last: bool = False
    class_weighting: str = "inverse"
    object_loss_coef: float = 1.0

    def validate(self) -> None:
        if self.class_weighting not in ("inverse", "none"):
            raise ValueError(f"train.class_weighting {self.class_weighting!r} is not one of inverse, none")
        if self.object_loss_coef < 0:
            raise ValueError("train.object_loss_coef must be >= 0")
        if min(self.epochs, self.batch_size, self.lr_step_epochs) < 1 or self.lr <= 0:
            raise ValueError("train.epochs, batch_size, lr_step_epochs must be >= 1 and lr > 0")
        if not 0.0 <= self.action_balance <= 1.0:
            raise ValueError(f"train.action_balance must be in [0, 1], got {self.action_balance}")
        if self.pairs_per_epoch is not None and self.pairs_per_epoch < self.batch_size:
            raise ValueError("train.pairs_per_epoch must be at least one batch")
        if self.mixed_precision not in ("", "no", "bf16", "fp16"):
            raise ValueError(f"train.mixed_precision {self.mixed_precision!r} is not one of '', no, bf16, fp16")
        if self.time_limit_min < 0 or self.torch_threads < 0 or self.num_workers < 0 or self.patience < 1:
            raise ValueError("train.time_limit_min, torch_threads, num_workers must be >= 0, patience >= 1")


@dataclass
class Config:
    data: DataConfig = field(default_factory=DataConfig)
    model: IDMConfig = field(default_factory=IDMConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    augment: Augment = field(default_factory=Augment)
    out_dir: str = "runs/idm/train"
    progress: bool = True
    wandb: WandbConfig = field(default_factory=WandbConfig)


def prepare_data(cfg: Config, accelerator) -> tuple[FramePairs, FramePairs]:
    """Build the dataset if asked (main process first), load both splits, check vocabularies."""
    meta_missing = not (Path(cfg.data.dir) / "meta.json").is_file()
    with accelerator.main_process_first():
        if accelerator.is_main_process and (cfg.data.rebuild or (cfg.data.build and meta_missing)):
            actions, objects = household_vocabulary()
            meta = build_idm_dataset(cfg.data.demo_dirs, cfg.data.dir, cfg.model.image_size,
                                     cfg.model.actions or actions, cfg.model.objects or objects,
                                     progress=cfg.progress)
            print(f"built {cfg.data.dir}: {meta['frames']} frames, {meta['pairs']} pairs "
                  f"{meta['pairs_per_split']}, {meta['skipped_episodes']} episodes skipped, "
                  f"{meta['frames'] / meta['build_wall_s']:.0f} frames/s")
    meta = read_meta(cfg.data.dir)
    cfg.model.actions = cfg.model.actions or list(meta["actions"])
    cfg.model.objects = cfg.model.objects or list(meta["objects"])
    cfg.model.check_vocabulary(meta["actions"], meta["objects"], f"dataset {cfg.data.dir}")
    if meta["image_size"] != cfg.model.image_size:
        raise ValueError(f"dataset {cfg.data.dir} holds {meta['image_size']}px frames but model.image_size is "
                         f"{cfg.model.image_size}; rebuild it (data.rebuild=true) or change model.image_size")
    return FramePairs(cfg.data.dir, "train"), FramePairs(cfg.data.dir, "heldout", cfg.data.max_heldout_pairs)


def epoch_indices(train: FramePairs, cfg: TrainConfig, epoch: int) -> np.ndarray:
    """The epoch's training pair order (a function of seed and epoch, so a resume repeats it)."""
    rng = np.random.default_rng([cfg.seed, epoch])
    n = len(train) if cfg.pairs_per_epoch is None else cfg.pairs_per_epoch
    if cfg.action_balance == 0 and cfg.pairs_per_epoch is None:
        return rng.permutation(len(train))
    counts = np.bincount(train.actions.numpy()).astype(float)
    p = counts[train.actions.numpy()] ** -cfg.action_balance
    return rng.choice(len(train), size=n, replace=n > len(train), p=p / p.sum())


def effective_counts(train: FramePairs, balance: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Expected class counts of the sampled training stream (for the loss's class weights)."""
    a_counts, _ = train.counts()
    weight = a_counts.double().clamp(min=1).pow(-balance)[train.actions]
    obj = torch.zeros(len(train.meta["objects"]), dtype=torch.float64).index_add_(0, train.objects, weight)
    return a_counts.double() * a_counts.double().clamp(min=1).pow(-balance), obj


def save_confusion(logger: RunLogger, name: str, cm: torch.Tensor, names: list[str]) -> None:
    """Row-normalised confusion matrix of the classes present, as a PNG (and W&B image)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keep = (cm.sum(0) + cm.sum(1)) > 0
    m = cm[keep][:, keep].double()
    m = m / m.sum(1, keepdim=True).clamp(min=1)
    labels = [n for n, k in zip(names, keep.tolist(), strict=True) if k]
    fig, ax = plt.subplots(figsize=(max(5, len(labels) * 0.3), max(4, len(labels) * 0.3)))
    ax.imshow(m.numpy(), cmap="Blues", vmin=0, vmax=1)
    ax.set_xticks(range(len(labels)), labels, rotation=90, fontsize=7)
    ax.set_yticks(range(len(labels)), labels, fontsize=7)
    ax.set_xlabel("predicted")
    ax.set_ylabel("true")
    logger._save_figure(name, fig)


def eval_record(res: EvalResult, config: IDMConfig) -> dict:
    """JSON-ready metrics of an evaluation."""
    return {"loss": res.loss, "action_accuracy": res.action_accuracy, "object_accuracy": res.object_accuracy,
            "interaction_object_accuracy": res.interaction_object_accuracy, "pairs": res.pairs,
            "interaction_pairs": res.interaction_pairs,
            "per_action_accuracy": res.per_class_accuracy(config.actions, "action"),
            "per_object_accuracy": res.per_class_accuracy(config.objects, "object")}


def main(cfg: Config) -> int:
    """Train (resuming from ``out_dir/checkpoint`` if present); returns 0, also when the time limit stops it."""
    from accelerate import Accelerator
    from accelerate.utils import set_seed
    from torch.utils.data import DataLoader

    if cfg.train.torch_threads:
        torch.set_num_threads(cfg.train.torch_threads)
    kwargs = {"mixed_precision": cfg.train.mixed_precision} if cfg.train.mixed_precision else {}
    accelerator = Accelerator(**kwargs)
    set_seed(cfg.train.seed)
    out = Path(cfg.out_dir)
    train, heldout = prepare_data(cfg, accelerator)
    a_counts, o_counts = effective_counts(train, cfg.train.action_balance)
    if cfg.train.class_weighting == "none":
        a_counts = o_counts = None
    model, criterion = build(cfg.model, a_counts, o_counts)
    criterion.object_loss_coef = cfg.train.object_loss_coef
    if cfg.train.channels_last:
        model = model.to(memory_format=torch.channels_last)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.train.lr, weight_decay=cfg.train.weight_decay)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, cfg.train.lr_step_epochs, cfg.train.lr_gamma)
    model, optimizer, scheduler = accelerator.prepare(model, optimizer, scheduler)
    criterion.to(accelerator.device)
    state = {"epoch": 0, "batch": 0, "best_loss": math.inf, "bad_epochs": 0, "train_s": 0.0, "train_cpu_s": 0.0,
             "done": False}
    ckpt = out / "checkpoint"
    if (ckpt / "trainer_state.json").is_file():
        saved = IDMConfig.from_json_file(ckpt / "config.json")
        cfg.model.check_vocabulary(saved.actions, saved.objects, f"checkpoint {ckpt}")
        accelerator.load_state(str(ckpt))
        state.update(json.loads((ckpt / "trainer_state.json").read_text()))
        accelerator.print(f"resuming from {ckpt}: epoch {state['epoch']}, batch {state['batch']}")
    if state["done"]:
        accelerator.print(f"{out} is finished (epoch {state['epoch']}); delete {ckpt} to train again")
        return 0
    logger = RunLogger(out, _plain(cfg), cfg.wandb, job_type="train-idm") if accelerator.is_main_process else None
    heldout_loader = accelerator.prepare(DataLoader(heldout, batch_size=cfg.train.batch_size,
                                                    num_workers=cfg.train.num_workers))
    deadline = time.monotonic() + cfg.train.time_limit_min * 60 if cfg.train.time_limit_min else None
    no_object = cfg.model.no_object_index
    while state["epoch"] < cfg.train.epochs:
        order = epoch_indices(train, cfg.train, state["epoch"])
        skip = state["batch"] * cfg.train.batch_size * accelerator.num_processes
        loader = accelerator.prepare(DataLoader(train, batch_size=cfg.train.batch_size,
                                                sampler=order[skip:].tolist(), num_workers=cfg.train.num_workers))
        step0 = state["epoch"] * math.ceil(len(order) / cfg.train.batch_size)

        def on_step(batch: int, losses: dict, step0: int = step0) -> None:
            if logger is not None and batch % 10 == 0:
                logger.log({f"train/{k}": v for k, v in losses.items()}
                           | {"train/lr": optimizer.param_groups[0]["lr"]}, step=step0 + batch)

        t0, c0 = time.perf_counter(), time.process_time()
        res = train_one_epoch(model, criterion, loader, optimizer, accelerator, cfg.augment, state["batch"],
                              deadline, cfg.train.max_grad_norm, on_step, cfg.progress)
        state["train_s"] += time.perf_counter() - t0
        state["train_cpu_s"] += time.process_time() - c0  # differs from wall time on a shared machine
        state["batch"] = res.batches
        if not res.finished:
            save_checkpoint(accelerator, model, cfg, state, ckpt)
            accelerator.print(f"time limit reached at epoch {state['epoch']} batch {state['batch']}; "
                              f"checkpoint saved to {ckpt}: run the same command again to resume")
            _finish(logger)
            return 0
        scheduler.step()
        ev = evaluate(model, criterion, heldout_loader, accelerator, no_object, cfg.progress)
        state.update(epoch=state["epoch"] + 1, batch=0)
        improved = ev.loss < state["best_loss"]
        state["best_loss"] = min(state["best_loss"], ev.loss)
        state["bad_epochs"] = 0 if improved else state["bad_epochs"] + 1
        if accelerator.is_main_process:
            unwrapped = accelerator.unwrap_model(model)
            if improved:
                unwrapped.save_pretrained(out / "best")
                (out / "eval.json").write_text(json.dumps(
                    eval_record(ev, cfg.model) | {"epoch": state["epoch"], "train_s": state["train_s"],
                                                 "train_cpu_s": state["train_cpu_s"]},
                    indent=2) + "\n")
                save_confusion(logger, "confusion_action", ev.action_confusion, cfg.model.actions)
                save_confusion(logger, "confusion_object", ev.object_confusion, cfg.model.objects)
            logger.log({"epoch": state["epoch"], "train/samples_per_s": res.samples_per_s, "val/loss": ev.loss,
                        "val/action_accuracy": ev.action_accuracy, "val/object_accuracy": ev.object_accuracy,
                        "val/interaction_object_accuracy": ev.interaction_object_accuracy}
                       | {f"val/action_acc/{k}": v for k, v in ev.per_class_accuracy(cfg.model.actions).items()},
                       step=step0 + res.batches)
            print(f"epoch {state['epoch']}: train loss {res.loss:.3f} ({res.samples_per_s:.1f} samples/s), "
                  f"held-out loss {ev.loss:.3f}, action acc {ev.action_accuracy:.3f}, object acc "
                  f"{ev.object_accuracy:.3f} (interactions {ev.interaction_object_accuracy:.3f})")
        state["done"] = state["bad_epochs"] >= cfg.train.patience or state["epoch"] >= cfg.train.epochs
        save_checkpoint(accelerator, model, cfg, state, ckpt)
        if state["done"]:
            break
        if deadline is not None and time.monotonic() > deadline:
            accelerator.print(f"time limit reached after epoch {state['epoch']}; run again to resume")
            break
    _finish(logger)
    return 0


def save_checkpoint(accelerator, model, cfg: Config, state: dict, ckpt: Path) -> None:
    """Accelerate state + model config + trainer state (main process writes the JSON files)."""
    accelerator.wait_for_everyone()
    accelerator.save_state(str(ckpt))
    if accelerator.is_main_process:
        accelerator.unwrap_model(model).save_pretrained(Path(cfg.out_dir) / "model")
        cfg.model.to_json_file(ckpt / "config.json")
        (ckpt / "trainer_state.json").write_text(json.dumps(state, indent=2) + "\n")


def _finish(logger: RunLogger | None) -> None:
    if logger is not None:
        logger.finish()


def _plain(cfg: Config) -> dict:
    return asdict(cfg)


def load_model(directory: str | Path) -> InverseDynamicsModel:
    """A trained IDM from ``directory`` (``best/`` or ``model/`` of a run)."""
    return InverseDynamicsModel.from_pretrained(directory)


def cli(argv: list[str] | None = None) -> int:
    """``python -m icalkit.training.train_idm [--config FILE] [key=value ...]``."""
    import argparse

    from icalkit.config import ConfigError, load_config

    parser = argparse.ArgumentParser(prog="train_idm", description=__doc__.split("\n")[0])
    parser.add_argument("--config", default=None)
    parser.add_argument("overrides", nargs="*")
    args = parser.parse_args(argv)
    try:
        cfg = load_config(Config, args.config, args.overrides)
    except ConfigError as exc:
        print(f"train_idm: config error: {exc}", file=sys.stderr)
        return 2
    return main(cfg)


if __name__ == "__main__":
    raise SystemExit(cli())
