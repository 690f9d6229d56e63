"""TEACh primitives (the household simulator's action names) -> ``ai2thor.controller.Controller.step`` calls."""

from __future__ import annotations

from typing import Any

from icalkit.envs.household.actions import ACTIONS

MOVE_STEP, TURN_DEG, LOOK_DEG = 0.25, 90, 30
_MOTION = {
    "Forward": {"action": "MoveAhead", "moveMagnitude": MOVE_STEP},
    "Backward": {"action": "MoveBack", "moveMagnitude": MOVE_STEP},
    "Pan Left": {"action": "MoveLeft", "moveMagnitude": MOVE_STEP},
    "Pan Right": {"action": "MoveRight", "moveMagnitude": MOVE_STEP},
    "Turn Left": {"action": "RotateLeft", "degrees": TURN_DEG},
    "Turn Right": {"action": "RotateRight", "degrees": TURN_DEG},
    "Look Up": {"action": "LookUp", "degrees": LOOK_DEG},
    "Look Down": {"action": "LookDown", "degrees": LOOK_DEG},
}
_INTERACT = {"Pickup": "PickupObject", "Place": "PutObject", "Open": "OpenObject", "Close": "CloseObject",
             "ToggleOn": "ToggleObjectOn", "ToggleOff": "ToggleObjectOff", "Slice": "SliceObject",
             "Pour": "PourObject"}


class ActionError(ValueError):
    """An action name or target the THOR adapter cannot map (the message names it)."""


def thor_step(action: str, target: str | None = None) -> dict[str, Any] | None:
    """Keyword arguments of ``controller.step`` for one TEACh primitive; None for ``Stop``.

    Args:
        action: a name from :data:`icalkit.envs.household.actions.ACTIONS` (``"Turn Left"``, ``"Pickup"``).
        target: THOR object id for interactions (``Place``: the receptacle's id).

    Raises:
        ActionError: unknown action, or an interaction without a target.
    """
    if action == "Stop":
        return None
    if action in _MOTION:
        return dict(_MOTION[action])
    if action in _INTERACT:
        if not target:
            raise ActionError(f"action {action!r} needs a target object id")
        kwargs: dict[str, Any] = {"action": _INTERACT[action], "objectId": target, "forceAction": False}
        if action == "Place":
            kwargs["forceAction"] = True  # TEACh places on the receptacle the agent looks at
        return kwargs
    raise ActionError(f"unknown action {action!r}; the THOR adapter maps {sorted(set(ACTIONS) - {'Stop'})} and Stop")
