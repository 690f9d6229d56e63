"""Household simulator core: scenes and splits, rules, actions and errors, robustness, gymnasium."""

from __future__ import annotations

import copy
import importlib.util
import random

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from icalkit.envs.factory import make_env
from icalkit.envs.household.actions import ACTIONS
from icalkit.envs.household.env import HouseholdEnv
from icalkit.envs.household.navigation import path_to_object
from icalkit.envs.household.reach import reach_distance
from icalkit.envs.household.scene import MAX_SEED, apply_initial_state, generate_scene, split_seed
from icalkit.envs.household.simulator import Simulator
from icalkit.envs.household.tasks.task import Task

KITCHEN_NEEDS = {"Mug": 1, "Bread": 1, "Knife": 1, "Potato": 1, "Pot": 1, "Pan": 1, "Tomato": 1,
                 "Plate": 1, "Cup": 1, "HousePlant": 1, "Egg": 1}


def kitchen(seed: int = 0) -> Simulator:
    return Simulator(generate_scene(seed, "train", "kitchen", KITCHEN_NEEDS))


def snapshot(sim: Simulator) -> tuple:
    w = sim.world
    return (w.metadata(), (w.agent.i, w.agent.j, w.agent.yaw, w.agent.pitch), w.held, dict(w.id_counters))


def go(sim: Simulator, oid: str) -> None:
    """Walk to an interaction pose for ``oid``, opening its closed container first if needed."""
    obj = sim.world.objects[oid]
    parent = sim.world.objects.get(obj.parent) if obj.parent else None
    if parent is not None and sim.hidden(obj) and parent.type.openable and not parent.is_open:
        do(sim, "Open", parent.object_id)
    for action in path_to_object(sim.world, oid):
        result = sim.step(action)
        assert result.success, result
    assert sim.interactable(obj), oid


def do(sim: Simulator, action: str, oid: str) -> None:
    go(sim, oid)
    result = sim.step(action, oid)
    assert result.success, result


def first(sim: Simulator, object_type: str, empty: bool = False) -> str:
    objs = [o for o in sim.world.of_type(object_type) if not (empty and o.children)]
    assert objs, object_type
    return objs[0].object_id


def put(sim: Simulator, oid: str, receptacle: str) -> None:
    """Pick ``oid`` up and place it in/on ``receptacle`` (opening it if needed)."""
    do(sim, "Pickup", oid)
    rec = sim.world.objects[receptacle]
    if rec.type.openable and not rec.is_open:
        do(sim, "Open", receptacle)
    do(sim, "Place", receptacle)


def control_of(sim: Simulator, fixture_type: str, target: str) -> str:
    return next(o.object_id for o in sim.world.of_type(fixture_type) if o.controls == target)


# ----------------------------------------------------------------------------- scenes


def test_scene_is_deterministic_and_seeds_differ():
    a = generate_scene(7, "train", "kitchen", {"Mug": 2})
    b = generate_scene(7, "train", "kitchen", {"Mug": 2})
    c = generate_scene(8, "train", "kitchen", {"Mug": 2})
    assert a.metadata() == b.metadata() and a.agent == b.agent
    assert a.metadata() != c.metadata()


# sha256 (16 hex) of (size, occupancy, start pose, metadata) of generated scenes; computed before
# scene generation moved from a Python BFS to array labelling, so a change of any scene shows here
SCENE_HASHES = {"kitchen/train/5": "e58c62a916b7bff0", "kitchen/valid_unseen/7": "ad8797bc3c74ff3a",
                "living_room/train/5": "1f1aa600d6feaf6a", "living_room/valid_unseen/7": "2a6c96d62c5db130",
                "bedroom/train/5": "339cf625b0dd0929", "bedroom/valid_unseen/7": "fb464a8c19f8183c",
                "bathroom/train/5": "fab334cf47f0b918", "bathroom/valid_unseen/7": "d0ffb0792436eef5"}


def test_generated_scenes_match_saved_hashes():
    import hashlib
    import json

    for key, expected in SCENE_HASHES.items():
        room, split, seed = key.split("/")
        w = generate_scene(int(seed), split, room)
        blob = json.dumps([w.n_i, w.n_j, w.blocked.tolist(), [w.agent.i, w.agent.j, w.agent.yaw], w.metadata()],
                          sort_keys=True)
        assert hashlib.sha256(blob.encode()).hexdigest()[:16] == expected, key


def test_splits_share_or_separate_layouts():
    assert split_seed("train", 45) == (5, 2)
    assert split_seed("valid_seen", 45) == (5, 3)
    assert split_seed("valid_unseen", 45) == (45, 2)
    train, seen = generate_scene(5, "train", "kitchen"), generate_scene(5, "valid_seen", "kitchen")
    furniture = lambda w: sorted((o.object_type, o.cells) for o in w.objects.values() if o.cells)  # noqa: E731
    small = lambda w: sorted((o.object_id, o.parent) for o in w.objects.values() if not o.cells)  # noqa: E731
    assert train.scene_id == seen.scene_id and furniture(train) == furniture(seen)
    assert small(train) != small(seen)
    unseen_ids = {generate_scene(s, "valid_unseen", "kitchen").scene_id for s in range(20)}
    assert unseen_ids == {f"kitchen_L{k:02d}" for k in range(40, 60)}


@pytest.mark.parametrize("seed", [-1, MAX_SEED + 1, 1.5, "3"])
def test_seed_out_of_range_is_named(seed):
    with pytest.raises(ValueError, match="seed"):
        generate_scene(seed, "train", "kitchen")


def test_bad_scene_arguments():
    with pytest.raises(ValueError, match="garage"):
        generate_scene(0, "train", "garage")
    with pytest.raises(ValueError, match="Unicorn"):
        generate_scene(0, "train", "kitchen", {"Unicorn": 1})
    with pytest.raises(ValueError, match="split"):
        generate_scene(0, "test", "kitchen")


@pytest.mark.parametrize("room", ["kitchen", "living_room", "bedroom", "bathroom"])
def test_rooms_have_required_objects_and_everything_is_reachable(room):
    kitchen_must = ("CounterTop", "Fridge", "SinkBasin", "Faucet", "StoveBurner", "StoveKnob", "Microwave",
                    "Toaster", "CoffeeMachine", "Cabinet", "Drawer", "DiningTable")
    for seed in (0, 21, 45):
        world = generate_scene(seed, "train" if seed < 40 else "valid_unseen", room, {"Candle": 2, "Sofa": 1})
        types = [o.object_type for o in world.objects.values()]
        assert types.count("Candle") >= 2 and "Sofa" in types
        if room == "kitchen":
            assert all(t in types for t in kitchen_must)
            assert types.count("StoveKnob") == types.count("StoveBurner")
        assert not world.blocked[world.agent.i, world.agent.j]
        sim = Simulator(world)
        for obj in world.objects.values():
            if (obj.type.receptacle or obj.type.kind == "fixture") and not sim.hidden(obj):
                start = copy.deepcopy(world.agent)
                for action in path_to_object(world, obj.object_id):
                    assert sim.step(action).success
                assert sim.interactable(obj), (seed, obj.object_id)
                world.agent = start


def test_initial_state_edits_and_errors():
    world = generate_scene(3, "train", "kitchen", {"Mug": 2})
    apply_initial_state(world, [{"type": "Mug", "set": {"is_dirty": True}, "count": "all"},
                                {"type": "Mug", "set": {"is_filled": True}, "count": 1, "into": "SinkBasin"}],
                        random.Random(0))
    mugs = world.of_type("Mug")
    assert all(m.is_dirty for m in mugs)
    filled = [m for m in mugs if m.is_filled]
    assert len(filled) == 1 and filled[0].fill_liquid == "water"
    assert world.objects[filled[0].parent].object_type == "SinkBasin"
    with pytest.raises(ValueError, match="is_shiny"):
        apply_initial_state(world, [{"type": "Mug", "set": {"is_shiny": True}}], random.Random(0))
    with pytest.raises(ValueError, match="count"):
        apply_initial_state(world, [{"type": "Mug", "set": {}, "count": 9}], random.Random(0))


# ----------------------------------------------------------------------------- rules


def test_coffee_machine_fills_mug_with_coffee():
    sim = kitchen(1)
    mug, machine = first(sim, "Mug"), first(sim, "CoffeeMachine")
    put(sim, mug, machine)
    assert not sim.world.objects[mug].is_filled
    do(sim, "ToggleOn", machine)
    meta = sim.world.objects[mug].metadata(sim.world)
    assert meta["simbotIsFilledWithCoffee"] and meta["parentReceptacles"] == [machine]


def test_sink_under_running_faucet_cleans_and_fills():
    sim = kitchen(2)
    cup, plate, basin = first(sim, "Cup"), first(sim, "Plate"), first(sim, "SinkBasin")
    sim.world.objects[cup].is_dirty = sim.world.objects[plate].is_dirty = True
    for child in list(sim.world.objects[basin].children):  # make room
        put(sim, child, first(sim, "DiningTable"))
    put(sim, cup, basin)
    put(sim, plate, basin)
    assert sim.world.objects[cup].is_dirty
    do(sim, "ToggleOn", control_of(sim, "Faucet", basin))
    c, p = sim.world.objects[cup], sim.world.objects[plate]
    assert not c.is_dirty and not p.is_dirty
    assert c.is_filled and c.fill_liquid == "water" and not p.is_filled  # plates cannot hold water


def test_toaster_cooks_one_bread_slice_and_is_then_full():
    sim = kitchen(3)
    bread, knife, toaster = first(sim, "Bread"), first(sim, "Knife"), first(sim, "Toaster")
    do(sim, "Pickup", knife)
    do(sim, "Slice", bread)
    slices = sim.world.of_type("BreadSliced")
    assert bread not in sim.world.objects and len(slices) == 8
    assert all(s.sliced_from == bread for s in slices)
    assert slices[0].object_id == "BreadSliced_1"
    do(sim, "Place", first(sim, "DiningTable"))  # put the knife down
    put(sim, slices[0].object_id, toaster)
    do(sim, "ToggleOn", toaster)
    assert slices[0].is_cooked and not slices[1].is_cooked
    do(sim, "Pickup", slices[1].object_id)
    go(sim, toaster)
    result = sim.step("Place", toaster)
    assert not result.success and result.error == "The Toaster is full right now."


def test_microwave_cooks_only_when_closed_and_on():
    sim = kitchen(4)
    potato, micro = first(sim, "Potato"), first(sim, "Microwave")
    put(sim, potato, micro)
    result = sim.step("ToggleOn", micro)
    assert not result.success and "open" in result.error
    assert not sim.world.objects[potato].is_cooked
    do(sim, "Close", micro)
    do(sim, "ToggleOn", micro)
    assert sim.world.objects[potato].is_cooked


def test_pan_on_lit_burner_cooks_and_pot_of_water_boils_potato():
    sim = kitchen(5)
    pan, pot, tomato, potato = (first(sim, t) for t in ("Pan", "Pot", "Tomato", "Potato"))
    burners = [b.object_id for b in sim.world.of_type("StoveBurner")]
    put(sim, pan, burners[0])
    put(sim, tomato, pan)
    do(sim, "ToggleOn", control_of(sim, "StoveKnob", burners[0]))
    assert sim.world.objects[tomato].is_cooked and not sim.world.objects[tomato].is_boiled
    # fill the pot at the sink, then boil the potato on the second burner
    basin = first(sim, "SinkBasin")
    for child in list(sim.world.objects[basin].children):
        put(sim, child, first(sim, "DiningTable"))
    put(sim, pot, basin)
    do(sim, "ToggleOn", control_of(sim, "Faucet", basin))
    assert sim.world.objects[pot].fill_liquid == "water"
    put(sim, pot, burners[1])
    put(sim, potato, pot)
    assert not sim.world.objects[potato].is_boiled
    do(sim, "ToggleOn", control_of(sim, "StoveKnob", burners[1]))
    meta = sim.world.objects[potato].metadata(sim.world)
    assert meta["simbotIsBoiled"] and meta["isCooked"]
    assert meta["parentReceptacles"] == [pot, burners[1]]


def test_pour_waters_plant_and_empties_into_sink():
    sim = kitchen(6)
    cup, plant, basin = first(sim, "Cup"), first(sim, "HousePlant"), first(sim, "SinkBasin")
    c = sim.world.objects[cup]
    c.is_filled, c.fill_liquid = True, "water"
    do(sim, "Pickup", cup)
    do(sim, "Pour", plant)
    assert sim.world.objects[plant].is_filled and sim.world.objects[plant].fill_liquid == "water"
    assert not c.is_filled and c.fill_liquid is None
    go(sim, basin)
    result = sim.step("Pour", basin)
    assert not result.success and "empty" in result.error
    c.is_filled, c.fill_liquid = True, "coffee"
    do(sim, "Pour", basin)
    assert not c.is_filled and not sim.world.objects[basin].is_filled


def test_slicing_keeps_cooked_state_and_egg_cracks():
    sim = kitchen(7)
    egg, knife = first(sim, "Egg"), first(sim, "Knife")
    sim.world.objects[egg].is_cooked = True
    do(sim, "Pickup", knife)
    do(sim, "Slice", egg)
    (cracked,) = sim.world.of_type("EggCracked")
    assert cracked.is_cooked and cracked.sliced_from == egg and egg not in sim.world.objects


# ----------------------------------------------------------------------------- errors


def test_error_messages_and_failures_leave_state_unchanged():
    sim = kitchen(8)
    w = sim.world
    bread, mug, fridge = first(sim, "Bread"), first(sim, "Mug"), first(sim, "Fridge")
    checks = []

    def fails(action, target=None, pixel=None, expect=""):
        before = snapshot(sim)
        result = sim.step(action, target, pixel)
        assert not result.success and expect in result.error, result
        assert snapshot(sim) == before
        checks.append(result.error)

    fails("Pickup", "Mug_99", expect="There is no object called 'Mug_99'.")
    fails("Fly", expect="Unknown action 'Fly'")
    fails("Pickup", pixel=(3, 4), expect="rendered frame")
    go(sim, bread)
    fails("Slice", bread, expect="You need to hold a knife to slice the Bread.")
    fails("Place", bread, expect="You are not holding anything")
    do(sim, "Pickup", mug)
    fails("Pickup", mug, expect="You are already holding the Mug.")
    go(sim, fridge)
    if w.objects[fridge].is_open:
        do(sim, "Close", fridge)
    fails("Place", fridge, expect="The Fridge is closed; open it before placing the Mug inside.")
    fails("Close", fridge, expect="The Fridge is already closed.")
    fails("Slice", fridge, expect="You need to hold a knife")
    # far away and out of view
    far = max(w.objects.values(), key=w.distance_to)
    dist = reach_distance(far, w.agent)
    if sim.is_visible(far):
        fails("Open", far.object_id, expect=f"({dist:.1f} m); get within 1.5 m.")
    else:
        fails("ToggleOn", far.object_id, expect="")
    w.agent.yaw = (w.agent.yaw + 180) % 360  # turn around: the fridge is behind us
    fails("Open", fridge, expect="The Fridge is not visible from here.")
    assert len(checks) >= 10


def test_too_far_message_names_the_distance():
    sim = kitchen(9)
    w = sim.world
    for obj in w.objects.values():
        if sim.is_visible(obj) and reach_distance(obj, w.agent) > 1.5:
            result = sim.step("Open", obj.object_id) if obj.type.openable else sim.step("Pickup", obj.object_id)
            if obj.type.openable or obj.type.pickupable:
                assert result.error == (f"The {obj.object_type} is too far away ({reach_distance(obj, w.agent):.1f} m); "
                                        "get within 1.5 m.")
                return
    pytest.skip("no far visible object from this start pose")


def test_random_action_sequences_never_raise():
    rng = random.Random(0)
    successes = 0
    for seed in range(12):
        room = ["kitchen", "living_room", "bedroom", "bathroom"][seed % 4]
        sim = Simulator(generate_scene(seed, "train", room))
        ids = list(sim.world.objects)
        for _ in range(1500):
            action = rng.choice(ACTIONS + ("Jump",))
            target = rng.choice(ids + ["Nothing_1", None]) if rng.random() < 0.7 else None
            result = sim.step(action, target)
            successes += result.success
            ids = list(sim.world.objects) if action == "Slice" and result.success else ids
        held = sim.world.held
        assert held is None or sim.world.objects[held].is_picked_up
        for obj in sim.world.objects.values():  # parent/child links stay consistent
            assert obj.parent is None or obj.object_id in sim.world.objects[obj.parent].children
    assert successes > 1000


# ----------------------------------------------------------------------------- gymnasium


def test_env_passes_gymnasium_checker_and_is_registered():
    check_env(HouseholdEnv(render_obs=False, frame_size=32), skip_render_check=True)
    env = gymnasium.make("icalkit/Household-v0", render_obs=False, frame_size=32)
    obs, info = env.reset(seed=0)
    assert obs["rgb"].shape == (32, 32, 3) and isinstance(obs["text_state"], str)


def test_env_episode_with_task_targets_and_limits():
    task = Task(task_id="t/0", task_type="Coffee", params={}, definition="", instruction="make coffee",
                dialogue=[], room_type="kitchen", scene_seed=11, split="train", required_objects={"Mug": 1},
                initial_state=[{"type": "Mug", "set": {"is_dirty": True}}])
    env = HouseholdEnv(render_obs=False, max_steps=50, max_failures=3)
    obs, info = env.reset(options={"task": task})
    assert all(m.is_dirty for m in env.world.of_type("Mug"))
    obs, reward, term, trunc, info = env.step({"action": "Pickup", "target": "Mug_99"})
    assert obs["last_action_success"] == 0 and "Mug_99" in obs["error"] and not (term or trunc)
    obs, *_ = env.step({"action": 99})
    assert "action index 99" in obs["error"]
    obs, reward, term, trunc, info = env.step({"action": "Place", "target": "CounterTop_1"})
    assert trunc and not term and info["failures"] == 3
    env.reset(options={"task": task})
    obs, reward, term, trunc, info = env.step(ACTIONS.index("Stop"))
    assert term and obs["last_action_success"] == 1


def test_factory_names():
    assert isinstance(make_env("household", render_obs=False), HouseholdEnv)
    with pytest.raises(ValueError, match="household"):
        make_env("minecraft")
    if importlib.util.find_spec("ai2thor") is None:
        with pytest.raises(RuntimeError, match="pip install ai2thor"):
            make_env("ai2thor")
    if importlib.util.find_spec("textworld") is None:  # the optional alfworld extra
        with pytest.raises(RuntimeError, match="ALFWorld"):
            make_env("alfworld")


def test_pixel_targets_resolve_through_the_rendered_segmentation():
    pytest.importorskip("icalkit.envs.household.render")
    env = HouseholdEnv(frame_size=96, render_obs=True)
    for seed in range(30):
        obs, _ = env.reset(seed=seed)
        sim = env.sim
        _, seg, ids = env._frame()
        for k, oid in enumerate(ids, start=1):
            obj = env.world.objects[oid]
            ys, xs = np.nonzero(seg == k)
            if obj.type.pickupable and len(xs) and sim.interactable(obj):
                obs, *_ = env.step({"action": "Pickup", "pixel": (int(xs[0]), int(ys[0]))})
                assert obs["last_action_success"] == 1, obs["error"]
                assert env.world.held == oid
                obs, *_ = env.step({"action": "Pickup", "pixel": (500, 3)})
                assert "outside" in obs["error"]
                return
    pytest.skip("no pickupable object in reach at any start pose")


def test_env_random_dict_actions_with_rendering_never_raise():
    pytest.importorskip("icalkit.envs.household.render")
    env = HouseholdEnv(frame_size=64, render_obs=True, max_failures=10_000)
    rng = random.Random(1)
    for seed in range(3):
        obs, _ = env.reset(seed=seed)
        for _ in range(150):
            ids = list(env.world.objects)
            action = {"action": rng.randrange(len(ACTIONS)), "target": rng.choice(ids + [None, "Ghost_1"]),
                      "pixel": (rng.randrange(-5, 70), rng.randrange(64)) if rng.random() < 0.3 else None}
            obs, reward, term, trunc, info = env.step(action)
            assert obs in env.observation_space
            if term or trunc:
                break


def test_env_rewards_and_terminates_when_the_goal_checker_says_success():
    pytest.importorskip("icalkit.envs.household.tasks.checker")
    task = Task(task_id="t/coffee", task_type="Coffee", params={}, definition="Coffee", instruction="coffee",
                dialogue=[], room_type="kitchen", scene_seed=3, split="train", required_objects={"Mug": 1},
                initial_state=[{"type": "Mug", "set": {"is_dirty": False}}])
    env = HouseholdEnv(render_obs=False)
    obs, info = env.reset(options={"task": task})
    assert info["goal_progress"]["success"] is False and info["goal_progress"]["failure_descs"]
    sim = env.sim
    mug, machine = first(sim, "Mug"), first(sim, "CoffeeMachine")
    put(sim, mug, machine)  # drive the simulator directly, then finish through the env
    obs, reward, term, trunc, info = env.step({"action": "ToggleOn", "target": machine})
    assert reward == 1.0 and term and not trunc
    assert info["goal_progress"]["satisfied"] == info["goal_progress"]["total"]


def test_held_object_metadata_follows_the_agent():
    sim = kitchen()
    mug = first(sim, "Mug")
    do(sim, "Pickup", mug)

    def position(oid: str) -> tuple:
        meta = next(m for m in sim.world.metadata() if m["objectId"] == oid)
        return tuple(meta["position"].values())

    assert position(mug) == sim.world.hand_position()
    before = position(mug)
    for action in ("Turn Left", "Turn Left"):
        assert sim.step(action).success
    assert position(mug) == sim.world.hand_position() != before

