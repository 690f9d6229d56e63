"""``icalkit label``: label visual demonstrations with a trained IDM, for ``icalkit ical``."""

from __future__ import annotations

import json
from dataclasses import dataclass

HELP = """icalkit label — turn visual demonstrations (frames only) into noisy programs with the IDM.

Runs the trained inverse dynamics model over every consecutive frame pair of each episode in
`demos_dir`, grounds predicted object classes to instances, and writes `out_dir/episodes.jsonl`
(steps = the IDM's labels, source = visual-idm, true steps kept under `true_steps`) plus
`label_summary.json` (label accuracy against the withheld true actions, executed success of the
programs from IDM labels vs from the true actions). The output feeds `icalkit ical` unchanged.
A re-run skips episodes already labelled.

Examples:
  icalkit label model=runs/idm/train/best demos_dir=runs/idm/demos_unseen out_dir=runs/idm/labelled
  icalkit ical demos_dir=runs/idm/labelled source=visual-idm abstraction=false out_dir=runs/ical_idm
"""


@dataclass
class Config:
    model: str = "runs/idm/train/best"
    demos_dir: str = "runs/demos"
    out_dir: str = "runs/idm/labelled"
    demonstrators: list[str] | None = None
    limit: int | None = None
    batch_size: int = 64
    evaluate_programs: bool = True
    torch_threads: int = 0
    progress: bool = True

    def validate(self) -> None:
        if self.batch_size < 1 or self.torch_threads < 0:
            raise ValueError("batch_size must be >= 1 and torch_threads >= 0")
        if self.limit is not None and self.limit < 1:
            raise ValueError(f"limit must be >= 1 (or null for all), got {self.limit}")


def run(cfg: Config) -> int:
    import torch

    from icalkit.data_gen.label import label_demos
    from icalkit.models.idm.modeling_idm import InverseDynamicsModel

    if cfg.torch_threads:
        torch.set_num_threads(cfg.torch_threads)
    try:
        model = InverseDynamicsModel.from_pretrained(cfg.model)
    except (FileNotFoundError, ValueError) as exc:
        raise SystemExit(f"icalkit label: {exc}") from None
    summary = label_demos(model, cfg.demos_dir, cfg.out_dir, cfg.demonstrators, cfg.limit, cfg.batch_size,
                          cfg.evaluate_programs, cfg.progress)
    print(json.dumps(summary, indent=2))
    return 0
