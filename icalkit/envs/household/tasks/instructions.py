"""TEACh-style Commander/Driver dialogues and ALFRED-style goal sentences for task instances.

Variety comes from paraphrase templates, object synonyms and colours, optional locations (when
the scene's objects are given: "the knife is in the drawer"), chit-chat, and three dialogue
styles: the whole goal at once, the goal given step by step, and the goal followed by questions
about where things are. Everything is drawn from one ``random.Random`` so output is
deterministic given the seed.

``style="human"`` (:func:`human_dialogue`) writes wider, human-like dialogues: the goal said
indirectly without the task's keyword, corrections, the Driver narrating progress, slang and
typos. The retriever trainer uses them; the default task generation does not.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence

from icalkit.envs.household.catalog import OBJECT_TYPES
from icalkit.envs.household.tasks import instruction_templates as T
from icalkit.envs.household.tasks.registry import class_members, prep_for

Dialogue = list[tuple[str, str]]


def object_name(t: str, rng: random.Random) -> str:
    """A way to call an object type ("CoffeeTable" -> "coffee table" or "low table")."""
    if t in T.NAMES:
        return rng.choice(T.NAMES[t])
    return re.sub(r"(?<=[a-z])(?=[A-Z])", " ", t).lower() if not t.isupper() else t


def plural(t: str, rng: random.Random) -> str:
    """Plural of an object type's name."""
    if t in T.PLURALS:
        return T.PLURALS[t]
    name = object_name(t, rng)
    return name if name.endswith("s") else name + "s"


def colour_word(t: str) -> str:
    """Nearest colour name of an object type's catalog colour."""
    rgb = OBJECT_TYPES[t].color if t in OBJECT_TYPES else (128, 128, 128)
    return min(T.COLOURS, key=lambda c: sum((a - b) ** 2 for a, b in zip(T.COLOURS[c], rgb, strict=True)))


def _where(objects: Sequence[dict] | None, t: str) -> str | None:
    """Type of the receptacle holding an instance of ``t`` (first found), if known."""
    by_id = {o["objectId"]: o for o in objects or []}
    for o in objects or []:
        if o.get("objectType") == t and o.get("parentReceptacles"):
            parent = by_id.get(o["parentReceptacles"][0])
            if parent is not None:
                return parent["objectType"]
    return None


def _join(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def _slices(n: str, food: str, cooked: bool = False) -> str:
    word = T.NUMBERS.get(n, n)
    adj = "cooked " if cooked else ""
    return f"{'a' if n == '1' else word} {adj}slice{'s' if n != '1' else ''} of {food.lower()}"


def _dish_items(task_type: str, p: Mapping[str, str]) -> list[str]:
    if task_type == "Salad":
        parts = [_slices(p["lettuce"], "lettuce"), _slices(p["tomato"], "tomato"),
                 _slices(p["potato"], "potato", cooked=True)]
        return [x for x, k in zip(parts, ("lettuce", "tomato", "potato"), strict=True) if p[k] != "0"]
    if task_type == "Sandwich":
        parts = [_slices(p["lettuce"], "lettuce"), _slices(p["tomato"], "tomato")]
        return [x for x, k in zip(parts, ("lettuce", "tomato"), strict=True) if p[k] != "0"]
    phrases = {"n_coffee": "a mug of coffee", "n_toast": "a plate of toast",
               "n_potatoes": "two cooked potato slices on a plate", "n_apple": "an apple slice on a plate",
               "n_sandwich": "a sandwich with lettuce and tomato", "n_salad": "a lettuce and tomato salad"}
    return [phrase for key, phrase in phrases.items() if p.get(key, "0") != "0"]


def fields(task_type: str, p: Mapping[str, str], rng: random.Random,
           objects: Sequence[dict] | None = None) -> dict[str, str]:
    """Placeholder values for the templates of one task instance."""
    x = p.get("X", "HousePlant" if task_type == "Water Plant" else "Mug")
    the_x = object_name(x, rng)
    if x in OBJECT_TYPES and rng.random() < 0.3:
        the_x = f"{colour_word(x)} {the_x}"
    items = _dish_items(task_type, p) if task_type in ("Salad", "Sandwich", "Breakfast") else ["it"]
    out = {"x": the_x, "xs": plural(x, rng), "n": T.NUMBERS.get(p.get("N", "1"), p.get("N", "1")),
           "y": object_name(p.get("Y", "CounterTop"), rng), "m": object_name(p.get("M", "Bowl"), rng),
           "prep": p.get("prep") or prep_for(p.get("Y", "CounterTop")),
           "lamp": object_name(p.get("lamp", "FloorLamp"), rng),
           "serve": object_name(p.get("serve", "CounterTop"), rng), "items": _join(items),
           "first": items[0], "second": items[-1]}
    return out


def _key_objects(task_type: str, p: Mapping[str, str]) -> list[str]:
    keys = {"Coffee": ["Mug"], "Plate Of Toast": ["Bread", "Knife", "Plate"],
            "Salad": ["Knife", "Lettuce", "Tomato", "Plate"], "Sandwich": ["Bread", "Knife", "Plate"],
            "Breakfast": ["Mug", "Knife", "Plate", "Bread"], "Water Plant": ["Cup", "Bottle", "Pot"]}
    if task_type in keys:
        return keys[task_type]
    out = list(class_members(p["X"])) if "X" in p else []
    out += [p[k] for k in ("M",) if k in p]
    if "Slices" in task_type:
        out.append("Knife")
    if task_type == "Boil X":
        out.append("Pot")
    return out


def _fill(template: str, f: Mapping[str, str]) -> str:
    """Format a template, then fix number agreement ("slice(s)") and articles ("a apple")."""
    text = template.format(**f)
    return _articles(text.replace("(s)", "" if f["n"] == "one" else "s"))


def _articles(text: str) -> str:
    return re.sub(r"\b([Aa]) (?=[aeiou])", r"\1n ", text)


def _humanize(text: str, rng: random.Random) -> str:
    """Casual typing: sometimes lower-case, sometimes no final punctuation."""
    text = _articles(text.strip())
    if rng.random() < 0.5:
        text = text[0].upper() + text[1:]
    if rng.random() < 0.5 and not text.endswith(("?", "!", ".")):
        text += rng.choice((".", "!", ""))
    return text


def _location_turns(task_type: str, p: Mapping[str, str], rng: random.Random,
                    objects: Sequence[dict] | None, ask: bool) -> Dialogue:
    cands = [t for t in _key_objects(task_type, p) if t in OBJECT_TYPES]
    if not cands:
        return []
    t = rng.choice(cands)
    name = object_name(t, rng)
    where = _where(objects, t)
    turns: Dialogue = []
    if ask:
        turns.append(("Driver", rng.choice(T.WHERE_QUESTIONS).format(x=name)))
    if where:
        answer = rng.choice(T.LOCATION_ANSWERS).format(x=name, y=object_name(where, rng), prep=prep_for(where))
    elif ask:
        answer = rng.choice(T.NO_LOCATION_ANSWERS)
    else:
        return []
    return [*turns, ("Commander", answer)]


def goal_sentence(task_type: str, params: Mapping[str, str], rng: random.Random) -> str:
    """An ALFRED-style one-sentence goal ("Put a clean mug on the table.")."""
    text = _fill(rng.choice(T.GOALS[task_type]), fields(task_type, params, rng))
    text = text[0].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else text + "."


def dialogue(task_type: str, params: Mapping[str, str], rng: random.Random,
             objects: Sequence[dict] | None = None) -> Dialogue:
    """A Commander/Driver dialogue for one task instance (locations only if ``objects`` given)."""
    f = fields(task_type, params, rng, objects)
    turns: Dialogue = []
    if rng.random() < 0.65:
        turns.append(("Driver", rng.choice(T.DRIVER_OPENERS)))
        if rng.random() < 0.4:
            turns.append(("Commander", rng.choice(T.COMMANDER_GREETINGS)))
    else:
        turns.append(("Commander", rng.choice(T.COMMANDER_GREETINGS)))
        if rng.random() < 0.5:
            turns.append(("Driver", rng.choice(T.DRIVER_OPENERS)))
    goal = _fill(rng.choice(T.GOALS[task_type]), f)
    style = rng.random()
    if style < 0.4:  # everything at once
        turns.append(("Commander", rng.choice(T.FILLERS) + goal))
        turns += _location_turns(task_type, params, rng, objects, ask=False) if rng.random() < 0.6 else []
        turns.append(("Driver", rng.choice(T.DRIVER_ACKS)))
    elif style < 0.75:  # piecemeal
        if rng.random() < 0.5:
            turns.append(("Commander", f"{rng.choice(T.COMMANDER_OPENERS)} {goal}"))
        steps = [_fill(s, f) for s in T.STEPS[task_type]]
        for k, step in enumerate(steps):
            turns.append(("Commander", ("first, " if k == 0 and rng.random() < 0.5 else "") + step))
            if rng.random() < 0.25:
                turns += _location_turns(task_type, params, rng, objects, ask=True)
            turns.append(("Driver", rng.choice(T.DRIVER_DONE if rng.random() < 0.6 else T.DRIVER_ACKS)))
    else:  # goal, then questions
        turns.append(("Commander", goal))
        turns += _location_turns(task_type, params, rng, objects, ask=True)
        turns.append(("Driver", rng.choice(T.DRIVER_ACKS)))
    turns.append(("Driver", rng.choice(T.DRIVER_FINAL)))
    if rng.random() < 0.8:
        turns.append(("Commander", rng.choice(T.COMMANDER_CLOSERS)))
    return [(speaker, _humanize(text, rng)) for speaker, text in turns]


DIALOGUE_STYLES = ("template", "human")


def _typos(text: str, rng: random.Random, rate: float) -> str:
    """Swap, drop or double a letter in some longer words."""
    words = text.split(" ")
    for i, w in enumerate(words):
        if len(w) > 3 and w.isalpha() and rng.random() < rate:
            k = rng.randrange(1, len(w) - 1)
            op = rng.randrange(3)
            words[i] = (w[:k] + w[k + 1] + w[k] + w[k + 2:] if op == 0 else
                        w[:k] + w[k + 1:] if op == 1 else w[:k] + w[k] + w[k:])
    return " ".join(words)


def _slang(text: str, rng: random.Random, rate: float) -> str:
    for word, short in T.SLANG.items():
        if rng.random() < rate:
            text = re.sub(rf"\b{word}\b", short, text, flags=re.IGNORECASE)
    return text


def _casual(text: str, rng: random.Random, typo_rate: float) -> str:
    text = _typos(_slang(text, rng, 0.4), rng, typo_rate)
    return text.lower() if rng.random() < 0.5 else text


def _correction(task_type: str, params: Mapping[str, str], rng: random.Random) -> str | None:
    """A Commander turn fixing a (pretended) slip about the main object."""
    x = params.get("X") or params.get("Y")
    if not x:
        return None
    others = [t for t in ("Mug", "Apple", "Plate", "Bowl", "Book", "Cup", "Pan", "Tomato") if t != x]
    return rng.choice(T.CORRECTIONS).format(wrong=object_name(rng.choice(others), rng), right=object_name(x, rng))


def human_dialogue(task_type: str, params: Mapping[str, str], rng: random.Random,
                   objects: Sequence[dict] | None = None, typo_rate: float = 0.06) -> Dialogue:
    """A human-like Commander/Driver dialogue: indirect goal, corrections, narration, slang, typos."""
    f = fields(task_type, params, rng, objects)
    turns: Dialogue = []
    if rng.random() < 0.6:
        turns.append(("Driver", rng.choice(T.DRIVER_OPENERS)))
    indirect = T.INDIRECT_GOALS.get(task_type)
    bank = indirect if indirect and rng.random() < 0.6 else T.GOALS[task_type]
    step_by_step = rng.random() < 0.15  # no goal turn: the Commander gives every step
    if not step_by_step:
        turns.append(("Commander", rng.choice(("", "", "hey, ", "so ", "ok so ")) + _fill(rng.choice(bank), f)))
    if rng.random() < 0.25 and (fix := _correction(task_type, params, rng)):
        turns.append(("Commander", fix))
    if task_type in T.CLARIFY and rng.random() < 0.35:
        question, answer = rng.choice(T.CLARIFY[task_type])
        turns += [("Driver", _fill(question, f)), ("Commander", _fill(answer, f))]
    bank_steps = T.HUMAN_STEPS.get(task_type) if rng.random() < 0.5 else None
    steps = [_fill(step, f) for step in bank_steps or T.STEPS[task_type]]
    for k, step in enumerate(steps):
        r = 0.4 if step_by_step else rng.random()
        if r < 0.35:
            turns.append(("Driver", rng.choice(T.NARRATION).format(step=step)))
        elif r < 0.55:
            turns.append(("Commander", step))
            turns.append(("Driver", rng.choice(T.DRIVER_ACKS)))
        if k == 0 and rng.random() < 0.3:
            turns += _location_turns(task_type, params, rng, objects, ask=True)
    if rng.random() < 0.5:
        turns.append(("Driver", rng.choice(T.DRIVER_FINAL)))
    return [(speaker, _casual(_articles(text.strip()), rng, typo_rate)) for speaker, text in turns]


def write_instructions(task_type: str, params: Mapping[str, str], seed: str | int,
                       objects: Sequence[dict] | None = None, style: str = "template") -> tuple[str, Dialogue]:
    """Goal sentence and dialogue for one instance, deterministic in ``seed``.

    ``style``: "template" (the task generator's dialogues) or "human" (:func:`human_dialogue`).
    """
    if style not in DIALOGUE_STYLES:
        raise ValueError(f"unknown dialogue style {style!r}; available: {list(DIALOGUE_STYLES)}")
    rng = random.Random(f"instructions/{seed}")
    goal = goal_sentence(task_type, params, rng)
    if style == "human":
        return goal, human_dialogue(task_type, params, rng, objects)
    return goal, dialogue(task_type, params, rng, objects)
