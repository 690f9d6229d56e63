"""Serve as many pieces as the dialogue asks (``planner.piece_counts``).

A demonstration of a sandwich put one slice of lettuce on the plate; the new dialogue asks for "two
slices of lettuce and a slice of tomato". The copy does everything else right and the task stays
unfinished, and nothing in the copied demonstration's end state says so. The numbers are in the
dialogue, next to the food: "two slices of tomato", "an apple slice", "three pieces of red potato",
"lettuce x2", "two lettuce and one tomato", for each food listed ("lettuce and tomato, one slice of
each"), for the food just named ("lettuce. two slices of it", "lettuce, 2 slices"), for the food the
Driver's question names ("How much lettuce?" - "two slices!"), or alone where one food is named ("slice the
potato ... put two slices in the bowl").
:func:`asked_pieces` reads them; :func:`serve_pieces` adds to the copy, after its last placement of a
piece of that food on the receptacle holding most of them (the plate), the placements of as many
further pieces as are missing (``InteractionObject("LettuceSliced", parent_object=lettuce)``: the
executor gives each variable a piece no other one holds). Only pieces the program does nothing to
but move, and puts in no appliance, pan or pot, are added (a raw slice, not a cooked one or a
toast), none is removed (a goal asks for at least that many), and a program that binds one of the
names involved twice is left as it is.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Iterable, Sequence

from icalkit.agents.context import is_interaction
from icalkit.agents.demo_end_state import interaction_class
from icalkit.agents.mention_grounding import asked_text
from icalkit.agents.review_guard import ONLY_MOVES, PLACES
from icalkit.envs.household.catalog import SLICE_PRODUCTS
from icalkit.envs.household.receptacles import APPLIANCES

COOKWARE = APPLIANCES | {"Pan", "Pot"}  # a piece put there is being cooked
NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
PIECES = {form: piece for whole, (piece, n) in SLICE_PRODUCTS.items() if n > 1  # "tomatoes" -> TomatoSliced
          for form in (whole.lower(), whole.lower() + "s", whole.lower() + "es")}
_COUNT = r"\b(a|an|one|two|three|four|five|six|[1-6])\s+(?:[a-z]+\s+)?"  # "two", "a cooked"
_CUT = r"(?:slices?|pieces?|bits?)"
_FOOD = r"(" + "|".join(sorted(PIECES, key=len, reverse=True)) + r")\b"
SLICE_OF = re.compile(_COUNT + _CUT + r"\s+of\s+(?:[a-z]+\s+){0,2}?" + _FOOD)  # "two slices of the red tomato"
FOOD_SLICE = re.compile(_COUNT + r"(?:[a-z]+\s+)??" + _FOOD + r"\s+" + _CUT + r"\b")  # "an apple slice"
# "put two slices in the bowl", not "into six slices" nor "two slices of each"
ALONE = re.compile(r"(?<!into )" + _COUNT + _CUT + r"\b(?!\s+(?:of\b|each\b))")
FOOD = re.compile(r"\b" + _FOOD)
# "lettuce x2", "lettuce 2x" (read first: "lettuce 2x tomato 1x"), "2x tomato"
TIMES = re.compile(r"\b" + _FOOD + r"\s*x\s*([1-6])\b|\b" + _FOOD + r"\s+([1-6])\s*x\b|\b([1-6])\s*x\s*" + _FOOD)
EACH = re.compile(_COUNT + _CUT + r"\s+(?:of\s+)?each\b")  # "lettuce, tomato and potato, one slice of each"
OF_IT = re.compile(_COUNT + _CUT + r"\s+of\s+(?:it|them|that|those)\b")  # "lettuce. two slices of it"
# "two lettuce and one tomato": a count and a food, no word for pieces (not "two slices", "an apple slice")
BARE = re.compile(r"\b(two|three|four|five|six|[2-6])\s+(?:[a-z]+\s+)??" + _FOOD + r"(?!\s+" + _CUT + r")")
NOT_ASKED = re.compile(r"\b(?:no|not|without|skip|except)\s+(?:the\s+|any\s+)?" + _FOOD)  # "no tomato"
SENTENCE = re.compile(r"[^.!?;]+")
# an answer that begins with a number: "two slices!", "yeah 2", "just one please" (not "a plate")
ANSWER = re.compile(r"\W*(?:(?:yes|yeah|yep|ok|okay|um|uh|hmm|just|only|make\s+it)\W+)*(one|two|three|four|five|six|[1-6])\b")


def dialogue_pieces(dialogue: Sequence[tuple[str, str]], instruction: str = "") -> dict[str, int]:
    """:func:`asked_pieces` of the Commander's turns (``instruction`` where it has none), each answer to a Driver's
    question read with it ("How much lettuce?" - "two slices!")."""
    texts, questions, asked = [], [], ""
    for speaker, text in dialogue:
        if speaker == "Commander":
            texts.append(text)
            questions.append(asked)
        asked = text if speaker == "Driver" and text.rstrip().endswith("?") else ""
    return asked_pieces(texts, questions) if texts else asked_pieces([instruction])


def asked_pieces(texts: Iterable[str], questions: Sequence[str] = ()) -> dict[str, int]:
    """Piece class -> the largest number of its pieces the ``texts`` ask for (the dialogue's words:
    "two slices of tomato", "an apple slice", "lettuce x2", "two lettuce" where it asks (not "there are two
    apples"); "one slice of each" for every food its sentence names before it, not one it says no to); a
    number without a food counts for the food just named (:func:`_just_named`) or the one food the Driver's
    question it answers names (``questions[i]``, "" for none: :func:`_answered`), else for the one food the
    texts name (none where they name several)."""
    texts = [t.lower() for t in texts]
    asked: dict[str, int] = {}
    foods = {PIECES[f] for t in texts for f in FOOD.findall(t)}
    for i, text in enumerate(texts):
        found = [(n, PIECES[f]) for pattern in (SLICE_OF, FOOD_SLICE) for n, f in pattern.findall(text)]
        found += [(n1 or n2 or n3, PIECES[f1 or f2 or f3]) for f1, n1, f2, n2, n3, f3 in TIMES.findall(text)]
        found += [(each.group(1), PIECES[f]) for sentence in SENTENCE.findall(text) for each in EACH.finditer(sentence)
                  for f in FOOD.findall(NOT_ASKED.sub("", sentence[:each.start()]))]
        found += [(n, PIECES[f]) for n, f in BARE.findall(asked_text(text))]  # not "there are two apples"
        found += _just_named(text, texts[:i])
        found += _answered(text, questions[i].lower()) if i < len(questions) else []
        found += [(n, next(iter(foods))) for n in ALONE.findall(text)] if len(foods) == 1 else []
        for number, piece in found:
            asked[piece] = max(asked.get(piece, 0), NUMBERS.get(number) or int(number))
    return asked


def _just_named(text: str, before: list[str]) -> list[tuple[str, str]]:
    """``(count, piece class)`` of the counts in ``text`` that name no food but follow one: "two slices of
    it" counts for the food named last before it (in ``text``, else in the texts ``before``), "2 slices"
    for the one food its sentence names before it ("lettuce, 2 slices"; none where it names two)."""
    out = []
    for m in OF_IT.finditer(text):
        named = FOOD.findall(" ".join([*before, text[:m.start()]]))
        out += [(m.group(1), PIECES[named[-1]])] if named else []
    for sentence in SENTENCE.findall(OF_IT.sub("", text)):
        for m in ALONE.finditer(sentence):
            if FOOD.search(m.group(0)):  # "3 lettuce slices" names its food
                continue
            named = {PIECES[f] for f in FOOD.findall(sentence[:m.start()])}
            out += [(m.group(1), named.pop())] if len(named) == 1 else []
    return out


def _answered(text: str, question: str) -> list[tuple[str, str]]:
    """``(count, piece class)`` of each sentence of ``text`` that begins with a number and names no food, when
    the ``question`` it answers names one food: "How much lettuce?" - "two slices!", "How many tomato slices?" -
    "3 please"."""
    named = {PIECES[f] for f in FOOD.findall(question)}
    if len(named) != 1:
        return []
    piece = named.pop()
    return [(m.group(1), piece) for sentence in SENTENCE.findall(text) if not FOOD.search(sentence)
            and (m := ANSWER.match(sentence))]


def serve_pieces(program: str, asked: dict[str, int]) -> tuple[str, dict[str, int]]:
    """``program`` with further raw pieces placed where it places most of a class's pieces, up to the
    number ``asked``; and the pieces added per class. A program that does not parse is returned as it
    is (the executor reports it)."""
    try:
        body = ast.parse(program).body
    except SyntaxError:
        return program, {}
    bound = Counter(n.id for n in ast.walk(ast.Module(body=body, type_ignores=[]))
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
    declared: dict[str, tuple[str, ast.Call]] = {}  # piece variable -> (class, its InteractionObject call)
    classes: dict[str, str] = {}  # every object variable -> its class
    placed: dict[str, tuple[str, int]] = {}  # piece variable -> (receptacle variable, statement index)
    worked: set[str] = set()  # piece variables something other than a move is done to (cooked, ...)
    for i, stmt in enumerate(body):
        if isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name) and is_interaction(stmt.value):
            classes[stmt.targets[0].id] = cls = interaction_class(stmt.value) or ""
            if cls in asked:
                declared[stmt.targets[0].id] = (cls, stmt.value)
        for node in ast.walk(stmt):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and isinstance(node.func.value, ast.Name) and node.func.value.id in declared):
                continue
            var, method, on = node.func.value.id, node.func.attr, node.args[0] if node.args else None
            if method in PLACES and isinstance(on, ast.Name):
                placed[var] = (on.id, i)
            if method not in ONLY_MOVES or (interaction_class(on) if is_interaction(on) else
                                            classes.get(getattr(on, "id", ""))) in COOKWARE:
                worked.add(var)
    lines = [ast.get_source_segment(program, s) or ast.unparse(s) for s in body]
    added: dict[str, int] = {}
    for cls, want in sorted(asked.items()):
        pieces = [v for v, (c, _) in declared.items() if c == cls and v in placed]
        if not pieces or any(v in worked for v in pieces):
            continue
        by_place: dict[str, list[str]] = {}
        for v in pieces:
            by_place.setdefault(placed[v][0], []).append(v)
        place, served = max(by_place.items(), key=lambda kv: (len(kv[1]), max(placed[v][1] for v in kv[1])))
        parent = next((kw.value for kw in declared[served[0]][1].keywords if kw.arg == "parent_object"), None)
        names = {place, *served} | ({n.id for n in ast.walk(parent) if isinstance(n, ast.Name)} if parent else set())
        if len(served) >= want or any(bound[n] > 1 for n in names):
            continue
        source = f", parent_object={ast.unparse(parent)}" if parent is not None else ""
        last = max(placed[v][1] for v in served)
        extra = []
        for n in range(want - len(served)):
            var = f"{served[0]}_more_{n}"
            extra += [f'{var} = InteractionObject("{cls}"{source})', f"{var}.pickup_and_place({place})"]
        lines[last] = "\n".join([lines[last], *extra])
        added[cls] = want - len(served)
    return ("\n".join(lines) + "\n", added) if added else (program, {})
