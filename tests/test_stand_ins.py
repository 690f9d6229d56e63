"""planner.stand_ins (icalkit/agents/stand_ins.py): a vessel a copy pours from and the room lacks gets a stand-in,
on a real recorded demonstration, the simulator and the bundled MiniLM."""

from __future__ import annotations

import copy_fixtures
import pytest
from copy_fixtures import embedder  # noqa: F401  (fixture)

from icalkit.agents.stand_ins import can_stand_in, stand_ins, vessel_needs
from icalkit.envs.household.tasks.sampler import sample_tasks
from icalkit.memory.example import Example

WATERING = ('bottle = InteractionObject("Bottle", object_instance="Bottle_1")\nbottle.pickup()\n'
            'sink = InteractionObject("SinkBasin")\nbottle.place(sink)\nfaucet = InteractionObject("Faucet")\n'
            'faucet.toggle_on()\nbottle.pickup()\nplant = InteractionObject("HousePlant")\nbottle.pour(plant)\n')


def example(program: str, changes: list[tuple[str, str]] = (), task_id: str = "train/x/0") -> Example:
    return Example(task_id=task_id, task_type="Water Plant", instruction="x", revised_program=program,
                   observed_changes=[{"object": o, "attribute": a, "before": None, "after": True} for o, a in changes])


def test_what_can_stand_in_for_a_vessel() -> None:
    assert can_stand_in("Bowl", "Bottle", {"pour"}) and can_stand_in("Mug", "Bottle", {"pour"})
    assert not can_stand_in("Plate", "Bottle", {"pour"})  # cannot be filled
    assert not can_stand_in("Bottle", "Bottle", {"pour"}) and not can_stand_in("Apple", "Bottle", set())
    # a bowl is no pot on the stove burner; a kettle goes there but takes no potato
    on_stove = {("Pot", "StoveBurner"), ("Potato", "Pot")}
    assert can_stand_in("Pot", "Kettle", {"pour"}, {("Kettle", "StoveBurner")})
    assert not can_stand_in("Bowl", "Pot", {"pour"}, on_stove) and not can_stand_in("Kettle", "Pot", {"pour"}, on_stove)


def test_only_what_a_copy_pours_from_is_a_vessel() -> None:
    assert vessel_needs(example(WATERING), WATERING, {}) == {"Bottle": {"pour"}}
    assert vessel_needs(example(WATERING), WATERING, {"Bottle": "Cup"}) == {"Cup": {"pour"}}
    washed = 'cup = InteractionObject("Cup")\ncup.pickup()\nlettuce = InteractionObject("Lettuce")\nlettuce.slice()\n'
    assert vessel_needs(example(washed, [("Cup_1", "dirty"), ("Lettuce_1", "sliced")]), washed, {}) == {}
    # food it cut is the request's, even poured from
    poured = 'egg = InteractionObject("Egg")\negg.slice()\negg.pour(InteractionObject("Pan"))\n'
    assert vessel_needs(example(poured, [("Egg_1", "sliced")]), poured, {}) == {}
    assert vessel_needs(example("bottle.pour(("), "bottle.pour((", {}) == {}


def test_the_dialogue_names_the_stand_in_else_the_nearest_name(embedder) -> None:  # noqa: F811
    room = {"Bowl", "Cup", "Pot", "HousePlant", "SinkBasin", "Faucet"}
    ex = example(WATERING)
    said = [("Commander", "water the plant please"), ("Commander", "any bowl is fine")]
    assert stand_ins(ex, WATERING, {}, room, said, embedder) == {"Bottle": "Bowl"}
    quiet = stand_ins(ex, WATERING, {}, room, [("Commander", "water the plant please")], embedder)
    assert quiet == {"Bottle": "Cup"}  # "cup" is the nearest to "bottle" in MiniLM's words
    assert stand_ins(ex, WATERING, {}, room | {"Bottle"}, said, embedder) == {}  # the room has one
    assert stand_ins(ex, WATERING, {}, {"HousePlant", "Plate"}, said, embedder) == {}  # nothing can stand in
    # a class the re-grounding renamed is looked up under its new name; a task's own parameter is left alone
    assert stand_ins(ex, WATERING, {"Bottle": "Mug"}, room | {"Mug"}, said, embedder) == {}
    bottles = example(WATERING, task_id="train/put_all_x_on_y/0-00000")  # X = Bottle
    assert stand_ins(bottles, WATERING, {}, room, said, embedder) == {}


def test_a_plant_is_watered_with_what_the_room_has(tmp_path, embedder) -> None:  # noqa: F811
    """The one demonstration filled a bottle at the sink; the room has none. With stand_ins the copy carries
    the water in a vessel the room has and the task is done in one attempt; without, the copy fails on the
    bottle."""
    from icalkit.agents.api.runtime import ApiConfig
    from icalkit.agents.executor import ExecutorLimits
    from icalkit.agents.planner import Planner, PlannerConfig
    from icalkit.envs.household.scene import build_world
    from icalkit.envs.household.simulator import Simulator

    memory, _ = copy_fixtures.recorded_memory("Water Plant", 4, "0-00003", tmp_path / "m.db", embedder)
    task = sample_tasks(["Water Plant"], 5, "valid_unseen", 3)[4]
    limits = ExecutorLimits(api=ApiConfig(oracle_object_map=True, precondition_checks=True))

    def run(**cfg):
        planner = Planner(None, memory, PlannerConfig(mode="copy", k=1, ground_ids=True, precondition_checks=True,
                                                      mention_reground=True, copy_fallback=True, max_replans=0, **cfg),
                          limits)
        return planner.run_episode(task, Simulator(build_world(task)))

    stood = run(stand_ins=True)
    assert stood.success and stood.attempts == 1 and not stood.errors
    assert 'bottle = InteractionObject("Kettle")' in stood.programs[0]  # the room's only water container
    plain = run()
    assert not plain.success and "No Bottle has been found" in plain.errors[0]
    with pytest.raises(ValueError, match="stand_ins .*planner.mode=copy"):
        PlannerConfig(mode="ical", stand_ins=True).validate()
