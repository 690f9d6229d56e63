"""Inverse dynamics model on this CPU: held-out accuracy, training and labelling speed, programs.

Parts (``--parts``, default all; each updates its own keys of ``benchmarks/results/idm.json``):

* ``accuracy``: the trained CPU model (``--model``, default ``runs/idm/train/best``) on held-out
  scene layouts (``--data``, split "heldout"; ``--max-pairs`` evenly spaced pairs): action and
  object accuracy, the number of pairs, and the training time from the run's checkpoint.
* ``speed``: training samples/s (``train_one_epoch`` through accelerate, real pairs) and
  labelling pairs/s (``predict_pairs`` over an episode's frames) of the CPU configuration,
  eager fp32 vs. channels-last, bf16 autocast and ``torch.compile``, measured in interleaved
  rounds in the same run (median per variant) and printed as ratios against eager fp32.
* ``programs``: ``label_demos`` on held-out episodes: label accuracy against the withheld true
  actions and the executed success of programs from IDM labels vs. from the true actions.
* ``hitl``: ICAL's visual vs. kinesthetic comparison on the same held-out episodes: ``icalkit ical``
  (raw program + simulated-feedback human-in-the-loop revisions with the default model,
  ``abstraction=false``) on programs from IDM labels vs. on programs from the true actions; the
  yield (learned examples / demonstrations) of each, the LLM calls and the wall time. Labelled
  episodes and ICAL runs are kept under ``--hitl-out`` and resumed.
* ``ceiling``: what the frames can tell at all, from the held-out episodes (``--demos``) replayed
  with their true steps: per action, the interaction pairs whose target instance covers no pixel
  of either frame at the data set's size, and pairs whose two frames are identical.

Usage: ``python benchmarks/bench_idm.py [--parts speed,accuracy,programs] [--threads 2]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch
import yaml

RESULTS = Path(__file__).parent / "results" / "idm.json"
VARIANTS = ("eager_fp32", "channels_last", "bf16_autocast", "compile")


def _update(results: dict) -> None:
    old = json.loads(RESULTS.read_text()) if RESULTS.is_file() else {}
    old.update(results)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(old, indent=2) + "\n")


def accuracy(args) -> dict:
    from accelerate import Accelerator
    from torch.utils.data import DataLoader

    from icalkit.data_gen.idm_data import FramePairs
    from icalkit.models.idm.modeling_idm import IDMCriterion, InverseDynamicsModel
    from icalkit.training.idm_engine import evaluate

    model = InverseDynamicsModel.from_pretrained(args.model)
    data = FramePairs(args.data, "heldout", args.max_pairs)
    model.config.check_vocabulary(data.meta["actions"], data.meta["objects"], f"dataset {args.data}")
    acc = Accelerator(cpu=True)
    res = evaluate(model, IDMCriterion(), DataLoader(data, batch_size=64), acc, model.config.no_object_index,
                   progress=False)
    state_file = Path(args.model).parent / "checkpoint" / "trainer_state.json"
    state = json.loads(state_file.read_text()) if state_file.is_file() else {}
    run_cfg = Path(args.model).parent / "config.yaml"
    train_cfg = (yaml.safe_load(run_cfg.read_text()) or {}).get("train", {}) if run_cfg.is_file() else {}
    seen = None
    if train_cfg.get("pairs_per_epoch") and state:
        seen = state["epoch"] * train_cfg["pairs_per_epoch"] + state["batch"] * train_cfg["batch_size"]
    # baseline in the same run: always the most frequent training action / object class
    a_train = torch.bincount(torch.as_tensor(FramePairs(args.data, "train").actions)).argmax()
    o_train = torch.bincount(torch.as_tensor(FramePairs(args.data, "train").objects)).argmax()
    majority_a = (data.actions == a_train).float().mean().item()
    majority_o = (data.objects == o_train).float().mean().item()
    out = {"action_accuracy": res.action_accuracy, "object_accuracy": res.object_accuracy,
           "interaction_object_accuracy": res.interaction_object_accuracy, "pairs": res.pairs,
           "interaction_pairs": res.interaction_pairs, "heldout_pairs_total": data.meta["pairs_per_split"]["heldout"],
           "heldout_layouts": data.meta["layouts_per_split"]["heldout"],
           "train_pairs": data.meta["pairs_per_split"]["train"],
           "per_action_accuracy": res.per_class_accuracy(model.config.actions, "action"),
           "majority_action_accuracy": majority_a, "majority_object_accuracy": majority_o,
           "training_wall_s": state.get("train_s"), "training_cpu_s": state.get("train_cpu_s"),
           "training_samples_seen": seen, "epochs": state.get("epoch"),
           "model": str(args.model), "config": "configs/idm.yaml"}
    print(f"held-out layouts: action accuracy {res.action_accuracy:.3f}, object accuracy "
          f"{res.object_accuracy:.3f} (interactions only {res.interaction_object_accuracy:.3f}) "
          f"on {res.pairs} pairs; trained {state.get('train_s', 0) / 60:.1f} min; always the most frequent "
          f"class: {majority_a:.3f} / {majority_o:.3f}")
    return {"accuracy": out, "action_accuracy": res.action_accuracy, "object_accuracy": res.object_accuracy,
            "pairs": res.pairs}


def _model(variant: str, cfg):
    from icalkit.models.idm.modeling_idm import InverseDynamicsModel

    torch.manual_seed(0)
    model = InverseDynamicsModel(cfg)
    if variant == "channels_last":
        model = model.to(memory_format=torch.channels_last)
    if variant == "compile":
        model = torch.compile(model)
    return model


def _train_rate(variant: str, cfg, data, batches: int, batch_size: int) -> float:
    from accelerate import Accelerator
    from accelerate.state import AcceleratorState
    from torch.utils.data import DataLoader

    from icalkit.models.idm.modeling_idm import IDMCriterion
    from icalkit.training.idm_engine import train_one_epoch

    AcceleratorState._reset_state(reset_partial_state=True)  # a new precision per variant, in one process
    acc = Accelerator(cpu=True, mixed_precision="bf16" if variant == "bf16_autocast" else "no")
    model = _model(variant, cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model, opt = acc.prepare(model, opt)
    crit = IDMCriterion()
    warm = DataLoader(data, batch_size=batch_size, sampler=list(range(batch_size)))
    train_one_epoch(model, crit, warm, opt, acc, progress=False)  # compile / first-call costs
    loader = DataLoader(data, batch_size=batch_size, sampler=list(range(batches * batch_size)))
    start = time.perf_counter()
    train_one_epoch(model, crit, loader, opt, acc, progress=False)
    return batches * batch_size / (time.perf_counter() - start)


def _label_rate(variant: str, cfg, frames, reps: int = 1) -> float:
    from icalkit.data_gen.label import predict_pairs

    model = _model(variant, cfg).eval()
    dtype = torch.bfloat16 if variant == "bf16_autocast" else None
    predict_pairs(model, frames[:65], batch_size=64, autocast_dtype=dtype)  # warm-up (compile)
    start = time.perf_counter()
    for _ in range(reps):
        predict_pairs(model, frames, batch_size=64, autocast_dtype=dtype)
    return reps * (len(frames) - 1) / (time.perf_counter() - start)


def speed(args) -> dict:
    from icalkit.config import load_config
    from icalkit.data_gen.idm_data import FramePairs
    from icalkit.training.train_idm import Config

    cfg = load_config(Config, "configs/idm.yaml").model
    data = FramePairs(args.data, "train")
    cfg.actions, cfg.objects = list(data.meta["actions"]), list(data.meta["objects"])
    frames = data.frames[: args.label_pairs + 1].numpy()
    train = {v: [] for v in VARIANTS}
    label = {v: [] for v in VARIANTS}
    errors = {}
    for r in range(args.rounds):
        for v in VARIANTS:
            if v in errors:
                continue
            try:
                train[v].append(_train_rate(v, cfg, data, args.batches, args.batch_size))
                label[v].append(_label_rate(v, cfg, frames))
            except Exception as exc:  # e.g. torch.compile without a working C++ toolchain
                errors[v] = f"{type(exc).__name__}: {str(exc)[:300]}"
                print(f"{v}: failed ({errors[v]})", file=sys.stderr)
                continue
            print(f"round {r} {v}: train {train[v][-1]:.1f} samples/s, label {label[v][-1]:.1f} pairs/s")
    med_t = {v: statistics.median(x) for v, x in train.items() if x}
    med_l = {v: statistics.median(x) for v, x in label.items() if x}
    base_t, base_l = med_t["eager_fp32"], med_l["eager_fp32"]
    rows = {v: {"train_samples_per_s": med_t[v], "train_ratio_vs_eager": med_t[v] / base_t,
                "label_pairs_per_s": med_l[v], "label_ratio_vs_eager": med_l[v] / base_l} for v in med_t}
    for v, row in rows.items():
        print(f"{v:14s} train {row['train_samples_per_s']:6.1f} samples/s ({row['train_ratio_vs_eager']:.2f}x)  "
              f"label {row['label_pairs_per_s']:6.1f} pairs/s ({row['label_ratio_vs_eager']:.2f}x)")
    return {"speed": {"variants": rows, "per_round": {"train": train, "label": label}, "errors": errors, "rounds": args.rounds, "train_batches": args.batches,
                      "batch_size": args.batch_size, "label_pairs": args.label_pairs,
                      "torch": torch.__version__, "threads": torch.get_num_threads(),
                      "load_average": os.getloadavg()[0]}}


def programs(args) -> dict:
    import shutil
    import tempfile

    from icalkit.data_gen.label import label_demos
    from icalkit.models.idm.modeling_idm import InverseDynamicsModel

    model = InverseDynamicsModel.from_pretrained(args.model)
    out = Path(tempfile.mkdtemp(prefix="bench_idm_"))
    start = time.perf_counter()
    summary = label_demos(model, args.demos, out, limit=args.episodes, progress=False)
    summary["wall_s"] = time.perf_counter() - start
    shutil.copy(out / "episodes.jsonl", RESULTS.parent / "idm_labelled_sample.jsonl") if args.keep else None
    shutil.rmtree(out, ignore_errors=True)
    print(f"labelled {summary['episodes']} held-out episodes ({summary['pairs']} pairs): action acc "
          f"{summary['action_accuracy']:.3f}, object acc {summary['object_accuracy']:.3f}; executed program "
          f"success from IDM labels {summary.get('program_success_idm', float('nan')):.2f} vs true actions "
          f"{summary.get('program_success_true', float('nan')):.2f}")
    return {"programs": summary | {"demos": str(args.demos)}}


def hitl(args) -> dict:
    from bench_ical import run_once  # the ICAL loop exactly as `icalkit ical` runs it

    from icalkit.commands.ical import Config
    from icalkit.config import from_dict
    from icalkit.data_gen.ical_report import summarize
    from icalkit.data_gen.label import label_demos
    from icalkit.models.idm.modeling_idm import InverseDynamicsModel

    out = Path(args.hitl_out)
    labelled = out / "labelled"
    if not (labelled / "label_summary.json").is_file():
        label_demos(InverseDynamicsModel.from_pretrained(args.model), args.demos, labelled, limit=args.episodes,
                    progress=False)
    label = json.loads((labelled / "label_summary.json").read_text())
    sides = {}
    for side, demos, source in (("true_actions", args.demos, "kinesthetic"), ("idm_labels", labelled, "visual-idm")):
        cfg = from_dict(Config, {
            "demos_dir": str(demos), "out_dir": str(out / side), "limit": args.episodes, "abstraction": False,
            "demonstrators": ["expert", "noisy"], "source": source, "torch_threads": args.threads,
            "env": {"render": False}, "memory": {"path": str(out / side / "memory.db"), "image_embedder": {"kind": "none"}},
            "llm": {"cache_path": str(out / "llm_cache.sqlite"), "device": "cpu"},
            "wandb": {"mode": "disabled", "enabled": False}})
        records, wall_s, memory_size = run_once(cfg)
        sides[side] = summarize(records) | {"run_wall_s": wall_s, "memory_size": memory_size}
        print(f"ICAL (abstraction=false, HITL) on {side}: learned {sides[side]['learned']}/{sides[side]['demos']}, "
              f"raw replay {sides[side]['raw_replay_success_rate']:.2f}, {sides[side]['llm_calls']} LLM calls")
    return {"hitl": {"episodes": args.episodes, "demos": str(args.demos), "model": args.model,
                     "settings": "icalkit ical abstraction=false n_feedbacks=5, simulated feedback, default LLM",
                     "label_action_accuracy": label["action_accuracy"], "label_object_accuracy": label["object_accuracy"],
                     "yield_idm": sides["idm_labels"]["yield"], "yield_true": sides["true_actions"]["yield"],
                     **sides}}


def ceiling(args) -> dict:
    from icalkit.data_gen.demos import read_episodes
    from icalkit.data_gen.idm_data import load_episode_frames, read_meta, resize_frames
    from icalkit.envs.household.render import render_frame
    from icalkit.envs.household.scene import build_world
    from icalkit.envs.household.simulator import Simulator
    from icalkit.envs.household.tasks.task import Task

    size = read_meta(args.data)["image_size"]
    demos = Path(args.demos)
    rows: dict[str, dict[str, int]] = {}
    pairs = identical = reproduced = 0
    for ep in read_episodes(demos / "episodes.jsonl"):
        frames = resize_frames(load_episode_frames(demos / ep["frames_file"], len(ep["steps"])), size)
        sim = Simulator(build_world(Task.from_dict(ep["task"])))
        view = render_frame(sim.world, size)
        for s in ep["steps"]:
            before = view
            sim.step(s["action"], target=s["target"])
            view = render_frame(sim.world, size)
            pairs += 1
            reproduced += bool(np.array_equal(before[0], frames[s["t"]]))
            same = bool(np.array_equal(frames[s["t"]], frames[s["t"] + 1]))
            identical += same
            if not s["target"]:
                continue
            shown = any(s["target"] in ids and (seg == ids.index(s["target"]) + 1).any() for _, seg, ids in (before, view))
            row = rows.setdefault(s["action"], {"pairs": 0, "target_not_in_either_frame": 0, "identical_frames": 0})
            row["pairs"] += 1
            row["target_not_in_either_frame"] += not shown
            row["identical_frames"] += same
    hidden = sum(r["target_not_in_either_frame"] for r in rows.values())
    inter = sum(r["pairs"] for r in rows.values())
    print(f"ceiling: {hidden}/{inter} interaction targets in neither frame at {size}px; {identical}/{pairs} pairs "
          f"with identical frames; replay reproduced {reproduced}/{pairs} recorded frames")
    return {"ceiling": {"image_size": size, "pairs": pairs, "identical_frame_pairs": identical,
                        "interaction_pairs": inter, "target_not_in_either_frame": hidden,
                        "replay_reproduced_frames": reproduced, "per_action": rows, "demos": str(demos)}}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--parts", default="accuracy,speed,programs")
    p.add_argument("--model", default="runs/idm/train/best")
    p.add_argument("--data", default="runs/idm/data")
    p.add_argument("--demos", default="runs/idm/demos_unseen")
    p.add_argument("--max-pairs", type=int, default=3000)
    p.add_argument("--episodes", type=int, default=24)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--batches", type=int, default=4)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--label-pairs", type=int, default=256)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--hitl-out", default="runs/idm/bench_hitl")
    p.add_argument("--keep", action="store_true", help="keep the labelled episodes next to the results")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    results = {"benchmark": "idm", "python": platform.python_version(), "cores": os.cpu_count()}
    for part in args.parts.split(","):
        t0 = time.perf_counter()
        results.update({"accuracy": accuracy, "speed": speed, "programs": programs, "hitl": hitl,
                        "ceiling": ceiling}[part](args))
        results[f"{part}_bench_wall_s"] = time.perf_counter() - t0
        _update(results)
    print(f"wrote {RESULTS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
