"""Realistic mistakes injected into a correct program, for the planner's revision and review pairs."""

from __future__ import annotations

import random
import re
from collections.abc import Iterable
from typing import Any

INJECTED = ("skip_open", "wrong_object", "missing_step", "absent_object", "stop_early")
COPY = "retrieved_copy"  # not injected: the top retrieved example's program, grounded as deployed
COPIES = "deployed_copies"  # not injected: the deployed copy agent's whole episode (planner.model_replans' prompt)
MISTAKES = (*INJECTED, COPY, COPIES)
DEFAULT_MISTAKES = INJECTED[:3]
DEF_LINE = re.compile(r'^(\w+) = InteractionObject\("([A-Za-z]+)"(.*)\)$')


def inject_mistake(program: str, kind: str, rng: random.Random, classes: list[str],
                   absent: Iterable[str] = ()) -> str | None:
    """``program`` with one realistic mistake, or None when the kind does not apply.

    Args:
        kind: ``skip_open`` (drop an ``.open()``), ``wrong_object`` (another class shown in the
            prompt for one object), ``missing_step`` (drop one action line), ``absent_object`` (a
            class of the same TEACh kind that the room lacks for one object, as a program copied
            from an example of another room names: ``Cup`` where the room has a ``Mug``),
            ``stop_early`` (the program cut after one of its action lines, not the last: a copy that
            did part of the task, as one copied from an example with fewer objects does).
        classes: object classes the prompt shows (candidates for ``wrong_object``).
        absent: object classes the room lacks (candidates for ``absent_object``).
    """
    from icalkit.envs.household.catalog import OBJECT_TYPES

    def options(cls: str) -> list[str]:
        if kind == "wrong_object":
            return [c for c in classes if c != cls]
        kin = OBJECT_TYPES[cls].classes[:1] if cls in OBJECT_TYPES else ()
        return [c for c in absent if c != cls and OBJECT_TYPES[c].classes[:1] == kin and kin]

    lines = program.strip().splitlines()
    actions = [i for i, ln in enumerate(lines) if not DEF_LINE.match(ln) and not ln.endswith(".go_to()")]
    if kind == "skip_open":
        cands = [i for i in actions if lines[i].endswith(".open()")]
    elif kind in ("missing_step", "stop_early"):
        cands = actions if kind == "missing_step" else actions[:-1]
    elif kind in ("wrong_object", "absent_object"):
        cands = [i for i, ln in enumerate(lines) if (m := DEF_LINE.match(ln)) and "parent_object" not in ln
                 and options(m.group(2))]
    else:
        raise ValueError(f"unknown mistake {kind!r}; injected kinds: {INJECTED}")
    if not cands:
        return None
    i = rng.choice(cands)
    if kind in ("wrong_object", "absent_object"):
        var, cls, _ = DEF_LINE.match(lines[i]).groups()
        lines[i] = f'{var} = InteractionObject("{rng.choice(options(cls))}")'
    elif kind == "stop_early":
        del lines[i + 1:]
    else:
        del lines[i]
    return "\n".join(lines) + "\n"


def absent_classes(world: Any) -> list[str]:
    """The object classes ``world`` lacks (sliced ones aside): what an ``absent_object`` mistake names."""
    from icalkit.envs.household.catalog import OBJECT_TYPES

    present = {o.object_type for o in world.objects.values()}
    return sorted(t for t, ot in OBJECT_TYPES.items() if t not in present and ot.kind != "sliced")
