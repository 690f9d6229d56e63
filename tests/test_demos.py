"""Demonstrations: the expert solves every task type, the noisy demonstrator errs but mostly
finishes, collection resumes after a kill, and datasets come out in both views."""

import json
from pathlib import Path

import pytest

from icalkit.data_gen.demos import collect, export_hf, load_frames, read_episodes, run_episode, summarize
from icalkit.data_gen.expert import expert_actions
from icalkit.envs.household.env import HouseholdEnv
from icalkit.envs.household.tasks.registry import TASK_TYPES
from icalkit.envs.household.tasks.sampler import sample_task


@pytest.fixture(scope="module")
def env() -> HouseholdEnv:
    return HouseholdEnv(render_obs=False)


@pytest.mark.parametrize("task_type", sorted(TASK_TYPES))
def test_expert_solves_every_task_type(env: HouseholdEnv, task_type: str) -> None:
    for split, index in (("train", 0), ("train", 1), ("valid_unseen", 0)):
        task = sample_task(task_type, index, split, seed=7)
        episode, _ = run_episode(env, task, "expert", keep_frames=False)
        assert episode.success, f"{task.task_id}: {episode.error} ({episode.goal_satisfied}/{episode.goal_total})"
        assert episode.n_failed == 0, f"{task.task_id}: the expert made a failed action"


def test_expert_actions_replay_in_env(env: HouseholdEnv) -> None:
    task = sample_task("Plate Of Toast", 0, "valid_seen", seed=1)
    actions = expert_actions(task)
    env.reset(options={"task": task})
    for action in actions:
        _, _, terminated, truncated, info = env.step(action)
    assert info["goal_progress"]["success"] and terminated and not truncated


def test_noisy_demonstrator_makes_mistakes_and_mostly_succeeds(env: HouseholdEnv) -> None:
    results = []
    for k, task_type in enumerate(["Coffee", "Boil X", "Plate Of Toast", "Water Plant", "Salad", "pick_cool_then_place"]):
        task = sample_task(task_type, 0, "train", seed=3)
        expert, _ = run_episode(env, task, "expert", keep_frames=False)
        noisy, _ = run_episode(env, task, "noisy", noise=0.4, seed=k, keep_frames=False)
        results.append((expert.n_steps, noisy))
    assert sum(n.success for _, n in results) >= 5
    assert sum(sum(n.mistakes.values()) for _, n in results) >= 6
    assert sum(n.n_steps for _, n in results) > sum(e for e, _ in results)  # detours cost steps
    kinds = set().union(*(n.mistakes for _, n in results))
    assert {"fidget", "wrong_object"} <= kinds


def test_noise_zero_equals_expert(env: HouseholdEnv) -> None:
    task = sample_task("Coffee", 1, "train", seed=0)
    expert, _ = run_episode(env, task, "expert", keep_frames=False)
    noisy, _ = run_episode(env, task, "noisy", noise=0.0, keep_frames=False)
    assert [s["action"] for s in noisy.steps] == [s["action"] for s in expert.steps]


def test_bad_demonstrator_and_noise(env: HouseholdEnv) -> None:
    task = sample_task("Coffee", 0, "train")
    with pytest.raises(ValueError, match="unknown demonstrator 'lazy'"):
        run_episode(env, task, "lazy")
    with pytest.raises(ValueError, match="noise must be in"):
        run_episode(env, task, "noisy", noise=1.5)


def test_collect_resumes_and_exports(tmp_path: Path) -> None:
    env = HouseholdEnv(frame_size=64, render_obs=True)
    tasks = [sample_task("Coffee", i, "train", seed=5) for i in range(2)]
    first = collect(env, tasks[:1], tmp_path, progress=False)
    assert len(first) == 2 and first[0]["demonstrator"] == "expert"
    # a kill mid-write leaves a partial line: it is dropped, the rest is kept
    with open(tmp_path / "episodes.jsonl", "a") as fh:
        fh.write('{"episode_id": "train/coffee/partial')
    seen = []
    episodes = collect(env, tasks, tmp_path, progress=False, on_episode=lambda ep: seen.append(ep["episode_id"]))
    assert len(episodes) == 4 and len(seen) == 2  # only the new task was run
    assert [json.loads(line)["episode_id"] for line in (tmp_path / "episodes.jsonl").read_text().splitlines()] == \
        [ep["episode_id"] for ep in episodes]
    noisy = next(ep for ep in episodes if ep["demonstrator"] == "noisy")
    assert noisy["reference_length"] == next(ep["n_steps"] for ep in episodes
                                             if ep["demonstrator"] == "expert" and ep["task"]["task_id"] == noisy["task"]["task_id"])
    frames = load_frames(tmp_path, noisy)
    assert frames.shape == (noisy["n_steps"] + 1, 64, 64, 3)
    sizes = export_hf(tmp_path)
    import datasets

    kin = datasets.load_from_disk(str(tmp_path / "hf" / "kinesthetic"))
    vis = datasets.load_from_disk(str(tmp_path / "hf" / "visual"))
    assert sizes["kinesthetic"] == len(kin) == sum(ep["n_steps"] for ep in episodes)
    assert "action" in kin.column_names and "action" not in vis.column_names
    assert kin[0]["frame"].size == (64, 64)
    rows = summarize(read_episodes(tmp_path / "episodes.jsonl"))
    assert {r["demonstrator"] for r in rows} == {"expert", "noisy"}


def test_corrupt_episode_file_is_reported(tmp_path: Path) -> None:
    (tmp_path / "episodes.jsonl").write_text('{"broken\n{"episode_id": "x"}\n')
    with pytest.raises(ValueError, match="line 1 is not valid JSON"):
        read_episodes(tmp_path / "episodes.jsonl")
