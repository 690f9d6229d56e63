"""Collect demonstrations (expert and noisy human-like) and save them as datasets.

Layout of a demonstrations folder::

    episodes.jsonl        one JSON line per episode (task, steps, success, goal progress, ...)
    frames/<name>.npz     frames of one episode, uint8 (T+1, H, W, 3): before and after each step
    hf/episodes, hf/kinesthetic, hf/visual   Hugging Face datasets (save_to_disk)
    summary.{md,csv,png}  per-task-type table and plot

Collection is resumable: episodes already in ``episodes.jsonl`` are skipped, and an episode is
appended (and flushed) only once complete, so a kill loses at most the episode in flight.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from icalkit.data_gen.actor import Actor, SkillError
from icalkit.data_gen.expert import Expert
from icalkit.data_gen.noisy import NoisyActor
from icalkit.data_gen.results_file import drop_partial_line, read_jsonl
from icalkit.envs.household.tasks.task import Task

DEMONSTRATORS = ("expert", "noisy")


@dataclass
class Episode:
    """One recorded demonstration (frames are kept separately in ``frames``)."""

    episode_id: str
    task: dict
    demonstrator: str
    noise: float
    success: bool
    goal_satisfied: int
    goal_total: int
    n_steps: int
    n_failed: int
    reference_length: int | None
    mistakes: dict[str, int]
    error: str
    initial_objects: list[dict]
    steps: list[dict] = field(default_factory=list)
    frames_file: str | None = None

    def to_json(self) -> str:
        return json.dumps(self.__dict__)


def episode_name(episode_id: str) -> str:
    """File-system-safe name of an episode id."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", episode_id)


def run_episode(env, task: Task, demonstrator: str, noise: float = 0.2, seed: int = 0,
                keep_frames: bool = True) -> tuple[Episode, np.ndarray | None]:
    """Reset ``env`` on ``task`` and let a demonstrator solve it, recording every step.

    Args:
        env: a :class:`HouseholdEnv` (frames are recorded when it renders).
        task: the task instance.
        demonstrator: "expert" or "noisy".
        noise: mistake probability per opportunity (noisy demonstrator only).
        seed: seed of the noisy demonstrator's mistakes.
        keep_frames: return the frames array (T+1, H, W, 3).
    """
    if demonstrator not in DEMONSTRATORS:
        raise ValueError(f"unknown demonstrator {demonstrator!r}; available: {DEMONSTRATORS}")
    obs, info = env.reset(options={"task": task})
    world = env.world
    initial = world.metadata()
    frames = [obs["rgb"]] if keep_frames else []
    steps: list[dict] = []
    last = {"info": info}

    def step(action: str, target: str | None) -> tuple[bool, str]:
        before_text = steps[-1]["text_state_after"] if steps else obs["text_state"]
        o, _, _, _, inf = env.step({"action": action, "target": target})
        last["info"] = inf
        steps.append({"t": len(steps), "action": action, "target": target,
                      "success": bool(o["last_action_success"]), "error": o["error"],
                      "text_state": before_text, "text_state_after": o["text_state"]})
        if keep_frames:
            frames.append(o["rgb"])
        return bool(o["last_action_success"]), o["error"]

    actor = (Actor(world, step, env.max_steps) if demonstrator == "expert"
             else NoisyActor(world, step, noise=noise, seed=seed, max_steps=env.max_steps))
    error = ""
    try:
        Expert(actor).solve(task)
    except SkillError as exc:
        error = str(exc)
    progress = last["info"].get("goal_progress", {})
    for s in steps:
        s.pop("text_state_after")
    episode = Episode(
        episode_id=f"{task.task_id}/{demonstrator}", task=task.to_dict(), demonstrator=demonstrator,
        noise=noise if demonstrator == "noisy" else 0.0, success=bool(progress.get("success")),
        goal_satisfied=int(progress.get("satisfied", 0)), goal_total=int(progress.get("total", 0)),
        n_steps=len(steps), n_failed=sum(not s["success"] for s in steps),
        reference_length=task.reference_length, mistakes=dict(getattr(actor, "mistakes", {})),
        error=error, initial_objects=initial, steps=steps)
    return episode, (np.stack(frames) if keep_frames else None)


def read_episodes(path: str | Path) -> list[dict]:
    """Episodes of an ``episodes.jsonl`` file; a truncated last line (from a kill) is ignored."""
    return read_jsonl(path)


def load_frames(demo_dir: str | Path, episode: dict) -> np.ndarray:
    """Frames (T+1, H, W, 3) of a recorded episode."""
    if not episode.get("frames_file"):
        raise ValueError(f"episode {episode['episode_id']} was recorded without frames")
    with np.load(Path(demo_dir) / episode["frames_file"]) as data:
        return data["frames"]


def _step_rows(demo_dir: Path, episodes: list[dict], with_actions: bool) -> Iterator[dict]:
    from PIL import Image

    for ep in episodes:
        frames = load_frames(demo_dir, ep) if ep.get("frames_file") else None
        for s in ep["steps"]:
            row = {"episode_id": ep["episode_id"], "task_type": ep["task"]["task_type"], "t": s["t"],
                   "instruction": ep["task"]["instruction"]}
            if frames is not None:
                row["frame"] = Image.fromarray(frames[s["t"]])
                row["next_frame"] = Image.fromarray(frames[s["t"] + 1])
            if with_actions:
                row.update(action=s["action"], target=s["target"] or "", success=s["success"],
                           error=s["error"], text_state=s["text_state"])
            yield row


def export_hf(demo_dir: str | Path) -> dict[str, int]:
    """Write ``hf/episodes``, ``hf/kinesthetic`` (with actions) and ``hf/visual`` (frames only)."""
    import datasets

    demo_dir = Path(demo_dir)
    episodes = read_episodes(demo_dir / "episodes.jsonl")
    if not episodes:
        raise ValueError(f"{demo_dir} holds no episodes to export")
    rows = [{k: (json.dumps(v) if isinstance(v, (dict, list)) else v) for k, v in ep.items()}
            for ep in episodes]
    sizes = {"episodes": len(rows)}
    datasets.Dataset.from_list(rows).save_to_disk(str(demo_dir / "hf" / "episodes"))
    for view, with_actions in (("kinesthetic", True), ("visual", False)):
        data = list(_step_rows(demo_dir, episodes, with_actions))
        datasets.Dataset.from_list(data).save_to_disk(str(demo_dir / "hf" / view))
        sizes[view] = len(data)
    return sizes


def summarize(episodes: list[dict]) -> list[dict]:
    """Per task type and demonstrator: episodes, success rate, mean steps and extra steps."""
    groups: dict[tuple[str, str], list[dict]] = {}
    for ep in episodes:
        groups.setdefault((ep["task"]["task_type"], ep["demonstrator"]), []).append(ep)
    rows = []
    for (task_type, who), eps in sorted(groups.items()):
        extra = [ep["n_steps"] - ep["reference_length"] for ep in eps if ep.get("reference_length")]
        rows.append({"task_type": task_type, "demonstrator": who, "episodes": len(eps),
                     "success_rate": float(np.mean([ep["success"] for ep in eps])),
                     "mean_steps": float(np.mean([ep["n_steps"] for ep in eps])),
                     "mean_extra_steps": float(np.mean(extra)) if extra else 0.0,
                     "mean_failed_actions": float(np.mean([ep["n_failed"] for ep in eps]))})
    return rows


def collect(env, tasks: list[Task], out_dir: str | Path, demonstrators: tuple[str, ...] = DEMONSTRATORS,
            noise: float = 0.2, seed: int = 0, save_frames: bool = True, progress: bool = True,
            on_episode=None) -> list[dict]:
    """Record every (task, demonstrator) pair into ``out_dir``, skipping those already recorded.

    The expert runs first on each task so that its path length becomes the task's reference
    length for the other demonstrators. ``on_episode(episode_dict)`` is called after each new one.
    Returns all episodes of the folder (old and new).
    """
    from tqdm.auto import tqdm

    out = Path(out_dir)
    (out / "frames").mkdir(parents=True, exist_ok=True)
    jsonl = out / "episodes.jsonl"
    episodes = read_episodes(jsonl)
    drop_partial_line(jsonl)
    done = {ep["episode_id"]: ep for ep in episodes}
    order = sorted(demonstrators, key=lambda d: d != "expert")
    bar = tqdm(total=len(tasks) * len(order), disable=not progress, desc="demos")
    with open(jsonl, "a") as fh:
        for k, task in enumerate(tasks):
            expert_id = f"{task.task_id}/expert"
            if expert_id in done:
                task.reference_length = done[expert_id]["n_steps"]
            for who in order:
                bar.update(1)
                eid = f"{task.task_id}/{who}"
                if eid in done:
                    continue
                ep, frames = run_episode(env, task, who, noise, seed * 100_003 + k, save_frames and env.render_obs)
                if who == "expert":
                    task.reference_length = ep.n_steps
                    ep.reference_length = ep.n_steps
                    ep.task["reference_length"] = ep.n_steps
                if frames is not None:
                    ep.frames_file = f"frames/{episode_name(eid)}.npz"
                    np.savez_compressed(out / ep.frames_file, frames=frames)
                fh.write(ep.to_json() + "\n")
                fh.flush()
                record = json.loads(ep.to_json())
                episodes.append(record)
                done[eid] = record
                bar.set_postfix(success=f"{np.mean([e['success'] for e in episodes]):.2f}")
                if on_episode is not None:
                    on_episode(record)
    bar.close()
    return episodes
