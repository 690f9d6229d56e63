"""planner.wash_served: a copy washes the dish it serves in first where it is dirty — the program edit,
and an episode on the real simulator, executor, memory and MiniLM embedder."""

from __future__ import annotations

import ast

import copy_fixtures
import pytest
from planner_doubles import one_torch_thread

from icalkit.agents.planner import Planner, PlannerConfig
from icalkit.agents.served_vessels import served_dishes, wash_served
from icalkit.envs.household.scene import build_world
from icalkit.envs.household.simulator import Simulator
from icalkit.envs.household.tasks.sampler import sample_tasks

single_thread = pytest.fixture(scope="module", autouse=True)(one_torch_thread)
embedder = copy_fixtures.embedder  # a fixture

SERVES = '''plate = InteractionObject("Plate", object_instance="Plate_1")
knife = InteractionObject("Knife")
knife.pickup()
apple = InteractionObject("Apple")
apple.slice()
apple_sliced = InteractionObject("AppleSliced", parent_object=apple)
apple_sliced.pickup_and_place(plate)
mug = InteractionObject("Mug")
coffee_machine = InteractionObject("CoffeeMachine")
mug.pickup_and_place(coffee_machine)
bowl = InteractionObject("Bowl")
sink = InteractionObject("SinkBasin")
bowl.pickup_and_place(sink)
apple_sliced_2 = InteractionObject("AppleSliced", parent_object=apple)
apple_sliced_2.pickup_and_place(bowl)
pot = InteractionObject("Pot")
apple_sliced_3 = InteractionObject("AppleSliced", parent_object=apple)
apple_sliced_3.pickup_and_place(pot)
'''


def test_the_dishes_a_copy_serves_in_are_washed_before_their_first_use_if_dirty() -> None:
    """The plate something is put on and the mug put in the coffee machine get the wash (the mug, which
    fills with water there, emptied), right before the statement that first uses them; not the bowl the
    program takes to the sink itself, nor the pot (cookware may hold the water it boils)."""
    body = ast.parse(SERVES).body
    assert served_dishes(body) == {"plate": (6, "Plate"), "mug": (9, "Mug")}
    program, dishes = wash_served(SERVES)
    assert dishes == ["mug", "plate"]
    lines = program.splitlines()
    at = lines.index('if plate.check_attribute("dirty", True):')
    assert lines[at + 1:at + 6] == ['    wash_0_sink = InteractionObject("SinkBasin")',
                                    '    wash_0_faucet = InteractionObject("Faucet")',
                                    "    plate.pickup_and_place(wash_0_sink)", "    wash_0_faucet.toggle_on()",
                                    "    wash_0_faucet.toggle_off()"]
    assert lines[at + 6] == "apple_sliced.pickup_and_place(plate)"  # no emptying: a plate holds no water
    at = lines.index('if mug.check_attribute("dirty", True):')
    assert lines[at + 6:at + 9] == ["    mug.pickup()", "    mug.pour(wash_1_sink)", "mug.pickup_and_place(coffee_machine)"]
    assert program.count("check_attribute") == 2 and "pot.check_attribute" not in program
    assert wash_served(program) == (program, [])  # washed once: the dishes go to the sink before they serve
    again = SERVES.replace("coffee_machine", "wash_0_machine")
    assert 'wash1_0_sink = InteractionObject("SinkBasin")' in wash_served(again)[0]  # a prefix the program has not
    twice = 'plate = InteractionObject("Plate")\nplate = InteractionObject("Plate")\nx.place(plate)\n'
    assert wash_served(twice) == (twice, [])  # a name bound twice: which dish it is depends on the line
    assert wash_served("plate.place(") == ("plate.place(", [])  # unparsable: the executor reports it


def test_wash_served_washes_the_dirty_plate_a_copy_serves_on(tmp_path, embedder) -> None:
    """A demonstration served three apple slices on its room's clean plate; the new room's plates are both
    dirty. The copy serves on a dirty plate and the next copy is the same, so the task stays unfinished; with
    wash_served the copy washes the plate first and the task is done at the first attempt."""
    from icalkit.agents.api.runtime import ApiConfig
    from icalkit.agents.context import full_state
    from icalkit.agents.executor import ExecutorLimits

    mem, start = copy_fixtures.recorded_memory("N Slices Of X In Y", 8, "0-00007", tmp_path / "apple.db", embedder)
    assert start["Plate_1"]["dirty"] is False and "SinkBasin" not in next(iter(mem)).revised_program
    task = next(t for t in sample_tasks(["N Slices Of X In Y"], 8, "valid_unseen", 0) if t.task_id.endswith("0-00005"))
    assert all(a["dirty"] for o, a in full_state(build_world(task)).items() if o.startswith("Plate_"))

    def run(**cfg):
        planner = Planner(None, mem, PlannerConfig(mode="copy", k=1, ground_ids=True, precondition_checks=True,
                                                   mention_reground=True, copy_fallback=True,
                                                   silent_next_copy="end_state", **cfg),
                          ExecutorLimits(api=ApiConfig(oracle_object_map=True, precondition_checks=True)))
        return planner.run_episode(task, Simulator(build_world(task)))

    washed = run(wash_served=True)
    assert washed.success and washed.attempts == 1 and "plate.check_attribute" in washed.programs[0]
    served = run()
    assert not served.success and "Plate (dirty=False)" in served.errors[0]
    with pytest.raises(ValueError, match="planner.wash_served edits the copied example"):
        PlannerConfig(mode="ical", wash_served=True).validate()
