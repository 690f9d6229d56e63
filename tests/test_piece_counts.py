"""planner.piece_counts: a copy serves as many raw pieces as the dialogue asks
(icalkit/agents/piece_counts.py) — on dialogue and program text, and on the real simulator."""

from __future__ import annotations

import copy_fixtures
import pytest
from copy_fixtures import expert_program
from planner_doubles import one_torch_thread

from icalkit.agents.piece_counts import asked_pieces, dialogue_pieces, serve_pieces
from icalkit.agents.planner import Planner, PlannerConfig
from icalkit.envs.factory import make_env
from icalkit.envs.household.scene import build_world
from icalkit.envs.household.simulator import Simulator
from icalkit.envs.household.tasks.sampler import sample_tasks
from icalkit.memory.example import Example
from icalkit.memory.example_memory import ExampleMemory

single_thread = pytest.fixture(scope="module", autouse=True)(one_torch_thread)
embedder = copy_fixtures.embedder  # a fixture

SALAD = '''lettuce = InteractionObject("Lettuce")
knife = InteractionObject("Knife")
knife.pickup()
lettuce.slice()
plate = InteractionObject("Plate")
counter = InteractionObject("CounterTop")
lettuce_sliced = InteractionObject("LettuceSliced", parent_object=lettuce)
lettuce_sliced.pickup_and_place(counter)
lettuce_sliced.pickup_and_place(plate)
potato = InteractionObject("Potato")
potato.slice()
potato_sliced = InteractionObject("PotatoSliced", parent_object=potato)
pan = InteractionObject("Pan")
potato_sliced.pickup_and_place(pan)
potato_sliced.pickup_and_place(plate)
'''


def test_the_dialogue_says_how_many_pieces_of_each_food():
    asked = asked_pieces(["Commander: Put a slice of lettuce and two slices of tomato on the plate",
                          "Commander: breakfast time! a mug of coffee and an apple slice on a plate",
                          "make a salad with a cooked slice of potato and 3 lettuce slices", "two slices of toast"])
    assert asked == {"LettuceSliced": 3, "TomatoSliced": 2, "AppleSliced": 1, "PotatoSliced": 1}  # no toast
    assert asked_pieces(["slice the tomato, then put it on the plate"]) == {}  # no number: nothing asked
    assert asked_pieces(["I need three slices of red tomatoes", "two brown potato pieces"]) == {
        "TomatoSliced": 3, "PotatoSliced": 2}  # a colour, a plural, "pieces"
    assert asked_pieces(["slice the brown potato", "Put two slices in the bowl!"]) == {"PotatoSliced": 2}  # one food
    assert asked_pieces(["slice the tomato and the lettuce", "put two slices in the bowl"]) == {}  # which one?
    assert asked_pieces(["cut the potato into six slices", "put two mugs and a slice of potato"]) == {
        "PotatoSliced": 1}
    # chat's counts: "x2", "2x", and one count for each food a sentence lists
    assert asked_pieces(["lettuce x2 + a tomato slice, plated", "and 2x apple"]) == {
        "LettuceSliced": 2, "TomatoSliced": 1, "AppleSliced": 2}
    assert asked_pieces(["lettuce, tomato and a cooked potato, one slice of each"]) == {
        "LettuceSliced": 1, "TomatoSliced": 1, "PotatoSliced": 1}
    assert asked_pieces(["the box x2 please"]) == {}  # no food
    assert asked_pieces(["lettuce 2x tomato 1x"]) == {"LettuceSliced": 2, "TomatoSliced": 1}
    # "each" counts the foods its sentence names before it, not one it says no to
    assert asked_pieces(["grab the knife by the apple. no tomato, lettuce and potato, two slices of each"]) == {
        "LettuceSliced": 2, "PotatoSliced": 2}
    # the food just named: "of it", or the one food the sentence names before the count (not two)
    assert asked_pieces(["I'm hungry", "lettuce. two slices of it", "one tomato slice"]) == {
        "LettuceSliced": 2, "TomatoSliced": 1}
    assert asked_pieces(["tomato please", "make it three slices of that"]) == {"TomatoSliced": 3}
    assert asked_pieces(["salad time", "lettuce, 2 slices", "no, no potato"]) == {"LettuceSliced": 2}
    assert asked_pieces(["lettuce and tomato, 2 slices", "no potato"]) == {}  # which one?
    # a count and a food, no word for pieces, where it asks; not where it says what there is
    assert asked_pieces(["i want sandwich. two bread, toasted. inside two lettuce and one tomato"]) == {
        "BreadSliced": 2, "LettuceSliced": 2}
    assert asked_pieces(["there are two apples on the counter", "slice one"]) == {}
    # a number that answers the Driver's question about one food counts for it ("How much lettuce?" - "two slices!")
    said = [("Commander", "i want a sandwich!!! with lots of lettuce"), ("Driver", "How much lettuce?"),
            ("Commander", "two slices! and one tomato slice"), ("Driver", "Toasted?"), ("Commander", "yes, on a plate")]
    assert dialogue_pieces(said) == {"LettuceSliced": 2, "TomatoSliced": 1}
    assert asked_pieces([t for s, t in said if s == "Commander"]) == {"TomatoSliced": 1}  # without the question
    assert dialogue_pieces([("Commander", "tomato and lettuce"), ("Driver", "How many of each?"),
                            ("Commander", "two")]) == {}  # the question names no one food
    assert dialogue_pieces([("Commander", "a salad"), ("Driver", "How many tomato slices?"),
                            ("Commander", "a plate please")]) == {}  # no number
    assert dialogue_pieces([], "put two slices of apple in a bowl") == {"AppleSliced": 2}  # no dialogue: the instruction


def test_missing_raw_pieces_are_placed_where_the_copy_places_most_of_them():
    program, added = serve_pieces(SALAD, {"LettuceSliced": 3, "PotatoSliced": 2})
    assert added == {"LettuceSliced": 2}  # the cooked potato piece is not copied raw
    lines = program.splitlines()
    at = lines.index("lettuce_sliced.pickup_and_place(plate)")  # after the last placement on the plate
    assert lines[at + 1:at + 5] == [
        'lettuce_sliced_more_0 = InteractionObject("LettuceSliced", parent_object=lettuce)',
        "lettuce_sliced_more_0.pickup_and_place(plate)",
        'lettuce_sliced_more_1 = InteractionObject("LettuceSliced", parent_object=lettuce)',
        "lettuce_sliced_more_1.pickup_and_place(plate)"]
    assert serve_pieces(SALAD, {"LettuceSliced": 1}) == (SALAD, {})  # enough already; none is removed
    assert serve_pieces(SALAD, {"TomatoSliced": 2}) == (SALAD, {})  # no tomato piece placed: nothing to copy
    assert serve_pieces("plate.pickup(\n", {"LettuceSliced": 2}) == ("plate.pickup(\n", {})
    inline = SALAD.replace("potato_sliced.pickup_and_place(pan)", 'potato_sliced.pickup_and_place(InteractionObject("Pan"))')
    assert serve_pieces(inline, {"PotatoSliced": 2}) == (inline, {})  # cooked in a pan named inline
    rebound = SALAD + 'plate = InteractionObject("Bowl")\n'
    assert serve_pieces(rebound, {"LettuceSliced": 2}) == (rebound, {})  # "plate" means two things: no edit


def test_a_copy_serves_the_second_slice_of_lettuce_the_dialogue_asks_for(tmp_path, embedder):
    """A salad demonstration with one slice of lettuce, copied for "two slices of lettuce and a slice of
    tomato": without the setting the copy ends without an error and the salad lacks a slice; with it
    the copy places a second one and the task is done."""
    env = make_env("household", render_obs=False)
    own = next(t for t in sample_tasks(["Salad"], 2, "train", 0) if t.task_id.endswith("0-00001"))
    assert own.params["#0"] == "1"
    mem = ExampleMemory(tmp_path / "salad.db", embedder)
    mem.add_many([Example(task_id=own.task_id, task_type="Salad", instruction=own.instruction,
                          revised_program=expert_program(env, own))])
    task = next(t for t in sample_tasks(["Salad"], 1, "valid_seen", 0))
    assert task.params["#0"] == "2" and "two slices of lettuce" in task.instruction

    def run(**cfg):
        return Planner(None, mem, PlannerConfig(mode="copy", k=1, ground_ids=True, precondition_checks=True, **cfg)
                       ).run_episode(task, Simulator(build_world(task)))

    one = run()
    assert not one.success and one.errors == [] and one.satisfied < one.total
    two = run(piece_counts=True)
    assert two.success and two.errors == [] and "_more_0.pickup_and_place(" in two.programs[0]
