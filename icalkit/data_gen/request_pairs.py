"""Pairs that teach a model to read a request for dishes: dialogue -> one line per dish and where they go.

The rule reader (:func:`~icalkit.agents.request_rules.request_items`) was fitted, round by round, to the
dialogue sets it had read, and each new writer's breakfasts broke it again. These pairs teach the
planner's model to read the request instead (``planner.request_reader``). They come from the
**trained types only**: the dish-making types (:data:`DISH_TYPES`), never a type held out of training
(Breakfast, Sandwich, Boil X, Water Plant).

- **single**: a generated dialogue of one dish type (template or human-like style) -> its dish.
- **listed**: a request that lists two or three dishes of different dish types in one sentence, or
  one per turn, among turns of the generated dialogues (the Driver's questions, the Commander's hints),
  sometimes with where everything goes ("all on the counter") -> each dish, and that place.
- **described**: as listed, but one dish is named vaguely ("some cooked potato") and described in the
  answer to the Driver's question ("how many slices?" -> "two, on a plate").
- **changed**: as listed, but the Commander changes their mind (:func:`_change`): cancels a dish said
  earlier, swaps one dish (or its count) for another, turns down a dish the Driver offers, says up front
  which dish they do not want, or moves where everything goes -> only what they finally ask for.
- **revised** (off by default; round 36's readers trained with them read fewer breakfasts right): one slice
  dish or salad whose count, vessel or foods are corrected, asked back by the Driver or told piece by piece
  (``revised_per_type``), and in a listed request one such dish corrected by its name (``revised_share``).

A dish is written as :func:`dish_item` does ("two cooked slices of potato on a plate"): the words the
composition retrieves each dish's demonstration with. Train and deploy prompts come from one
function (:func:`~icalkit.agents.request_reading.reader_prompt`); the answer is read by
:func:`~icalkit.agents.request_reading.parse_reading`, which refuses what is not in that form.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from icalkit.agents.request_reading import reader_prompt, reading_text
from icalkit.envs.household.tasks.instructions import write_instructions
from icalkit.envs.household.tasks.registry import SALADS, TASK_TYPES, choose_params

DISH_TYPES = ("Coffee", "Plate Of Toast", "N Slices Of X In Y", "N Cooked Slices Of X In Y", "Salad")
NUMBERS = {"1": "one", "2": "two", "3": "three"}
# words for the parts of a listed request (generic English, never a held-out type's name)
LEADS = ("", "I'd like ", "i want ", "Could you make me ", "please make ", "We need ", "can i get ",
         "Let's have ", "Make me ", "today i'd love ", "Can you get me ", "lunch time! ", "dinner: ",
         "snack time - ", "for lunch i want ", "I'm starving, ")
# dishes no task makes: the reader copies a dish it was not taught as it is said (the composition finds its
# demonstrations, if the memory has any, by those words). No whole fruit: an apple or a banana is read as a taught
# dish's fruit slices would be. Several share a taught dish's words (lettuce, tomato, toast, potato, apple):
# the reader learns to keep such a dish whole, never to split it into taught ones.
UNTAUGHT = ("a glass of orange juice", "a bowl of cereal", "some pancakes", "a bagel", "an omelette", "a cup of tea",
            "some yogurt", "a muffin", "waffles", "oatmeal", "a smoothie", "a croissant", "a glass of milk", "a donut",
            "a burrito with beans and rice", "a wrap with chicken and cheese", "a bowl of soup", "a slice of pizza",
            "a bowl of rice", "some pasta", "a cheese omelette with ham", "two pancakes with syrup", "a plate of fries",
            "a wrap with lettuce and tomato", "a burger with lettuce and tomato", "a bowl of tomato soup",
            "a baked potato", "an apple pie", "a bagel with tomato and cheese", "french toast", "mashed potatoes",
            "a taco with lettuce", "a tomato and cheese toastie", "a lettuce wrap with chicken",
            "a potato omelette", "apple juice", "a pita with lettuce and tomato")
PAIRS = (" and ", ", ", " + ", " with ", " plus ", " & ", ", and ")
STEPS = ("first, {}", "then {}", "{} too", "also {}", "and {} please", "{}", "next {}", "i'd also like {}")
PLACES = {"CounterTop": ("counter", "countertop", "kitchen counter"),
          "DiningTable": ("dining table", "table", "kitchen table")}
SERVES = ("all on the {}", "put all of it on the {}", "serve them on the {}", "leave it all at the {} please",
          "bring both to the {}", "everything goes on the {}", "set them on the {} when you're done")
# a change of mind: {old} is a dish the request does not end with, {new} one it does, {place} a serving place
CANCELS = ("actually skip the {old}", "never mind the {old}", "forget the {old}, the rest is fine",
           "no {old} after all", "hmm, scratch the {old}", "on second thought, leave out the {old}", "wait, cancel the {old}")
SWAPS = ("actually, instead of the {old}, make it {new}", "no wait, {new}, not the {old}", "change the {old} to {new}",
         "sorry, make that {new} instead", "wait, i meant {new}", "swap the {old} for {new}")
REFUSALS = ("no {old} today.", "i don't want {old} this time,", "skip the {old} today,", "not in the mood for {old}.",
            "we're out of {old}, so")
OFFERS = ("should i make {old} too?", "do you want {old} as well?", "{old} too?", "want some {old} with that?")
DECLINES = ("no thanks", "nope, just that", "no, i'm good", "no need", "not today", "no")
MOVES = ("actually, use the {place} instead", "hmm no, the {place}", "wait, make that the {place}",
         "sorry, i meant the {place}")
CHANGES = ("cancel", "swap", "decline", "refuse", "move")
ASKS = ("how many slices?", "how many?", "how many pieces?", "what kind?", "how do you want it?")
# a single dish whose details are revised or come piece by piece (kind "revised/<how>": :func:`_revised`)
REVISIONS = ("recount", "revessel", "both", "piecemeal", "confirm")
REVISABLE = ("N Slices Of X In Y", "N Cooked Slices Of X In Y", "Salad")
RECOUNTS = ("actually only {n}", "make it {n}", "wait, {n} not {old}", "hmm, {n} is enough", "sorry, i meant {n}",
            "change that to {n} please", "{n} actually", "no wait, {n}")
REVESSELS = ("put them {new} instead", "actually {new}, not {old}", "hmm, {new} please", "{new} would be better",
             "on second thought, {new}", "sorry, {new} not {old}")
COUNTS = {"1": ("one", "1", "just one", "only one", "a single one", "one slice", "one piece"),
          "2": ("two", "2", "a couple", "two slices", "two pieces", "two of them"),
          "3": ("three", "3", "three slices", "three pieces", "three of them")}
VESSEL_ASKS = ("plate or bowl?", "on a plate or in a bowl?", "what should i put them in?", "in a bowl or on a plate?")
OPENERS = ("i want some {x}", "{x} slices please", "can you slice some {x}", "could you cut up some {x} for me",
           "i'd like some {x}", "{x}, sliced")
SALAD_DROPS = ("no {food} after all", "actually skip the {food}", "leave out the {food}", "hold the {food}",
               "without {food} please", "wait, no {food}")
SALAD_ADDS = ("add {what} too", "and {what} as well", "oh, also {what}", "can you add {what}")
HINT = re.compile(r"\b(?:is|are)\s+(?:in|on|by|next)\b|\btry\b|\bcheck\b|there's|you'll find|\bsee\b", re.IGNORECASE)


class RequestPairError(ValueError):
    """Request-reading pairs that cannot be built (a bad config)."""


def _n(count: str, noun: str) -> str:
    return f"{NUMBERS.get(count, count)} {noun}{'' if count == '1' else 's'}"


def dish_item(task_type: str, params: Mapping[str, str], vessel: bool = True) -> str:
    """The words for one dish of a dish type (:data:`DISH_TYPES`): "a mug of coffee", "two cooked slices
    of potato on a plate" (without "on a plate" when ``vessel`` is false and the type names one)."""
    if task_type == "Coffee":
        return "a mug of coffee"
    if task_type == "Plate Of Toast":
        return "a slice of toast on a plate"
    if task_type == "Salad":
        foods = [_n(params[f], "slice") + f" of {'cooked ' if f == 'potato' else ''}{f}"
                 for f in ("lettuce", "tomato", "potato") if params[f] != "0"]
        return "a salad of " + " and ".join(foods) + " on a plate"
    cooked = "cooked " if task_type == "N Cooked Slices Of X In Y" else ""
    place = f" {'in' if params['Y'] == 'Bowl' else 'on'} a {params['Y'].lower()}" if vessel else ""
    return _n(params["N"], f"{cooked}slice") + f" of {params['X'].lower()}" + place


def dish_phrases(task_type: str, params: Mapping[str, str], rng: random.Random) -> tuple[str, str]:
    """A way to name the dish in a list ("a cup of coffee", "2 fried potato slices") and its item; a
    slice dish may leave its vessel out (its item then leaves it out too)."""
    if task_type == "Coffee":
        return rng.choice(("coffee", "a coffee", "a mug of coffee", "a cup of coffee", "some coffee",
                           "a hot coffee", "coffee in a clean mug", "a fresh mug of coffee")), dish_item(task_type, params)
    if task_type == "Plate Of Toast":
        return rng.choice(("toast", "a toast", "a slice of toast", "a piece of toast", "a plate of toast", "some toast",
                           "a toasted slice of bread", "toast on a plate", "one slice of toasted bread")), \
            dish_item(task_type, params)
    if task_type == "Salad":
        foods = " and ".join(_n(params[f], "slice") + f" of {f}" for f in ("lettuce", "tomato", "potato")
                             if params[f] != "0")
        return rng.choice(("a salad with {}", "a salad: {}", "a small salad of {}")).format(foods), \
            dish_item(task_type, params)
    n, x = params["N"], params["X"].lower()
    count = rng.choice({"1": ("a", "a", "one", "1"), "2": ("two", "2", "a couple of"), "3": ("three", "3")}[n])
    cooked = rng.choice(("cooked ", "fried ", "microwaved ", "hot ")) if "Cooked" in task_type else ""
    plural = "" if n == "1" else "s"
    phrase = rng.choice((f"{count} {cooked}{x} slice{plural}", f"{count} slice{plural} of {cooked}{x}",
                         f"{count} {cooked}piece{plural} of {x}"))
    phrase = re.sub(r"^a (?=[aeiou])", "an ", phrase)
    vessel = rng.random() < 0.6
    if vessel:
        phrase += f" {'in' if params['Y'] == 'Bowl' else 'on'} a {rng.choice(('', 'clean '))}{params['Y'].lower()}"
    return phrase, dish_item(task_type, params, vessel)


@dataclass
class RequestPairConfig:
    """How request-reading pairs are built (the ``requests`` section of ``icalkit finetune``).

    Attributes:
        task_types: the dish types to build from (trained types only; see :data:`DISH_TYPES`).
        heldout_types: types kept out (refused here: every listed type must be a trained dish type).
        singles_per_type: one-dish dialogues per type.
        listed: requests of two or three dishes (``described`` of them describe one dish later).
        described_share: share of the listed requests with a dish described after the Driver asks.
        untaught_share: share of the listed requests that also ask for a dish no task makes (:data:`UNTAUGHT`).
        changed_share: share of the listed requests in which the Commander changes their mind (:data:`CHANGES`).
        revised_per_type: one-dish dialogues per slice type and salad whose count, vessel or ingredients are
            corrected, asked for or given over several turns (:data:`REVISIONS`).
        revised_share: share of the listed requests without another change of mind in which one slice dish or
            salad is said with another count, vessel or foods first and corrected by its name ("for the apple
            slices, make it two").
        serve_share: share of the listed requests that say where everything goes.
        human_share: share of generated dialogues in the human-like style.
        valid_fraction: share of pairs in the validation split.
        seed: sampling seed.
    """

    task_types: list[str] = field(default_factory=lambda: list(DISH_TYPES))
    heldout_types: list[str] = field(default_factory=lambda: ["Boil X", "Water Plant", "Sandwich", "Breakfast"])
    singles_per_type: int = 60
    listed: int = 1200
    described_share: float = 0.3
    untaught_share: float = 0.3
    changed_share: float = 0.25
    revised_per_type: int = 0
    revised_share: float = 0.0
    serve_share: float = 0.6
    human_share: float = 0.5
    valid_fraction: float = 0.05
    seed: int = 0

    def validate(self) -> None:
        if bad := [t for t in self.task_types if t not in DISH_TYPES or t in self.heldout_types]:
            raise RequestPairError(f"requests.task_types {bad} are not trained dish types {list(DISH_TYPES)} "
                                   f"(held out: {self.heldout_types})")
        if len(self.task_types) < 2 or min(self.singles_per_type, self.listed, self.revised_per_type) < 0:
            raise RequestPairError("requests needs two or more task_types and counts >= 0")
        for name in ("described_share", "untaught_share", "changed_share", "serve_share", "human_share",
                     "revised_share"):
            if not 0 <= getattr(self, name) <= 1:
                raise RequestPairError(f"requests.{name} must be a share in [0, 1]")
        if not 0 <= self.valid_fraction < 1:
            raise RequestPairError(f"requests.valid_fraction must be in [0, 1), got {self.valid_fraction}")


def _generated(task_type: str, rng: random.Random, cfg: RequestPairConfig, tag: str) -> tuple[dict, list]:
    params = choose_params(TASK_TYPES[task_type], "kitchen", rng)
    style = "human" if rng.random() < cfg.human_share else "template"
    return params, list(write_instructions(task_type, params, f"requests/{cfg.seed}/{tag}", style=style)[1])


def _short(task_type: str, params: Mapping[str, str], phrase: str) -> str:
    """How a dish is named again when taken back ("coffee", "potato slices", "bowl of cereal")."""
    if task_type in ("Coffee", "Salad"):
        return task_type.lower()
    if task_type == "Plate Of Toast":
        return "toast"
    if task_type:
        cooked = "cooked " if "Cooked" in task_type else ""
        return f"{cooked}{params['X'].lower()} slice{'' if params['N'] == '1' else 's'}"
    return re.sub(r"^(?:a|an|some|two)\s+", "", phrase)


def _other_dish(cfg: RequestPairConfig, rng: random.Random, dishes: list,
                said: list[tuple[str, str]]) -> tuple[str, str]:
    """A dish the request does not end with, of none of its types and none of its untaught dishes: (how it is
    first said, how it is named again)."""
    kinds = [d[0] for d in dishes]
    rest = [k for k in cfg.task_types if k not in kinds]
    if rest and rng.random() < 0.6:
        kind = rng.choice(rest)
        params = choose_params(TASK_TYPES[kind], "kitchen", rng)
        phrase = dish_phrases(kind, params, rng)[0]
        return phrase, _short(kind, params, phrase)
    phrase = rng.choice([u for u in UNTAUGHT if u not in {p for p, _ in said}])
    return phrase, _short("", {}, phrase)


def _change(cfg: RequestPairConfig, rng: random.Random, dishes: list, said: list[tuple[str, str]],
            keep: int | None) -> tuple[str, list[str], list[tuple[str, str]], list[tuple[str, str]]]:
    """How the Commander changes their mind about the dishes: (the change, the phrases first said, turns said
    before them, turns said after them). The dishes asked for in the end stay ``said``; ``keep`` (a dish
    described later) is never swapped."""
    change, spoken = rng.choice(CHANGES), [p for p, _ in said]
    old, short = _other_dish(cfg, rng, dishes, said)
    if change == "cancel":
        spoken.insert(rng.randint(0, len(spoken)), old)
        return change, spoken, [], [("Commander", rng.choice(CANCELS).format(old=short))]
    if change == "swap" and (at := [j for j in range(len(said)) if j != keep]):
        j = rng.choice(at)
        kind, params, _ = dishes[j]
        if "Slices" in kind and rng.random() < 0.5:  # the same dish, another count first
            params = {**params, "N": rng.choice([n for n in NUMBERS if n != params["N"]])}
            old = dish_phrases(kind, params, rng)[0]
            short = _short(kind, params, old)
        spoken[j] = old
        # "i meant ..." only right after the last dish; elsewhere the swap names the dish it replaces
        ways = SWAPS if j == len(said) - 1 and keep is None else [w for w in SWAPS if "{old}" in w]
        return change, spoken, [], [("Commander", rng.choice(ways).format(old=short, new=said[j][0]))]
    if change == "decline":
        return change, spoken, [], [("Driver", rng.choice(OFFERS).format(old=short)),
                                    ("Commander", rng.choice(DECLINES))]
    if change == "refuse":
        return change, spoken, [("Commander", rng.choice(REFUSALS).format(old=short))], []
    return "move", spoken, [], []  # where everything goes: said once, then corrected (in _listed)


def _listed(cfg: RequestPairConfig, rng: random.Random, i: int) -> tuple[list[tuple[str, str]], list[str], str, str]:
    """One request of two or three dishes of different types, among other turns: (turns, items, serving,
    the change of mind or "")."""
    kinds = rng.sample(cfg.task_types, rng.choice((2, 2, 3)) if len(cfg.task_types) > 2 else 2)
    dishes = [(k, *_generated(k, rng, cfg, f"listed/{i}/{k}")) for k in kinds]  # (type, params, its dialogue)
    said = [dish_phrases(k, params, rng) for k, params, _ in dishes]
    if rng.random() < cfg.untaught_share:  # a dish no task makes, said and read as it is
        at, untaught = rng.randint(0, len(said)), rng.choice(UNTAUGHT)
        said.insert(at, (untaught, untaught))
        dishes.insert(at, ("", {}, []))
    items = [item for _, item in said]
    vague = None
    if rng.random() < cfg.described_share and (slices := [j for j, d in enumerate(dishes) if "Slices" in d[0]]):
        vague = rng.choice(slices)
        kind, params, _ = dishes[vague]
        said[vague] = (f"some {'cooked ' if 'Cooked' in kind else ''}{params['X'].lower()}", items[vague])
        items[vague] = dish_item(kind, params)
    change, phrases, before, after = (_change(cfg, rng, dishes, said, vague) if rng.random() < cfg.changed_share
                                      else ("", [p for p, _ in said], [], []))
    revising = random.Random(f"request-pairs/{cfg.seed}/listed/{i}/revised")  # the other pairs as without it
    if not change and revising.random() < cfg.revised_share and (
            at := [j for j, d in enumerate(dishes) if d[0] in REVISABLE and j != vague and sum(  # its food is its own
                d[1].get("X", "salad").lower() in p for p in phrases) == 1]):
        j = revising.choice(at)  # one dish said with another count, vessel or foods, then corrected by name
        kind, params, _ = dishes[j]
        if corrected := _corrected(kind, params, revising):
            phrases[j], fixes, how, vessel = corrected
            name = _short(kind, params, phrases[j])
            after = [("Commander", revising.choice(("for the {}, {}", "{}: {}", "the {} - {}")).format(name, f))
                     for f in fixes]
            items[j], change = dish_item(kind, params, vessel), "revised"
    # hints and the Driver's turns, from the dishes' dialogues and from another dish's (a hint names no dish)
    other = _generated(rng.choice(cfg.task_types), rng, cfg, f"listed/{i}/other")[1]
    others = [t for *_, turns in [*dishes, (other,)] for t in turns if t[0] == "Driver" or HINT.search(t[1])]
    turns = [("Driver", rng.choice(("hi, what should i do?", "Hello! What can I do?", "what's the task?")))]
    lead, one_turn = rng.choice(LEADS), rng.random() < 0.5
    if before and one_turn and rng.random() < 0.5:  # "no coffee today. i'd like ..." in one turn
        lead, before = before[0][1] + " " + lead, []
    turns += [(who, re.sub(r"[,.]?(?: so)?$", "", text)) for who, text in before]
    if one_turn:
        body = (rng.choice(PAIRS).join(phrases) if len(phrases) == 2
                else ", ".join(phrases[:-1]) + rng.choice((" and ", ", and ", ", ", " + ")) + phrases[-1])
        turns.append(("Commander", lead + body))
    else:
        turns += [("Commander", rng.choice(STEPS).format(p)) for p in phrases]
    glued = set()  # turns that answer the one before them: nothing is put between
    if vague is not None:
        kind, params, _ = dishes[vague]
        answer = _n(params["N"], "slice") if rng.random() < 0.5 else NUMBERS[params["N"]]
        answer += rng.choice(("", ", cooked" if "Cooked" in kind else ""))
        answer += f" {'in' if params['Y'] == 'Bowl' else 'on'} a {params['Y'].lower()}"
        turns += [("Driver", rng.choice(ASKS)), ("Commander", answer)]
        glued.add(len(turns) - 1)
    turns += after
    glued |= {len(turns) - 1} if change == "decline" else set()
    serving = ""
    if rng.random() < cfg.serve_share or change == "move":
        places = [rng.choice(PLACES[p]) for p in rng.sample(sorted(PLACES), 2)]
        serving = f"on the {places[-1]}"
        if change == "move":
            turns.append(("Commander", rng.choice(SERVES).format(places[0])))
            turns.append(("Commander", rng.choice(MOVES).format(place=places[1])))
        else:
            turns.append(("Commander", rng.choice(SERVES).format(places[-1])))
    for turn in rng.sample(others, min(len(others), rng.randint(0, 3))):  # hints and the Driver's turns
        at = rng.choice([j for j in range(2, len(turns) + 1) if j not in glued])
        glued = {g + (at <= g) for g in glued}
        turns.insert(at, turn)
    return turns, items, serving, change


def _vessel(y: str) -> str:
    return f"{'in' if y == 'Bowl' else 'on'} a {y.lower()}"


def _salad_revision(params: Mapping[str, str], rng: random.Random) -> tuple[dict[str, str], str, str] | None:
    """A salad said first with one food more, one less or one count other than ``params``': (its params, how
    the Commander corrects it, the revision), or None when no valid recipe differs so."""
    foods = ("lettuce", "tomato", "potato")
    recipes = [dict(zip(foods, r.split("-"), strict=True)) for r in SALADS]
    near = [(r, f) for r in recipes for f in foods if r[f] != params[f] and all(r[g] == params[g] for g in foods if g != f)]
    if not near:
        return None
    first, food = rng.choice(near)
    name = f"{'cooked ' if food == 'potato' and rng.random() < 0.5 else ''}{food}"
    if params[food] == "0":
        return first, rng.choice(SALAD_DROPS).format(food=name), "drop"
    what = _n(params[food], "slice") + f" of {name}"
    if first[food] == "0":
        return first, rng.choice(SALAD_ADDS).format(what=what), "add"
    return first, rng.choice(("make it {} actually", "{} please, not {}", "sorry, {}")).format(
        what, _n(first[food], "slice")), "recount"


def _corrected(kind: str, params: Mapping[str, str], rng: random.Random, how: str = ""
               ) -> tuple[str, list[str], str, bool] | None:
    """A slice dish or salad said first with another count, vessel or foods, then corrected: (how it is first
    said, the Commander's corrections, how, whether its vessel is said); None for a salad no valid recipe is
    one change away from."""
    if kind == "Salad":
        revision = _salad_revision(params, rng)
        if revision is None:
            return None
        first, fix, how = revision
        return dish_phrases(kind, {**params, **first}, rng)[0], [fix], how, True
    how = how or rng.choice(REVISIONS[:3])
    n, y = params["N"], params["Y"]
    other_n, other_y = rng.choice([c for c in COUNTS if c != n]), "Plate" if y == "Bowl" else "Bowl"
    first = {**params, "N": other_n if how in ("recount", "both") else n, "Y": other_y if how in ("revessel", "both") else y}
    phrase = dish_phrases(kind, first, rng)[0]
    if how != "recount" and first["Y"].lower() not in phrase:
        phrase += " " + _vessel(first["Y"])
    fixes = []
    if how in ("recount", "both"):
        fixes.append(rng.choice(RECOUNTS).format(n=rng.choice(COUNTS[n]), old=NUMBERS[other_n]))
    if how in ("revessel", "both"):
        fixes.append(rng.choice(REVESSELS).format(new=_vessel(y), old=_vessel(other_y)))
    fixes = [" and ".join(fixes)] if rng.random() < 0.5 else fixes
    return phrase, fixes, how, how != "recount" or any(v in phrase for v in ("plate", "bowl"))


def _revised(cfg: RequestPairConfig, rng: random.Random, i: int, kind: str) -> tuple[list[tuple[str, str]], str, str]:
    """One dish of a slice type or a salad, its count, vessel or ingredients corrected (:func:`_corrected`), asked
    for by the Driver or given over several turns: (turns, its item, how)."""
    params, own = _generated(kind, rng, cfg, f"revised/{kind}/{i}")
    said: list[tuple[str, str]] = []
    how = "" if kind == "Salad" else rng.choice(REVISIONS)
    vessel = True
    if how == "piecemeal":  # the dish, then how many (asked or told), then where
        cooked = rng.choice(("cooked ", "fried ", "hot ")) if "Cooked" in kind else ""
        said.append(("Commander", rng.choice(OPENERS).format(x=cooked + params["X"].lower())))
        said += ([("Driver", rng.choice(ASKS[:3]))] if rng.random() < 0.5 else [])
        said += [("Commander", rng.choice(COUNTS[params["N"]]))]
        said += ([("Driver", rng.choice(VESSEL_ASKS))] if rng.random() < 0.5 else [])
        said.append(("Commander", rng.choice(("{}", "{} please", "put them {}")).format(_vessel(params["Y"]))))
    elif how == "confirm":  # the Driver asks back what was said first; the Commander's answer corrects it
        n, y = params["N"], params["Y"]
        first = {**params, "N": rng.choice([c for c in COUNTS if c != n]), "Y": rng.choice(("Plate", "Bowl"))}
        cooked = rng.choice(("cooked ", "fried ", "hot ")) if "Cooked" in kind else ""
        said.append(("Commander", dish_phrases(kind, first, rng)[0]))
        said.append(("Driver", f"{_n(first['N'], cooked + params['X'].lower() + ' slice')} {_vessel(first['Y'])}?"))
        answer = [rng.choice(COUNTS[n])] + ([_vessel(y)] if first["Y"] != y or rng.random() < 0.5 else [])
        said.append(("Commander", rng.choice(("no, ", "nope, ", "", "not quite, ")) + ", ".join(answer)))
    else:  # said with another count, vessel or foods, then corrected in one turn or two
        corrected = _corrected(kind, params, rng, how)
        if corrected is None:
            return [], "", ""
        phrase, fixes, how, vessel = corrected
        said += [("Commander", phrase), *(("Commander", f) for f in fixes)]
    turns = [("Driver", rng.choice(("hi, what should i do?", "Hello! What can I do?", "what's the task?"))), *said]
    others = [t for t in own if t[0] == "Driver" and not t[1].endswith("?") or HINT.search(t[1])]
    for turn in rng.sample(others, min(len(others), rng.randint(0, 2))):  # hints, the Driver's news: at the end
        turns.append(turn)
    return turns, dish_item(kind, params, vessel), how


def pair_text(row: dict[str, Any]) -> str:
    """A request-reading pair's text, as the held-out check reads it: the request and its reading."""
    return f"{row['prompt'][-1]['content']}\n{row['completion']}"


def request_pairs(cfg: RequestPairConfig) -> list[dict[str, Any]]:
    """The pairs (``prompt``, ``completion``, ``kind``, ``task_id``), in a seeded order."""
    cfg.validate()
    rng = random.Random(f"request-pairs/{cfg.seed}")
    rows = []
    for task_type in cfg.task_types:
        for i in range(cfg.singles_per_type):
            params, turns = _generated(task_type, rng, cfg, f"single/{task_type}/{i}")
            rows.append({"kind": "single", "turns": turns, "text": reading_text([dish_item(task_type, params)], "")})
    for i in range(cfg.listed):
        turns, items, serving, change = _listed(cfg, rng, i)
        rows.append({"kind": f"changed/{change}" if change else "listed", "turns": turns,
                     "text": reading_text(items, serving)})
    revising = random.Random(f"request-pairs/{cfg.seed}/revised")  # the other pairs as without them
    for task_type in (t for t in cfg.task_types if t in REVISABLE):
        for i in range(cfg.revised_per_type):
            turns, item, how = _revised(cfg, revising, i, task_type)
            if turns:
                rows.append({"kind": f"revised/{how}", "turns": turns, "text": reading_text([item], "")})
    rng.shuffle(rows)
    return [{"prompt": reader_prompt(r["turns"]), "completion": r["text"], "kind": r["kind"],
             "task_id": f"requests/{cfg.seed}/{i}", "task_type": "request"} for i, r in enumerate(rows)]


def write_request_pairs(rows: list[dict[str, Any]], cfg: RequestPairConfig, out_dir: str | Path,
                        dropped_held_out: int = 0) -> dict[str, Any]:
    """Write the pairs under ``out_dir`` (pairs.jsonl, dataset/, stats.json); ``icalkit finetune`` first drops
    those that hold a hand-written dialogue's turn (:func:`~icalkit.training.retriever_data.without_held_out`),
    ``dropped_held_out`` of them."""
    from collections import Counter

    from icalkit.data_gen.finetune_data import to_dataset

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with (out / "pairs.jsonl").open("w", encoding="utf-8") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
    to_dataset([{"task_id": r["task_id"], "rows": [r]} for r in rows], cfg.valid_fraction, cfg.seed
               ).save_to_disk(str(out / "dataset"))
    stats = {"pairs": len(rows), "by_kind": dict(Counter(r["kind"] for r in rows)), "task_types": cfg.task_types,
             "heldout_types": cfg.heldout_types, "dropped_held_out": dropped_held_out}
    (out / "stats.json").write_text(json.dumps(stats, indent=1))
    return stats
