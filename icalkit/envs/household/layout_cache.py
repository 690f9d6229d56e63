"""Memo tables for facts that depend only on a scene's furniture layout, which never moves.

A layout is identified by its occupancy grid (``world.blocked``, one array per built world); the
table for a grid lives while the grid is among the last ``MAX_LAYOUTS`` used (the gym env keeps
up to 64 start worlds, whose grids stay alive, so the tables of their layouts stay warm). Navigation (free
cells, interaction poses) and visibility (furniture per cell, line-of-sight answers) use it.
"""

from __future__ import annotations

import threading
from typing import Any

from icalkit.envs.household.state import World

MAX_LAYOUTS = 64
_TABLES: dict[int, tuple[object, dict[str, dict]]] = {}
_LOCK = threading.Lock()


def layout_table(world: World, name: str, max_entries: int = 100_000) -> dict[Any, Any]:
    """The memo dict called ``name`` for ``world``'s layout (emptied when it exceeds ``max_entries``)."""
    key = id(world.blocked)
    with _LOCK:  # envs may run in threads; the LRU bookkeeping must not interleave
        entry = _TABLES.get(key)
        if entry is None or entry[0] is not world.blocked:  # the id of a freed grid was reused
            _TABLES.pop(key, None)
            if len(_TABLES) >= MAX_LAYOUTS:
                del _TABLES[next(iter(_TABLES))]  # the least recently used layout
            entry = _TABLES[key] = (world.blocked, {})
        elif next(reversed(_TABLES)) != key:
            _TABLES[key] = _TABLES.pop(key)  # most recently used last
    table = entry[1].setdefault(name, {})
    if len(table) > max_entries:
        table.clear()
    return table
