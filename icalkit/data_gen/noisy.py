"""Noisy, human-like demonstrator: the expert's plan with the mistakes people make.

The errors are those ICAL's paper describes in human demonstrations: unneeded moves and
look up/down, detours to unrelated furniture, picking up the wrong object and putting it back,
redundant placements, forgetting to close containers, and attempting an interaction before
walking close enough (a failed action). Each opportunity injects a mistake with probability
``noise``; the task is still usually finished because the plan itself is the expert's.
"""

from __future__ import annotations

import random
from collections import Counter

from icalkit.data_gen.actor import Actor, SkillError, StepFn
from icalkit.envs.household.state import World

FIDGETS = (("Look Up", "Look Down"), ("Look Down", "Look Up"), ("Turn Left", "Turn Right"),
           ("Turn Right", "Turn Left"), ("Turn Left",), ("Forward",), ("Backward",), ("Pan Left",))
FORGETTABLE = ("Cabinet", "Drawer", "Fridge")


class NoisyActor(Actor):
    """An :class:`Actor` that injects human-like mistakes; ``mistakes`` counts them by kind."""

    def __init__(self, world: World, step: StepFn, noise: float = 0.2, seed: int = 0,
                 max_steps: int = 1000) -> None:
        super().__init__(world, step, max_steps)
        if not 0.0 <= noise <= 1.0:
            raise ValueError(f"noise must be in [0, 1], got {noise}")
        self.noise = noise
        self.rng = random.Random(seed)
        self.mistakes: Counter[str] = Counter()
        self._busy = False  # no nested mistakes while making one

    def _chance(self, kind: str, scale: float = 1.0) -> bool:
        if self._busy or self.rng.random() >= self.noise * scale:
            return False
        self.mistakes[kind] += 1
        return True

    def goto(self, object_id: str) -> None:
        if self._chance("fidget"):
            for action in self.rng.choice(FIDGETS):
                self.act(action, check=False)
        if self._chance("detour", 0.5):
            furniture = [o.object_id for o in self.world.objects.values()
                         if o.type.kind == "furniture" and o.object_id != object_id]
            if furniture:
                self._busy = True
                try:
                    super().goto(self.rng.choice(furniture))
                except SkillError:
                    pass
                finally:
                    self._busy = False
        super().goto(object_id)

    def interact(self, action: str, object_id: str) -> None:
        if action == "Close" and self.world.objects[object_id].object_type in FORGETTABLE \
                and self.world.held is not None and self._chance("forgot_close", 0.5):
            return
        if action not in ("Open", "Close") and self._chance("too_early", 0.3):
            self.act(action, object_id, check=False)  # may fail: too far / not visible
            if self._action_done(action, object_id):
                return
        super().interact(action, object_id)

    def _action_done(self, action: str, object_id: str) -> bool:
        obj = self.world.objects.get(object_id)
        if action == "Pickup":
            return self.world.held == object_id
        if action == "Place":
            return self.world.held is None
        if action in ("ToggleOn", "ToggleOff"):
            return obj is not None and obj.is_toggled == (action == "ToggleOn")
        return obj is None  # Slice removes the whole object; Pour: assume not done

    def pickup(self, object_id: str) -> None:
        if self.world.held is None and self._chance("wrong_object", 0.7):
            self._wrong_pickup(object_id)
        super().pickup(object_id)

    def _wrong_pickup(self, object_id: str) -> None:
        wanted = self.world.objects[object_id]
        others = [o for o in self.world.objects.values()
                  if o.type.pickupable and o.object_id != object_id and o.parent
                  and self.container_of(o) is None and self.world.distance_to(o) < 3.0
                  and o.object_type != wanted.object_type]
        if not others:
            return
        wrong = self.nearest(others)
        home = wrong.parent
        self._busy = True
        try:
            super().pickup(wrong.object_id)
            super().place(home)  # put it back where it was
        except SkillError:
            self.put_down()
        finally:
            self._busy = False

    def place(self, receptacle_id: str, keep_open: bool = False) -> None:
        held = self.world.held
        super().place(receptacle_id, keep_open)
        if not held or self.world.objects[receptacle_id].type.kind != "furniture":
            return
        if self._chance("redundant_place", 0.5):
            self._busy = True
            try:
                self.act("Pickup", held, check=False)
                if self.world.held == held:
                    self.act("Place", receptacle_id)
            finally:
                self._busy = False
