"""``icalkit report``: put evaluation runs side by side."""

from __future__ import annotations

from dataclasses import dataclass, field

from icalkit.tracking import WandbConfig

HELP = """icalkit report — put evaluation runs side by side.

Reads episodes.jsonl of each run directory written by `icalkit eval` (or `icalkit prag`: one row
per P-RAG phase and round, `prag_<phase>_r<round>`), recomputes TEACh's metrics
(SR, GC, PLW-SR, PLW-GC per method and split, with episode counts) and writes one table with a
row per (run, method): report.md/.csv and report.png under out_dir (and a W&B run).

Examples:
  icalkit report runs/eval_base runs/eval_finetuned
  icalkit report runs/eval out_dir=runs/report wandb.mode=disabled
"""


POSITIONAL = "runs"  # `icalkit report A B` == `icalkit report runs='[A, B]'`


@dataclass
class Config:
    runs: list[str] = field(default_factory=list)
    out_dir: str = "runs/report"
    wandb: WandbConfig = field(default_factory=lambda: WandbConfig(mode="disabled"))


def run(cfg: Config) -> int:
    from pathlib import Path

    from icalkit.config import to_dict
    from icalkit.data_gen.results_file import read_jsonl
    from icalkit.eval.report import METRICS, table1
    from icalkit.tracking import RunLogger

    if not cfg.runs:
        print("icalkit report: give one or more run directories (icalkit report RUN_DIR...)")
        return 2
    rows = []
    for run_dir in cfg.runs:
        path = Path(run_dir) / "episodes.jsonl"
        if not path.is_file():
            print(f"icalkit report: {path} does not exist (not an `icalkit eval` run directory)")
            return 2
        records = read_jsonl(path)
        methods = list(dict.fromkeys(r["method"] for r in records))
        splits = sorted({r["split"] for r in records}, reverse=True)
        rows += [{"run": run_dir, **row} for row in table1(records, methods, splits)]
    columns = list(dict.fromkeys(k for r in rows for k in r))
    rows = [{c: r.get(c) for c in columns} for r in rows]
    logger = RunLogger(cfg.out_dir, to_dict(cfg), cfg.wandb, job_type="report")
    print(logger.table("report", rows))
    split = next((s for s in ("unseen", "seen", "train") if f"{s} SR" in columns), None)
    if split:
        logger.bar_plot("report", [f"{Path(r['run']).name}:{r['method']}" for r in rows],
                        {f"{split} {k.upper()}": [r.get(f"{split} {k.upper()}") or 0.0 for r in rows]
                         for k in METRICS[:2]}, "score")
    logger.finish()
    return 0
