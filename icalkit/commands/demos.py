"""``icalkit demos``: collect expert and noisy demonstrations as datasets."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from icalkit.envs.config import EnvConfig
from icalkit.envs.household.tasks.registry import TFD_TYPES
from icalkit.tracking import RunLogger, WandbConfig

HELP = """icalkit demos — collect expert and noisy human-like demonstrations.

Samples `n_per_type` task instances of each task type, lets the expert and the noisy
demonstrator solve them, and writes episodes.jsonl, frames, Hugging Face datasets (episodes,
kinesthetic = with actions, visual = frames only) and a per-task-type summary under `out_dir`.
Re-running the same command resumes: recorded episodes are skipped.

Examples:
  icalkit demos n_per_type=5 noise=0.3 out_dir=runs/demos_train
  icalkit demos task_types='[Coffee, "Boil X"]' split=valid_unseen env.frame_size=160
"""



@dataclass
class Config:
    env: EnvConfig = field(default_factory=EnvConfig)
    task_types: list[str] = field(default_factory=lambda: list(TFD_TYPES))
    n_per_type: int = 2
    split: str = "train"
    seed: int = 0
    demonstrators: list[str] = field(default_factory=lambda: ["expert", "noisy"])
    noise: float = 0.2
    out_dir: str = "runs/demos"
    save_frames: bool = True
    hf_dataset: bool = True
    wandb: WandbConfig = field(default_factory=WandbConfig)

    def validate(self) -> None:
        from icalkit.data_gen.demos import DEMONSTRATORS
        from icalkit.envs.household.tasks.registry import get_task_type

        for t in self.task_types:
            get_task_type(t)  # raises naming the unknown type and the available ones
        bad = [d for d in self.demonstrators if d not in DEMONSTRATORS]
        if bad:
            raise ValueError(f"unknown demonstrator(s) {bad}; available: {list(DEMONSTRATORS)}")
        if not 0.0 <= self.noise <= 1.0:
            raise ValueError(f"noise must be in [0, 1], got {self.noise}")
        if self.n_per_type < 1:
            raise ValueError("n_per_type must be at least 1")


def run(cfg: Config) -> int:
    from icalkit.config import to_dict
    from icalkit.data_gen.demos import collect, export_hf, load_frames, summarize
    from icalkit.envs.factory import make_env
    from icalkit.envs.household.png import save_png
    from icalkit.envs.household.tasks.sampler import sample_tasks

    out = Path(cfg.out_dir)
    logger = RunLogger(out, to_dict(cfg), cfg.wandb, job_type="demos")
    tasks = sample_tasks(cfg.task_types, cfg.n_per_type, cfg.split, cfg.seed)
    env = make_env(cfg.env.name, **cfg.env.kwargs())

    def log_episode(ep: dict) -> None:
        logger.log({"episode/success": float(ep["success"]), "episode/steps": ep["n_steps"],
                    "episode/failed_actions": ep["n_failed"]})

    episodes = collect(env, tasks, out, tuple(cfg.demonstrators), cfg.noise, cfg.seed,
                       cfg.save_frames, on_episode=log_episode)
    rows = summarize(episodes)
    print(logger.table("summary", rows))
    types = sorted({r["task_type"] for r in rows})
    series = {who: [next((r["success_rate"] for r in rows if r["task_type"] == t and r["demonstrator"] == who), 0.0)
                    for t in types] for who in cfg.demonstrators}
    logger.bar_plot("summary", types, series, "success rate")
    examples = out / "examples"
    examples.mkdir(exist_ok=True)
    for ep in [e for e in episodes if e.get("frames_file")][:2]:
        frames = load_frames(out, ep)
        for t in (0, len(frames) // 2, len(frames) - 1):
            save_png(frames[t], examples / f"{Path(ep['frames_file']).stem}_{t:03d}.png")
    if cfg.hf_dataset:
        sizes = export_hf(out)
        print(f"datasets under {out / 'hf'}: " + ", ".join(f"{k}={v} rows" for k, v in sizes.items()))
    logger.finish()
    return 0
