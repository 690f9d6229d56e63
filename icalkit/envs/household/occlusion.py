"""Line of sight: furniture between the camera and a point hides it, as raycasts do in AI2-THOR.

A furniture piece is a box over its grid cells from the floor to :func:`render_style.furniture_top`
(the same box the renderer draws). The sight line from the eye to the point is sampled every
5 cm over the floor; it is blocked where it passes over a cell of a piece whose top is above the
line there. The target itself, the receptacles holding it, and pieces sharing their cells or the
target point's cell (a sink in a counter, a knob on a stove) never block it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from icalkit.envs.household.camera import EYE_HEIGHT
from icalkit.envs.household.layout_cache import layout_table
from icalkit.envs.household.render_style import furniture_top
from icalkit.envs.household.state import GRID, AgentPose, SimObject, World

Cell = tuple[int, int]
STEP = 0.05  # metres between samples of the sight line
TOLERANCE = 0.02  # a box must rise this far above the sight line to block it

def cell_owners(world: World) -> dict[Cell, tuple[tuple[str, float], ...]]:
    """Grid cell -> ((furniture id, box top), ...); memoised per furniture layout."""
    table = layout_table(world, "cell_owners")
    if "owners" not in table:
        owners: dict[Cell, list[tuple[str, float]]] = {}
        for o in world.objects.values():
            if o.cells and not o.type.pickupable:
                top = furniture_top(o.object_type, o.type.size[1])
                for c in o.cells:
                    owners.setdefault(c, []).append((o.object_id, top))
        table["owners"] = {c: tuple(v) for c, v in owners.items()}
    return table["owners"]


def cell_of(x: float, z: float) -> Cell:
    """Grid cell containing floor point (x, z)."""
    return int(math.floor(x / GRID)), int(math.floor(z / GRID))


def transparent_to(world: World, obj: SimObject, points: Iterable[tuple[float, float, float]] = ()) -> frozenset[str]:
    """Ids that cannot hide ``obj``: itself, its receptacles, pieces sharing their cells or a target point's cell."""
    owners = cell_owners(world)
    chain = [obj]
    while chain[-1].parent is not None and chain[-1].parent in world.objects:
        chain.append(world.objects[chain[-1].parent])
    ids = {o.object_id for o in chain}
    cells = {c for o in chain for c in o.cells} | {cell_of(p[0], p[2]) for p in points}
    ids.update(oid for c in cells for oid, _ in owners.get(c, ()))
    return frozenset(ids)


def line_of_sight(world: World, pose: AgentPose, point: tuple[float, float, float],
                  transparent: frozenset[str]) -> bool:
    """Whether no furniture box (other than ``transparent`` ones) rises above the eye→point line."""
    owners = cell_owners(world)
    ex, ez = pose.x, pose.z
    dx, dy, dz = point[0] - ex, point[1] - EYE_HEIGHT, point[2] - ez
    n = int(math.hypot(dx, dz) / STEP)
    floor, get = math.floor, owners.get
    for k in range(1, n):  # cell_of inlined (the hot loop of visibility)
        t = k / n
        here = get((floor((ex + t * dx) / GRID), floor((ez + t * dz) / GRID)))
        if here:
            line = EYE_HEIGHT + t * dy + TOLERANCE
            for oid, top in here:
                if top > line and oid not in transparent:
                    return False
    return True
