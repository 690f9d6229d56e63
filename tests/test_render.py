"""Renderer and text observations of the household simulator on a small hand-built kitchen."""

from __future__ import annotations

import numpy as np
import pytest

from icalkit.envs.household.camera import project
from icalkit.envs.household.catalog import OBJECT_TYPES
from icalkit.envs.household.observe import object_state_dict, scene_graph, scene_graph_text, text_state
from icalkit.envs.household.png import frame_grid, save_png
from icalkit.envs.household.render import object_box, pixel_to_id, render_frame
from icalkit.envs.household.state import GRID, AgentPose, SimObject, World


def _furniture(world: World, oid: str, t: str, i0: int, i1: int, j0: int, j1: int) -> None:
    cells = tuple((i, j) for i in range(i0, i1) for j in range(j0, j1))
    ot = OBJECT_TYPES[t]
    pos = ((i0 + i1) / 2 * GRID, ot.height or ot.size[1] / 2, (j0 + j1) / 2 * GRID)
    world.objects[oid] = SimObject(oid, t, pos, facing=180, cells=cells)
    for c in cells:
        world.blocked[c] = True


def _small(world: World, oid: str, t: str, parent: str, dx: float = 0.0, dz: float = 0.0,
           base: float | None = None) -> None:
    p = world.objects[parent]
    y = (p.type.height if base is None else base) + OBJECT_TYPES[t].size[1] / 2
    world.objects[oid] = SimObject(oid, t, (p.position[0] + dx, y, p.position[2] + dz), parent=parent)
    p.children.append(oid)


def kitchen() -> World:
    """20x20-cell kitchen; the agent at cell (11, 6) looks (30 deg down) at a counter row."""
    world = World("test_kitchen", "kitchen", 0, "train", 20, 20, {}, AgentPose(11, 6, 0, 30),
                  blocked=np.zeros((20, 20), dtype=bool))
    _furniture(world, "Fridge_1", "Fridge", 5, 8, 9, 12)
    _furniture(world, "CounterTop_1", "CounterTop", 8, 12, 9, 11)
    _furniture(world, "Toaster_1", "Toaster", 12, 13, 9, 10)
    _furniture(world, "SinkBasin_1", "SinkBasin", 13, 15, 9, 11)
    _furniture(world, "Microwave_1", "Microwave", 15, 17, 9, 10)
    world.objects["Faucet_1"] = SimObject("Faucet_1", "Faucet", (3.5, 1.05, 2.6), controls="SinkBasin_1")
    _small(world, "Mug_1", "Mug", "CounterTop_1", dx=-0.35)
    _small(world, "Apple_1", "Apple", "CounterTop_1", dx=-0.1)
    _small(world, "Bread_1", "Bread", "CounterTop_1", dx=0.25)
    _small(world, "Knife_1", "Knife", "CounterTop_1", dx=0.3, dz=-0.15)
    _small(world, "Plate_1", "Plate", "CounterTop_1", dz=-0.2)
    _small(world, "Tomato_1", "Tomato", "Fridge_1", base=1.0)
    return world


def _mask(world: World, oid: str, size: int = 128) -> np.ndarray:
    _, seg, ids = render_frame(world, size)
    return seg == ids.index(oid) + 1 if oid in ids else np.zeros_like(seg, dtype=bool)


def test_shapes_dtypes_and_determinism() -> None:
    world = kitchen()
    rgb, seg, ids = render_frame(world, 96)
    assert rgb.shape == (96, 96, 3) and rgb.dtype == np.uint8
    assert seg.shape == (96, 96) and seg.dtype == np.int32
    rgb2, seg2, ids2 = render_frame(world, 96)
    assert np.array_equal(rgb, rgb2) and np.array_equal(seg, seg2) and ids == ids2
    assert rgb.std() > 10  # not a flat image


def test_bad_size_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="render size"):
        render_frame(kitchen(), 4)


def test_segmentation_matches_drawn_objects() -> None:
    world = kitchen()
    rgb, seg, ids = render_frame(world)
    assert len(ids) == len(set(ids)) and all(i in world.objects for i in ids)
    assert seg.min() >= 0 and seg.max() <= len(ids)
    present = {ids[k - 1] for k in np.unique(seg) if k > 0}
    assert {"Fridge_1", "CounterTop_1", "Toaster_1", "Mug_1", "Apple_1", "Bread_1"} <= present
    # segmented pixels carry the object's colour somewhere (the toaster is light grey-white)
    toaster = rgb[seg == ids.index("Toaster_1") + 1].astype(int)
    assert (np.abs(toaster - np.array(OBJECT_TYPES["Toaster"].color)).sum(1) < 30).any()


def test_objects_in_closed_fridge_are_not_drawn() -> None:
    world = kitchen()
    world.agent = AgentPose(6, 6, 0, 30)  # in front of the fridge
    assert not _mask(world, "Tomato_1").any()
    world.objects["Fridge_1"].is_open = True
    assert _mask(world, "Tomato_1").any()


def _changed(world: World, oid: str, edit) -> float:
    """Fraction of the object's pixels whose colour changes after ``edit(world)``."""
    before_rgb, _, _ = render_frame(world)
    region = _mask(world, oid)
    assert region.any(), f"{oid} is not visible in the test view"
    edit(world)
    after_rgb, _, _ = render_frame(world)
    return float((np.abs(after_rgb.astype(int) - before_rgb).sum(-1) > 30)[region].mean())


@pytest.mark.parametrize("oid, edit", [
    ("Fridge_1", lambda w: setattr(w.objects["Fridge_1"], "is_open", True)),
    ("Toaster_1", lambda w: setattr(w.objects["Toaster_1"], "is_toggled", True)),
    ("Microwave_1", lambda w: setattr(w.objects["Microwave_1"], "is_toggled", True)),
    ("Bread_1", lambda w: setattr(w.objects["Bread_1"], "is_cooked", True)),
    ("Mug_1", lambda w: setattr(w.objects["Mug_1"], "is_dirty", True)),
    ("Mug_1", lambda w: (setattr(w.objects["Mug_1"], "is_filled", True),
                         setattr(w.objects["Mug_1"], "fill_liquid", "coffee"))),
    ("Apple_1", lambda w: setattr(w.objects["Apple_1"], "is_sliced", True)),
])
def test_state_changes_are_visible(oid: str, edit) -> None:
    assert _changed(kitchen(), oid, edit) > 0.1


def test_closing_the_fridge_restores_the_frame() -> None:
    world = kitchen()
    closed = render_frame(world)[0]
    world.objects["Fridge_1"].is_open = True
    opened = render_frame(world)[0]
    world.objects["Fridge_1"].is_open = False
    assert not np.array_equal(closed, opened) and np.array_equal(closed, render_frame(world)[0])


def test_running_faucet_shows_water() -> None:
    world = kitchen()
    before = _mask(world, "Faucet_1").sum()
    rgb0 = render_frame(world)[0]
    world.objects["Faucet_1"].is_toggled = True
    rgb1, seg1, ids1 = render_frame(world)
    assert _mask(world, "Faucet_1").sum() > before  # the water stream belongs to the faucet
    sink = seg1 == ids1.index("SinkBasin_1") + 1
    blue = (rgb1[..., 2].astype(int) - rgb1[..., 0] > 100) & ~(rgb0[..., 2].astype(int) - rgb0[..., 0] > 100)
    assert blue[sink].sum() > 5


def test_slicing_replaces_the_object_with_slices() -> None:
    world = kitchen()
    apple = world.objects.pop("Apple_1")
    world.objects["CounterTop_1"].children.remove("Apple_1")
    for n in range(3):
        oid = f"AppleSliced_{n + 1}"
        x, y, z = apple.position
        world.objects[oid] = SimObject(oid, "AppleSliced", (x - 0.05 + 0.05 * n, 0.92, z), parent="CounterTop_1",
                                       sliced_from="Apple_1")
        world.objects["CounterTop_1"].children.append(oid)
    _, seg, ids = render_frame(world)
    assert "Apple_1" not in ids
    drawn = {ids[k - 1] for k in np.unique(seg) if k > 0}
    assert {"AppleSliced_1", "AppleSliced_2", "AppleSliced_3"} & drawn


def test_pickup_removes_object_and_shows_it_held() -> None:
    world = kitchen()
    rgb0 = render_frame(world)[0]
    knife = world.objects["Knife_1"]
    world.objects["CounterTop_1"].children.remove("Knife_1")
    knife.parent, knife.is_picked_up, world.held = None, True, "Knife_1"
    rgb1, seg1, ids1 = render_frame(world)
    held = seg1 == ids1.index("Knife_1") + 1
    assert held.any() and held[:, :64].sum() == 0 and held[96:, 64:].sum() == held.sum()  # bottom right only
    assert np.abs(rgb1.astype(int) - rgb0)[held].sum() > 0


@pytest.mark.parametrize("pose", [AgentPose(11, 7, 0, 30), AgentPose(11, 6, 90, 30), AgentPose(11, 6, 0, 60),
                                  AgentPose(11, 6, 0, 0), AgentPose(12, 6, 0, 30)])
def test_motion_changes_the_frame(pose: AgentPose) -> None:
    world = kitchen()
    base = render_frame(world)[0].astype(int)
    world.agent = pose
    moved = render_frame(world)[0].astype(int)
    assert (np.abs(moved - base).sum(-1) > 30).mean() > 0.2


def test_look_down_moves_the_horizon_up_the_image() -> None:
    world = kitchen()
    world.agent = AgentPose(10, 14, 0, 0)  # past the counters, facing the far wall
    _, seg0, _ = render_frame(world)
    level = render_frame(world)[0].astype(int).sum(-1)
    world.agent = AgentPose(10, 14, 0, 30)
    lower = render_frame(world)[0].astype(int).sum(-1)
    # the floor / baseboard boundary: darkest row of the central column moves up when looking down
    assert int(np.argmin(lower[:, 64])) < int(np.argmin(level[:, 64]))


def test_pixel_to_id_at_projected_centres() -> None:
    world = kitchen()
    _, seg, ids = render_frame(world)
    for oid in ("Toaster_1", "Bread_1", "CounterTop_1"):
        x0, x1, y0, y1, z0, z1 = object_box(world.objects[oid])
        u, v, _ = project(world.agent, ((x0 + x1) / 2, (y0 + y1) / 2, z0), 128)  # front face centre
        assert pixel_to_id(seg, ids, int(u), int(v)) == oid
    assert pixel_to_id(seg, ids, 64, 0) is None  # wall
    with pytest.raises(ValueError, match="outside"):
        pixel_to_id(seg, ids, 128, 5)


def test_text_state_scene_graph_and_state_dict() -> None:
    world = kitchen()
    world.objects["Mug_1"].is_dirty = True
    world.objects["Fridge_1"].is_open = True
    visible = ["Fridge_1", "CounterTop_1", "Mug_1", "Apple_1", "Bread_1", "Tomato_1"]
    text = text_state(world, visible)
    lines = text.splitlines()
    assert len(lines) == len(visible) + 1 and lines[-1] == "Holding: nothing"
    assert "Mug_1 (Mug) at (" in text and "dirty" in lines[2] and "on CounterTop_1" in lines[2]
    assert "Fridge_1 (Fridge)" in lines[0] and ": open" in lines[0]
    assert "Tomato_1" in lines[5] and "in Fridge_1" in lines[5] and "whole" in lines[5]
    graph = scene_graph(world, visible)
    assert ("Mug_1", "on", "CounterTop_1") in graph and ("Tomato_1", "in", "Fridge_1") in graph
    assert ("Mug_1", "near", "Apple_1") in graph and ("Apple_1", "near", "Mug_1") in graph
    assert ("Fridge_1", "left_of", "Mug_1") in graph or ("Fridge_1", "left_of", "Apple_1") in graph
    assert all((b, "right_of", a) in graph for a, r, b in graph if r == "left_of")
    assert "Mug_1 on CounterTop_1" in scene_graph_text(graph)
    world.held = "Knife_1"
    assert ("agent", "holds", "Knife_1") in scene_graph(world, visible)
    assert text_state(world, visible).splitlines()[-1] == "Holding: Knife_1 (Knife)"
    state = object_state_dict(world, ["Mug_1", "Fridge_1", "Knife_1"])
    assert state["Mug_1"] == {"label": "Mug", "parent": "CounterTop_1", "holding": False, "dirty": True,
                              "filled": False, "liquid": None}
    assert state["Fridge_1"]["open"] is True and state["Knife_1"]["holding"] is True
    with pytest.raises(KeyError, match="Nope_1"):
        text_state(world, ["Nope_1"])


def test_png_and_contact_sheet(tmp_path) -> None:
    from PIL import Image

    frames = [render_frame(kitchen(), 32)[0] for _ in range(3)]
    sheet = frame_grid(frames, cols=2, pad=2)
    assert sheet.shape == (66, 66, 3)
    path = save_png(sheet, tmp_path / "a" / "sheet.png")
    assert np.array_equal(np.asarray(Image.open(path)), sheet)
    with pytest.raises(ValueError, match="uint8"):
        save_png(sheet.astype(np.float32), tmp_path / "bad.png")


@pytest.mark.parametrize("room", ["kitchen", "living_room", "bedroom", "bathroom"])
def test_generated_rooms_render_from_every_view_and_show_what_is_in_view(room: str) -> None:
    from icalkit.envs.household.camera import in_view
    from icalkit.envs.household.render import is_hidden
    from icalkit.envs.household.scene import generate_scene
    from icalkit.envs.household.simulator import Simulator
    from icalkit.envs.household.state import PITCHES

    world = generate_scene(7, "train", room)
    sim = Simulator(world)
    for oid in list(world.objects)[::3]:  # exercise every state overlay on real scenes
        obj = world.objects[oid]
        obj.is_open = obj.type.openable
        obj.is_toggled = obj.type.toggleable
        obj.is_dirty = obj.is_filled = obj.type.dirtyable
    rng = np.random.default_rng(0)
    free = np.argwhere(~world.blocked)
    for i, j in free[rng.choice(len(free), size=min(25, len(free)), replace=False)]:
        for yaw in (0, 90, 180, 270):
            for pitch in PITCHES:
                world.agent = AgentPose(int(i), int(j), yaw, pitch)
                rgb, seg, ids = render_frame(world, 64)
                assert rgb.shape == (64, 64, 3) and seg.max() <= len(ids)
                expected = {o.object_id for o in world.objects.values()
                            if not is_hidden(world, o) and in_view(world.agent, o.position)}
                assert expected <= set(ids)  # everything the camera sees is drawn
                assert set(sim.visible_objects()) <= set(ids)  # ... and everything the simulator calls visible
