"""Furniture hides what is behind it: simulator, navigation and the rendered frame agree."""

from __future__ import annotations

import numpy as np

from icalkit.envs.household.navigation import path_to_object
from icalkit.envs.household.reach import reach_distance, sees
from icalkit.envs.household.render import hidden_ids, render_frame
from icalkit.envs.household.scene import generate_scene
from icalkit.envs.household.simulator import Simulator
from icalkit.envs.household.state import INTERACT_DISTANCE, AgentPose


def occluded_views(seeds=range(4), rooms=("kitchen", "living_room", "bedroom", "bathroom"), per_scene=8):
    """(world, pose, object id) where the object is in the camera frustum but hidden behind furniture."""
    rng = np.random.default_rng(0)
    for seed in seeds:
        for room in rooms:
            world = generate_scene(seed, "train", room)
            free = np.argwhere(~world.blocked)
            for i, j in free[rng.choice(len(free), size=min(per_scene, len(free)), replace=False)]:
                for yaw in (0, 90, 180, 270):
                    pose = AgentPose(int(i), int(j), yaw, 30)
                    hidden = hidden_ids(world)
                    for obj in world.objects.values():
                        if obj.object_id not in hidden and sees(obj, pose) and not sees(obj, pose, world):
                            yield world, pose, obj.object_id


def test_occluded_objects_show_no_pixels_in_the_frame():
    cases = list(occluded_views())
    assert len(cases) >= 20
    no_pixels = 0
    for world, pose, oid in cases:
        world.agent = pose
        _, seg, ids = render_frame(world, 128)
        no_pixels += oid not in ids or not (seg == ids.index(oid) + 1).any()
    assert no_pixels / len(cases) >= 0.8, f"{no_pixels}/{len(cases)} occluded objects are not drawn"


def test_hidden_object_cannot_be_picked_up_until_navigation_finds_a_clear_view():
    for world, pose, oid in occluded_views():
        obj = world.objects[oid]
        if (obj.type.pickupable and obj.parent is not None and not world.objects[obj.parent].type.openable
                and reach_distance(obj, pose) <= INTERACT_DISTANCE):
            break
    else:
        raise AssertionError("no occluded pickupable object on an open surface within reach in the sampled views")
    world.agent = pose
    sim = Simulator(world)
    assert oid not in sim.visible_objects()
    result = sim.step("Pickup", target=oid)
    assert not result.success
    assert result.error == f"The {obj.object_type} is not visible from here."
    for action in path_to_object(world, oid):
        assert sim.step(action).success
    assert oid in sim.visible_objects()
    assert sim.step("Pickup", target=oid).success
