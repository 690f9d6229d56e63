"""The end state a copied demonstration reached, as checks on the room (planner.silent_next_copy=end_state)."""

from __future__ import annotations

import pytest

from icalkit.agents.demo_end_state import (
    Check,
    acted_on,
    applicable,
    demo_checks,
    end_state,
    named_classes,
    placement_repair,
    program_placements,
    renamed,
    unmet,
    unnamed_in_episode,
)
from icalkit.memory.example import Example

PROGRAM = """\
bowl = InteractionObject("Bowl", object_instance="Bowl_1")
bowl_2 = InteractionObject("Bowl", object_instance="Bowl_2")
sink = InteractionObject("SinkBasin")
bowl.pickup_and_place(sink)
bowl_2.pickup_and_place(sink)
apple = InteractionObject("Apple")
apple.slice()
piece = InteractionObject("AppleSliced", parent_object=apple)
plate = InteractionObject("Plate")
piece.pickup_and_place(plate)
"""


def change(obj: str, attr: str, before, after) -> dict:
    return {"object": obj, "attribute": attr, "before": before, "after": after}


def demo() -> Example:
    """Two dirty bowls washed in the sink; an apple cut on the table, one piece put on the clean plate."""
    start = {"Bowl_1": {"label": "Bowl", "dirty": True, "parent": "CounterTop_1"},
             "Bowl_2": {"label": "Bowl", "dirty": True, "parent": "Shelf_1"},
             "Plate_1": {"label": "Plate", "dirty": False, "parent": "CounterTop_1"},
             "Apple_1": {"label": "Apple", "sliced": False, "cooked": False, "parent": "DiningTable_1"},
             "SinkBasin_1": {"label": "SinkBasin", "parent": None}, "CounterTop_1": {"label": "CounterTop", "parent": None}}
    changes = [change("Bowl_1", "dirty", True, False), change("Bowl_1", "parent", "CounterTop_1", "SinkBasin_1"),
               change("Bowl_2", "dirty", True, False), change("Bowl_2", "parent", "Shelf_1", "SinkBasin_1"),
               change("Apple_1", "sliced", False, None), change("Apple_1", "cooked", False, None),
               change("Apple_1", "parent", "DiningTable_1", None)]
    for i, parent in enumerate(("Plate_1", "DiningTable_1", "DiningTable_1"), 1):
        changes += [change(f"AppleSliced_{i}", "sliced", None, True), change(f"AppleSliced_{i}", "cooked", None, False),
                    change(f"AppleSliced_{i}", "parent", None, parent)]
    return Example(task_id="t", task_type="x", instruction="x", initial_state=start, observed_changes=changes,
                   revised_program=PROGRAM)


def test_the_end_state_applies_the_changes_and_drops_what_was_sliced_away() -> None:
    ex = demo()
    end = end_state(ex.initial_state, ex.observed_changes)
    assert "Apple_1" not in end and end["AppleSliced_1"] == {"sliced": True, "cooked": False, "parent": "Plate_1"}
    assert end["Bowl_2"]["dirty"] is False and end["Bowl_2"]["parent"] == "SinkBasin_1"
    assert program_placements(PROGRAM) == {("Bowl", "SinkBasin"), ("AppleSliced", "Plate")}
    assert program_placements("def (") == set()
    assert renamed("AppleSliced", {"Apple": "Tomato"}) == "TomatoSliced" and renamed("Plate", {}) == "Plate"


def test_checks_of_the_demonstration_and_a_room_that_meets_them_or_not() -> None:
    checks = demo_checks(demo(), {"Apple": "Tomato", "Bowl": "Pot"})
    assert sorted(c.text() for c in checks) == [
        # one of the three pieces was put on the plate; the two cut on the table are not placements
        "1 or more TomatoSliced (cooked=False, sliced=True) on a Plate (dirty=False)",
        "each acted-on Plate (dirty=False)",  # the plate it served on was clean
        "each acted-on TomatoSliced (cooked=False, sliced=True)",  # cut by it: no "every" for the pieces
        "every Pot (dirty=False)",  # it washed both of its bowls: all of them
        "every Pot (dirty=False) on a SinkBasin"]  # and moved both to the sink
    pots = demo()
    for c in pots.observed_changes[:4:2]:  # a pot washed in the sink is filled with water; a plate holds none
        pots.observed_changes += [change(c["object"], "filled", False, True), change(c["object"], "liquid", None, "water")]
    assert "every Pot (dirty=False, filled=True, liquid=water)" in {c.text() for c in demo_checks(pots, {"Bowl": "Pot"})}
    assert "every Plate (dirty=False)" in {c.text() for c in demo_checks(pots, {"Bowl": "Plate"})}
    assert applicable("Plate", (("dirty", False), ("filled", True))) == (("dirty", False),)
    assert applicable("TomatoSliced", (("sliced", True), ("cooked", False))) == (("sliced", True), ("cooked", False))

    def room(pot2_dirty: bool, plate_dirty: bool, pieces_on_plate: int) -> dict:
        state = {"Pot_1": {"dirty": False, "parent": "SinkBasin_1"},
                 "Pot_2": {"dirty": pot2_dirty, "parent": "SinkBasin_1" if not pot2_dirty else "Stove_1"},
                 "Plate_1": {"dirty": plate_dirty, "parent": "CounterTop_1"},
                 "SinkBasin_1": {"parent": None}, "CounterTop_1": {"parent": None}, "Stove_1": {"parent": None}}
        for i in range(3):
            state[f"TomatoSliced_{i}"] = {"sliced": True, "cooked": False,
                                          "parent": "Plate_1" if i < pieces_on_plate else "CounterTop_1"}
        return state

    acted = {"Pot_1", "Plate_1", "TomatoSliced_0"}
    assert unmet(checks, room(False, False, 1), acted) == []
    left = {c.text() for c in unmet(checks, room(True, False, 1), acted)}
    assert left == {"every Pot (dirty=False)", "every Pot (dirty=False) on a SinkBasin"}  # a second pot, dirty
    left = {c.text() for c in unmet(checks, room(False, True, 1), acted)}  # the piece on a dirty plate
    assert left == {"each acted-on Plate (dirty=False)",
                    "1 or more TomatoSliced (cooked=False, sliced=True) on a Plate (dirty=False)"}
    assert [c.text() for c in unmet(checks, room(False, False, 0), acted)] == \
        ["1 or more TomatoSliced (cooked=False, sliced=True) on a Plate (dirty=False)"]
    # a plate nobody acted on may be dirty: "each acted-on" is the episode's own plate
    assert unmet([Check("Plate", (("dirty", False),))], room(False, True, 1), set()) == []
    # a placement of a class the room never had (nor its whole) asks nothing of it; judged on the start
    fork, toast = Check("Fork", (), "CounterTop", (), count=1), Check("Bread", (), "CounterTop", (), count=1)
    start = room(False, False, 1)
    assert unmet([fork], start, acted, start) == [] and unmet([fork], start, acted) == [fork]
    cut = {**start, "Bread_1": {"sliced": False, "parent": "Stove_1"}}  # a bread there at the start, cut up since
    assert unmet([toast], start, acted, cut) == [toast]


def test_every_needs_the_demonstration_to_have_made_it_so() -> None:
    """Two plates clean from the start are no "every plate clean"; a knife is no goal; a receptacle the
    state does not hold is no error."""
    ex = demo()
    ex.initial_state["Plate_2"] = {"label": "Plate", "dirty": False, "parent": "Shelf_1"}
    ex.initial_state["Knife_1"] = {"label": "Knife", "parent": "CounterTop_1"}
    ex.initial_state["Knife_2"] = {"label": "Knife", "parent": "DiningTable_1"}
    ex.observed_changes.append(change("Knife_2", "parent", "DiningTable_1", "CounterTop_1"))
    ex.revised_program += 'knife = InteractionObject("Knife")\ncounter = InteractionObject("CounterTop")\nknife.place(counter)\n'
    texts = {c.text() for c in demo_checks(ex, {})}
    assert "each acted-on Plate (dirty=False)" in texts and "every Plate (dirty=False)" not in texts
    assert not any("Knife" in t for t in texts)  # a tool: where it ends is no goal
    bare = Example(task_id="t", task_type="x", instruction="x", revised_program=PROGRAM,
                   observed_changes=[change("Bowl_1", "parent", "Shelf_1", "SinkBasin_1")])
    assert [c.text() for c in demo_checks(bare, {})] == ["1 or more Bowl on a SinkBasin"]


def test_the_episode_acted_on_what_changed_and_where_it_went() -> None:
    start = {"Pot_1": {"dirty": True, "parent": "Stove_1"}, "Sink_1": {"parent": None},
             "Plant_1": {"filled": False, "parent": "Floor_1"}, "Cup_1": {"parent": "Shelf_1"}}
    now = {"Pot_1": {"dirty": False, "parent": "Sink_1"}, "Sink_1": {"parent": None},
           "Plant_1": {"filled": True, "parent": "Floor_1"}, "Cup_1": {"parent": "Shelf_1"},
           "TomatoSliced_1": {"parent": "Sink_1"}}
    assert acted_on(start, now) == {"Pot_1", "Sink_1", "Plant_1", "TomatoSliced_1"}  # watered, not moved
    # an episode's: only what its calls targeted (not the piece that fell in the sink beside the pot)
    assert acted_on(start, now, ["Pot_1", "Plant_1", "Cup_1"]) == {"Pot_1", "Sink_1", "Plant_1"}


def test_a_demonstration_without_recorded_changes_has_no_checks() -> None:
    assert demo_checks(Example(task_id="t", task_type="x", instruction="x", revised_program=PROGRAM), {}) == []


def test_objects_the_dialogue_names_that_the_episode_never_acted_on() -> None:
    """A salad with a cooked potato slice, copied from a demonstration without one: the potato the
    dialogue names was never acted on. Near-names ("mug" for the Cup), pieces, furniture and the objects
    acted on do not count."""
    from icalkit.memory.embed import SentenceTransformerEmbedder

    dialogue = [("Commander", "make a salad: a slice of lettuce and a cooked slice of potato on a plate"),
                ("Driver", "done, and the mug?"), ("Commander", "the knife is by the sink")]
    room = ["Lettuce", "LettuceSliced", "Potato", "PotatoSliced", "Plate", "Cup", "Knife", "SinkBasin", "Mug"]
    embedder = SentenceTransformerEmbedder()
    acted = ["LettuceSliced_2", "Plate_1", "Knife_1", "Mug_1"]
    assert unnamed_in_episode(dialogue, room, acted, embedder) == ["Potato"]
    assert unnamed_in_episode(dialogue, room, [*acted, "PotatoSliced_3"], embedder) == []  # a piece of it
    assert unnamed_in_episode(dialogue, room, acted[:1], embedder) == ["Knife", "Mug", "Plate", "Potato"]


def test_a_container_served_on_a_named_place_must_end_there_and_the_agent_can_move_it() -> None:
    """The demonstration served its apple piece on a plate that stood on the counter, a place the new
    dialogue renames to the dining table it names: the plate the episode acted on must end on the dining
    table (not any plate there), and while only such placements are left the agent writes the move
    itself — not for a place the dialogue does not name (a demonstration's put-away shelf)."""
    checks = demo_checks(demo(), {"CounterTop": "DiningTable"}, places={"DiningTable"})
    served = Check("Plate", (("dirty", False),), "DiningTable", (), 0)
    assert served in checks and served.text() == "each acted-on Plate (dirty=False) on a DiningTable"
    assert served not in demo_checks(demo(), {"CounterTop": "DiningTable"})  # no place named: no check
    assert served not in demo_checks(demo(), {}, places={"DiningTable"})  # served on the counter: not named
    room = {"Plate_1": {"dirty": False, "parent": "CounterTop_1"}, "Plate_2": {"dirty": False, "parent": "DiningTable_1"},
            "CounterTop_1": {"parent": None}, "DiningTable_1": {"parent": None}, "DiningTable_2": {"parent": None}}
    assert unmet([served], room, {"Plate_1"}) == [served] and unmet([served], room, {"Plate_2"}) == []
    assert placement_repair([served], room, {"Plate_1", "DiningTable_2"}, {"DiningTable"}) == (
        'spot_0 = InteractionObject("DiningTable", object_instance="DiningTable_2")\n'
        'item_0_0 = InteractionObject("Plate", object_instance="Plate_1")\n'
        "item_0_0.pickup_and_place(spot_0)\n")
    assert placement_repair([served], room, {"Plate_1"}, {"Shelf"}) == ""  # not a place the dialogue names
    state = Check("Plate", (("dirty", False),))
    assert placement_repair([served, state], room, {"Plate_1"}, {"DiningTable"}) == ""  # a state is left too
    counted = Check("Apple", (), "DiningTable", (), 2)
    apples = {"Apple_1": {"parent": "DiningTable_1"}, "Apple_2": {"parent": "Fridge_1"}, "Apple_3": {"parent": "Sink_1"},
              "DiningTable_1": {"parent": None}}
    assert placement_repair([counted], apples, {"Apple_3"}, {"DiningTable"}).count("pickup_and_place") == 1
    assert 'object_instance="Apple_3"' in placement_repair([counted], apples, {"Apple_3"}, {"DiningTable"})


def test_the_placement_program_runs_in_the_executor_and_meets_the_check() -> None:
    """The program :func:`placement_repair` writes names the room's objects by id and runs as it is in the
    real executor (the object map lets the agent name every object): the plate ends on the table."""
    from icalkit.agents.api.runtime import ApiConfig
    from icalkit.agents.context import full_state
    from icalkit.agents.executor import Executor, ExecutorLimits
    from icalkit.envs.household.scene import build_world
    from icalkit.envs.household.simulator import Simulator
    from icalkit.envs.household.tasks.sampler import sample_tasks

    task = next(t for t in sample_tasks(["Breakfast"], 5, "valid_unseen", 0) if t.task_id.endswith("0-00002"))
    executor = Executor(Simulator(build_world(task)), ExecutorLimits(api=ApiConfig(oracle_object_map=True,
                                                                                   precondition_checks=True)))
    state = full_state(executor.sim.world)
    plate = sorted(o for o in state if o.startswith("Plate_") and not state[o].get("parent", "").startswith("Dining"))[0]
    served = Check("Plate", (), "DiningTable", (), 0)
    assert unmet([served], state, {plate}) == [served]
    trace = executor.run(placement_repair([served], state, {plate}, {"DiningTable"}), task)
    assert trace.failure is None and unmet([served], full_state(executor.sim.world), {plate}) == []


def test_the_places_a_dialogue_names() -> None:
    """The objects a dialogue names, and the places: furniture that takes anything, by a near-name too
    ("kitchen counter"), not an appliance a word is close to ("toast") nor "coffee" for the coffee table."""
    from icalkit.agents.copy_progress import PLACE_SCORE
    from icalkit.memory.embed import SentenceTransformerEmbedder

    room = ["DiningTable", "CounterTop", "CoffeeTable", "Mug", "Toaster", "Plate", "Bread"]
    dialogue = [("Commander", "breakfast time! a mug of coffee and a plate of toast, all on the dining table")]
    embedder = SentenceTransformerEmbedder()
    assert named_classes(dialogue, room, embedder, PLACE_SCORE, places=True) == ["DiningTable"]  # not the Toaster
    assert named_classes([("Commander", "put it all on the kitchen counter")], room, embedder, PLACE_SCORE,
                         places=True) == ["CounterTop"]
    assert named_classes(dialogue, room, embedder) == ["Mug", "Plate"]  # "toast" is not the bread's own word
    assert named_classes([("Commander", "wash all of the pots and pans!")], ["Pot", "Pan", "Mug"], embedder) == [
        "Pan", "Pot"]  # a plural names the class as its singular does
    # a cup of coffee is a measure: the Cup is not named, the coffee machine fills the mug; a cup of water names it
    for said in ("could really use a cup of joe", "cup of coffee and some cooked potato", "2 cups o' coffee pls"):
        assert named_classes([("Commander", said)], ["Cup", "Mug", "CoffeeMachine"], embedder) == [], said
    assert named_classes([("Commander", "fill a cup of water")], ["Cup", "Mug"], embedder) == ["Cup"]
    towels = [("Commander", "All hand towels should end up in the same cabinet")]
    assert unnamed_in_episode(towels, ["HandTowel", "Towel", "Cabinet"], {"HandTowel_1"}, embedder) == []
    assert unnamed_in_episode(towels, ["HandTowel", "Towel", "Cabinet"], set(), embedder) == ["HandTowel"]


def test_silent_end_decisions_are_judged_by_the_oracle_twin_on_the_same_copies() -> None:
    from icalkit.agents.feedback import NEXT_COPY_TEXT, NOT_DONE_TEXT
    from icalkit.eval.silent_ends import silent_end_decisions

    def rec(method: str, task: str, programs: list[str], errors: list[str], last_failed: bool = False) -> dict:
        return {"method": method, "task_id": task, "programs": programs, "errors": errors,
                "trace": [{"success": True}, {"success": not last_failed}]}

    go, not_done, failed = f"{NEXT_COPY_TEXT}: not yet every Pot", f"{NOT_DONE_TEXT} (1 of 2)", "Code failed at line 1"
    records = [
        # unfinished after a, and it went on; finished after b, and it stopped
        rec("m", "t1", ["a", "b"], [go]), rec("o", "t1", ["a", "b"], [not_done]),
        # finished after a, yet it went on; c is not what the twin ran next: no judgement after it
        rec("m", "t2", ["a", "c"], [go]), rec("o", "t2", ["a"], []),
        # a failed copy decides nothing; then unfinished, and it stopped
        rec("m", "t3", ["x", "a"], [failed]), rec("o", "t3", ["x", "a", "b"], [failed, not_done]),
        # unfinished after a, it went on; unfinished after b, it stopped
        rec("m", "t4", ["a", "b"], [go]), rec("o", "t4", ["a", "b"], [not_done, not_done]),
            rec("m", "t5", ["a"], []),  # no twin
        # it stopped, but no candidate was left to copy: nothing was decided
        {**rec("m", "t6", ["a"], []), "copies_left": 0}, rec("o", "t6", ["a"], []),
        # its last copy failed after the task was done (no error recorded): nothing was decided
        rec("m", "t7", ["a"], [], last_failed=True), rec("o", "t7", ["a"], [], last_failed=True),
    ]
    assert silent_end_decisions(records, "m", "o", max_replans=3) == {
        "finished_stop": 1, "finished_go_on": 1, "unfinished_go_on": 2, "unfinished_stop": 2}
    # the last copy max_replans allows decides nothing: only the first copies count
    assert silent_end_decisions(records, "m", "o", max_replans=1) == {
        "finished_stop": 0, "finished_go_on": 1, "unfinished_go_on": 2, "unfinished_stop": 0}
    with pytest.raises(ValueError, match="no episode of the oracle twin"):
        silent_end_decisions(records, "m", "copy_next_oracle")
