"""World state of the household simulator: objects, agent pose, occupancy grid.

Coordinates follow AI2-THOR: ``x`` and ``z`` on the floor (metres), ``y`` up. The floor is a grid
of ``GRID`` = 0.25 m cells; cell ``(i, j)`` has its centre at ``x = (i + 0.5) * GRID``,
``z = (j + 0.5) * GRID``. Yaw is in degrees, 0 = facing +z, 90 = facing +x (clockwise seen from
above, as in AI2-THOR); pitch (camera horizon) is in degrees, positive = looking down.

Python attributes are snake_case; :meth:`SimObject.metadata` gives the AI2-THOR / TEACh metadata
dict (``objectId``, ``objectType``, ``isDirty``, ``parentReceptacles``, ...) that goal checkers,
text states and the AI2-THOR adapter all share.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from icalkit.envs.household.catalog import OBJECT_TYPES, ObjectType

GRID = 0.25
YAWS = (0, 90, 180, 270)
PITCHES = (-30, 0, 30, 60)
INTERACT_DISTANCE = 1.5
HAND_REACH, HAND_HEIGHT = 0.3, 1.0  # held objects sit this far in front of the agent, this high


@dataclass
class SimObject:
    """One object instance with AI2-THOR state."""

    object_id: str
    object_type: str
    position: tuple[float, float, float]
    facing: int = 0  # furniture: yaw the front faces (into the room)
    cells: tuple[tuple[int, int], ...] = ()  # furniture: occupied grid cells
    parent: str | None = None  # receptacle holding this object
    children: list[str] = field(default_factory=list)
    controls: str | None = None  # StoveKnob -> StoveBurner id, Faucet -> SinkBasin id
    sliced_from: str | None = None  # XSliced -> the X it was cut from
    is_open: bool = False
    is_toggled: bool = False
    is_dirty: bool = False
    is_cooked: bool = False
    is_sliced: bool = False
    is_filled: bool = False
    fill_liquid: str | None = None  # water | coffee | wine
    is_boiled: bool = False
    is_cooled: bool = False  # has been inside a closed fridge (ALFRED's cool)
    is_picked_up: bool = False
    is_broken: bool = False

    @property
    def type(self) -> ObjectType:
        return OBJECT_TYPES[self.object_type]

    @property
    def is_coffee(self) -> bool:
        return self.is_filled and self.fill_liquid == "coffee"

    def metadata(self, world: World | None = None) -> dict:
        """AI2-THOR-style metadata dict (``parentReceptacles`` lists all ancestors)."""
        t = self.type
        parents: list[str] = []
        if world is not None:
            p = self.parent
            while p is not None:
                parents.append(p)
                p = world.objects[p].parent
        elif self.parent:
            parents = [self.parent]
        x, y, z = self.position
        if world is not None and world.held is not None and (world.held == self.object_id or world.held in parents):
            x, y, z = world.hand_position()
        return {
            "objectId": self.object_id,
            "objectType": self.object_type,
            "name": self.object_id,
            "position": {"x": x, "y": y, "z": z},
            "pickupable": t.pickupable,
            "receptacle": t.receptacle,
            "openable": t.openable,
            "toggleable": t.toggleable,
            "sliceable": t.sliceable,
            "cookable": t.cookable,
            "dirtyable": t.dirtyable,
            "canFillWithLiquid": t.can_fill,
            "breakable": t.breakable,
            "isOpen": self.is_open,
            "isToggled": self.is_toggled,
            "isDirty": self.is_dirty,
            "isCooked": self.is_cooked,
            "isSliced": self.is_sliced,
            "isFilledWithLiquid": self.is_filled,
            "fillLiquid": self.fill_liquid,
            "isPickedUp": self.is_picked_up,
            "isBroken": self.is_broken,
            "simbotIsCooked": self.is_cooked,
            "simbotIsFilledWithCoffee": self.is_coffee,
            "simbotIsFilledWithWater": self.is_filled and self.fill_liquid == "water",
            "simbotIsBoiled": self.is_boiled,
            "isCooled": self.is_cooled,
            "simbotObjectClass": [self.object_type, *t.classes],
            "simbotIsReceptacleOf": list(self.children),
            "parentReceptacles": parents,
            "receptacleObjectIds": list(self.children),
            "slicedFrom": self.sliced_from,
        }


@dataclass
class AgentPose:
    """Agent position on the grid (cell indices) and view direction."""

    i: int
    j: int
    yaw: int = 0
    pitch: int = 0

    @property
    def x(self) -> float:
        return (self.i + 0.5) * GRID

    @property
    def z(self) -> float:
        return (self.j + 0.5) * GRID

    def forward_delta(self) -> tuple[int, int]:
        """Grid step (di, dj) for one Forward move at the current yaw."""
        return {0: (0, 1), 90: (1, 0), 180: (0, -1), 270: (-1, 0)}[self.yaw]

    def copy(self) -> AgentPose:
        return AgentPose(self.i, self.j, self.yaw, self.pitch)


@dataclass
class World:
    """Everything that changes during an episode."""

    scene_id: str
    room_type: str
    seed: int
    split: str
    n_i: int  # grid cells along x
    n_j: int  # grid cells along z
    objects: dict[str, SimObject]
    agent: AgentPose
    held: str | None = None
    blocked: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=bool))
    id_counters: dict[str, int] = field(default_factory=dict)

    def copy(self) -> World:
        """An independent copy (same as ``copy.deepcopy`` for everything an episode changes).

        The occupancy grid ``blocked`` is shared: furniture never moves, and sharing it keeps the
        per-layout memo tables (:mod:`layout_cache`) valid for the copy.
        """
        objects = {}
        for oid, obj in self.objects.items():
            dup = object.__new__(SimObject)  # copy.copy without its generic machinery (resets are hot)
            dup.__dict__.update(obj.__dict__)
            dup.children = list(obj.children)
            objects[oid] = dup
        return World(self.scene_id, self.room_type, self.seed, self.split, self.n_i, self.n_j, objects,
                     self.agent.copy(), self.held, self.blocked, dict(self.id_counters))

    def new_id(self, object_type: str) -> str:
        """Next free instance id for a type, e.g. ``Mug_3``."""
        n = self.id_counters.get(object_type, 0) + 1
        self.id_counters[object_type] = n
        return f"{object_type}_{n}"

    def hand_position(self) -> tuple[float, float, float]:
        """Where a held object is: ``HAND_REACH`` m in front of the agent at ``HAND_HEIGHT``."""
        a = self.agent
        di, dj = a.forward_delta()
        return (round(a.x + di * HAND_REACH, 4), HAND_HEIGHT, round(a.z + dj * HAND_REACH, 4))

    def of_type(self, object_type: str) -> list[SimObject]:
        return [o for o in self.objects.values() if o.object_type == object_type]

    def distance_to(self, obj: SimObject) -> float:
        """Horizontal distance from the agent to an object (metres)."""
        x, _, z = obj.position
        return math.hypot(x - self.agent.x, z - self.agent.z)

    def metadata(self) -> list[dict]:
        """AI2-THOR ``event.metadata['objects']`` equivalent for all objects."""
        return [o.metadata(self) for o in self.objects.values()]
