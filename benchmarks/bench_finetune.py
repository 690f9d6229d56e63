"""Fine-tuning and serving figures of the planner's model (SmolLM2-135M-Instruct) on this machine.

Phases (each merges its figures into benchmarks/results/finetune.json, keeping the others):

- ``train``: the same ``icalkit finetune`` command (the user's level) on the same real planner
  pairs for the same number of optimizer steps, once per variant, each in its own process (clean
  peak RSS): the plain path (the model's own forward and loss over every position) in fp32 and
  bf16 autocast, then the default path — what ``configs/finetune.yaml`` runs: logits only at
  completion positions, shared prompt prefix run once per micro-batch, the prompt encoded without
  gradient (``train.prompt_grad=false``, which learns more than the exact gradient in the same
  wall time: the ``gradient`` phase), precision auto; see icalkit/training/completion_loss.py —,
  the same with the exact gradient and its ablations, LoRA r=16, the default under
  ``accelerate launch --config_file accelerate_config.yaml``, and the default and the exact path
  with 4 KB pages (``THP_MEM_ALLOC_ENABLE=0``; the training
  commands allocate large tensors on transparent huge pages, see icalkit/cli.py). Tokens/s counts
  the pairs' tokens (padding excluded), over the whole ``trainer.train`` call and after the first
  optimizer step (steady); ratios are against the plain path of the same run at the machine's
  precision: bf16 autocast where the CPU computes bf16 natively (AVX512-BF16/AMX), fp32 where
  it would be emulated (plain bf16 is then skipped: minutes per step). The CPU model and its
  flags are recorded. Variants run interleaved ``--repeats`` times (best kept); the 1-minute
  load average is recorded.
- ``serve``: a real vLLM OpenAI-compatible server (``icalkit.inference.serve``, .venv-vllm)
  with the base model and a LoRA adapter; ``--requests`` greedy chat completions sent one at a
  time vs 8 at once, tokens/s and the ratio, for base and adapter; then the same adapter merged
  into its base and served as a full model (``model=<adapter>``), and its ratio to the LoRA path.
  ``--pairs`` sends the planner's own prompts (a pairs.jsonl) instead of one-line ones.

- ``gradient``: does the prompt without gradient learn as much as the exact gradient, per step
  and in the same wall time? The recommended config (``--config``) on its own pairs
  (``--dataset``), ``--steps`` optimizer steps both ways from the same weights on the same
  batches: validation loss, tokens/s, peak RSS; with ``--nograd-steps`` also the prompt without
  gradient over that many steps, on its own schedule (as many as fit in the exact run's wall
  time). A run folder that already has its steps is read, not retrained (``icalkit finetune``
  resumes).
- ``demo``: the last ``make demo`` run (``runs/demo``): its fine-tune (steps, tokens/s, peak RSS)
  and its before/after table (untuned, copy, fine-tuned on unseen layouts of the tuned types); the
  entry of another run folder moves to ``earlier_demos``.
- ``eval``: success on trained vs held-out task types (valid_unseen) of ``icalkit eval`` runs of
  the fine-tuned planner and its baselines (``trained_types_sr``, ``heldout_types_sr`` of the
  recommended method, with episode counts). An earlier evaluation of other run folders moves to
  ``earlier_evaluations``.
- ``gpu``: the GPU configuration (``--config configs/finetune_gpu.yaml``) run on a lent GPU machine:
  its fine-tune (``--finetune-dir``, tokens/s, peak GPU memory) and its evaluation episodes
  (``--eval-dirs``, with a CPU evaluation's for the same tasks).
- ``copies``: the grounded copy baseline (no model) under other example memories and retrieval
  settings (``copy_memories``): how many demonstrations per type, which kind, and the room-fit
  re-ranking (``planner.room_fit``), from ``icalkit eval`` runs of copy methods named apart; or any
  rows recorded apart under ``--key`` (``ical_learned``: the fine-tuned model's ICAL memory, with its
  fine-tunes ``--finetune-dir`` and its ``icalkit ical`` run ``--memory-runs``).

Usage: python benchmarks/bench_finetune.py [train] [--steps 3] [--repeats 1]   (train: the default phase)
       python benchmarks/bench_finetune.py serve --adapter runs/bench_finetune/lora16/adapter
       python benchmarks/bench_finetune.py gradient --steps 10 [--nograd-steps 17] [--config configs/finetune_rag.yaml]
           [--dataset runs/finetune_rag/data/dataset]
       python benchmarks/bench_finetune.py demo [--demo-dir runs/demo] [--demo-wall-s SECONDS]
       python benchmarks/bench_finetune.py gpu --config configs/finetune_gpu.yaml --finetune-dir runs/finetune_gpu
           --eval-dirs runs/eval_gpu runs/eval_r9_n5
       python benchmarks/bench_finetune.py eval --finetune-dir runs/ft_main --eval-dirs runs/ft_main/eval
       python benchmarks/bench_finetune.py eval --trained-types Coffee ... --eval-dirs runs/eval_r13_n5
           --recommended copy_mention_fallback --copy-method copy_mention_fallback
       python benchmarks/bench_finetune.py copies --key ical_learned --finetune-dir runs/finetune_ical
           runs/finetune_rag runs/finetune_ical_k0e3 --memory-runs runs/memories/ical_ft_n5
           runs/memories/ical_ft_n5_keep runs/memories/ical_ft_k0e3
           --eval-dirs runs/eval_r15_ical_raw runs/eval_r15_ical runs/eval_r16_ical_keep_frames
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import subprocess
import sys
from pathlib import Path

from finetune_serving import phase_serve  # this folder is on sys.path when the script runs

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "finetune.json"
WORK = ROOT / "runs" / "bench_finetune"
EXACT = "train.prompt_grad=true"  # back-propagate through the prompt too (configs/finetune.yaml does not)
PLAIN = ["train.completion_loss=false", "train.shared_prefix=false", EXACT]  # the model's own forward + loss
VARIANTS = {
    "plain_fp32": ["train.method=full", "train.precision=fp32", *PLAIN],
    "plain_bf16": ["train.method=full", "train.precision=bf16", *PLAIN],
    # configs/finetune.yaml as shipped: completion-only logits + shared prefix + sdpa_folded + the prompt
    # without gradient, precision auto
    "default": ["train.method=full"],
    "exact": ["train.method=full", EXACT],  # the same with the exact gradient
    "exact_unfolded": ["train.method=full", EXACT, "train.attention=sdpa"],  # and transformers' sdpa
    "completion_loss_only": ["train.method=full", "train.shared_prefix=false", EXACT],
    "eager": ["train.method=full", EXACT, "train.attention=eager"],
    "packing": ["train.method=full", "train.shared_prefix=false", "train.packing=true", EXACT],
    "lora16": ["train.method=lora", "train.lora_r=16"],
    "default_accelerate": ["train.method=full"],
    "default_4k_pages": ["train.method=full"],  # with torch's huge-page allocation off
    "exact_4k_pages": ["train.method=full", EXACT],
}
VARIANT_ENV = {"default_4k_pages": {"THP_MEM_ALLOC_ENABLE": "0"}, "exact_4k_pages": {"THP_MEM_ALLOC_ENABLE": "0"}}
BF16_ONLY = {"plain_bf16"}  # skipped where bf16 is emulated (minutes per step; see fast_bf16)
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def merge(figures: dict) -> dict:
    """Merge ``figures`` into the results file and return the whole record."""
    data = json.loads(RESULTS.read_text()) if RESULTS.is_file() else {"benchmark": "finetune"}
    data.update(figures)
    data["platform"], data["cpu_count"] = platform.platform(), os.cpu_count()
    RESULTS.write_text(json.dumps(data, indent=2) + "\n")
    return data


def build_data(n_per_type: int) -> Path:
    """A small pairs dataset shared by every variant (built once)."""
    out = WORK / f"data_{n_per_type}"
    if not (out / "dataset").is_dir():
        from icalkit.data_gen.finetune_data import PairConfig, build_pairs

        build_pairs(PairConfig(task_types=["Coffee", "Boil X", "Clean All X", "Water Plant"], n_per_type=n_per_type,
                               revisions_per_task=0, valid_fraction=0.0), out)
    return out / "dataset"


def train_variant(name: str, dataset: Path, steps: int, micro_batch: int, grad_accum: int, threads: int) -> dict:
    """Run one variant through the CLI; its train_summary.json."""
    out = WORK / name
    args = [f"dataset={dataset}", f"out_dir={out}", f"train.max_steps={steps}", f"train.micro_batch={micro_batch}",
            f"train.grad_accum={grad_accum}", "train.save_steps=100000", "train.resume=false", "train.time_budget_s=0",
            f"train.threads={threads}", "train.device=cpu", "data.valid_fraction=0", *VARIANTS[name]]
    if name.endswith("_accelerate"):
        cmd = [str(ROOT / ".venv" / "bin" / "accelerate"), "launch", "--config_file", str(ROOT / "accelerate_config.yaml"),
               "-m", "icalkit.cli", "finetune", *args]
    else:
        cmd = [sys.executable, "-m", "icalkit.cli", "finetune", *args]
    return run_finetune(name, cmd, out, VARIANT_ENV.get(name, {}))


def run_finetune(name: str, cmd: list[str], out: Path, env: dict[str, str]) -> dict:
    """Run one ``icalkit finetune`` command (``env`` added to the benchmark's); its train_summary.json."""
    proc = subprocess.run(cmd, capture_output=True, text=True, env={**ENV, **env}, cwd=ROOT)
    if proc.returncode != 0:
        raise SystemExit(f"{name} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    return json.loads((out / "train_summary.json").read_text())


def phase_train(args: argparse.Namespace) -> dict:
    """Every variant on the same pairs; ratios against the plain path at the machine's precision
    (bf16 autocast where bf16 is native, the issue's reference; fp32 where it is emulated)."""
    from icalkit.training.finetune import fast_bf16

    native = fast_bf16("cpu")
    baseline = "plain_bf16" if native else "plain_fp32"
    variants = [v for v in args.variants if native or v not in BF16_ONLY]
    dataset = build_data(args.n_per_type)
    best: dict[str, dict] = {}
    loads = []
    for _ in range(args.repeats):
        for name in variants:
            loads.append(os.getloadavg()[0])
            s = train_variant(name, dataset, args.steps, args.micro_batch, args.grad_accum, args.threads)
            print(f"{name}: {s['train_tokens_per_s']} tokens/s ({s['precision']}), peak RSS {s['peak_rss_gb']} GB, "
                  f"loss {s['train_loss']:.3f}")
            if name not in best or s["train_tokens_per_s"] > best[name]["train_tokens_per_s"]:
                best[name] = s
    ref = best.get(baseline, next(iter(best.values())))
    rows = {n: {"precision": s["precision"], "prompt_grad": s.get("prompt_grad", True),
                "train_tokens_per_s": s["train_tokens_per_s"],
                "ratio_vs_baseline": round(s["train_tokens_per_s"] / ref["train_tokens_per_s"], 2),
                "steady_tokens_per_s": s["steady_tokens_per_s"],
                "steady_ratio_vs_baseline": round(s["steady_tokens_per_s"] / ref["steady_tokens_per_s"], 2),
                "peak_rss_gb": s["peak_rss_gb"], "tokens": s["tokens_seen"], "wall_s": s["wall_s"],
                "train_loss": round(s["train_loss"], 4)} for n, s in best.items()}
    headline = rows.get("default", next(iter(rows.values())))  # what configs/finetune.yaml runs
    return {"training": {"model": "SmolLM2-135M-Instruct", "steps": args.steps, "micro_batch": args.micro_batch,
                         "grad_accum": args.grad_accum, "baseline": baseline, "bf16_native": native,
                         "skipped": sorted(set(args.variants) - set(variants)), "cpu": cpu_model(),
                         "threads": args.threads, "repeats": args.repeats, "load_average_1m": loads,
                         "command": "icalkit finetune (see VARIANTS in the benchmark)", "variants": rows},
            "train_tokens_per_s": headline["train_tokens_per_s"], "peak_rss_gb": headline["peak_rss_gb"]}


def cpu_model() -> str:
    """The CPU's model name and its vector extensions that matter for bf16."""
    info = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").is_file() else ""
    name = next((ln.split(":", 1)[1].strip() for ln in info.splitlines() if ln.startswith("model name")), platform.processor())
    flags = next((ln.split(":", 1)[1].split() for ln in info.splitlines() if ln.startswith("flags")), [])
    return f"{name} ({', '.join(f for f in ('avx2', 'avx512f', 'avx512_bf16', 'amx_bf16') if f in flags) or 'no AVX2'})"


TRAIN_KEYS = ("precision", "prompt_grad", "train_pairs", "global_step", "max_steps", "tokens_seen", "wall_s",
              "train_tokens_per_s", "peak_rss_gb", "train_loss", "eval_loss", "stopped_because")


def trained_types(finetune_dir: str | Path) -> set[str]:
    """The task types a fine-tune trained on: its pairs' ``stats.json`` (``data/`` under the run, or beside
    the prebuilt ``dataset`` its config.yaml names)."""
    root = Path(finetune_dir)
    stats = root / "data" / "stats.json"
    if not stats.is_file() and (root / "config.yaml").is_file():
        import yaml

        dataset = (yaml.safe_load((root / "config.yaml").read_text()) or {}).get("dataset") or ""
        stats = Path(dataset).parent / "stats.json" if dataset else stats
    return set(json.loads(stats.read_text())["by_type"])


def trained_set(args: argparse.Namespace) -> set[str]:
    """The trained task types: the fine-tunes' (``--finetune-dir``; all must agree), else ``--trained-types``
    (an evaluation of methods without a fine-tuned model, grouped as the fine-tunes were)."""
    if not args.finetune_dir:
        if not args.trained_types:
            raise SystemExit("give --finetune-dir (the fine-tunes behind the evaluated methods) or --trained-types")
        return set(args.trained_types)
    runs = {d: trained_types(d) for d in args.finetune_dir}
    trained = runs[args.finetune_dir[0]]
    if any(types != trained for types in runs.values()):
        raise SystemExit(f"the fine-tunes trained different task types: {runs}")
    return trained


def phase_eval(args: argparse.Namespace) -> dict:
    """Trained-type vs held-out-type figures of ``icalkit eval`` runs (their episodes.jsonl).

    The pair settings (which types were trained) come from the fine-tunes' pair ``stats.json``
    (every fine-tune behind the evaluated methods, ``--finetune-dir``, must have trained the same),
    or from ``--trained-types`` where no evaluated method has a fine-tuned model.
    """
    trained = trained_set(args)
    summaries = {d: json.loads((Path(d) / "train_summary.json").read_text()) for d in args.finetune_dir}
    first = args.finetune_dir[0] if args.finetune_dir else None
    methods = method_figures(args.eval_dirs, trained)
    best = methods[args.recommended]
    evaluation = {"tool": "icalkit eval (valid_unseen, max_replans as in each method file)",
                  "finetune_dir": first, "finetune": {k: summaries[first].get(k) for k in TRAIN_KEYS} if first else None,
                  "other_finetunes": {d: {k: s.get(k) for k in TRAIN_KEYS} for d, s in list(summaries.items())[1:]},
                  "eval_dirs": args.eval_dirs,
                  "trained_types": sorted(trained), "recommended": args.recommended, "methods": methods,
                  "memories": {m: memory_build(m) for m in args.memory_runs},
                  "first_program_as_oracle": {"oracle": args.oracle_method,
                                              "methods": same_first_program(args.eval_dirs, args.oracle_method)},
                  # the same methods on valid_seen where the runs hold it (a second split, for the caveats)
                  "valid_seen": method_figures(args.eval_dirs, trained, "valid_seen"),
                  **silent_ends(args)}
    earlier = earlier_entries("evaluation", evaluation, "eval_dirs",
                              carry=("trained_types_sr", "heldout_types_sr", "heldout_choices"))
    return {"evaluation": evaluation, "earlier_evaluations": earlier,
            "heldout_choices": heldout_choices(methods[args.copy_method]["by_type"], len(set(methods[args.copy_method]["by_type"]) - trained), args.copy_method),
            "trained_types_sr": best["trained_types"]["sr"], "trained_types_episodes": best["trained_types"]["episodes"],
            "heldout_types_sr": best["heldout_types"]["sr"], "heldout_types_episodes": best["heldout_types"]["episodes"]}


def earlier_entries(key: str, new: dict, *run_keys: str, carry: tuple[str, ...] = ()) -> list[dict]:
    """The results file's ``earlier_<key>s`` plus its ``key`` entry when that one came from another run
    (``run_keys`` differ from ``new``'s): kept, not overwritten, since its run folders may be gone.
    ``carry``: top-level figures of the results file that move with it."""
    def run(entry: dict) -> tuple:
        return tuple(entry.get(k) for k in run_keys)

    old = json.loads(RESULTS.read_text()) if RESULTS.is_file() else {}
    earlier = [e for e in old.get(f"earlier_{key}s", []) if run(e) != run(new)]
    previous = old.get(key)
    if previous and run(previous) != run(new):
        earlier.append({**previous, **{k: old.get(k) for k in carry}})
    return earlier


def memory_build(out_dir: str) -> dict:
    """What an ``icalkit ical`` run (its results.jsonl) stored: demonstrations, examples, pruned lines, time,
    and its cross-replay transfer per type (summary.json) where it ran one."""
    from collections import Counter

    rows = [json.loads(line) for line in (Path(out_dir) / "results.jsonl").open()]
    pruned = sum(r.get("pruned_lines", 0) for r in rows)
    summary = Path(out_dir) / "summary.json"
    transfer = json.loads(summary.read_text()).get("transfer") if summary.is_file() else None
    types = sorted({r["task_type"] for r in rows})
    return {"demonstrations": len(rows), "learned": sum(r["status"] == "learned" for r in rows),
            "statuses": dict(Counter(r["status"] for r in rows)),
            "learned_by_type": {t: [sum(r["status"] == "learned" for r in rows if r["task_type"] == t),
                                    sum(r["task_type"] == t for r in rows)] for t in types},
            "first_attempt_success": sum(r.get("first_attempt_success", False) for r in rows),
            "llm_calls": sum(r.get("usage", {}).get("calls", 0) for r in rows),
            # answers replayed from the response cache (a re-run with the same model and prompts)
            "llm_cached_calls": sum(r.get("usage", {}).get("cached", 0) for r in rows),
            "kept_after": dict(Counter(r.get("kept_after") for r in rows if r["status"] == "kept_demo")),
            "pruned_lines": pruned, "pruned_lines_mean": round(pruned / max(len(rows), 1), 1),
            "wall_s": round(sum(r["wall_s"] for r in rows), 1),
            **({"transfer": transfer} if transfer else {})}  # icalkit ical transfer=true: per type


def heldout_choices(by_type: dict[str, list[int]], k: int, method: str) -> dict:
    """SR of ``method`` on every choice of ``k`` held-out types, from its per-type successes. Exact for
    a method without a trained model (the copy): which types a fine-tune saw does not change it."""
    import itertools
    import statistics

    srs = {c: sum(by_type[t][0] for t in c) / sum(by_type[t][1] for t in c) for c in itertools.combinations(sorted(by_type), k)}
    worst = min(srs, key=srs.get)
    return {"method": method, "types_held_out": k, "choices": len(srs), "at_least_30pct": sum(v >= 0.3 for v in srs.values()),
            "sr_min": round(srs[worst], 3), "sr_median": round(statistics.median(srs.values()), 3),
            "sr_max": round(max(srs.values()), 3), "worst_choice": list(worst)}


def split_records(eval_dirs: list[str], split: str = "valid_unseen") -> list[dict]:
    """The episodes of ``split`` (valid_unseen by default) in the runs' episodes.jsonl."""
    return [r for run in eval_dirs for line in (Path(run) / "episodes.jsonl").open()
            if (r := json.loads(line))["split"] == split]


def silent_ends(args: argparse.Namespace) -> dict:
    """``silent_end_decisions``: per method of the runs that went on copying after a silent end, its
    decisions there against the ``--next-oracle`` twin's ground truth, per split (none without one)."""
    from icalkit.agents.feedback import NEXT_COPY_TEXT
    from icalkit.eval.silent_ends import silent_end_decisions

    if not args.next_oracle:
        return {}
    runs = {split: split_records(args.eval_dirs, split) for split in ("valid_unseen", "valid_seen")}
    going = dict.fromkeys(r["method"] for rs in runs.values() for r in rs if any(e.startswith(NEXT_COPY_TEXT) for e in r["errors"]))
    return {"silent_end_decisions": {"oracle": args.next_oracle, **{name: {split: silent_end_decisions(
        rs, name, args.next_oracle) for split, rs in runs.items() if rs} for name in going}}}


def same_first_program(eval_dirs: list[str], oracle: str) -> dict[str, list[int]]:
    """Per method: [tasks whose first program equals ``oracle``'s, tasks both ran]. With the oracle
    re-grounded copy (``copy_oracle_reground``) and the same memory this counts the copies a
    method re-grounded as the task parameters do (a copy that needed no replacement included)."""
    records = split_records(eval_dirs)
    want = {r["task_id"]: r["programs"][0] for r in records if r["method"] == oracle and r["programs"]}
    out: dict[str, list[int]] = {}
    for r in records:
        if r["method"] != oracle and r["task_id"] in want and r["programs"]:
            counts = out.setdefault(r["method"], [0, 0])
            counts[0] += r["programs"][0] == want[r["task_id"]]
            counts[1] += 1
    return out


def method_figures(eval_dirs: list[str], trained: set[str], split: str = "valid_unseen") -> dict[str, dict]:
    """Per method of the runs' episodes.jsonl: SR, GC, PLW-SR, mean steps, successes, episodes and
    recoveries (successes after an attempt that failed with an error) on ``split``, for the trained
    and the held-out task types — over the tasks every method ran (same work each)."""
    from icalkit.metrics import Episode, aggregate

    records = split_records(eval_dirs, split)
    if not records:
        return {}
    names = list(dict.fromkeys(r["method"] for r in records))
    common = set.intersection(*({r["task_id"] for r in records if r["method"] == m} for m in names))
    methods: dict[str, dict] = {}
    for name in names:
        rows = [r for r in records if r["method"] == name and r["task_id"] in common]
        groups = {"trained_types": [r for r in rows if r["task_type"] in trained],
                  "heldout_types": [r for r in rows if r["task_type"] not in trained], "all_types": rows}
        methods[name] = {}
        for group, recs in groups.items():
            agg = aggregate(Episode.from_record(r) for r in recs)
            methods[name][group] = {"sr": round(agg["sr"], 3), "gc": round(agg["gc"], 3),
                                    # path-length weighted (TEACh): what extra copies and re-plans cost
                                    "plw_sr": round(agg["plw_sr"], 3), "steps_mean": round(
                                        sum(r["steps"] for r in recs) / max(len(recs), 1), 1),
                                    "success": sum(bool(r["success"]) for r in recs), "episodes": agg["n"],
                                    # an attempt failed with an error, and the task was solved at the end (with
                                    # silent_next_copy the error may also come after a success)
                                    "with_failed_attempt": sum(r["failed_attempts"] > 0 for r in recs),
                                    "recovered": sum(bool(r["success"]) and r["failed_attempts"] > 0 for r in recs),
                                    # the generative model's answers (0 for the copy), and the episodes that asked it
                                    "model_calls": sum((r.get("llm") or {}).get("calls", 0) for r in recs),
                                    "episodes_asking_model": sum((r.get("llm") or {}).get("calls", 0) > 0 for r in recs),
                                    "episode_wall_s_mean": round(sum(r["wall_s"] for r in recs) / max(len(recs), 1), 1)}
        by_type: dict[str, list[int]] = {}
        for r in rows:
            by_type.setdefault(r["task_type"], [0, 0])[0] += bool(r["success"])
            by_type[r["task_type"]][1] += 1
        methods[name]["by_type"] = dict(sorted(by_type.items()))  # [successes, episodes] per task type
        print(name, methods[name])
    return methods


GRADIENT = {"exact": EXACT, "prompt_nograd": "train.prompt_grad=false"}


def phase_gradient(args: argparse.Namespace) -> dict:
    """The exact gradient vs the prompt without gradient on the same batches (see the module docstring)."""
    rows = {}
    runs = {**{name: (flag, args.steps) for name, flag in GRADIENT.items()},
            **({"prompt_nograd_equal_time": (GRADIENT["prompt_nograd"], args.nograd_steps)} if args.nograd_steps else {})}
    for name, (flag, steps) in runs.items():
        out = WORK / f"gradient_{name}"
        cmd = [sys.executable, "-m", "icalkit.cli", "finetune", "--config", args.config, f"dataset={args.dataset}",
               f"out_dir={out}", f"train.max_steps={steps}", "train.save_steps=5", "train.time_budget_s=0",
               "train.eval_steps=0", "train.resume=true", flag]
        s = run_finetune(name, cmd, out, {})
        rows[name] = {k: s.get(k) for k in (*TRAIN_KEYS, "steady_tokens_per_s")}
        print(name, rows[name])
    ratio = rows["prompt_nograd"]["train_tokens_per_s"] / rows["exact"]["train_tokens_per_s"]
    return {"gradient": {"config": args.config, "dataset": args.dataset, "steps": args.steps,
                         "nograd_steps": args.nograd_steps, "cpu": cpu_model(),
                         "runs": rows, "nograd_tokens_per_s_ratio": round(ratio, 2),
                         "command": "icalkit finetune --config CONFIG dataset=DATASET train.max_steps=STEPS "
                                    "train.prompt_grad=true|false"}}


def phase_copies(args: argparse.Namespace) -> dict:
    """Methods of ``--eval-dirs`` recorded apart from the evaluation of record, under ``--key``: the
    grounded copy under other memories and retrieval settings (``copy_memories``), or a row on fewer
    tasks (``base_zero_shot``), grouped by the trained types (``--finetune-dir`` / ``--trained-types``);
    valid_seen too where the runs hold it."""
    trained = trained_set(args)
    summaries = {d: json.loads((Path(d) / "train_summary.json").read_text()) for d in args.finetune_dir}
    seen = method_figures(args.eval_dirs, trained, "valid_seen")
    return {args.key: {"tool": "icalkit eval (valid_unseen; valid_seen where the runs hold it)", "eval_dirs": args.eval_dirs,
                       "methods": method_figures(args.eval_dirs, trained), **({"valid_seen": seen} if seen else {}),
                       **({"finetunes": {d: {**{k: s.get(k) for k in TRAIN_KEYS},
                                             **{k: s[k] for k in ("method", "device_name", "peak_gpu_gb") if k in s}}
                                         for d, s in summaries.items()}}
                          if summaries else {}),
                       **({"memories": {m: memory_build(m) for m in args.memory_runs}} if args.memory_runs else {}),
                       **silent_ends(args), **({"note": args.note} if args.note else {})}}


def phase_demo(args: argparse.Namespace) -> dict:
    """The last `make demo` (``--demo-dir``): its fine-tune's summary and its before/after table,
    with its end-to-end wall time when given (``--demo-wall-s``: `time make demo` on a fresh folder)."""
    root = Path(args.demo_dir)
    summary = json.loads((root / "finetune" / "train_summary.json").read_text())
    stats = json.loads((root / "finetune" / "data" / "stats.json").read_text())
    methods = method_figures([str(root / "eval")], set(stats["by_type"]))
    demo = {"dir": str(root), "cpu": cpu_model(), "types": sorted(stats["by_type"]), "wall_s": args.demo_wall_s,
            "finetune": {k: summary.get(k) for k in TRAIN_KEYS},
            "methods": {m: f["trained_types"] for m, f in methods.items()}}
    return {"demo": demo, "earlier_demos": earlier_entries("demo", demo, "dir", "wall_s")}


def phase_gpu(args: argparse.Namespace) -> dict:
    """The GPU configuration run on a lent GPU machine (``--finetune-dir``, its train_summary.json copied
    back), and its ``icalkit eval`` episodes beside the CPU methods' on the tasks every one of them ran."""
    root = Path(args.finetune_dir[0])
    summary = json.loads((root / "train_summary.json").read_text())
    trained = trained_types(root)
    return {"gpu": {"config": args.config, "finetune_dir": str(root), "device": summary.get("device_name"),
                    "finetune": {k: summary.get(k) for k in (*TRAIN_KEYS, "steady_tokens_per_s", "peak_gpu_gb",
                                                             "micro_batch", "threads")},
                    "eval_dirs": args.eval_dirs, "trained_types": sorted(trained),
                    "methods": method_figures(args.eval_dirs, trained), "note": args.note}}


def main() -> None:
    phases = {"train": phase_train, "serve": phase_serve, "eval": phase_eval, "copies": phase_copies,
              "gradient": phase_gradient, "demo": phase_demo, "gpu": phase_gpu}
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("phase", nargs="?", default="train", choices=list(phases))
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--micro-batch", type=int, default=4)
    parser.add_argument("--grad-accum", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--n-per-type", type=int, default=6)
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--adapter", default=str(WORK / "lora16" / "adapter"))
    parser.add_argument("--requests", type=int, default=16)
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--pairs", default="", help="serve: a pairs.jsonl whose prompts (the planner's) are sent, "
                        "recorded as serving_planner_prompts; empty: short one-line prompts (serving)")
    parser.add_argument("--finetune-dir", nargs="*", default=[],
                        help="the recommended method's fine-tune first, then the other evaluated ones")
    parser.add_argument("--trained-types", nargs="*", default=[], help="eval, copies: the trained task types where "
                        "no --finetune-dir is given (methods without a fine-tuned model, grouped as the fine-tunes were)")
    parser.add_argument("--eval-dirs", nargs="+", default=["runs/ft_main/eval"])
    parser.add_argument("--memory-runs", nargs="*", default=[], help="eval, copies: icalkit ical out_dirs of the evaluated "
                        "memories to record (e.g. runs/memories/pruned_n5)")
    parser.add_argument("--oracle-method", default="copy_oracle_reground", help="eval: the oracle re-grounded copy "
                        "whose first programs the other methods' are compared with")
    parser.add_argument("--copy-method", default="copy_grounded", help="eval: the no-model method whose per-type "
                        "successes give the held-out SR of every other choice of held-out types")
    parser.add_argument("--next-oracle", default="", help="eval, copies: the silent_next_copy methods' twin with "
                        "oracle_goal_feedback (copy_next_oracle), whose episodes judge their decisions after a silent copy")
    parser.add_argument("--recommended", default="fine_tuned", help="method (name in the eval runs) the README recommends")
    parser.add_argument("--config", default="configs/finetune_rag.yaml", help="gradient: the recommended training config")
    parser.add_argument("--dataset", default="runs/finetune_rag/data/dataset", help="gradient: its pairs")
    parser.add_argument("--nograd-steps", type=int, default=0, help="gradient: also the prompt without gradient for this "
                        "many steps (its own schedule), e.g. as many as fit in the exact run's wall time")
    parser.add_argument("--key", default="copy_memories", help="copies: the results file's key to write")
    parser.add_argument("--demo-dir", default="runs/demo")
    parser.add_argument("--note", default="", help="gpu, copies: what the runs' own records leave out (recorded as given)")
    parser.add_argument("--demo-wall-s", type=float, default=None, help="`time make demo` of that folder, from scratch")
    args = parser.parse_args()

    def interrupt(signum, frame):  # noqa: ANN001, ARG001 - SIGTERM unwinds like Ctrl-C: a server it started is stopped
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)
    figures = phases[args.phase](args)
    print(json.dumps(merge(figures), indent=2))


if __name__ == "__main__":
    main()
