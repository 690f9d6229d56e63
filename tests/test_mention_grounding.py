"""Re-grounding a copied example by the classes the new task's dialogue mentions, without a generative
model (icalkit/agents/mention_grounding.py) — on the real simulator's rooms, TEACh dialogues and the
bundled MiniLM embedder."""

from __future__ import annotations

import copy_fixtures
import numpy as np
import pytest
from planner_doubles import one_torch_thread

from icalkit.agents.grounding import reground_target
from icalkit.agents.mention_grounding import (
    RULES,
    cancelled_words,
    class_phrase,
    fits_slot,
    mention_replacements,
    mention_scores,
    requests,
    singular,
    spans,
)
from icalkit.agents.planner import Planner, PlannerConfig
from icalkit.envs.household.scene import build_world
from icalkit.envs.household.tasks.sampler import sample_tasks
from icalkit.memory.example import Example

single_thread = pytest.fixture(scope="module", autouse=True)(one_torch_thread)
embedder = copy_fixtures.embedder  # a fixture


def demo_example(demo, program: str) -> Example:
    """A stored demonstration of the sampled task ``demo`` whose program is ``program``."""
    return Example(task_id=demo.task_id, task_type=demo.task_type, instruction=demo.instruction,
                   revised_program=program)


def test_mention_reground_reads_the_task_parameters_from_the_dialogue(embedder):
    """A Put All X On Y demonstration (CreditCard on the CoffeeTable) re-grounded for a dialogue that
    asks for the keys on the couch: the slots take the mentioned classes of their role, a later hint
    does not outrank the request, and a dialogue that names nothing leaves the copy as it is."""
    demo = next(t for t in sample_tasks(["Put All X On Y"], 6, "train", 0) if t.params["#0"] == "CreditCard")
    example = demo_example(demo, 'card = InteractionObject("CreditCard")\ntable = InteractionObject("CoffeeTable")\n'
                           'card.pickup_and_place(table)\n')
    room = {"KeyChain", "Sofa", "CoffeeTable", "CreditCard", "Pillow", "Desk", "Laptop", "ArmChair"}
    asked = [("Driver", "hi, what should I do?"), ("Commander", "gather up the sets of keys and put them on the couch"),
             ("Driver", "where are the keys?"), ("Commander", "there is a key chain on the desk")]
    assert mention_replacements(example, asked, room, embedder) == {"CreditCard": "KeyChain", "CoffeeTable": "Sofa"}
    assert mention_replacements(example, [("Commander", "hello there")], room, embedder) == {}
    scores = mention_scores(embedder, asked, ["Sofa", "Desk"])
    assert scores["Sofa"][1] > 0.6 and scores["Desk"][1] == pytest.approx(1.0)  # (ranked, raw)
    assert scores["Desk"][0] < scores["Sofa"][0]  # the request outranks the later hint
    target = next(t for t in sample_tasks(["Put All X On Y"], 30, "valid_unseen", 0)
                  if t.params["#0"] == "KeyChain" and t.params["#2"] == "Sofa")
    assert reground_target(example, target, example.revised_program) == {"CreditCard": "KeyChain", "CoffeeTable": "Sofa"}
    unknown = Example(task_id="made-up", task_type=demo.task_type, instruction="x", revised_program=example.revised_program)
    assert mention_replacements(unknown, asked, room, embedder) == {}


def test_mention_reground_reads_compound_names_as_one_mention(embedder):
    """"toilet paper rolls go on the counter" (a valid_unseen task's own dialogue) names the
    ToiletPaper and the bathroom counter, not the Toilet: a word inside a stronger mention of another
    class ("toilet paper") is no mention of a class whose name it is ("toilet"), and a class named on
    its own in the same sentence still is."""
    task = next(t for t in sample_tasks(["Put All X On Y"], 5, "valid_unseen", 0) if t.task_id.endswith("0-00003"))
    room = {o.object_type for o in build_world(task).objects.values()}
    assert {"Toilet", "ToiletPaper", "CounterTopBath"} <= room
    demo = next(t for t in sample_tasks(["Put All X On Y"], 60, "train", 0) if t.params["#0"] == "Pen")
    example = demo_example(demo, f'pen = InteractionObject("Pen")\ntable = InteractionObject("{demo.params["#2"]}")\n'
                           'pen.pickup_and_place(table)\n')
    assert mention_replacements(example, task.dialogue, room, embedder) == {
        "Pen": "ToiletPaper", demo.params["#2"]: "CounterTopBath"}
    scores = mention_scores(embedder, ["put the toilet paper rolls on the toilet", "the coffee table"],
                            ["Toilet", "ToiletPaper", "CoffeeMachine", "CoffeeTable"])
    assert scores["Toilet"][1] == pytest.approx(1.0) and scores["ToiletPaper"][1] == pytest.approx(1.0)
    assert scores["CoffeeMachine"][1] < 0.6 < scores["CoffeeTable"][1]
    assert mention_scores(embedder, ["the toilet paper rolls"], ["Toilet", "ToiletPaper"])["Toilet"][1] < 0.6
    twice = mention_scores(embedder, ["on the toilet"], ["Toilet", "Toilet", "ToiletPaper"])
    assert list(twice) == ["Toilet", "ToiletPaper"] and twice["Toilet"][1] == pytest.approx(1.0)  # a class named twice


@pytest.mark.parametrize("candidate,slot,fits", [
    ("Apple", "Tomato", True), ("Knife", "Tomato", False), ("Bowl", "Plate", True), ("Apple", "Plate", False),
    ("Sofa", "CoffeeTable", True), ("Plate", "Shelf", True), ("Plate", "Pen", False), ("Cup", "Pot", True),
    ("NotAClass", "Pot", False)])
def test_fits_slot_keeps_each_role(candidate, slot, fits):
    assert fits_slot(candidate, slot) is fits


@pytest.mark.parametrize("candidate,slot,held,fits", [
    ("DiningTable", "CounterTop", {"Mug", "Plate"}, True), ("Toaster", "CounterTop", {"Mug"}, False),
    ("CoffeeMachine", "CounterTop", {"Mug", "Plate"}, False), ("Bowl", "Plate", {"PotatoSliced"}, True),
    ("Cup", "Plate", {"PotatoSliced"}, False), ("Cup", "Plate", set(), True)])
def test_fits_slot_holds_what_the_example_put_there(candidate, slot, held, fits):
    assert fits_slot(candidate, slot, held) is fits


@pytest.mark.parametrize("candidate,slot,container,fits", [
    ("Pan", "Plate", True, False), ("Pan", "Plate", False, True), ("Pot", "Plate", True, False),
    ("Pot", "Plate", False, True), ("Plate", "Pan", True, False), ("Plate", "Pan", False, True),
    ("Bowl", "Plate", True, True), ("Pot", "Bowl", True, True), ("Bowl", "Box", True, True)])
def test_fits_slot_takes_a_dish_of_the_same_use_for_one_the_example_fills(candidate, slot, container, fits):
    """A plate the example puts the cooked slices on becomes a bowl (both Dishware), never the pan or
    pot (Cookware) the dialogue names as the way to cook them; a bowl and a pot both hold water
    (WaterContainers), so that pair stays open; a slot with no object class (a box) takes any dish."""
    assert fits_slot(candidate, slot, container=container) is fits


def test_mention_reground_keeps_the_pan_to_cook_in_out_of_the_plate_slot(embedder):
    """"Cook one slice in the microwave or a pan! ... put them in a clean bowl": without the same-use
    rule the pan, named earlier, takes the plate slot of a demonstration that served its cooked slices
    on a Plate; with it the pan (Cookware) is no candidate for the plate (Dishware), and the bowl the
    request names takes the plate slot (the Driver's turns ask for nothing)."""
    tasks = sample_tasks(["N Cooked Slices Of X In Y"], 30, "valid_seen", 0)
    demo = next(t for t in tasks if t.params["#3"] == "Plate" and t.params["#1"] == "Apple")
    example = demo_example(demo, 'apple = InteractionObject("Apple")\napple.slice()\n'
                                 'piece = InteractionObject("AppleSliced", parent_object=apple)\n'
                                 'oven = InteractionObject("Microwave")\npiece.pickup_and_place(oven)\n'
                                 'oven.toggle_on()\nplate = InteractionObject("Plate")\n'
                                 'piece.pickup_and_place(plate)\n')
    task = next(t for t in tasks if t.task_id.endswith("0-00022"))
    assert task.params["#3"] == "Bowl" and any("a pan" in text for _, text in task.dialogue)
    room = {o.object_type for o in build_world(task).objects.values()}
    assert {"Pan", "Bowl"} <= room
    assert mention_replacements(example, task.dialogue, room, embedder, rules=RULES - {"same_use"}) == {
        "Apple": "Tomato", "Plate": "Pan"}
    assert mention_replacements(example, task.dialogue, room, embedder) == {"Apple": "Tomato", "Plate": "Bowl"}


def test_mention_reground_keeps_a_breakfast_table_a_table(embedder):
    """A breakfast demonstration served on the counter (coffee from the CoffeeMachine, its potato on a Plate,
    the plate and the mug on the CounterTop) copied for two valid_unseen breakfasts, with their own
    dialogues and rooms: "a mug of coffee and a plate of toast ... on the dining table" makes the serving
    spot the DiningTable — not the Toaster "toast" names early (it holds bread slices only), nor the
    CoffeeMachine (the example uses it in another role) — and "a mug of coffee and a sandwich" leaves the
    plate a plate, although "mug" is close to the Cup, which holds nothing."""
    demo = next(t for t in sample_tasks(["Breakfast"], 30, "train", 0)
                if t.params["#3"] == "Plate" and t.params["#13"] == "CounterTop")
    example = demo_example(demo, 'mug = InteractionObject("Mug")\nmachine = InteractionObject("CoffeeMachine")\n'
                           'mug.pickup_and_place(machine)\nmachine.toggle_on()\n'
                           'counter = InteractionObject("CounterTop")\nplate = InteractionObject("Plate")\n'
                           'piece = InteractionObject("PotatoSliced")\npiece.pickup_and_place(plate)\n'
                           'mug.pickup_and_place(counter)\nplate.pickup_and_place(counter)\n')
    tasks = {t.task_id[-7:]: t for t in sample_tasks(["Breakfast"], 5, "valid_unseen", 0)}
    for key, expected in [("0-00004", {"CounterTop": "DiningTable"}), ("0-00000", {"CounterTop": "DiningTable"})]:
        task = tasks[key]
        room = {o.object_type for o in build_world(task).objects.values()}
        assert {"Toaster", "Plate"} <= room and ("Cup" in room or key == "0-00004")
        assert mention_replacements(example, task.dialogue, room, embedder) == expected, key


def test_mention_reground_reads_mentions_on_the_bundled_embedder(embedder):
    """A memory embedded by a learned retriever still has its mentions scored on the bundled MiniLM;
    a memory on the bundled one shares its embedder; either is cached (a dialogue's spans are embedded
    once, not once per candidate) and gives the embedder's own vectors."""
    from pathlib import Path
    from types import SimpleNamespace

    from icalkit.memory.embed import default_text_model_path

    cfg = PlannerConfig(mode="copy", mention_reground=True)
    own = Planner(None, SimpleNamespace(text_embedder=embedder), cfg)._mention_embedder()
    assert own.inner is embedder
    texts = ["a mug of coffee", "the dining table", "a mug of coffee"]
    assert np.allclose(own.embed_text(texts), embedder.embed_text(texts), atol=1e-5)
    assert set(own.vectors) == {"a mug of coffee", "the dining table"} and own.embed_text([]).shape == (0, 384)
    own.size = 3  # full: it starts afresh with the texts asked, those it held among them
    assert np.allclose(own.embed_text(["the dining table", "a sink", "a cup"]),
                       embedder.embed_text(["the dining table", "a sink", "a cup"]), atol=1e-5)
    assert set(own.vectors) == {"the dining table", "a sink", "a cup"}
    other = Planner(None, SimpleNamespace(text_embedder=SimpleNamespace(path=Path("/a/learned/retriever"))), cfg)
    assert other._mention_embedder().inner.path == default_text_model_path().resolve()


def test_class_phrases_plurals_and_the_requests_of_a_dialogue():
    """A class name in words (a run of capitals is one word; the simulator's own bathroom counter named
    as one), the singular of a plural noun, and each clause of an utterance cut at its first hint of
    where a thing is — "find the newspapers and leave them on the couch", "try to put it on the table"
    and "make sure it is on the sofa" are requests, "you'll find one in the bin" a hint; the Driver's
    turns ask for nothing."""
    assert [class_phrase(c) for c in ("TVStand", "CD", "DiningTable", "CounterTopBath")] == [
        "tv stand", "cd", "dining table", "bathroom counter top"]
    words = "pots dishes glasses vases potatoes batteries shelves knives clothes cds this bus lettuce is has was"
    assert [singular(w) for w in words.split()] == [
        "pot", "dish", "glass", "vase", "potato", "battery", "shelf", "knife", "cloth", "cd", "this", "bus",
        "lettuce", "is", "has", "was"]
    hints = ["You'll find a dish sponge in the trash can", "scrub brush is in the sink", "There's a cloth in the cabinet",
             "check the bathtub", "then try in the cabinet!", "look in the fridge for the egg"]
    assert requests(hints) == ["", "scrub brush ", "", "", "", ""]
    asks = ["find the newspapers and leave them on the couch", ("Commander", "put each box on the low table"),
            "try to put the mug on the table", "Please try putting the mug on the table",
            "Put the pots that are in the sink on the counter", "make sure the remote is on the sofa",
            "check that the plate is on the table", "put it in the sink and check it is clean"]
    assert requests(asks) == [a if isinstance(a, str) else a[1] for a in asks]  # requests, kept whole
    assert requests(["The mugs are in the cabinet, please put them on the table"]) == [
        "The mugs  please put them on the table"]  # a hint's clause cut, the request's kept
    # the Driver asks for nothing: where it found a thing is no place asked for (its turn kept, empty)
    assert requests([("Commander", "stack em all on the coffee table"), ("Driver", "grabbed the one on the sofa"),
                     "Driver: the last one was on the shelf"]) == ["stack em all on the coffee table", "", ""]


def test_mention_reground_puts_things_where_the_dialogue_asks_not_where_they_are(embedder):
    """"put the dish sponges on a counter — you'll find one in the trash can" (a train task's dialogue): a
    slot the demonstration puts things on takes the place the request names (requested_places), not
    the trash can the hint names, which wins without the rule. The object slot still reads the whole
    dialogue."""
    demo = next(t for t in sample_tasks(["Put All X On Y"], 60, "train", 0) if t.params["#0"] == "Pen")
    on = demo.params["#2"]
    example = demo_example(demo, f'pen = InteractionObject("Pen")\ntable = InteractionObject("{on}")\n'
                                 "pen.pickup_and_place(table)\n")
    room = {"DishSponge", "CounterTopBath", "GarbageCan", "Toilet", "Bathtub", "SinkBasin", "Pen", on}
    said = [("Commander", "good morning"), ("Commander", "gather up the dish sponges and put them on a counter"),
            ("Commander", "You'll find a dish sponge in the trash can"), ("Commander", "Thanks, that's everything")]
    assert mention_replacements(example, said, room, embedder) == {"Pen": "DishSponge", on: "CounterTopBath"}
    assert mention_replacements(example, said, room, embedder, rules=RULES - {"requested_places"}) == {
        "Pen": "DishSponge", on: "GarbageCan"}


def test_mention_scores_do_not_depend_on_what_was_embedded_beside(embedder):
    """"the cups and mugs are dirty": both classes' own words, a tie, whatever batch the embedder saw the
    spans in (a vector's floats move by ~1e-7 with the texts padded beside it); without the rounding
    the noise ordered them, and an evaluation's outcome depended on the other methods it ran."""
    from icalkit.agents.mention_grounding import CachedEmbedder

    said = [("Commander", "Hello. Today you the cups and mugs are dirty, clean them all"),
            ("Commander", "Do the same with the other cups and mugs")]
    scores = []
    for before in ([], ["a long text that pads the batch the spans are embedded in", "cup", "x"]):
        cached = CachedEmbedder(embedder)
        cached.embed_text(before)
        scores.append(mention_scores(cached, said, ["Cup", "Mug", "Bowl"]))
    assert scores[0] == scores[1] and scores[0]["Cup"] == scores[0]["Mug"] == (1.0, 1.0)


def test_a_class_the_commander_takes_back_loses_its_mentions(embedder):
    """"put a slice on a plate" - "wait no, not a plate. put it in a bowl instead": the plate's earlier
    mention outranked the bowl's (the decay per utterance) and the copy served on a plate. A class an
    utterance takes back loses its mentions so far and the rest of that utterance's ("a bowl instead of a
    plate, the plates are all dirty"); one named before the taking back keeps its own ("on a plate, not the
    bowl"), and a later utterance counts again."""
    def taken(text: str) -> list[str]:
        words = [w for _, _, w in spans(text, 1)]
        return [words[i] for i in sorted(cancelled_words(text))]

    assert taken("wait no, not a plate. put it in a bowl instead") == ["plate"]
    assert taken("put them in a bowl instead of a plate, the plates are all dirty") == ["plate"]
    assert taken("on the counter please, not the dining table") == ["dining", "table"]
    assert taken("don't forget the plate") == [] and taken("I can't find the apple") == []
    assert taken("I don't want the bowl") == ["bowl"]
    # the words that take back a dish take back a class too (mention_grounding.TAKE_BACK), not where negated
    assert taken("nvm the plate, use a bowl instead") == ["plate"] == taken("forget the plate, a bowl")
    assert taken("never forget the plate") == [] == taken("don't skip the mug")
    assert taken("swap the plate for a bowl") == ["plate"]
    said = [("Commander", "Can you slice the lettuce and put a slice on a plate"), ("Driver", "Sure, on a plate."),
            ("Commander", "wait no, not a plate. put it in a bowl instead")]
    scores = mention_scores(embedder, said, ["Plate", "Bowl"])
    assert scores["Bowl"][0] > scores["Plate"][0] and scores["Plate"][1] < 0.6
    assert mention_scores(embedder, said[:2], ["Plate", "Bowl"])["Plate"][0] == pytest.approx(1.0)  # before
    kept = mention_scores(embedder, [("Commander", "put the slice on a plate, not the bowl")], ["Plate", "Bowl"])
    assert kept["Plate"] == (1.0, 1.0) and kept["Bowl"][1] < 0.6
    found = [("Commander", "put a slice on a plate"), ("Driver", "not a plate? I can't see one")]  # the Driver's
    assert mention_scores(embedder, found, ["Plate"])["Plate"] == (1.0, 1.0)
    again = [*said, ("Commander", "sorry, no bowls are clean. a plate after all")]
    assert mention_scores(embedder, again, ["Plate", "Bowl"])["Plate"][1] == pytest.approx(1.0)
    demo = next(t for t in sample_tasks(["N Slices Of X In Y"], 60, "train", 0)
                if t.params["#1"] == "Lettuce" and t.params["#3"] == "Plate")
    example = demo_example(demo, 'lettuce = InteractionObject("Lettuce")\nlettuce.slice()\n'
                                 'piece = InteractionObject("LettuceSliced", parent_object=lettuce)\n'
                                 'plate = InteractionObject("Plate")\npiece.pickup_and_place(plate)\n')
    room = {"Lettuce", "Plate", "Bowl", "Knife", "CounterTop", "SinkBasin"}
    assert mention_replacements(example, said, room, embedder) == {"Plate": "Bowl"}
    assert mention_replacements(example, said[:2], room, embedder) == {}


def test_a_class_is_mentioned_by_what_people_also_call_it(embedder):
    """mention_grounding.ALSO_CALLED: "the kitchen island" is AI2-THOR's CounterTop, "one nightstand" its SideTable,
    "one cupboard" its Cabinet; its own name still counts as much as before."""
    said = [("Commander", "put everything on the kitchen island")]
    scores = mention_scores(embedder, said, ["CounterTop", "DiningTable", "CoffeeTable"])
    assert max(scores, key=lambda c: scores[c][1]) == "CounterTop" and scores["CounterTop"][1] >= 0.7
    for text, cls, other in (("keep the watches together on one nightstand", "SideTable", "Dresser"),
                             ("put all the toilet rolls into one cupboard", "Cabinet", "Drawer")):
        scores = mention_scores(embedder, [("Commander", text)], [cls, other, "Bed"])
        assert scores[cls][1] > scores[other][1], text
    plain = mention_scores(embedder, [("Commander", "the counter")], ["CounterTop"])["CounterTop"]
    assert plain[1] >= 0.75  # "counter" against its name, "counter top", as without the other names
