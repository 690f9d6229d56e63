"""Look of the rendered household: room palettes, object geometry rules, shapes and state colours.

Pure data plus tiny helpers, shared by :mod:`render_background` and :mod:`render`. Geometry
convention (the one of ``scene.py`` / ``receptacles.py``):

- Furniture fills the bounding box of its grid ``cells`` and stands on the floor, catalog height
  ``size[1]`` tall; pieces in :data:`STAND` (counter-top appliances, ...) sit at a base height on a
  stand drawn below them. Its ``position`` y (a surface height) is not used for drawing.
- Fixtures and small objects are boxes centred on their ``position`` (``size[0]`` wide and deep,
  ``size[1]`` tall).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

CEILING_HEIGHT = 2.6

# Room palettes: floor tile A, floor tile B, ceiling, 4 walls x 2 stripe tones, baseboard.
_ROOM_COLOURS: dict[str, tuple[tuple[int, int, int], ...]] = {
    "kitchen": ((200, 196, 186), (150, 146, 138), (235, 235, 230),
                (222, 212, 180), (208, 198, 166), (190, 210, 200), (176, 196, 186),
                (215, 190, 170), (201, 176, 156), (196, 200, 222), (182, 186, 208), (90, 80, 70)),
    "living_room": ((160, 120, 80), (140, 100, 64), (240, 236, 228),
                    (214, 206, 190), (200, 192, 176), (186, 196, 214), (172, 182, 200),
                    (220, 200, 200), (206, 186, 186), (200, 214, 186), (186, 200, 172), (70, 55, 45)),
    "bedroom": ((176, 140, 100), (156, 122, 86), (240, 240, 235),
                (206, 196, 220), (192, 182, 206), (220, 214, 190), (206, 200, 176),
                (190, 210, 220), (176, 196, 206), (222, 200, 210), (208, 186, 196), (80, 70, 90)),
    "bathroom": ((226, 230, 236), (186, 196, 210), (245, 245, 245),
                 (190, 220, 226), (176, 206, 212), (226, 226, 210), (212, 212, 196),
                 (200, 210, 230), (186, 196, 216), (220, 214, 226), (206, 200, 212), (110, 120, 130)),
}


def room_palette(room_type: str) -> np.ndarray:
    """(12, 3) float32 background palette for a room type (kitchen colours if unknown)."""
    return np.asarray(_ROOM_COLOURS.get(room_type, _ROOM_COLOURS["kitchen"]), dtype=np.float32)


# --- geometry -----------------------------------------------------------------------------------
_COUNTER = (150, 140, 122)
# furniture raised on a stand (counter-top appliances, drawer units, television): base height (m)
# of the piece itself and the colour of the stand drawn below it
STAND: dict[str, tuple[float, tuple[int, int, int]]] = {
    "Microwave": (0.9, _COUNTER), "Toaster": (0.9, _COUNTER), "CoffeeMachine": (0.9, _COUNTER),
    "StoveBurner": (0.9, _COUNTER), "SinkBasin": (0.7, _COUNTER), "Drawer": (0.45, (125, 85, 48)),
    "Television": (0.6, (60, 45, 35)),
}
# furniture whose details (burner ring, basin) lie on the top face
TOP_DECOR = frozenset({"StoveBurner", "SinkBasin"})
FIXTURE_DEPTH = 0.08


def furniture_top(object_type: str, height: float) -> float:
    """Height (m) of the top of a furniture box: its own height, plus its stand's if it has one."""
    return STAND[object_type][0] + height if object_type in STAND else height


FURNITURE_MARGIN = 0.03  # gap (m) left between a piece's box and its cell boundary
# Receptacles that hold objects "in" them (the rest hold objects "on" them).
IN_RECEPTACLES = frozenset({
    "Fridge", "Cabinet", "Drawer", "Microwave", "Toaster", "CoffeeMachine", "SinkBasin", "GarbageCan",
    "Bathtub", "Bowl", "Pot", "Box", "Mug", "Cup", "Shelf", "Toilet",
})

# --- shapes of small objects (colour + shape make types distinguishable) -------------------------
ROUND = frozenset({"Apple", "Tomato", "Potato", "Egg", "BasketBall", "Lettuce", "Bowl", "Plate",
                   "Pan", "CD", "Watch", "AlarmClock", "ToiletPaper", "TeddyBear", "Pillow"})
STICK = frozenset({"Knife", "ButterKnife", "Fork", "Spoon", "Spatula", "Ladle", "Pen", "Pencil",
                   "TennisRacket", "Plunger"})
CYLINDER = frozenset({"Mug", "Cup", "Bottle", "WineBottle", "SoapBottle", "SprayBottle", "Candle",
                      "PaperTowelRoll", "SaltShaker", "PepperShaker", "Vase", "Kettle", "Pot"})
# accent colour drawn as a small mark (stem, handle, label) that tells similar colours apart
ACCENT: dict[str, tuple[int, int, int]] = {
    "Apple": (90, 60, 20), "Tomato": (40, 150, 40), "Lettuce": (40, 110, 30), "Mug": (120, 30, 30),
    "Kettle": (40, 40, 40), "Knife": (40, 30, 20), "ButterKnife": (120, 90, 50), "Fork": (60, 60, 70),
    "Spoon": (90, 90, 100), "Bottle": (230, 230, 230), "WineBottle": (230, 200, 120),
    "SoapBottle": (250, 250, 250), "Book": (230, 220, 180), "Laptop": (30, 30, 30),
    "CellPhone": (80, 120, 200), "RemoteControl": (200, 40, 40), "AlarmClock": (250, 250, 250),
    "Egg": (230, 220, 190), "Potato": (110, 80, 40), "Bread": (150, 100, 50),
}

# --- furniture details: (u0, v0, u1, v1) fractions of the front face, colour ------------------
DARK = (35, 35, 40)
DECOR: dict[str, list[tuple[tuple[float, float, float, float], tuple[int, int, int]]]] = {
    "Fridge": [((0.0, 0.34, 1.0, 0.36), (150, 155, 160)), ((0.82, 0.1, 0.88, 0.3), (90, 90, 95)),
               ((0.82, 0.42, 0.88, 0.7), (90, 90, 95))],
    "Cabinet": [((0.75, 0.15, 0.85, 0.35), (60, 40, 20)), ((0.49, 0.0, 0.51, 1.0), (110, 75, 40))],
    "Drawer": [((0.35, 0.4, 0.65, 0.55), (60, 40, 20))],
    "Microwave": [((0.08, 0.15, 0.62, 0.85), (25, 25, 30)), ((0.7, 0.2, 0.9, 0.8), (120, 120, 125))],
    "Toaster": [((0.15, 0.0, 0.4, 0.12), DARK), ((0.6, 0.0, 0.85, 0.12), DARK)],
    "CoffeeMachine": [((0.3, 0.45, 0.7, 0.6), (90, 90, 90)), ((0.2, 0.85, 0.8, 1.0), (70, 70, 70))],
    "StoveBurner": [((0.1, 0.0, 0.9, 1.0), (60, 60, 60)), ((0.3, 0.0, 0.7, 1.0), (20, 20, 20))],
    "SinkBasin": [((0.08, 0.0, 0.92, 0.7), (120, 130, 140))],
    "Television": [((0.06, 0.08, 0.94, 0.85), (45, 50, 60))],
    "Dresser": [((0.05, 0.3, 0.95, 0.32), (90, 60, 40)), ((0.05, 0.62, 0.95, 0.64), (90, 60, 40))],
    "Bed": [((0.0, 0.0, 1.0, 0.3), (245, 245, 250))],
    "Sofa": [((0.0, 0.0, 1.0, 0.45), (50, 65, 120))],
    "ArmChair": [((0.0, 0.0, 1.0, 0.45), (85, 45, 60))],
    "HousePlant": [((0.25, 0.6, 0.75, 1.0), (150, 80, 50)), ((0.0, 0.0, 1.0, 0.6), (30, 120, 45))],
    "GarbageCan": [((0.0, 0.0, 1.0, 0.1), (60, 70, 60))],
    "Toilet": [((0.2, 0.0, 0.8, 0.35), (225, 225, 230))],
    "Shelf": [((0.0, 0.32, 1.0, 0.36), (90, 60, 35)), ((0.0, 0.66, 1.0, 0.7), (90, 60, 35))],
    "FloorLamp": [((0.0, 0.0, 1.0, 0.3), (190, 170, 110)), ((0.42, 0.3, 0.58, 1.0), (60, 60, 60))],
    "DeskLamp": [((0.0, 0.0, 1.0, 0.4), (190, 170, 110)), ((0.42, 0.4, 0.58, 1.0), (60, 60, 60))],
}

# --- state colours -----------------------------------------------------------------------------
LIQUID = {"water": (60, 130, 235), "coffee": (95, 55, 25), "wine": (120, 10, 45)}
DIRT = (105, 70, 35)
INTERIOR = (30, 30, 34)
WATER_STREAM = (70, 150, 255)
GLOW = {  # toggled-on look of the face of appliances
    "Microwave": (255, 190, 80), "Toaster": (255, 90, 30), "Television": (120, 190, 255),
    "FloorLamp": (255, 255, 190), "DeskLamp": (255, 255, 190), "Candle": (255, 200, 60),
    "Laptop": (140, 200, 255), "CellPhone": (140, 200, 255), "StoveKnob": (255, 60, 20),
    "StoveBurner": (255, 80, 20), "LightSwitch": (80, 230, 80), "CoffeeMachine": (255, 60, 40),
}
# part of the front face that glows when toggled on (fractions as in DECOR); default: whole face
GLOW_RECT: dict[str, tuple[float, float, float, float]] = {
    "Microwave": (0.08, 0.15, 0.62, 0.85), "Television": (0.06, 0.08, 0.94, 0.85),
    "Toaster": (0.1, 0.0, 0.9, 0.45), "FloorLamp": (0.0, 0.0, 1.0, 0.3), "DeskLamp": (0.0, 0.0, 1.0, 0.4),
    "CoffeeMachine": (0.65, 0.1, 0.85, 0.25), "Laptop": (0.1, 0.1, 0.9, 0.9),
}
TOP_GLOW = frozenset({"Toaster"})  # also glows on its top face (the slots)
INDICATOR_ON = (60, 255, 60)


@lru_cache(maxsize=1024)
def cooked_colour(c: tuple[int, int, int]) -> tuple[int, int, int]:
    """Browned version of a colour."""
    return (int(c[0] * 0.45 + 70), int(c[1] * 0.35 + 35), int(c[2] * 0.25 + 10))


@lru_cache(maxsize=4096)
def shade(c: tuple[int, int, int], k: float) -> tuple[int, int, int]:
    """Colour scaled by ``k`` and clipped to 0..255."""
    return (min(255, int(c[0] * k)), min(255, int(c[1] * k)), min(255, int(c[2] * k)))
