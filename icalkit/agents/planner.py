"""Deployment agent: ICAL's Algorithm S2 (retrieval-augmented program planning with re-planning).

For a new task the agent retrieves the top-k learned examples by the aggregated similarity
(instruction + abstracted text state [+ frame]; the task's own id is excluded), prompts the model
with the task, the abstracted state, the API documentation and the examples, and asks for a
summary, an abstracted state, a plan and the program. The program runs in the executor; on an
execution error the model is re-prompted with the error and the code that already ran, up to
``max_replans`` times. Modes (one agent for every planner variant in evaluation):

- ``ical``: the above.
- ``zero_shot``: chain-of-thought without examples (no memory needed).
- ``rerank``: answers generated from disjoint retrieval sets (top 1–k, k+1–2k, ...) are scored by
  the model itself (``planner_score``) and the best one is executed.
- ``flat``: LLM-Planner — a flat high-level plan from kNN (instruction, plan) examples, with
  grounded re-planning that lists the objects observed so far.
- ``copy``: no model at all — the top retrieved example's program is executed as it is (the baseline
  that shows what retrieval alone buys). ``ical`` with ``copy_first``: that copy is the first attempt
  and the model writes the re-plans from the executor's feedback on it. ``copy`` with ``model_replans``:
  the copies (``copy_fallback``) come first and the model re-plans only after the last of them fails
  with an error (with ``review_done``, also after a copy that ends without one).

Unparseable output gets one re-ask and then counts as a failed attempt (never a crash). Whether the agent also
re-plans when a program ends without error but the goal does not hold is ``oracle_goal_feedback`` (ground truth).
"""

from __future__ import annotations

import ast
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from icalkit.agents import composition
from icalkit.agents.api.docs import api_documentation
from icalkit.agents.api.household import classes_not_found
from icalkit.agents.context import (
    example_program,
    format_examples,
    program_classes,
    retrieval_state,
    retrieval_text,
    room_fit_order,
    task_text,
    transfer_rates,
)
from icalkit.agents.copy_fitting import fit_copy, whole_room
from icalkit.agents.copy_progress import CopyProgress
from icalkit.agents.demo_end_state import handled
from icalkit.agents.executor import Executor, ExecutorLimits, Trace
from icalkit.agents.feedback import (
    NEXT_COPY_TEXT,
    REVIEW_TEXT,
    UNFINISHED_TEXT,
    action_feedback,
    goal_feedback,
)
from icalkit.agents.flat_plans import action_space_text, parse_flat_answer, program_to_flat
from icalkit.agents.grounding import grounded_answer, parse_replacements, reground_target, replace_classes
from icalkit.agents.llm_session import Answer, CallStats, LLMSession
from icalkit.agents.mention_grounding import CachedEmbedder, mention_replacements
from icalkit.agents.parsing import parse_program_answer, parse_score
from icalkit.agents.plan_prompts import (
    ZERO_SHOT_EXAMPLES,
    planner_state_text,
    program_prompt,
    reground_classes,
    reground_prompt,
    replan_program_prompt,
)
from icalkit.agents.planner_config import PlannerConfig
from icalkit.agents.prompts import load_template
from icalkit.agents.request_reading import READ_REQUEST, grounded_reading, parse_reading, reader_prompt
from icalkit.agents.review_guard import REVIEW_GUARD_TEXT, moved_placed, placed_ids
from icalkit.agents.stand_ins import stand_ins
from icalkit.envs.household.tasks.checker import check_goal
from icalkit.envs.household.tasks.task import Task

REGROUND_TOKENS = 64  # a few "A -> B" lines
REVIEW_DECISION_TOKENS = 64  # "Program:\n```python\n# the task is complete\n```" and room to spare


@dataclass
class EpisodeResult:
    """The record of one planned episode (one JSONL line)."""

    task_id: str
    task_type: str
    split: str
    mode: str
    success: bool
    satisfied: int
    total: int
    init_satisfied: int
    init_total: int
    steps: int
    ref_len: int | None
    attempts: int
    replans: int
    failed_attempts: int
    model: str
    llm: dict[str, Any]
    retrieved: list[str] = field(default_factory=list)
    retrieval_error: str = ""
    programs: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    rerank_scores: list[float] = field(default_factory=list)
    trace: list[dict[str, Any]] = field(default_factory=list)
    oracle: dict[str, bool] = field(default_factory=dict)
    copies_left: int = 0  # ``copy`` mode: retrieved candidates not copied when the episode ended
    wall_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def trace_summary(trace: Trace | None) -> list[dict[str, Any]]:
    """The API calls of a trace as compact records (line, call, object, success, error, primitives)."""
    if trace is None:
        return []
    return [{"line": c.line, "call": c.method, "object": c.object, "success": c.success, "error": c.error,
             "primitives": len(c.primitives)} for c in trace.calls]


def flat_example_text(examples: list[Any]) -> str:
    """Examples as LLM-Planner (instruction, flat plan) pairs."""
    blocks = [f"Task: {ex.instruction_text()}\nPlan:\n" + "\n".join(steps)
              for ex in examples if (steps := program_to_flat(example_program(ex)))]
    return "\n\n".join(blocks) or "(no examples)"


class Planner:
    """The deployment agent; one instance plans many episodes.

    Args:
        llm_session: model with sampling settings (completion length, temperature, seed); None
            only for ``copy``.
        memory: an :class:`~icalkit.memory.example_memory.ExampleMemory`; None only for
            ``zero_shot``.
        config: planner settings.
        limits: executor limits (TEACh budgets).
    """

    def __init__(self, llm_session: LLMSession | None, memory: Any | None, config: PlannerConfig | None = None,
                 limits: ExecutorLimits | None = None) -> None:
        self.cfg = config or PlannerConfig()
        self.cfg.validate()
        if memory is None and self.cfg.mode != "zero_shot":
            raise ValueError(f"planner mode {self.cfg.mode!r} needs an example memory (or use mode=zero_shot)")
        if llm_session is None and self.cfg.uses_model:
            raise ValueError(f"planner mode {self.cfg.mode!r} needs a model (only mode=copy without "
                             f"model_replans or silent_next_copy=review runs without one)")
        self.llm, self.memory, self.limits = llm_session, memory, limits or ExecutorLimits()
        if self.cfg.precondition_checks != self.limits.api.precondition_checks:
            api = replace(self.limits.api, precondition_checks=self.cfg.precondition_checks)
            self.limits = replace(self.limits, api=api)
        flat = self.cfg.mode == "flat"
        self.t_plan = load_template("planner_flat" if flat else "planner")
        self.t_replan = load_template("planner_flat_replan" if flat else "planner_replan")
        self.t_score = load_template("planner_score")
        self.t_reground = load_template("planner_reground")
        self.api = api_documentation()
        self._rates: dict[str, float] | None = None
        self._mentions: Any = None
        self._composer: composition.Composer | None = None  # compose_parts: composite types, read once
        # ``copy`` mode: the prompt the last episode ended without asking because no model re-plan was left
        # (after an error, or a copy's silent end with review_done); the ``deployed_copies`` pairs' prompts
        self.unasked_replan: list[dict] | None = None
        self.copied: dict[str, dict[str, str]] = {}  # example id -> the class renaming its last copy ran with
        self.progress: CopyProgress | None = None  # silent_next_copy=end_state, named_next: the episode's

    # ---------------------------------------------------------------- retrieval
    def retrieve(self, task: Task, state: dict, frame: Any = None,
                 room: set[str] | None = None) -> tuple[list[list[Any]], str]:
        """Example sets for the prompts (one set; ``rerank``: ``rerank_sets`` disjoint sets); ``room``:
        the object types the executor can find, for ``room_fit``."""
        if self.cfg.mode == "zero_shot":
            return [[]], ""
        from icalkit.memory.example_memory import EmptyMemoryError

        n_sets = 1  # rerank: disjoint sets to compare; copy_fallback: a candidate per attempt and spares
        if self.cfg.mode == "rerank":
            n_sets = self.cfg.rerank_sets
        elif self.cfg.mode == "copy" and self.cfg.copy_fallback:
            n_sets = max(self.cfg.max_replans + 1, self.cfg.room_fit)
        use_frame = frame if (self.cfg.use_frame and getattr(self.memory, "image_embedder", None)) else None
        try:
            weights = (1.0, 0.0, 0.0) if self.cfg.mode == "flat" else None  # LLM-Planner: kNN by instruction
            hits = self.memory.retrieve(retrieval_text(task, self.memory), state, use_frame,
                                        k=max(self.cfg.k * n_sets, self.cfg.room_fit),
                                        exclude_task_ids=[task.task_id], weights=weights)
        except EmptyMemoryError as exc:
            return [[]], str(exc)
        examples = [h.example for h in hits]
        if self.cfg.room_fit and room is not None:
            examples = room_fit_order(examples, room, self._transfer())
        sets = [examples[i * self.cfg.k:(i + 1) * self.cfg.k] for i in range(n_sets)]
        return [s for s in sets if s] or [[]], ""

    def _transfer(self) -> dict[str, float] | None:
        """Example id -> transfer rate (``transfer_order``; read from the memory once)."""
        if not self.cfg.transfer_order:
            return None
        if self._rates is None:
            self._rates = transfer_rates(self.memory)
        return self._rates

    def _examples_text(self, examples: list[Any]) -> str:
        if self.cfg.mode == "flat":
            return flat_example_text(examples)
        return format_examples(examples) if examples else ZERO_SHOT_EXAMPLES

    # ---------------------------------------------------------------- prompting
    def _state(self, executor: Executor, task: Task) -> str:
        return planner_state_text(executor.sim.world, task, self.cfg.max_state_objects)

    def _objects(self, executor: Executor, observed: bool) -> str:
        ids = sorted(executor.runtime.seen) if observed else executor.sim.visible_objects()
        types = sorted({executor.sim.world.objects[i].object_type for i in ids if i in executor.sim.world.objects})
        return ", ".join(types) or "(none)"

    def _parse(self, text: str) -> Any:
        return parse_flat_answer(text) if self.cfg.mode == "flat" else parse_program_answer(text)

    def _program_of(self, answer: Answer) -> str | None:
        if answer.value is None:
            return None
        return "\n".join(answer.value) if self.cfg.mode == "flat" else answer.value["Program"]

    def _first_prompt(self, task: Task, executor: Executor, examples: list[Any]) -> list[dict]:
        examples = composition.demonstrations(examples)  # a composed copy shows its parts
        if self.cfg.mode != "flat":  # one source with the fine-tuning pairs (plan_prompts)
            return program_prompt(task, executor.sim.world, examples, self.cfg.use_dialogue,
                                  self.cfg.max_state_objects)
        return self.t_plan.render(examples=self._examples_text(examples), task=task_text(task, self.cfg.use_dialogue),
                                  actions=action_space_text(with_stop=False), objects=self._objects(executor, False))

    def _replan_prompt(self, task: Task, executor: Executor, examples: list[Any], program: str,
                       completed: str, error: str) -> list[dict]:
        examples = composition.demonstrations(examples)
        if self.cfg.mode != "flat":
            return replan_program_prompt(task, executor.sim.world, examples, program, completed, error,
                                         self.cfg.use_dialogue, self.cfg.max_state_objects)
        return self.t_replan.render(examples=self._examples_text(examples), task=task_text(task, self.cfg.use_dialogue),
                                    completed=completed or "(nothing)", error=error,
                                    actions=action_space_text(with_stop=False), objects=self._objects(executor, True))

    def propose(self, task: Task, executor: Executor, sets: list[list[Any]], stats: CallStats,
                scores: list[float]) -> tuple[Answer, list[Any], list[dict]]:
        """First answer (re-ranked over the retrieval sets in ``rerank`` mode), its examples and the
        prompt it answered (in ``copy`` mode the prompt a model would have had, for ``ground_ids``;
        else empty)."""
        if self.cfg.mode == "copy" or self.cfg.copy_first and sets[0]:  # copy_first with no example: the model
            return self.copy(task, executor, sets[0], stats)
        prompts = [self._first_prompt(task, executor, s) for s in sets]
        answers = self.llm.ask(prompts, self._parse, self.t_plan.prompt_id, [stats] * len(prompts))
        if len(answers) == 1:
            return answers[0], sets[0], prompts[0]
        parsed = [i for i, a in enumerate(answers) if a.value is not None]
        score_prompts = [self.t_score.render(task=task_text(task, self.cfg.use_dialogue),
                                             state=self._state(executor, task), answer=answers[i].text)
                         for i in parsed]
        rated = self.llm.ask(score_prompts, parse_score, self.t_score.prompt_id, [stats] * len(parsed),
                             max_new_tokens=16)
        by_index = {i: (r.value if r.value is not None else 0.0) for i, r in zip(parsed, rated, strict=True)}
        scores += [by_index.get(i, -1.0) for i in range(len(answers))]
        best = max(range(len(answers)), key=lambda i: (by_index.get(i, -1.0), -i))
        return answers[best], sets[best], prompts[best]

    def copy(self, task: Task, executor: Executor, examples: list[Any], stats: CallStats
             ) -> tuple[Answer, list[Any], list[dict]]:
        """The first example's program as the answer, re-grounded as configured (a composed one as it
        is), its examples and the prompt a model would have had (for ``ground_ids``)."""
        first = examples[0] if examples else None
        if isinstance(first, composition.ComposedDemo):  # its parts were re-grounded and fitted one by one
            program, mapping = first.program, {}
        else:
            program, mapping = self.copied_program(task, executor, first, stats) if first else ("", {})
        if first is not None:
            self.copied[first.example_id] = mapping  # for silent_next_copy=end_state
        prompt = self._first_prompt(task, executor, examples) if self.cfg.ground_ids else []
        return (Answer({"Program": program}, program) if program.strip()
                else Answer(None, "", "no example was retrieved to copy")), examples, prompt

    def copied_program(self, task: Task, executor: Executor, example: Any, stats: CallStats
                       ) -> tuple[str, dict[str, str]]:
        """``example``'s program re-grounded for ``task`` as configured and fitted to this room and dialogue
        (``drop_absent``, ``piece_counts``), and the class renaming it ran with."""
        program = example_program(example)
        mapping: dict[str, str] = {}
        if self.cfg.oracle_reground and program:
            mapping = reground_target(example, task, program) or {}
        elif self.cfg.mention_reground and program:
            mapping = self._mentioned(task, executor, example)
        elif self.cfg.reground and program:
            mapping = self.replacements(task, executor, example, stats)
        if self.cfg.stand_ins and program and (room := whole_room(executor.runtime)) is not None:
            mapping |= stand_ins(example, program, mapping, room, task.dialogue or [task.instruction],
                                 self._mention_embedder())
        return fit_copy(replace_classes(program, mapping), example, mapping, task, executor.runtime, self.cfg), mapping

    def composed(self, task: Task, executor: Executor, sets: list[list[Any]], stats: CallStats) -> list[list[Any]]:
        """``compose_parts``: a copy of each dish the request lists (read by the model with ``request_reader``),
        composed into one (:mod:`~icalkit.agents.composition`), ahead of the retrieved ``sets``
        (:func:`~icalkit.agents.composition.ahead`) when the retrieved type reads its dishes and one is found."""
        if self._composer is None:
            self._composer = composition.Composer(self.memory, self._transfer(), self.cfg.room_fit,
                                                  self.cfg.compose_dishes, self.cfg.single_dish)
        room, dialogue, top_type = executor.runtime.known_types(), task.dialogue or [task.instruction], sets[0][0].task_type
        answer = (self.llm.ask([reader_prompt(dialogue)], parse_reading, READ_REQUEST, [stats])[0].value
                  if self.cfg.request_reader and self._composer.reads(top_type) else None)
        fill = self.cfg.fill_missed_dishes and (not self.cfg.fill_only_meals or top_type in self._composer.composite_types())
        reading = grounded_reading(answer, dialogue, fill)
        found, serving = self._composer.parts(dialogue, top_type, room, task.task_id, reading)
        copies = [(i, e, self.copied_program(composition.item_task(task, i), executor, e, stats)) for i, e in found]
        parts = [composition.Part(i, e, mapping, program) for i, e, (program, mapping) in copies]  # for its item alone
        place = composition.serving_place(serving, room, self._mention_embedder(), dialogue)
        return composition.ahead(composition.compose(parts, place), sets)

    def _mention_embedder(self) -> Any:
        """The bundled MiniLM for ``mention_reground`` — the memory's own where it is that one: a learned
        retriever, trained to tell task types apart, matched the parameters' replacements less often."""
        if self._mentions is None:
            from icalkit.memory.embed import SentenceTransformerEmbedder, default_text_model_path

            own = getattr(self.memory, "text_embedder", None)
            self._mentions = CachedEmbedder(own if getattr(own, "path", None) == default_text_model_path().resolve()
                                            else SentenceTransformerEmbedder())
        return self._mentions

    def _mentioned(self, task: Task, executor: Executor, example: Any) -> dict[str, str]:
        """``mention_reground``'s class renaming of ``example`` for ``task`` in the room as it is now."""
        return mention_replacements(example, task.dialogue or [task.instruction], executor.runtime.known_types(),
                                    self._mention_embedder())

    def _handles(self, task: Task, executor: Executor, example: Any) -> set[str]:
        """The objects ``example``'s program handles once re-grounded for ``task``."""
        return handled(program_classes(replace_classes(example_program(example),
                                                       self._mentioned(task, executor, example))))

    def by_named(self, task: Task, executor: Executor, sets: list[list[Any]], wanted: set[str]) -> list[list[Any]]:
        """``named_next``: ``sets`` (by their first example), those whose re-grounded program handles more of
        the ``wanted`` objects first; ties in the order given."""
        def covers(item: tuple[int, list[Any]]) -> tuple[int, int]:
            i, examples = item
            return -len(wanted & self._handles(task, executor, examples[0])) if wanted and examples else 0, i

        return [s for _, s in sorted(enumerate(sets), key=covers)]

    def next_copy(self, task: Task, executor: Executor, rest: list[list[Any]], missing: set[str], stats: CallStats
                  ) -> tuple[Answer, list[Any], list[dict], list[list[Any]]]:
        """``copy_fallback``: the copy of the first remaining example whose re-grounded program names no
        class the executor reported missing ("No Bread has been found"), else of the first one; and
        the examples still left. With ``named_next`` the remaining examples are taken in the order of
        how many of the named objects the episode has not touched yet they handle."""
        if self.cfg.named_next:
            rest = self.by_named(task, executor, rest, self.progress.untouched_named())
        copies = (self.copy(task, executor, examples, stats) for examples in rest)
        for i, (answer, examples, prompt) in enumerate(copies):
            if not program_classes(answer.text) & missing:
                return answer, examples, prompt, rest[:i] + rest[i + 1:]
        return (*self.copy(task, executor, rest[0], stats), rest[1:])

    def copy_more(self, task: Task, executor: Executor, examples: list[Any], program: str, completed: str,
                  stats: CallStats) -> str | None:
        """``silent_next_copy``: why a copy that ended without an error is followed by the next one, or None
        when it is not — always; while the room does not meet the copied demonstration's end state
        (``end_state``, :mod:`icalkit.agents.demo_end_state`: the unmet checks are the reason); or unless
        the model's review (the ``review_done`` prompt) answers the empty program. Only the answer's start
        is generated (``REVIEW_DECISION_TOKENS``, not re-asked): an answer that is unreadable, or whose
        code block is not closed (cut there), counts as work left, as a program does."""
        if self.cfg.silent_next_copy == "always":
            return NEXT_COPY_TEXT
        if self.cfg.silent_next_copy == "end_state":  # the episode's work against the copied demonstration's
            left = self.progress.left(examples[0], self.copied.get(examples[0].example_id, {}), program)
            return f"{NEXT_COPY_TEXT}: not yet {left[0]}" if left else None
        if self.cfg.silent_next_copy != "review":
            return None
        prompt = self._replan_prompt(task, executor, examples, program, completed, REVIEW_TEXT)
        answer = self.llm.ask([prompt], self._parse, self.t_replan.prompt_id, [stats],
                              max_new_tokens=REVIEW_DECISION_TOKENS, reask=False)[0]
        left = self._program_of(answer)
        done = left is not None and not ast.parse(left).body and answer.text.count("```") >= 2  # closed, empty
        return None if done else NEXT_COPY_TEXT

    def replacements(self, task: Task, executor: Executor, example: Any, stats: CallStats) -> dict[str, str]:
        """The model's answer to ``planner_reground``: which of ``example``'s classes stand for the task's."""
        used, room = reground_classes(task, executor.sim.world, example, self.cfg.max_state_objects)
        prompt = reground_prompt(task, example, used, room, self.cfg.use_dialogue)
        answer = self.llm.ask([prompt], lambda text: parse_replacements(text, used, room), self.t_reground.prompt_id,
                              [stats], max_new_tokens=REGROUND_TOKENS)[0]
        return answer.value or {}

    # ---------------------------------------------------------------- the episode
    def run_episode(self, task: Task, env: Any, ref_len: int | None = None, frame: Any = None) -> EpisodeResult:
        """Plan and execute one task on a freshly reset env (or Simulator) holding its world.

        Args:
            task: the task (its id is excluded from retrieval).
            env: ``HouseholdEnv`` after ``reset(options={"task": task})``, or a ``Simulator``.
            ref_len: expert path length, copied into the result.
            frame: the first RGB frame, for the visual retrieval signal.
        """
        start = time.perf_counter()
        stats = CallStats()
        self.unasked_replan = None
        self.copied = {}
        executor = Executor(env, self.limits)
        self.progress = CopyProgress(task.dialogue or [task.instruction], executor, self._mention_embedder(),
                                     self.cfg.named_next, self.cfg.finish_placements, self.cfg.finish_states
                                     ) if self.cfg.silent_next_copy == "end_state" or self.cfg.named_next else None
        goal0 = check_goal(task, executor.sim.world.metadata())
        state0 = retrieval_state(executor.sim.world, task)  # the same query state as ICAL learning
        sets, retrieval_error = self.retrieve(task, state0, frame, executor.runtime.known_types())
        if self.cfg.compose_parts and sets[0]:  # a request of several dishes: one copy of each, composed, first
            sets = self.composed(task, executor, sets, stats)
        scores: list[float] = []
        answer, examples, prompt = self.propose(task, executor, sets, stats, scores)
        programs, errors, failed, replans, reviewed, revisions, repaired = [], [], 0, 0, False, 0, 0
        rest, missing = [s for s in sets[1:] if s] if self.cfg.mode == "copy" else [], set()
        trace: Trace | None = None
        mode = "flat" if self.cfg.mode == "flat" else "python"
        last_program, completed = "", ""
        for attempt in range(self.cfg.max_replans + self.cfg.model_replans + 1 + self.cfg.repairs):
            program, more = self._program_of(answer), None
            if program is not None and self.cfg.ground_ids and prompt is not None:  # the prompt this answer came from
                program = grounded_answer(program, prompt)
            if program is None:
                failed += 1
                error = f"the answer could not be read ({answer.error})"
            elif reviewed and not ast.parse(program).body:  # the review's answer: nothing is left to do
                programs.append(program)
                break
            elif errors[-1:] == [REVIEW_TEXT] and self.cfg.review_keeps_placed and (  # the review's answer
                    moved := moved_placed(program, placed_ids(executor.runtime.calls))):  # would undo placed work
                programs.append(program)
                errors.append(f"{REVIEW_GUARD_TEXT}: it picks up {moved}, which the episode already placed")
                break
            else:
                programs.append(program)
                trace = executor.run(program, task, mode=mode)
                error = action_feedback(trace)
                last_program = trace.program
                done = trace.failure.completed if trace.failure else trace.program
                completed = "\n".join(x for x in (completed, done) if x.strip())
                review = (error is None and self.cfg.review_done and not reviewed  # copy mode: a copy's, one of model_replans
                          and (not revisions if self.cfg.mode == "copy" else attempt < self.cfg.max_replans))
                copies_left = bool(rest) and attempt - repaired < self.cfg.max_replans
                more = (self.copy_more(task, executor, examples, last_program, completed, stats)  # silent_next_copy
                        if error is None and (copies_left or self.cfg.silent_next_copy == "end_state") else None)
                if more and not copies_left:  # the copies spent: the repair, the model's re-plan or the record
                    more = more.replace(NEXT_COPY_TEXT, UNFINISHED_TEXT, 1)
                if trace.success and not review and not more:  # a review is asked whether or not the task is done
                    break
                if error is None and not trace.success and self.cfg.oracle_goal_feedback:
                    error = goal_feedback(trace)
                if more and error is None:  # not a failed attempt: the agent goes on copying
                    error = more
                elif error is None:  # the program ended and the agent believes the task is done
                    if not review:
                        break
                    reviewed, error = True, REVIEW_TEXT  # once: what is left, from the state it left
                else:
                    failed += 1
                if trace.failure is not None and trace.failure.kind == "limit":
                    errors.append(error)
                    break
            errors.append(error)
            if more and self.progress is not None and self.progress.repair:  # finish_placements/states: no copy
                repair = self.progress.take_repair()  # the agent moves what is left itself, then checks again
                answer, prompt, replans, repaired = Answer({"Program": repair}, repair), None, replans + 1, 1
                continue
            copying = self.cfg.mode == "copy" and attempt - repaired < self.cfg.max_replans and not reviewed
            if copying and self.cfg.copy_fallback and rest:  # another retrieved example, from the state left
                replans += 1
                missing |= classes_not_found(error)
                answer, examples, prompt, rest = self.next_copy(task, executor, rest, missing, stats)
                continue
            if self.cfg.mode == "copy":  # the copies are spent: the model's re-plans, if any
                if revisions == self.cfg.model_replans:  # what a further re-plan would be asked (fine-tuning pairs)
                    self.unasked_replan = self._replan_prompt(task, executor, examples, last_program, completed, error)
                    break
                revisions += 1
            elif attempt == self.cfg.max_replans:
                break
            replans += 1
            prompt = self._replan_prompt(task, executor, examples, last_program, completed, error)
            answer = self.llm.ask([prompt], self._parse, self.t_replan.prompt_id, [stats])[0]
        goal = trace.goal if trace is not None else check_goal(task, executor.sim.world.metadata())
        return EpisodeResult(
            task_id=task.task_id, task_type=task.task_type, split=task.split, mode=self.cfg.mode,
            success=bool(goal and goal.success), satisfied=goal.satisfied if goal else 0,
            total=goal.total if goal else 0, init_satisfied=goal0.satisfied, init_total=goal0.total,
            steps=executor.runtime.steps, ref_len=ref_len,
            attempts=replans + 1, replans=replans, failed_attempts=failed,
            model=self.llm.model_name if self.llm is not None else "", llm=stats.to_dict(),
            retrieved=[e.example_id for e in examples], retrieval_error=retrieval_error,
            programs=programs, errors=errors, rerank_scores=scores, trace=trace_summary(trace),
            oracle={"goal_feedback": self.cfg.oracle_goal_feedback,
                    "object_map": self.limits.api.oracle_object_map, "reground": self.cfg.oracle_reground},
            copies_left=len(rest), wall_s=time.perf_counter() - start)
