"""Fixtures of the copy planner's tests (tests/test_copy_choice.py, tests/test_copy_next.py,
tests/test_mention_grounding.py): the bundled MiniLM embedder and a memory of real Coffee
demonstrations (their expert programs) plus one that fails anywhere."""

from __future__ import annotations

import json

import pytest

from icalkit.data_gen.demos import run_episode
from icalkit.data_gen.programs import trajectory_to_program
from icalkit.envs.factory import make_env
from icalkit.envs.household.scene import build_world
from icalkit.envs.household.tasks.sampler import sample_tasks
from icalkit.envs.household.tasks.task import Task
from icalkit.memory.example import Example
from icalkit.memory.example_memory import ExampleMemory

BROKEN = 'mug = InteractionObject("Mug")\nmug.slice()\n'  # a mug cannot be sliced: fails in every room


@pytest.fixture(scope="module")
def embedder():
    from icalkit.memory.embed import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder()


def expert_program(env, task) -> str:
    ep, _ = run_episode(env, task, "expert", seed=1, keep_frames=False)
    steps = json.loads(ep.to_json())["steps"]
    return trajectory_to_program(build_world(Task.from_dict(json.loads(ep.to_json())["task"])), steps)


@pytest.fixture(scope="module")
def coffee_memory(tmp_path_factory, embedder):
    """Three Coffee demonstrations of train tasks (their expert programs) and one that fails anywhere."""
    env = make_env("household", render_obs=False)
    tasks = sample_tasks(["Coffee"], 4, "train", 0)
    examples = [Example(task_id=t.task_id, task_type="Coffee", instruction=t.instruction,
                        revised_program=expert_program(env, t) if i < 3 else BROKEN) for i, t in enumerate(tasks)]
    mem = ExampleMemory(tmp_path_factory.mktemp("mem") / "coffee.db", embedder)
    mem.add_many(examples)
    return mem, examples, env


def recorded_example(env, task_type: str, n: int, suffix: str) -> tuple[Example, dict]:
    """The expert program of the train task of ``task_type`` (of the first ``n``) whose id ends with
    ``suffix`` as a demonstration, with its dialogue, start state and the changes it made (what the
    end-state check reads); and that start state."""
    from icalkit.agents.context import full_state
    from icalkit.data_gen.ical_steps import execute

    own = next(t for t in sample_tasks([task_type], n, "train", 0) if t.task_id.endswith(suffix))
    program = expert_program(env, own)
    env.reset(options={"task": own})
    start = full_state(env.sim.world)
    made = execute(env, own, program)
    assert made.success
    return Example(task_id=own.task_id, task_type=own.task_type, instruction=own.instruction,
                   dialogue=[f"{s}: {u}" for s, u in own.dialogue], revised_program=program,
                   initial_state=start, observed_changes=made.changes), start


def recorded_memory(task_type: str, n: int, suffix: str, path, embedder) -> tuple[ExampleMemory, dict]:
    """A memory of one demonstration (:func:`recorded_example`) and its start state."""
    example, start = recorded_example(make_env("household", render_obs=False), task_type, n, suffix)
    mem = ExampleMemory(path, embedder)
    mem.add_many([example])
    return mem, start
