"""Background of the egocentric frame: floor, walls and ceiling of the rectangular room.

Every pixel's ray is intersected analytically with the floor, the ceiling and the four walls. The
rays depend only on (yaw, pitch, size) and are cached; the per-position part is a handful of
vectorised operations, and finished backgrounds are kept in a small LRU cache keyed by the pose.
The floor is a checkerboard of 0.5 m tiles and the walls have 0.5 m vertical stripes, each wall
with its own tint, so that moving, panning, turning and looking up/down all change the frame.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from functools import lru_cache

import numpy as np

from icalkit.envs.household.camera import EYE_HEIGHT, FOV, camera_axes
from icalkit.envs.household.render_style import CEILING_HEIGHT, room_palette
from icalkit.envs.household.state import GRID, AgentPose

_CACHE_SIZE = 768
_cache: OrderedDict[tuple, np.ndarray] = OrderedDict()


def focal_length(size: int) -> float:
    """Focal length in pixels of the shared pinhole camera for a ``size``-pixel image."""
    return (size / 2) / math.tan(math.radians(FOV / 2))


_LIGHT_LEVELS = 32
_LIGHT_C0 = (1.12 - 0.45) * (_LIGHT_LEVELS - 1) / 0.55 + 0.5
_F32 = np.float32


@lru_cache(maxsize=64)
def _rays(yaw: int, pitch: int, size: int) -> dict:
    """Ray directions (unit depth) split by axis, and per-row plane hits, for one view direction.

    For yaws that are multiples of 90 degrees the camera's right vector is a world axis, so the
    ray component along that "lateral" axis depends only on the image column and the components
    along the "forward" axis and y depend only on the row: per-pixel work is broadcasts of a row
    and a column vector.
    """
    forward, right, up = camera_axes(AgentPose(0, 0, yaw, pitch))
    s = ((np.arange(size, dtype=np.float64) + 0.5) - size / 2) / focal_length(size)
    lat = 0 if abs(right[0]) > 0.5 else 2
    fwd = 2 - lat
    d_lat = s * right[lat]
    d_fwd = forward[fwd] - s * up[fwd]
    d_y = forward[1] - s * up[1]
    d_lat[d_lat == 0] = 1e-9
    d_fwd[d_fwd == 0] = 1e-9
    norm = np.sqrt(d_lat[None, :] ** 2 + d_fwd[:, None] ** 2 + d_y[:, None] ** 2)
    with np.errstate(divide="ignore"):
        t_plane = np.where(d_y < 0, -EYE_HEIGHT / d_y, np.where(d_y > 0, (CEILING_HEIGHT - EYE_HEIGHT) / d_y, 1e9))
        t_low = np.where(d_y < 0, (0.12 - EYE_HEIGHT) / d_y, 1e9)  # ray below baseboard height
    return {
        "lat": lat, "d_lat": d_lat, "d_fwd": d_fwd, "t_plane": t_plane, "floor": d_y < 0,
        "d_lat32": d_lat.astype(_F32)[None, :], "d_fwd32": d_fwd.astype(_F32)[:, None],
        "t_low32": t_low.astype(_F32)[:, None],
        "k": (norm * (0.07 * (_LIGHT_LEVELS - 1) / 0.55)).astype(_F32),
    }


@lru_cache(maxsize=8)
def _lut(room_type: str) -> np.ndarray:
    """(13 * levels, 3) uint8 colours: material ``m`` at light level ``l`` is row ``m * levels + l``.

    Materials: 0/1 floor tiles, 2/3 ceiling, 4..11 walls (4 + 2 * wall index + stripe), 12 baseboard.
    """
    pal = room_palette(room_type)
    pal = np.concatenate([pal[:3], pal[2:3], pal[3:]])
    levels = 0.45 + 0.55 * np.arange(_LIGHT_LEVELS, dtype=np.float32) / (_LIGHT_LEVELS - 1)
    return (pal[:, None, :] * levels[None, :, None]).reshape(-1, 3).astype(np.uint8)


def _compute(n_i: int, n_j: int, room_type: str, pose: AgentPose, size: int) -> np.ndarray:
    r = _rays(pose.yaw, pose.pitch, size)
    # wall index: 0 x=0, 1 x=W, 2 z=0, 3 z=D
    if r["lat"] == 0:
        p_lat, p_fwd, e_lat, e_fwd, w_lat, w_fwd = pose.x, pose.z, n_i * GRID, n_j * GRID, 0, 2
    else:
        p_lat, p_fwd, e_lat, e_fwd, w_lat, w_fwd = pose.z, pose.x, n_j * GRID, n_i * GRID, 2, 0
    pos_lat, pos_fwd = r["d_lat"] > 0, r["d_fwd"] > 0
    t_lat = (np.where(pos_lat, e_lat, 0.0) - p_lat) / r["d_lat"]  # per column
    t_fwd = (np.where(pos_fwd, e_fwd, 0.0) - p_fwd) / r["d_fwd"]  # per row
    row_wall = t_fwd < r["t_plane"]
    t_row = np.minimum(t_fwd, r["t_plane"]).astype(_F32)[:, None]
    base_col = (4 + 2 * (w_lat + pos_lat)).astype(np.int32)[None, :]
    base_row = np.where(row_wall, 4 + 2 * (w_fwd + pos_fwd), np.where(r["floor"], 0, 2)).astype(np.int32)[:, None]
    floor_row = (~row_wall & r["floor"]).astype(np.int32)[:, None]
    lat_hit = t_lat.astype(_F32)[None, :] < t_row
    t = np.minimum(t_lat.astype(_F32)[None, :], t_row)
    # 0.5 m tiles / stripes: hit coordinates are >= 0 inside the room, so truncation is floor
    g_lat = ((t * r["d_lat32"] + _F32(p_lat)) * 2).astype(np.int32)
    g_fwd = ((t * r["d_fwd32"] + _F32(p_fwd)) * 2).astype(np.int32)
    stripe = np.where(lat_hit, g_fwd, g_lat + g_fwd * floor_row) & 1
    mat = np.where(lat_hit, base_col, base_row) + stripe
    wall = lat_hit | row_wall[:, None]
    mat = np.where(wall & (t > r["t_low32"]), 12, mat)
    level = np.clip(_F32(_LIGHT_C0) - t * r["k"], 0, _LIGHT_LEVELS - 1).astype(np.int32)
    return _lut(room_type).take(mat * _LIGHT_LEVELS + level, axis=0)


def background(n_i: int, n_j: int, room_type: str, pose: AgentPose, size: int) -> np.ndarray:
    """The (size, size, 3) uint8 room background seen from ``pose`` (cached; do not modify).

    Args:
        n_i: room size in grid cells along x.
        n_j: room size in grid cells along z.
        room_type: selects the palette (kitchen, living_room, bedroom, bathroom).
        pose: agent pose; the camera is at the cell centre, ``EYE_HEIGHT`` above the floor.
        size: image side in pixels.
    """
    key = (n_i, n_j, room_type, pose.i, pose.j, pose.yaw, pose.pitch, size)
    img = _cache.get(key)
    if img is None:
        img = _compute(n_i, n_j, room_type, pose, size)
        img.setflags(write=False)
        _cache[key] = img
        if len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    else:
        _cache.move_to_end(key)
    return img


def clear_cache() -> None:
    """Drop all cached backgrounds (for benchmarks that measure the uncached cost)."""
    _cache.clear()
