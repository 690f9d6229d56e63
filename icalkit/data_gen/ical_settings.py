"""Settings of the ICAL loop: one dataclass, also the top-level keys of ``icalkit ical``'s config.

Kept apart from :mod:`icalkit.data_gen.ical` so that reading a config does not import the
executor and the simulator.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

DEMO_SOURCES = ("kinesthetic", "visual-idm", "agent")


@dataclass
class ICALSettings:
    """Knobs of the loop.

    Attributes:
        n_feedbacks: most feedback/update rounds per demonstration (ICAL: 5).
        abstraction: run the abstraction phase (False: start HITL from the raw program).
        hitl: run the human-in-the-loop phase (False: keep the abstraction if it executes).
        raw_demos: store unprocessed demonstrations, no LLM call (baseline memory).
        prune: with ``raw_demos``, drop the actions whose removal still solves the demonstration's
            own task, checked by the executor (:mod:`icalkit.data_gen.prune`; no model).
        transfer: after the loop, copy every stored example into the scenes of its type's other
            stored demonstrations and store how many it solves with the memory
            (:mod:`icalkit.data_gen.transfer`; no model), for ``planner.transfer_order``.
        transfer_tasks / transfer_types: with ``transfer``, also copy the examples of each type in
            ``transfer_types`` into ``transfer_tasks`` training-split tasks of that type (the types a
            fine-tune may train on; a held-out type keeps only its own demonstrations).
        relabel: relabel failed examples with what the partial execution achieved.
        keep_demo: when the loop ends without a working program (an unreadable answer, or still
            failing after the feedback rounds) but the demonstration's own program replays to
            success, store that program unchanged (status ``kept_demo``, provenance ``raw-demo``),
            so a task type never loses a verified demonstration to a weak model.
        k: examples retrieved per prompt.
        use_dialogue: show the TEACh dialogue (else the goal sentence) as the task.
        max_program_chars / max_example_chars / max_state_objects: prompt size limits.
        source: provenance source of the demonstrations (kinesthetic, visual-idm, agent).
    """

    n_feedbacks: int = 5
    abstraction: bool = True
    hitl: bool = True
    raw_demos: bool = False
    prune: bool = False
    transfer: bool = False
    transfer_tasks: int = 0
    transfer_types: list[str] = field(default_factory=list)
    relabel: bool = False
    keep_demo: bool = False
    k: int = 2
    use_dialogue: bool = True
    max_program_chars: int = 2500
    max_example_chars: int = 1500
    max_state_objects: int = 20
    source: Literal["kinesthetic", "visual-idm", "agent"] = "kinesthetic"

    def mode(self) -> str:
        """Short name of the ablation (part of example ids, so modes never collide)."""
        if self.raw_demos:
            return "raw-pruned" if self.prune else "raw"
        return f"ical{'' if self.abstraction else '-noabs'}{'' if self.hitl else '-nohitl'}"

    def check(self) -> None:
        """Raise ValueError naming a setting that is out of range or contradicts another."""
        if self.n_feedbacks < 0 or self.k < 0:
            raise ValueError("n_feedbacks and k must be >= 0")
        if min(self.max_program_chars, self.max_example_chars, self.max_state_objects) < 1:
            raise ValueError("max_program_chars, max_example_chars and max_state_objects must be >= 1")
        if self.source not in DEMO_SOURCES:
            raise ValueError(f"source {self.source!r} is not one of {list(DEMO_SOURCES)}")
        if self.transfer_tasks < 0 or (self.transfer_tasks and not (self.transfer and self.transfer_types)):
            raise ValueError("transfer_tasks (>= 0) needs transfer=true and transfer_types: the task types whose "
                             "training tasks may score the examples (a held-out type keeps only its demonstrations)")
        if self.keep_demo and self.raw_demos:
            raise ValueError("keep_demo=true keeps a demonstration the model could not improve: raw_demos=true "
                             "already stores every demonstration unchanged")
        if self.prune and not self.raw_demos:
            raise ValueError("prune=true prunes the raw demonstrations: it needs raw_demos=true")
        if not self.abstraction and not self.hitl and not self.raw_demos:
            raise ValueError("abstraction=false and hitl=false leave nothing to learn; use raw_demos=true "
                             "for the unprocessed-demonstration baseline")
