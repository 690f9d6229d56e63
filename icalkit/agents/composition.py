"""A request for several dishes, composed from the demonstrations of each (``planner.compose_parts``).

A breakfast asks for a different set of dishes each time: "a mug of coffee and a plate of toast, all
on the table", then "a mug of coffee and two cooked potato slices on a plate". A stored breakfast
demonstration made other dishes, so its copy makes the wrong ones. What the memory does hold is a
demonstration of each dish on its own (a coffee, a plate of toast, cooked slices on a plate). So:

1. **Is the retrieved type a composite one?** (:meth:`Composer.composite_types`, read from the memory
   alone.) A type is composite when most of its stored demonstrations' requests list two or more
   items (:func:`~icalkit.agents.request_rules.request_items`) that demonstrations of two or more other
   types each answer at :data:`PART_SIM` or better ("a plate of toast": a Plate Of Toast demonstration's
   "make a plate of toast"), and made two or more things (a mug of coffee and a plate of toast). A
   salad's items ("a slice of tomato") are answered as well by the slicing demonstrations, but it makes
   one plate. With ``planner.compose_dishes`` a request retrieved as one of the types a composite one is
   made of (:meth:`Composer.dish_types`: a breakfast whose words are closest to a coffee's) is read too,
   and composed when one part is of the retrieved type and another of a type that is none of its
   ingredients (a coffee beside a salad; not a cooked potato slice in one: :meth:`Composer.parts`).
2. **Its parts.** Each item of the new request (its clauses of where things are left out: "a knife is
   in the sink" names no dish) is looked up alone among the demonstrations of the types that are not
   composite; an item none answers at :data:`ITEM_SIM` is no part. The part is the room's best fit
   among the hits (:func:`~icalkit.agents.context.room_fit_order`), copied as any copy is, re-grounded
   against its item alone ("an apple slice on a plate": the Potato of a potato-slices demonstration
   becomes the Apple). So an item that names a food is looked up as if each demonstration of a recipe over foods
   were about it (:mod:`~icalkit.agents.food_swap`).
3. **One program** (:func:`compose`): the parts' programs one after the other, each part's variable
   names suffixed so that no part reads another's (a name it reads unbound bound first), a part's moves
   of a whole an earlier part cuts left out (the sandwich cut the bread: the toast's ``bread.pickup()``
   would fail; its ``slice()`` is a no-op then), then every
   part's product (:func:`products`: the mug it filled, the plate it served on) moved onto the place
   the request serves on ("all on the kitchen table"), when it names one.

Whether the composed copy finished the task is judged as any copy is
(:class:`~icalkit.agents.copy_progress.CopyProgress`), against :meth:`ComposedDemo.checks`: the parts'
end-state checks, without where their products ended, and each product on the serving place. If it
did not finish, the retrieved demonstrations are copied after it as before.
"""

from __future__ import annotations

import ast
import hashlib
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

import numpy as np

from icalkit.agents.absent_objects import bound_names, declared_class, drop_sliced_moves
from icalkit.agents.context import example_program, object_calls, program_classes, room_fit_order
from icalkit.agents.demo_end_state import (
    GOAL_ATTRIBUTES,
    Check,
    acted_on,
    class_of,
    demo_checks,
    end_state,
    holders,
    interaction_class,
    is_place,
    program_placements,
    renamed,
)
from icalkit.agents.food_swap import named_food, named_foods, recipe_foods, swapped_texts, type_foods
from icalkit.agents.grounding import bind_object_names, unpin
from icalkit.agents.mention_grounding import mention_scores
from icalkit.agents.request_reading import cancelled, is_cancelled
from icalkit.agents.request_rules import DESCRIBED, asked, asked_turns, plain_names, request_items, same_dish
from icalkit.agents.served_vessels import is_dish
from icalkit.envs.household.catalog import KNIVES, OBJECT_TYPES, SLICE_PRODUCTS
from icalkit.envs.household.tasks.task import Task
from icalkit.memory.keys import dialogue_turns

PART_SIM = 0.7  # a composite type's demonstrations: every item answered this well by another type's
ITEM_SIM = 0.6  # a request's item no demonstration answers this well is no part
TABLES = "Tables"  # the places a meal is served on when no clause says where (the counter, a table; not the fridge)
SERVE_SIM = 0.7  # the serving place's words ("kitchen table" for the DiningTable), as CopyProgress.PLACE_SCORE
TABLE = re.compile(r"\btables?\b", re.IGNORECASE)  # "table": the room's one kind of table ("the table pls")
# a turn that changes where the meal goes: "wait no, the counter", "put it on the kitchen island instead"
MOVED_AGAIN = re.compile(r"\b(?:wait|actually|instead|rather|second\s+thought|change\s+of\s+plan|scratch|never\s*mind)\b",
                         re.IGNORECASE)


def product_ids(example: Any) -> list[str]:
    """What a demonstration made, as object ids of its room: the objects of classes its program names
    that can be picked up, not pieces or knives, that it acted on and that ended holding something its
    program put there (the plate of toast) or with a goal attribute it changed (the mug filled with
    coffee), not inside another such object."""
    start = example.initial_state
    end = end_state(start, example.observed_changes)
    placements = program_placements(example_program(example))
    holding = holders(end, placements)
    made = {c["object"] for c in example.observed_changes if c["attribute"] in GOAL_ATTRIBUTES}
    named = program_classes(example_program(example))  # not a mug the faucet filled beside the plate

    def product(oid: str) -> bool:
        kind = OBJECT_TYPES.get(class_of(oid))
        parent = OBJECT_TYPES.get(class_of(end[oid].get("parent") or "_"))
        return (kind is not None and kind.pickupable and kind.kind != "sliced" and class_of(oid) not in KNIVES
                and class_of(oid) in named and (oid in holding or oid in made)
                and not (parent is not None and parent.pickupable))

    return sorted(o for o in acted_on(start, end) if o in end and product(o))


def products(example: Any, mapping: Mapping[str, str]) -> list[str]:
    """The classes of what a part's demonstration made (:func:`product_ids`), renamed by ``mapping``."""
    return sorted({renamed(class_of(o), mapping) for o in product_ids(example)})


@dataclass
class Part:
    """One item of the request and the demonstration copied for it.

    Attributes:
        item: the request's words for it ("a plate of toast").
        example: the demonstration.
        mapping: its class renaming for the item.
        program: its copy, renamed and fitted to the room.
    """

    item: str
    example: Any
    mapping: dict[str, str]
    program: str

    @cached_property
    def products(self) -> list[str]:
        """What it makes (:func:`products`), its classes renamed as its copy's."""
        return products(self.example, self.mapping)


@dataclass
class ComposedDemo:
    """The parts of a request as one copy (:func:`compose`); it stands where a retrieved example does."""

    parts: list[Part]
    serving: str
    served: list[str]
    program: str
    task_type: str = "composed"
    example_id: str = ""

    @property
    def examples(self) -> list[Any]:
        """The parts' demonstrations (the prompt a model would have had shows them)."""
        return [p.example for p in self.parts]

    def checks(self, places: Collection[str] = ()) -> list[Check]:
        """The parts' end-state checks, without where their products ended and without what one part's
        demonstration did to another part's product (the toast demonstration's mug, filled with water
        at the sink, is not the coffee), and each product on the serving place (every one the episode
        acted on)."""
        made = [c for p in self.parts for c in p.products]
        out = [c for p in self.parts for c in demo_checks(p.example, p.mapping, places)
               if not (self.serving and c.on and c.cls in self.served)
               and (c.cls in p.products or c.cls not in made)]
        out += [Check(cls, (), self.serving) for cls in self.served if self.serving]
        return list(dict.fromkeys(out))


def demonstrations(examples: Sequence[Any]) -> list[Any]:
    """``examples`` with a composed copy's parts' demonstrations in its place (what a prompt shows)."""
    shown = [d for ex in examples for d in (ex.examples if isinstance(ex, ComposedDemo) else [ex])]
    return list({d.example_id: d for d in shown}.values())


def _suffixed(program: str, suffix: str) -> str:
    """``program`` with every variable it binds given ``suffix``, where bound and where read (not an
    attribute, ``mug.place``, nor a keyword, ``object_instance=``); the rest of its text as it was (the
    grounding reads ``object_instance="..."`` as written)."""
    program = program.replace("\r\n", "\n").replace("\r", "\n")  # the lines as the parser counts them
    tree = ast.parse(program)
    bound = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    lines = [line.encode() for line in program.split("\n")]
    ends = sorted(((n.end_lineno, n.end_col_offset) for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id in bound),
                  reverse=True)  # right to left: the earlier offsets (bytes) stay where they are
    for row, col in ends:
        lines[row - 1] = lines[row - 1][:col] + suffix.encode() + lines[row - 1][col:]
    return "\n".join(line.decode() for line in lines)


def _product_name(program: str, cls: str) -> str | None:
    """The variable of ``program`` that holds its product of class ``cls``: the one things are placed
    on most, else the last declared."""
    tree = ast.parse(program)
    declared = [n for stmt in tree.body if declared_class(stmt) == cls for n in sorted(bound_names(stmt))]
    if not declared:
        return None
    targets = [a.id for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
               and node.func.attr in ("place", "pickup_and_place") for a in node.args[:1] if isinstance(a, ast.Name)]
    return max(reversed(declared), key=targets.count)


def compose(parts: Sequence[Part], serving: str) -> ComposedDemo | None:
    """The parts' copies as one program, their products moved onto ``serving`` (a class; "" for none);
    None without parts or when a copy cannot be read. A part's dish of a class an earlier part uses loses its
    instance id (each copy was grounded alone: the toast's plate and the apple's were both ``Plate_1``)."""
    lines: list[str] = []
    served: list[str] = []
    moves: list[str] = []
    cut: set[str] = set()  # the wholes the parts so far slice
    dishes: set[str] = set()  # the classes of the parts' dishes so far
    try:
        for i, part in enumerate(parts):
            program = unpin(bind_object_names(part.program), dishes)  # "plate" read unbound: bound first
            dishes |= {c for c in program_classes(program) if is_dish(c)}
            if cut:  # by now only pieces of those are left
                program = drop_sliced_moves(program, {SLICE_PRODUCTS[c][0] for c in cut})[0]
            cut |= {c for method, c, _ in object_calls(program, interaction_class)
                    if method == "slice" and c in SLICE_PRODUCTS}
            program = _suffixed(program, f"_part{i}")
            lines.append(program)
            for cls in part.products:
                name = _product_name(program, cls) if serving else None
                if name:
                    moves.append(f"{name}.pickup_and_place(serving_place)")
                    served.append(cls)
    except SyntaxError:
        return None
    if not any(line.strip() for line in lines):
        return None
    if moves:
        lines += [f'serving_place = InteractionObject("{serving}")', *moves]
    program = "\n".join(lines) + "\n"
    digest = hashlib.sha256(program.encode()).hexdigest()[:16]
    return ComposedDemo(list(parts), serving if moves else "", list(dict.fromkeys(served)), program,
                        example_id=f"composed-{digest}")


def ahead(demo: ComposedDemo | None, sets: list[list[Any]]) -> list[list[Any]]:
    """The example sets with ``demo`` first (none: ``sets``). A one-part ``demo`` stands for its demonstration:
    the set that demonstration heads is left out (its copy for the whole dialogue's words would be tried again)."""
    if demo is None:
        return sets
    alone = {p.example.example_id for p in demo.parts} if len(demo.parts) == 1 else set()
    return [[demo], *(s for s in sets if not (s and s[0].example_id in alone))]


def most_of(votes: Iterable[tuple[str, bool]]) -> set[str]:
    """The task types most of whose ``(task type, passed)`` votes passed."""
    tally: dict[str, list[bool]] = {}
    for task_type, passed in votes:
        tally.setdefault(task_type, []).append(passed)
    return {t for t, v in tally.items() if 2 * sum(v) > len(v)}


def item_task(task: Task, item: str) -> Task:
    """``task`` as a request of ``item`` alone: what a part's copy is re-grounded and fitted against."""
    return replace(task, instruction=item, dialogue=[("Commander", item)])


def serving_place(clauses: Sequence[str], room: Collection[str], embedder: Any, dialogue: Sequence[Any] = ()) -> str:
    """The receptacle class the serving ``clauses`` name best ("all on the kitchen table": the
    DiningTable), of the places in the ``room`` things are put on; "" when none scores :data:`SERVE_SIM`. A
    Commander's turn that changes where the meal goes (:data:`MOVED_AGAIN`: "wait no, the counter") names a place
    too, one of the tables. Where they name different places, the one the Commander's requests name last ("leave
    them on the island" ... "actually bring everything over to the dining table"). Where they name none (there are
    none, or a reader's "serve: on the plate"), the table (:data:`TABLES`) the Commander's requests in ``dialogue``
    name best: "coffee and toast. Dining table.", "kitchen counter is fine". A Commander's requests are told
    without hints of where things are, nor their answers to "where is the potato?"
    (:func:`~icalkit.agents.request_rules.asked_turns`: "next to the sink i think" names no place to serve on).
    "table" alone is the room's one kind of table (:data:`TABLE`)."""
    places = sorted(c for c in room if is_place(c))
    tables = [c for c in places if TABLES in OBJECT_TYPES[c].classes]
    said = [t for t in asked_turns(dialogue) if t.strip()]
    told = {}  # each clause's best place, and its similarity
    for texts, among in [*(([c], places) for c in clauses), *(([t], tables) for t in said if MOVED_AGAIN.search(t))]:
        best, sim = _best_place(texts, among, embedder) if among else ("", 0.0)
        if sim >= SERVE_SIM:
            told[best] = max(sim, told.get(best, 0.0))
    for text in reversed(said if len(told) > 1 else []):  # the place the Commander named last
        best, sim = _best_place([text], sorted(told), embedder)
        if sim >= SERVE_SIM:
            return best
    if told:
        return max(told, key=lambda c: (told[c], c))
    best, sim = _best_place(said, tables, embedder) if said and tables else ("", 0.0)
    return best if sim >= SERVE_SIM else ""


def _best_place(texts: Sequence[str], places: Sequence[str], embedder: Any) -> tuple[str, float]:
    """The place ``texts`` mention best (:func:`~icalkit.agents.mention_grounding.mention_scores`), and how well;
    a text's "table" scores :data:`SERVE_SIM` for the one kind of table among ``places`` (:data:`TABLE`)."""
    scores = {c: s[1] for c, s in mention_scores(embedder, list(texts), places).items()}
    kinds = [c for c in places if c.endswith("Table")]
    if len(kinds) == 1 and any(TABLE.search(t) for t in texts):
        scores[kinds[0]] = max(scores[kinds[0]], SERVE_SIM)
    best = max(places, key=lambda c: (scores[c], c))
    return best, scores[best]


class Composer:
    """The memory's composite task types (read once) and the parts of a request.

    An item is matched against each stored demonstration's requests one by one (the Commander's turns,
    hints cut off), under the memory's text embedder: "a mug of coffee" against "make me a mug of
    coffee", not against the greetings and hints a whole dialogue also holds.

    Args:
        memory: the agent's example memory (:class:`~icalkit.memory.example_memory.ExampleMemory`).
        transfer: example id -> transfer rate, for choosing among a part's hits (or None).
        room_fit: how many hits per item are ordered by their fit to the room.
        dishes: a request retrieved as one of :meth:`dish_types` is read and composed too
            (``planner.compose_dishes``: :meth:`parts`).
        single: with ``dishes``, a request read as one dish of the retrieved type is that dish's part
            (``planner.single_dish``).
    """

    def __init__(self, memory: Any, transfer: Mapping[str, float] | None = None, room_fit: int = 15,
                 dishes: bool = False, single: bool = False) -> None:
        self.memory, self.transfer, self.room_fit, self.dishes = memory, transfer, max(room_fit, 1), dishes
        self.single = single
        self.examples: list[Any] = []
        self._owner = np.zeros(0, int)
        self._vectors = np.zeros((0, 0), np.float32)
        self._texts: list[str] = []
        self._foods: list[str] = []  # each example's food, where its type is a recipe over foods
        self._owned: set[str] = set()  # the foods of a type of their own (bread: the toast's)
        self._type_foods: dict[str, set[str]] = {}  # a type -> the foods its demonstrations work
        self._as_food: dict[str, np.ndarray] = {}  # a food -> the requests' vectors, read as about it
        self._composite: set[str] | None = None
        self._dishes: set[str] = set()
        self._ingredients: dict[str, set[str]] = {}  # a type -> the other types answering its requests' items

    def _read(self) -> None:
        """Embed every stored demonstration's requests, once."""
        self.examples = list(self.memory)
        texts, owner = [], []
        for i, ex in enumerate(self.examples):
            said = [t for s, t in dialogue_turns(ex.dialogue or [ex.instruction]) if s == "Commander"]
            for text in asked(said):
                if text.strip():
                    texts.append(text)
                    owner.append(i)
        self._owner, self._texts = np.asarray(owner, int), texts
        self._foods, self._owned = recipe_foods(self.examples)
        self._type_foods = type_foods(self.examples)
        self._vectors = self.memory.text_embedder.embed_text(texts) if texts else np.zeros((0, 0), np.float32)

    def _vectors_about(self, food: str) -> np.ndarray:
        """The requests' vectors, those of a recipe over foods read as about ``food`` (:func:`swapped_texts`), once; as
        they are for no food or one of a type of its own."""
        if not food or food in self._owned:
            return self._vectors
        if food not in self._as_food:
            swapped = swapped_texts(self._texts, [self._foods[i] for i in self._owner.tolist()], food)
            vectors = self._vectors.copy()
            if swapped:
                vectors[list(swapped)] = self.memory.text_embedder.embed_text(list(swapped.values()))
            self._as_food[food] = vectors
        return self._as_food[food]

    def _best(self, item: str, types: Collection[str], exclude: Collection[str] = ()) -> tuple[float, list[Any]]:
        """The similarity of ``item`` to its best demonstration among ``types`` (not of a task in
        ``exclude``), and up to ``room_fit`` of them, best first. A described item ("some cooked potato:
        2 slices, cooked, on a plate") ranks them by the mean of its dish's and its description's
        similarities, each to the demonstration's request that answers it best (a demonstration answers
        both); its similarity is the better of that and its dish's alone, so a vague answer ("a black
        one") drops no dish. Where the dish names one food, a recipe over foods is read as about it
        (:mod:`~icalkit.agents.food_swap`: "an apple slice" against slicing demonstrations of a tomato)."""
        best: dict[int, np.ndarray] = {}
        if len(self._owner):
            texts = plain_names(item).split(DESCRIBED, 1)  # the dish ("a cup of joe": of coffee), and all that describes it
            vectors = self._vectors_about(named_food(texts[0]))
            sims = vectors @ self.memory.text_embedder.embed_text(texts).T  # requests x texts
            for i, row in zip(self._owner.tolist(), sims, strict=True):
                ex = self.examples[i]
                if ex.task_type in types and ex.task_id not in exclude:
                    best[i] = np.maximum(best.get(i, -1.0), row)
        score = {i: round(float(v.mean()), 4) for i, v in best.items()}
        ranked = sorted(score, key=lambda i: (-score[i], i))[:self.room_fit]
        dish = max((round(float(v[0]), 4) for v in best.values()), default=0.0)
        return (max(score[ranked[0]], dish) if ranked else 0.0), [self.examples[i] for i in ranked]

    def _folded(self, chosen: list[tuple[float, str, Any]]) -> list[tuple[float, str, Any]]:
        """``chosen`` parts with a part that names only foods of another's dish, of a type that is one of that dish's
        ingredients, folded into it as its description ("a small salad", "one lettuce slice", "one tomato slice on a
        plate": "a small salad: one lettuce slice, one tomato slice on a plate"); not "an apple slice" beside a
        sandwich, nor a toast, which names no food."""
        into: dict[int, list[int]] = {}  # a host part -> the parts folded into it
        for k, (_, item, example) in enumerate(chosen):
            named = named_foods(item.split(DESCRIBED, 1)[0])
            host = next((j for j, (_, _, dish) in enumerate(chosen) if j != k and j not in into.get(k, ()) and named
                         and example.task_type in self._ingredients.get(dish.task_type, set())
                         and named <= self._type_foods.get(dish.task_type, set())), None)
            if host is not None:
                into.setdefault(host, []).append(k)
        gone = {k for folded in into.values() for k in folded}
        return [(sim, item + (DESCRIBED + ", ".join(chosen[f][1] for f in into[k]) if k in into else ""), example)
                for k, (sim, item, example) in enumerate(chosen) if k not in gone]

    def composite_types(self) -> set[str]:
        """The task types most of whose demonstrations list two or more items, each answered at
        :data:`PART_SIM` by another type's demonstration, of two or more types in all, and made two or
        more things (:func:`product_ids`: a mug of coffee and a plate of toast; a salad's slices of lettuce
        and tomato make one plate). Read once, with :meth:`dish_types` and each other type's ingredients:
        the other non-composite types whose demonstrations answer its requests' items at :data:`PART_SIM`
        (a salad's "a slice of tomato": N Slices Of X In Y)."""
        if self._composite is None:
            self._read()
            types = {e.task_type for e in self.examples}
            made = {ex.example_id: product_ids(ex) for ex in self.examples}

            def composed(ex: Any) -> bool:
                items = request_items(ex.dialogue or [ex.instruction])[0]
                found = [self._best(item, types - {ex.task_type}) for item in items]
                return (len(items) >= 2 and all(sim >= PART_SIM for sim, _ in found)
                        and len({hits[0].task_type for _, hits in found}) >= 2 and len(made[ex.example_id]) >= 2)

            self._composite = most_of((ex.task_type, composed(ex)) for ex in self.examples)
            simple = types - self._composite
            for ex in (e for e in self.examples if e.task_type in simple):  # a salad's slices: the slicing types'
                for item in request_items(ex.dialogue or [ex.instruction])[0]:
                    sim, hits = self._best(item, simple - {ex.task_type})
                    if sim >= PART_SIM and hits:
                        self._ingredients.setdefault(ex.task_type, set()).add(hits[0].task_type)
            served = {class_of(o) for ex in self.examples if ex.task_type in self._composite for o in made[ex.example_id]}
            self._dishes = most_of((ex.task_type, bool(served & {class_of(o) for o in made[ex.example_id]}))
                                   for ex in self.examples) - self._composite
        return self._composite

    def dish_types(self) -> set[str]:
        """The other types most of whose demonstrations made a thing of a class the composite types'
        demonstrations made (:func:`product_ids`: a Mug, a Plate for a breakfast; so Coffee, Plate Of Toast,
        Salad, not Water Plant): a request retrieved as one may ask for more dishes (``planner.compose_dishes``)."""
        self.composite_types()
        return self._dishes

    def reads(self, top_type: str) -> bool:
        """Whether a request retrieved as ``top_type`` is read for its dishes: a composite type, or with
        ``dishes`` one of :meth:`dish_types`."""
        return top_type in self.composite_types() or (self.dishes and top_type in self.dish_types())

    def parts(self, dialogue: Sequence[Any], top_type: str, room: set[str], task_id: str,
              reading: tuple[list[str], list[str]] | None = None) -> tuple[list[tuple[str, Any]], list[str]]:
        """``(item, demonstration)`` for each item of the request that one answers at :data:`ITEM_SIM`
        (of the types that are not composite; the room's best fit among its hits), and the serving
        clauses. Two items whose demonstrations are of one type and that name one dish (:func:`same_dish`:
        "a toast", then "a slice of toast on a plate") are one part, the better-answered item's.
        ``reading``: the items and serving clauses a model read (``planner.request_reader``; where it read
        none, :func:`request_items`' clauses; an item of it that no demonstration answers gives way to the rules'
        item of the same dish, :func:`same_dish`); None: :func:`request_items`'.

        No parts when ``top_type``, the retrieved type, is not composite; with ``dishes`` a
        :meth:`dish_types` one has parts too when one of them is of ``top_type`` and another of a type
        that answers none of its demonstrations' items ("a coffee and a plate of toast" retrieved as a
        Coffee; not a salad's "a slice of lettuce, one of tomato and a cooked slice of potato", retrieved
        as a Salad, whose demonstrations list slices the slicing types' answer). When none is of
        ``top_type``, one of a type that has no ingredients and is no type's ingredient stands for it ("coffee
        and toast … no bread, an apple slice instead of the toast", retrieved as a Plate Of Toast: a coffee and
        an apple slice; not a toast and a slice of tomato, which may be a sandwich's). With ``single``, one dish
        of ``top_type`` alone is a part too: copied for its own words, not the whole dialogue's ("three apple
        slices on a plate … actually two, in a bowl": two in a bowl), as is one dish of another type where the
        Commander cancelled the one of ``top_type`` ("a salad" … "no salad, a sandwich"). A dish the Commander
        cancelled and did not ask for again is no part (:func:`~icalkit.agents.request_reading.cancelled`), nor, in a
        meal, a dish's fillings listed beside it (:meth:`_folded`)."""
        if not self.reads(top_type):
            return [], []
        composite = self.composite_types()
        rules = request_items(dialogue)
        # a reading keeps the rules' serving clauses too: "serve: none" from a model that missed "…, all on the
        # table!", or one that read "on the counter" before "no wait, the table"
        items, serving = (reading[0], [*reading[1], *rules[1]]) if reading else rules
        gone = cancelled(dialogue)  # "toast and an apple slice ... actually forget the apple": no apple
        simple = {e.task_type for e in self.examples} - composite
        # "make me a salad" ... "no salad, i'd rather have a sandwich", retrieved as a Salad: the salad is no part
        replaced = any(hits[0].task_type == top_type for item in items if is_cancelled(item, gone)
                       for sim, hits in [self._best(item, simple, {task_id})] if sim >= ITEM_SIM and hits)
        items = [item for item in items if not is_cancelled(item, gone)]
        chosen: list[tuple[float, str, Any]] = []  # (similarity, item, its demonstration), in the order told
        for item in items:
            sim, hits = self._best(item, simple, {task_id})
            said = next((r for r in rules[0] if r != item and same_dish(item, r)), None) if reading else None
            if sim < ITEM_SIM and said:  # a model's "an apple": the rules' "an apple too, cut one slice of it"
                item = said
                sim, hits = self._best(item, simple, {task_id})
            if sim < ITEM_SIM or not hits:
                continue
            example = room_fit_order(hits, room, self.transfer)[0]
            told = next((i for i, (_, other, ex) in enumerate(chosen)
                         if ex.task_type == example.task_type and same_dish(item, other)), None)
            if told is None:
                chosen.append((sim, item, example))
            elif sim > chosen[told][0]:
                chosen[told] = (sim, item, example)
        chosen = self._folded(chosen) if top_type in composite else chosen
        types, ingredients = {example.task_type for _, _, example in chosen}, self._ingredients
        # the dish the others are weighed against: the retrieved one, or where it is not asked for (cancelled; the
        # nearest of others) one of a type with no ingredients that is no type's ingredient (a coffee; not a toast,
        # which may be a sandwich's, nor a salad, which "two slices of lettuce on a plate" may be read as)
        anchors = {top_type} if top_type in types else {
            t for t in types if t not in ingredients and not any(t in i for i in ingredients.values())}
        # "two apple slices, no, in a bowl"; "no salad, a sandwich", retrieved as the salad it cancels
        alone = self.single and len(chosen) == 1 and (types == {top_type} or replaced)
        if top_type not in composite and not alone and not any(types - {a} - ingredients.get(a, set()) for a in anchors):
            return [], []  # no dish besides the anchor that is none of its ingredients
        return [(item, example) for _, item, example in chosen], serving
