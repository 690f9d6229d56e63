"""The request reader's pairs (icalkit/data_gen/request_pairs.py): built from the trained dish types only,
in the one form the planner parses, never holding a hand-written turn; and what the parser and the grounding
check refuse."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from icalkit.agents.parsing import ParseError
from icalkit.agents.planner_config import PlannerConfig
from icalkit.agents.request_reading import (
    asked_words,
    cancelled,
    cooked,
    foods,
    grounded_reading,
    is_cancelled,
    parse_reading,
    reader_prompt,
    reading_text,
)
from icalkit.agents.request_rules import request_items
from icalkit.data_gen.request_pairs import (
    CANCELS,
    CHANGES,
    DECLINES,
    DISH_TYPES,
    MOVES,
    OFFERS,
    REFUSALS,
    REVISIONS,
    SALAD_DROPS,
    SWAPS,
    UNTAUGHT,
    RequestPairConfig,
    RequestPairError,
    dish_item,
    request_pairs,
    write_request_pairs,
)


def test_pairs_list_the_trained_dishes_a_request_asks_for() -> None:
    rows = request_pairs(RequestPairConfig(singles_per_type=4, listed=60, changed_share=0, seed=3))
    assert len(rows) == 4 * len(DISH_TYPES) + 60 and {r["kind"] for r in rows} == {"single", "listed"}
    assert all(r["prompt"][0] == reader_prompt([])[0] for r in rows)  # one system prompt, as deployed
    readings = [(r["kind"], parse_reading(r["completion"]), r["prompt"][-1]["content"].lower()) for r in rows]
    assert all(len(items) == 1 and not serving for kind, (items, serving), _ in readings if kind == "single")
    listed = [(items, serving, text) for kind, (items, serving), text in readings if kind == "listed"]
    assert all(2 <= len(items) <= 4 for items, _, _ in listed)
    # a dish no task makes is read as it is said, and never alone
    untaught = [(i, items, text) for items, _, text in listed for i in items if i in UNTAUGHT]
    assert untaught and all(i in text and len(items) >= 3 for i, items, text in untaught)
    # where everything goes is read only where the request says it; its words are the request's
    assert all(s[0].removeprefix("on the ") in text for _, s, text in listed if s)
    assert 0 < sum(bool(s) for _, s, _ in listed) < len(listed)
    # a dish named vaguely ("some cooked potato") is read with the count the answer to the Driver gives
    described = [(items, text) for items, _, text in listed
                 if re.search(r"\ndriver: how many[^\n]*\ncommander: (one|two|three)", text)]
    assert described and all(any(i.split()[0] in ("one", "two", "three") for i in items) for items, _ in described)
    # nothing of a type held out of training: no breakfast, sandwich, boiling or watering
    assert not any(w in text for *_, text in readings for w in ("breakfast", "sandwich", "boil", "plant"))


def test_a_request_that_changes_its_mind_is_read_as_it_ends() -> None:
    rows = request_pairs(RequestPairConfig(singles_per_type=0, listed=300, changed_share=0.5, seed=5))
    changes = Counter(r["kind"] for r in rows)
    assert set(changes) == {"listed", *(f"changed/{c}" for c in CHANGES)} and 110 < changes["listed"] < 190
    said = {kind: [re.compile(re.escape(re.sub(r"[,.]?(?: so)?$", "", w)).replace(r"\{old\}", "(.+)")
                              .replace(r"\{new\}", "(.+)").replace(r"\{place\}", "(.+)")) for w in ways]
            for kind, ways in (("cancel", CANCELS), ("swap", SWAPS), ("refuse", REFUSALS), ("move", MOVES))}
    for row in rows:
        turns = [tuple(line.split(": ", 1)) for line in row["prompt"][1]["content"].splitlines()[1:]]
        items, serving = reading = parse_reading(row["completion"])
        assert grounded_reading(reading, turns) == reading  # the answer names only what the Commander said
        kind = row["kind"].removeprefix("changed/")
        commander = [t.lower() for s, t in turns if s == "Commander"]
        found = [m for t in commander for m in (w.search(t) for w in said.get(kind, ())) if m]
        if kind == "decline":  # the Driver offers a dish; the next turn, the Commander's, turns it down
            at = next(j for j, (s, t) in enumerate(turns) if s == "Driver" and t.endswith("?")
                      and any(re.fullmatch(re.escape(o).replace(r"\{old\}", ".+"), t) for o in OFFERS))
            assert turns[at + 1] in [("Commander", d) for d in DECLINES]
        elif kind == "move":  # two places said; the answer keeps the one the correction names
            assert found and serving == [f"on the {found[-1][1]}"]
        elif kind == "cancel":  # the dish taken back is said, and not read
            assert found and all(m[1] not in " ".join(items) for m in found)
        elif kind in ("swap", "refuse"):
            assert found, commander


def test_a_single_dish_corrected_or_told_piece_by_piece_is_read_as_it_ends() -> None:
    rows = request_pairs(RequestPairConfig(singles_per_type=0, listed=0, revised_per_type=40, seed=4))
    kinds = Counter(r["kind"] for r in rows)
    assert set(kinds) == {*(f"revised/{h}" for h in REVISIONS), "revised/drop", "revised/add"}
    assert len(rows) == 3 * 40  # the two slice types and the salad, 40 each
    dropped = [re.compile(re.escape(w).replace(r"\{food\}", "(.+)")) for w in SALAD_DROPS]
    for row in rows:
        turns = [tuple(line.split(": ", 1)) for line in row["prompt"][1]["content"].splitlines()[1:]]
        (item,), serving = reading = parse_reading(row["completion"])
        assert not serving and grounded_reading(reading, turns) == reading
        said = [t.lower() for s, t in turns if s == "Commander"]
        vessels = [found for t in said if (found := re.findall(r"\b(plate|bowl)\b", t))]
        if row["kind"] in ("revised/revessel", "revised/both", "revised/piecemeal"):  # the last turn's, first said
            assert vessels and item.endswith(vessels[-1][0]), (said, item)
        if row["kind"] == "revised/drop":  # the food taken out is not read
            food = next(m[1] for t in said for m in (w.fullmatch(t) for w in dropped) if m)
            assert food.removeprefix("cooked ") not in item and len(said[0]) > len(item) - 30, (said, item)
    # in a list, the corrected dish is named ("for the apple slices, make it two") and read as corrected
    listed = [r for r in request_pairs(RequestPairConfig(singles_per_type=0, listed=80, revised_share=1.0, seed=4))
              if r["kind"] == "changed/revised"]
    assert len(listed) > 20
    for row in listed:
        turns = [tuple(line.split(": ", 1)) for line in row["prompt"][1]["content"].splitlines()[1:]]
        items, _ = reading = parse_reading(row["completion"])
        assert len(items) >= 2 and grounded_reading(reading, turns) == reading
        named = [m for s, t in turns if s == "Commander" and (m := re.match(r"for the (.+?), |(.+?): |the (.+?) - ", t))]
        food = next(g for g in named[-1].groups() if g).removeprefix("cooked ").split()[0]
        assert food in " ".join(items), (turns, items)


def test_dish_items_are_the_words_the_composition_retrieves_with() -> None:
    assert dish_item("Coffee", {}) == "a mug of coffee"
    assert dish_item("N Cooked Slices Of X In Y", {"X": "Potato", "N": "2", "Y": "Bowl"}) == \
        "two cooked slices of potato in a bowl"
    assert dish_item("N Slices Of X In Y", {"X": "Apple", "N": "1", "Y": "Plate"}, vessel=False) == "one slice of apple"
    assert dish_item("Salad", {"lettuce": "2", "tomato": "0", "potato": "1"}) == \
        "a salad of two slices of lettuce and one slice of cooked potato on a plate"


def test_a_held_out_type_or_a_bad_share_is_refused() -> None:
    with pytest.raises(RequestPairError, match=r"\['Breakfast'\] are not trained dish types"):
        RequestPairConfig(task_types=["Coffee", "Breakfast"]).validate()
    with pytest.raises(RequestPairError, match=r"\['Coffee'\] are not trained dish types"):
        RequestPairConfig(heldout_types=["Coffee"]).validate()
    with pytest.raises(RequestPairError, match="serve_share must be a share"):
        RequestPairConfig(serve_share=1.5).validate()


def test_built_pairs_load_as_a_finetuning_dataset(tmp_path) -> None:
    from icalkit.training.finetune import load_pairs

    cfg = RequestPairConfig(singles_per_type=2, listed=20, valid_fraction=0.1)
    stats = write_request_pairs(request_pairs(cfg), cfg, tmp_path)
    ds = load_pairs(tmp_path / "dataset")
    assert stats["pairs"] == 30 and len(ds["train"]) + len(ds["validation"]) == 30
    assert stats["by_kind"]["single"] == 10 and sum(stats["by_kind"].values()) == 30  # listed and changed/...
    assert (tmp_path / "pairs.jsonl").is_file()


def test_parse_reading_refuses_what_is_not_a_reading() -> None:
    text = reading_text(["a mug of coffee", "a slice of toast on a plate"], "on the dining table")
    assert parse_reading(text) == (["a mug of coffee", "a slice of toast on a plate"], ["on the dining table"])
    assert parse_reading("Item: A Mug of Coffee\n\nitem: a mug of coffee\nserve: none\n") == (["a mug of coffee"], [])
    for bad, why in [("serve: on the table", "no 'item: ...' line"), ("Sure! Here you go", "neither"),
                     ("item: " + "x" * 200, "longer than"), ("\n".join(f"item: dish {i}" for i in range(9)), "at most")]:
        with pytest.raises(ParseError, match=why):
            parse_reading(bad)


def test_a_reading_that_names_a_food_no_commander_turn_names_is_not_used() -> None:
    dialogue = [("Commander", "coffee please, and an apple slice on a plate"), ("Driver", "sure. toast too?"),
                ("Commander", "no thanks. Bring it to the table")]
    kept = (["a mug of coffee", "one slice of apple on a plate"], ["on the table"])
    assert grounded_reading(kept, dialogue) == kept  # mug, slice, plate: the answer's own form
    # a dish merged with one only the Driver named, or one nobody named: the rules read the request instead
    assert grounded_reading((["a mug of coffee", "an apple slice of toast on a plate"], []), dialogue) is None
    assert grounded_reading((["a mug of coffee", "one slice of apple", "a slice of toast on a plate"], []),
                            dialogue) is None
    # another form of a word the Commander said ("toasted", "potatoes"); an instruction without speakers
    forms = [("Commander", "two toasted bread slices and some fried potatoes please")]
    assert grounded_reading((["a slice of toast on a plate", "two cooked slices of potato"], []), forms)
    assert grounded_reading((["a slice of toast on a plate"], []), ["Make a plate of toast."])
    assert grounded_reading(None, dialogue) is None  # no reading (unparseable twice): the rules read
    # its serving place names no food: kept beside the rules' items when its items are not used
    rules_items = request_items(dialogue)[0]
    assert rules_items and grounded_reading((["an apple slice of toast"], ["on the table"]), dialogue) == (
        rules_items, ["on the table"])
    # a misspelt word the reading spells right ("cofee"); not a word one letter apart that means another thing
    typed = [("Commander", "he always drinks cofee in his big mug and he eats toast")]
    assert grounded_reading((["a mug of coffee", "a slice of toast on a plate"], []), typed)
    assert grounded_reading((["a slice of roast on a plate"], []), typed) is None
    # an item of the answer's form words alone names nothing: left out, the rest kept; none left: the rules
    junk = (["a mug of coffee", "one slice of apple on a plate", "one slice of plate"], ["on the table"])
    assert grounded_reading(junk, dialogue) == (junk[0][:2], ["on the table"])
    assert grounded_reading((["one slice of plate"], ["on the table"]), dialogue) == (rules_items, ["on the table"])


def test_a_food_the_driver_asks_about_is_named_unless_the_commander_refuses_it() -> None:
    reading = (["a mug of coffee", "two cooked slices of potato on a plate"], ["at the dining table"])
    offered = [("Commander", "hey, I'm really hungry"), ("Driver", "Would you like coffee?"),
               ("Commander", "yes, a big mug"), ("Driver", "Anything to eat?"), ("Commander", "potatoes. two, cooked"),
               ("Commander", "at the dining table please")]
    assert asked_words(offered) >= {"coffee", "potatoes"}
    assert grounded_reading(reading, offered) == reading
    refused = [*offered[:2], ("Commander", "no, I don't drink it"), *offered[3:]]
    assert "coffee" not in asked_words(refused)
    assert grounded_reading(reading, refused)[0] == request_items(refused)[0]  # the rules' items, its place
    told = [*offered[:1], ("Driver", "Coffee is ready."), *offered[2:]]  # a report, not a question
    assert "coffee" not in asked_words(told)


def test_fill_adds_the_dishes_the_rules_read_and_the_reading_left_out() -> None:
    """planner.fill_missed_dishes: a rules' item naming a dish or food that no word of the reading names (nor a
    dish of the reading is made of) is added; without fill, or when the reading names them all, it stays as it
    was; a reading the check refuses gets the rules' items as before."""
    said = [("Commander", "breakfast. coffee, a plate of toast, and an apple slice on its own plate"),
            ("Commander", "just leave everything on the counter")]
    reading = (["a mug of coffee", "a plate of toast"], ["on the counter"])
    assert grounded_reading(reading, said) == reading
    assert grounded_reading(reading, said, fill=True) == ([*reading[0], "an apple slice on its own plate"],
                                                          ["on the counter"])
    whole = (["a mug of coffee", "a plate of toast", "one slice of apple on a plate"], ["on the counter"])
    assert grounded_reading(whole, said, fill=True) == whole
    # the rules cut a described sandwich into pieces: a sandwich's toast, lettuce and tomato add nothing
    sandwich = [("Commander", "A sandwich: two pieces of toast with a slice of lettuce and a slice of tomato."),
                ("Commander", "First, a mug of coffee.")]
    assert grounded_reading((["a sandwich"], []), sandwich, fill=True) == (["a sandwich", "a mug of coffee"], [])
    # a dish the rules read with its description counts by its name: a reading of its fillings misses the sandwich
    described = [("Commander", "a sandwich"), ("Driver", "What should go in it?"),
                 ("Commander", "toast the bread, then 1 lettuce and 1 tomato"), ("Commander", "and a coffee")]
    fillings = (["a slice of toast on a plate", "a mug of coffee", "one slice of lettuce"], [])
    assert grounded_reading(fillings, described, fill=True) == (
        [*fillings[0], "a sandwich: toast the bread, then 1 lettuce and 1 tomato"], [])
    # a reader's merged dishes ("an apple slice of toast") are left out for the rules' own; a food the Commander asks
    # for cooked is read cooked, not one they want raw
    said = [("Commander", "Coffee, toast, and an apple slice."), ("Driver", "what kind of potato?"),
            ("Commander", "and some potato, sliced and cooked, two pieces")]
    merged = (["a mug of coffee", "a slice of toast on a plate", "an apple slice of toast on a plate",
               "two slices of potato on a plate"], [])
    assert foods(merged[0][2]) == {"apple", "bread"} and foods("a salad of lettuce and tomato") == {"salad"}
    assert grounded_reading(merged, said, fill=True) == (
        ["a mug of coffee", "a slice of toast on a plate", "two cooked slices of potato on a plate", "an apple slice"], [])
    assert cooked("two slices of potato", [("Commander", "two potato slices, raw, not cooked")]) == "two slices of potato"
    assert cooked("a mug of coffee", [("Commander", "cook me a coffee")]) == "a mug of coffee"
    # a dish the Commander cancelled is not one the reader missed
    changed = [("Commander", "can i get a coffee, a sandwich and an apple slice"),
               ("Commander", "hmm, on second thought no sandwich. just a single slice of toast instead")]
    kept = (["a mug of coffee", "one slice of apple on a plate", "a slice of toast on a plate"], [])
    assert "a sandwich" in request_items(changed)[0] and grounded_reading(kept, changed, fill=True) == kept
    assert grounded_reading((["a slice of tomato"], ["on the counter"]), said, fill=True) == (  # nobody said tomato
        request_items(said)[0], ["on the counter"])
    with pytest.raises(ValueError, match="fill_missed_dishes adds the rules' dishes"):
        PlannerConfig(mode="copy", fill_missed_dishes=True).validate()


def test_a_pair_that_holds_a_hand_written_turn_by_chance_is_dropped(tmp_path, monkeypatch) -> None:
    import json

    import yaml

    from icalkit.commands.finetune import Config, build_dataset
    from icalkit.envs.household.tasks import hand_written

    cfg = Config(pairs="requests", out_dir=str(tmp_path / "run"),
                 requests=RequestPairConfig(singles_per_type=2, listed=30, seed=4))
    rows = request_pairs(cfg.requests)
    turn = next(t.split(": ", 1)[1] for r in rows for t in r["prompt"][-1]["content"].splitlines()
                if t.startswith("Commander: ") and len(t) > 60)
    written = tmp_path / "written.yaml"  # a hand-written set that happens to say one generated turn
    written.write_text(yaml.safe_dump([{"id": "w1", "task_type": "Coffee", "params": {},
                                        "dialogue": [["Commander", turn.upper()]]}]))
    monkeypatch.setattr(hand_written, "HAND_WRITTEN", (written,))
    assert build_dataset(cfg) == tmp_path / "run" / "data" / "dataset"
    stats = json.loads((tmp_path / "run" / "data" / "stats.json").read_text())
    kept = [json.loads(line) for line in (tmp_path / "run" / "data" / "pairs.jsonl").read_text().splitlines()]
    assert stats["dropped_held_out"] >= 1 and stats["pairs"] == len(rows) - stats["dropped_held_out"] == len(kept)
    assert not any(turn.lower() in r["prompt"][-1]["content"].lower() for r in kept)


def test_a_dish_is_cancelled_when_the_commanders_last_word_on_it_cancels_it() -> None:
    """cancelled: the foods whose last mention in a Commander's turn is a cancellation ("forget the apple", "no
    toast today, i'm off bread", "scratch the coffee", "leave the potato out"); asked for again, a step's word
    ("no toasting", "drop the potato in") or a negated cancel ("don't forget the coffee") cancels nothing."""
    def commander(*texts: str) -> list[tuple[str, str]]:
        return [("Commander", t) for t in texts]

    assert cancelled(commander("toast and slice up an apple", "one toast... actually forget the apple. i'd rather "
                               "have a coffee with the toast")) == {"apple"}
    assert cancelled(commander("no toast today, i'm off bread. but i'd like coffee and a slice of apple")) == {"bread"}
    assert cancelled(commander("coffee, toast and an apple slice", "Hold on, scratch the coffee.")) == {"coffee"}
    assert cancelled(commander("a salad", "Actually no, leave the potato out.")) == {"potato"}
    assert cancelled(commander("make it a sandwich instead of plain toast")) == {"bread"}
    assert cancelled(commander("hmm, changed my mind on the apple, cooked potatoes instead")) == {"apple"}
    assert cancelled(commander("coffee and some cooked potato", "swap the potato for a slice of apple")) == {"potato"}
    assert cancelled(commander("no coffee", "hmm, ok, a small coffee after all")) == set()  # asked for again
    assert cancelled(commander("two slices of bread", "no, plain, not toasted. no toasting")) == set()
    assert cancelled(commander("put the pot on the stove, drop the potato in")) == set()
    assert cancelled(commander("toast and coffee, and don't forget the coffee", "hold on, don't burn the toast")) == set()
    assert cancelled([("Commander", "toast and an apple"), ("Driver", "no apple then?")]) == set()  # the Driver's words
    # an item is cancelled when every food it names is (its description aside)
    assert is_cancelled("one slice of apple on a plate", {"apple"}) and is_cancelled("a slice of toast", {"bread"})
    assert not is_cancelled("a mug of coffee", {"apple"}) and not is_cancelled("a plate", {"apple"})
    assert not is_cancelled("a toast with an apple slice", {"apple"})
    assert not is_cancelled("a sandwich: toast, lettuce, no tomato", {"tomato"})


def test_a_dishs_other_name_is_the_dish() -> None:
    """A cup of joe is coffee: the reader's "a mug of coffee" for it is kept, it names the food coffee, and the fill
    adds it where the reader left it out."""
    said = [("Commander", "cup of joe and sliced apple pls, just 1 slice")]
    assert "coffee" in asked_words(said) and foods("a cup of joe") == {"coffee"}
    read = (["a mug of coffee", "one slice of apple"], [])
    assert grounded_reading(read, said, fill=True) == read
    said = [("Commander", "cup of joe and an apple slice pls")]
    assert grounded_reading((["one slice of apple"], []), said, fill=True)[0] == ["one slice of apple", "cup of joe"]
