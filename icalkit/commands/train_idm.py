"""``icalkit train-idm``: train the DETR-style inverse dynamics model (resumable, accelerate)."""

from __future__ import annotations

from icalkit.training.train_idm import Config

HELP = """icalkit train-idm — train the inverse dynamics model that labels action-free videos.

Builds the frame-pair dataset from demonstration folders (`icalkit demos env.frame_size=64 ...`)
unless it exists, trains the DETR-style IDM (timm backbone + transformer, one query per action
and object class), evaluates on held-out scene layouts after every epoch and keeps the best
model under `out_dir/best` (config.json + model.safetensors). Each invocation trains at most
`train.time_limit_min` minutes; running the same command again resumes from the checkpoint.

Examples:
  icalkit demos n_per_type=25 env.frame_size=64 out_dir=runs/idm/demos_train
  icalkit demos n_per_type=6 split=valid_unseen env.frame_size=64 out_dir=runs/idm/demos_unseen
  icalkit train-idm                                   # configs/idm.yaml (CPU)
  icalkit train-idm --config configs/idm_gpu.yaml     # paper defaults (ResNet-50, d=384, 6+6 layers)
  accelerate launch --config_file accelerate_config.yaml -m icalkit.training.train_idm --config configs/idm.yaml
"""

__all__ = ["Config", "HELP", "run"]


def run(cfg: Config) -> int:
    from icalkit.training.train_idm import main

    return main(cfg)
