"""planner.compose_parts (icalkit/agents/composition.py): a breakfast composed from a coffee and a plate of
toast demonstration, on real recorded demonstrations, the simulator and the bundled MiniLM."""

from __future__ import annotations

from dataclasses import replace

import copy_fixtures
import pytest
from copy_fixtures import embedder  # noqa: F401  (fixture)

from icalkit.agents.composition import Composer, Part, ahead, compose, products, serving_place
from icalkit.agents.demo_end_state import Check
from icalkit.agents.request_rules import asked_turns, same_dish
from icalkit.envs.factory import make_env
from icalkit.envs.household.tasks.sampler import sample_tasks
from icalkit.memory.example import Example
from icalkit.memory.example_memory import ExampleMemory

# train breakfasts: a coffee and a sandwich, cooked potato slices or a salad (never toast)
BREAKFASTS = ("0-00000", "0-00003", "0-00004", "0-00006")


def test_compose_suffixes_each_parts_names_and_serves_its_products() -> None:
    def demo(task_type: str, program: str, cls: str, changes: list[dict]) -> Example:
        return Example(task_id=f"train/x/{cls}", task_type=task_type, instruction="x", revised_program=program,
                       initial_state={f"{cls}_1": {"parent": "CounterTop_1", "dirty": True}, "CounterTop_1": {}},
                       observed_changes=changes)

    mug = demo("Coffee", 'mug = InteractionObject("Mug", object_instance="Mug_1")\nmug.pickup()\n', "Mug",
               [{"object": "Mug_1", "attribute": "dirty", "before": True, "after": False}])
    plate = demo("Plate Of Toast", 'plate = InteractionObject("Plate")\nmug = InteractionObject("Mug")\n'
                 'mug.pickup()\nplate.pickup()\n', "Plate",
                 [{"object": "Plate_1", "attribute": "dirty", "before": True, "after": False}])
    assert products(mug, {}) == ["Mug"] and products(plate, {"Plate": "Bowl"}) == ["Bowl"]
    parts = [Part("a mug of coffee", mug, {}, mug.revised_program),
             Part("a bowl of toast", plate, {"Plate": "Bowl"}, plate.revised_program.replace('"Plate"', '"Bowl"'))]
    composed = compose(parts, "DiningTable")
    lines = composed.program.splitlines()
    assert lines[0] == 'mug_part0 = InteractionObject("Mug", object_instance="Mug_1")'  # ids as written
    assert 'mug_part1 = InteractionObject("Mug")' in lines and "mug_part1.pickup()" in lines
    assert lines[-3:] == ['serving_place = InteractionObject("DiningTable")',
                          "mug_part0.pickup_and_place(serving_place)", "plate_part1.pickup_and_place(serving_place)"]
    assert composed.served == ["Mug", "Bowl"] and composed.example_id.startswith("composed-")
    checks = composed.checks()
    assert Check("Mug", (), "DiningTable") in checks and Check("Bowl", (), "DiningTable") in checks
    # the toast part's own mug is the coffee part's product: its state there is not asked
    assert [c.attrs for c in checks if c.cls == "Mug" and not c.on] == [(("dirty", False),)]
    assert compose([], "DiningTable") is None and compose([Part("x", mug, {}, "mug.(")], "") is None
    assert compose([Part("x", mug, {}, "\n"), Part("y", plate, {}, "")], "DiningTable") is None
    # only the variables are suffixed (not a method or a keyword of the same name; loop targets too), a
    # name read before it is bound is bound first, and odd characters in comments break nothing
    odd = ('place = InteractionObject("CounterTop", object_instance="CounterTop_1")  # \x0c\u2028\n'
           'for mug in [plate]:\n    mug.place(place)\n')
    lines = compose([Part("x", mug, {}, odd)], "").program.rstrip("\n").splitlines()
    assert lines[0] == 'plate_part0 = InteractionObject("Plate")'
    assert lines[1].startswith('place_part0 = InteractionObject("CounterTop", object_instance="CounterTop_1")')
    assert lines[-2:] == ["for mug_part0 in [plate_part0]:", "    mug_part0.place(place_part0)"]
    # a part after one that cuts the bread no longer moves the whole bread (only its pieces are left); it
    # slices it (a no-op then) and takes pieces, as before; a whole no earlier part cut is moved as written
    cuts = ('bread = InteractionObject("Bread", object_instance="Bread_1")\nbread.pickup()\n'
            'counter = InteractionObject("CounterTop")\nbread.place(counter)\nbread.slice()\n'
            'piece = InteractionObject("BreadSliced", parent_object=bread)\npiece.pickup_and_place(counter)\n'
            'tomato = InteractionObject("Tomato")\ntomato.pickup()\n')
    lines = compose([Part("x", mug, {}, cuts), Part("y", plate, {}, cuts)], "").program.splitlines()
    assert lines.count("bread_part0.pickup()") == 1 and "bread_part0.place(counter_part0)" in lines
    assert "bread_part1.pickup()" not in lines and "bread_part1.place(counter_part1)" not in lines
    assert "bread_part1.slice()" in lines and "piece_part1.pickup_and_place(counter_part1)" in lines
    assert "tomato_part1.pickup()" in lines
    unserved = compose(parts[:1], "")
    assert unserved.served == [] and "serving_place" not in unserved.program
    # each part was grounded alone: a later part's dish of a class an earlier part uses loses its id (the
    # executor gives it a plate not used yet), its other objects keep theirs
    served = ('plate = InteractionObject("Plate", object_instance="Plate_1")\n'
              'knife = InteractionObject("Knife", object_instance="Knife_1")\nknife.pickup()\nplate.pickup()\n')
    lines = compose([Part("x", plate, {}, served), Part("y", plate, {}, served)], "").program.splitlines()
    assert 'plate_part0 = InteractionObject("Plate", object_instance="Plate_1")' in lines
    assert 'plate_part1 = InteractionObject("Plate")' in lines
    assert 'knife_part1 = InteractionObject("Knife", object_instance="Knife_1")' in lines


@pytest.fixture(scope="module")
def breakfast_memory(tmp_path_factory, embedder):  # noqa: F811
    """Recorded demonstrations: two Coffee, two Plate Of Toast, a Sandwich, an N Cooked Slices Of X In Y,
    a Salad, an N Slices Of X In Y and four breakfasts of other dishes than toast (:data:`BREAKFASTS`)."""
    env = make_env("household", render_obs=False)
    specs = [("Coffee", 4, "0-00000"), ("Coffee", 4, "0-00002"), ("Plate Of Toast", 4, "0-00002"),
             ("Plate Of Toast", 4, "0-00003"), ("Sandwich", 3, "0-00002"), ("N Cooked Slices Of X In Y", 6, "0-00002"),
             ("Salad", 2, "0-00001"), ("N Slices Of X In Y", 2, "0-00001")] + [("Breakfast", 7, s) for s in BREAKFASTS]
    demos = [copy_fixtures.recorded_example(env, *spec)[0] for spec in specs]
    mem = ExampleMemory(tmp_path_factory.mktemp("mem") / "breakfast.db", embedder)
    mem.add_many(demos)
    return mem


def test_composite_types_are_read_from_the_memory(breakfast_memory) -> None:
    composer = Composer(breakfast_memory)
    assert composer.composite_types() == {"Breakfast"}
    task = next(t for t in sample_tasks(["Breakfast"], 9, "valid_unseen", 0) if t.task_id.endswith("0-00008"))
    room = {"Mug", "Plate", "Bread", "Toaster", "CoffeeMachine", "DiningTable", "CounterTop"}
    parts, serving = composer.parts(task.dialogue, "Breakfast", room, task.task_id)
    assert [(item, ex.task_type) for item, ex in parts] == [("a mug of coffee", "Coffee"),
                                                            ("a plate of toast", "Plate Of Toast"),
                                                            ("an apple slice on a plate", "N Slices Of X In Y")]
    assert serving_place(serving, room, breakfast_memory.text_embedder) == "CounterTop"
    # no clause says where everything goes: the table the Commander's requests name, not a hint's place
    terse = [("Commander", "coffee and toast. the mug is on the counter"), ("Driver", "where to?"),
             ("Commander", "Dining table.")]
    assert serving_place([], room, breakfast_memory.text_embedder, terse) == "DiningTable"
    assert serving_place([], room, breakfast_memory.text_embedder, terse[:2]) == ""
    assert serving_place(["on the plate"], room, breakfast_memory.text_embedder, terse) == "DiningTable"  # no place
    assert serving_place([], room | {"Fridge"}, breakfast_memory.text_embedder,
                         [("Commander", "coffee, then put the toast in the fridge")]) == ""  # no table
    assert composer.parts(task.dialogue, "Coffee", room, task.task_id) == ([], [])
    # one dish told twice ("a toast", then "a slice of toast on a plate") is one part, the better-answered
    # item; two dishes whose demonstrations are of one type stay two
    assert same_dish("a toast", "a slice of toast on a plate") and same_dish("coffee", "a mug of coffee")
    assert not same_dish("two cooked potato slices on a plate", "an apple slice on a plate")
    twice = [("Commander", "i want a coffee and a toast"), ("Commander", "now a slice of toast on a plate")]
    parts, _ = composer.parts(twice, "Breakfast", room, task.task_id)
    assert [(item, ex.task_type) for item, ex in parts] == [("a coffee", "Coffee"),
                                                            ("a slice of toast on a plate", "Plate Of Toast")]
    # a dish described in a later sentence is one part, answered by a demonstration of what both ask for
    told = [("Commander", "coffee and a little salad"), ("Driver", "what kind of salad?"),
            ("Commander", "one slice lettuce and one slice tomato on a plate")]
    parts, _ = composer.parts(told, "Breakfast", room, task.task_id)
    assert [(item, ex.task_type) for item, ex in parts] == [
        ("coffee", "Coffee"), ("a little salad: one slice lettuce and one slice tomato on a plate", "Salad")]
    # a vague answer ("a black one") drops no dish
    told = [("Commander", "a coffee and a plate of toast"), ("Driver", "what kind of coffee?"),
            ("Commander", "a black one")]
    parts, _ = composer.parts(told, "Breakfast", room, task.task_id)
    assert [(item, ex.task_type) for item, ex in parts] == [("a coffee: a black one", "Coffee"),
                                                            ("a plate of toast", "Plate Of Toast")]
    # a model's reading picks the items; the rules' serving clauses are kept beside its own (serving_place takes
    # the place said last), as where it read none ("serve: none")
    parts, read_serving = composer.parts(task.dialogue, "Breakfast", room, task.task_id, (["a mug of coffee"], []))
    assert [ex.task_type for _, ex in parts] == ["Coffee"] and read_serving == serving
    assert composer.parts(task.dialogue, "Breakfast", room, task.task_id,
                          (["a mug of coffee"], ["on the dining table"]))[1] == ["on the dining table", *serving]
    moved = [("Commander", "coffee and toast, leave them on the kitchen island"), ("Driver", "ok"),
             ("Commander", "wait, actually bring everything over to the dining table instead")]
    clauses = ["on the kitchen island", "bring everything over to the dining table"]
    assert serving_place(clauses, room, breakfast_memory.text_embedder, moved) == "DiningTable"
    assert serving_place(clauses, room, breakfast_memory.text_embedder, moved[::-1]) == "CounterTop"
    # a turn that changes where the meal goes names a table too; "table" alone is the room's one kind of table
    wait = [("Commander", "coffee and toast, put it all on the dining table"), ("Driver", "ok"),
            ("Commander", "wait no, the counter. i'm eating in the kitchen")]
    assert serving_place(["put it all on the dining table"], room, breakfast_memory.text_embedder, wait) == "CounterTop"
    assert serving_place(["put it all on the dining table"], room, breakfast_memory.text_embedder, wait[:2]) == "DiningTable"
    back = [("Commander", "coffee and toast"), ("Driver", "where?"), ("Commander", "counter"),
            ("Commander", "wait no, bring it to the table, i wanna eat sitting down")]
    assert serving_place(["on the counter"], room, breakfast_memory.text_embedder, back) == "DiningTable"
    # the answer to where a thing is names no place to serve on
    where = [("Commander", "make me coffee and some cooked potatoes, put them on the dining table"),
             ("Driver", "ok where is the potato"), ("Commander", "next to the sink i think")]
    clauses = ["on the sink", "put them on the dining table"]  # a reader's, and the rules'
    assert serving_place(clauses, room | {"SinkBasin"}, breakfast_memory.text_embedder, where) == "DiningTable"
    assert asked_turns(where) == ["make me coffee and some cooked potatoes, put them on the dining table", ""]
    assert asked_turns([("Driver", "where do they go?"), ("Commander", "on the counter. thanks")]) == ["on the counter. thanks"]
    pls = [("Commander", "coffee + an apple slice on a plate, table pls")]
    assert serving_place([], room, breakfast_memory.text_embedder, pls) == "DiningTable"
    # an item of the reading that no demonstration answers ("an apple") gives way to the rules' item of that dish
    told = [("Commander", "a coffee please"), ("Driver", "Anything else?"), ("Commander", "an apple too, cut one slice of it for a plate")]
    parts, _ = composer.parts(told, "Breakfast", room, task.task_id, (["a mug of coffee", "an apple"], []))
    assert [(item, ex.task_type) for item, ex in parts] == [
        ("a mug of coffee", "Coffee"), ("an apple too and cut one slice of it for a plate", "N Slices Of X In Y")]
    # a dish the Commander cancels is no part, read by the model or by the rules
    changed = [("Commander", "i want a coffee, a plate of toast and an apple slice on a plate"),
               ("Commander", "hmm, actually forget the apple")]
    for reading in (None, (["a mug of coffee", "a plate of toast", "one slice of apple on a plate"], [])):
        parts, _ = composer.parts(changed, "Breakfast", room, task.task_id, reading)
        assert [ex.task_type for _, ex in parts] == ["Coffee", "Plate Of Toast"]
    # a dish's other name is the dish: a cup of joe is a coffee
    parts, _ = composer.parts([("Commander", "i want a cup of joe and a plate of toast")], "Breakfast", room, task.task_id)
    assert [(item, ex.task_type) for item, ex in parts] == [("a cup of joe", "Coffee"), ("a plate of toast", "Plate Of Toast")]
    # and a misspelt dish is the dish
    parts, _ = composer.parts([("Commander", "cofee and a plate of toast")], "Breakfast", room, task.task_id)
    assert [(item, ex.task_type) for item, ex in parts] == [("cofee", "Coffee"), ("a plate of toast", "Plate Of Toast")]
    # a memory seen through its first examples (the learning curve's) is read as what it shows
    from icalkit.eval.episodes import TruncatedMemory

    few = Composer(TruncatedMemory(breakfast_memory, 4))
    assert few.composite_types() == set() and len(few.examples) == 4


def test_a_breakfast_is_composed_from_its_dishes_demonstrations(breakfast_memory) -> None:
    """The stored breakfasts made other dishes than the toast asked for; the composed copy makes the coffee
    and the toast and serves both on the dining table, and the task is done. Without compose_parts the
    breakfasts are copied and the task is not done."""
    from icalkit.agents.api.runtime import ApiConfig
    from icalkit.agents.executor import ExecutorLimits
    from icalkit.agents.planner import Planner, PlannerConfig
    from icalkit.envs.household.scene import build_world
    from icalkit.envs.household.simulator import Simulator

    task = next(t for t in sample_tasks(["Breakfast"], 9, "valid_unseen", 0) if t.task_id.endswith("0-00008"))
    limits = ExecutorLimits(api=ApiConfig(oracle_object_map=True, precondition_checks=True))

    def run(**cfg):
        planner = Planner(None, breakfast_memory, PlannerConfig(
            mode="copy", k=1, ground_ids=True, precondition_checks=True, mention_reground=True, copy_fallback=True,
            room_fit=15, silent_next_copy="end_state", finish_placements=True, **cfg), limits)
        return planner.run_episode(task, Simulator(build_world(task)))

    composed = run(compose_parts=True)
    assert composed.success and composed.attempts == 1
    assert composed.retrieved[0].startswith("composed-") and "plate_part1.pickup_and_place(serving_place)" in \
        composed.programs[0]
    assert not run().success
    # the copies spent after the composed one (no further copy; the room has no sofa, the egg is never
    # touched): the re-plan a model would be asked shows the parts' demonstrations
    planner = Planner(None, breakfast_memory, PlannerConfig(
        mode="copy", k=1, ground_ids=True, precondition_checks=True, mention_reground=True, copy_fallback=True,
        room_fit=15, max_replans=0, silent_next_copy="end_state", compose_parts=True), limits)
    more = replace(task, dialogue=[("Commander", "Let's make breakfast - a mug of coffee, a plate of toast and an "
                                                 "apple slice on a plate - all on the sofa"), ("Commander", "and an egg")])
    left = planner.run_episode(more, Simulator(build_world(more)))
    assert not left.success and left.attempts == 1 and "the Egg the dialogue names" in left.errors[0]
    shown = planner.unasked_replan[-1]["content"]
    dishes = [ex for ex in breakfast_memory if ex.task_type in ("Coffee", "Plate Of Toast", "N Slices Of X In Y")]
    assert sum(ex.instruction in shown for ex in dishes) == 3 and "Breakfast" not in shown
    with pytest.raises(ValueError, match="compose_parts .*planner.mode=copy"):
        PlannerConfig(mode="ical", compose_parts=True).validate()


def test_the_model_reads_a_composite_request_and_the_rules_what_it_cannot(breakfast_memory) -> None:
    """planner.request_reader: the model's reading picks the parts (a reading of the coffee alone composes the
    coffee alone); an answer that cannot be parsed twice, or names a food the Commander did not, leaves the
    request to the rules."""
    from planner_doubles import ScriptedLLM

    from icalkit.agents.api.runtime import ApiConfig
    from icalkit.agents.executor import ExecutorLimits
    from icalkit.agents.llm_session import LLMSession
    from icalkit.agents.planner import Planner, PlannerConfig
    from icalkit.agents.request_reading import READ_REQUEST, reader_prompt
    from icalkit.envs.household.scene import build_world
    from icalkit.envs.household.simulator import Simulator

    task = next(t for t in sample_tasks(["Breakfast"], 9, "valid_unseen", 0) if t.task_id.endswith("0-00008"))
    limits = ExecutorLimits(api=ApiConfig(oracle_object_map=True, precondition_checks=True))

    def run(*answers: str):
        llm = ScriptedLLM(list(answers))
        planner = Planner(LLMSession(llm), breakfast_memory, PlannerConfig(
            mode="copy", k=1, ground_ids=True, precondition_checks=True, mention_reground=True, copy_fallback=True,
            room_fit=15, max_replans=0, silent_next_copy="end_state", compose_parts=True, request_reader=True), limits)
        return planner.run_episode(task, Simulator(build_world(task))), llm.prompts

    read = "item: a mug of coffee\nitem: a slice of toast on a plate\nitem: one slice of apple on a plate\nserve: on the counter"
    result, prompts = run(read)
    assert result.success and result.attempts == 1 and prompts == [reader_prompt(task.dialogue)]
    assert result.llm["prompt_ids"] == [READ_REQUEST] and result.llm["parse_failures"] == 0
    coffee, _ = run("item: a mug of coffee\nserve: on the counter")
    assert not coffee.success and "coffee_machine_part0" in coffee.programs[0] and "_part1" not in coffee.programs[0]
    invented, _ = run(read.replace("a slice of toast", "a bowl of cereal"))  # a food no turn names: the rules read
    assert invented.success and "_part2" in invented.programs[0]
    ruled, prompts = run("Sure! Breakfast is coming.", "I will make it now.")  # unreadable twice: the rules read it
    assert ruled.success and len(prompts) == 2 and ruled.llm["parse_failures"] == 2
    with pytest.raises(ValueError, match="request_reader reads the dishes compose_parts composes"):
        PlannerConfig(mode="copy", request_reader=True).validate()


def test_compose_dishes_reads_a_request_retrieved_as_one_of_its_dishes(breakfast_memory, tmp_path) -> None:
    """planner.compose_dishes: a breakfast whose words are closest to a coffee demonstration's is composed from its
    dishes; a request of one dish, of dishes of one type, or of one dish and its own ingredients, is not."""
    composer = Composer(breakfast_memory, dishes=True)
    # the types most of whose demonstrations made what a breakfast made (a mug, a plate)
    assert composer.dish_types() == {"Coffee", "Plate Of Toast", "Sandwich", "N Cooked Slices Of X In Y", "Salad",
                                     "N Slices Of X In Y"}
    assert composer.reads("Coffee") and not Composer(breakfast_memory).reads("Coffee")
    task = next(t for t in sample_tasks(["Breakfast"], 9, "valid_unseen", 0) if t.task_id.endswith("0-00008"))
    room = {"Mug", "Plate", "Bread", "Toaster", "CoffeeMachine", "DiningTable", "CounterTop"}
    parts, _ = composer.parts(task.dialogue, "Coffee", room, task.task_id)
    assert [ex.task_type for _, ex in parts] == ["Coffee", "Plate Of Toast", "N Slices Of X In Y"]
    assert composer.parts(task.dialogue, "Breakfast", room, task.task_id) == Composer(breakfast_memory).parts(
        task.dialogue, "Breakfast", room, task.task_id)  # a composite type's request reads as before
    alone = [("Commander", "make me a mug of coffee please")]
    assert composer.parts(alone, "Coffee", room, task.task_id) == ([], [])
    two_coffees = (["a mug of coffee", "a black coffee in a clean mug"], [])  # dishes of one type: no composition
    assert composer.parts(task.dialogue, "Coffee", room, task.task_id, two_coffees) == ([], [])
    # a salad's demonstration that lists its slices (answered by the slicing types' demonstrations): a salad read as
    # a salad and slices of lettuce is one dish; a salad beside a coffee (no salad demonstration's item) is two
    salad_demo = next(ex for ex in breakfast_memory if ex.task_type == "Salad")
    listed = replace(salad_demo, example_id="listed-salad", dialogue=[
        "Commander: make me a salad on a plate: two slices of lettuce and a cooked slice of potato"])
    mem = ExampleMemory(tmp_path / "listed.db", breakfast_memory.text_embedder)
    mem.add_many([listed if ex.example_id == salad_demo.example_id else ex for ex in breakfast_memory])
    composer = Composer(mem, dishes=True)
    assert composer.composite_types() == {"Breakfast"} and "Salad" in composer.dish_types()
    assert "N Slices Of X In Y" in composer._ingredients["Salad"]
    salad = (["a salad of lettuce and tomato", "two slices of lettuce"], [])
    assert composer.parts(task.dialogue, "Salad", room, task.task_id, salad) == ([], [])
    coffee_salad = (["a mug of coffee", "a salad of lettuce and tomato"], [])
    assert [ex.task_type for _, ex in composer.parts(task.dialogue, "Salad", room, task.task_id, coffee_salad)[0]] == [
        "Coffee", "Salad"]
    # the retrieved type is none of its dishes' (cancelled, or the nearest of two): composed when a dish of a type that
    # has no ingredients and is no type's ingredient (a coffee) has another beside it; slices of lettuce and of cooked
    # potato may be a salad's, and a salad with them is one dish
    not_retrieved = (["a mug of coffee", "a plate of toast"], [])
    assert [ex.task_type for _, ex in composer.parts(task.dialogue, "N Slices Of X In Y", room, task.task_id,
                                                     not_retrieved)[0]] == ["Coffee", "Plate Of Toast"]
    slices = (["two slices of lettuce", "a cooked slice of potato"], [])
    assert len({ex.task_type for _, ex in composer.parts(task.dialogue, "Salad", room, task.task_id, (
        ["a mug of coffee", *slices[0]], []))[0]}) == 3  # answered by two slicing types and Coffee
    assert composer.parts(task.dialogue, "Coffee", room, task.task_id, slices) == ([], [])
    salad_slices = (["a salad of lettuce and tomato", *slices[0]], [])  # a salad has ingredients: no anchor
    assert composer.parts(task.dialogue, "Coffee", room, task.task_id, salad_slices) == ([], [])
    from icalkit.agents.planner import PlannerConfig

    with pytest.raises(ValueError, match="compose_dishes reads the dishes compose_parts composes"):
        PlannerConfig(mode="copy", compose_dishes=True).validate()


def test_single_dish_copies_one_dish_read_alone_for_its_own_words(breakfast_memory) -> None:
    """planner.single_dish: a request read as one dish of the retrieved type is that dish's part, copied for the
    reading's words (a correction read: two potato slices in a bowl, not the three on a plate said first); its copy heads
    the retrieved sets in place of the set its demonstration heads. One dish of another type is no part."""
    from icalkit.agents.planner import PlannerConfig

    dialogue = [("Commander", "three slices of potato on a plate please"), ("Driver", "ok"),
                ("Commander", "actually only two, and in a bowl")]
    read = (["two slices of potato in a bowl"], [])
    room = {"Potato", "Bowl", "Plate", "Knife", "CounterTop"}
    single, dishes = Composer(breakfast_memory, dishes=True, single=True), Composer(breakfast_memory, dishes=True)
    parts, serving = single.parts(dialogue, "N Slices Of X In Y", room, "new-task", read)
    assert [(item, ex.task_type) for item, ex in parts] == [("two slices of potato in a bowl", "N Slices Of X In Y")]
    assert not serving and dishes.parts(dialogue, "N Slices Of X In Y", room, "new-task", read) == ([], [])
    assert single.parts(dialogue, "Coffee", room, "new-task", read) == ([], [])  # read as another type's dish
    # a request retrieved as the dish it cancels is the dish it asks for instead
    instead = [("Commander", "make me a salad"), ("Driver", "what should be in it?"),
               ("Commander", "hmm no, no salad. i'd rather have a sandwich")]
    assert [ex.task_type for _, ex in single.parts(instead, "Salad", room, "new-task")[0]] == ["Sandwich"]
    assert [ex.task_type for _, ex in single.parts(instead[:2], "Salad", room, "new-task")[0]] == ["Salad"]  # as asked
    assert single.parts(instead, "Sandwich", room, "new-task")[0] == single.parts(instead, "Salad", room, "new-task")[0]
    demo = compose([Part(parts[0][0], parts[0][1], {"Plate": "Bowl"}, "knife.pickup()\n")], "")
    other = [ex for ex in breakfast_memory if ex.task_type == "Coffee"][:1]
    assert ahead(demo, [[parts[0][1]], other]) == [[demo], other]  # the same demonstration is not copied again
    assert ahead(None, [other]) == [other]
    with pytest.raises(ValueError, match="single_dish copies one dish of a dish type read alone"):
        PlannerConfig(mode="copy", compose_parts=True, single_dish=True).validate()


def test_the_planner_asks_the_reader_for_a_request_retrieved_as_a_dish_only_with_compose_dishes(breakfast_memory) -> None:
    """Planner.composed: retrieved as a Coffee, the breakfast's request is read by the model and composed from its
    three dishes with compose_dishes; without it the model is not asked and nothing is composed."""
    from planner_doubles import ScriptedLLM

    from icalkit.agents.api.runtime import ApiConfig
    from icalkit.agents.executor import Executor, ExecutorLimits
    from icalkit.agents.llm_session import CallStats, LLMSession
    from icalkit.agents.planner import Planner, PlannerConfig
    from icalkit.agents.request_reading import reader_prompt
    from icalkit.envs.household.scene import build_world
    from icalkit.envs.household.simulator import Simulator

    task = next(t for t in sample_tasks(["Breakfast"], 9, "valid_unseen", 0) if t.task_id.endswith("0-00008"))
    limits = ExecutorLimits(api=ApiConfig(oracle_object_map=True, precondition_checks=True))
    read = "item: a mug of coffee\nitem: a slice of toast on a plate\nitem: one slice of apple on a plate\nserve: on the counter"
    for dishes in (True, False):
        llm = ScriptedLLM([read])
        planner = Planner(LLMSession(llm), breakfast_memory, PlannerConfig(
            mode="copy", k=1, ground_ids=True, precondition_checks=True, mention_reground=True, copy_fallback=True,
            room_fit=15, silent_next_copy="end_state", compose_parts=True, request_reader=True,
            compose_dishes=dishes), limits)
        coffees = [[ex] for ex in breakfast_memory if ex.task_type == "Coffee"]
        sets = planner.composed(task, Executor(Simulator(build_world(task)), limits), coffees, CallStats())
        assert llm.prompts == ([reader_prompt(task.dialogue)] if dishes else [])
        assert sets == ([sets[0], *coffees] if dishes else coffees)  # the retrieved sets follow, all of them
        assert [p.example.task_type for p in getattr(sets[0][0], "parts", [])] == (
            ["Coffee", "Plate Of Toast", "N Slices Of X In Y"] if dishes else [])


def test_fill_only_meals_fills_a_request_retrieved_as_a_meal_not_one_retrieved_as_a_dish(breakfast_memory) -> None:
    """planner.fill_only_meals: the reader leaves the apple slice out of the breakfast; the fill adds it back
    where the request was retrieved as a Breakfast (a composite type), and, with fill_only_meals, not where it
    was retrieved as a Coffee (read as one dish: a misread sandwich is given no dish of its fillings)."""
    from planner_doubles import ScriptedLLM

    from icalkit.agents.api.runtime import ApiConfig
    from icalkit.agents.executor import Executor, ExecutorLimits
    from icalkit.agents.llm_session import CallStats, LLMSession
    from icalkit.agents.planner import Planner, PlannerConfig
    from icalkit.envs.household.scene import build_world
    from icalkit.envs.household.simulator import Simulator

    task = next(t for t in sample_tasks(["Breakfast"], 9, "valid_unseen", 0) if t.task_id.endswith("0-00008"))
    limits = ExecutorLimits(api=ApiConfig(oracle_object_map=True, precondition_checks=True))
    missed = "item: a mug of coffee\nitem: a slice of toast on a plate\nserve: on the counter"
    parts = {}
    for retrieved in ("Coffee", "Breakfast"):
        for only_meals in (False, True):
            planner = Planner(LLMSession(ScriptedLLM([missed])), breakfast_memory, PlannerConfig(
                mode="copy", k=1, ground_ids=True, precondition_checks=True, mention_reground=True,
                copy_fallback=True, room_fit=15, silent_next_copy="end_state", compose_parts=True,
                request_reader=True, compose_dishes=True, fill_missed_dishes=True, fill_only_meals=only_meals),
                limits)
            sets = [[ex] for ex in breakfast_memory if ex.task_type == retrieved]
            first = planner.composed(task, Executor(Simulator(build_world(task)), limits), sets, CallStats())[0][0]
            parts[retrieved, only_meals] = [p.example.task_type for p in getattr(first, "parts", [])]
    assert parts["Coffee", False] == parts["Breakfast", False] == parts["Breakfast", True] == [
        "Coffee", "Plate Of Toast", "N Slices Of X In Y"]
    assert parts["Coffee", True] == ["Coffee", "Plate Of Toast"]
    with pytest.raises(ValueError, match="fill_only_meals limits the fill"):
        PlannerConfig(mode="copy", compose_parts=True, request_reader=True, fill_only_meals=True).validate()
