"""The rules that read a request's dishes and where they go (icalkit/agents/request_rules.py): the items a
Commander's turns list, the dishes they describe later, the answers to the Driver's questions, the serving clauses."""

from __future__ import annotations

from icalkit.agents.request_rules import plain_names, request_items


def test_request_items_reads_the_dishes_a_request_lists() -> None:
    asked = "Breakfast time! a mug of coffee and a sandwich with lettuce and tomato, all on the kitchen table."
    items, serving = request_items([("Driver", "hi"), ("Commander", asked)])
    assert items == ["a mug of coffee", "a sandwich with lettuce and tomato"]
    assert serving == ["all on the kitchen table"]
    items, serving = request_items(["Commander: Prepare breakfast. I want a mug of coffee, a plate of toast and an "
                                    "apple slice on a plate. serve everything on the counter."])
    assert items == ["a mug of coffee", "a plate of toast", "an apple slice on a plate"]
    assert serving == ["serve everything on the counter"]
    # step by step, each dish once; a hint of where a thing is, or a tool to use, is no dish
    items, _ = request_items([("Commander", "First, let's make breakfast, start with a mug of coffee!"),
                              ("Commander", "The bread is in the cabinet"), ("Commander", "Then a plate of toast"),
                              ("Commander", "slice the bread with a knife"), ("Commander", "then a mug of coffee")])
    assert items == ["a mug of coffee", "a plate of toast"]
    assert request_items([("Commander", "Make a salad with a slice of lettuce, a slice of tomato")])[0] == [
        "a salad with a slice of lettuce", "a slice of tomato"]
    assert request_items([("Commander", "Water the plant.")]) == ([], [])
    # human phrasings: a polite lead, digits, a colon before the serving clause, "all" inside a dish
    assert request_items([("Commander", "Please make a mug of coffee and 2 slices of toast: all on the table")]) == (
        ["a mug of coffee", "2 slices of toast"], ["all on the table"])
    assert request_items([("Commander", "I'd like a salad with all the vegetables")]) == (
        ["a salad with all the vegetables"], [])
    # dishes a step makes or cooks, the first dish after a lead without an article; "both" and "them" serve
    assert request_items([("Commander", "first brew some coffee"), ("Driver", "done"),
                          ("Commander", "next toast two slices of bread and plate them"),
                          ("Commander", "set both on the counter. thanks")]) == (
        ["brew some coffee", "toast two slices of bread and plate them"], ["set both on the counter"])
    assert request_items([("Commander", "then make me coffee")])[0] == ["coffee"]
    assert request_items([("Commander", "hungry: toast and a mug of coffee"),
                          ("Commander", "put them on the table")]) == (["toast", "a mug of coffee"],
                                                                      ["put them on the table"])
    assert request_items([("Commander", "so brunch please: a mug of coffee and a plate of toast, on the table")]) == (
        ["a mug of coffee", "a plate of toast"], ["on the table"])
    # after a lead, dishes without an article are one each; "both" before dishes is no serving clause
    assert request_items([("Commander", "i'd like both coffee and toast please")]) == (["coffee", "toast please"], [])
    assert request_items([("Commander", "i'd like both a mug of coffee and a plate of toast")])[0] == [
        "a mug of coffee", "a plate of toast"]
    assert request_items([("Commander", "Breakfast: first, a mug of coffee")])[0] == ["a mug of coffee"]
    # an answer to "where is it?" is no serving place; a place only ends a list
    assert request_items([("Commander", "Breakfast: a mug of coffee and a plate of toast"),
                          ("Driver", "where's the mug?"), ("Commander", "on the shelf")])[1] == []
    # a step that checks a state, or that names the meal, is no dish
    assert request_items([("Commander", "also make sure the plate is clean"),
                          ("Commander", "first make breakfast for me")]) == ([], [])
    # the whole task named is no dish; nor is a sentence's lead without one
    assert request_items([("Commander", "Prepare breakfast."), ("Commander", "make me breakfast please")]) == ([], [])
    # a clause of where a thing is names no dish, even when it begins with an article
    assert request_items([("Commander", "a mug of coffee please, a knife is in the sink"),
                          ("Commander", "and you'll find a plate in the cabinet")]) == (["a mug of coffee please"], [])
    # dishes without an article joined to the first item by a list's conjunction ("+", "and", "plus");
    # not a greeting, a negation or the meal
    assert request_items([("Commander", "coffee in a clean mug + an apple slice on a plate")])[0] == [
        "coffee in a clean mug", "an apple slice on a plate"]
    assert request_items([("Commander", "coffee and toast + an apple slice on a plate")])[0] == [
        "coffee", "toast", "an apple slice on a plate"]
    assert request_items([("Commander", "Coffee AND a plate of toast")])[0] == ["coffee", "a plate of toast"]
    for said in ("good morning and a coffee", "no toast and a coffee", "breakfast + a coffee", "hey, a coffee"):
        assert request_items([("Commander", said)])[0] == ["a coffee"], said
    # where no clause says where everything goes, a sentence that carries the dishes or sets the meal does
    assert request_items([("Commander", "brekkie pls. first a mug of coffee"),
                          ("Commander", "then carry the coffee and the plate to the dining table, thanks")]) == (
        ["a mug of coffee"], ["on the dining table"])
    assert request_items([("Commander", "can you set up my breakfast on the dining table")]) == (
        [], ["on the dining table"])
    assert request_items([("Commander", "i want the first meal of the day ready on the counter")]) == (
        [], ["on the counter"])
    # ... not one that moves one thing, nor one next to a clause that says where everything goes
    for step in ("put the knife on the counter", "take the bread to the toaster", "set it on the table",
                 "put the mug on the coffee machine and turn it on"):
        assert request_items([("Commander", "a mug of coffee and a plate of toast"), ("Commander", step)])[1] == []
    assert request_items([("Commander", "a mug of coffee and a plate of toast, all on the table"),
                          ("Commander", "and for breakfast bring them to the counter")])[1] == ["all on the table"]
    assert request_items([("Commander", "so brunch please: a mug of coffee and a plate of toast")])[1] == []


def test_request_items_reads_a_comma_list_and_a_dish_described_later() -> None:
    # a dish of at most two words before a comma joins a list; a longer chunk is a step, a pronoun no dish
    assert request_items([("Commander", "coffee, a slice of toast on a plate, and an apple slice on another plate")])[0] == [
        "coffee", "a slice of toast on a plate", "an apple slice on another plate"]
    for said in ("slice the apple, cook one piece on a clean plate", "anything, cook one piece on a clean plate"):
        assert request_items([("Commander", said)])[0] == ["cook one piece on a clean plate"], said
    # the answer to the Driver's question about a listed dish describes it, as does a sentence naming it first
    said = [("Commander", "breakfast. a coffee and a sandwich"), ("Driver", "what kind of sandwich?"),
            ("Commander", "2 toasted bread slices with one lettuce and one tomato slice, on a plate")]
    assert request_items(said)[0] == [
        "a coffee", "a sandwich: 2 toasted bread slices with one lettuce and one tomato slice, on a plate"]
    said = [("Commander", "coffee and a little salad"), ("Commander", "salad is one slice lettuce and a slice tomato")]
    assert request_items(said)[0] == ["coffee", "a little salad: salad is one slice lettuce and a slice tomato"]
    # the question's own words ("and", "it") name no dish, a dish outranks a vessel ("on the plate"), and
    # only the answer's first sentence describes
    said = [("Commander", "a sandwich and a mug of coffee, hot and fresh"),
            ("Driver", "what kind of sandwich, and do you want it toasted?"),
            ("Commander", "two toasted slices with a lettuce slice")]
    assert request_items(said)[0][0] == "a sandwich: two toasted slices with a lettuce slice"
    said = [("Commander", "a coffee, a cooked potato slice and a toast on a plate"),
            ("Driver", "how much potato on the plate?"), ("Commander", "two slices")]
    assert request_items(said)[0] == ["a coffee", "a cooked potato slice: two slices", "a toast on a plate"]
    said = [("Commander", "a coffee"), ("Driver", "what kind of coffee?"),
            ("Commander", "a black one. then a plate of toast")]
    assert request_items(said)[0] == ["a coffee: a black one", "a plate of toast"]
    assert request_items([("Commander", "alright, a coffee and a toast")])[0] == ["a coffee", "a toast"]
    # another question, or one about a dish not listed, leaves the answer's dishes listed
    for question in ("coffee done. what next?", "what kind of toast?"):
        said = [("Commander", "a mug of coffee"), ("Driver", question), ("Commander", "a slice of lettuce on a plate")]
        assert request_items(said)[0] == ["a mug of coffee", "a slice of lettuce on a plate"], question
    # a sentence that begins with a pronoun describes no dish
    said = [("Commander", "a coffee and toast a slice of bread and put it on a plate"),
            ("Commander", "it is for me: a slice of apple on a plate")]
    assert request_items(said)[0] == [
        "a coffee", "toast a slice of bread and put it on a plate", "a slice of apple on a plate"]
    # a serving place ends before where on it ("near the stove"), not at its first word ("the left counter")
    for step, place in (("put the plate and coffee on the counter near the stove", "on the counter"),
                        ("then carry them to the left counter", "on the left counter")):
        assert request_items([("Commander", "a mug of coffee and a plate of toast"), ("Commander", step)])[1] == [
            place], step


def test_request_items_reads_answers_to_the_drivers_questions() -> None:
    # an answer to a question that asks what is a list, as after "I want"; one to where/how/which or yes/no is not
    said = [("Commander", "morning, breakfast please"), ("Driver", "Sure, what would you like?"), ("Commander", "toast"),
            ("Driver", "Anything to drink?"), ("Commander", "coffee, black"), ("Driver", "Where should it go?"),
            ("Commander", "kitchen counter")]
    assert request_items(said)[0] == ["toast", "coffee", "black"]
    said = [("Commander", "a plate of toast"), ("Driver", "Just toast?"), ("Commander", "and coffee"),
            ("Driver", "Which mug?"), ("Commander", "red mug")]
    assert request_items(said)[0] == ["a plate of toast"]
    # a question about what goes in a listed dish asks for its description ("it": the dish just listed)
    said = [("Driver", "what can I make you?"), ("Commander", "salad"), ("Driver", "What goes in the salad?"),
            ("Commander", "a lettuce slice and a tomato slice")]
    assert request_items(said)[0] == ["salad: a lettuce slice and a tomato slice"]
    said = [("Commander", "a sandwich"), ("Driver", "What should go in it?"), ("Commander", "lettuce, 2 slices")]
    assert request_items(said)[0] == ["a sandwich: lettuce, 2 slices"]
    said = [("Commander", "cofee and a sandwitch pls"), ("Driver", "What goes in the sandwich?"),
            ("Commander", "letuce n tomato")]  # the dish the question names, misspelt
    assert request_items(said)[0] == ["cofee", "a sandwitch pls: letuce n tomato"]
    said = [("Commander", "a plate of toast and a sandwich"), ("Driver", "What do you want inside?"),
            ("Commander", "one lettuce, two tomato")]  # a question that names no dish asks about the last one
    assert request_items(said)[0] == ["a plate of toast", "a sandwich: one lettuce, two tomato"]
    # agreeing, declining or cancelling lists nothing; slicing a counted food is an item
    for answer in ("yep", "that's it", "nope, nothing", "nah", "forget the coffee"):
        assert request_items([("Driver", "Anything else?"), ("Commander", answer)])[0] == [], answer
    assert request_items([("Driver", "Anything else?"), ("Commander", "slice an apple, just one slice")])[0] == [
        "slice an apple and just one slice"]
    # a question that asks for the next step is answered by a step, not a dish
    for question in ("What should I do?", "ok what next", "what are we doing today?"):
        assert request_items([("Driver", question), ("Commander", "slice the tomato")])[0] == [], question
    assert request_items([("Driver", "What can I do for you?"), ("Commander", "coffee")])[0] == ["coffee"]


def test_request_items_reads_a_bare_list_of_foods_and_a_changed_dish() -> None:
    """A sentence of foods alone is a list ("Coffee, fried potatoes and toast."), not a step ("toast the bread, then
    the coffee"); "I'd rather have", "I'll have", "can I get" lead a list; "make it a sandwich" names a dish, "make it
    two" no new one; "actually", "wait" and "oh" are no dish."""
    said = [("Commander", "Hey, breakfast on the counter please. Coffee, fried potatoes and toast.")]
    assert request_items(said)[0] == ["coffee", "fried potatoes", "toast"]
    assert request_items([("Commander", "cofee + toast pls")])[0] == ["cofee", "toast pls"]
    assert request_items([("Commander", "toast the bread, then the coffee")])[0] == []
    assert request_items([("Commander", "no toast, no coffee")])[0] == []
    assert request_items([("Commander", "forget the toast, I'll have a coffee instead")])[0] == ["a coffee instead"]
    assert request_items([("Commander", "i'd rather have a coffee")])[0] == ["a coffee"]
    assert request_items([("Commander", "can I get a slice of apple")])[0] == ["a slice of apple"]
    assert request_items([("Commander", "a coffee and a salad"), ("Commander", "hmm, make it a sandwich instead")])[0] == [
        "a coffee", "a salad", "a sandwich instead"]
    assert request_items([("Commander", "three potato slices"), ("Commander", "make it two please")])[0] == [
        "three potato slices"]
    assert request_items([("Commander", "a plate of toast"), ("Commander", "oh wait, a coffee too")])[0] == [
        "a plate of toast", "a coffee too"]
    assert request_items([("Commander", "a plate of toast"), ("Commander", "give it a rinse first")])[0] == [
        "a plate of toast"]


def test_a_dish_listed_with_the_one_before_is_its_own_item() -> None:
    """"a coffee with the toast" after "one toast" lists the coffee (the toast was listed); "a sandwich with lettuce"
    and "… with the toast on a plate" stay as they are."""
    said = [("Commander", "can u make me some toast"), ("Driver", "How many?"),
            ("Commander", "one toast. i'd rather have a coffee with the toast")]
    assert request_items(said)[0] == ["some toast: one toast", "a coffee"]
    assert request_items([("Commander", "I want a sandwich with lettuce")])[0] == ["a sandwich with lettuce"]
    assert request_items([("Commander", "I want a coffee with the toast")])[0] == ["a coffee with the toast"]
    kept = [("Commander", "I want a toast"), ("Commander", "then a slice of tomato with the toast on a plate")]
    assert request_items(kept)[0] == ["a toast", "a slice of tomato with the toast on a plate"]


def test_plain_names_mends_a_dish_words_misspelling_not_its_other_forms() -> None:
    assert plain_names("a cofee and a sandwhich pls, letuce only") == "a coffee and a sandwich pls, lettuce only"
    assert plain_names("Cup of Joe") == "Cup of coffee"
    # another form of a dish word, a short word and a word merely like one stay as said
    for said in ("toasted potatoes", "two tomatoes", "tost", "ready", "roast beef", "sandwiches"):
        assert plain_names(said) == said


def test_request_items_reads_brackets_n_a_request_to_you_and_a_sentence_that_only_describes() -> None:
    """A bracket after a dish describes it; "n" joins a list; "could you make me", "can u do" and "I should like" lead
    a list (not "can you make sure", "could you bring them"); a later short sentence of no dish describes the item
    before; an item's "instead of …" names what it replaces, and "swap the potato for …" what replaces it."""
    said = [("Commander", "ok so today i want coffee, a sandwich (lettuce tomato, toasted) and some apple slices")]
    assert request_items(said)[0] == ["coffee", "a sandwich: lettuce tomato, toasted", "some apple slices"]
    assert request_items([("Commander", "coffee + a small salad (lettuce, tomato) on the dining table")]) == (
        ["coffee", "a small salad on the dining table: lettuce, tomato"], [])
    assert request_items([("Commander", "a coffee and a plate of toast (all on the table)")]) == (
        ["a coffee", "a plate of toast"], ["all on the table"])
    assert request_items([("Commander", "coffee n toast pls")])[0] == ["coffee", "toast pls"]
    said = [("Commander", "Could you make me a coffee and cook up a couple of potato slices? Two should do it.")]
    assert request_items(said)[0] == ["a coffee", "cook up a couple of potato slices: two should do it"]
    assert request_items([("Commander", "this morning I should like a coffee, a plate of toast")])[0] == [
        "a coffee", "a plate of toast"]
    assert request_items([("Commander", "can u do coffee and toast")])[0] == ["coffee", "toast"]
    assert request_items([("Commander", "can you make sure the mug is clean")])[0] == []
    assert request_items([("Commander", "Can you make me breakfast and leave it on the counter?")]) == (
        [], ["on the counter"])
    said = [("Commander", "coffee and an apple slice"), ("Commander", "wait, can u do potatoes instead of the apple. "
                                                                     "cooked, 2 slices")]
    assert request_items(said)[0] == ["coffee", "an apple slice", "potatoes: cooked, 2 slices"]
    # a longer sentence is no description ("hmm, make it two slices, three's too much"); a swap names its new dish
    said = [("Commander", "three slices of cooked potato"), ("Commander", "hmm, make it two slices, three's too much")]
    assert request_items(said)[0] == ["three slices of cooked potato", "three's too much"]
    assert request_items([("Commander", "a coffee and some potato"), ("Commander", "swap the potato for a slice of "
                                                                                  "apple")])[0] == [
        "a coffee", "some potato", "a slice of apple"]
    said = [("Commander", "toast and an apple slice"), ("Commander", "one each")]
    assert request_items(said)[0] == ["toast", "an apple slice: one each"]
    assert request_items([("Commander", "a toast"), ("Commander", "and a coffee")])[0] == ["a toast", "a coffee"]
