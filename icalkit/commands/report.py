"""``icalkit report``: put evaluation runs side by side."""

from __future__ import annotations

from dataclasses import dataclass, field

from icalkit.tracking import WandbConfig

HELP = """icalkit report — put evaluation runs side by side.

Reads episodes.jsonl of each run directory written by `icalkit eval` (or `icalkit prag`: one row
per P-RAG phase and round, `prag_<phase>_r<round>`), recomputes TEACh's metrics
(SR, GC, PLW-SR, PLW-GC per method and split, with episode counts) and writes one table with a
row per (run, method): report.md/.csv and report.png under out_dir (and a W&B run).

With ``pairs`` it also compares methods episode by episode (same split and task id) and writes
paired.md/.csv: each ``BASE=METHOD`` (or ``METHOD`` for the same name) gives the episodes both ran, the
successes of each, and the episodes gained and lost by task type. The baseline's episodes are read from
``baseline_runs`` (another code version's runs of the same tasks) where given, else from ``runs``.

Examples:
  icalkit report runs/eval_base runs/eval_finetuned
  icalkit report runs/eval out_dir=runs/report wandb.mode=disabled
  icalkit report runs/eval_r38_test13_seed0 runs/eval_r38_test13_seed1 \
      pairs='[copy_next_reader_dishes=copy_next_reader_filled]'
  icalkit report runs/eval_r38_test13_seed0 baseline_runs='[runs/eval_r38old_test13_seed0]' \
      pairs='[copy_next_stand_ins]'
"""


POSITIONAL = "runs"  # `icalkit report A B` == `icalkit report runs='[A, B]'`


@dataclass
class Config:
    runs: list[str] = field(default_factory=list)
    pairs: list[str] = field(default_factory=list)  # "BASE=METHOD" or "METHOD": paired.md, episode by episode
    baseline_runs: list[str] = field(default_factory=list)  # the pairs' baseline episodes (default: runs)
    out_dir: str = "runs/report"
    wandb: WandbConfig = field(default_factory=lambda: WandbConfig(mode="disabled"))


def run(cfg: Config) -> int:
    from pathlib import Path

    from icalkit.config import to_dict
    from icalkit.data_gen.results_file import read_jsonl
    from icalkit.eval.report import METRICS, paired, table1
    from icalkit.tracking import RunLogger

    if not cfg.runs:
        print("icalkit report: give one or more run directories (icalkit report RUN_DIR...)")
        return 2
    absent = [p for p in (Path(d) / "episodes.jsonl" for d in [*cfg.runs, *cfg.baseline_runs]) if not p.is_file()]
    if absent:
        print(f"icalkit report: {absent[0]} does not exist (not an `icalkit eval` run directory)")
        return 2
    rows, episodes = [], []
    for run_dir in cfg.runs:
        records = read_jsonl(Path(run_dir) / "episodes.jsonl")
        episodes += records
        methods = list(dict.fromkeys(r["method"] for r in records))
        splits = sorted({r["split"] for r in records}, reverse=True)
        rows += [{"run": run_dir, **row} for row in table1(records, methods, splits)]
    base = [r for d in cfg.baseline_runs for r in read_jsonl(Path(d) / "episodes.jsonl")] or episodes
    pairs = [p.split("=", 1) if "=" in p else [p, p] for p in cfg.pairs]
    missing = sorted({name for b, m in pairs for name, recs in ((b, base), (m, episodes))
                      if all(r["method"] != name for r in recs)})
    if missing:
        print(f"icalkit report: pairs name methods the runs do not hold: {missing}")
        return 2
    columns = list(dict.fromkeys(k for r in rows for k in r))
    rows = [{c: r.get(c) for c in columns} for r in rows]
    logger = RunLogger(cfg.out_dir, to_dict(cfg), cfg.wandb, job_type="report")
    print(logger.table("report", rows))
    if pairs:
        print(logger.table("paired", [paired(base, episodes, b, m) for b, m in pairs]))
    split = next((s for s in ("unseen", "seen", "train") if f"{s} SR" in columns), None)
    if split:
        logger.bar_plot("report", [f"{Path(r['run']).name}:{r['method']}" for r in rows],
                        {f"{split} {k.upper()}": [r.get(f"{split} {k.upper()}") or 0.0 for r in rows]
                         for k in METRICS[:2]}, "score")
    logger.finish()
    return 0
