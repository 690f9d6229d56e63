"""The request reader's prompt and answer (``planner.request_reader``): a dialogue -> its dishes and where they go.

The planner asks its model :func:`reader_prompt` when the retrieved type is a composite one (or, with
``planner.compose_dishes``, one of the dishes a composite one is made of), and reads the
answer with :func:`parse_reading`; the training pairs (:mod:`icalkit.data_gen.request_pairs`) are built with
the same two functions. Model output is untrusted: :func:`parse_reading` refuses what is not in that form, and
:func:`grounded_reading` the items of a reading that names a food the Commander never asked for (the rules then
read the request's dishes).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from icalkit.agents.mention_grounding import OTHER_NAMES, TAKE_BACK, WORDS
from icalkit.agents.parsing import ParseError
from icalkit.agents.request_rules import (
    DESCRIBED,
    DISH_WORDS,
    SENTENCE,
    plain_names,
    request_items,
    same_word,
)
from icalkit.memory.keys import dialogue_turns

READ_REQUEST = "read_request"  # the prompt id the planner's calls are counted under
SYSTEM = ("You read a household request. List every dish the Commander finally asks for, one per line as "
          "'item: <count> <dish> <vessel if said>', then one line 'serve: <where everything goes>' "
          "or 'serve: none'.")
LINE = re.compile(r"^(item|serve)\s*:\s*(.+?)\s*$", re.IGNORECASE)
MAX_ITEMS, MAX_CHARS = 6, 120
# the words of the answer's own form (counts, measures, vessels, "cooked"): every other word of an item must
# be one the Commander said
FORM_WORDS = frozenset("a an one two three some of and on in with mug cup plate bowl pan pot slice slices "
                       "cooked".split())
REFUSALS = frozenset("no nah nope not never don dont without skip".split())  # "don" of "don't"
MADE_OF = {"sandwich": {"toast", "bread", "lettuce", "tomato"}, "salad": {"lettuce", "tomato", "potato"}}
SAME_FOOD = {"toast": "bread"}  # a dish word that names another's food: toast is bread
COOKED = re.compile(r"\b(?:cook|cooked|fried|fry|roast|roasted|grilled|baked)\b", re.IGNORECASE)
RAW = re.compile(r"\b(?:raw|uncooked|not\s+cooked|don'?t\s+cook|no\s+cooking)\b", re.IGNORECASE)
NOT_COOKED = frozenset({"coffee", "bread", "salad", "sandwich"})  # foods the reader's "cooked" never qualifies
PIECE = re.compile(r"\b(slices?|pieces?)\b")
# a dish the Commander cancelled: "no sandwich", "forget the salad", "scratch the coffee", "don't do the potatoes",
# "instead of plain toast", "changed my mind on the apple", "leave the potato out", "i'm off bread"; not "don't forget
# the coffee", "hold on", "don't burn the toast", "drop the potato in"
CANCELLED = re.compile(r"\b(?:" + TAKE_BACK + r"|(?<!nt\s)(?<!n't\s)(?<!not\s)hold|no|not|off"
                       r"|drop(?!\s+(?:the\s+|a\s+|an\s+)?[a-z]+\s+(?:in|into|on|onto)\b)"
                       r"|without|minus|instead\s+of|changed?\s+my\s+mind\s+(?:on|about)"
                       r"|(?:don'?t|do\s+not)\s+(?:want|need|make|do|bother\s+with|bring|get)"
                       r"|leave(?=\s+(?:the\s+)?[a-z]+\s+out\b))\s+(?:(?:the|any|a|an|my|that|more|plain|extra)\s+)?([a-z]+)",
                       re.IGNORECASE)
NOT_FOOD = frozenset({"toaster", "toasted", "toasting"})  # words that begin like a food's and name none: "no toasting"


def reader_prompt(dialogue: Sequence[Any]) -> list[dict[str, str]]:
    """The request-reading prompt of a dialogue (task turns or a stored example's), at training and deployment."""
    lines = [f"{speaker}: {text}" for speaker, text in dialogue_turns(dialogue)]
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Dialogue:\n" + "\n".join(lines)}]


def reading_text(items: Sequence[str], serving: str) -> str:
    """The answer :func:`parse_reading` reads: one ``item:`` line per dish, then ``serve:``."""
    return "\n".join([*(f"item: {i}" for i in items), f"serve: {serving or 'none'}"])


def parse_reading(text: str) -> tuple[list[str], list[str]]:
    """The items and serving clause of a model's reading (:func:`reading_text`).

    Raises:
        ParseError: no item line, a line of another form, too many or too long items.
    """
    items, serving = [], []
    for line in (raw.strip() for raw in text.strip().splitlines()):
        found = LINE.match(line)
        if not line:
            continue
        if found is None:
            raise ParseError(f"line {line[:80]!r} is neither 'item: ...' nor 'serve: ...'")
        kind, value = found[1].lower(), found[2]
        if len(value) > MAX_CHARS:
            raise ParseError(f"{kind} {value[:40]!r}... is longer than {MAX_CHARS} characters")
        if kind == "item":
            items.append(value.lower())
        elif value.lower() != "none":
            serving.append(value)
    if not items:
        raise ParseError("no 'item: ...' line")
    if len(items) > MAX_ITEMS:
        raise ParseError(f"{len(items)} items; at most {MAX_ITEMS}")
    return list(dict.fromkeys(items)), serving


def asked_words(dialogue: Sequence[Any]) -> set[str]:
    """The words the Commander said, and those of each question of the Driver's that the Commander's next turn
    does not refuse (:data:`REFUSALS` among its first three words): "Would you like coffee?" - "yes, a big mug";
    "salad = lettuce + tomato?" - "1 slice each on a plate"; not "toast too?" - "no thanks". A dish's other name
    says the dish's own too ("a cup of joe": coffee; :func:`~icalkit.agents.request_rules.plain_names`)."""
    turns = dialogue_turns(dialogue)
    texts = [text for speaker, text in turns if speaker == "Commander"]
    for i, (speaker, text) in enumerate(turns):
        answer = next((t for s, t in turns[i + 1:] if s == "Commander"), None)
        if (speaker == "Driver" and text.rstrip().endswith("?") and answer is not None
                and not REFUSALS & set(WORDS.findall(answer.lower())[:3])):
            texts.append(text)
    words = set(WORDS.findall(" ".join(texts).lower()))
    return words | {OTHER_NAMES[w] for w in words & OTHER_NAMES.keys()}


def foods(item: str) -> set[str]:
    """The foods an item names (:data:`DISH_WORDS`, toast as bread, joe as coffee), less those a dish of it is made of
    (:data:`MADE_OF`: "a salad of lettuce and tomato" names the salad): two for a reader's merged dishes ("an
    apple slice of toast")."""
    named = {SAME_FOOD.get(d, d) for w in WORDS.findall(plain_names(item)) for d in DISH_WORDS if same_word(w, {d})}
    made_of = {SAME_FOOD.get(f, f) for dish in named for f in MADE_OF.get(dish, ())}  # a sandwich's toast is bread
    return named - made_of


def cancelled(dialogue: Sequence[Any]) -> set[str]:
    """The foods (:func:`foods`) the Commander cancelled and did not ask for again: those whose last mention in a
    Commander's turn is one :data:`CANCELLED` names. "toast and an apple slice ... actually forget the apple. i'd
    rather have coffee with the toast": the apple; "no coffee ... hmm, ok, a small coffee after all": none."""
    last: dict[str, bool] = {}
    for speaker, text in dialogue_turns(dialogue):
        if speaker != "Commander":
            continue
        text = text.lower()
        cut = {found.start(1) for found in CANCELLED.finditer(text)}
        for word in WORDS.finditer(text):
            for food in () if word[0] in NOT_FOOD else foods(word[0]):
                last[food] = word.start() in cut
    return {food for food, gone in last.items() if gone}


def is_cancelled(item: str, gone: set[str]) -> bool:
    """Whether every food ``item`` names (its description aside: :data:`DESCRIBED`) is one of ``gone``
    (:func:`cancelled`)."""
    named = foods(item.split(DESCRIBED, 1)[0])
    return bool(named) and named <= gone


def cooked(item: str, dialogue: Sequence[Any]) -> str:
    """``item`` with "cooked" where it names one food to cook (not coffee, bread, a salad or a sandwich), says
    nothing of cooking, and a sentence of the Commander's that names that food asks for it cooked (:data:`COOKED`,
    not :data:`RAW`): a reader's "two slices of potato on a plate" for "some potato, sliced and cooked"."""
    named = foods(item)
    if len(named) != 1 or named & NOT_COOKED or COOKED.search(item):
        return item
    food = next(iter(named))
    sentences = [s for speaker, text in dialogue_turns(dialogue) if speaker == "Commander"
                 for s in SENTENCE.split(text.lower())]
    if not any(COOKED.search(s) and not RAW.search(s) and any(same_word(w, {food}) for w in WORDS.findall(s))
               for s in sentences):
        return item
    if PIECE.search(item):  # "two cooked slices of potato"
        return PIECE.sub(r"cooked \1", item, count=1)
    word = next(w for w in WORDS.findall(item) if same_word(w, {food}))  # "a cooked potato"
    return re.sub(rf"\b{word}\b", f"cooked {word}", item, count=1)


def grounded_reading(reading: tuple[list[str], list[str]] | None, dialogue: Sequence[Any],
                     fill: bool = False) -> tuple[list[str], list[str]] | None:
    """``reading`` if every word of its items but :data:`FORM_WORDS` is one of :func:`asked_words` (or another
    form of one: "toast" for "toasted", "potatoes" for "potato"; or the word a misspelling means: "coffee" for
    "cofee": :func:`~icalkit.agents.request_rules.same_word`). Else the rules' items
    (:func:`~icalkit.agents.request_rules.request_items`) with the reading's serving clauses, or None (the rules
    read it all) when it has none. With ``fill`` (``planner.fill_missed_dishes``) a kept reading gets the rules'
    items that name a dish or food (:data:`DISH_WORDS`) and none the reading names, nor a dish of the reading is
    made of (:data:`MADE_OF`: a sandwich's lettuce), nor the Commander cancelled (:func:`cancelled`: "no
    sandwich"; the rules keep the first list of a changed mind): the apple slice a reader left out of "coffee, a
    plate of toast, and an apple slice on its own plate" (a dish more is one copy more; a breakfast's goal asks
    for what it lists, not for nothing else).

    A small reader invents a dish no turn names ("a slice of toast on a plate" beside a sandwich) or merges
    two ("an apple slice of toast"); no item of a reading with such a word is used. An item of form words alone
    ("one slice of plate") names nothing and is left out. Its serving place names no food, so it is kept.
    """
    if reading is None:
        return None
    reading = [i for i in reading[0] if set(WORDS.findall(i)) - FORM_WORDS], reading[1]  # not "one slice of plate"
    if not reading[0]:
        return (request_items(dialogue)[0], reading[1]) if reading[1] else None
    said = asked_words(dialogue)
    words = {w for item in reading[0] for w in WORDS.findall(item)}
    if not all(same_word(w, said) for w in words - FORM_WORDS):
        return (request_items(dialogue)[0], reading[1]) if reading[1] else None
    if not fill:
        return reading
    reading = [cooked(i, dialogue) for i in reading[0] if len(foods(i)) < 2], reading[1]  # not "an apple slice of toast"
    words = {w for item in reading[0] for w in WORDS.findall(item)}
    words |= {w for dish, foods in MADE_OF.items() if same_word(dish, words) for w in foods}  # a sandwich's lettuce
    gone = cancelled(dialogue)  # one cancelled is not missed
    dishes = {item: {w for w in WORDS.findall(plain_names(item.split(DESCRIBED, 1)[0])) if same_word(w, DISH_WORDS)}
              for item in request_items(dialogue)[0]}  # a described dish by its name: "a sandwich: toast, 1 tomato"
    missed = [item for item, named in dishes.items()
              if named and not any(same_word(w, words) for w in named) and not foods(item.split(DESCRIBED, 1)[0]) & gone]
    return [*reading[0], *missed], reading[1]
