"""`icalkit demo` shares paths, model and W&B settings between its stages, but never over a key you set."""

from pathlib import Path

from icalkit.config import load_config


def test_demo_keeps_the_users_keys() -> None:
    from icalkit.commands.demo import Config, derive_settings

    shipped = Path(__file__).parents[1] / "configs" / "demo.yaml"
    cfg = load_config(Config, shipped, ["out_dir=runs/d", "ical.out_dir=/elsewhere/ical", "eval.llm.model=other",
                                        "eval.methods=[zero_shot]"])
    derive_settings(cfg)
    assert cfg.ical.out_dir == "/elsewhere/ical" and cfg.ical.memory.path == "/elsewhere/ical/memory.db"
    assert cfg.demos.out_dir == "runs/d/demos" and cfg.ical.demos_dir == "runs/d/demos"
    assert cfg.eval.llm.model == "other" and cfg.eval.llm is not cfg.ical.llm
    assert cfg.eval.methods == ["zero_shot"] and cfg.eval.out_dir == "runs/d/eval"
    assert cfg.finetune.out_dir == "runs/d/finetune"
    # stage 3's memory of raw demonstrations is what the fine-tune's prompts retrieve from
    assert cfg.memory.demos_dir == "runs/d/demos" and cfg.memory.raw_demos and cfg.memory.prune
    assert cfg.finetune.data.k == 1 and cfg.finetune.data.memory_path == cfg.memory.memory.path == "runs/d/memory/memory.db"
    plain = load_config(Config, shipped, ["ical.memory.path=/m.db", "finetune.out_dir=/ft"])
    derive_settings(plain)
    assert plain.eval.llm is plain.ical.llm and plain.ical.memory.path == "/m.db"
    assert plain.ical.out_dir == "runs/demo/ical" and plain.ical.wandb is plain.demos.wandb
    assert plain.finetune.out_dir == "/ft" and plain.finetune.wandb is plain.demos.wandb
    assert plain.finetune.data.task_types == plain.eval.split.task_types  # before/after on the tuned types
