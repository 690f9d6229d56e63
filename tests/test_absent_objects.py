"""planner.drop_absent: a copy leaves out the objects its room lacks that its demonstration only moved
(icalkit/agents/absent_objects.py) — on program text, and on the real simulator and executor."""

from __future__ import annotations

import copy_fixtures
import pytest
from planner_doubles import one_torch_thread

from icalkit.agents.absent_objects import changed_classes, drop_absent, drop_sliced_moves
from icalkit.agents.executor import Executor
from icalkit.agents.planner import Planner, PlannerConfig
from icalkit.envs.household.catalog import OBJECT_TYPES
from icalkit.envs.household.scene import build_world
from icalkit.envs.household.simulator import Simulator
from icalkit.envs.household.tasks.sampler import sample_tasks
from icalkit.memory.example import Example
from icalkit.memory.example_memory import ExampleMemory

single_thread = pytest.fixture(scope="module", autouse=True)(one_torch_thread)
coffee_memory = copy_fixtures.coffee_memory  # a fixture
embedder = copy_fixtures.embedder  # a fixture

PROGRAM = '''fork = InteractionObject("Fork", object_instance="Fork_1")
counter = InteractionObject("CounterTop")
fork.pickup_and_place(counter)
cup = InteractionObject("Cup")
cup.pickup_and_place(InteractionObject("SinkBasin"))
cup.pour(InteractionObject("HousePlant"))
shelf = InteractionObject("Shelf")
mug = InteractionObject("Mug")
mug.pickup_and_place(shelf)
knife = InteractionObject("Knife")
knife.pickup()
tomato = InteractionObject("Tomato")
tomato.slice()
piece = InteractionObject("TomatoSliced", parent_object=tomato)
piece.pickup_and_place(counter)
also_fork = fork
also_fork.go_to()
fork = InteractionObject("Mug")
fork.pickup()
'''


def test_only_absent_objects_the_demonstration_merely_moved_are_left_out():
    room = {"CounterTop", "SinkBasin", "HousePlant", "Mug", "Tomato", "ButterKnife"}  # no Fork, Cup, Shelf, Knife
    program, left_out = drop_absent(PROGRAM, room, changed=set())
    assert left_out == ["Fork"]
    lines = program.splitlines()
    assert not any("Fork" in line or "also_fork" in line for line in lines)  # its declaration, uses, alias
    assert "fork.pickup_and_place(counter)" not in lines
    assert "cup.pour(InteractionObject(\"HousePlant\"))" in lines  # poured from: it does something
    assert "mug.pickup_and_place(shelf)" in lines  # a place the room lacks: the executor's to substitute
    assert "knife.pickup()" in lines  # the executor cuts with the kind the room has
    assert "piece.pickup_and_place(counter)" in lines  # a piece whose whole is in the room
    assert lines[-2:] == ['fork = InteractionObject("Mug")', "fork.pickup()"]  # the name rebound to a mug
    # a class whose goal attributes the demonstration changed stays: its error says the copy is wrong
    assert drop_absent(PROGRAM, room, changed={"Fork"}) == (PROGRAM, [])
    assert drop_absent(PROGRAM, room | {"Fork"}, changed=set()) == (PROGRAM, [])
    assert drop_absent("fork.pickup(\n", room, set()) == ("fork.pickup(\n", [])  # unreadable: the executor's


def test_places_aliases_and_blocks_are_handled_with_care():
    room = {"CounterTop", "StoveBurner", "Potato", "Mug"}  # no Pan, Fork, Plate
    cooked = ('pan = InteractionObject("Pan")\nstove = InteractionObject("StoveBurner")\n'
              'pan.pickup_and_place(stove)\npiece = InteractionObject("PotatoSliced")\npiece.pickup_and_place(pan)\n')
    assert drop_absent(cooked, room, set()) == (cooked, [])  # a place (a receptacle, put on): the executor's
    plate = 'plate = InteractionObject("Plate")\nplate.pickup()\n'
    assert drop_absent(plate, room, set()) == (plate, [])  # a receptacle class is a place too
    twice = ('a = b = InteractionObject("Fork")\ncounter = InteractionObject("CounterTop")\n'
             "b.pickup_and_place(counter)\nc, m = a, InteractionObject(\"Mug\")\nm.pickup()\n")
    program, left_out = drop_absent(twice, room, set())  # every target goes, tuple elements too
    assert left_out == ["Fork"] and program == 'counter = InteractionObject("CounterTop")\n'
    loop = ('fork = InteractionObject("Fork")\nmug = InteractionObject("Mug")\n'
            "for thing in [fork, mug]:\n    thing.pickup()\n")
    assert drop_absent(loop, room, set()) == (loop, [])  # a block naming it: nothing is cut


def test_changed_classes_are_the_demonstrations_goal_attribute_changes_renamed():
    ex = Example(task_id="t", task_type="Coffee", instruction="x", observed_changes=[
        {"object": "Mug_1", "attribute": "filled", "before": False, "after": True},
        {"object": "Fork_1", "attribute": "parent", "before": "SinkBasin_1", "after": "CounterTop_1"},
        {"object": "AppleSliced_2", "attribute": "sliced", "before": None, "after": True}])
    assert changed_classes(ex, {"Mug": "Cup", "Apple": "Tomato"}) == {"Cup", "TomatoSliced"}


def test_a_copy_runs_past_an_absent_object_its_demonstration_only_moved(coffee_memory, tmp_path, embedder):
    """A Coffee demonstration that first took a fork (say) out of the sink, copied into a room with no
    object of that class: without the setting the copy fails on its first line and no coffee is made;
    with it the detour is left out and the coffee is made."""
    _, examples, _ = coffee_memory
    task = sample_tasks(["Coffee"], 1, "valid_unseen", 0)[0]
    room = {o.object_type for o in build_world(task).objects.values()}
    cls = next(c for c in ("Fork", "PaperTowelRoll", "Pen", "Pencil", "Watch", "KeyChain", "CreditCard")
               if c not in room and OBJECT_TYPES[c].pickupable)
    detour = (f'thing = InteractionObject("{cls}")\ncounter_top = InteractionObject("CounterTop")\n'
              "thing.pickup_and_place(counter_top)\n")
    mem = ExampleMemory(tmp_path / "detour.db", embedder)
    mem.add_many([Example(task_id=examples[0].task_id, task_type="Coffee", instruction="Make coffee",
                          revised_program=detour + examples[0].revised_program)])

    def run(**cfg):
        planner = Planner(None, mem, PlannerConfig(mode="copy", k=1, ground_ids=True, **cfg))
        return planner.run_episode(task, Simulator(build_world(task)))

    failed = run()
    assert not failed.success and f"No {cls} has been found" in failed.errors[0]
    dropped = run(drop_absent=True)
    assert dropped.success and dropped.errors == [] and cls not in dropped.programs[0]
    assert dropped.programs[0].startswith('counter_top = InteractionObject("CounterTop")')
    with pytest.raises(ValueError, match="drop_absent"):
        PlannerConfig(mode="ical", drop_absent=True).validate()


SLICES = '''tomato = InteractionObject("Tomato")
counter = InteractionObject("CounterTop")
tomato.pickup_and_place(counter)
knife = InteractionObject("Knife")
knife.pickup()
tomato.slice()
knife.put_down()
piece = InteractionObject("TomatoSliced", parent_object=tomato)
bowl = InteractionObject("Bowl")
piece.pickup_and_place(bowl)
'''


def test_drop_sliced_moves_leaves_out_moving_a_whole_the_room_holds_only_in_pieces():
    program, left_out = drop_sliced_moves(SLICES, {"TomatoSliced", "CounterTop", "Knife", "Bowl"})
    assert left_out == ["Tomato"] and "tomato.pickup_and_place(counter)" not in program
    assert program == SLICES.replace("tomato.pickup_and_place(counter)\n", "")  # the slicing and pieces stay
    assert drop_sliced_moves(SLICES, {"Tomato", "TomatoSliced", "Bowl"}) == (SLICES, [])  # a whole is left
    assert drop_sliced_moves(SLICES, {"Bowl", "Knife"}) == (SLICES, [])  # no tomato at all: drop_absent's case
    assert drop_sliced_moves("tomato.pickup(\n", {"TomatoSliced"}) == ("tomato.pickup(\n", [])
    rebound = SLICES.replace("tomato.pickup_and_place(counter)", 'tomato = InteractionObject("Bowl")\ntomato.pickup()')
    assert drop_sliced_moves(rebound, {"TomatoSliced", "Bowl"}) == (rebound, [])  # the name means a bowl now
    looped = SLICES.replace("tomato.pickup_and_place(counter)",
                            'for tomato in [InteractionObject("Bowl")]:\n    tomato.go_to()\ntomato.pickup()')
    assert drop_sliced_moves(looped, {"TomatoSliced", "Bowl"}) == (looped, [])  # a loop rebinds it too
    looked = SLICES.replace("tomato.pickup_and_place(counter)", "tomato.go_to()")
    assert drop_sliced_moves(looked, {"TomatoSliced"}) == (looked, [])  # going to it reaches its pieces


def test_drop_absent_keeps_a_whole_the_room_holds_as_pieces():
    """A bread already cut is in the room as its slices: a copy that only moves it and names its pieces
    by it keeps both (drop_sliced is what leaves the moves out)."""
    moved = ('bread = InteractionObject("Bread")\ncounter = InteractionObject("CounterTop")\n'
             'bread.pickup_and_place(counter)\npiece = InteractionObject("BreadSliced", parent_object=bread)\n'
             'piece.pickup_and_place(counter)\n')
    assert drop_absent(moved, {"BreadSliced", "CounterTop"}, set()) == (moved, [])
    assert drop_absent(moved, {"CounterTop"}, set())[1] == ["Bread", "BreadSliced"]  # no bread at all


def test_a_copy_runs_past_a_whole_an_earlier_attempt_cut(tmp_path, embedder):
    """An N Slices demonstration that moves the tomato to the counter before cutting it, copied where
    the tomato was already cut (as by an earlier copy of the episode): without the setting the copy
    fails on its first move ("already sliced"); with it that move is left out and the slice served."""
    task = next(t for t in sample_tasks(["N Slices Of X In Y"], 4, "valid_seen", 0) if t.task_id.endswith("0-00003"))
    assert task.params["#1"] == "Tomato" and task.params["#0"] == "1" and task.params["#3"] == "Bowl"
    mem = ExampleMemory(tmp_path / "slices.db", embedder)
    mem.add_many([Example(task_id="train/n_slices_of_x_in_y/0-00000", task_type="N Slices Of X In Y",
                          instruction="Put a slice of tomato in a bowl", revised_program=SLICES)])

    def run(**cfg):
        sim = Simulator(build_world(task))
        cut = Executor(sim).run('knife = InteractionObject("Knife")\nknife.pickup()\n'
                               'InteractionObject("Tomato").slice()\nknife.put_down()\n', task)
        assert cut.completed and not cut.success and "Tomato" not in {o.object_type for o in sim.world.objects.values()}
        planner = Planner(None, mem, PlannerConfig(mode="copy", k=1, ground_ids=True, precondition_checks=True, **cfg))
        return planner.run_episode(task, sim)

    failed = run()
    assert not failed.success and "already sliced" in failed.errors[0]
    done = run(drop_sliced=True)
    assert done.success and done.errors == [] and "tomato.pickup_and_place(counter)" not in done.programs[0]
    with pytest.raises(ValueError, match="drop_sliced"):
        PlannerConfig(mode="ical", drop_sliced=True).validate()
    with pytest.raises(ValueError, match="precondition_checks"):
        PlannerConfig(mode="copy", drop_sliced=True).validate()
    PlannerConfig(mode="copy", drop_sliced=True, precondition_checks=True).validate()
