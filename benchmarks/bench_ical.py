"""ICAL learning figures with the default CPU model (SmolLM2-135M-Instruct), measured as they are.

1. Demonstrations: ``n_per_type`` noisy demos of each TEACh-style task type (collected into
   ``--demos`` unless already there; render off, no frames).
2. ICAL (abstraction + simulated-feedback HITL, n_feedbacks=5) on every noisy demo, with an
   empty response cache: yield per task type, revised-program success vs replaying the raw
   noisy program through the executor (ICAL Figure 4 comparison on the training tasks), wall
   time per demo, LLM calls per learned example.
3. The raw-demonstration baseline memory (no LLM call): build time and size.
4. The same ICAL run again into a fresh folder with the (now warm) response cache: re-run time
   and whether the records are identical.
5. Ablation ``abstraction=false``: the raw noisy program goes straight to the feedback loop.

6. ``--loops-model DIR``: ICAL by a fine-tuned model without and with ``loop_repeats=3`` (its
   answers loop inside programs), wall time as a ratio, on ``--types`` / ``--limit``.

Usage: ``python benchmarks/bench_ical.py [--demos runs/ical_demos] [--out runs/bench_ical]
[--limit N] [--threads 1] [--ablation-only]``, or ``--loops-model runs/finetune_ical/model --demos
runs/demos_n5 --types "Boil X" --limit 2 --max-new-tokens 1024 --threads 2``. Writes
``benchmarks/results/ical.json``.
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent
DROP = ("wall_s", "usage", "example_id")  # fields that legitimately differ between runs


def collect_demos(demos_dir: Path, n_per_type: int) -> None:
    """Collect noisy demonstrations (with their expert reference) unless already present."""
    from icalkit.commands.demos import TFD_TYPES
    from icalkit.data_gen.demos import collect
    from icalkit.envs.factory import make_env
    from icalkit.envs.household.tasks.sampler import sample_tasks

    tasks = sample_tasks(TFD_TYPES, n_per_type, "train", 0)
    collect(make_env("household", render_obs=False), tasks, demos_dir, save_frames=False, progress=False)


def ical_config(args: argparse.Namespace, out: Path, raw: bool = False, abstraction: bool = True,
                extra: dict | None = None):
    """The ``icalkit ical`` config of one run; ``extra``: more keys (a section's keys merged into it)."""
    from icalkit.commands.ical import Config
    from icalkit.config import from_dict

    data = {
        "demos_dir": str(args.demos), "out_dir": str(out), "limit": args.limit, "raw_demos": raw,
        "abstraction": abstraction,
        "torch_threads": args.threads,
        "env": {"render": False}, "memory": {"path": str(out / "memory.db"), "image_embedder": {"kind": "none"}},
        "llm": {"cache_path": str(args.out / "llm_cache.sqlite"), "device": "cpu",
                "max_new_tokens": args.max_new_tokens},
        "wandb": {"mode": "disabled", "enabled": False}}
    for key, value in (extra or {}).items():
        data[key] = {**data[key], **value} if isinstance(value, dict) else value
    return from_dict(Config, data)


def run_once(cfg) -> tuple[list[dict], float, int]:
    """Run the loop as ``icalkit ical`` does; returns records, wall seconds, memory size."""
    from icalkit.commands.ical import build_learner
    from icalkit.data_gen.demos import read_episodes
    from icalkit.data_gen.ical import run_ical, select_episodes

    episodes = select_episodes(read_episodes(Path(cfg.demos_dir) / "episodes.jsonl"), cfg.demonstrators,
                               cfg.task_types, cfg.limit)
    learner = build_learner(cfg)
    start = time.perf_counter()
    records = run_ical(learner, episodes, cfg.out_dir, progress=True)
    return records, time.perf_counter() - start, len(learner.memory)


def run_ablation(args: argparse.Namespace, result_path: Path) -> None:
    """abstraction=false (the raw program + HITL with the model), merged into the results file."""
    from icalkit.data_gen.ical_report import summarize

    out = args.out / "ical_no_abstraction"
    if out.exists():
        shutil.rmtree(out)
    records, wall_s, mem_size = run_once(ical_config(args, out, abstraction=False))
    result = json.loads(result_path.read_text()) if result_path.is_file() else {}
    result["ablation_no_abstraction"] = {**summarize(records), "run_wall_s": wall_s, "memory_size": mem_size}
    result_path.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result["ablation_no_abstraction"], indent=2))


def run_loops(args: argparse.Namespace, result_path: Path) -> None:
    """ICAL by ``--loops-model`` (a fine-tuned model that loops inside programs) without and with
    ``loop_repeats=3`` on the same demonstrations (``--types``, ``--limit``), each with an empty
    response cache; merged into the results file as ``loop_repeats``."""
    from icalkit.data_gen.ical_report import summarize

    sides = {}
    for repeats in (0, 3):
        out = args.out / f"loops_{repeats}"
        if out.exists():
            shutil.rmtree(out)
        out.mkdir(parents=True)
        cfg = ical_config(args, out, extra={
            "task_types": args.types, "k": 0, "n_feedbacks": 2, "keep_demo": True, "loop_repeats": repeats,
            "llm": {"model": args.loops_model, "cache_path": str(out / "llm_cache.sqlite")}})
        records, wall_s, _ = run_once(cfg)
        summary = summarize(records)
        sides[str(repeats)] = {"run_wall_s": round(wall_s, 1), "completion_tokens": summary["completion_tokens"],
                               "llm_calls": summary["llm_calls"], "status_counts": summary["status_counts"],
                               "kept_after": summary["kept_after"]}
    result = json.loads(result_path.read_text()) if result_path.is_file() else {}
    result["loop_repeats"] = {"model": args.loops_model, "backend": "hf (CPU, greedy)", "task_types": args.types,
                              "limit_per_run": args.limit, "torch_threads": args.threads,
                              "max_new_tokens": args.max_new_tokens, "runs": sides,
                              "speedup": round(sides["0"]["run_wall_s"] / sides["3"]["run_wall_s"], 2)}
    result_path.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result["loop_repeats"], indent=2))


def main() -> None:
    from icalkit.data_gen.ical_report import per_type_rows, summarize
    from icalkit.tracking import markdown_table

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--demos", type=Path, default=Path("runs/ical_demos"))
    parser.add_argument("--out", type=Path, default=Path("runs/bench_ical"))
    parser.add_argument("--n-per-type", type=int, default=2)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--max-new-tokens", type=int, default=384)
    parser.add_argument("--ablation-only", action="store_true",
                        help="only run the abstraction=false ablation and merge it into the results file")
    parser.add_argument("--loops-model", default="", help="only compare loop_repeats 0 and 3 with this model "
                        "(e.g. runs/finetune_ical/model, with --types, --limit, --max-new-tokens 1024)")
    parser.add_argument("--types", nargs="*", default=None, help="--loops-model: the task types to run")
    args = parser.parse_args()
    result_path = ROOT / "results" / "ical.json"
    if args.ablation_only or args.loops_model:
        args.out.mkdir(parents=True, exist_ok=True)
        return run_loops(args, result_path) if args.loops_model else run_ablation(args, result_path)

    if not (args.demos / "episodes.jsonl").is_file():
        collect_demos(args.demos, args.n_per_type)
    if args.out.exists():
        shutil.rmtree(args.out)  # fresh cache: the first run really generates
    args.out.mkdir(parents=True)

    records, ical_s, mem_size = run_once(ical_config(args, args.out / "ical"))
    summary = summarize(records)
    rows = per_type_rows(records)
    print(markdown_table(rows))

    raw_records, raw_s, raw_size = run_once(ical_config(args, args.out / "raw", raw=True))

    rerun_records, rerun_s, _ = run_once(ical_config(args, args.out / "ical_rerun"))
    strip = [{k: v for k, v in r.items() if k not in DROP} for r in records]
    strip_rerun = [{k: v for k, v in r.items() if k not in DROP} for r in rerun_records]
    rerun_cached = sum(r["usage"].get("cached", 0) for r in rerun_records)

    result = {
        "model": "SmolLM2-135M-Instruct (hf backend, CPU, greedy)",
        "torch_threads": args.threads, "max_new_tokens": args.max_new_tokens,
        "machine": {"python": platform.python_version(), "cpu": platform.processor() or platform.machine()},
        "demos_dir": str(args.demos), "ical": {k: v for k, v in summary.items()},
        "per_type": rows,
        "ical_run_wall_s": ical_s, "memory_size": mem_size,
        "raw_demos_baseline": {"wall_s": raw_s, "memory_size": raw_size,
                               "llm_calls": sum(r["usage"].get("calls", 0) for r in raw_records),
                               "raw_replay_success_rate": summarize(raw_records)["raw_replay_success_rate"]},
        "rerun_with_cache": {"wall_s": rerun_s, "speedup": ical_s / rerun_s if rerun_s else None,
                             "llm_calls": sum(r["usage"].get("calls", 0) for r in rerun_records),
                             "cached_calls": rerun_cached, "identical_records": strip == strip_rerun},
    }
    result_path.parent.mkdir(exist_ok=True)
    result_path.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "per_type"}, indent=2))
    run_ablation(args, result_path)
    print(f"wrote {result_path}")


if __name__ == "__main__":
    main()
