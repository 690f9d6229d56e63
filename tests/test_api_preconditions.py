"""HELPER's pre-condition checks in the executor (``ApiConfig.precondition_checks``): each check
runs the same program strict and checked on the real simulator."""

from __future__ import annotations

import copy

import pytest
from api_world import executor, make_kitchen, toast_program, toast_task

from icalkit.agents.api.household import PUT_AWAY, PUT_DOWN_SURFACES
from icalkit.agents.feedback import action_feedback
from icalkit.envs.household.actions import INTERACTIONS
from icalkit.envs.household.receptacles import can_hold
from icalkit.envs.household.scene import generate_scene
from icalkit.envs.household.state import World


@pytest.fixture(scope="module")
def kitchen() -> World:
    return make_kitchen()


def test_precondition_checks_let_a_restarted_program_continue(kitchen: World) -> None:
    # a re-plan that starts over from the first step: "already holding", "already open"
    restarted = toast_program(kitchen).replace("bread.slice()", "knife.pickup()\ncabinet.open()\nbread.slice()")
    strict = executor(kitchen).run(restarted, toast_task())
    assert strict.failure.line == 6 and action_feedback(strict).endswith("You are already holding the Knife.")
    checked = executor(kitchen, precondition_checks=True).run(restarted, toast_task())
    assert checked.failure is None and checked.success
    repeats = [c for c in checked.calls if c.line in (6, 7)]
    assert [(c.method, c.success, c.primitives) for c in repeats] == [("pickup", True, []), ("open", True, [])]


def test_precondition_checks_put_down_open_first_and_keep_real_errors(kitchen: World) -> None:
    program = ("knife = InteractionObject('Knife')\nmug = InteractionObject('Mug')\n"
               "cabinet = InteractionObject('Cabinet')\nknife.pickup()\nmug.pickup()\n"
               "cabinet.close()\nmug.place(cabinet)\n")
    strict = executor(kitchen).run(program)
    assert strict.failure.line == 5 and "put it down before picking up the Mug" in strict.failure.message
    ex = executor(kitchen, precondition_checks=True)
    trace = ex.run(program)
    assert trace.failure is None, trace.failure
    world = ex.sim.world
    knife, mug, cabinet = (world.objects[trace.calls[i].object] for i in (0, 1, 2))
    assert [p.action for p in trace.calls[1].primitives if p.action in ("Place", "Pickup")] == ["Place", "Pickup"]
    assert knife.parent is not None and not knife.is_picked_up
    assert [p.action for p in trace.calls[3].primitives][-2:] == ["Open", "Place"]
    assert mug.parent == cabinet.object_id and cabinet.is_open
    # placing an object not in hand picks it up first (a check may have put it down for another pickup)
    program = ("mug = InteractionObject('Mug')\nknife = InteractionObject('Knife')\nmug.pickup()\nknife.pickup()\n"
               "counter = InteractionObject('CounterTop')\nmug.place(counter)\n")
    assert "You are not holding the Mug" in executor(kitchen).run(program.replace("knife.pickup()", "mug.put_down()\nknife.pickup()")).failure.message
    ex = executor(kitchen, precondition_checks=True)
    trace = ex.run(program)
    assert trace.failure is None and ex.sim.world.objects[trace.calls[0].object].parent.startswith("CounterTop")
    assert [p.action for p in trace.calls[-1].primitives if p.action in INTERACTIONS] == ["Place", "Pickup", "Place"]
    # placing onto a plate in a closed cabinet opens the cabinet first
    world = copy.deepcopy(kitchen)
    plate, cabinet = world.of_type("Plate")[0], next(c for c in world.of_type("Cabinet") if not c.is_open)
    world.objects[plate.parent].children.remove(plate.object_id)
    plate.parent = cabinet.object_id
    cabinet.children.append(plate.object_id)
    program = "bread = InteractionObject('Bread')\nbread.pickup()\nbread.place(InteractionObject('Plate'))\n"
    trace = executor(world, precondition_checks=True).run(program)
    assert trace.failure is None, trace.failure
    assert [(p.action, p.target) for p in trace.calls[-1].primitives if p.action in INTERACTIONS] == \
        [("Open", cabinet.object_id), ("Place", plate.object_id)]
    # a full counter top named by class: the mug goes on another counter top with room
    world = copy.deepcopy(kitchen)
    counters = world.of_type("CounterTop")
    program = "mug = InteractionObject('Mug')\nmug.pickup()\nmug.place(InteractionObject('CounterTop'))\n"
    first = executor(world, precondition_checks=True).run(program).primitive_actions[-1][1]
    crowded = world.objects[first]
    fillers = [o for o in world.objects.values() if o.type.kind == "small" and o.parent != crowded.object_id
               and o.object_type != "Mug" and can_hold("CounterTop", o.object_type)]
    for o in fillers[:crowded.type.capacity - len(crowded.children)]:
        world.objects[o.parent].children.remove(o.object_id)
        o.parent = crowded.object_id
        crowded.children.append(o.object_id)
    assert len(crowded.children) == crowded.type.capacity and len(counters) == 2
    assert "The CounterTop is full right now" in executor(world).run(program).failure.message
    trace = executor(world, precondition_checks=True).run(program)
    assert trace.failure is None and trace.primitive_actions[-1][1] != first
    named = program.replace("InteractionObject('CounterTop')", f"InteractionObject('CounterTop', object_instance={first!r})")
    assert "is full" in executor(world).run(named).failure.message
    # named: its choice stands, and a filler of another class moves off it to make room
    trace = executor(world, precondition_checks=True).run(named)
    moves = [a for a in trace.primitive_actions if a[0] in ("Pickup", "Place")]
    assert trace.failure is None and moves[-1] == ("Place", first), moves
    assert moves[-4][0] == "Pickup" and moves[-4][1] in crowded.children
    assert moves[-3][0] == "Place" and moves[-3][1] != first and moves[-2] == moves[0]  # the mug again
    # over capacity (a loaf sliced on it leaves more pieces than places): as many move as it takes
    extra = next(o for o in fillers if o.parent != first)
    world.objects[extra.parent].children.remove(extra.object_id)
    extra.parent = first
    crowded.children.append(extra.object_id)
    assert len(crowded.children) == crowded.type.capacity + 1
    ex = executor(world, precondition_checks=True)
    trace = ex.run(named)
    moves = [a for a in trace.primitive_actions if a[0] in ("Pickup", "Place")]
    assert trace.failure is None and moves[-1] == ("Place", first), moves
    picked = [t for a, t in moves if a == "Pickup"]
    assert len(picked) == 4 and picked[0] == picked[3] and set(picked[1:3]) <= set(crowded.children), moves
    after = ex.sim.world.objects[first].children
    assert len(after) == crowded.type.capacity and not set(picked[1:3]) & set(after)
    # too few of another class to free a place (the rest are mugs, which the program may have put there):
    # nothing moves, and the place fails with the simulator's message
    mug = next(o.object_id for o in world.objects.values() if o.object_type == "Mug")
    for o in [world.objects[c] for c in crowded.children[1:]]:
        o.object_type = "Mug"
    trace = executor(world, precondition_checks=True).run(named.replace("InteractionObject('Mug')",
                                                                        f"InteractionObject('Mug', object_instance={mug!r})"))
    moves = [a for a in trace.primitive_actions if a[0] in ("Pickup", "Place")]
    assert "The CounterTop is full right now" in trace.failure.message
    assert moves == [("Pickup", mug), ("Place", first)], moves  # nothing else was picked up: the failed place
    # nothing of another class to move (a second slice for a full toaster): the simulator's message
    two_slices = toast_program(kitchen).replace("toaster.toggle_on()", "").replace(
        'toast.change_state("toasted", True)',
        "toast2 = InteractionObject('BreadSliced', parent_object=bread)\ntoast2.pickup_and_place(toaster)")
    trace = executor(kitchen, precondition_checks=True).run(two_slices, toast_task())
    assert action_feedback(trace).endswith("`toast2.pickup_and_place(toaster)`: The Toaster is full right now.")
    # ... but a slice an earlier program (an earlier copy of the episode) left in the toaster makes way:
    # it moves to a free surface, and the second program's slice goes in
    ex = executor(kitchen, precondition_checks=True)
    first = ex.run(toast_program(kitchen).replace("toaster.toggle_on()", "").replace('toast.change_state("toasted", True)', ""))
    left = list(next(o for o in ex.sim.world.objects.values() if o.object_type == "Toaster").children)
    assert first.failure is None and len(left) == 1
    again = ex.run("bread = InteractionObject('Bread')\ntoast2 = InteractionObject('BreadSliced', parent_object=bread)\n"
                   "toast2.pickup_and_place(InteractionObject('Toaster'))\n")
    toaster = next(o for o in ex.sim.world.objects.values() if o.object_type == "Toaster")
    assert again.failure is None, again.failure
    moved_to = ex.sim.world.objects[ex.sim.world.objects[left[0]].parent]
    assert left[0] not in toaster.children and len(toaster.children) == 1 and moved_to.object_type in PUT_DOWN_SURFACES
    # a put-away spot this room has none of (a demonstration's shelf, here a toilet in a kitchen): the held
    # object is put down on a free surface and the program goes on; named by instance, or unknown without
    # the oracle object map (it may lie unseen), the place still fails
    assert not any(o.object_type == "Toilet" for o in kitchen.objects.values())
    away = "mug = InteractionObject('Mug')\nmug.pickup_and_place(InteractionObject('Toilet'))\nmug.pickup()\n"
    trace = executor(kitchen, precondition_checks=True).run(away)
    assert trace.failure is None and trace.calls[0].primitives[-1].action == "Place", trace.failure
    assert "No Toilet has been found" in executor(kitchen).run(away).failure.message
    mug_id = next(o.object_id for o in kitchen.objects.values() if o.object_type == "Mug")
    seen = away.replace("InteractionObject('Mug')", f"InteractionObject('Mug', object_instance={mug_id!r})")
    assert "No Toilet has been found" in executor(kitchen, precondition_checks=True, oracle_object_map=False).run(
        seen).failure.message
    named = away.replace("InteractionObject('Toilet')", "InteractionObject('Toilet', object_instance='Toilet_1')")
    assert "never in this room" in executor(kitchen, precondition_checks=True).run(named).failure.message
    # a call that cannot apply still fails: a mug cannot be closed, however its state reads
    trace = executor(kitchen, precondition_checks=True).run("InteractionObject('Mug').close()\n")
    assert trace.failure.kind == "action" and "cannot be opened or closed" in trace.failure.message


def test_making_room_moves_what_the_program_put_there_last(kitchen: World) -> None:
    """A counter with one place left: the program serves a mug there, then a plate. A filler makes room
    for the plate, not the mug the program just served there (a breakfast's coffee beside its toast)."""
    world = copy.deepcopy(kitchen)
    counter = world.of_type("CounterTop")[0]
    fillers = [o for o in world.objects.values() if o.type.kind == "small" and o.parent != counter.object_id
               and o.object_type not in ("Mug", "Plate") and can_hold("CounterTop", o.object_type)]
    for o in fillers[:counter.type.capacity - len(counter.children) - 1]:
        world.objects[o.parent].children.remove(o.object_id)
        o.parent = counter.object_id
        counter.children.append(o.object_id)
    assert len(counter.children) == counter.type.capacity - 1
    spot = f"InteractionObject('CounterTop', object_instance={counter.object_id!r})"
    program = (f"spot = {spot}\nmug = InteractionObject('Mug')\nmug.pickup_and_place(spot)\n"
               "plate = InteractionObject('Plate')\nplate.pickup_and_place(spot)\n")
    ex = executor(world, precondition_checks=True)
    trace = ex.run(program)
    assert trace.failure is None, trace.failure
    after = ex.sim.world.objects[counter.object_id].children
    assert trace.calls[0].object in after and trace.calls[1].object in after, after


def test_precondition_checks_fetch_a_knife_and_slice_before_a_piece_is_named(kitchen: World) -> None:
    # HELPER's checks: a piece named before its object was sliced slices it first, a slice without
    # a knife in hand fetches one, an object in a closed cabinet is taken out after opening it
    program = ("bread = InteractionObject('Bread')\n"
               "toast = InteractionObject('BreadSliced', parent_object=bread)\n"
               "toaster = InteractionObject('Toaster')\n"
               "toast.pickup_and_place(toaster)\n"
               "toaster.toggle_on()\n")
    strict = executor(kitchen).run(program, toast_task())
    assert strict.failure.line == 4 and "No BreadSliced has been found" in strict.failure.message
    ex = executor(kitchen, precondition_checks=True)
    trace = ex.run(program, toast_task())
    assert trace.failure is None and trace.success, trace.failure
    done = [(p.action, p.target.split("_")[0]) for p in trace.calls[0].primitives if p.action in INTERACTIONS]
    assert done == [("Pickup", "Knife"), ("Open", "Cabinet"), ("Slice", "Bread"), ("Place", "CounterTop"),
                    ("Pickup", "BreadSliced"), ("Place", "Toaster")], done
    assert ex.sim.world.held is None or ex.sim.world.objects[ex.sim.world.held].object_type != "BreadSliced"


def test_precondition_checks_slice_without_a_knife_and_pickup_from_a_closed_cabinet(kitchen: World) -> None:
    program = "bread = InteractionObject('Bread')\nbread.slice()\n"
    strict = executor(kitchen).run(program)
    assert strict.failure.line == 2 and "need to hold a knife" in strict.failure.message
    trace = executor(kitchen, precondition_checks=True).run(program)
    assert trace.failure is None, trace.failure
    assert [p.action for p in trace.calls[0].primitives if p.action in ("Pickup", "Open", "Slice")] == \
        ["Pickup", "Open", "Slice"]
    program = "bread = InteractionObject('Bread')\nbread.pickup()\n"
    strict = executor(kitchen).run(program)
    assert strict.failure.line == 2
    ex = executor(kitchen, precondition_checks=True)
    trace = ex.run(program)
    assert trace.failure is None and ex.sim.world.objects[ex.sim.world.held].object_type == "Bread"
    # a knife of a kind this room lacks (an example's ButterKnife) is any knife the room has
    program = "knife = InteractionObject('ButterKnife')\nknife.pickup()\n"
    assert not kitchen.of_type("ButterKnife")
    assert "No ButterKnife has been found" in executor(kitchen).run(program).failure.message
    ex = executor(kitchen, precondition_checks=True)
    assert ex.run(program).failure is None and ex.sim.world.objects[ex.sim.world.held].object_type == "Knife"
    # a query never acts: a piece that does not exist yet is not sliced into being by a check
    query = "toast = InteractionObject('BreadSliced')\nok = toast.check_attribute('toasted', True)\n"
    trace = executor(kitchen, precondition_checks=True).run(query)
    assert trace.failure is not None and "No BreadSliced has been found" in trace.failure.message


def test_precondition_checks_let_a_restarted_program_reach_what_it_already_sliced(kitchen: World) -> None:
    # a re-plan that starts over names the bread an earlier attempt sliced: with the checks, going to
    # it reaches its pieces, slicing it again is a no-op and its pieces stay parent_object=bread
    world = copy.deepcopy(kitchen)  # one bread, so that the class names the sliced one
    bread_id, *others = [o.object_id for o in world.of_type("Bread")]
    for oid in others:
        gone = world.objects.pop(oid)
        world.objects[gone.parent].children.remove(oid)
    for named in ("'Bread'", f"'Bread', object_instance={bread_id!r}"):
        program = (f"bread = InteractionObject({named})\nbread.go_to()\nbread.slice()\n"
                   "toast = InteractionObject('BreadSliced', parent_object=bread)\ntoast.pickup()\n"
                   "ok = bread.check_attribute('sliced', True)\n")
        strict = executor(world, precondition_checks=True)
        first = strict.run(program)
        assert first.failure is None and first.calls[-1].result is True, first.failure
        again = strict.run(program)
        assert again.failure is None, again.failure
        assert [c.primitives for c in again.calls if c.method == "slice"] == [[]]
        held = strict.sim.world.objects[strict.sim.world.held]
        assert held.object_type == "BreadSliced" and held.sliced_from == bread_id
        # a re-plan that names the pieces of the sliced bread without touching the bread first
        pieces = "bread = InteractionObject('Bread')\ntoast = InteractionObject('BreadSliced', parent_object=bread)\n"
        for checks in (False, True):  # naming pieces by their parent is the API, not a check
            assert replan(world, program, pieces + "toast.go_to()\n", checks).failure is None
        # without the checks the restart fails, with feedback that names the pieces to use instead
        trace = replan(world, program, program, checks=False)
        assert trace.failure.line == 2 and f"({bread_id}) was already sliced into" in trace.failure.message
        assert f'InteractionObject("BreadSliced", parent_object="{bread_id}")' in trace.failure.message


def replan(world: World, first: str, then: str, checks: bool):
    """The trace of ``then`` run (with or without the checks) after ``first`` ran with them."""
    ex = executor(world, precondition_checks=True)
    assert ex.run(first).failure is None
    ex.runtime.config.precondition_checks = checks
    return ex.run(then)


def test_put_down_in_a_bathroom_uses_its_counter() -> None:
    bathroom = generate_scene(0, "train", "bathroom", {"SoapBar": 1})
    ex = executor(bathroom)
    trace = ex.run("soap = InteractionObject('SoapBar')\nsoap.pickup()\nsoap.put_down()\n")
    assert trace.failure is None, trace.failure
    soap = ex.sim.world.objects[trace.calls[0].object]
    assert ex.sim.world.objects[soap.parent].object_type == "CounterTopBath"


def test_precondition_checks_put_an_object_away_when_every_surface_is_full():
    """Every counter and table full (a bathroom counter of toilet paper; here a kitchen filled up): picking
    up the knife with the mug in hand puts the mug away in a cabinet or drawer, opened first; without
    the checks the program must put it down itself, and ``put_down`` finds no surface."""
    world = copy.deepcopy(make_kitchen())
    surfaces = [o for o in world.objects.values() if o.object_type in PUT_DOWN_SURFACES]
    shaker = next(o for o in world.objects.values() if o.object_type == "SaltShaker")
    for n, surface in enumerate(surfaces):  # copies of a salt shaker fill every place left
        for i in range(surface.type.capacity - len(surface.children)):
            filler = copy.deepcopy(shaker)
            filler.object_id, filler.parent, filler.children = f"SaltShaker_{100 + 10 * n + i}", surface.object_id, []
            world.objects[filler.object_id] = filler
            surface.children.append(filler.object_id)
    assert surfaces and all(len(s.children) == s.type.capacity for s in surfaces)
    program = "mug = InteractionObject('Mug')\nmug.pickup()\nknife = InteractionObject('Knife')\nknife.pickup()\n"
    ex = executor(world, precondition_checks=True)
    trace = ex.run(program)
    assert trace.failure is None, trace.failure
    mug = ex.sim.world.objects[trace.calls[0].object]
    spot = ex.sim.world.objects[mug.parent]
    assert spot.object_type in PUT_AWAY and spot.is_open
    strict = executor(world).run(program.replace("knife = ", "mug.put_down()\nknife = "))
    assert "There is no free surface to put the Mug down on" in strict.failure.message
