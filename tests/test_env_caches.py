"""Household gym env speed paths: every cached answer equals a computation from scratch; start-world
copies, state ids, line of sight, observation keys and vector envs."""

from __future__ import annotations

import copy
import random

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from test_simulator import KITCHEN_NEEDS, do, first, kitchen

from icalkit.envs.household.actions import ACTIONS
from icalkit.envs.household.env import HouseholdEnv
from icalkit.envs.household.reach import reach_distance
from icalkit.envs.household.scene import generate_scene
from icalkit.envs.household.simulator import Simulator


def _fresh_visible(sim: Simulator) -> list[str]:
    """Visible ids computed without any memo (no pose cache, no layout tables)."""
    from icalkit.envs.household.reach import _sees

    w = sim.world
    return [oid for oid, o in w.objects.items()
            if reach_distance(o, w.agent) <= sim.max_view_distance and _sees(o, w.agent, w) and not sim.hidden(o)]


def test_cached_observations_equal_the_full_computation():
    """Frames, text states, scene graphs and goal progress served from the caches (revisited poses,
    resets to a task seen before, two envs sharing start worlds) equal a computation from scratch."""
    from icalkit.envs.household.observe import scene_graph, text_state
    from icalkit.envs.household.render import render_frame
    from icalkit.envs.household.tasks.checker import check_goal
    from icalkit.envs.household.tasks.sampler import sample_task

    tasks = [sample_task("Coffee", 0, "train"), sample_task("Boil X", 1, "train")]
    rng = random.Random(3)
    compared = 0
    for env in (HouseholdEnv(frame_size=40, render_obs=True), HouseholdEnv(frame_size=40, render_obs=True)):
        for episode in range(4):
            obs, info = env.reset(options={"task": tasks[episode % 2]})
            for _ in range(40):
                w = env.world
                visible = _fresh_visible(env.sim)
                assert env.sim.visible_objects() == visible
                assert obs["text_state"] == text_state(w, visible)
                assert obs["scene_graph"] == tuple(tuple(t) for t in scene_graph(w, visible))
                rgb, seg, _ = render_frame(w, 40)
                assert np.array_equal(obs["rgb"], rgb) and np.array_equal(obs["segmentation"], seg)
                goal = check_goal(env.task, w.metadata())
                assert info["goal_progress"] == {"satisfied": goal.satisfied, "total": goal.total,
                                                 "success": goal.success, "failure_descs": list(goal.failure_descs)}
                compared += 1
                if rng.random() < 0.5:  # moves that often undo each other, so poses repeat
                    action = rng.choice(["Turn Left", "Turn Right", "Forward", "Backward", "Look Down", "Look Up"])
                else:  # interactions on visible objects, so the object state changes too
                    action = {"action": rng.choice(["Pickup", "Place", "Open", "Close", "ToggleOn", "ToggleOff"]),
                              "target": rng.choice(visible) if visible else None}
                obs, _, term, trunc, info = env.step(action)
                if term or trunc:
                    break
    assert compared > 200


def test_state_id_tracks_object_state_not_the_pose():
    sim = kitchen(2)
    first_id = sim.state_id
    assert sim.step("Turn Left").success and sim.state_id == first_id  # moves do not change object state
    mug = first(sim, "Mug")
    do(sim, "Pickup", mug)
    assert sim.state_id != first_id and sim.world.held == mug
    sim.world.objects[mug].is_dirty = not sim.world.objects[mug].is_dirty  # a direct edit ...
    before = sim.state_id
    sim.mark_changed()  # ... is seen once declared
    assert sim.state_id != before


def test_world_copy_is_independent_and_equal_to_deepcopy():
    world = generate_scene(4, "train", "kitchen", KITCHEN_NEEDS)
    dup = world.copy()
    assert dup.metadata() == copy.deepcopy(world).metadata() and dup.blocked is world.blocked
    sim = Simulator(dup)
    do(sim, "Pickup", first(sim, "Mug"))
    assert dup.held is not None and world.held is None
    assert all(not o.is_picked_up for o in world.objects.values())
    assert [o.children for o in world.objects.values()] != [o.children for o in dup.objects.values()]


def test_line_of_sight_equals_the_sampled_reference():
    """The inlined sight-line loop answers as the plain sampled loop does (cell_of per sample)."""
    import math as m

    from icalkit.envs.household.camera import EYE_HEIGHT
    from icalkit.envs.household.occlusion import (
        STEP,
        TOLERANCE,
        cell_of,
        cell_owners,
        line_of_sight,
        transparent_to,
    )
    from icalkit.envs.household.state import AgentPose

    def reference(world, pose, point, transparent):
        owners = cell_owners(world)
        dx, dy, dz = point[0] - pose.x, point[1] - EYE_HEIGHT, point[2] - pose.z
        n = int(m.hypot(dx, dz) / STEP)
        return not any(oid not in transparent and top > EYE_HEIGHT + k / n * dy + TOLERANCE
                       for k in range(1, n) for oid, top in owners.get(cell_of(pose.x + k / n * dx, pose.z + k / n * dz), ()))

    rng = random.Random(0)
    blocked = 0
    for seed, room in enumerate(("kitchen", "living_room", "bedroom", "bathroom")):
        world = generate_scene(seed, "train", room)
        free = np.argwhere(~world.blocked)
        objs = list(world.objects.values())
        for _ in range(300):
            i, j = free[rng.randrange(len(free))]
            pose, obj = AgentPose(int(i), int(j)), rng.choice(objs)
            clear = transparent_to(world, obj, (obj.position,))
            got = line_of_sight(world, pose, obj.position, clear)
            assert got == reference(world, pose, obj.position, clear)
            blocked += not got
    assert blocked > 0  # the sample includes occluded sight lines


def test_obs_keys_select_what_is_computed_and_full_observations_come_on_request():
    from icalkit.envs.household.env import OBS_KEYS

    env = HouseholdEnv(frame_size=32, render_obs=False, obs_keys=("text_state", "last_action_success"))
    check_env(env, skip_render_check=True)
    obs, _ = env.reset(seed=1)
    assert set(obs) == {"text_state", "last_action_success"} and obs in env.observation_space
    full = env.observation(OBS_KEYS)
    assert set(full) == set(OBS_KEYS) and full["rgb"].any()  # rendered on request
    assert full["text_state"] == obs["text_state"]
    with pytest.raises(ValueError, match="obs_keys"):
        HouseholdEnv(obs_keys=("rgb", "depth"))
    with pytest.raises(ValueError, match="unknown observation keys"):
        env.observation(("depth",))


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_vector_env_batches_the_same_episodes_as_single_envs(mode):
    kwargs = {"render_obs": False, "frame_size": 32}
    envs = gymnasium.make_vec("icalkit/Household-v0", num_envs=2, vectorization_mode=mode,
                              vector_kwargs={"shared_memory": False} if mode == "async" else {}, **kwargs)
    singles = [gymnasium.make("icalkit/Household-v0", **kwargs) for _ in range(2)]
    try:
        obs, _ = envs.reset(seed=[5, 6])
        ref = [env.reset(seed=s)[0] for env, s in zip(singles, (5, 6), strict=True)]
        actions = [ACTIONS.index(a) for a in ("Turn Left", "Forward", "Look Down", "Turn Right")]
        for a in actions:
            assert list(obs["text_state"]) == [r["text_state"] for r in ref]
            obs, reward, term, trunc, _ = envs.step(np.array([a, a]))
            ref = [env.step(a)[0] for env in singles]
            assert reward.shape == (2,) and obs["last_action_success"].tolist() == [r["last_action_success"] for r in ref]
    finally:
        envs.close()
