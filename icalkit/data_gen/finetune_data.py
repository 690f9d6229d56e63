"""Fine-tuning pairs (prompt → program) for the planner, as a Hugging Face dataset.

For each task the expert solves, the pair's prompt is exactly what the deployed planner sends
(:func:`icalkit.agents.plan_prompts.program_prompt`: dialogue, filtered state and — with ``k > 0``
— the k examples the planner retrieves for it from a memory, the task itself excluded); the
completion is the program, grounded in the prompt: an ``object_instance`` id the prompt never
shows is dropped (the class is resolved at run time). A pair is kept only if its program, run by
the sandboxed executor on a fresh copy of the task, succeeds; every drop is counted by reason.

Revision pairs teach the re-planning step: a realistic mistake is injected into the correct
program (a container never opened, the wrong object, a missing step, a stop after part of the
task; :mod:`icalkit.data_gen.mistakes`), the executor's feedback on the mistaken run goes into the
planner's re-plan prompt, and the completion is the correct program — kept only if it then finishes
the task from that state, as it would at deployment. A mistake that ends without an error gets no
feedback; with ``data.review_mistakes`` it gets the deployed review prompt instead (``planner.review_done``).
The ``retrieved_copy`` kind injects nothing: the mistaken program is the top retrieved example's
program grounded in the task's prompt, run with the deployed planner's executor settings —
exactly the first attempt of retrieve, run, revise (``planner.copy_first``) — so its revision
pairs are the re-plans that deployment asks for (another room's objects, full receptacles).
``deployed_copies`` runs the whole deployed copy agent (``data.planner``, ``copy`` mode); where it would
ask its model (``planner.model_replans``), that prompt (``Planner.unasked_replan``) is the pair's.

With ``planner.reground`` a ``reground`` pair teaches the step before that copy: its prompt is the
deployed ``planner_reground`` prompt and its completion the replacements that turn the example's
task parameters into this task's (:func:`~icalkit.agents.grounding.reground_target`); the
``retrieved_copy`` then runs with them, as deployed.
"""

from __future__ import annotations

import random
import statistics
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from icalkit.agents.context import example_program, retrieval_state
from icalkit.agents.executor import Executor, ExecutorLimits
from icalkit.agents.feedback import DONE_PROGRAM, REVIEW_TEXT, action_feedback, goal_feedback
from icalkit.agents.grounding import (
    ground_program,
    grounded_answer,
    reground_target,
    replace_classes,
    replacements_text,
    shown_ids,
    ungrounded_ids,
)
from icalkit.agents.plan_prompts import (
    program_prompt,
    reground_classes,
    reground_prompt,
    replan_program_prompt,
)
from icalkit.agents.planner import Planner, PlannerConfig
from icalkit.data_gen.ical_settings import ICALSettings
from icalkit.data_gen.mistakes import COPIES, COPY, DEFAULT_MISTAKES, MISTAKES, absent_classes, inject_mistake
from icalkit.envs.alfworld.config import AlfworldConfig
from icalkit.envs.household.tasks.task import Task


class DatasetError(ValueError):
    """A fine-tuning dataset is missing, empty or has the wrong columns."""


@dataclass
class PairConfig:
    """How fine-tuning pairs are built (a config section, e.g. ``data.k=1``).

    Attributes:
        task_types: task types to build pairs for.
        heldout_types: types kept out of training entirely (evaluate them via retrieval only).
        n_per_type: tasks sampled per type.
        split: task split the tasks come from (never the evaluation split).
        seed: task sampling seed.
        k: retrieved examples in the prompt (0: the planner's zero-shot prompt).
        memory_path: example memory to retrieve from when ``k > 0``.
        retriever: text-embedder folder the memory was written with (a learned retriever, as the
            method's ``retriever``); "": the bundled MiniLM.
        revisions_per_task: revision pairs (injected mistake + feedback → program) per task.
        mistakes: kinds of mistakes, from ``MISTAKES``; tried in a random order per task, except
            ``retrieved_copy`` and ``deployed_copies`` (need ``k > 0``; the latter also
            ``planner.mode=copy``), which are tried first when listed.
        review_mistakes: an injected mistake whose program ends without an error and leaves the task
            unfinished gets the deployed review prompt (``planner.review_done``) and the rest of the
            solution, as a copy that did part of the task does at deployment; otherwise it is dropped
            (``no_feedback``). Needs ``planner.review_done``.
        valid_fraction: share of tasks (whole tasks) in the validation split.
        plan_pairs: whether to write each task's plan pair (prompt -> whole program); false for a
            model deployed with ``planner.copy_first``, which never writes the first program.
        ical_pairs: also write each task's ICAL pairs (``ical_abstraction`` and ``ical_update``
            prompts; :mod:`icalkit.data_gen.ical_pairs`), so the tuned model can run ``icalkit ical``.
        planner: the deployment planner settings the prompts must match (dialogue, state size).
        ical: the ``icalkit ical`` settings the ICAL pairs' prompts must match (k, dialogue, sizes).
        oracle_object_map: executor setting used to replay the programs (as in ``icalkit plan``).
        env: ``household`` (programs against the action API) or ``alfworld`` (flat plans of text
            commands for the ALFWorld flat planner; ``icalkit.data_gen.alfworld_plans``). With
            ``alfworld`` the task types are ALFWorld's, ``memory_path`` is a plan memory (JSONL)
            and the revision pairs are wrong-receptacle mistakes (``mistakes`` is not used).
        alfworld: the ALFWorld game source (``env: alfworld``).
    """

    task_types: list[str] = field(default_factory=lambda: ["Coffee", "Boil X", "Clean All X"])
    heldout_types: list[str] = field(default_factory=list)
    n_per_type: int = 10
    split: str = "train"
    seed: int = 0
    k: int = 0
    memory_path: str = ""
    retriever: str = ""
    revisions_per_task: int = 1
    mistakes: list[str] = field(default_factory=lambda: list(DEFAULT_MISTAKES))
    review_mistakes: bool = False
    valid_fraction: float = 0.1
    plan_pairs: bool = True
    ical_pairs: bool = False
    planner: PlannerConfig = field(default_factory=PlannerConfig)
    ical: ICALSettings = field(default_factory=ICALSettings)
    oracle_object_map: bool = True
    env: str = "household"
    alfworld: AlfworldConfig = field(default_factory=AlfworldConfig)

    def validate(self) -> None:
        from icalkit.envs.household.tasks.registry import get_task_type
        from icalkit.envs.household.tasks.task import SPLITS

        if self.env not in ("household", "alfworld"):
            raise ValueError(f"data.env must be household or alfworld, got {self.env!r}")
        if self.env == "alfworld":
            from icalkit.envs.alfworld.games import ALFWORLD_TYPES

            if bad := [t for t in [*self.task_types, *self.heldout_types] if t not in ALFWORLD_TYPES]:
                raise ValueError(f"data.task_types {bad} are not ALFWorld types {list(ALFWORLD_TYPES)}")
            self.alfworld.validate()
        else:
            for t in [*self.task_types, *self.heldout_types]:
                get_task_type(t)
        if self.split not in SPLITS:
            raise ValueError(f"data.split {self.split!r} is not one of {SPLITS}")
        if self.n_per_type < 1 or self.k < 0 or self.revisions_per_task < 0:
            raise ValueError("data.n_per_type must be >= 1, data.k and data.revisions_per_task >= 0")
        if unknown := set(self.mistakes) - set(MISTAKES):
            raise ValueError(f"data.mistakes {sorted(unknown)} not in {MISTAKES}")
        for kind in {COPY, COPIES} & set(self.mistakes):
            if not self.k:
                raise ValueError(f"data.mistakes {kind!r} copies a retrieved example: it needs data.k > 0")
        if COPIES in self.mistakes and self.planner.mode != "copy":
            raise ValueError(f"data.mistakes {COPIES!r} runs the deployed copy agent: set data.planner.mode=copy "
                             f"(and its settings as the method deploys them), got {self.planner.mode!r}")
        if "stop_early" in self.mistakes and not (self.review_mistakes or self.planner.oracle_goal_feedback):
            raise ValueError("data.mistakes 'stop_early' ends without an error, so it gets no feedback: "
                             "set data.review_mistakes=true (or data.planner.oracle_goal_feedback)")
        if self.review_mistakes and not self.planner.review_done:
            raise ValueError("data.review_mistakes asks for the deployed review of a silent finish: "
                             "set data.planner.review_done=true (as the method deploys it)")
        if not 0 <= self.valid_fraction < 1:
            raise ValueError(f"data.valid_fraction must be in [0, 1), got {self.valid_fraction}")
        if self.planner.reground and COPY not in self.mistakes:
            raise ValueError(f"data.planner.reground re-grounds the retrieved copy: list {COPY!r} in data.mistakes")
        if self.ical_pairs:
            if self.env != "household":
                raise ValueError("data.ical_pairs teaches ICAL's household prompts: it needs data.env=household")
            self.ical.check()
        if not set(self.task_types) - set(self.heldout_types):
            raise ValueError("every task type is held out: nothing left to train on")

    def retrieves(self) -> bool:
        """Whether the pairs' prompts carry examples retrieved from ``memory_path``."""
        return self.k > 0 or (self.ical_pairs and self.ical.k > 0)

    def training_types(self) -> list[str]:
        return [t for t in self.task_types if t not in self.heldout_types]


def completion_text(program: str) -> str:
    """The assistant answer for a program (the Program section the planner parses)."""
    return f"Program:\n```python\n{program.strip()}\n```"


@dataclass
class TaskPairs:
    """The pairs one task produced and why others were dropped."""

    task_id: str
    task_type: str
    rows: list[dict] = field(default_factory=list)
    dropped: dict[str, int] = field(default_factory=dict)

    def drop(self, reason: str) -> None:
        self.dropped[reason] = self.dropped.get(reason, 0) + 1


class PairBuilder:
    """Builds the pairs of one task at a time (see the module docstring).

    Args:
        cfg: pair settings.
        memory: an example memory for ``cfg.k > 0`` (None otherwise).
    """

    def __init__(self, cfg: PairConfig, memory: Any | None = None) -> None:
        from icalkit.agents.api.runtime import ApiConfig
        from icalkit.envs.factory import make_env

        self.cfg, self.memory = cfg, memory
        self.env = make_env("household", render_obs=False)
        self.limits = ExecutorLimits(api=ApiConfig(oracle_object_map=cfg.oracle_object_map))
        # a copied example runs as the deployed planner runs it (its pre-condition checks)
        self.deployed = ExecutorLimits(api=ApiConfig(oracle_object_map=cfg.oracle_object_map,
                                                     precondition_checks=cfg.planner.precondition_checks))
        # retrieval exactly as the deployed planner does it (mode copy: the same query, no model needed)
        p = cfg.planner
        retrieval = PlannerConfig(mode="copy", k=cfg.k, room_fit=p.room_fit, use_frame=p.use_frame,
                                  transfer_order=p.transfer_order)
        self.retriever = Planner(None, memory, retrieval, self.limits) if cfg.k else None
        # the deployed copy agent without its model (deployed_copies): its episode ends where the model would start
        self.copier = (Planner(None, memory, replace(p, model_replans=0), self.limits)
                       if COPIES in cfg.mistakes else None)

    def _fresh(self, task: Task, limits: ExecutorLimits | None = None) -> Executor:
        self.env.reset(options={"task": task})
        return Executor(self.env, limits or self.limits)

    def build(self, task: Task) -> TaskPairs:
        """Plan pair (+ revision pairs) for ``task``; never raises for a task that fails."""
        from icalkit.data_gen.expert import expert_actions
        from icalkit.data_gen.programs import trajectory_to_program
        from icalkit.envs.household.scene import build_world

        out = TaskPairs(task.task_id, task.task_type)
        p = self.cfg.planner
        executor = self._fresh(task)
        world0 = executor.sim.world
        absent = absent_classes(world0)  # before any program runs
        # the deployed planner's query: Planner.run retrieves with retrieval_state
        sets, err = (self.retriever.retrieve(task, retrieval_state(world0, task), None, executor.runtime.known_types())
                     if self.retriever else ([[]], ""))
        if err:
            out.drop("retrieval_failed")
            return out
        examples = sets[0]
        prompt = program_prompt(task, world0, examples, p.use_dialogue, p.max_state_objects)
        try:
            expert = trajectory_to_program(build_world(task), expert_actions(task))
        except Exception:  # noqa: BLE001 - a task the expert cannot convert is counted, not fatal
            out.drop("expert_failed")
            return out
        ids = shown_ids(prompt)
        program = ground_program(expert, ids)
        if ungrounded_ids(program, ids):
            out.drop("ungrounded_id")
            return out
        if not executor.run(program, task).success:
            out.drop("grounded_program_fails")
            return out
        meta = {"task_id": task.task_id, "task_type": task.task_type,
                "retrieved": [e.example_id for e in examples]}
        if self.cfg.plan_pairs:
            out.rows.append({**meta, "kind": "plan", "mistake": "", "mistaken_program": "", "prompt": prompt,
                             "completion": completion_text(program)})
        if p.reground and examples:
            copied = example_program(examples[0])
            target = reground_target(examples[0], task, copied)
            if target is None:
                out.drop("reground_example_task_unknown")
            else:
                used, room = reground_classes(task, world0, examples[0], p.max_state_objects)
                out.rows.append({**meta, "kind": "reground", "mistake": "", "mistaken_program": copied,
                                 "prompt": reground_prompt(task, examples[0], used, room, p.use_dialogue),
                                 "completion": replacements_text(target)})
        rng = random.Random(f"{self.cfg.seed}/{task.task_id}")
        classes = sorted({i.rsplit("_", 1)[0] for i in ids})
        kinds = rng.sample(self.cfg.mistakes, len(self.cfg.mistakes))
        kinds.sort(key=lambda kind: (kind != COPIES, kind != COPY))  # stable: the copies first, the rest as drawn
        made = 0
        for kind in kinds:
            if made == self.cfg.revisions_per_task:
                break
            row = self._revision(task, examples, program, kind, rng, (classes, absent), out)
            if row is not None:
                out.rows.append({**meta, **row})
                made += 1
        if self.cfg.ical_pairs:
            from icalkit.data_gen.ical_pairs import ical_rows

            out.rows += ical_rows(self, task, expert, out)
        return out

    def _revision(self, task: Task, examples: list, program: str, kind: str, rng: random.Random,
                  classes: tuple[list[str], list[str]], out: TaskPairs) -> dict | None:
        """Mistaken program + its feedback -> the rest of the solution from the state it left."""
        p = self.cfg.planner
        if kind == COPIES:
            return self._after_copies(task, out)
        if kind == COPY and examples:  # as deployed: re-grounded (planner.reground), then grounded in the prompt
            copied = example_program(examples[0])
            if p.reground:
                copied = replace_classes(copied, reground_target(examples[0], task, copied) or {})
            wrong = grounded_answer(copied, program_prompt(task, self._fresh(task).sim.world, examples,
                                                           p.use_dialogue, p.max_state_objects))
        elif kind == COPY:
            wrong = None
        else:
            wrong = inject_mistake(program, kind, rng, *classes)
        if wrong is None:
            out.drop(f"revision_{kind}_not_applicable")
            return None
        executor = self._fresh(task, self.deployed if kind == COPY else None)
        trace = executor.run(wrong, task)
        error = action_feedback(trace)
        if error is None and not trace.success and p.oracle_goal_feedback:  # as deployed: goal feedback, no review
            error = goal_feedback(trace)
        # the deployed review of a silent finish: the copy's, and with review_mistakes an unfinished injected one's
        review = error is None and p.review_done and (kind == COPY or (self.cfg.review_mistakes and not trace.success))
        if (trace.success or error is None) and not review:  # nothing to revise, or no feedback to revise from
            out.drop(f"revision_{kind}_{'succeeds' if trace.success else 'no_feedback'}")
            return None
        completed = trace.failure.completed if trace.failure else trace.program
        prompt = replan_program_prompt(task, executor.sim.world, examples, trace.program, completed,
                                       REVIEW_TEXT if review else error, p.use_dialogue, p.max_state_objects)
        row = {"kind": "review" if review else "revision", "mistake": kind, "mistaken_program": wrong, "prompt": prompt}
        if trace.success:  # (a review) nothing is left to do
            return {**row, "completion": completion_text(DONE_PROGRAM)}
        return self._rest(task, executor, row, out)

    def _after_copies(self, task: Task, out: TaskPairs) -> dict | None:
        """The deployed copy agent's episode; when it ends on an error (or, with ``review_done``, without
        one), the prompt it would send its model next (``planner.model_replans``) -> the rest of the
        solution from the state its copies left (the empty program for a review of a finished task)."""
        self.env.reset(options={"task": task})
        result = self.copier.run_episode(task, self.env)
        prompt = self.copier.unasked_replan
        if prompt is None:
            out.drop(f"revision_{COPIES}_{'succeeds' if result.success else 'no_feedback'}")
            return None
        review = REVIEW_TEXT in prompt[-1]["content"]  # planner.review_done: the copies ended without an error
        row = {"kind": "review" if review else "revision", "mistake": COPIES, "retrieved": result.retrieved,
               "mistaken_program": result.programs[-1] if result.programs else "", "prompt": prompt}
        if result.success:  # (a review) nothing is left to do
            return {**row, "completion": completion_text(DONE_PROGRAM)}
        return self._rest(task, Executor(self.env, self.deployed), row, out)

    def _rest(self, task: Task, executor: Executor, row: dict, out: TaskPairs) -> dict | None:
        """``row`` completed by the rest of the expert's solution from the state ``executor``'s world is in
        (not a restart), grounded in the row's prompt; None (counted) when that does not finish the task."""
        from icalkit.data_gen.expert import expert_actions
        from icalkit.data_gen.programs import trajectory_to_program

        world, kind, ids = executor.sim.world, row["mistake"], shown_ids(row["prompt"])
        try:
            rest = ground_program(trajectory_to_program(world, expert_actions(task, world)), ids)
        except Exception:  # noqa: BLE001 - a state the expert cannot finish from is counted, not fatal
            out.drop(f"revision_{kind}_expert_failed")
            return None
        if not rest.strip() or ungrounded_ids(rest, ids) or not executor.run(rest, task).success:
            out.drop(f"revision_{kind}_fix_fails")
            return None
        return {**row, "completion": completion_text(rest)}


def length_stats(values: Iterable[int]) -> dict[str, float]:
    """min / median / mean / p90 / max of token lengths."""
    v = sorted(values)
    if not v:
        return {}
    return {"n": len(v), "min": v[0], "median": statistics.median(v), "mean": round(statistics.fmean(v), 1),
            "p90": v[int(0.9 * (len(v) - 1))], "max": v[-1]}


def summarize(records: list[dict], token_len: Callable[[dict], tuple[int, int]] | None = None) -> dict:
    """Counts of pairs by kind and type, drops by reason, and token-length statistics."""
    rows = [r for rec in records for r in rec["rows"]]
    dropped: Counter = Counter()
    for rec in records:
        dropped.update(rec["dropped"])
    stats: dict[str, Any] = {"tasks": len(records), "pairs": len(rows),
                             "by_kind": dict(Counter(r["kind"] for r in rows)),
                             "by_type": dict(Counter(r["task_type"] for r in rows)),
                             "tasks_without_pairs": sum(not rec["rows"] for rec in records),
                             "dropped": dict(sorted(dropped.items()))}
    if token_len is not None and rows:
        lens = [token_len(r) for r in rows]
        stats["tokens"] = {"prompt": length_stats(a for a, _ in lens), "completion": length_stats(b for _, b in lens),
                           "total": length_stats(a + b for a, b in lens)}
    return stats


def to_dataset(records: list[dict], valid_fraction: float, seed: int):
    """A ``DatasetDict`` (train / validation, whole tasks per split) of the kept pairs."""
    from datasets import Dataset, DatasetDict

    tasks = sorted({rec["task_id"] for rec in records if rec["rows"]})
    random.Random(seed).shuffle(tasks)
    n_valid = round(valid_fraction * len(tasks)) if len(tasks) > 1 else 0
    valid = set(tasks[:n_valid])
    rows = [r for rec in records for r in rec["rows"]]
    if not rows:
        raise DatasetError("no pair survived: every task was dropped (see the drop counts)")
    split = {"train": [r for r in rows if r["task_id"] not in valid],
             "validation": [r for r in rows if r["task_id"] in valid]}
    return DatasetDict({k: Dataset.from_list(v) for k, v in split.items() if v})  # datasets cannot reload an empty split


def build_pairs(cfg: PairConfig, out_dir: str | Path, memory: Any | None = None,
                progress: bool = True) -> dict:
    """Build (resumably) the pairs of ``cfg`` into ``out_dir``: pairs.jsonl, dataset/, stats.json.

    Returns:
        The statistics written to ``stats.json``.
    """
    import json

    from tqdm import tqdm

    from icalkit.data_gen.results_file import RecordWriter, load_records
    from icalkit.envs.household.tasks.sampler import sample_tasks

    cfg.validate()
    if cfg.retrieves() and memory is None:  # checked here, not in validate: `icalkit demo` derives the path later
        raise DatasetError("data.k > 0 (or ICAL pairs with data.ical.k > 0) retrieves examples: set "
                           "data.memory_path to an example memory")
    out = Path(out_dir)
    tasks = sample_tasks(cfg.training_types(), cfg.n_per_type, cfg.split, cfg.seed)
    done = load_records(out / "pairs.jsonl", lambda r: r["task_id"])
    todo = [t for t in tasks if t.task_id not in done]
    if todo:
        builder = PairBuilder(cfg, memory)
        with RecordWriter(out / "pairs.jsonl") as writer:
            for task in tqdm(todo, desc="pairs", unit="task", disable=not progress):
                rec = vars(builder.build(task))
                done[task.task_id] = rec
                writer.write(rec)
    records = [done[t.task_id] for t in tasks]
    to_dataset(records, cfg.valid_fraction, cfg.seed).save_to_disk(str(out / "dataset"))
    stats = summarize(records, token_counter())
    stats["heldout_types"] = list(cfg.heldout_types)
    (out / "stats.json").write_text(json.dumps(stats, indent=2))
    return stats


def token_counter() -> Callable[[dict], tuple[int, int]] | None:
    """Prompt / completion token counts with the default model's tokenizer (None if absent)."""
    try:
        from transformers import AutoTokenizer

        from icalkit.models.llm.convert import default_model_dir

        tok = AutoTokenizer.from_pretrained(default_model_dir())
    except Exception:  # noqa: BLE001 - statistics are optional
        return None

    def count(row: dict) -> tuple[int, int]:
        prompt = tok.apply_chat_template(row["prompt"], tokenize=False, add_generation_prompt=True)
        return len(tok(prompt).input_ids), len(tok(row["completion"]).input_ids) + 1

    return count
