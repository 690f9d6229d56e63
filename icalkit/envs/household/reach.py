"""Where the agent reaches an object: the nearest point of a furniture footprint, else its centre.

Large furniture (a 2 m counter, a bed) is interactable from anywhere along it, as in AI2-THOR,
where distance is measured to the object's closest point. Simulator and navigation both use
these functions so that "navigation ends in an interactable pose" holds by construction.

:func:`view_test` is :func:`camera.in_view` (margin 0) with the camera axes computed once per
pose: the same arithmetic in the same order, so results are identical (checked by a test).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import lru_cache

from icalkit.envs.household.camera import EYE_HEIGHT, FOV, NEAR, camera_axes
from icalkit.envs.household.layout_cache import layout_table
from icalkit.envs.household.occlusion import line_of_sight, transparent_to
from icalkit.envs.household.state import GRID, AgentPose, SimObject, World

Point = tuple[float, float, float]
_TAN = math.tan(math.radians(FOV / 2))


@lru_cache(maxsize=4096)
def _bounds(cells: tuple[tuple[int, int], ...]) -> tuple[float, float, float, float]:
    """(x_lo, x_hi, z_lo, z_hi) of a footprint, 5 cm inside its edges."""
    lo_i = min(c[0] for c in cells) * GRID + 0.05
    hi_i = (max(c[0] for c in cells) + 1) * GRID - 0.05
    lo_j = min(c[1] for c in cells) * GRID + 0.05
    hi_j = (max(c[1] for c in cells) + 1) * GRID - 0.05
    return lo_i, hi_i, lo_j, hi_j


def reach_point(obj: SimObject, x: float, z: float) -> tuple[float, float, float]:
    """Point of ``obj`` nearest to floor position (x, z), at the object's height."""
    if not obj.cells:
        return obj.position
    lo_i, hi_i, lo_j, hi_j = _bounds(obj.cells)
    return (min(max(x, lo_i), hi_i), obj.position[1], min(max(z, lo_j), hi_j))


def reach_distance(obj: SimObject, pose: AgentPose) -> float:
    """Horizontal distance (m) from the agent to the nearest point of ``obj``."""
    px, _, pz = reach_point(obj, pose.x, pose.z)
    return math.hypot(px - pose.x, pz - pose.z)


def surface_points(obj: SimObject, pose: AgentPose) -> list[tuple[float, float, float]]:
    """Points that stand for a furniture piece: nearest point, corners of its top, edge midpoints."""
    lo_i, hi_i, lo_j, hi_j = _bounds(obj.cells)
    y = obj.position[1]
    mid_i, mid_j = (lo_i + hi_i) / 2, (lo_j + hi_j) / 2
    pts = [reach_point(obj, pose.x, pose.z)]
    pts += [(a, y, b) for a in (lo_i, mid_i, hi_i) for b in (lo_j, mid_j, hi_j) if (a, b) != (mid_i, mid_j)]
    return pts


@lru_cache(maxsize=16384)
def _view_test(i: int, j: int, yaw: int, pitch: int) -> Callable[[Point], bool]:
    pose = AgentPose(i, j, yaw, pitch)
    forward, right, up = camera_axes(pose)
    px, pz = pose.x, pose.z

    def test(point: Point) -> bool:
        dx, dy, dz = point[0] - px, point[1] - EYE_HEIGHT, point[2] - pz
        depth = dx * forward[0] + dy * forward[1] + dz * forward[2]
        if depth <= NEAR:
            return False
        half = _TAN * depth * (1 + 0.0)
        if abs(dx * right[0] + dy * right[1] + dz * right[2]) > half:
            return False
        return abs(dx * up[0] + dy * up[1] + dz * up[2]) <= half

    return test


def view_test(pose: AgentPose) -> Callable[[Point], bool]:
    """``point -> camera.in_view(pose, point)`` for a fixed pose (cached per pose)."""
    return _view_test(pose.i, pose.j, pose.yaw, pose.pitch)


def sees(obj: SimObject, pose: AgentPose, world: World | None = None) -> bool:
    """Whether the camera sees the object's centre or (furniture) any point of its top surface.

    With ``world``, a point also needs a line of sight past the furniture (:mod:`occlusion`);
    furniture never moves, so that answer is memoised per layout, object place and pose (and the
    line of sight per layout, object place, cell and point).
    """
    if world is None:
        return _sees(obj, pose, None)
    table = layout_table(world, "sees", max_entries=200_000)
    key = (obj.object_id, obj.position, obj.parent, pose.i, pose.j, pose.yaw, pose.pitch)
    hit = table.get(key)
    if hit is None:
        hit = table[key] = _sees(obj, pose, world)
    return hit


def _sees(obj: SimObject, pose: AgentPose, world: World | None) -> bool:
    test = view_test(pose)
    clear: frozenset[str] | None = None
    # the line of sight does not depend on yaw and pitch: one answer serves all 16 views of a cell
    sight = layout_table(world, "line_of_sight", max_entries=400_000) if world is not None else {}

    def seen(point: Point) -> bool:
        nonlocal clear
        if not test(point):
            return False
        if world is None:
            return True
        key = (pose.i, pose.j, point, obj.object_id, obj.position, obj.parent)
        hit = sight.get(key)
        if hit is None:
            if clear is None:
                clear = transparent_to(world, obj, (obj.position,))
            hit = sight[key] = line_of_sight(world, pose, point, clear)
        return hit

    if seen(obj.position):
        return True
    return bool(obj.cells) and any(seen(p) for p in surface_points(obj, pose))
