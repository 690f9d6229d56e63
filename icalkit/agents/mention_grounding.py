"""Re-grounding a copied example by the classes the new task's dialogue mentions (no generative model).

A stored demonstration's task is known, so its parameters are too (``X = CreditCard``, ``Y =
CoffeeTable``); the new task's are not, but its dialogue names them ("gather the keys and put them
on the couch"). Each of the example's parameter classes its program uses is a slot; every object
class of the new room that could fill it (:func:`fits_slot`) is scored by how strongly the
dialogue mentions it — the best cosine, under the memory's sentence embedder, between the class
name in words ("key chain") and any 1–3-word span of an utterance, less ``decay`` per utterance
so that the request outranks later hints ("there's a basketball on the desk"); a span that
shares a word with a stronger (at equal strength, longer) mention of another class does not count
("toilet" in "toilet paper" is no mention of the Toilet, "coffee" in "coffee table" none of the
CoffeeMachine, "the table" only of the table class it names best) — and slots take
candidates best score first, one class per slot. A slot keeps its own class unless a candidate
outranks it whose best cosine (without the decay) is at least ``min_score``. The replacement then runs through
:func:`~icalkit.agents.grounding.replace_classes`, as the model's re-grounding answer does.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from typing import Any

import numpy as np

from icalkit.memory.keys import dialogue_turns

MIN_SCORE = 0.6  # chosen on valid_seen's 300 (task, example) pairs: 0.5 / 0.6 / 0.7
DECAY = 0.1  # per utterance (0.02, 0.05, 0.1 tie on valid_seen, 0.2 is worse)
WORDS = re.compile(r"[a-z]+")
NOT_PLURAL = frozenset({"has", "was", "its", "yes", "gas", "news", "always", "perhaps"})
SIM_DECIMALS = 4  # a vector's floats vary by ~1e-7 with what it was embedded beside: exact ties stay ties
RULES = frozenset({"same_use", "requested_places"})  # mention_replacements' rules, all on by default
PHRASES = {"CounterTopBath": "bathroom counter top"}  # a class name of this simulator's own, in words
# what people also call a class, besides its name: AI2-THOR's CounterTop holds kitchen islands, its SideTable
# the nightstands by a bed (everyday English, not the task generator's templates)
ALSO_CALLED = {"CounterTop": ("kitchen island",), "SideTable": ("nightstand", "bedside table"),
               "Sofa": ("couch",), "GarbageCan": ("trash can",), "Cabinet": ("cupboard",),
               "ToiletPaper": ("toilet roll",)}
# Where a thing is, not where it goes: "the soap is in the bin", "you'll find one in the trash can",
# "check the bathtub", "there's a cloth in the cabinet". A clause counts for a place only up to here; not
# "try to put it on the table", "check that it is clean", "the pots that are in the sink", "make sure
# it is on the sofa" (requests).
HINT = re.compile(r"\byou(?:'?ll|\s+will|\s+can|\s+should)\s+find\b|\bthere'?s\b|\bthere\s+(?:is|are)\b"
                  r"|^\W*(?:(?:please|and|then|just|now)\s+)*(?:check(?!\s+(?:that|if|whether)\b)"
                  r"|try(?!\s+to\b)(?!\s+\w+ing\b)|look\s+(?:in|on|under|inside)\b)"
                  r"|(?<!\bthat )(?<!\bwhich )\b(?:is|are)\s+(?:in|on|inside|under|at|by|near|next|beside)\b",
                  re.IGNORECASE)
ASKS = re.compile(r"\bmake\s+sure\b|\bshould\b|\bmust\b|\bneeds?\s+to\b|\bcheck\s+(?:that|if|whether)\b", re.IGNORECASE)
# other names of a dish (everyday English): "a cup of joe" is a coffee
OTHER_NAMES = {"joe": "coffee", "java": "coffee", "espresso": "coffee"}
# "a cup of coffee", "cup o' joe": a measure, not the Cup; the coffee machine fills the mug (not "a mug of coffee")
MEASURE = re.compile(r"\b(?:cups?|glass(?:es)?)\s+o[f']?\s+(?=(?:hot\s+|fresh\s+|black\s+)?(?:cof\w*|"
                     + "|".join(n for n, dish in OTHER_NAMES.items() if dish == "coffee") + r")\b)")
CLAUSE = re.compile(r"[^.;,!?]+[.;,!?]*")  # "the mugs are in the cabinet, please put them on the table"
# the words that take back what follows, a class or a dish ("forget the plate", "scratch the coffee", "nvm the
# bowl", "swap the potato for a slice of apple"); not "don't forget the mug", "never skip the coffee"
# (request_reading.CANCELLED reads dishes with them too)
TAKE_BACK = (r"(?<!nt\s)(?<!n't\s)(?<!not\s)(?<!never\s)"
             r"(?:forget|skip|scratch|cancel|ditch|nix|never\s*mind|nvm|swap(?:\s+out)?)")
# what the Commander takes back or rules out: "not a plate, put it in a bowl", "in a bowl instead of the plate",
# "on the counter, not the table", "not the mugs, only the cups", "don't put it in the sink", "no tomato", "nvm the
# plate, use a bowl"; not "I can't find the apple"
CANCEL = re.compile(r"(?:\b(?:" + TAKE_BACK + r"|not|no|without|instead\s+of|rather\s+than)"
                    r"|n't\s+(?:want|need|use|put|place|bring|leave|set))"
                    r"\s+(?:(?:put|place|leave|use|set)\s+)?(?:(?:it|them)\s+)?(?:(?:in|on|into|onto|inside|at)\s+)?"
                    r"(?:(?:a|an|the|that|this|my|any|those|these)\s+)?"
                    r"(?P<what>(?!(?:for|with)\b)[a-z]+(?:\s+(?!(?:for|with)\b)[a-z]+)?)")


class CachedEmbedder:
    """A text embedder whose vectors are kept (up to ``size`` texts, then it starts afresh): a
    dialogue's spans and the class names are embedded once, not once per candidate example."""

    def __init__(self, embedder: Any, size: int = 50_000) -> None:
        self.inner, self.size, self.vectors = embedder, size, {}

    def embed_text(self, texts: Sequence[str]) -> np.ndarray:
        new = [t for t in dict.fromkeys(texts) if t not in self.vectors]
        if new and len(self.vectors) + len(new) > self.size:
            self.vectors, new = {}, list(dict.fromkeys(texts))
        if new:
            self.vectors.update(zip(new, self.inner.embed_text(new), strict=True))
        if not texts:
            return np.zeros((0, getattr(self.inner, "dim", 0)), np.float32)
        return np.stack([self.vectors[t] for t in texts])


def class_phrase(name: str) -> str:
    """``DiningTable`` -> ``dining table``, ``TVStand`` -> ``tv stand``, ``CD`` -> ``cd``;
    ``CounterTopBath`` -> ``bathroom counter top`` (:data:`PHRASES`)."""
    words = re.findall(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]+(?![a-z])|[A-Z][a-z]*|[0-9]+", name)
    return PHRASES.get(name) or " ".join(words).lower() or name.lower()


def requests(dialogue: Sequence[Any]) -> list[str]:
    """Each utterance of ``dialogue`` with each of its clauses cut at its first hint of where a thing is
    (:data:`HINT`) unless it asks for a state (:data:`ASKS`: "make sure the remote is on the sofa"): what
    it asks for, not where the objects are found ("scrub brush is in the sink" -> "scrub brush"; "the
    mugs are in the cabinet, please put them on the table" -> "the mugs  please put them on the
    table"). The Driver asks nothing: its turns are "" (where it found a thing, "grabbed the one on the
    sofa", is no place asked for), kept in their places so that each request keeps its decay."""
    return [asked_text(_commander_text(turn)) for turn in dialogue]


def asked_text(text: str) -> str:
    """``text`` with each clause cut at its first hint of where a thing is, unless it asks for a state
    (:func:`requests`, for one utterance)."""
    return "".join(c if ASKS.search(c) else HINT.split(c, 1)[0] for c in CLAUSE.findall(text))


def _commander_text(turn: Any) -> str:
    """A turn's text (:func:`~icalkit.memory.keys.dialogue_turns` reads its speaker), "" for the Driver's."""
    said = dialogue_turns([turn])
    return said[0][1] if said and said[0][0] != "Driver" else ""


def singular(word: str) -> str:
    """A word ending in "s" read as a plural noun's singular, by its ending ("pots" -> "pot", "dishes" ->
    "dish", "potatoes" -> "potato", "batteries" -> "battery", "shelves" -> "shelf", "knives" -> "knife",
    "cds" -> "cd"); "glass", "bus", "this", "lettuce" and a few short words that are no plurals ("has",
    "was", "its") as they are. Other words ending in "s" come out as non-words ("always" -> "alway"),
    which name no class."""
    if len(word) < 3 or not word.endswith("s") or word.endswith(("ss", "us", "is")) or word in NOT_PLURAL:
        return word
    for plural, one in (("ies", "y"), ("ives", "ife"), ("lves", "lf"), ("sses", "ss"), ("xes", "x"), ("ches", "ch"),
                        ("shes", "sh"), ("oes", "o"), ("thes", "th")):
        if word.endswith(plural):
            return word[:-len(plural)] + one
    return word[:-1]


def cancelled_words(utterance: str) -> set[int]:
    """The indices, among :func:`spans`' words, of the words the utterance takes back or rules out
    (:data:`CANCEL`: "plate" in "not a plate, a bowl", "dining table" in "instead of the dining table")."""
    text = MEASURE.sub("", utterance.lower())
    out: set[int] = set()
    for m in CANCEL.finditer(text):
        first = len(WORDS.findall(text[:m.start("what")]))
        out.update(range(first, first + len(WORDS.findall(m["what"]))))
    return out


def spans(utterance: str, longest: int = 3) -> list[tuple[int, int, str]]:
    """The 1..``longest``-word spans of an utterance (lower case, letters only, nouns singular) as
    ``(start, end, text)``; a measure of coffee names no vessel (:data:`MEASURE`)."""
    words = [singular(w) for w in WORDS.findall(MEASURE.sub("", utterance.lower()))]
    return [(i, i + n, " ".join(words[i:i + n])) for n in range(1, longest + 1) for i in range(len(words) - n + 1)]


def mention_scores(embedder: Any, dialogue: Sequence[Any], classes: Sequence[str],
                   decay: float = DECAY, own: float = MIN_SCORE) -> dict[str, tuple[float, float]]:
    """How strongly ``dialogue`` (``(speaker, text)`` turns or plain strings) mentions each class:
    ``(best similarity less decay per utterance, best similarity)``, ``-inf`` for none; similarities
    rounded to :data:`SIM_DECIMALS`, so that two classes whose own names the dialogue says tie whatever
    batch the embedder saw the spans in (its floats move by ~1e-7 with the texts padded beside them). In each
    utterance the spans claim their words for their best class where it scores at least ``own``,
    strongest first (similarities rounded to 3 decimals; of equal ones the longer span first) and
    never a word another class claimed; a span with a claimed word counts for that word's class only. A class
    whose words an utterance takes back (:func:`cancelled_words`: "not a plate, put it in a bowl") loses its
    mentions so far and the rest of that utterance's; a later utterance's count again. A class is mentioned by its
    name (:func:`class_phrase`) or what it is also called (:data:`ALSO_CALLED`: "kitchen island"), its best."""
    classes = list(dict.fromkeys(classes))
    if not classes:
        return {}
    phrases = [(k, p) for k, c in enumerate(classes) for p in (class_phrase(c), *ALSO_CALLED.get(c, ()))]
    named_by, names = np.asarray([k for k, _ in phrases]), embedder.embed_text([p for _, p in phrases])
    ranked = np.full(len(classes), -np.inf, dtype=np.float32)
    raw = ranked.copy()
    for i, turn in enumerate(dialogue):
        text = turn if isinstance(turn, str) else str(turn[-1])
        parts = spans(text)
        if not parts:
            continue
        texts = {t: n for n, t in enumerate(dict.fromkeys(t for _, _, t in parts))}
        by_phrase = (names @ embedder.embed_text(list(texts)).T)[:, [texts[t] for _, _, t in parts]]
        sims = np.stack([by_phrase[named_by == k].max(axis=0) for k in range(len(classes))])  # class x span: its best name
        sims = np.round(sims, SIM_DECIMALS)  # "cups and mugs": 1.0 both, not as the batch's float noise orders them
        claimed = np.full(max(b for _, b, _ in parts), -1)  # word -> the class whose mention it is
        top, owner = sims.max(axis=0), sims.argmax(axis=0)
        for j in sorted(range(len(parts)), key=lambda j: (-round(float(top[j]), 3), parts[j][0] - parts[j][1])):
            a, b, _ = parts[j]  # strongest first; of equal mentions the longer: "toilet paper" before "toilet"
            if top[j] >= own and np.isin(claimed[a:b], (-1, owner[j])).all():
                claimed[a:b] = owner[j]
        for j, (a, b, _) in enumerate(parts):
            owners = set(claimed[a:b].tolist()) - {-1}
            if owners:  # a span with claimed words counts for their one claimant only
                others = np.ones(len(classes), dtype=bool)
                if len(owners) == 1:
                    others[owners.pop()] = False
                sims[others, j] = -np.inf
        gone = cancelled_words(text) if _commander_text(turn) else set()  # the Driver takes nothing back
        back: dict[int, int] = {}  # class taken back -> its first word taken back
        for w in sorted(gone):
            if w < len(claimed) and claimed[w] >= 0:
                back.setdefault(int(claimed[w]), w)
        for c, w in back.items():  # "a plate, not the bowl" keeps the plate; "a bowl instead of a plate, the
            ranked[c] = raw[c] = -np.inf  # plates are dirty" has none
            sims[c, [j for j, (_, b, _) in enumerate(parts) if b > w]] = -np.inf
        best = sims.max(axis=1)
        ranked, raw = np.maximum(ranked, best - decay * i), np.maximum(raw, best)
    return {c: (float(a), float(b)) for c, a, b in zip(classes, ranked, raw, strict=True)}


def fits_slot(candidate: str, slot: str, held: Collection[str] = (), container: bool = False) -> bool:
    """Whether ``candidate`` can stand where the example used ``slot``: sliceable for a sliceable
    slot, dirtyable for a dirtyable one, any receptacle for furniture, else a pickupable of the same
    kind (not a receptacle where the slot is none: the pieces go in the plate, not the other way);
    and able to hold each class of ``held``, what the example put in or on the slot (a toaster takes
    bread slices only, so it is no table for a mug; a cup is no plate). A dish the example puts
    things in (``container``) takes a dish of the same use: one of its object classes where both have
    some (a bowl for a plate, both Dishware; not the pan "cook it in a pan" names, Cookware)."""
    from icalkit.envs.household.catalog import OBJECT_TYPES
    from icalkit.envs.household.receptacles import can_hold

    c, s = OBJECT_TYPES.get(candidate), OBJECT_TYPES.get(slot)
    if c is None or s is None or (s.sliceable and not c.sliceable) or (s.dirtyable and not c.dirtyable):
        return False
    if not all(can_hold(candidate, h) for h in held if h in OBJECT_TYPES):
        return False
    if s.kind == "furniture":
        return c.receptacle
    same_use = not (container and s.receptacle and c.classes and s.classes) or bool(set(c.classes) & set(s.classes))
    return c.pickupable and c.kind == s.kind and (s.receptacle or not c.receptacle) and same_use


def mention_replacements(example: Any, dialogue: Sequence[Any], room: Collection[str], embedder: Any,
                         min_score: float = MIN_SCORE, decay: float = DECAY, rules: Collection[str] = RULES
                         ) -> dict[str, str]:
    """``{example class: room class}`` for the example's parameter classes the dialogue names
    otherwise; ``{}`` for an example whose task id names no task (its parameters are unknown).
    ``rules`` (benchmarks/bench_reground.py measures each): ``same_use``, :func:`fits_slot`'s dish of the
    same use for a dish the example fills; ``requested_places``, a slot the example puts things on
    is filled by what the dialogue asks for (:func:`requests`), not by where it says things are
    ("put them on the counter" — "the soap is in the bin")."""
    from icalkit.agents.context import example_program, program_classes
    from icalkit.agents.demo_end_state import program_placements
    from icalkit.agents.grounding import task_params
    from icalkit.envs.household.catalog import OBJECT_TYPES, SLICED_FROM
    from icalkit.envs.household.receptacles import APPLIANCES

    params = task_params(example.task_id) or {}
    used = program_classes(example_program(example))
    slots = list(dict.fromkeys(v for v in params.values() if v in used and v in OBJECT_TYPES))
    if not slots:
        return {}

    def free(c: str) -> bool:  # an object (or appliance) the example uses in another role is not a candidate
        kind = OBJECT_TYPES.get(c)
        return (c not in slots and not c.endswith("Sliced") and kind is not None
                and not (c in used and (kind.pickupable or c in APPLIANCES)))

    candidates = sorted(c for c in room if free(c))
    score = mention_scores(embedder, dialogue, candidates + slots, decay, min_score)
    held: dict[str, set[str]] = {}  # what the example put on each slot, of the classes that stay as they are
    placements = program_placements(example_program(example))
    for obj, on in placements:
        if obj not in slots and SLICED_FROM.get(obj) not in slots:
            held.setdefault(on, set()).add(obj)
    holders = {on for _, on in placements}
    asked = mention_scores(embedder, requests(dialogue), candidates + slots, decay, min_score) \
        if "requested_places" in rules and holders & set(slots) else score
    ranked = sorted(((*(asked if v in holders else score)[c], v, c) for v in slots for c in [*candidates, v]
                     if c == v or fits_slot(c, v, held.get(v, ()), v in holders and "same_use" in rules)),
                    key=lambda t: (-t[0], t[2], t[3]))
    out: dict[str, str] = {}
    filled: set[str] = set()
    taken: set[str] = set()
    for _, raw, slot, c in ranked:
        if slot in filled or c in taken or (c != slot and raw < min_score):
            continue
        filled.add(slot)
        taken.add(c)
        if c != slot:
            out[slot] = c
    return out
