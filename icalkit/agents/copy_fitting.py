"""A copied program fitted to the new room and dialogue before it runs: the objects the room lacks
that its demonstration only moved left out (``planner.drop_absent``,
:mod:`~icalkit.agents.absent_objects`), and its moves of a whole the room holds only as pieces
(``planner.drop_sliced``), as many pieces served as the dialogue asks
(``planner.piece_counts``, :mod:`~icalkit.agents.piece_counts`), and the dishes it serves in washed first
where they are dirty (``planner.wash_served``, :mod:`~icalkit.agents.served_vessels`). No model is asked."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from icalkit.agents.absent_objects import changed_classes, drop_absent, drop_sliced_moves
from icalkit.agents.piece_counts import dialogue_pieces, serve_pieces
from icalkit.agents.planner_config import PlannerConfig
from icalkit.agents.served_vessels import wash_served
from icalkit.envs.household.tasks.task import Task
from icalkit.memory.keys import dialogue_turns


def whole_room(runtime: Any) -> set[str] | None:
    """The room's object classes where the evaluation's object map shows the whole room; None without
    it (an object not seen yet is not an absent one)."""
    return runtime.known_types() if runtime.config.oracle_object_map else None


def fit_copy(program: str, example: Any, mapping: Mapping[str, str], task: Task, runtime: Any,
             cfg: PlannerConfig) -> str:
    """``program`` (``example``'s, its classes renamed by ``mapping``) as ``cfg`` fits it to ``task``
    in the room ``runtime`` knows; absent objects only where the evaluation's object map shows the
    whole room (an object not seen yet is not an absent one)."""
    room = whole_room(runtime)
    if cfg.drop_absent and room is not None:
        program = drop_absent(program, room, changed_classes(example, mapping))[0]
    if cfg.drop_sliced and room is not None:
        program = drop_sliced_moves(program, room)[0]
    if cfg.piece_counts:  # what the Commander asks (a Driver's "6 slices on the counter" is no request)
        asked = dialogue_pieces(dialogue_turns(task.dialogue), task.instruction)
        program = serve_pieces(program, asked)[0]
    return wash_served(program)[0] if cfg.wash_served else program
