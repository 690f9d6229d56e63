"""Run directories, Weights & Biases logging, result tables and plots (shared by every stage).

Every stage writes under one run directory: ``config.yaml`` (the resolved config), tables as CSV
and Markdown, plots as PNG, and a W&B run (offline unless configured otherwise) holding the same
metrics, tables and images.
"""

from __future__ import annotations

import csv
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml


@dataclass
class WandbConfig:
    """Weights & Biases settings; ``mode: offline`` writes a local run that `wandb sync` uploads."""

    enabled: bool = True
    project: str = "icalkit"
    entity: str | None = None
    mode: Literal["offline", "online", "disabled"] = "offline"
    tags: list[str] | None = None


def markdown_table(rows: list[dict[str, Any]], columns: list[str] | None = None) -> str:
    """Render rows as a GitHub Markdown table (floats with 3 significant decimals)."""
    if not rows:
        return "(no rows)"
    columns = columns or list(rows[0])

    def fmt(v: Any) -> str:
        if isinstance(v, float):
            return f"{v:.3f}"
        return str(v)

    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    lines += ["| " + " | ".join(fmt(r.get(c, "")) for c in columns) + " |" for r in rows]
    return "\n".join(lines)


def start_wandb(wandb_cfg: WandbConfig, run_dir: str | Path, job_type: str, config: dict) -> Any:
    """A W&B run with the config's mode, project and tags, writing under ``run_dir`` (any run of
    this process still open is finished first)."""
    import wandb

    os.environ.setdefault("WANDB_SILENT", "true")
    return wandb.init(project=wandb_cfg.project, entity=wandb_cfg.entity, mode=wandb_cfg.mode, job_type=job_type,
                      config=config, dir=str(run_dir), tags=wandb_cfg.tags, reinit="finish_previous")


def save_config(run_dir: str | Path, config: dict) -> None:
    """Write ``run_dir/config.yaml``: every key, loadable again with ``--config``."""
    Path(run_dir).mkdir(parents=True, exist_ok=True)
    (Path(run_dir) / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))


class RunLogger:
    """Writes metrics, tables and plots to a run directory and (optionally) to W&B."""

    def __init__(self, run_dir: str | Path, config: dict, wandb_cfg: WandbConfig | None, job_type: str,
                 provenance: dict | None = None):
        """``config`` goes to ``config.yaml`` (loadable again with ``--config``); ``provenance`` (git
        commit, data hashes: facts about the run, not settings) to ``provenance.json``; W&B gets both."""
        self.run_dir = Path(run_dir)
        save_config(self.run_dir, config)
        if provenance:
            (self.run_dir / "provenance.json").write_text(json.dumps(provenance, indent=2) + "\n")
        self._wandb = None
        if wandb_cfg is not None and wandb_cfg.enabled and wandb_cfg.mode != "disabled":
            self._wandb = start_wandb(wandb_cfg, self.run_dir, job_type, {**config, **(provenance or {})})

    def log(self, metrics: dict[str, Any], step: int | None = None) -> None:
        """Append metrics to ``metrics.jsonl`` and to W&B."""
        with open(self.run_dir / "metrics.jsonl", "a") as fh:
            fh.write(json.dumps({"step": step, **metrics}) + "\n")
        if self._wandb is not None:
            self._wandb.log(metrics, step=step)

    def table(self, name: str, rows: list[dict[str, Any]]) -> str:
        """Write ``name.csv`` and ``name.md``, log a W&B table; returns the Markdown text."""
        text = markdown_table(rows)
        (self.run_dir / f"{name}.md").write_text(text + "\n")
        if rows:
            with open(self.run_dir / f"{name}.csv", "w", newline="") as fh:
                writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
                writer.writeheader()
                writer.writerows(rows)
            if self._wandb is not None:
                import wandb

                cols = list(rows[0])
                self._wandb.log({name: wandb.Table(columns=cols, data=[[r.get(c) for c in cols] for r in rows])})
        return text

    def bar_plot(self, name: str, labels: list[str], series: dict[str, list[float]], ylabel: str) -> Path:
        """Grouped bar chart saved as ``name.png`` (and logged to W&B)."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import numpy as np

        fig, ax = plt.subplots(figsize=(max(6, len(labels) * 0.8), 4))
        width = 0.8 / max(1, len(series))
        x = np.arange(len(labels))
        for k, (label, values) in enumerate(series.items()):
            ax.bar(x + k * width, values, width, label=label)
        ax.set_xticks(x + width * (len(series) - 1) / 2, labels, rotation=30, ha="right")
        ax.set_ylabel(ylabel)
        ax.legend()
        return self._save_figure(name, fig)

    def line_plot(self, name: str, x: list[float], series: dict[str, list[float]], xlabel: str, ylabel: str,
                  ylim: tuple[float, float] | None = None) -> Path:
        """Line chart (one line per series, markers at the points) saved as ``name.png`` and logged."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 4))
        for label, values in series.items():
            ax.plot(x[: len(values)], values, marker="o", label=label)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_xticks(x)
        if ylim is not None:
            ax.set_ylim(*ylim)
        ax.legend()
        return self._save_figure(name, fig)

    def _save_figure(self, name: str, fig) -> Path:
        """Save a matplotlib figure as ``name.png``, close it, log it to W&B."""
        import matplotlib.pyplot as plt

        fig.tight_layout()
        path = self.run_dir / f"{name}.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        if self._wandb is not None:
            import wandb

            self._wandb.log({name: wandb.Image(str(path))})
        return path

    def finish(self) -> None:
        if self._wandb is not None:
            self._wandb.finish()
            self._wandb = None
