"""AI2-THOR object types with their affordances, sizes, colours and where they may appear.

Affordance letters in the table: P pickupable, R receptacle, O openable, T toggleable,
S sliceable, C cookable, D dirtyable, F canFillWithLiquid, B breakable.
Kinds: ``furniture`` (stands on the floor, blocks a grid cell, usually a receptacle),
``fixture`` (mounted on/with a furniture piece: faucet, stove knob, light switch),
``small`` (placed in/on receptacles, usually pickupable), ``sliced`` (created by slicing).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache


@dataclass(frozen=True)
class ObjectType:
    """Static properties of one AI2-THOR object type."""

    name: str
    kind: str  # furniture | fixture | small | sliced
    pickupable: bool = False
    receptacle: bool = False
    openable: bool = False
    toggleable: bool = False
    sliceable: bool = False
    cookable: bool = False
    dirtyable: bool = False
    can_fill: bool = False
    breakable: bool = False
    size: tuple[float, float] = (0.2, 0.2)  # (width, height) in metres
    color: tuple[int, int, int] = (128, 128, 128)
    rooms: tuple[str, ...] = ()
    capacity: int = 0  # receptacles: how many objects fit
    height: float = 0.0  # furniture: top surface height (m); small: unused
    classes: tuple[str, ...] = field(default_factory=tuple)  # TEACh simbotObjectClass


ROOMS = ("kitchen", "living_room", "bedroom", "bathroom")
K, L, BD, BA = "kitchen", "living_room", "bedroom", "bathroom"

# name, kind, flags, (w, h), colour, rooms, capacity, surface height
_TABLE: list[tuple] = [
    # --- furniture / large receptacles
    ("CounterTop", "furniture", "R", (1.0, 0.9), (170, 160, 140), (K,), 8, 0.9),
    ("DiningTable", "furniture", "R", (1.2, 0.75), (139, 90, 43), (K, L), 8, 0.75),
    ("Fridge", "furniture", "RO", (0.8, 1.8), (225, 230, 235), (K,), 8, 1.0),
    ("Cabinet", "furniture", "RO", (0.6, 0.8), (160, 110, 60), (K, BA), 3, 0.5),
    ("Drawer", "furniture", "RO", (0.5, 0.3), (150, 100, 55), (K, BD, BA), 2, 0.6),
    ("Microwave", "furniture", "ROT", (0.5, 0.3), (60, 60, 65), (K,), 1, 1.1),
    ("Toaster", "furniture", "RT", (0.3, 0.25), (200, 200, 210), (K,), 1, 1.0),
    ("CoffeeMachine", "furniture", "RT", (0.3, 0.4), (40, 40, 40), (K,), 1, 1.0),
    ("StoveBurner", "furniture", "R", (0.3, 0.05), (30, 30, 30), (K,), 1, 0.92),
    ("SinkBasin", "furniture", "R", (0.6, 0.2), (190, 200, 210), (K, BA), 4, 0.85),
    ("GarbageCan", "furniture", "R", (0.35, 0.5), (90, 100, 90), (K, L, BD, BA), 4, 0.5),
    ("Shelf", "furniture", "R", (0.8, 1.2), (120, 85, 50), (K, L, BD), 4, 1.0),
    ("Sofa", "furniture", "R", (1.6, 0.8), (70, 90, 150), (L,), 4, 0.45),
    ("ArmChair", "furniture", "R", (0.8, 0.9), (110, 60, 80), (L, BD), 2, 0.45),
    ("CoffeeTable", "furniture", "R", (1.0, 0.45), (110, 75, 40), (L,), 5, 0.45),
    ("SideTable", "furniture", "R", (0.5, 0.6), (130, 90, 50), (L, BD), 3, 0.6),
    ("TVStand", "furniture", "R", (1.2, 0.5), (60, 45, 35), (L,), 4, 0.5),
    ("Dresser", "furniture", "R", (1.0, 0.9), (140, 100, 70), (BD,), 5, 0.9),
    ("Desk", "furniture", "R", (1.2, 0.75), (150, 120, 80), (BD, L), 6, 0.75),
    ("Bed", "furniture", "R", (1.6, 0.6), (210, 200, 230), (BD,), 5, 0.6),
    ("Ottoman", "furniture", "R", (0.6, 0.4), (150, 70, 70), (L,), 2, 0.4),
    ("Toilet", "furniture", "RO", (0.5, 0.8), (245, 245, 245), (BA,), 2, 0.5),
    ("Bathtub", "furniture", "R", (1.6, 0.55), (235, 235, 240), (BA,), 3, 0.5),
    ("CounterTopBath", "furniture", "R", (1.0, 0.85), (175, 175, 165), (BA,), 5, 0.85),
    ("TowelHolder", "furniture", "R", (0.5, 1.1), (180, 180, 190), (BA,), 1, 1.1),
    ("Television", "furniture", "T", (1.0, 0.6), (20, 20, 25), (L, BD), 0, 0.0),
    ("FloorLamp", "furniture", "T", (0.4, 1.6), (230, 210, 120), (L, BD), 0, 0.0),
    ("HousePlant", "furniture", "F", (0.5, 0.9), (40, 140, 60), (K, L, BD, BA), 0, 0.0),
    # --- fixtures (attached to furniture; not pickupable)
    ("Faucet", "fixture", "T", (0.1, 0.25), (180, 190, 200), (K, BA), 0, 0.0),
    ("StoveKnob", "fixture", "T", (0.06, 0.06), (20, 20, 20), (K,), 0, 0.0),
    ("LightSwitch", "fixture", "T", (0.1, 0.15), (240, 240, 230), (K, L, BD, BA), 0, 0.0),
    ("DeskLamp", "fixture", "T", (0.25, 0.45), (240, 220, 100), (BD, L), 0, 0.0),
    # --- small objects
    ("Mug", "small", "PDFB", (0.12, 0.12), (180, 60, 60), (K,), 0, 0.0),
    ("Cup", "small", "PDFB", (0.1, 0.14), (80, 160, 200), (K,), 0, 0.0),
    ("Bowl", "small", "PRDFB", (0.2, 0.1), (230, 200, 150), (K,), 2, 0.0),
    ("Plate", "small", "PRDB", (0.25, 0.04), (245, 245, 235), (K,), 6, 0.0),
    ("Pot", "small", "PRDF", (0.3, 0.2), (90, 90, 100), (K,), 2, 0.0),
    ("Pan", "small", "PRD", (0.35, 0.08), (50, 50, 55), (K,), 2, 0.0),
    ("Kettle", "small", "PF", (0.2, 0.25), (200, 80, 40), (K,), 0, 0.0),
    ("Bottle", "small", "PFB", (0.08, 0.28), (60, 150, 80), (K, BA), 0, 0.0),
    ("WineBottle", "small", "PFB", (0.08, 0.32), (90, 20, 40), (K,), 0, 0.0),
    ("Apple", "small", "PSC", (0.08, 0.08), (200, 20, 30), (K,), 0, 0.0),
    ("Bread", "small", "PSC", (0.25, 0.12), (200, 150, 80), (K,), 0, 0.0),
    ("Tomato", "small", "PSC", (0.08, 0.08), (230, 40, 20), (K,), 0, 0.0),
    ("Lettuce", "small", "PSC", (0.15, 0.12), (90, 190, 60), (K,), 0, 0.0),
    ("Potato", "small", "PSC", (0.1, 0.07), (160, 120, 70), (K,), 0, 0.0),
    ("Egg", "small", "PSCB", (0.05, 0.06), (245, 235, 210), (K,), 0, 0.0),
    ("Knife", "small", "P", (0.3, 0.03), (200, 200, 205), (K,), 0, 0.0),
    ("ButterKnife", "small", "P", (0.2, 0.02), (215, 215, 190), (K,), 0, 0.0),
    ("Fork", "small", "P", (0.18, 0.02), (190, 190, 200), (K,), 0, 0.0),
    ("Spoon", "small", "P", (0.16, 0.02), (175, 175, 185), (K,), 0, 0.0),
    ("Spatula", "small", "P", (0.3, 0.03), (30, 30, 30), (K,), 0, 0.0),
    ("Ladle", "small", "P", (0.3, 0.05), (150, 150, 160), (K,), 0, 0.0),
    ("SaltShaker", "small", "P", (0.05, 0.1), (250, 250, 250), (K,), 0, 0.0),
    ("PepperShaker", "small", "P", (0.05, 0.1), (40, 30, 30), (K,), 0, 0.0),
    ("DishSponge", "small", "P", (0.1, 0.04), (240, 220, 40), (K, BA), 0, 0.0),
    ("SoapBottle", "small", "P", (0.08, 0.2), (120, 200, 230), (K, BA), 0, 0.0),
    ("PaperTowelRoll", "small", "P", (0.12, 0.25), (250, 250, 245), (K,), 0, 0.0),
    ("Vase", "small", "PB", (0.12, 0.25), (100, 60, 160), (L, BD), 0, 0.0),
    ("Statue", "small", "PB", (0.12, 0.25), (120, 120, 110), (L, BD), 0, 0.0),
    ("Book", "small", "PO", (0.2, 0.05), (30, 80, 140), (L, BD), 0, 0.0),
    ("Newspaper", "small", "P", (0.3, 0.02), (210, 210, 200), (L,), 0, 0.0),
    ("RemoteControl", "small", "P", (0.15, 0.03), (25, 25, 30), (L,), 0, 0.0),
    ("KeyChain", "small", "P", (0.06, 0.02), (210, 180, 40), (L, BD), 0, 0.0),
    ("CreditCard", "small", "P", (0.08, 0.01), (30, 120, 60), (L, BD), 0, 0.0),
    ("Pillow", "small", "P", (0.4, 0.12), (220, 180, 200), (L, BD), 0, 0.0),
    ("Box", "small", "PRO", (0.35, 0.25), (180, 140, 90), (L,), 3, 0.0),
    ("Watch", "small", "PB", (0.05, 0.02), (150, 150, 160), (L, BD), 0, 0.0),
    ("Laptop", "small", "POTB", (0.35, 0.03), (100, 100, 110), (L, BD), 0, 0.0),
    ("CellPhone", "small", "PTB", (0.07, 0.01), (20, 20, 20), (L, BD), 0, 0.0),
    ("AlarmClock", "small", "P", (0.12, 0.1), (220, 60, 60), (BD,), 0, 0.0),
    ("Pen", "small", "P", (0.14, 0.01), (20, 40, 180), (BD, L), 0, 0.0),
    ("Pencil", "small", "P", (0.16, 0.01), (240, 190, 30), (BD, L), 0, 0.0),
    ("CD", "small", "P", (0.12, 0.01), (200, 200, 220), (BD, L), 0, 0.0),
    ("TeddyBear", "small", "P", (0.25, 0.3), (150, 100, 60), (BD,), 0, 0.0),
    ("BasketBall", "small", "P", (0.24, 0.24), (230, 110, 30), (BD,), 0, 0.0),
    ("TennisRacket", "small", "P", (0.3, 0.05), (60, 170, 60), (BD,), 0, 0.0),
    ("Candle", "small", "PT", (0.06, 0.15), (250, 240, 200), (BA, L), 0, 0.0),
    ("SoapBar", "small", "P", (0.08, 0.03), (240, 200, 210), (BA,), 0, 0.0),
    ("ToiletPaper", "small", "P", (0.1, 0.1), (252, 252, 252), (BA,), 0, 0.0),
    ("Towel", "small", "P", (0.3, 0.05), (90, 170, 180), (BA,), 0, 0.0),
    ("HandTowel", "small", "P", (0.2, 0.05), (170, 90, 170), (BA,), 0, 0.0),
    ("Cloth", "small", "PD", (0.2, 0.02), (230, 120, 150), (BA, K), 0, 0.0),
    ("SprayBottle", "small", "P", (0.08, 0.22), (60, 200, 200), (BA,), 0, 0.0),
    ("ScrubBrush", "small", "P", (0.15, 0.06), (200, 150, 50), (BA,), 0, 0.0),
    ("Plunger", "small", "P", (0.12, 0.4), (140, 40, 40), (BA,), 0, 0.0),
    # --- products of slicing / cracking
    ("AppleSliced", "sliced", "PC", (0.06, 0.04), (240, 230, 180), (), 0, 0.0),
    ("BreadSliced", "sliced", "PC", (0.12, 0.02), (235, 200, 140), (), 0, 0.0),
    ("TomatoSliced", "sliced", "PC", (0.07, 0.02), (250, 90, 70), (), 0, 0.0),
    ("LettuceSliced", "sliced", "PC", (0.1, 0.02), (170, 230, 120), (), 0, 0.0),
    ("PotatoSliced", "sliced", "PC", (0.07, 0.02), (230, 210, 160), (), 0, 0.0),
    ("EggCracked", "sliced", "PC", (0.06, 0.02), (250, 220, 60), (), 0, 0.0),
]

# slicing: parent -> (child type, number of children)
SLICE_PRODUCTS: dict[str, tuple[str, int]] = {
    "Apple": ("AppleSliced", 6),
    "Bread": ("BreadSliced", 8),
    "Tomato": ("TomatoSliced", 6),
    "Lettuce": ("LettuceSliced", 6),
    "Potato": ("PotatoSliced", 6),
    "Egg": ("EggCracked", 1),
}
SLICED_FROM: dict[str, str] = {piece: whole for whole, (piece, _) in SLICE_PRODUCTS.items()}  # piece -> whole

# appliance fixture -> furniture it controls (faucet fills the sink; knob heats the burner)
KNIVES = ("Knife", "ButterKnife")


# Object superclasses used by TEACh task definitions (``simbotObjectClass``), our own listing.
SUPERCLASSES: dict[str, tuple[str, ...]] = {
    "Food": ("Apple", "AppleSliced", "Bread", "BreadSliced", "Tomato", "TomatoSliced", "Lettuce",
             "LettuceSliced", "Potato", "PotatoSliced", "Egg", "EggCracked"),
    "Fruit": ("Apple", "AppleSliced", "Tomato", "TomatoSliced"),
    "Vegetables": ("Lettuce", "LettuceSliced", "Potato", "PotatoSliced"),
    "Dishware": ("Bowl", "Plate"),
    "Drinkware": ("Mug", "Cup", "Bottle", "WineBottle"),
    "Tableware": ("Bowl", "Plate", "Mug", "Cup", "Bottle", "WineBottle"),
    "Cookware": ("Pot", "Pan", "Kettle"),
    "Silverware": ("Fork", "Spoon", "ButterKnife", "Knife"),
    "Knives": ("Knife", "ButterKnife"),
    "KitchenUtensils": ("Fork", "Spoon", "ButterKnife", "Knife", "Spatula", "Ladle"),
    "SmallHandheldObjects": ("Book", "CD", "CellPhone", "CreditCard", "KeyChain", "Pen", "Pencil",
                             "RemoteControl", "Watch"),
    "Electronics": ("AlarmClock", "CellPhone", "Laptop", "Television"),
    "Lights": ("DeskLamp", "FloorLamp"),
    "Tables": ("DiningTable", "CoffeeTable", "SideTable", "Desk", "CounterTop"),
    "Furniture": ("DiningTable", "CoffeeTable", "SideTable", "Desk", "Sofa", "ArmChair", "Dresser",
                  "Bed", "Ottoman", "Shelf", "TVStand"),
    "Chairs": ("ArmChair",),
    "RoomDecor": ("Vase", "Statue", "Candle", "HousePlant"),
    "CleaningProducts": ("Cloth", "DishSponge", "SprayBottle", "ScrubBrush", "SoapBottle"),
    "HygieneProducts": ("SoapBar", "ToiletPaper", "Towel", "HandTowel"),
    "WaterSources": ("Faucet", "SinkBasin"),
    "Appliances": ("Fridge", "Microwave", "Toaster", "CoffeeMachine"),
    "StoveTopCookers": ("StoveBurner",),
    "SportsEquipment": ("BasketBall", "TennisRacket"),
    "MediaEntertainment": ("Book", "CD", "CellPhone", "Laptop", "Newspaper", "RemoteControl"),
    "Computers": ("Laptop",),
    "WaterContainers": ("Bowl", "Cup", "Mug", "Pot", "Kettle", "Bottle", "WineBottle"),
}


@lru_cache(maxsize=1)
def teach_object_classes() -> dict[str, list[str]]:
    """Object type -> its superclasses plus itself (TEACh's ``simbotObjectClass``)."""
    out: dict[str, list[str]] = {}
    for sup, members in SUPERCLASSES.items():
        for m in members:
            out.setdefault(m, []).append(sup)
    return out


def _build() -> dict[str, ObjectType]:
    classes = teach_object_classes()
    out: dict[str, ObjectType] = {}
    for name, kind, flags, size, color, rooms, capacity, height in _TABLE:
        out[name] = ObjectType(
            name=name,
            kind=kind,
            pickupable="P" in flags,
            receptacle="R" in flags,
            openable="O" in flags,
            toggleable="T" in flags,
            sliceable="S" in flags,
            cookable="C" in flags,
            dirtyable="D" in flags,
            can_fill="F" in flags,
            breakable="B" in flags,
            size=size,
            color=color,
            rooms=rooms,
            capacity=capacity,
            height=height,
            classes=tuple(classes.get(name, [])),
        )
    return out


OBJECT_TYPES: dict[str, ObjectType] = _build()


def object_type(name: str) -> ObjectType:
    """Look up a type by name; the error lists close matches."""
    try:
        return OBJECT_TYPES[name]
    except KeyError:
        import difflib

        close = difflib.get_close_matches(name, OBJECT_TYPES, n=5)
        raise KeyError(f"unknown object type {name!r}; did you mean one of {close}?") from None
