"""ALFWorld games from the embedded simulator's scenes: PDDL problems + TextWorld game files.

A household :class:`Task` of an ALFWorld task type is grounded in its scene (``build_world``); the
scene's furniture becomes PDDL receptacles (one location each, the agent starts in the middle of the
room), its small objects become PDDL objects in their furniture, and the goal is ALFWorld's goal for
the type. The problem, ALFRED's domain (``alfred.pddl``) and grammar (``alfred.twl2``, with the goal
sentence filled in) go into one ``game.tw-pddl`` file, as in the official ALFWorld data, next to
``icalkit_task.json`` (the task, for goal-condition counts) and ``problem.pddl``.

Supported: the 6 ALFWorld types. ``pick_and_place_with_movable_recep`` is refused: the shipped domain
has no action that puts an object into a receptacle object. Tasks whose target is a small receptacle
(a Pot, a Plate) are skipped by :func:`generate_games` for the same reason.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from icalkit.envs.alfworld.engine import domain_files
from icalkit.envs.household.catalog import OBJECT_TYPES
from icalkit.envs.household.receptacles import can_hold
from icalkit.envs.household.tasks.task import Task

GAME_FILE, TASK_FILE, PROBLEM_FILE = "game.tw-pddl", "icalkit_task.json", "problem.pddl"
# ALFWorld (official data) task type -> the household registry's name
OFFICIAL_TYPES = {"pick_and_place_simple": "pick_and_place", "pick_two_obj_and_place": "pick_two_and_place",
                  "look_at_obj_in_light": "look_at_obj_in_light",
                  "pick_clean_then_place_in_recep": "pick_clean_then_place",
                  "pick_heat_then_place_in_recep": "pick_heat_then_place",
                  "pick_cool_then_place_in_recep": "pick_cool_then_place"}
ALFWORLD_TYPES = tuple(OFFICIAL_TYPES.values())
HEATABLE_EXTRA = {"Mug", "Cup", "Plate", "Bowl"}
COOLABLE = {"Apple", "Bread", "Egg", "Lettuce", "Potato", "Tomato", "Mug", "Cup", "Bowl", "Plate", "Pot",
            "Pan", "WineBottle"}
LAMPS = {"FloorLamp", "DeskLamp"}
LAMP_STANDS = ("Desk", "SideTable", "Dresser")
DOMAIN_TYPES = {"rtype": ("SinkBasinType", "MicrowaveType", "FridgeType"), "otype": ("KnifeType", "ButterKnifeType")}
_GOAL_TEMPLATES = {
    "pick_and_place": "put a {x} in/on {y}", "pick_two_and_place": "put two {x} in/on {y}",
    "look_at_obj_in_light": "look at {x} under the {y}", "pick_clean_then_place": "put a clean {x} in/on {y}",
    "pick_heat_then_place": "put a hot {x} in/on {y}", "pick_cool_then_place": "put a cool {x} in/on {y}",
}


class UnsupportedTask(ValueError):
    """A task the ALFWorld engine cannot express (the message says why)."""


def pddl_id(object_id: str) -> str:
    """PDDL name of a simulator object id (``CounterTop_1`` -> ``countertop_1``)."""
    return object_id.lower()


def display_name(object_id: str) -> str:
    """ALFWorld-style name (``CounterTop_1`` -> ``countertop 1``)."""
    kind, _, n = object_id.rpartition("_")
    return f"{kind.lower()} {n}" if kind and n.isdigit() else object_id.lower()


def _goal(task_type: str, x: str, y: str) -> str:
    xt, yt = f"{x}Type", f"{y}Type"
    place = f"(inReceptacle ?o ?r) (objectType ?o {xt}) (receptacleType ?r {yt})"
    state = {"pick_clean_then_place": "(cleanable ?o) (isClean ?o)", "pick_heat_then_place": "(heatable ?o) (isHot ?o)",
             "pick_cool_then_place": "(coolable ?o) (isCool ?o)"}
    if task_type == "pick_two_and_place":
        return (f"(exists (?r - receptacle ?o - object ?o2 - object) (and {place} (not (= ?o ?o2))"
                f" (objectType ?o2 {xt}) (inReceptacle ?o2 ?r)))")
    if task_type == "look_at_obj_in_light":
        return (f"(and (exists (?t - object ?r - receptacle ?a - agent ?l - location) (and (objectType ?t {yt})"
                f" (toggleable ?t) (isOn ?t) (receptacleAtLocation ?r ?l) (atLocation ?a ?l) (inReceptacle ?t ?r)))"
                f" (exists (?o - object ?a - agent) (and (objectType ?o {xt}) (holds ?a ?o))))")
    return f"(exists (?r - receptacle ?o - object) (and {place} {state.get(task_type, '')}))"


def goal_sentence(task_type: str, x: str, y: str) -> str:
    """ALFWorld-style task sentence (``put a hot apple in/on countertop``)."""
    return _GOAL_TEMPLATES[task_type].format(x=x.lower(), y=y.lower())


def _container_furniture(obj: dict, by_id: dict[str, dict]) -> dict | None:
    """The furniture an object rests in/on, looking through small receptacles (a bowl on a table)."""
    seen = set()
    while obj.get("parentReceptacles"):
        parent = by_id.get(obj["parentReceptacles"][0])
        if parent is None or parent["objectId"] in seen:
            return None
        if OBJECT_TYPES[parent["objectType"]].kind != "small":
            return parent
        seen.add(parent["objectId"])
        obj = parent
    return None


def _nearest(obj: dict, candidates: list[dict]) -> dict | None:
    p = obj["position"]
    return min(candidates, key=lambda c: math.hypot(c["position"]["x"] - p["x"], c["position"]["z"] - p["z"]),
               default=None)


@dataclass
class Problem:
    """A generated PDDL problem with the names the game shows and the simulator ids behind them."""

    text: str
    names: dict[str, str]  # pddl id -> display name
    object_ids: dict[str, str]  # pddl id -> simulator object id (pseudo receptacles: their own id)
    goal: str


def build_problem(task: Task, objects: list[dict]) -> Problem:
    """The PDDL problem of ``task`` in the scene given by its THOR-style ``objects`` metadata.

    Raises:
        UnsupportedTask: a task type ALFWorld's domain cannot express, or a target that is not furniture.
    """
    if task.task_type not in ALFWORLD_TYPES:
        raise UnsupportedTask(f"task {task.task_id}: type {task.task_type!r} has no ALFWorld game "
                              f"(supported: {list(ALFWORLD_TYPES)})")
    x, y = task.params["#0"], task.params["#1"]
    if task.task_type != "look_at_obj_in_light" and OBJECT_TYPES[y].kind == "small":
        raise UnsupportedTask(f"task {task.task_id}: target {y} is a receptacle object; ALFRED's text domain "
                              f"only places objects in furniture")
    by_id = {o["objectId"]: o for o in objects}
    recs = [o for o in objects if o["receptacle"] and OBJECT_TYPES[o["objectType"]].kind != "small"]
    init, names, ids = [], {}, {}
    placed: list[tuple[dict, dict]] = []
    for o in objects:
        t = OBJECT_TYPES[o["objectType"]]
        if t.kind == "small" and t.pickupable:
            furniture = _container_furniture(o, by_id)
            if furniture is not None:
                placed.append((o, furniture))
        elif o["objectType"] in LAMPS:
            stand = _nearest(o, [r for r in recs if r["objectType"] in LAMP_STANDS]) if o["objectType"] == "DeskLamp" else None
            if stand is None:
                stand = {"objectId": f"Floor_{sum(r['objectType'] == 'Floor' for r in recs) + 1}", "objectType": "Floor",
                         "openable": False, "isOpen": False}
                recs.append(stand)
            placed.append((o, stand))
    for r in recs:
        rid = pddl_id(r["objectId"])
        names[rid], ids[rid] = display_name(r["objectId"]), r["objectId"]
        init += [f"(receptacleAtLocation {rid} loc_{rid})", f"(receptacleType {rid} {r['objectType']}Type)"]
        if r.get("openable"):
            init.append(f"(openable {rid})")
            if r.get("isOpen"):
                init.append(f"(opened {rid})")
    for o, r in placed:
        oid, rid, kind = pddl_id(o["objectId"]), pddl_id(r["objectId"]), o["objectType"]
        t = OBJECT_TYPES[kind]
        names[oid], ids[oid] = display_name(o["objectId"]), o["objectId"]
        init += [f"(inReceptacle {oid} {rid})", f"(objectAtLocation {oid} loc_{rid})", f"(objectType {oid} {kind}Type)"]
        flags = {"pickupable": t.pickupable, "moveable": t.pickupable, "cleanable": t.dirtyable,
                 "heatable": t.cookable or kind in HEATABLE_EXTRA, "coolable": kind in COOLABLE,
                 "toggleable": kind in LAMPS, "sliceable": t.sliceable,
                 "isReceptacleObject": t.receptacle and t.kind == "small",
                 "isClean": t.dirtyable and not o.get("isDirty"), "isOn": kind in LAMPS and bool(o.get("isToggled")),
                 "isSliced": bool(o.get("isSliced"))}
        init += [f"({flag} {oid})" for flag, on in flags.items() if on]
    otypes = sorted({o["objectType"] for o, _ in placed} | {x})
    rtypes = sorted({r["objectType"] for r in recs} | ({y} if task.task_type != "look_at_obj_in_light" else set()))
    init += [f"(canContain {rt}Type {ot}Type)" for rt in rtypes for ot in otypes
             if rt in OBJECT_TYPES and can_hold(rt, ot)]
    locations = ["loc_start", *(f"loc_{pddl_id(r['objectId'])}" for r in recs)]
    type_consts = {"otype": sorted({f"{t}Type" for t in otypes} | set(DOMAIN_TYPES["otype"]) |
                                   ({f"{y}Type"} if task.task_type == "look_at_obj_in_light" else set())),
                   "rtype": sorted({f"{t}Type" for t in rtypes} | set(DOMAIN_TYPES["rtype"]))}
    goal = _goal(task.task_type, x, y)
    decl = "\n    ".join([
        "agent1 - agent", " ".join(locations) + " - location",
        " ".join(pddl_id(r["objectId"]) for r in recs) + " - receptacle",
        " ".join(pddl_id(o["objectId"]) for o, _ in placed) + " - object",
        " ".join(type_consts["otype"]) + " - otype", " ".join(type_consts["rtype"]) + " - rtype"])
    text = (f"(define (problem {task.task_id.replace('/', '_').lower()})\n  (:domain alfred)\n"
            f"  (:objects\n    {decl}\n  )\n  (:init\n    (atLocation agent1 loc_start)\n    (= (total-cost) 0)\n    "
            + "\n    ".join(init) + f"\n  )\n  (:goal {goal})\n  (:metric minimize (total-cost))\n)\n")
    return Problem(text, names, ids, goal_sentence(task.task_type, x, y))


def game_data(problem: Problem) -> dict:
    """The TextWorld game JSON: ALFRED's domain, its grammar with the goal sentence, the problem."""
    domain_path, grammar_path = domain_files()
    grammar = grammar_path.read_text().replace("UNKNOWN GOAL", problem.goal)
    return {"pddl_domain": domain_path.read_text(), "grammar": grammar, "pddl_problem": problem.text,
            "names": problem.names, "solvable": True, "walkthrough": None}


def write_game(task: Task, objects: list[dict], out_dir: str | Path) -> Path:
    """Write ``game.tw-pddl``, ``problem.pddl`` and ``icalkit_task.json`` for ``task``; returns the game path."""
    problem = build_problem(task, objects)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / PROBLEM_FILE).write_text(problem.text)
    (out / TASK_FILE).write_text(json.dumps({"task": task.to_dict(), "object_ids": problem.object_ids}, indent=1))
    game = out / GAME_FILE
    tmp = game.with_suffix(".tmp")
    tmp.write_text(json.dumps(game_data(problem)))
    tmp.replace(game)
    return game


def generate_games(task_types: Iterable[str], n_per_type: int, split: str, out_dir: str | Path, seed: int = 0,
                   max_tries: int = 20) -> list[Path]:
    """``n_per_type`` games of each type in ``out_dir/<split>/<task id>/`` (existing ones are kept).

    Task indices whose target the domain cannot express are skipped (up to ``max_tries`` per game).
    """
    from icalkit.envs.household.scene import build_world
    from icalkit.envs.household.tasks.sampler import sample_task

    paths = []
    for task_type in task_types:
        if task_type not in ALFWORLD_TYPES:
            raise UnsupportedTask(f"type {task_type!r} has no ALFWorld game (supported: {list(ALFWORLD_TYPES)})")
        index = made = misses = 0
        while made < n_per_type:
            if misses >= max_tries:
                raise UnsupportedTask(f"no ALFWorld game for {task_type!r} in {misses} sampled tasks in a row "
                                      f"(tasks {index - misses}-{index - 1} of split {split})")
            task = sample_task(task_type, index, split, seed)
            index += 1
            where = Path(out_dir) / split / task.task_id.split("/", 1)[1].replace("/", "_")
            if not (where / GAME_FILE).is_file():
                try:
                    write_game(task, build_world(task).metadata(), where)
                except UnsupportedTask:
                    misses += 1
                    continue
            misses = 0
            paths.append(where / GAME_FILE)
            made += 1
    return paths
