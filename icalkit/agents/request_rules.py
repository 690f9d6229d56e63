"""The rules that read a request's dishes and where they go (``planner.compose_parts`` without a model).

:func:`request_items` reads the Commander's turns sentence by sentence: the dishes a request lists ("a mug
of coffee and a plate of toast"), a later sentence that describes one ("the sandwich: two toasted slices with
lettuce"), and the clauses that say where everything goes ("all on the kitchen table"). A model's reading
(:mod:`~icalkit.agents.request_reading`) takes their place where ``planner.request_reader`` is on; the
rules still read what it cannot.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from difflib import SequenceMatcher
from typing import Any

from icalkit.agents.mention_grounding import ASKS, CLAUSE, HINT, OTHER_NAMES
from icalkit.memory.keys import dialogue_turns

SENTENCE = re.compile(r"(?<=[.!?;])\s+")
COUNT = r"(?:a|an|one|two|three|four|five|some|\d+)\b"
NOT_A_DISH = r"(?!(?:sure|certain|it|them|that|this|breakfast|brunch|lunch|dinner|a\s+meal)\b)"
# a sentence's lead before the dishes it lists: "Make breakfast:", "Let's make breakfast -", "I want", "I'd rather
# have", "I should like", "I'll have", "can I get", "could you make me", "can u do" (not "can you make sure", "could
# you bring them")
LEAD = re.compile(r"^(?:(?!\b" + COUNT + r").)*?(?::|\s-\s|\bi\s+want\b|\bi'?d\s+(?:like|rather(?:\s+have)?)\b"
                  r"|\bi\s+(?:would|should)\s+(?:like|rather(?:\s+have)?)\b|\bi'?ll\s+(?:have|take)\b"
                  r"|\b(?:can|could|may)\s+i\s+(?:get|have)\b"
                  r"|\b(?:can|could|would|will)\s+(?:you|u|ya)\s+(?:please\s+|pls\s+)?"
                  r"(?:make|do|get|fix|prepare|bring)(?:\s+(?:me|us))?\s+(?!(?:me|us)\b)" + NOT_A_DISH + r")\s*",
                  re.IGNORECASE)
# an item: an article or a number, after at most a step's words ("then a plate of toast", "start with a
# mug of coffee", "please make me a sandwich", "both a mug of coffee", "swap the potato for a slice of apple"); a
# step that cooks ("then toast a slice of bread", "cook up two slices", kept whole); a dish a step in a sequence
# makes ("first make coffee": "coffee"; not "also make sure the plate is clean", "first make breakfast"); not "slice
# the vegetables with a knife"
STEP_WORDS = r"(?:please|first|then|next|now|also|finally|after\s+that|and|both)"
STEP = r"^(?:" + STEP_WORDS + r"\s+)*"
IN_SEQUENCE = r"^(?:please\s+)?(?:and\s+)?(?:first|then|next|now|also|finally|after\s+that)\s+(?:please\s+)?"
ITEM = re.compile(STEP + r"(?:(?:(?:start|begin|finish)\s+with\s+"
                  r"|(?:make|prepare|get|bring|serve|give)\s+(?:me\s+|us\s+)?|make\s+(?:it|that)\s+(?=an?\b)"
                  r"|swap\s+(?:out\s+)?(?:the\s+|my\s+)?[a-z]+\s+(?:for|with)\s+)?"
                  r"(?=" + COUNT + r")|(?=(?:toast|cook|brew|fry|boil|slice)(?:\s+up)?\s+" + COUNT + "))"
                  r"|" + IN_SEQUENCE + r"(?:make|prepare|brew|fix)\s+(?:me\s+|us\s+)?" + NOT_A_DISH + r"(?=\w)",
                  re.IGNORECASE)
# where everything goes: "all on the table", "everything on the counter", "both go on the table", "put them
# (or both) on the counter"; not "both coffee and toast", "toast with both butter and jam"
SERVE = re.compile(r"\b(?:all|everything)\b|\bboth\s+(?:go|goes|on|onto|in|at)\b|^(?:put|place|set|leave)\s+(?:them|both)\b",
                   re.IGNORECASE)
LEADING_STEPS = re.compile(r"^(?:" + STEP_WORDS + r"(?:\s+|$))*", re.IGNORECASE)  # "first" alone is no dish
PLACE = re.compile(r"^(?:on|onto|at)\s+(?:the|my)\b", re.IGNORECASE)  # "…, on the table": ends a list
MEAL = r"\b(?:breakfast|brunch|lunch|dinner|meal)\b"
NOT_LISTED = re.compile(  # no dish: the meal, a negation, a pronoun or a greeting
    MEAL + r"|\b(?:no|not|nope|nah|without|skip|except|don'?t|forget|cancel|nothing|anything|something|whatever)\b"
    r"|^(?:hi|hey|hello|ok|okay|so|well|yes|yeah|thanks|good\s+morning|morning|alright|all\s+right|great|cool|sure"
    r"|actually|wait|oh|ah|oops|sorry"
    r"|perfect|awesome|nice|right|hmm+|um+|uh+|good\s+(?:work|job)|well\s+done|thank)\b"
    r"|^(?:yep|yup|ya|yea|yah|exactly|correct|that'?s\s+(?:it|all|right|correct)|thats\s+(?:it|all))$", re.IGNORECASE)
# a sentence that carries the dishes ("them", "both", "it all", two things) or sets the meal somewhere: "then carry
# the coffee and the plate to the dining table", "set up my breakfast on the table", "i want the first meal of the
# day ready on the counter"; read only where no other clause says where everything goes
NOT_PLACE = r"(?:and|then|please|thanks?)\b"
WHERE_ON = r"(?:near|by|next|beside|left|right|behind|in|of|under|close)\b"  # "on the counter near the stove": the counter
TO_PLACE = (r"\s+(?:to|on|onto|at)\s+(?:the|my)\s+(?P<place>(?!" + NOT_PLACE + r")\w+"
            r"(?:\s+(?!" + NOT_PLACE + "|" + WHERE_ON + r")\w+){0,2})")
MOVED = re.compile(r"^(?:" + STEP_WORDS + r"\s+)*(?:carry|bring|take|move|put|place|set(?:\s+up)?|leave|serve)\s+"
                   r"(?P<what>.+?)" + TO_PLACE, re.IGNORECASE)
DISHES = re.compile(r"\b(?:them|both|all|everything|and)\b|" + MEAL, re.IGNORECASE)
MEAL_AT = re.compile(MEAL + r".*?" + TO_PLACE, re.IGNORECASE)
# between chunks: a list's conjunction ("and", "+", "&", "plus", "n": "coffee n toast") or another separator
SEPARATOR = re.compile(r"\s*((?:\band\b|\bplus\b|\bn\b|[+&])|[,:]|\s-\s)\s*", re.IGNORECASE)
CONJUNCTION = re.compile(r"and|plus|n|[+&]", re.IGNORECASE)
# a bracket after a dish that describes it: "a sandwich (lettuce tomato, toasted)", "small salad (lettuce, tomato)"
BRACKET = re.compile(r"(?<=\w)\s*\(([^()]*)\)")
HELD = re.compile(r"\x00(\d+)\x00")  # where a bracket's description was taken out of its item
# a later sentence that describes a dish already listed, not more dishes: the answer to the Driver's question
# about one ("what kind of sandwich?" -> "2 toasted bread slices with one lettuce and one tomato slice"), or a
# sentence that begins with the dish ("salad is one slice lettuce and one slice tomato", "the sandwich: ...")
DESCRIBE_ASKED = re.compile(r"\b(?:what|which)\s+(?:kind|sort|type|fillings?)\b|\bhow\s+(?:much|many)\b"
                            r"|\bwhat\s+(?:goes|should\s+go|do\s+you\s+want|would\s+you\s+like)\s+(?:in|on|inside)\b",
                            re.IGNORECASE)
# a Driver's question whose answer lists dishes ("What would you like?", "Anything to drink?"), not where they go,
# how many, which one or what to do
DISHES_ASKED = re.compile(r"^(?!.*\b(?:where|how|which|(?:should|shall|do|must|can)\s+(?:i|we)\s+do(?!\s+for)|doing|next|first"
                          r"|task)\b).*\b(?:what|anything|something)\b",  # not "What should I do?", "what next?" (a
                          re.IGNORECASE)  # step: "slice the tomato"); "what can I do for you?" asks for dishes
# a Driver's question of where a thing is ("where's the potato?", "any idea where the mugs are kept?"), whose answer
# ("next to the sink i think") says where it is, not where the dishes go ("where do they go?", "where should I put it?")
WHERE_IS = re.compile(r"\bwhere\b(?=.*(?:\b(?:is|are|find|kept|keep|located)\b|'s))(?!.*\b(?:go|goes|going|put|serve|served"
                      r"|bring|take|carry|leave|set|place|want|like|next|deliver|eat)\b)", re.IGNORECASE)
DESCRIBED = ": "  # between an item and a later sentence that describes it (no item holds ": ": SEPARATOR)
DESCRIBES = re.compile(r"^(?:(?:and|the|my|your)\s+)*(?!(?:it|this|that|these|those|they|there|which|what|both|all|everything)\b)"
                       r"(?P<dish>[a-z]+)(?:\s+(?:is|are|has|have|needs?|should|with)\b|\s*:)",
                       re.IGNORECASE)
# the tail of an item that names the dish it replaces: "potatoes instead of the apple", "a sandwich in place of toast"
REPLACES = re.compile(r"\s+(?:instead\s+of|in\s+place\s+of|rather\s+than)\b.*$", re.IGNORECASE)
# the tail of "a coffee with the toast": a dish listed before, and nothing after it ("… with the toast on a plate": kept)
WITH_THE = re.compile(r"\s+(?:with|beside|alongside)\s+the\s+(?P<dish>[a-z]+)(?:\s+(?:pls|please|too|thanks))?\s*$",
                      re.IGNORECASE)
FILLER = frozenset("a an the one two three four five some of on in with for my me please".split())
ASKING = frozenset("and or it them do you want should would like i use what which kind sort type how much many go goes "
                   "put inside".split())
SHORT = 5  # the words of a later sentence that may describe the item before ("cooked, 2 slices", "a bowl, a clean one")
TYPO = 0.85  # difflib's similarity of a word and its misspelling: "cofee" 0.91, "letuce" 0.92; "toast"/"roast" 0.8
VESSELS = frozenset("plate plates mug mugs cup cups bowl bowls glass".split())  # what a dish is served in
# the words that name a breakfast's dishes and their foods (their other names: mention_grounding.OTHER_NAMES)
DISH_WORDS = frozenset("coffee toast bread apple potato lettuce tomato salad sandwich".split())
OTHER_NAME = re.compile(r"\b(?:" + "|".join(OTHER_NAMES) + r")\b", re.IGNORECASE)


def asked(texts: Sequence[str]) -> list[str]:
    """Each text without its clauses that say where a thing is (:data:`~icalkit.agents.mention_grounding.HINT`:
    "a knife is in the sink", "you'll find a mug in the cabinet"; a clause that asks for a state stays)."""
    return ["".join(c for c in CLAUSE.findall(text) if ASKS.search(c) or not HINT.search(c)) for text in texts]


def asked_turns(dialogue: Sequence[Any]) -> list[str]:
    """The Commander's turns without their clauses of where things are (:func:`asked`), nor the first sentence of
    an answer to the Driver's question of where a thing is (:data:`WHERE_IS`: "where's the potato?" - "next to the
    sink i think. and hurry"): "and hurry". (:func:`~icalkit.agents.mention_grounding.requests`, for re-grounding,
    keeps every turn in its place and cuts a clause at its hint.)"""
    said, question = [], ""
    for speaker, text in dialogue_turns(dialogue):
        if speaker != "Commander":
            question = text
            continue
        if WHERE_IS.search(question):
            text = "".join(SENTENCE.split(text.strip(), maxsplit=1)[1:])
        said.append(asked([text])[0])
        question = ""
    return said


def request_items(dialogue: Sequence[Any]) -> tuple[list[str], list[str]]:
    """The items the Commander's requests list (each once), and the clauses that say where all of them go.

    Each Commander turn, without its clauses of where things are (:func:`asked`), is read sentence by
    sentence (:func:`sentence_items`). A sentence that describes a dish already listed adds to that item
    (:func:`described_item`: "a sandwich: 2 toasted bread slices with one lettuce and one tomato slice"), as does
    a later sentence of at most :data:`SHORT` words that names no dish to the item before (:func:`names_dish`:
    "potatoes. cooked, 2 slices"). Where no sentence's chunks say where everything goes, a sentence that carries
    the dishes or sets the meal somewhere does (:func:`moved_place`). Accepts task and stored-example dialogues."""
    items: list[str] = []
    serving: list[str] = []
    moved: list[str] = []
    question = ""  # the Driver's turn just before, which the first sentence of the Commander's next turn answers
    for speaker, text in dialogue_turns(dialogue):
        if speaker != "Commander":
            question = text
            continue
        for sentence in SENTENCE.split(asked([text])[0].strip()):
            sentence = sentence.strip(" .!?;")
            answers = question.rstrip().endswith("?") and bool(DISHES_ASKED.search(question))
            listed, told = sentence_items(sentence, led=answers)  # "Anything to drink?" - "coffee"
            if listed and (dish := described_item(sentence, question, items)) is not None:
                items[dish] += DESCRIBED + sentence
            elif listed and items and not told and len(sentence.split()) <= SHORT and not any(map(names_dish, listed)):
                items[-1] += DESCRIBED + sentence  # "potatoes instead of the apple. cooked, 2 slices"
            else:
                items += [without_listed(item, items) for item in listed]
            serving += told
            place = None if listed or told else moved_place(sentence)
            moved += [place] if place else []
            question = ""  # the answer is the turn's first sentence
    return list(dict.fromkeys(i.lower() for i in items)), serving or moved


def without_listed(item: str, items: Sequence[str]) -> str:
    """``item`` without its tail that names a dish listed before "with the" (:data:`WITH_THE`: "a coffee with the
    toast" after "one toast" is a coffee); as it is otherwise ("a sandwich with lettuce")."""
    found = WITH_THE.search(item)
    listed = {w for other in items for w in dish_words(other)}
    return item[:found.start()] if found and found.start() and same_word(found["dish"].lower(), listed) else item


def described_item(sentence: str, question: str, items: Sequence[str]) -> int | None:
    """The index of the listed item that ``sentence`` describes (:data:`DESCRIBES`: "salad is one slice
    lettuce and one slice tomato"), or whose dish the Driver's ``question`` just before asked about
    (:data:`DESCRIBE_ASKED`: "what kind of sandwich", "how much potato"): the item sharing the most of
    its words, a dish's before a vessel's (:data:`VESSELS`: "how much potato on the plate?" asks about the
    potato), the last of equals; None for another sentence."""
    if DESCRIBE_ASKED.search(question):
        named = dish_words(question) - ASKING
        if not named and items:
            return len(items) - 1  # "What should go in it?", "how many?": the dish just listed
    elif found := DESCRIBES.match(sentence):
        named = {found["dish"].lower()}
    else:
        return None
    shared = [(sum(same_word(w, named) for w in dish_words(item) - VESSELS), len(dish_words(item) & named & VESSELS), i)
              for i, item in enumerate(items)]  # "what goes in the sandwich?" asks about "a sandwitch pls"
    best = max(shared, default=(0, 0, -1))
    return best[2] if best[:2] != (0, 0) else None


def names_dish(item: str) -> bool:
    """Whether ``item`` names a dish or food (:data:`DISH_WORDS`; their other names and misspellings too): "2 slices"
    and "cooked" do not; "potatoes", "a hot cup of joe" do."""
    return any(same_word(w, DISH_WORDS) for w in dish_words(plain_names(item)))


def same_word(word: str, words: set[str]) -> bool:
    """Whether ``words`` holds ``word``, another form of it ("toast" for "toasted", "potatoes" for "potato") or a
    misspelling of it (:data:`TYPO`: "cofee", "sandwitch", "letuce")."""
    return word in words or (len(word) >= 4 and any(
        len(w) >= 4 and (w.startswith(word) or word.startswith(w) or misspelt(word, w)) for w in words))


def misspelt(word: str, meant: str) -> bool:
    """Whether ``word`` may be ``meant`` misspelt (:data:`TYPO`; both of five letters or more): "cofee" for "coffee"."""
    return min(len(word), len(meant)) >= 5 and SequenceMatcher(None, meant, word).ratio() >= TYPO


def plain_names(text: str) -> str:
    """``text`` with a dish's other names as the dish's own (:data:`~icalkit.agents.mention_grounding.OTHER_NAMES`)
    and a dish word's misspellings mended (:func:`misspelt`): "a cup of joe" -> "a cup of coffee", "a cofee" ->
    "a coffee"; not "toasted" nor "potatoes", another form of the word."""
    return re.sub(r"[a-z]+", _mended, OTHER_NAME.sub(lambda found: OTHER_NAMES[found[0].lower()], text),
                  flags=re.IGNORECASE)


def _mended(found: re.Match[str]) -> str:
    """The dish word a found word misspells (:func:`plain_names`), or the word."""
    word = found[0].lower()
    return next((d for d in sorted(DISH_WORDS) if not (word.startswith(d) or d.startswith(word)) and misspelt(word, d)),
                found[0])


def dish_words(text: str) -> set[str]:
    """The words of ``text`` less articles, counts and prepositions (:data:`FILLER`)."""
    return set(re.findall(r"[a-z]+", text.lower())) - FILLER


def sentence_items(sentence: str, led: bool = False) -> tuple[list[str], list[str]]:
    """A sentence's items and serving clauses, read after its lead ("Make breakfast:", "I want") as chunks
    between commas, colons, dashes and a list's conjunctions ("and", "+", "&", "plus", "n"). A bracket after a word
    describes the item it ends in (:data:`BRACKET`, :func:`described`), or says where everything goes.

    An item begins with a chunk that begins with an article or a number after at most a step's words
    (:data:`ITEM`: "then a plate of toast"), with a step that makes a dish ("first make coffee": "coffee")
    or one that cooks ("then toast a slice of bread", kept whole). The chunks before the first such item
    that a conjunction joins to it are dishes too ("coffee in a clean mug + an apple slice"), as is, after
    a lead, a chunk without an article while no item with one began ("I want coffee and toast"); not the
    meal, a negation or a greeting (:data:`NOT_LISTED`). A chunk with "all" or "everything", where "both"
    go, that puts "them", or a place that ends the list says where everything goes (:data:`SERVE`,
    :data:`PLACE`: "all on the kitchen table", "both go on the table", "leave them on the counter", "…, on
    the table"). Any other chunk joins the item before it ("a sandwich with lettuce" + "tomato"), or is
    the sentence's lead when no item began yet ("Breakfast time!")."""
    current: list[str] = []
    serving: list[str] = []
    held: list[str] = []  # the brackets' descriptions, each held out of its item while the chunks are read

    def hold(found: re.Match[str]) -> str:
        if SERVE.search(found[1]) or PLACE.match(found[1].strip()):
            return ", " + found[1]  # "coffee and toast (all on the table)": where they go
        held.append(found[1].strip())
        return f"\x00{len(held) - 1}\x00"

    listed, lead = LEAD.subn("", BRACKET.sub(hold, sentence), count=1)
    led = led or bool(lead) or foods_listed(listed)
    bare = False  # the item being read began without an article, after a lead ("I want coffee")
    before: list[str] = []  # dishes without an article before the first item, each joined by a conjunction
    parts = SEPARATOR.split(listed)
    for chunk, sep in zip(parts[::2], [*parts[1::2], ""], strict=True):
        chunk = chunk.strip(" .!?;")
        if not chunk:
            continue
        dish = "" if NOT_LISTED.search(chunk) else LEADING_STEPS.sub("", chunk)
        if step := ITEM.match(chunk):
            current += before if not current else []
            current.append(chunk[step.end():])
            bare = False
        elif SERVE.search(chunk) or (current and PLACE.match(chunk)):
            serving.append(chunk)
            dish = ""
        elif led and (bare or not current) and dish:
            current.append(dish)  # after a lead, a chunk without an article is a dish of its own
            bare = True
        elif current:
            current[-1] += " and " + chunk
        listing = CONJUNCTION.fullmatch(sep) or (sep == "," and len(dish.split()) <= 2)  # "coffee, a slice of toast…"
        before = [*before, dish] if dish and not current and listing else []
    return ([described(REPLACES.sub("", item), held) for item in current],
            [HELD.sub(lambda f: f" ({held[int(f[1])]})", c) for c in serving])


def described(item: str, held: Sequence[str]) -> str:
    """``item`` with the descriptions its brackets held (:func:`sentence_items`) after it (:data:`DESCRIBED`): "a
    sandwich (lettuce tomato, toasted)" -> "a sandwich: lettuce tomato, toasted"."""
    told = [held[int(k)] for k in HELD.findall(item)]
    plain = " ".join(HELD.sub(" ", item).split())
    return DESCRIBED.join([plain, ", ".join(told)]) if any(told) else plain


def foods_listed(text: str) -> bool:
    """Whether ``text`` is a list of foods alone ("Coffee, fried potatoes and toast"): two chunks or more, each of at
    most three words that name a dish or food (:data:`DISH_WORDS`), none with "the" (a step: "toast the bread") or a
    negation (:data:`NOT_LISTED`)."""
    chunks = [c.strip(" .!?;") for c in SEPARATOR.split(text)[::2] if c.strip(" .!?;")]
    return len(chunks) >= 2 and all(
        len(words := re.findall(r"[a-z']+", c.lower())) <= 3 and "the" not in words and not NOT_LISTED.search(c)
        and names_dish(c) for c in chunks)


def moved_place(sentence: str) -> str | None:
    """Where a sentence carries the dishes ("them", "both", "it all", two things) or sets the meal
    (:data:`MOVED`, :data:`MEAL_AT`): "then carry the coffee and the plate to the dining table" -> "on the
    dining table"; None for any other sentence ("put the knife on the counter")."""
    found = MOVED.search(sentence)
    if not (found and DISHES.search(found["what"])):
        found = MEAL_AT.search(sentence)
    return f"on the {found['place'].strip()}" if found else None


def same_dish(a: str, b: str) -> bool:
    """Whether two items name one dish, one's words (less articles, counts and prepositions) within the
    other's: "a toast" and "a slice of toast on a plate"; not "two cooked potato slices" and "an apple slice"."""
    words = [dish_words(x) for x in (a, b)]
    return bool(words[0] and words[1]) and (words[0] <= words[1] or words[1] <= words[0])
