"""Procedural rooms: layout (walls, furniture, fixtures) and object placements from a seed.

Splits. Layouts and placements are seeded separately, per room type:

* ``train``: layout id ``seed % 40``, placement variant ``2 * (seed // 40)`` (even);
* ``valid_seen``: the same 40 train layouts (``seed % 40``) with odd placement variants
  ``2 * (seed // 40) + 1``, so they never repeat a train placement;
* ``valid_unseen``: layout ids 40..59 (``40 + seed % 20``), placement variant ``seed // 20``.

Seeds run from 0 to :data:`MAX_SEED`; anything else is a ``ValueError``. The same
(seed, split, room type, required objects) always gives the same world. Objects a task requires
(``required``) are guaranteed; required furniture that the base layout lacks is added after the
base layout with its own seed, so the rest of the layout stays the same.
"""

from __future__ import annotations

import random
from collections import deque

import numpy as np
from scipy import ndimage

from icalkit.envs.household.catalog import OBJECT_TYPES, ROOMS
from icalkit.envs.household.receptacles import APPLIANCES, CLOSED_BLOCKS, can_hold, move_into
from icalkit.envs.household.state import GRID, INTERACT_DISTANCE, AgentPose, SimObject, World
from icalkit.envs.household.tasks.task import SPLITS

N_SEEN_LAYOUTS = 40
N_UNSEEN_LAYOUTS = 20
MAX_SEED = 999_999

# room type -> [(furniture type, min count, max count, probability, island)]
ROOM_PLANS: dict[str, list[tuple[str, int, int, float, bool]]] = {
    "kitchen": [
        ("Fridge", 1, 1, 1.0, False), ("CounterTop", 1, 2, 1.0, False),
        ("SinkBasin", 1, 1, 1.0, False), ("StoveBurner", 2, 4, 1.0, False),
        ("Microwave", 1, 1, 1.0, False), ("Toaster", 1, 1, 1.0, False),
        ("CoffeeMachine", 1, 1, 1.0, False), ("Cabinet", 2, 4, 1.0, False),
        ("Drawer", 1, 3, 1.0, False), ("DiningTable", 1, 1, 1.0, True),
        ("GarbageCan", 1, 1, 0.8, False), ("Shelf", 1, 1, 0.3, False),
        ("HousePlant", 1, 1, 0.3, False),
    ],
    "living_room": [
        ("Sofa", 1, 1, 1.0, False), ("CoffeeTable", 1, 1, 1.0, True), ("TVStand", 1, 1, 1.0, False),
        ("Television", 1, 1, 1.0, False), ("SideTable", 1, 2, 1.0, False),
        ("ArmChair", 1, 1, 0.6, False), ("Shelf", 1, 1, 0.5, False), ("FloorLamp", 1, 1, 0.6, False),
        ("HousePlant", 1, 1, 0.5, False), ("GarbageCan", 1, 1, 0.5, False),
        ("Ottoman", 1, 1, 0.3, False), ("Desk", 1, 1, 0.3, False), ("DiningTable", 1, 1, 0.3, True),
    ],
    "bedroom": [
        ("Bed", 1, 1, 1.0, False), ("Dresser", 1, 1, 1.0, False), ("SideTable", 1, 2, 1.0, False),
        ("Desk", 1, 1, 0.7, False), ("ArmChair", 1, 1, 0.4, False), ("Shelf", 1, 1, 0.5, False),
        ("FloorLamp", 1, 1, 0.4, False), ("HousePlant", 1, 1, 0.4, False),
        ("GarbageCan", 1, 1, 0.6, False), ("Drawer", 1, 2, 0.5, False),
    ],
    "bathroom": [
        ("Toilet", 1, 1, 1.0, False), ("SinkBasin", 1, 1, 1.0, False),
        ("CounterTopBath", 1, 1, 1.0, False), ("Bathtub", 1, 1, 1.0, False),
        ("TowelHolder", 1, 1, 1.0, False), ("Cabinet", 1, 2, 1.0, False),
        ("Drawer", 1, 1, 0.5, False), ("GarbageCan", 1, 1, 0.7, False),
        ("HousePlant", 1, 1, 0.3, False),
    ],
}
ROOM_SIZE = {"kitchen": (20, 28), "living_room": (20, 28), "bedroom": (18, 24), "bathroom": (16, 20)}
DEPTH = {"Bed": 6, "Sofa": 3, "Bathtub": 3, "Fridge": 3, "DiningTable": 3, "CoffeeTable": 2}
FIXTURE_HOSTS = {"Faucet": "SinkBasin", "StoveKnob": "StoveBurner"}
LAMP_HOSTS = ("Desk", "SideTable", "Dresser")
_FACING = {0: (0.0, 1.0), 90: (1.0, 0.0), 180: (0.0, -1.0), 270: (-1.0, 0.0)}
_NEIGHBOURS = ((1, 0), (-1, 0), (0, 1), (0, -1))


def split_seed(split: str, seed: int) -> tuple[int, int]:
    """(layout id, placement variant) of a scene seed in a split; see the module docstring."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; expected one of {SPLITS}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed <= MAX_SEED:
        raise ValueError(f"scene seed {seed!r} is out of range; expected an integer in 0..{MAX_SEED}")
    seed = int(seed)
    if split == "valid_unseen":
        return N_SEEN_LAYOUTS + seed % N_UNSEEN_LAYOUTS, seed // N_UNSEEN_LAYOUTS
    variant = 2 * (seed // N_SEEN_LAYOUTS) + (split == "valid_seen")
    return seed % N_SEEN_LAYOUTS, variant


def generate_scene(seed: int, split: str, room_type: str, required: dict[str, int] | None = None) -> World:
    """Build a room from a seed.

    Args:
        seed: scene seed, 0..MAX_SEED (interpreted per split, see module docstring).
        split: train | valid_seen | valid_unseen.
        room_type: kitchen | living_room | bedroom | bathroom.
        required: object type -> minimum count that must exist in the scene.

    Returns:
        The world with the agent at a free, reachable cell.
    """
    if room_type not in ROOMS:
        raise ValueError(f"unknown room type {room_type!r}; expected one of {ROOMS}")
    required = dict(required or {})
    for name, n in required.items():
        if name not in OBJECT_TYPES:
            raise ValueError(f"required object type {name!r} is not a known object type")
        if not isinstance(n, int) or n < 0 or n > 12:
            raise ValueError(f"required count for {name!r} must be an integer in 0..12, got {n!r}")
    layout_id, variant = split_seed(split, seed)
    world = _layout(room_type, layout_id, split, int(seed), required)
    _place_small(world, random.Random(f"place/{room_type}/{layout_id}/{variant}"), required)
    return world


# ----------------------------------------------------------------------------- layout


def _layout(room_type: str, layout_id: int, split: str, seed: int, required: dict[str, int]) -> World:
    rng = random.Random(f"layout/{room_type}/{layout_id}")
    plan = [(t, rng.randint(lo, hi), isl) for t, lo, hi, p, isl in ROOM_PLANS[room_type] if rng.random() < p]
    lo, hi = ROOM_SIZE[room_type]
    n_i, n_j = rng.randint(lo, hi), rng.randint(lo, hi)
    world = World(scene_id=f"{room_type}_L{layout_id:02d}", room_type=room_type, seed=seed, split=split,
                  n_i=n_i, n_j=n_j, objects={}, agent=AgentPose(0, 0),
                  blocked=np.zeros((n_i, n_j), dtype=bool))
    for t, count, island in plan:
        for _ in range(count):
            _add_furniture(world, rng, t, island)
    extra = _missing_furniture(world, required)
    for t, n in extra.items():
        erng = random.Random(f"extra/{room_type}/{layout_id}/{t}")
        for _ in range(n):
            _add_furniture(world, erng, t, t in ("DiningTable", "CoffeeTable"))
    _add_fixtures(world, rng, required)
    return world


def _missing_furniture(world: World, required: dict[str, int]) -> dict[str, int]:
    need: dict[str, int] = {}
    for name, n in required.items():
        kind = OBJECT_TYPES[name].kind
        if name in FIXTURE_HOSTS:
            name, kind = FIXTURE_HOSTS[name], "furniture"
        elif name == "DeskLamp":
            name, kind, n = "SideTable", "furniture", 1
        if kind == "furniture":
            have = len(world.of_type(name))
            need[name] = max(need.get(name, 0), n - have)
    return {k: v for k, v in need.items() if v > 0}


def _footprint(t: str) -> tuple[int, int]:
    w = max(1, round(OBJECT_TYPES[t].size[0] / GRID))
    return w, DEPTH.get(t, 2 if w >= 2 else 1)


def _wall_cells(world: World, facing: int, offset: int, w: int, d: int) -> list[tuple[int, int]] | None:
    n_i, n_j = world.n_i, world.n_j
    if facing in (0, 180):
        if offset + w > n_i:
            return None
        j0 = 0 if facing == 0 else n_j - d
        return [(i, j) for i in range(offset, offset + w) for j in range(j0, j0 + d)]
    if offset + w > n_j:
        return None
    i0 = 0 if facing == 90 else n_i - d
    return [(i, j) for i in range(i0, i0 + d) for j in range(offset, offset + w)]


def _add_furniture(world: World, rng: random.Random, t: str, island: bool) -> SimObject:
    w, d = _footprint(t)
    for attempt in range(120):
        facing = rng.choice((0, 180) if island else (0, 90, 180, 270))
        if island or attempt >= 100:
            i0 = rng.randint(2, max(2, world.n_i - w - 2))
            j0 = rng.randint(2, max(2, world.n_j - d - 2))
            cells = [(i, j) for i in range(i0, i0 + w) for j in range(j0, j0 + d)]
            ring = [(i, j) for i in range(i0 - 1, i0 + w + 1) for j in range(j0 - 1, j0 + d + 1)]
            if any(not _inside(world, c) or world.blocked[c] for c in ring):
                continue
        else:
            length = world.n_i if facing in (0, 180) else world.n_j
            cells = _wall_cells(world, facing, rng.randint(0, max(0, length - w)), w, d)
            if cells is None or any(world.blocked[c] for c in cells):
                continue
        for c in cells:
            world.blocked[c] = True
        obj = _furniture_object(t, facing, cells)
        free = _connected(world)
        if free is not None and _near_free(world, obj, free):
            obj.object_id = world.new_id(t)
            world.objects[obj.object_id] = obj
            return obj
        for c in cells:
            world.blocked[c] = False
    raise ValueError(f"scene {world.scene_id}: no room left for a {t} ({w}x{d} cells)")


def _furniture_object(t: str, facing: int, cells: list[tuple[int, int]]) -> SimObject:
    ot = OBJECT_TYPES[t]
    xs = [c[0] for c in cells]
    zs = [c[1] for c in cells]
    x = (min(xs) + max(xs) + 1) / 2 * GRID
    z = (min(zs) + max(zs) + 1) / 2 * GRID
    y = ot.height if ot.height > 0 else ot.size[1] / 2 + (0.6 if t == "Television" else 0.0)
    return SimObject("", t, (x, round(y, 4), z), facing=facing, cells=tuple(cells))


def _inside(world: World, c: tuple[int, int]) -> bool:
    return 0 <= c[0] < world.n_i and 0 <= c[1] < world.n_j


def free_component(world: World, start: tuple[int, int]) -> set[tuple[int, int]]:
    """Free cells reachable from ``start`` (4-connected)."""
    seen = {start}
    queue = deque([start])
    blocked = world.blocked
    while queue:
        i, j = queue.popleft()
        for di, dj in _NEIGHBOURS:
            c = (i + di, j + dj)
            if c not in seen and 0 <= c[0] < world.n_i and 0 <= c[1] < world.n_j and not blocked[c]:
                seen.add(c)
                queue.append(c)
    return seen


def _connected(world: World) -> np.ndarray | None:
    """The free-cell mask if the free cells form one 4-connected component and every piece is
    still reachable, else None (called for every furniture attempt: labelling in C, not a BFS)."""
    free = ~world.blocked
    if ndimage.label(free)[1] != 1:  # no free cell, or more than one component
        return None
    ok = all(_near_free(world, o, free) for o in world.objects.values() if o.cells)
    return free if ok else None


def _near_free(world: World, obj: SimObject, free: np.ndarray) -> bool:
    """Whether a cell of the mask ``free`` is within interaction distance of ``obj``: the test of
    :func:`_near_cells` (same window, same arithmetic) on an array."""
    x, _, z = obj.position
    ci, cj = int(x / GRID), int(z / GRID)
    r = int(INTERACT_DISTANCE / GRID) + 1
    i0, i1 = max(ci - r, 0), min(ci + r + 1, world.n_i)
    j0, j1 = max(cj - r, 0), min(cj + r + 1, world.n_j)
    if i0 >= i1 or j0 >= j1:
        return False
    di = ((np.arange(i0, i1) + 0.5) * GRID - x) ** 2
    dj = ((np.arange(j0, j1) + 0.5) * GRID - z) ** 2
    return bool((free[i0:i1, j0:j1] & (di[:, None] + dj[None, :] <= 1.4**2)).any())


def _near_cells(world: World, obj: SimObject, cells: set[tuple[int, int]]) -> list[tuple[int, int]]:
    """Cells of ``cells`` within interaction distance of ``obj`` (with a small margin)."""
    x, _, z = obj.position
    ci, cj = int(x / GRID), int(z / GRID)
    r = int(INTERACT_DISTANCE / GRID) + 1
    out = []
    for i in range(ci - r, ci + r + 1):
        for j in range(cj - r, cj + r + 1):
            if (i, j) in cells and ((i + 0.5) * GRID - x) ** 2 + ((j + 0.5) * GRID - z) ** 2 <= 1.4**2:
                out.append((i, j))
    return out


# ----------------------------------------------------------------------------- fixtures


def _add_fixtures(world: World, rng: random.Random, required: dict[str, int]) -> None:
    for basin in world.of_type("SinkBasin"):
        fx, fz = _FACING[basin.facing]
        x, y, z = basin.position
        _add_fixture(world, "Faucet", (x - 0.25 * fx, y + 0.2, z - 0.25 * fz), basin)
    for burner in world.of_type("StoveBurner"):
        fx, fz = _FACING[burner.facing]
        x, _, z = burner.position
        _add_fixture(world, "StoveKnob", (x + 0.1 * fx, 0.8, z + 0.1 * fz), burner)
    edge = [c for c in map(tuple, np.argwhere(~world.blocked).tolist())
            if c[0] in (0, world.n_i - 1) or c[1] in (0, world.n_j - 1)]
    for _ in range(max(1, required.get("LightSwitch", 0))):
        i, j = rng.choice(sorted(edge))
        x, z = (i + 0.5) * GRID, (j + 0.5) * GRID
        if j == 0:
            z = 0.02
        elif j == world.n_j - 1:
            z = world.n_j * GRID - 0.02
        elif i == 0:
            x = 0.02
        else:
            x = world.n_i * GRID - 0.02
        _add_fixture(world, "LightSwitch", (x, 1.3, z), None)
    hosts = [o for o in world.objects.values() if o.object_type in LAMP_HOSTS]
    n_lamps = required.get("DeskLamp", 1 if hosts and rng.random() < 0.5 else 0)
    for host in hosts[:n_lamps]:
        x, _, z = host.position
        _add_fixture(world, "DeskLamp", (x, host.type.height + 0.22, z), None)


def _add_fixture(world: World, t: str, pos: tuple[float, float, float], controls: SimObject | None) -> None:
    oid = world.new_id(t)
    world.objects[oid] = SimObject(oid, t, tuple(round(v, 4) for v in pos),
                                   controls=controls.object_id if controls else None)


# ----------------------------------------------------------------------------- small objects


def _place_small(world: World, rng: random.Random, required: dict[str, int]) -> None:
    free = list(map(tuple, np.argwhere(~world.blocked).tolist()))
    start = rng.choice(free)
    world.agent = AgentPose(start[0], start[1], rng.choice((0, 90, 180, 270)), 0)
    comp = free_component(world, start)
    reachable = [o for o in world.objects.values() if o.type.receptacle and o.cells and _near_cells(world, o, comp)]
    todo: list[tuple[str, bool]] = []
    for name, n in sorted(required.items()):
        if OBJECT_TYPES[name].kind in ("small", "sliced"):
            todo += [(name, True)] * max(0, n - len(world.of_type(name)))
    pool = sorted(n for n, t in OBJECT_TYPES.items() if t.kind == "small" and world.room_type in t.rooms)
    todo += [(rng.choice(pool), False) for _ in range(rng.randint(8, 14))]
    for name, must in todo:
        if not _place_one(world, rng, name, reachable) and must:
            raise ValueError(f"scene {world.scene_id}: no receptacle can hold the required {name}")


def _place_one(world: World, rng: random.Random, t: str, receptacles: list[SimObject]) -> bool:
    cands = [r for r in receptacles if r.object_type not in APPLIANCES and can_hold(r.object_type, t)
             and len(r.children) < r.type.capacity]
    if not cands:
        return False
    closed = [r for r in cands if r.object_type in CLOSED_BLOCKS]
    pool = closed if closed and rng.random() < 0.3 else [r for r in cands if r not in closed] or cands
    parent = rng.choice(pool)
    oid = world.new_id(t)
    obj = SimObject(oid, t, parent.position)
    obj.is_dirty = obj.type.dirtyable and rng.random() < 0.3
    world.objects[oid] = obj
    move_into(world, obj, parent)
    return True


# ----------------------------------------------------------------------------- task edits

STATE_FIELDS = ("is_open", "is_toggled", "is_dirty", "is_cooked", "is_sliced", "is_filled", "fill_liquid",
                "is_boiled", "is_broken")


def apply_initial_state(world: World, edits: list[dict], rng: random.Random) -> None:
    """Apply a task's initial-state edits.

    Each edit is ``{"type": T, "set": {field: value}, "count": "all" | int, "into": R}``; ``set``
    fields are :data:`STATE_FIELDS`; ``into`` (optional) moves the chosen objects into a
    receptacle of type ``R`` that has room. ``is_filled`` without ``fill_liquid`` means water.
    """
    for k, edit in enumerate(edits):
        unknown = set(edit) - {"type", "set", "count", "into"}
        if unknown or "type" not in edit:
            raise ValueError(f"initial_state edit {k}: expected keys type/set/count/into, got {sorted(edit)}")
        objs = sorted(world.of_type(edit["type"]), key=lambda o: o.object_id)
        count = edit.get("count", "all")
        if count != "all" and (not isinstance(count, int) or not 0 <= count <= len(objs)):
            raise ValueError(f"initial_state edit {k}: count {count!r} for {edit['type']} "
                             f"(the scene has {len(objs)})")
        chosen = objs if count == "all" else rng.sample(objs, count)
        values = dict(edit.get("set", {}))
        bad = set(values) - set(STATE_FIELDS)
        if bad:
            raise ValueError(f"initial_state edit {k}: unknown state fields {sorted(bad)}; use {STATE_FIELDS}")
        if values.get("is_filled") and "fill_liquid" not in values:
            values["fill_liquid"] = "water"
        for obj in chosen:
            for name, value in values.items():
                setattr(obj, name, value)
            if "into" in edit:
                _move_to_type(world, obj, edit["into"], k)


def _move_to_type(world: World, obj: SimObject, rtype: str, k: int) -> None:
    targets = [r for r in world.of_type(rtype) if len(r.children) < r.type.capacity and r is not obj]
    if not targets or not can_hold(rtype, obj.object_type):
        raise ValueError(f"initial_state edit {k}: cannot put {obj.object_id} into a {rtype}")
    if obj.parent:
        world.objects[obj.parent].children.remove(obj.object_id)
    move_into(world, obj, targets[0])


def build_world(task) -> World:
    """A task's start state: its scene plus its initial-state edits (what ``env.reset`` builds)."""
    world = generate_scene(task.scene_seed, task.split, task.room_type, task.required_objects)
    apply_initial_state(world, task.initial_state, random.Random(f"init/{task.task_id}/{task.scene_seed}"))
    return world
