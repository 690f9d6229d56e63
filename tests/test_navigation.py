"""Occupancy-grid navigation: shortest, valid paths that end in an interaction pose."""

from __future__ import annotations

from collections import deque

import numpy as np
import pytest

from icalkit.envs.household.navigation import NavigationError, free_cells, path_to_object
from icalkit.envs.household.scene import generate_scene
from icalkit.envs.household.simulator import Simulator
from icalkit.envs.household.state import AgentPose

ROOMS = ("kitchen", "living_room", "bedroom", "bathroom")


def follow(sim: Simulator, actions: list[str]) -> None:
    for action in actions:
        result = sim.step(action)
        assert result.success, result


@pytest.mark.parametrize("room", ROOMS)
def test_paths_reach_every_object_and_the_interaction_succeeds(room):
    for seed in (0, 13, 27):
        world = generate_scene(seed, "train", room)
        sim = Simulator(world)
        start = world.agent.copy()
        for obj in list(world.objects.values()):
            parent = world.objects.get(obj.parent) if obj.parent else None
            if parent is not None:
                parent.is_open = True  # navigation cannot open doors; the caller does
            world.agent = start.copy()
            follow(sim, path_to_object(world, obj.object_id))
            assert sim.interactable(obj), (room, seed, obj.object_id)
            if obj.type.pickupable:
                assert sim.step("Pickup", obj.object_id).success
                result = sim.step("Place", parent.object_id)
                assert result.success, (room, seed, obj.object_id, result.error)


def _grid_distance(world, start, goals):
    """Plain BFS over cells (ignoring turns): a lower bound on Forward moves."""
    free = free_cells(world)
    seen = {start: 0}
    queue = deque([start])
    while queue:
        c = queue.popleft()
        if c in goals:
            return seen[c]
        for d in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            n = (c[0] + d[0], c[1] + d[1])
            if n in free and n not in seen:
                seen[n] = seen[c] + 1
                queue.append(n)
    return None


def test_path_is_short_and_stays_on_free_cells():
    world = generate_scene(4, "train", "kitchen")
    fridge = world.of_type("Fridge")[0]
    actions = path_to_object(world, fridge.object_id)
    pose = world.agent.copy()
    free = free_cells(world)
    for action in actions:
        if action == "Forward":
            di, dj = pose.forward_delta()
            pose = AgentPose(pose.i + di, pose.j + dj, pose.yaw, pose.pitch)
            assert (pose.i, pose.j) in free
        elif action.startswith("Turn"):
            pose.yaw = (pose.yaw + (90 if action == "Turn Right" else -90)) % 360
    from icalkit.envs.household.navigation import interaction_poses

    goal_cells = {(i, j) for i, j, _ in interaction_poses(world, fridge)}
    lower = _grid_distance(world, (world.agent.i, world.agent.j), goal_cells)
    forwards = actions.count("Forward")
    assert forwards == lower or forwards <= lower + 2  # turns may trade a little distance
    assert len(actions) <= lower + 8


def test_already_there_needs_at_most_looks():
    world = generate_scene(2, "train", "bedroom")
    sim = Simulator(world)
    bed = world.of_type("Bed")[0]
    follow(sim, path_to_object(world, bed.object_id))
    assert path_to_object(world, bed.object_id) == []


def test_errors_name_the_problem():
    world = generate_scene(1, "train", "kitchen")
    with pytest.raises(KeyError, match="Mug_99"):
        path_to_object(world, "Mug_99")
    walled = generate_scene(1, "train", "kitchen")
    a = walled.agent
    walled.blocked = np.ones_like(walled.blocked)
    walled.blocked[a.i, a.j] = False  # agent boxed in
    far = max(walled.objects.values(), key=walled.distance_to)
    with pytest.raises(NavigationError, match=far.object_id):
        path_to_object(walled, far.object_id)


def test_view_test_matches_camera_in_view_exactly():
    from icalkit.envs.household.camera import in_view
    from icalkit.envs.household.reach import view_test

    rng = np.random.default_rng(0)
    agree = 0
    for _ in range(3000):
        pose = AgentPose(int(rng.integers(0, 28)), int(rng.integers(0, 28)), int(rng.choice([0, 90, 180, 270])),
                         int(rng.choice([-30, 0, 30, 60])))
        point = tuple(float(v) for v in rng.uniform([0, 0, 0], [7, 2, 7]))
        assert view_test(pose)(point) == in_view(pose, point)
        agree += in_view(pose, point)
    assert agree > 300  # both outcomes exercised
