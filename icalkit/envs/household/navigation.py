"""Shortest primitive-action paths on the occupancy grid (BFS over cell and yaw).

:func:`path_to_object` returns the Forward / Turn / Look actions that bring the agent to a free
cell within interaction distance of an object, facing it, with a camera pitch at which the
simulator sees it (:func:`reach.sees`: in the camera frustum with a line of sight past the
furniture), so the next interaction on that object succeeds (unless the object is inside a closed
receptacle, which navigation cannot fix).
"""

from __future__ import annotations

from collections import deque

import numpy as np

from icalkit.envs.household.layout_cache import layout_table
from icalkit.envs.household.reach import reach_distance, sees
from icalkit.envs.household.state import GRID, INTERACT_DISTANCE, PITCHES, AgentPose, SimObject, World

_STEP = {0: (0, 1), 90: (1, 0), 180: (0, -1), 270: (-1, 0)}


class NavigationError(ValueError):
    """No pose from which the object can be interacted with is reachable."""


def free_cells(world: World) -> frozenset[tuple[int, int]]:
    """Unblocked grid cells (memoised per furniture layout)."""
    table = layout_table(world, "free_cells")
    if "cells" not in table:
        table["cells"] = frozenset((int(i), int(j)) for i, j in np.argwhere(~world.blocked))
    return table["cells"]


def interaction_poses(world: World, obj: SimObject, margin: float = 0.02) -> dict[tuple[int, int, int], list[int]]:
    """(i, j, yaw) -> pitches from which ``obj`` is seen and within interaction distance.

    Memoised per furniture layout, object id, position, receptacle and footprint (furniture never
    moves, so the line of sight past it is fixed too).
    """
    table = layout_table(world, "interaction_poses", max_entries=4096)
    key = (obj.object_id, obj.position, obj.parent, obj.cells, margin)
    if key not in table:
        table[key] = _compute_poses(world, obj, margin)
    return table[key]


def _compute_poses(world: World, obj: SimObject, margin: float) -> dict[tuple[int, int, int], list[int]]:
    x, _, z = obj.position
    limit = INTERACT_DISTANCE - margin
    r = int((INTERACT_DISTANCE + _half_extent(obj)) / GRID) + 1
    ci, cj = int(x / GRID), int(z / GRID)
    free = free_cells(world)
    out: dict[tuple[int, int, int], list[int]] = {}
    for i in range(ci - r, ci + r + 1):
        for j in range(cj - r, cj + r + 1):
            if (i, j) not in free or reach_distance(obj, AgentPose(i, j)) > limit:
                continue
            for yaw in _STEP:
                pitches = [p for p in PITCHES if sees(obj, AgentPose(i, j, yaw, p), world)]
                if pitches:
                    out[(i, j, yaw)] = pitches
    return out


def _half_extent(obj: SimObject) -> float:
    if not obj.cells:
        return 0.0
    span_i = max(c[0] for c in obj.cells) - min(c[0] for c in obj.cells) + 1
    span_j = max(c[1] for c in obj.cells) - min(c[1] for c in obj.cells) + 1
    return max(span_i, span_j) * GRID / 2


def path_to_object(world: World, object_id: str) -> list[str]:
    """Primitive actions from the agent's pose to an interaction pose for ``object_id``.

    Raises:
        KeyError: no such object.
        NavigationError: no interaction pose is reachable.
    """
    if object_id not in world.objects:
        raise KeyError(f"There is no object called {object_id!r}.")
    goals = interaction_poses(world, world.objects[object_id])
    if not goals:
        raise NavigationError(f"No free cell within {INTERACT_DISTANCE} m of {object_id} sees it.")
    a = world.agent
    free = free_cells(world)
    start = (a.i, a.j, a.yaw)
    parent: dict[tuple[int, int, int], tuple[tuple[int, int, int], str] | None] = {start: None}
    frontier = deque([(start, 0)])
    best: tuple[int, tuple[int, int, int], int] | None = None
    while frontier:
        state, depth = frontier.popleft()
        if best is not None and depth >= best[0]:
            break
        if state in goals:
            pitch = min(goals[state], key=lambda p: abs(p - a.pitch))
            cost = depth + abs(pitch - a.pitch) // 30
            if best is None or cost < best[0]:
                best = (cost, state, pitch)
        i, j, yaw = state
        di, dj = _STEP[yaw]
        for nxt, act in (((i + di, j + dj, yaw), "Forward"), ((i, j, (yaw - 90) % 360), "Turn Left"),
                         ((i, j, (yaw + 90) % 360), "Turn Right")):
            if nxt not in parent and (act != "Forward" or (nxt[0], nxt[1]) in free):
                parent[nxt] = (state, act)
                frontier.append((nxt, depth + 1))
    if best is None:
        raise NavigationError(f"{object_id} cannot be reached from the agent's position.")
    _, state, pitch = best
    actions: list[str] = []
    node = parent[state]
    while node is not None:
        prev, act = node
        actions.append(act)
        node = parent[prev]
    actions.reverse()
    look = "Look Down" if pitch > a.pitch else "Look Up"
    return actions + [look] * (abs(pitch - a.pitch) // 30)
