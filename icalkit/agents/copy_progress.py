"""One episode's progress against the demonstrations it copies, as the copy planner judges it without a
model (``planner.silent_next_copy=end_state``, ``named_next``, ``finish_placements``, ``finish_states``).

The room as the episode began, what the episode's calls touched since, the objects and places the
dialogue names: from these :meth:`CopyProgress.left` says what a copied demonstration's end state
still asks for (:mod:`icalkit.agents.demo_end_state`), :meth:`CopyProgress.untouched_named` which named
objects a next copy should handle, and :attr:`CopyProgress.repair` the program that finishes what is left
when nothing else is: moves onto the named places, the copy's work done to every object of a class.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from icalkit.agents.composition import ComposedDemo
from icalkit.agents.context import full_state
from icalkit.agents.demo_end_state import (
    Check,
    acted_on,
    class_of,
    demo_checks,
    goal_places,
    handled,
    named_classes,
    placement_repair,
    unmet,
    unnamed_in_episode,
)
from icalkit.agents.mention_grounding import MIN_SCORE
from icalkit.agents.state_repair import state_repair

PLACE_SCORE = 0.7  # "the table" for the DiningTable 0.71, "kitchen counter" for the CounterTop 0.78; not
# "coffee" for the CoffeeTable (0.68). Appliances ("toast": the Toaster 0.86) are no places at all.


class CopyProgress:
    """What one episode has done, against what its dialogue and copied demonstrations ask.

    Args:
        dialogue: the task's dialogue turns (or its instruction alone).
        executor: the episode's :class:`~icalkit.agents.executor.Executor` (its world and its calls).
        embedder: the mention re-grounding's sentence embedder.
        named: find the objects the dialogue names (``named_next``).
        places: find the receptacles it names, check containers served there and repair placements
            onto them (``finish_placements``); and onto a copied demonstration's own goal place (the Y
            of its "put all X on Y", renamed) where the dialogue names it as weakly as the mention
            re-grounding accepts (:data:`~icalkit.agents.mention_grounding.MIN_SCORE`: "the counter" for
            the bathroom's counter top, 0.67).
        states: repair unmet "every object" states with the copy's own block (``finish_states``).
    """

    def __init__(self, dialogue: list[Any], executor: Any, embedder: Any, named: bool = False,
                 places: bool = False, states: bool = False) -> None:
        self.dialogue, self.executor, self.embedder = dialogue, executor, embedder
        self.start = full_state(executor.sim.world)
        room = executor.runtime.known_types()
        self.named = set(named_classes(dialogue, room, embedder)) if named else set()
        self.places = set(named_classes(dialogue, room, embedder, PLACE_SCORE, places=True)) if places else set()
        self.near_places = set(named_classes(dialogue, room, embedder, MIN_SCORE, places=True)) if places else set()
        self.states = states
        self.repair: str | None = None  # the repair program; "" once it ran (one per episode)

    def touched(self) -> set[str]:
        """The object ids the episode's API calls and their successful primitives targeted."""
        calls = self.executor.runtime.calls
        return {c.object for c in calls} | {p.target for c in calls for p in c.primitives if p.success and p.target}

    def untouched_named(self) -> set[str]:
        """The objects the dialogue names of which the episode touched none (a piece counts for its whole)."""
        return self.named - handled(map(class_of, self.touched()))

    def left(self, example: Any, mapping: Mapping[str, str], program: str = "") -> list[str]:
        """What the room does not yet show of ``example``'s end state (its classes renamed by ``mapping``),
        and the named objects never touched, as text; empty when the copy finished the task. Where only
        what :meth:`finish` repairs is left, :attr:`repair` gets its program (``program``: the copy
        that just ran)."""
        now, touched = full_state(self.executor.sim.world), self.touched()
        acted = acted_on(self.start, now, touched)
        asked = (example.checks(self.places) if isinstance(example, ComposedDemo)  # its parts' checks, served
                 else demo_checks(example, mapping, self.places))
        checks = unmet(asked, now, acted, self.start)
        unnamed = unnamed_in_episode(self.dialogue, self.executor.runtime.known_types(), touched, self.embedder)
        if self.repair is None and not unnamed and checks:
            parts = [(p.example, p.mapping) for p in example.parts] if isinstance(example, ComposedDemo) \
                else [(example, mapping)]
            goals = {c for ex, renaming in parts for c in goal_places(ex, renaming)} & self.near_places
            self.repair = self.finish(checks, now, acted, program, self.places | goals) or None
        return [c.text() for c in checks] + [f"acted on the {c} the dialogue names" for c in unnamed]

    def finish(self, checks: list[Check], now: Mapping[str, dict], acted: set[str], program: str,
               goals: Collection[str] | None = None) -> str:
        """The program that meets unmet ``checks``: the placements onto ``goals`` (the places it may move
        things to; the named places by default) when all that is left are such (``finish_placements``);
        with ``finish_states``, when every state left is an "every object" state the copy's own block makes,
        that block for each object first, and then those placements where they are all that is left
        besides. "" when there is nothing it can do."""
        states, places = [c for c in checks if not c.on], [c for c in checks if c.on]
        goals = self.places if goals is None else goals
        moves = placement_repair(places, now, acted, goals) if goals and places else ""
        if not states:
            return moves
        fix = state_repair(states, now, program) if self.states else ""
        return fix + moves if fix else ""

    def take_repair(self) -> str:
        """The repair program, once: "" from then on."""
        program, self.repair = self.repair or "", ""
        return program
