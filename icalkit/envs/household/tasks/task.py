"""A task instance: what to do, in which scene, and how success is checked."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

SPLITS = ("train", "valid_seen", "valid_unseen")


@dataclass
class Task:
    """One generated task instance.

    Attributes:
        task_id: unique id, e.g. ``"train/coffee/00012"``.
        task_type: one of the registered task types ("Coffee", "Boil X", "pick_and_place", ...).
        params: task parameters, e.g. ``{"X": "Potato"}`` or ``{"#0": "Mug", "#1": "CoffeeTable"}``.
        definition: TEACh-format definition name the goal checker evaluates (e.g. ``"Coffee"``).
        instruction: ALFRED-style goal sentence.
        dialogue: TEACh-style Commander/Driver turns, ``[(speaker, utterance), ...]``.
        room_type: kitchen | living_room | bedroom | bathroom.
        scene_seed: seed of the scene (layout + placements, interpreted per split).
        split: train | valid_seen | valid_unseen.
        required_objects: object types the scene must contain, with minimum counts.
        initial_state: state edits applied after scene generation, each
            ``{"type": "Plate", "set": {"is_dirty": True}, "count": "all" | int}``.
        reference_length: expert path length (primitive actions), filled in by the expert.
    """

    task_id: str
    task_type: str
    params: dict[str, Any]
    definition: str
    instruction: str
    dialogue: list[tuple[str, str]]
    room_type: str
    scene_seed: int
    split: str
    required_objects: dict[str, int] = field(default_factory=dict)
    initial_state: list[dict] = field(default_factory=list)
    reference_length: int | None = None

    def __post_init__(self) -> None:
        if self.split not in SPLITS:
            raise ValueError(f"task {self.task_id}: split {self.split!r} is not one of {SPLITS}")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Task:
        data = dict(data)
        data["dialogue"] = [tuple(t) for t in data.get("dialogue", [])]
        return cls(**data)

    def dialogue_text(self) -> str:
        """The dialogue as ``Commander: ...`` lines."""
        return "\n".join(f"{speaker}: {text}" for speaker, text in self.dialogue)
