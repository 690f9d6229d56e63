"""Shortest paths over THOR's reachable positions (``GetReachablePositions``) as TEACh primitives.

The grid is THOR's (0.25 m); headings are multiples of 90 degrees (0 = +z, 90 = +x). A goal is a
reachable cell within ``max_distance`` of the target whose heading faces it; the path is a
breadth-first search over (cell, heading) states with Forward / Turn Left / Turn Right moves.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable, Mapping

GRID = 0.25
HEADINGS = (0, 90, 180, 270)
_STEP = {0: (0, 1), 90: (1, 0), 180: (0, -1), 270: (-1, 0)}


class NoPath(RuntimeError):
    """No reachable pose sees the target (the message names it)."""


def _cell(p: Mapping[str, float]) -> tuple[int, int]:
    return math.floor(p["x"] / GRID + 1e-6), math.floor(p["z"] / GRID + 1e-6)


def facing(position: Mapping[str, float], target: Mapping[str, float]) -> int:
    """The heading (0/90/180/270) pointing most directly from ``position`` at ``target``."""
    dx, dz = target["x"] - position["x"], target["z"] - position["z"]
    return round(math.degrees(math.atan2(dx, dz)) / 90) % 4 * 90


def plan_path(reachable: Iterable[Mapping[str, float]], start: Mapping[str, float], heading: float,
              target: Mapping[str, float], max_distance: float = 1.5, name: str = "the target") -> list[str]:
    """TEACh primitives from the agent's pose to a reachable pose facing ``target`` within reach.

    Raises:
        NoPath: no reachable cell within ``max_distance`` of the target, or none connected to the start.
    """
    cells = {_cell(p): p for p in reachable}
    begin = (_cell(start), int(round(heading / 90)) % 4 * 90)
    goals = {c: facing(p, target) for c, p in cells.items()
             if math.hypot(target["x"] - p["x"], target["z"] - p["z"]) <= max_distance}
    if not goals:
        raise NoPath(f"no reachable position within {max_distance} m of {name}")
    prev: dict[tuple, tuple | None] = {begin: None}
    moves: dict[tuple, str] = {}
    queue = deque([begin])
    while queue:
        state = queue.popleft()
        cell, head = state
        if goals.get(cell) == head:
            path = []
            while prev[state] is not None:
                path.append(moves[state])
                state = prev[state]
            return path[::-1]
        step = _STEP[head]
        for nxt, move in ((((cell[0] + step[0], cell[1] + step[1]), head), "Forward"),
                          ((cell, (head - 90) % 360), "Turn Left"), ((cell, (head + 90) % 360), "Turn Right")):
            if nxt not in prev and nxt[0] in cells:
                prev[nxt], moves[nxt] = state, move
                queue.append(nxt)
    raise NoPath(f"{name} cannot be reached from ({start['x']:.2f}, {start['z']:.2f}) over the reachable positions")
