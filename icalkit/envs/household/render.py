"""Egocentric RGB + instance-segmentation renderer of the household simulator (pure numpy).

The room background (floor, walls, ceiling) comes from :mod:`render_background`. Every visible
object is an axis-aligned box (geometry rules in :mod:`render_style`) whose 8 corners are projected
with the shared pinhole camera of :mod:`camera` in one vectorised step; boxes are then painted far
to near (a receptacle before what it holds) as screen rectangles with a lit top face, a type
specific shape/details, and overlays for their state (open, toggled, dirty, cooked, sliced,
filled, broken). The held object is drawn large at the bottom right. Objects inside closed
receptacles are not drawn.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from icalkit.envs.household import render_style as st
from icalkit.envs.household.camera import EYE_HEIGHT, NEAR, camera_axes, project
from icalkit.envs.household.catalog import OBJECT_TYPES
from icalkit.envs.household.render_background import background, focal_length
from icalkit.envs.household.render_canvas import Canvas, sub_rect
from icalkit.envs.household.state import GRID, SimObject, World

# corner -> columns (x, y, z) of a box (x0, x1, y0, y1, z0, z1); bottom corners 0..3, top 4..7
_CORNERS = np.array([[x, y, z] for y in (2, 3) for z in (4, 5) for x in (0, 1)])
# yaw -> (corners of the box face that faces the camera, box column the camera must be beyond, sign)
_NEAR_FACE = {0: ([0, 1, 4, 5], 4, 1), 180: ([2, 3, 6, 7], 5, -1), 90: ([0, 2, 4, 6], 0, 1), 270: ([1, 3, 5, 7], 1, -1)}


def object_box(obj: SimObject) -> tuple[float, float, float, float, float, float]:
    """World-space box ``(x0, x1, y0, y1, z0, z1)`` in metres the renderer draws for ``obj``.

    Furniture: the bounding box of its cells (less a small margin), from the floor to the top of
    the piece (stand included). Anything else: a box centred on its position.
    """
    return _box(obj.object_type, obj.position, obj.facing, obj.cells)


@lru_cache(maxsize=16384)
def _box(object_type: str, position: tuple[float, float, float], facing: int,
         cells: tuple[tuple[int, int], ...]) -> tuple[float, float, float, float, float, float]:
    t = OBJECT_TYPES[object_type]
    w, h = t.size
    x, y, z = position
    if t.kind == "furniture":
        top = st.furniture_top(object_type, h)
        if cells:
            m = st.FURNITURE_MARGIN
            i0, i1 = min(c[0] for c in cells), max(c[0] for c in cells) + 1
            j0, j1 = min(c[1] for c in cells), max(c[1] for c in cells) + 1
            return (i0 * GRID + m, i1 * GRID - m, 0.0, top, j0 * GRID + m, j1 * GRID - m)
        return (x - w / 2, x + w / 2, 0.0, top, z - w / 2, z + w / 2)
    depth = st.FIXTURE_DEPTH if t.kind == "fixture" else max(w * 0.2, 0.03) if object_type in st.STICK else w
    half_x, half_z = (w / 2, depth / 2) if facing % 180 == 0 else (depth / 2, w / 2)
    y0 = max(y - h / 2, 0.0)
    return (x - half_x, x + half_x, y0, y0 + h, z - half_z, z + half_z)


def is_hidden(world: World, obj: SimObject) -> bool:
    """True if ``obj`` is held (or carried by the held object) or inside a closed receptacle."""
    return obj.object_id in hidden_ids(world)


def hidden_ids(world: World) -> set[str]:
    """Ids of the objects not drawn in the room: the held object and its contents, and everything
    (transitively) inside a closed openable receptacle. Follows ``parent`` links."""
    kids: dict[str, list[str]] = {}
    roots: list[str] = []
    for o in world.objects.values():
        if o.parent is not None:
            kids.setdefault(o.parent, []).append(o.object_id)
        if o.object_id == world.held or o.is_picked_up:
            roots.append(o.object_id)
    for pid in kids:
        p = world.objects.get(pid)
        if p is not None and p.type.openable and not p.is_open:
            roots.extend(kids[pid])
    hidden: set[str] = set()
    while roots:
        oid = roots.pop()
        if oid not in hidden:
            hidden.add(oid)
            roots.extend(kids.get(oid, ()))
    return hidden


def _shape_of(obj: SimObject) -> str:
    t = obj.object_type
    return "round" if t in st.ROUND else "cylinder" if t in st.CYLINDER else "box"


def _body_colour(obj: SimObject) -> tuple[int, int, int]:
    c = obj.type.color
    if obj.is_boiled:
        c = (235, 215, 140)
    if obj.is_cooked:
        c = st.cooked_colour(c)
    return c


def _draw_states(cv: Canvas, obj: SimObject, face: tuple[int, int, int, int],
                 top: tuple[int, int, int, int] | None, k: int, powered: bool) -> None:
    """State overlays on an object's front ``face`` (and ``top`` face, if visible)."""
    shape = _shape_of(obj)
    if obj.is_sliced or obj.type.kind == "sliced":
        cv.fill(face, st.shade(_body_colour(obj), 0.6), 0, shape, "sliced")
    if obj.is_dirty:
        cv.fill(face, st.DIRT, 0, shape, "dirty")
        if top is not None:
            cv.fill(top, st.DIRT, 0, "box", "dirty")
    if obj.is_broken:
        cv.fill(face, (20, 20, 20), 0, shape, "broken")
    if obj.is_filled:
        liquid = st.LIQUID.get(obj.fill_liquid or "water", st.LIQUID["water"])
        cv.fill(top if top is not None and top[3] - top[1] >= 2 else sub_rect(face, (0.1, 0.0, 0.9, 0.4)), liquid)
    if obj.is_open and obj.type.openable:
        h = face[3] - face[1]
        if obj.type.kind == "small":  # lid / screen raised above the object
            lid = (face[0], face[1] - max(2, int(h * 1.5)), face[2], face[1])
            cv.fill(lid, st.shade(obj.type.color, 0.8), k)
            cv.fill(sub_rect(lid, (0.1, 0.15, 0.9, 0.9)), st.GLOW["Laptop"] if powered else st.INTERIOR)
        else:  # dark interior on the left, the door swung towards the viewer on the right
            cv.fill(sub_rect(face, (0.06, 0.05, 0.72, 0.95)), st.INTERIOR)
            door = sub_rect(face, (0.76, 0.0, 1.0, 1.0))
            cv.fill(door, (20, 20, 20))
            cv.fill(sub_rect(door, (0.15, 0.02, 0.85, 0.98)), st.shade(obj.type.color, 0.8))
            cv.fill(sub_rect(door, (0.35, 0.3, 0.65, 0.45)), (90, 90, 95))
    if powered:
        if obj.object_type in st.GLOW and not (obj.is_open and obj.type.kind == "small"):
            cv.fill(sub_rect(face, st.GLOW_RECT.get(obj.object_type, (0.0, 0.0, 1.0, 1.0))), st.GLOW[obj.object_type])
            if top is not None and obj.object_type in st.TOP_GLOW:
                cv.fill(sub_rect(top, (0.1, 0.1, 0.9, 0.9)), st.GLOW[obj.object_type])
        side = max(2, (face[2] - face[0]) // 6)
        cv.fill((face[2] - side - 1, face[1] + 1, face[2] - 1, face[1] + 1 + side), st.INDICATOR_ON)


def _draw_object(cv: Canvas, obj: SimObject, face: tuple[int, int, int, int],
                 top: tuple[int, int, int, int] | None, k: int, powered: bool, water: bool,
                 front: tuple[int, int] | None = None) -> None:
    """Paint one object.

    Args:
        face: screen rectangle (u0, v0, u1, v1) of its sides; ``top``: of its top face, if seen.
        front: u range of the face turned to the camera (furniture: the rest of ``face`` is drawn
            as darker side faces); None: the whole ``face``.
    """
    colour = _body_colour(obj)
    kind = obj.type.kind
    if kind in ("furniture", "fixture"):
        full = (face[0], top[1] if top else face[1], face[2], face[3])
        cv.fill(full, st.shade(colour, 0.55), k)
        if front is not None and front[1] - front[0] >= 2 and (front[0] > face[0] + 1 or front[1] < face[2] - 1):
            cv.fill((face[0] + 1, face[1], face[2] - 1, face[3] - 1), st.shade(colour, 0.78), k)  # sides
            face = (front[0], face[1], front[1], face[3])
        big = face[2] - face[0] >= 4 and face[3] - face[1] >= 4
        if obj.object_type in st.STAND:  # appliance on a counter-like stand
            base, stand_colour = st.STAND[obj.object_type]
            h = obj.type.size[1]
            split = face[1] + max(1, int(round((face[3] - face[1]) * h / (base + h))))
            cv.fill((face[0] + 1, split + 1, face[2] - 1, face[3] - 1) if big else (face[0], split, face[2], face[3]),
                    stand_colour, k)
            face = (face[0], face[1], face[2], split)
        inner = (face[0] + 1, face[1], face[2] - 1, face[3] - 1) if big else face
        cv.fill(inner, colour, k)
        if top is not None:
            cv.fill((top[0] + 1, top[1] + 1, top[2] - 1, top[3]) if big else top, st.shade(colour, 1.15), k)
        decor_on = top if obj.object_type in st.TOP_DECOR else face
        if decor_on is not None:
            for frac, c in st.DECOR.get(obj.object_type, ()):
                cv.fill(sub_rect(decor_on, frac), c)
        if water:  # sink under a running faucet / burner under a lit knob
            region = top if top is not None else sub_rect(face, (0.1, 0.0, 0.9, 0.4))
            cv.fill(region, st.LIQUID["water"] if obj.object_type == "SinkBasin" else st.GLOW["StoveBurner"])
    else:
        shape = _shape_of(obj)
        full = (face[0], top[1] if top else face[1], face[2], face[3])
        cv.fill(full, colour, k, shape)
        if top is not None and shape != "round" and top[3] - top[1] >= 2:
            cv.fill(top, st.shade(colour, 1.2), k)
        accent = st.ACCENT.get(obj.object_type)
        if obj.object_type in st.STICK:  # dark handle on one end
            cv.fill(sub_rect(full, (0.0, 0.0, 0.4, 1.0)), accent or (40, 40, 40))
        elif accent is not None and face[2] - face[0] >= 3:
            cv.fill(sub_rect(full, (0.4, 0.0, 0.6, 0.25)), accent)
    _draw_states(cv, obj, face, top, k, powered)


def _project(world: World, boxes: np.ndarray, size: int) -> tuple[np.ndarray, ...]:
    """Project box corners.

    Args:
        boxes: (N, 6) world boxes ``(x0, x1, y0, y1, z0, z1)``.

    Returns:
        Per box (N,) arrays: u min/max, v min/max of the top corners, v max of the bottom corners,
        v min, max depth, the horizontal distance of the nearest point (drawing order), and u
        min/max of the face turned towards the camera (NaN if that face is not seen).
    """
    pose = world.agent
    rot = np.array(camera_axes(pose))  # rows: forward, right, up
    corners = boxes[:, _CORNERS] - (pose.x, EYE_HEIGHT, pose.z)  # (N, 8, 3)
    cam = corners @ rot.T  # (N, 8, 3): depth, right, up
    dep = cam[..., 0]
    scale = focal_length(size) / np.maximum(dep, NEAR)
    lo, hi = -4.0 * size, 5.0 * size
    u = np.minimum(np.maximum(size / 2 + cam[..., 1] * scale, lo), hi)
    v = np.minimum(np.maximum(size / 2 - cam[..., 2] * scale, lo), hi)
    idx, col, sign = _NEAR_FACE[pose.yaw % 360]
    cam_fwd = pose.z if col >= 4 else pose.x
    facing = (sign * (boxes[:, col] - cam_fwd) > 0) & (dep[:, idx].min(1) > NEAR)
    un = u[:, idx]
    return (u.min(1), u.max(1), v[:, 4:].min(1), v[:, 4:].max(1), v[:, :4].max(1), v.min(1),
            dep.max(1), _floor_distance(world, boxes), np.where(facing, un.min(1), np.nan),
            np.where(facing, un.max(1), np.nan))


def _floor_distance(world: World, boxes: np.ndarray) -> np.ndarray:
    """Horizontal distance from the agent to the nearest point of each box (painter's order)."""
    x, z = world.agent.x, world.agent.z
    px = np.minimum(np.maximum(x, boxes[:, 0]), boxes[:, 1]) - x
    pz = np.minimum(np.maximum(z, boxes[:, 4]), boxes[:, 5]) - z
    return np.sqrt(px * px + pz * pz)


def _root_and_level(world: World, obj: SimObject) -> tuple[str, int]:
    """Outermost receptacle holding ``obj`` (a fixture counts as held by what it controls)."""
    level, cur = 0, obj
    while level < 16:
        up = cur.parent or (cur.controls if cur.type.kind == "fixture" else None)
        if not up or up not in world.objects:
            break
        cur = world.objects[up]
        level += 1
    return cur.object_id, level


def _faucet_stream(cv: Canvas, world: World, obj: SimObject, box: tuple, k: int) -> None:
    """Blue water column from a running faucet down into the basin."""
    x, z = (box[0] + box[1]) / 2, (box[4] + box[5]) / 2
    a = project(world.agent, (x, box[2], z), cv.size)
    b = project(world.agent, (x, max(0.0, box[2] - 0.2), z), cv.size)
    if a is None or b is None:
        return
    half = max(1, int(0.025 * focal_length(cv.size) / a[2]))
    cv.fill((int(a[0]) - half, int(a[1]), int(a[0]) + half + 1, int(b[1]) + 1), st.WATER_STREAM, k)


def _held_rect(obj: SimObject, size: int) -> tuple[int, int, int, int]:
    w, h = obj.type.size
    width = int(size * 0.3)
    height = int(np.clip(width * h / max(w, 1e-3), size * 0.1, size * 0.4))
    u1 = int(size * 0.96)
    return (u1 - width, size - height - int(size * 0.02), u1, size - int(size * 0.02))


def _screen_rects(p: list[float], top_visible: bool) -> tuple[tuple[int, int, int, int],
                                                              tuple[int, int, int, int] | None,
                                                              tuple[int, int] | None]:
    """Integer screen rectangles of one projected box (``p``: one row of :func:`_project`).

    Returns the side-face rectangle, the top-face rectangle (None if not seen) and the u range of
    the face turned to the camera (None if not seen).
    """
    u0s, u1s, vt0s, vt1s, vb1s, vmins, _, _, fu0s, fu1s = p
    u0 = int(math.floor(u0s))
    u1 = max(int(math.ceil(u1s)), u0 + 1)
    vb = max(int(math.ceil(vb1s)), int(math.floor(vmins)) + 1)
    top = None
    if top_visible:  # camera above the top of the box
        vt0, vt1 = int(math.floor(vt0s)), int(round(vt1s))
        face = (u0, min(vt1, vb - 1), u1, vb)
        if vt1 > vt0:
            top = (u0, vt0, u1, vt1)
    else:
        face = (u0, int(math.floor(vmins)), u1, vb)
    front = None if fu0s != fu0s else (max(u0, int(round(fu0s))), min(u1, int(round(fu1s))))  # NaN: unseen
    return face, top, front


def render_frame(world: World, size: int = 128) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Render the agent's egocentric view.

    Args:
        world: the simulator state (agent pose, objects, held object).
        size: side of the square image in pixels (>= 16).

    Returns:
        ``(rgb, seg, ids)``: rgb ``(size, size, 3)`` uint8; seg ``(size, size)`` int32 where value
        ``k > 0`` is object ``ids[k - 1]`` and 0 is the room (floor, walls, ceiling); ids of the
        drawn objects in drawing order (an object may end up fully occluded).
    """
    if not isinstance(size, int) or size < 16:
        raise ValueError(f"render size must be an int >= 16, got {size!r}")
    if world.agent.yaw % 90 or world.agent.yaw not in (0, 90, 180, 270):
        raise ValueError(f"agent yaw must be one of 0, 90, 180, 270, got {world.agent.yaw!r}")
    cv = Canvas(background(world.n_i, world.n_j, world.room_type, world.agent, size))
    objs, box_list, active = [], [], set()
    hidden = hidden_ids(world)
    for obj in world.objects.values():
        if obj.controls and obj.is_toggled:
            active.add(obj.controls)
        if obj.object_id not in hidden:
            objs.append(obj)
            box_list.append(object_box(obj))
    ids: list[str] = []
    if objs:
        boxes = np.asarray(box_list, dtype=np.float64)
        cols = [c.tolist() for c in _project(world, boxes, size)]
        u0s, u1s, _, _, vb1s, vmins, dmaxs, dists, _, _ = cols
        dist_of = {o.object_id: dists[n] for n, o in enumerate(objs)}
        order = []
        for n, o in enumerate(objs):
            if dmaxs[n] <= NEAR or u1s[n] < 0 or u0s[n] >= size or vb1s[n] < 0 or vmins[n] >= size:
                continue
            root, level = _root_and_level(world, o)
            order.append((-dist_of.get(root, dists[n]), root, level, -dists[n], n))
        order.sort()
        for *_, n in order:
            o, box = objs[n], box_list[n]
            k = len(ids) + 1
            ids.append(o.object_id)
            face, top, front = _screen_rects([c[n] for c in cols], box[3] < EYE_HEIGHT)
            powered = o.is_toggled or (o.object_type == "StoveBurner" and o.object_id in active)
            _draw_object(cv, o, face, top, k, powered, o.object_id in active, front)
            if o.object_type == "Faucet" and o.is_toggled:
                _faucet_stream(cv, world, o, box, k)
    if world.held is not None and world.held in world.objects:
        held = world.objects[world.held]
        ids.append(held.object_id)
        rect = _held_rect(held, size)
        _draw_object(cv, held, rect, None, len(ids), held.is_toggled, False)
    return cv.rgb, cv.seg, ids


def pixel_to_id(seg: np.ndarray, ids: list[str], x: int, y: int) -> str | None:
    """Object id drawn at pixel column ``x``, row ``y`` of a rendered frame (None = room)."""
    h, w = seg.shape
    if not (0 <= x < w and 0 <= y < h):
        raise ValueError(f"pixel ({x}, {y}) is outside the {w}x{h} frame")
    k = int(seg[y, x])
    return ids[k - 1] if k > 0 else None
