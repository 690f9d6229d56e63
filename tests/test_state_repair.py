"""planner.finish_states: the copy's work on one object of a class, done to every object of the class the
room still has out of the state its demonstration's end state asks — the program, and an episode on the
real simulator, executor, memory and MiniLM embedder."""

from __future__ import annotations

import ast

import copy_fixtures
import pytest
from planner_doubles import one_torch_thread

from icalkit.agents.demo_end_state import Check
from icalkit.agents.state_repair import class_blocks, state_repair

single_thread = pytest.fixture(scope="module", autouse=True)(one_torch_thread)
embedder = copy_fixtures.embedder  # a fixture

COPY = """\
pot = InteractionObject("Mug", object_instance="Mug_1")
sink_basin = InteractionObject("SinkBasin", object_instance="SinkBasin_1")
pot.pickup_and_place(sink_basin)
faucet = InteractionObject("Faucet", object_instance="Faucet_1")
faucet.toggle_on()
shelf = InteractionObject("Shelf")
pot.pickup_and_place(shelf)
cabinet = InteractionObject("Cabinet")
cabinet.open()
pot_2 = InteractionObject("Mug", object_instance="Mug_2")
pot_2.pickup()
pot_2.place(sink_basin)
"""
CLEAN = (("dirty", False),)


def room(*dirty: str) -> dict[str, dict]:
    mugs = {f"Mug_{i}": {"dirty": f"Mug_{i}" in dirty, "parent": "CounterTop_1"} for i in (1, 2, 3)}
    return {**mugs, "CounterTop_1": {"parent": None}, "SinkBasin_1": {"parent": None}}


def test_the_blocks_of_a_class_run_from_one_declaration_to_the_next() -> None:
    body = ast.parse(COPY).body
    blocks = class_blocks(body, "Mug")
    assert [(v, i) for v, i, _ in blocks] == [("pot", 0), ("pot_2", 9)]
    assert [ast.unparse(s) for s in blocks[0][2]][1:5] == [
        "pot.pickup_and_place(sink_basin)", "faucet = InteractionObject('Faucet', object_instance='Faucet_1')",
        "faucet.toggle_on()", "shelf = InteractionObject('Shelf')"]
    assert [ast.unparse(s) for s in blocks[1][2]] == ["pot_2.pickup()", "pot_2.place(sink_basin)"]
    assert class_blocks(body, "Cup") == []
    rebound = ast.parse('obj = InteractionObject("Mug")\nobj.pickup()\nobj = InteractionObject("Faucet")\n'
                        "obj.toggle_on()\n").body
    assert [ast.unparse(s) for s in class_blocks(rebound, "Mug")[0][2]] == ["obj.pickup()"]  # ends where rebound


def test_state_repair_repeats_the_longest_block_for_each_object_left() -> None:
    every = Check("Mug", CLEAN, every=True)
    program = state_repair([every], room("Mug_3"), COPY)
    assert program == (
        "every_0_0 = InteractionObject('Mug', object_instance='Mug_3')\n"
        "sink_basin = InteractionObject('SinkBasin', object_instance='SinkBasin_1')\n"
        "every_0_0.pickup_and_place(sink_basin)\n"
        "faucet = InteractionObject('Faucet', object_instance='Faucet_1')\n"
        "faucet.toggle_on()\n"
        "shelf = InteractionObject('Shelf')\n"
        "every_0_0.pickup_and_place(shelf)\n"
        "cabinet = InteractionObject('Cabinet')\n"
        "cabinet.open()\n")
    two = state_repair([every], room("Mug_2", "Mug_3"), COPY)
    assert "object_instance='Mug_2')\nsink_basin" in two and "every_0_1.pickup_and_place(shelf)" in two
    assert state_repair([every], room(), COPY) == ""  # every mug is clean
    assert state_repair([Check("Mug", CLEAN)], room("Mug_3"), COPY) == ""  # not "every": the acted-on ones
    assert state_repair([every, Check("Mug", (), "Shelf", (), 1)], room("Mug_3"), COPY) == ""  # a placement
    assert state_repair([Check("Cup", CLEAN, every=True)], {"Cup_1": {"dirty": True}}, COPY) == ""  # no cup block
    assert state_repair([every], room("Mug_3"), "pot = (") == ""  # unreadable


def test_state_repair_binds_what_the_block_reads_and_touches_no_other_object_of_the_class() -> None:
    """The block's names bound as they were where it began (an alias and what it aliases), never a block
    that names another mug (both declared first, then used: that block would wash Mug_1 again), and never a
    name the program already uses for the new variables."""
    every = Check("Mug", CLEAN, every=True)
    aliased = 'sink = InteractionObject("SinkBasin")\ntarget = sink\nmug = InteractionObject("Mug")\nmug.pickup_and_place(target)\n'
    assert state_repair([every], room("Mug_3"), aliased) == (
        "sink = InteractionObject('SinkBasin')\ntarget = sink\n"
        "every_0_0 = InteractionObject('Mug', object_instance='Mug_3')\nevery_0_0.pickup_and_place(target)\n")
    first = ('pot = InteractionObject("Mug", object_instance="Mug_1")\npot_2 = InteractionObject("Mug", object_instance="Mug_2")\n'
             'sink = InteractionObject("SinkBasin")\npot.pickup_and_place(sink)\npot_2.pickup_and_place(sink)\n')
    assert state_repair([every], room("Mug_3"), first) == ""
    taken = 'every_0_0 = InteractionObject("SinkBasin")\nmug = InteractionObject("Mug")\nmug.pickup_and_place(every_0_0)\n'
    assert "every1_0_0.pickup_and_place(every_0_0)" in state_repair([every], room("Mug_3"), taken)


def test_an_episode_washes_the_third_pot_the_copy_left(tmp_path, embedder) -> None:
    """A demonstration washed the two pots of its room; the new room has three. The copy washes two and
    ends without an error; the end-state check finds a dirty pot, and with finish_states the agent washes
    it with the copy's own steps (one program, not a copy) and the task is done. Without it the episode
    ends unfinished (there is no other copy)."""
    from icalkit.agents.api.runtime import ApiConfig
    from icalkit.agents.context import full_state
    from icalkit.agents.executor import ExecutorLimits
    from icalkit.agents.planner import Planner, PlannerConfig
    from icalkit.envs.household.scene import build_world
    from icalkit.envs.household.simulator import Simulator
    from icalkit.envs.household.tasks.sampler import sample_tasks

    mem, start = copy_fixtures.recorded_memory("Clean All X", 4, "0-00003", tmp_path / "pots.db", embedder)
    assert sum(o.startswith("Pot_") for o in start) == 2
    task = next(t for t in sample_tasks(["Clean All X"], 2, "valid_unseen", 0) if t.task_id.endswith("0-00001"))
    assert task.params["#0"] == "Pot" and sum(o.startswith("Pot_") for o in full_state(build_world(task))) == 3
    limits = ExecutorLimits(api=ApiConfig(oracle_object_map=True, precondition_checks=True))

    def run(**cfg):
        planner = Planner(None, mem, PlannerConfig(mode="copy", k=1, ground_ids=True, precondition_checks=True,
                                                   mention_reground=True, copy_fallback=True,
                                                   silent_next_copy="end_state", **cfg), limits)
        return planner.run_episode(task, Simulator(build_world(task)))

    washed = run(finish_states=True)
    assert washed.success and washed.attempts == 2 and "every_0_0" in washed.programs[-1]
    assert "not yet every Pot (dirty=False" in washed.errors[0]
    left = run()
    assert not left.success and left.attempts == 1 and "not yet every Pot" in left.errors[0]
    with pytest.raises(ValueError, match="finish_states .*planner.silent_next_copy=end_state"):
        PlannerConfig(mode="copy", finish_states=True).validate()
    with pytest.raises(ValueError, match="finish_states .*planner.precondition_checks=true"):
        PlannerConfig(mode="copy", copy_fallback=True, silent_next_copy="end_state", finish_states=True).validate()


def test_finish_repairs_the_states_only_when_it_makes_them_all(embedder) -> None:
    """CopyProgress.finish: the "every" states by the copy's block, then the placements onto named
    places; a state no block makes (no cup in the copy) leaves nothing to run yet — not the placements
    alone, which the one repair of the episode would spend early — and without finish_states the
    placements are repaired only when nothing else is left, as before."""
    from icalkit.agents.copy_progress import CopyProgress
    from icalkit.agents.executor import Executor
    from icalkit.envs.household.scene import build_world
    from icalkit.envs.household.simulator import Simulator
    from icalkit.envs.household.tasks.sampler import sample_tasks

    task = sample_tasks(["Coffee"], 1, "valid_unseen", 0)[0]
    said = [("Commander", "wash the mugs and put one on the dining table")]
    executor = Executor(Simulator(build_world(task)))
    now = {**room("Mug_3"), "DiningTable_1": {"parent": None}}
    every, served = Check("Mug", CLEAN, every=True), Check("Mug", (), "DiningTable", (), 1)
    both = CopyProgress(said, executor, embedder, places=True, states=True)
    assert both.places == {"DiningTable"}
    program = both.finish([every, served], now, {"Mug_1"}, COPY)
    assert program.index("every_0_0.pickup_and_place(sink_basin)") < program.index("item_0_0.pickup_and_place(spot_0)")
    assert both.finish([Check("Cup", CLEAN, every=True), served], now, {"Mug_1"}, COPY) == ""
    assert both.finish([served], now, {"Mug_1"}, COPY).startswith("spot_0 = ")
    moves_only = CopyProgress(said, executor, embedder, places=True)
    assert moves_only.finish([every, served], now, {"Mug_1"}, COPY) == ""
    assert moves_only.finish([served], now, {"Mug_1"}, COPY) == both.finish([served], now, {"Mug_1"}, COPY)
