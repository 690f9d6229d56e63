"""AI2-THOR adapter: the pure parts on recorded THOR-format metadata; the real controller is opt-in.

``tests/data/thor/kitchen_metadata.json`` is an ``event.metadata`` dict in AI2-THOR's format (object
ids ``Type|x|y|z``, ``parentReceptacles``, ``visible``, ``distance``, agent pose, and the
``GetReachablePositions`` answer in ``actionReturn``), converted once from an embedded kitchen. The
real controller test runs only with ``ICALKIT_THOR=1`` and ``ai2thor`` installed on a machine that can
start the Unity build.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import math
import os
from pathlib import Path

import pytest

from icalkit.envs.household.tasks.checker import check_goal
from icalkit.envs.household.tasks.sampler import sample_task
from icalkit.envs.thor.actions import ActionError, thor_step
from icalkit.envs.thor.convert import readable_ids, scene_graph, text_state, to_teach_metadata
from icalkit.envs.thor.env import goal_progress
from icalkit.envs.thor.navigation import GRID, NoPath, facing, plan_path

RECORDED = Path(__file__).parent / "data" / "thor" / "kitchen_metadata.json"


@pytest.fixture(scope="module")
def metadata() -> dict:
    return json.loads(RECORDED.read_text())


def by_type(objects, kind):
    return next(o for o in objects if o["objectType"] == kind)


def test_teach_fields_and_coffee_goal_on_thor_metadata(metadata):
    task = sample_task("Coffee", 0, "train")
    objects = to_teach_metadata(metadata["objects"])
    assert all("simbotIsFilledWithCoffee" in o and isinstance(o["parentReceptacles"], list) for o in objects)
    start = goal_progress(task, objects)
    assert not start["success"] and start["total"] >= 1
    after = copy.deepcopy(metadata["objects"])
    mug, machine = by_type(after, "Mug"), by_type(after, "CoffeeMachine")
    mug.update(parentReceptacles=[machine["objectId"]], isDirty=False)
    machine.update(isToggled=True, receptacleObjectIds=[mug["objectId"]])
    done = to_teach_metadata(after, objects)
    assert by_type(done, "Mug")["simbotIsFilledWithCoffee"]
    result = check_goal(task, done)
    assert result.success and result.satisfied == result.total
    # sticky: switching the machine off later does not empty the mug
    machine["isToggled"] = False
    assert by_type(to_teach_metadata(after, done), "Mug")["simbotIsFilledWithCoffee"]


def test_text_state_and_scene_graph(metadata):
    index = readable_ids(metadata["objects"])
    burners = sorted(v for k, v in index.items() if k.startswith("StoveBurner|"))
    assert len(burners) >= 2 and burners == [f"StoveBurner_{i}" for i in range(1, len(burners) + 1)]
    objects = to_teach_metadata(metadata["objects"])
    seen = [o for o in objects if o["visible"]]
    text = text_state({**metadata, "objects": objects}, index)
    assert text.startswith("Agent at x=2.88, z=0.88, facing 180 deg.") and text.endswith("Holding: nothing.")
    for o in seen:
        assert index[o["objectId"]] in text
    graph = scene_graph(objects, index)
    inside = [o for o in seen if o.get("parentReceptacles")]
    assert {(index[o["objectId"]], index[o["parentReceptacles"][0]]) for o in inside} <= {(s, t) for s, _, t in graph}
    held = copy.deepcopy(metadata["objects"])
    by_type(held, "Mug").update(isPickedUp=True, parentReceptacles=None)
    assert ("agent", "holds", index[by_type(held, "Mug")["objectId"]]) in scene_graph(to_teach_metadata(held), index)


@pytest.mark.parametrize("action, target, expected", [
    ("Forward", None, {"action": "MoveAhead", "moveMagnitude": 0.25}),
    ("Turn Left", None, {"action": "RotateLeft", "degrees": 90}),
    ("Look Down", None, {"action": "LookDown", "degrees": 30}),
    ("Pan Right", None, {"action": "MoveRight", "moveMagnitude": 0.25}),
    ("ToggleOn", "CoffeeMachine|+01|+02|+03", {"action": "ToggleObjectOn", "objectId": "CoffeeMachine|+01|+02|+03",
                                                "forceAction": False}),
    ("Stop", None, None)])
def test_action_mapping(action, target, expected):
    assert thor_step(action, target) == expected


def test_action_mapping_errors_name_the_action():
    with pytest.raises(ActionError, match="'Pickup' needs a target object id"):
        thor_step("Pickup")
    with pytest.raises(ActionError, match="unknown action 'Jump'"):
        thor_step("Jump")


def test_navigation_reaches_a_pose_facing_the_target(metadata):
    reach = metadata["actionReturn"]
    agent = metadata["agent"]
    target = by_type(metadata["objects"], "CoffeeMachine")
    path = plan_path(reach, agent["position"], agent["rotation"]["y"], target["position"], name="CoffeeMachine")
    assert path and set(path) <= {"Forward", "Turn Left", "Turn Right"}
    cells = {(math.floor(p["x"] / GRID + 1e-6), math.floor(p["z"] / GRID + 1e-6)) for p in reach}
    x, z, head = agent["position"]["x"], agent["position"]["z"], int(agent["rotation"]["y"])
    for move in path:  # replay: every Forward lands on a reachable cell
        if move == "Forward":
            x += GRID * round(math.sin(math.radians(head)))
            z += GRID * round(math.cos(math.radians(head)))
            assert (math.floor(x / GRID + 1e-6), math.floor(z / GRID + 1e-6)) in cells
        else:
            head = (head + (90 if move == "Turn Right" else -90)) % 360
    pos = target["position"]
    assert math.hypot(pos["x"] - x, pos["z"] - z) <= 1.5 and head == facing({"x": x, "z": z}, pos)
    with pytest.raises(NoPath, match="no reachable position within 1.5 m of the moon"):
        plan_path(reach, agent["position"], 0, {"x": 100.0, "z": 100.0}, name="the moon")


@pytest.mark.skipif(importlib.util.find_spec("ai2thor") is not None, reason="ai2thor is installed here")
def test_missing_ai2thor_is_a_clear_error():
    from icalkit.envs.factory import make_env

    with pytest.raises(RuntimeError, match="pip install ai2thor"):
        make_env("ai2thor")


@pytest.mark.skipif(os.environ.get("ICALKIT_THOR") != "1" or importlib.util.find_spec("ai2thor") is None,
                    reason="opt-in: set ICALKIT_THOR=1 with ai2thor installed on a machine that starts its Unity build")
def test_real_controller():  # pragma: no cover - needs AI2-THOR's Unity build
    from icalkit.envs.thor.env import ThorEnv

    env = ThorEnv("FloorPlan1", frame_size=128, platform=os.environ.get("ICALKIT_THOR_PLATFORM") or None)
    try:
        obs, info = env.reset(options={"task": sample_task("Coffee", 0, "train")})
        assert "Visible:" in obs["text_state"] and info["goal_progress"]["total"] >= 1
        obs, _, _, _, info = env.step("Turn Left")
        assert obs["last_action_success"] == 1 and info["steps"] == 1
        mug = next(o for o in env.objects if o["objectType"] == "Mug")
        obs, _, _, _, info = env.step({"action": "GoTo", "target": mug["objectId"]})
        assert info["steps"] > 1
    finally:
        env.close()
