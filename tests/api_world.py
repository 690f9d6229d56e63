"""A small kitchen, its toast task and an executor over a copy of it, shared by the API tests."""

from __future__ import annotations

import copy

from icalkit.agents.api import ApiConfig
from icalkit.agents.executor import Executor, ExecutorLimits
from icalkit.agents.sandbox import SandboxLimits
from icalkit.envs.household.scene import generate_scene
from icalkit.envs.household.simulator import Simulator
from icalkit.envs.household.state import World
from icalkit.envs.household.tasks.task import Task

REQUIRED = {"Mug": 1, "Bread": 1, "Knife": 1, "Toaster": 1, "Plate": 1}


def make_kitchen() -> World:
    return generate_scene(0, "train", "kitchen", REQUIRED)


def toast_task() -> Task:
    return Task("train/toast/0", "Toast", {}, "Toast", "Make a slice of toast.", [], "kitchen", 0,
                "train", REQUIRED)


def executor(world: World, **api: int) -> Executor:
    limits = ExecutorLimits(SandboxLimits(timeout_s=5.0), ApiConfig(**api))
    return Executor(Simulator(copy.deepcopy(world)), limits)


TOAST = """\
knife = InteractionObject("Knife")
knife.pickup()
bread = InteractionObject("Bread")
cabinet = InteractionObject("Cabinet", object_instance=BREAD_PARENT)
cabinet.open()
bread.slice()
knife.put_down()
toast = InteractionObject("BreadSliced", parent_object=bread)
toaster = InteractionObject("Toaster")
toast.pickup_and_place(toaster)
toaster.toggle_on()
toast.change_state("toasted", True)
"""


def toast_program(world: World) -> str:
    parent = world.of_type("Bread")[0].parent
    return TOAST.replace("BREAD_PARENT", repr(parent))
