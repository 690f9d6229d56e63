"""A demonstration read as if it were about the food a request names (:class:`~icalkit.agents.composition.Composer`).

A type whose demonstrations each work one food, a different one across them (slices of a tomato, of a
potato, of lettuce: N Slices Of X In Y), is a recipe over that food: its copy is re-grounded to the food
the request names. So a request's item ("an apple slice") is compared with such a demonstration's
requests with their food swapped for its own ("I need one slice of tomato on a plate" is read as "… of
apple …"), not with the food it happened to show: else "an apple slice" is answered by the one cooked-slices
demonstration that cut an apple, not by the slicing demonstrations that cut other foods.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from icalkit.agents.context import example_program, program_classes
from icalkit.agents.mention_grounding import WORDS, class_phrase
from icalkit.agents.request_rules import plain_names, same_word
from icalkit.envs.household.catalog import SLICE_PRODUCTS, SUPERCLASSES

FOODS = tuple(c for c in SUPERCLASSES["Food"] if c in SLICE_PRODUCTS)  # the wholes: Apple, Bread, Tomato, ...


def named_foods(text: str) -> set[str]:
    """The food classes ``text`` names (another form or a misspelling of a food's word too: "potatoes")."""
    words = WORDS.findall(plain_names(text).lower())
    return {food for food in FOODS if any(same_word(w, {class_phrase(food)}) for w in words)}


def named_food(text: str) -> str:
    """The one food class ``text`` names, or "" (none, or two)."""
    named = named_foods(text)
    return next(iter(named)) if len(named) == 1 else ""


def worked_foods(example: Any) -> set[str]:
    """The food classes an example's program works (a sandwich's bread, lettuce and tomato)."""
    return program_classes(example_program(example)) & set(FOODS)


def type_foods(examples: Sequence[Any]) -> dict[str, set[str]]:
    """Each task type's foods: the food classes its examples' programs work (:func:`worked_foods`)."""
    out: defaultdict[str, set[str]] = defaultdict(set)
    for ex in examples:
        out[ex.task_type] |= worked_foods(ex)
    return dict(out)


def recipe_foods(examples: Sequence[Any]) -> tuple[list[str], set[str]]:
    """Each example's food where its type is a recipe over foods (each of its examples' programs works one
    food class, two or more across them), "" for the others (a coffee; a salad's three foods); and the foods
    another type's examples all work alone (bread: the Plate Of Toast's), which no recipe is read as about ("a
    bit of bread" stays a toast's)."""
    foods = [next(iter(f)) if len(f) == 1 else "" for f in map(worked_foods, examples)]
    by_type: defaultdict[str, set[str]] = defaultdict(set)
    for ex, food in zip(examples, foods, strict=True):
        by_type[ex.task_type].add(food)
    recipes = {t for t, found in by_type.items() if "" not in found and len(found) >= 2}
    owned = {food for t, found in by_type.items() if t not in recipes and found != {""} and len(found) == 1
             for food in found}
    return [food if ex.task_type in recipes else "" for ex, food in zip(examples, foods, strict=True)], owned


def as_food(text: str, shown: str, food: str) -> str:
    """``text`` with the ``shown`` food's word (and its plural) as ``food``'s: "slice the tomatoes" -> "slice the
    apple"."""
    return re.sub(rf"\b{re.escape(class_phrase(shown))}(?:e?s)?\b", class_phrase(food), text, flags=re.IGNORECASE)


def swapped_texts(texts: Sequence[str], shown: Sequence[str], food: str) -> dict[int, str]:
    """Index -> text, for each of ``texts`` that reads otherwise as about ``food`` (:func:`as_food`); ``shown``: each
    text's food, "" where it is no recipe's."""
    about = {k: as_food(text, was, food) for k, (text, was) in enumerate(zip(texts, shown, strict=True))
             if was not in ("", food)}
    return {k: text for k, text in about.items() if text != texts[k]}
