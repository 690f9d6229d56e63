"""Executor-checked pruning of a demonstration's program (icalkit/data_gen/prune.py), on the real
simulator and executor."""

from __future__ import annotations

import json

from icalkit.data_gen.demos import run_episode
from icalkit.data_gen.ical_steps import execute
from icalkit.data_gen.programs import trajectory_to_program
from icalkit.data_gen.prune import prune_program
from icalkit.envs.factory import make_env
from icalkit.envs.household.scene import build_world
from icalkit.envs.household.tasks.sampler import sample_tasks
from icalkit.envs.household.tasks.task import Task


def test_a_planted_detour_is_dropped_and_a_failing_program_is_kept():
    env = make_env("household", render_obs=False)
    task = sample_tasks(["Coffee"], 1, "train", 0)[0]
    ep, _ = run_episode(env, task, "expert", seed=1, keep_frames=False)
    ep = json.loads(ep.to_json())
    expert = trajectory_to_program(build_world(Task.from_dict(ep["task"])), ep["steps"])

    def solves(program: str) -> bool:
        return execute(env, task, program).success

    planted = 'sink = InteractionObject("SinkBasin")\nsink.go_to()\nsink.go_to()\n' + expert
    pruned, runs = prune_program(planted, solves)
    assert "SinkBasin" not in pruned and runs > 1 and solves(pruned)
    assert len(pruned.splitlines()) <= len(expert.splitlines())
    unfinished = "\n".join(expert.splitlines()[:2]) + "\n"  # an object and one action: the goal is not reached
    assert not solves(unfinished) and prune_program(unfinished, solves) == (unfinished, 1)
