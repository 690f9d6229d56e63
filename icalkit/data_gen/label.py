"""Label visual demonstrations (frames only) with a trained IDM and turn them into noisy programs.

For every consecutive frame pair of an episode the IDM predicts the primitive action and the
target's object class. Classes are grounded to instances by replaying the labelled actions on
the episode's initial world: the instance of the predicted class that the simulator's
instance segmentation shows closest to the image centre (else the nearest instance of that
class); this uses the simulator's segmentation, recorded as ``grounding`` in the summary.

Output folder (readable by ``icalkit ical demos_dir=...`` unchanged)::

    episodes.jsonl   the episodes with ``steps`` replaced by the IDM's labels ({t, action, target}),
                     ``source: visual-idm`` and the withheld true steps under ``true_steps``
    label_summary.json   label accuracy against the true actions, programs' executed success

Labelling is resumable: episodes already in ``episodes.jsonl`` are skipped.
"""

from __future__ import annotations

import copy
import json
import time
from pathlib import Path

import numpy as np
import torch

from icalkit.data_gen.demos import read_episodes
from icalkit.data_gen.idm_data import (
    layout_of,
    load_episode_frames,
    object_class,
    resize_frames,
    to_model_input,
)
from icalkit.data_gen.programs import VISUAL_IDM
from icalkit.data_gen.results_file import drop_partial_line
from icalkit.envs.household.actions import MOVES
from icalkit.models.idm.configuration_idm import NO_OBJECT

GROUNDING = "simulator segmentation of the replayed labels"


@torch.no_grad()
def predict_pairs(model, frames: np.ndarray, batch_size: int = 64, autocast_dtype: torch.dtype | None = None,
                  source: str = "frames") -> tuple[list[str], list[str]]:
    """IDM predictions (action names, object class names) for every consecutive pair of ``frames``.

    Args:
        frames: uint8 (T + 1, H, W, 3); resized to the model's image size if they differ.
        source: named in errors (e.g. the frames file).

    Raises:
        ValueError: frames are not uint8 RGB (T + 1 >= 2, H, W, 3).
    """
    if frames.ndim != 4 or frames.shape[-1] != 3 or frames.dtype != np.uint8 or len(frames) < 2:
        raise ValueError(f"{source}: expected uint8 frames (T+1 >= 2, H, W, 3), got {frames.dtype} {frames.shape}")
    cfg = model.config
    frames = torch.from_numpy(resize_frames(frames, cfg.image_size))
    model.eval()
    actions, objects = [], []
    for s in range(0, len(frames) - 1, batch_size):
        idx = torch.arange(s, min(s + batch_size, len(frames) - 1))
        pairs = torch.stack([frames[idx], frames[idx + 1]], dim=1)
        with torch.autocast("cpu", dtype=autocast_dtype, enabled=autocast_dtype is not None):
            out = model(to_model_input(pairs))
        actions += [cfg.actions[k] for k in out["action_logits"].argmax(-1).tolist()]
        objects += [cfg.objects[k] for k in out["object_logits"].argmax(-1).tolist()]
    return actions, objects


def ground(sim, object_class_name: str, size: int = 64) -> str | None:
    """Instance of ``object_class_name`` shown nearest the centre of the current view, else the
    nearest instance of that class in the world, else None."""
    from icalkit.envs.household.reach import reach_distance
    from icalkit.envs.household.render import render_frame

    world = sim.world
    _, seg, ids = render_frame(world, size)
    ks = [k + 1 for k, oid in enumerate(ids) if world.objects[oid].object_type == object_class_name]
    if ks:
        ys, xs = np.nonzero(np.isin(seg, ks))
        if len(xs):
            c = (size - 1) / 2
            best = int(np.argmin((xs - c) ** 2 + (ys - c) ** 2))
            return ids[int(seg[ys[best], xs[best]]) - 1]
    same = [o for o in world.objects.values() if o.object_type == object_class_name]
    if not same:
        return None
    return min(same, key=lambda o: reach_distance(o, world.agent)).object_id


def label_episode(model, episode: dict, frames: np.ndarray, batch_size: int = 64) -> list[dict]:
    """Labelled steps ``{t, action, target}`` of one episode (targets grounded by replay)."""
    from icalkit.envs.household.scene import build_world
    from icalkit.envs.household.simulator import Simulator
    from icalkit.envs.household.tasks.task import Task

    actions, classes = predict_pairs(model, frames, batch_size, source=str(episode.get("frames_file")))
    sim = Simulator(build_world(Task.from_dict(episode["task"])))
    steps = []
    for t, (action, cls) in enumerate(zip(actions, classes, strict=True)):
        target = None
        if action not in MOVES and action != "Stop" and cls != NO_OBJECT:
            target = ground(sim, cls)
        sim.step(action, target=target)
        steps.append({"t": t, "action": action, "target": target, "predicted_class": cls})
    return steps


def label_accuracy(true_steps: list[dict], labelled: list[dict], types: dict[str, str]) -> dict[str, int]:
    """Counts of correct actions, object classes, both, and exact instances against the true steps."""
    out = {"pairs": len(true_steps), "action": 0, "object": 0, "both": 0, "instance": 0}
    for s, p in zip(true_steps, labelled, strict=True):
        a_ok = s["action"] == p["action"]
        o_ok = object_class(s["target"], types) == p["predicted_class"]
        out["action"] += a_ok
        out["object"] += o_ok
        out["both"] += a_ok and o_ok
        out["instance"] += a_ok and (s["target"] or None) == p["target"]
    return out


def program_success(env, episode: dict, steps: list[dict]) -> tuple[bool, str]:
    """Executed success of the program converted from ``steps`` (ICAL's raw replay), and the program."""
    from icalkit.data_gen.ical_steps import execute
    from icalkit.data_gen.programs import trajectory_to_program
    from icalkit.envs.household.scene import build_world
    from icalkit.envs.household.tasks.task import Task

    task = Task.from_dict(episode["task"])
    plain = [{"action": s["action"], "target": s["target"]} for s in steps]
    try:
        program = trajectory_to_program(build_world(task), plain, reach=True)  # as ICAL converts visual demos
    except ValueError:
        return False, ""
    return bool(program.strip()) and execute(env, task, program).success, program


def label_demos(model, demos_dir: str | Path, out_dir: str | Path, demonstrators: list[str] | None = None,
                limit: int | None = None, batch_size: int = 64, evaluate_programs: bool = True,
                progress: bool = True) -> dict:
    """Label every episode of ``demos_dir`` with frames; write ``out_dir/episodes.jsonl`` and a summary.

    Episodes whose frames file is missing or corrupt are skipped with a warning and counted.
    Returns the summary (also written to ``label_summary.json``).
    """
    import warnings

    from tqdm.auto import tqdm

    from icalkit.envs.factory import make_env

    demos_dir, out = Path(demos_dir), Path(out_dir)
    path = demos_dir / "episodes.jsonl"
    if not path.is_file():
        raise FileNotFoundError(f"no demonstrations at {path}; collect them with `icalkit demos out_dir={demos_dir}`")
    episodes = [ep for ep in read_episodes(path) if demonstrators is None or ep["demonstrator"] in demonstrators]
    episodes = episodes[:limit] if limit else episodes
    if not episodes:
        raise ValueError(f"{path} has no episodes of demonstrators {demonstrators}")
    out.mkdir(parents=True, exist_ok=True)
    jsonl = out / "episodes.jsonl"
    drop_partial_line(jsonl)
    done = {ep["episode_id"] for ep in read_episodes(jsonl)} if jsonl.is_file() else set()
    env = make_env("household", render_obs=False) if evaluate_programs else None
    skipped, wall, pairs = [], 0.0, 0
    with open(jsonl, "a") as fh:
        for ep in tqdm(episodes, desc="label", disable=not progress):
            if ep["episode_id"] in done:
                continue
            try:
                if not ep.get("frames_file"):
                    raise ValueError(f"episode {ep['episode_id']} in {path} was recorded without frames")
                frames = load_episode_frames(demos_dir / ep["frames_file"], len(ep["steps"]))
            except ValueError as exc:
                warnings.warn(f"skipping: {exc}", stacklevel=2)
                skipped.append(str(exc))
                continue
            t0 = time.perf_counter()
            steps = label_episode(model, ep, frames, batch_size)
            wall += time.perf_counter() - t0
            pairs += len(steps)
            types = {o["objectId"]: o["objectType"] for o in ep.get("initial_objects", [])}
            record = copy.deepcopy(ep)
            record.update(steps=steps, true_steps=ep["steps"], source=VISUAL_IDM,
                          source_frames=str((demos_dir / ep["frames_file"]).resolve()), frames_file=None,
                          layout=layout_of(ep["task"])[0], label_counts=label_accuracy(ep["steps"], steps, types))
            if env is not None:
                record["program_success_idm"] = program_success(env, ep, steps)[0]
                record["program_success_true"] = program_success(env, ep, ep["steps"])[0]
            fh.write(json.dumps(record) + "\n")
            fh.flush()
    summary = summarize_labels(read_episodes(jsonl))
    summary.update(skipped_episodes=len(skipped), skipped=skipped[:20], grounding=GROUNDING,
                   new_pairs=pairs, new_pairs_per_s=pairs / wall if wall else None)
    (out / "label_summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def summarize_labels(records: list[dict]) -> dict:
    """Label accuracy (pairs-weighted) and executed program success of labelled episodes."""
    tot = {k: sum(r["label_counts"][k] for r in records) for k in ("pairs", "action", "object", "both", "instance")}
    n = max(tot["pairs"], 1)
    out = {"episodes": len(records), "pairs": tot["pairs"], "action_accuracy": tot["action"] / n,
           "object_accuracy": tot["object"] / n, "action_and_object_accuracy": tot["both"] / n,
           "instance_accuracy": tot["instance"] / n}
    with_prog = [r for r in records if "program_success_idm" in r]
    if with_prog:
        out["program_success_idm"] = float(np.mean([r["program_success_idm"] for r in with_prog]))
        out["program_success_true"] = float(np.mean([r["program_success_true"] for r in with_prog]))
        out["programs"] = len(with_prog)
    return out
