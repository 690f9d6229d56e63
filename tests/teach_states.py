"""Random AI2-THOR-style object lists and TEACh task instances for checker parity tests.

Written independently of icalkit: objects are plain metadata dicts built here (not through the
simulator's ``World.metadata()``), their classes come from TEACh's own
``custom_object_classes.json``. Three kinds of states:

* ``realistic``: a containment forest; most objects list every receptacle above them in
  ``parentReceptacles`` (as AI2-THOR does), some have ``None`` there with only
  ``simbotLastParentReceptacle`` set (an object in a coffee machine, a slice on a plate), some
  a stale ``[]``;
* ``adversarial``: ``parentReceptacles`` randomly ``None``, ``[]``, missing, partial or wrong;
  ``simbotLastParentReceptacle`` randomly ``None``, missing, the object itself or any object;
* ``cyclic``: as adversarial, plus a cycle of ``simbotLastParentReceptacle`` links between
  objects whose list is ``None`` (TEACh itself would recurse forever on them).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

TEACH_DATA = Path(__file__).parents[2] / "shared" / "teach_data"
TEACH_DEFINITIONS = TEACH_DATA / "task_definitions"
KINDS = ("realistic", "adversarial", "cyclic")

SURFACES = ["CounterTop", "DiningTable", "CoffeeTable", "Desk", "SideTable", "Sofa", "Shelf"]
CONTAINERS = ["SinkBasin", "Sink", "Drawer", "Cabinet", "Fridge", "Microwave", "CoffeeMachine",
              "Toaster", "StoveBurner", "Bathtub", "BathtubBasin", "Pot", "Pan"]
DISHES = ["Plate", "Bowl", "Mug", "Cup"]
ITEMS = ["Bread", "BreadSliced", "Tomato", "TomatoSliced", "Lettuce", "LettuceSliced", "Potato",
         "PotatoSliced", "Apple", "AppleSliced", "Egg", "EggCracked", "Knife", "ButterKnife",
         "Fork", "Spoon", "Spatula", "HousePlant", "Candle", "SoapBar", "Faucet", "LightSwitch",
         "Laptop", "Book", "Pen", "Pencil"]
BOOL_PROPS = ["isDirty", "isCooked", "simbotIsCooked", "isFilledWithLiquid", "simbotIsFilledWithCoffee",
              "simbotIsBoiled", "isToggled", "isOpen", "isSliced"]


def object_classes() -> dict[str, list[str]]:
    return json.loads((TEACH_DATA / "custom_object_classes.json").read_text())


def _meta(obj_id: str, obj_type: str, classes: dict[str, list[str]], rng: random.Random) -> dict:
    meta = {"objectId": obj_id, "objectType": obj_type,
            "simbotObjectClass": [obj_type, *classes.get(obj_type, [])],
            "receptacle": obj_type in SURFACES + CONTAINERS + DISHES}
    for prop in BOOL_PROPS:
        meta[prop] = rng.random() < 0.3
    return meta


def _ancestors(obj_id: str, parent_of: dict[str, str | None]) -> list[str]:
    out, cur = [], parent_of[obj_id]
    while cur is not None:
        out.append(cur)
        cur = parent_of[cur]
    return out


def random_state(rng: random.Random, kind: str, classes: dict[str, list[str]]) -> list[dict]:
    """One object list of the given kind (see the module docstring)."""
    types = (rng.sample(SURFACES, 2) + rng.sample(CONTAINERS, rng.randint(1, 3))
             + [rng.choice(DISHES) for _ in range(rng.randint(1, 5))]
             + [rng.choice(ITEMS) for _ in range(rng.randint(3, 14))])
    counts: dict[str, int] = {}
    objects, parent_of = [], {}
    for obj_type in types:
        counts[obj_type] = counts.get(obj_type, 0) + 1
        obj_id = f"{obj_type}|{counts[obj_type]}|{rng.randint(0, 99)}"
        objects.append(_meta(obj_id, obj_type, classes, rng))
    for i, obj in enumerate(objects):  # a forest: a parent always comes earlier in the list
        earlier = [o for o in objects[:i] if o["receptacle"]]
        dishes = [o for o in earlier if o["objectType"] in DISHES]
        if obj["objectType"] in SURFACES or not earlier or rng.random() < 0.15:
            parent_of[obj["objectId"]] = None
        elif dishes and obj["objectType"] in ITEMS and rng.random() < 0.5:
            parent_of[obj["objectId"]] = rng.choice(dishes)["objectId"]
        else:
            parent_of[obj["objectId"]] = rng.choice(earlier)["objectId"]
    ids = [o["objectId"] for o in objects]
    for obj in objects:
        oid, parent = obj["objectId"], parent_of[obj["objectId"]]
        chain = _ancestors(oid, parent_of)
        if kind == "realistic":
            # simbotLastParentReceptacle is set only for objects the agent has moved
            moved = obj["objectType"] in ITEMS + DISHES and rng.random() < 0.7
            obj["simbotLastParentReceptacle"] = parent if moved else None
            obj["parentReceptacles"] = rng.choices(
                [chain or None, None, [], chain[:1] or None], weights=[5, 3, 1, 1])[0]
        else:
            obj["parentReceptacles"] = rng.choice([
                None, None, [], chain, rng.sample(ids, rng.randint(1, 3)), "drop"])
            if obj["parentReceptacles"] == "drop":
                del obj["parentReceptacles"]
            last = rng.choice([parent, parent, None, oid, rng.choice(ids), "drop"])
            if last != "drop":
                obj["simbotLastParentReceptacle"] = last
            if rng.random() < 0.1:
                obj["receptacle"] = not obj["receptacle"]
    if kind == "cyclic":
        ring = rng.sample(objects, rng.randint(2, min(4, len(objects))))
        for a, b in zip(ring, ring[1:] + ring[:1], strict=True):
            a["parentReceptacles"] = None
            a["simbotLastParentReceptacle"] = b["objectId"]
        # an object whose chain runs into the ring
        tail = rng.choice(objects)
        if tail not in ring:
            tail["parentReceptacles"] = None
            tail["simbotLastParentReceptacle"] = ring[0]["objectId"]
    rng.shuffle(objects)
    return objects


def _n(rng: random.Random, low: int = 0, high: int = 2) -> str:
    return str(rng.randint(low, high))


def random_task(rng: random.Random) -> tuple[str, list[str]]:
    """A TEACh task name and a parameter list valid for it."""
    food = ["Tomato", "Potato", "Lettuce", "Apple", "Bread"]
    dish = ["Plate", "Bowl"]
    cls = ["Mug", "Plate", "Bowl", "Cup", "Dishware", "Drinkware", "Tableware", "Fork", "Knives",
           "Silverware", "Candle", "Book"]
    place = ["CounterTop", "DiningTable", "Tables", "Drawer", "Cabinet", "Sofa", "Plate", "Bowl"]
    makers = {
        "Toast": lambda: [], "Coffee": lambda: [], "Omelette": lambda: [], "Poach Egg": lambda: [],
        "Water Plant": lambda: [], "Plate Of Toast": lambda: [], "Tutorial": lambda: [],
        "Candles": lambda: [], "Basic Kitchen Tasks": lambda: [], "Basic Bathroom Tasks": lambda: [],
        "Custom Properties Kitchen Tasks": lambda: [],
        "Clean X": lambda: [rng.choice(cls)], "Clean All X": lambda: [rng.choice(cls)],
        "Sliced X": lambda: [rng.choice(food)], "Cooked Slice Of X": lambda: [rng.choice(food)],
        "Boil X": lambda: [rng.choice(["Potato", "Egg"])],
        "N Slices Of X In Y": lambda: [_n(rng, 1, 3), rng.choice(food), rng.choice(["on", "in"]),
                                       rng.choice(dish)],
        "N Cooked Slices Of X In Y": lambda: [_n(rng, 1, 3), rng.choice(food),
                                              rng.choice(["on", "in"]), rng.choice(dish)],
        "Put All X On Y": lambda: _put(rng, cls, place, "on"),
        "Put All X In One Y": lambda: _put(rng, cls, place, "in"),
        "Toggle X All Y": lambda: _toggle(rng),
        "Sandwich": lambda: [_n(rng), _n(rng)],
        "Salad": lambda: [_n(rng), _n(rng), _n(rng)],
        "Workspace": lambda: [_n(rng, 0, 2), _n(rng, 0, 1), _n(rng, 0, 2)],
        "Breakfast": lambda: [_n(rng), _n(rng, 0, 1), _n(rng, 0, 1), rng.choice(dish), _n(rng, 0, 1),
                              rng.choice(dish), _n(rng, 0, 1), _n(rng, 0, 1), _n(rng, 0, 1),
                              _n(rng, 0, 1), _n(rng, 0, 1), _n(rng, 0, 1), _n(rng, 0, 1),
                              rng.choice(["CounterTop", "DiningTable"])],
    }
    name = rng.choice(sorted(makers))
    return name, makers[name]()


def _distinct(rng: random.Random, a: list[str], b: list[str]) -> list[str]:
    x = rng.choice(a)
    y = rng.choice([v for v in b if v != x])
    return [x, y]


def _put(rng: random.Random, cls: list[str], place: list[str], word: str) -> list[str]:
    x, y = _distinct(rng, cls, place)
    return [x, word, y]


def _toggle(rng: random.Random) -> list[str]:
    on = rng.random() < 0.5
    return ["on" if on else "off", "1" if on else "0", rng.choice(["Lamps", "Lights", "Electronics"])]


def cases(seed: int, n_states: int, tasks_per_state: int
          ) -> list[tuple[str, list[dict], list[tuple[str, list[str]]]]]:
    """``n_states`` states (kinds in turn), each with ``tasks_per_state`` random task instances."""
    rng = random.Random(seed)
    classes = object_classes()
    out = []
    for i in range(n_states):
        kind = KINDS[i % len(KINDS)]
        state = random_state(rng, kind, classes)
        out.append((kind, state, [random_task(rng) for _ in range(tasks_per_state)]))
    return out
