"""ICAL learning (Algorithm S1 of Sarch et al. 2024): noisy demonstrations -> a memory of examples.

For every demonstration (its noisy program, from :func:`~icalkit.data_gen.programs.trajectory_to_program`):

1. **Abstraction**: the model revises the program and writes language abstractions (summary,
   abstracted state, plan, abstraction comments, ``change_state`` predictions), given the task,
   the task-relevant state and the top-k examples retrieved from the memory learned so far.
2. **Human-in-the-loop**: the revised program runs in a freshly reset env; on failure, feedback
   (simulated from the executor, or a person's) goes to the update prompt, which explains the
   error and revises program and abstractions; until success, ``n_feedbacks`` rounds, or the
   same feedback twice in a row.
3. **Save**: successful examples enter the :class:`~icalkit.memory.ExampleMemory` with
   provenance and the observed attribute changes; failures are skipped or, with ``relabel``,
   relabeled as what the partial execution achieved, or, with ``keep_demo``, replaced by the
   demonstration's own program when that replays to success.

Ablations: ``abstraction=False`` (the raw program + HITL), ``hitl=False`` (abstraction only),
``raw_demos=True`` (store unprocessed demonstrations, no LLM call: the baseline memory).
Every processed demo appends one line to ``results.jsonl``; a re-run skips those demos.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from icalkit.agents.context import (
    filtered_state,
    format_example,
    format_examples,
    full_state,
    retrieval_query,
    retrieval_state,
    state_text,
    task_text,
)
from icalkit.agents.executor import ExecutorLimits
from icalkit.agents.feedback import program_feedback
from icalkit.agents.llm_session import CallStats
from icalkit.agents.plan_prompts import api_text
from icalkit.data_gen.ical_report import LEARNED
from icalkit.data_gen.ical_settings import ICALSettings
from icalkit.data_gen.ical_steps import (
    Abstraction,
    Execution,
    Prompter,
    changes_text,
    execute,
    parse_abstraction,
    parse_relabel,
    parse_update,
    truncate_lines,
)
from icalkit.data_gen.programs import VISUAL_IDM, trajectory_to_program
from icalkit.data_gen.prune import prune_program
from icalkit.data_gen.results_file import drop_partial_line, read_jsonl
from icalkit.envs.household.scene import build_world
from icalkit.envs.household.tasks.task import Task
from icalkit.memory.example import Example, ExampleStats, Provenance

FeedbackFn = Callable[[Execution, Any], str]
STATUSES = ("learned", "relabeled", "kept_demo", "failed", "parse_failed", "skipped_empty", "bad_demo")


@dataclass
class DemoContext:
    """One demonstration as the loop holds it: task, start world, noisy program, its first frame
    (None without rendering) and its replay."""

    task: Task
    world: Any
    demo_id: str
    demo_program: str
    frame: Any
    raw: Execution


@dataclass
class DemoResult:
    """One line of ``results.jsonl``: what happened to one demonstration.

    ``status`` is one of :data:`STATUSES`; ``success``: the final program solved the task;
    ``raw_success``: replaying the noisy program did; ``first_attempt_success``: the abstraction's
    program did before any feedback; ``attempts``: executions; ``feedbacks``: update rounds;
    ``model_state``: the model's abstracted-state text; ``last_output``: the last raw model answer
    (for inspection); ``usage``: :class:`~icalkit.agents.llm_session.CallStats` counters;
    ``pruned_lines``: lines ``prune=true`` dropped from the raw program; ``kept_after``: with
    ``keep_demo``, the status (parse_failed or failed) after which the demonstration was kept.
    """

    demo_id: str
    task_id: str
    task_type: str
    status: str
    success: bool = False
    raw_success: bool = False
    first_attempt_success: bool = False
    attempts: int = 0
    feedbacks: int = 0
    stop_reason: str = ""
    env_steps: int = 0
    wall_s: float = 0.0
    example_id: str = ""
    error: str = ""
    prompt_ids: list[str] = field(default_factory=list)
    model_state: str = ""
    last_output: str = ""
    usage: dict[str, Any] = field(default_factory=dict)
    pruned_lines: int = 0
    kept_after: str = ""


class ICALLearner:
    """Runs ICAL on demonstrations, adding examples to ``memory``.

    Args:
        env: a household env (reset per execution).
        memory: the :class:`~icalkit.memory.ExampleMemory` to grow.
        prompter: LLM + templates (None only with ``settings.raw_demos``).
        settings: loop settings.
        feedback_fn: ``(execution, env) -> text``; default: simulated executor feedback.
        limits: executor limits.
    """

    def __init__(self, env: Any, memory: Any, prompter: Prompter | None, settings: ICALSettings,
                 feedback_fn: FeedbackFn | None = None, limits: ExecutorLimits | None = None) -> None:
        if prompter is None and not settings.raw_demos:
            raise ValueError("ICAL needs an LLM prompter unless raw_demos=True")
        self.env, self.memory, self.prompter, self.settings = env, memory, prompter, settings
        self.feedback_fn = feedback_fn or (lambda ex, env: program_feedback(ex.trace))
        self.limits = limits
        self.model = model_label(prompter.llm) if prompter is not None else ""

    # -- one demonstration -------------------------------------------------------------------
    def learn(self, episode: dict) -> DemoResult:
        """Process one demonstration episode (never raises for model output problems)."""
        start = time.perf_counter()
        task = Task.from_dict(episode["task"])
        world = build_world(task)
        res = DemoResult(episode["episode_id"], task.task_id, task.task_type, "skipped_empty")
        usage = CallStats()
        try:
            # labels from video (IDM): an interaction the frames show is kept even where a wrong
            # navigation label left the replay out of reach (the program's go_to walks there)
            demo_program = trajectory_to_program(world, episode["steps"],
                                                 reach=episode.get("source") == VISUAL_IDM)
        except ValueError as exc:  # unreadable steps, or a recording this simulator does not reproduce
            res.status, res.error, demo_program = "bad_demo", f"{episode['episode_id']}: {exc}", ""
        if demo_program.strip():
            if self.prompter is not None:
                self.prompter.last_output = ""
            self._learn(task, world, demo_program, episode["episode_id"], res, usage)
            res.last_output = self.prompter.last_output[:2000] if self.prompter is not None else ""
        res.usage, res.wall_s = asdict(usage), time.perf_counter() - start
        return res

    def _learn(self, task: Task, world: Any, demo_program: str, demo_id: str, res: DemoResult,
               usage: CallStats) -> None:
        s = self.settings
        raw = execute(self.env, task, demo_program, self.limits)
        res.raw_success = raw.success  # replaying the noisy program: the baseline of ICAL's Figure 4
        state = filtered_state(world, task, demo_program, limit=s.max_state_objects)
        frame = raw.frame if getattr(self.env, "render_obs", False) else None
        demo = DemoContext(task, world, demo_id, demo_program, frame, raw)
        if s.raw_demos:
            program, run, res.attempts = demo_program, raw, 1
            if s.prune and raw.success:
                program, res.attempts = prune_program(
                    demo_program, lambda p: execute(self.env, task, p, self.limits).success)
                run = execute(self.env, task, program, self.limits)
                res.pruned_lines = len(demo_program.splitlines()) - len(program.splitlines())
            res.success, res.first_attempt_success = run.success, raw.success
            res.env_steps = run.trace.steps
            self._save(demo, Abstraction(program=program), run, [], res)
            return
        keep = s.keep_demo and raw.success  # a verified demonstration outlives a revision that fails
        examples = ical_examples(self.memory, task, world, s, frame if self._visual() else None)
        values = ical_prompt_values(task, state, examples, s)
        if s.abstraction:
            asked = self.prompter.ask("ical_abstraction", parse_abstraction, usage, **values,
                                      program=truncate_lines(demo_program, s.max_program_chars))
            res.prompt_ids.append(asked.prompt_id)
            if not asked.ok:
                res.status, res.error = "parse_failed", asked.error
                if keep:
                    self._keep(demo, res)
                return
            abst = asked.value
            res.model_state = abst.abstracted_state
        else:
            abst = Abstraction(program=demo_program)
        run = execute(self.env, task, abst.program, self.limits)
        res.attempts, res.env_steps = 1, run.trace.steps
        res.first_attempt_success = run.success
        history: list[dict[str, Any]] = []
        if s.hitl:
            abst, run = self._hitl(task, values, abst, run, history, res, usage)
        res.success = run.success
        if run.success:
            self._save(demo, abst, run, history, res)
        elif s.relabel and not keep:  # a whole verified demonstration beats a relabeled part
            self._relabel(demo, abst, run, history, res, usage)
        else:
            res.status, res.error = "failed", res.error or program_feedback(run.trace)
            if keep:
                self._keep(demo, res)

    def _hitl(self, task: Task, values: dict, abst: Abstraction, run: Execution, history: list,
              res: DemoResult, usage: CallStats) -> tuple[Abstraction, Execution]:
        """Feedback -> update -> execute, until success, the budget, or a repeated error."""
        while not run.success:
            if res.feedbacks >= self.settings.n_feedbacks:
                res.stop_reason = "feedback budget"
                break
            feedback = self.feedback_fn(run, self.env)
            if history and feedback == history[-1]["feedback"]:
                res.stop_reason = "repeated error"
                break
            history.append({"attempt": res.attempts, "feedback": feedback, "program": run.trace.program})
            res.feedbacks += 1
            asked = self.prompter.ask("ical_update", lambda text, prev=abst: parse_update(text, prev), usage,
                                      **values, feedback=feedback, abstractions=abst.notes(),
                                      program=truncate_lines(abst.program, self.settings.max_program_chars))
            if asked.prompt_id not in res.prompt_ids:
                res.prompt_ids.append(asked.prompt_id)
            if not asked.ok:
                history[-1]["update_error"] = asked.error
                res.stop_reason, res.error = "update parse failure", asked.error
                break
            abst = asked.value
            history[-1]["explanation"] = abst.explanation
            run = execute(self.env, task, abst.program, self.limits)
            res.attempts += 1
            res.env_steps += run.trace.steps
        if run.success:
            res.stop_reason = "success"
        return abst, run

    def _relabel(self, demo: DemoContext, abst: Abstraction, run: Execution, history: list, res: DemoResult,
                 usage: CallStats) -> None:
        """ICAL relabeling: describe what the completed part of the program achieved."""
        failure = run.trace.failure
        program = failure.completed if failure is not None else run.trace.program
        if "InteractionObject(" not in program or not run.changes:
            res.status, res.error = "failed", "nothing to relabel: the program changed nothing"
            return
        asked = self.prompter.ask("ical_relabel", parse_relabel, usage, instruction=demo.task.instruction,
                                  program=truncate_lines(program, self.settings.max_program_chars),
                                  changes=changes_text(run.changes))
        res.prompt_ids.append(asked.prompt_id)
        if not asked.ok:
            res.status, res.error = "failed", f"relabel: {asked.error}"
            return
        new = asked.value
        relabeled = Abstraction(program=program, summary=new["summary"], plan=new["plan"],
                                comments=abst.comments, explanation=abst.explanation)
        task_copy = Task.from_dict({**demo.task.to_dict(), "instruction": new["instruction"], "dialogue": []})
        self._save(replace(demo, task=task_copy), relabeled, run, history, res, status="relabeled")

    def _keep(self, demo: DemoContext, res: DemoResult) -> None:
        """``keep_demo``: store the demonstration's own program, which replays to success (the model's
        failed revision is dropped); ``res`` keeps why (``kept_after``, ``error``)."""
        res.kept_after = res.status
        self._save(demo, Abstraction(program=demo.demo_program), demo.raw, [], res, status="kept_demo")

    # -- saving ----------------------------------------------------------------------------
    def _visual(self) -> bool:
        return getattr(self.memory, "image_embedder", None) is not None and getattr(self.env, "render_obs", False)

    def _save(self, demo: DemoContext, abst: Abstraction, run: Execution, history: list, res: DemoResult,
              status: str = "learned") -> None:
        """Store the example (``status``: learned, relabeled, or kept_demo: the demonstration as it is)."""
        s = self.settings
        raw = s.raw_demos or status == "kept_demo"
        relabeled = status == "relabeled"
        # the model is named only when its answer is stored (a raw program that succeeds with
        # abstraction=false never reaches it; a kept demonstration holds none of its output)
        model = "" if raw or not res.prompt_ids else self.model
        prompts = "" if raw else "+".join(res.prompt_ids)
        mode = "kept-demo" if status == "kept_demo" else s.mode()
        example_id = example_key(mode, model, prompts, demo.demo_id, relabeled)
        task, world = demo.task, demo.world
        example = Example(
            task_id=task.task_id, task_type=task.task_type, instruction=task.instruction,
            dialogue=[f"{who}: {text}" for who, text in task.dialogue],
            initial_state=full_state(world), filtered_state=retrieval_state(world, task),
            demo_program=demo.demo_program,
            revised_program="" if raw and not s.prune else abst.program, summary=abst.summary, plan=abst.plan,
            explanation=abst.explanation, predicted_state_changes=abst.predicted_state_changes,
            observed_changes=run.changes, abstraction_comments=abst.comments, feedback_history=history,
            success=bool(run.success or relabeled),
            stats=ExampleStats(env_steps=res.env_steps, attempts=res.attempts, resets=res.attempts),
            provenance=Provenance(source="raw-demo" if raw else s.source, model=model,
                                  prompt_version=prompts, demo_id=demo.demo_id),
            relabeled=relabeled, example_id=example_id)
        try:
            # stored already: by this run, killed before its results line, or by an earlier run
            # with the same mode, model, prompts and demonstration
            self.memory.get(example_id)
        except KeyError:
            self.memory.add(example, demo.frame if self._visual() else None)
        res.status = status
        res.example_id = example_id


def ical_prompt_values(task: Task, state: dict, examples: str, settings: ICALSettings) -> dict[str, str]:
    """The values ICAL's prompts share (API, task, abstracted state, retrieved examples); one source
    for the loop and for the fine-tuning pairs that teach a model these prompts
    (:mod:`icalkit.data_gen.ical_pairs`)."""
    return {"api": api_text(), "instruction": task_text(task, settings.use_dialogue), "state": state_text(state),
            "examples": examples}


def ical_examples(memory: Any, task: Task, world: Any, settings: ICALSettings, frame: Any = None,
                  other_types: bool = False) -> str:
    """The top-k successful examples of ``memory`` as ICAL's prompts show them (the task excluded).

    The query is the task's :func:`retrieval_query` (as at deployment); ``frame`` adds the visual
    signal (None: text only); ``other_types`` keeps only examples of other task types than the
    task's (what ICAL meets on a new type's first demonstration).
    """
    from icalkit.memory.example_memory import EmptyMemoryError

    k = settings.k
    if k <= 0 or memory is None or len(memory) == 0:
        return format_examples([])
    instruction, state = retrieval_query(task, world, memory)
    types = sorted({e.task_type for e in memory} - {task.task_type}) if other_types else None
    try:
        found = memory.retrieve(instruction, state, frame, k=2 * k, exclude_task_ids=[task.task_id], task_types=types)
    except EmptyMemoryError:
        return format_examples([])
    good = [r.example for r in found if r.example.success][:k]
    if not good:
        return format_examples([])
    return "\n\n".join(truncate_lines(format_example(e, i + 1), settings.max_example_chars, marker="...")
                       for i, e in enumerate(good))


def model_label(llm: Any) -> str:
    """The model's name for provenance: its ``model_name``, plus ``+adapter`` when one is loaded."""
    identity = llm.cache_identity() if hasattr(llm, "cache_identity") else {}
    name = str(identity.get("model") or getattr(llm, "model_name", ""))
    adapter = identity.get("adapter")
    return f"{name}+{adapter}" if adapter else name


def example_key(mode: str, model: str, prompts: str, demo_id: str, relabeled: bool = False) -> str:
    """Id of the example learned from ``demo_id``: a hash of everything that made it.

    Two runs share an id only when the same mode, model (``""``: none was asked), prompt versions
    and demonstration produced the example, so a second model writing into the same memory adds
    its own example instead of being told the first model's is "learned".
    """
    key = json.dumps([mode, model, prompts, demo_id, relabeled])
    return hashlib.sha256(key.encode()).hexdigest()[:32]


# -- the resumable loop ------------------------------------------------------------------------
def read_results(path: str | Path) -> list[dict]:
    """Records of ``results.jsonl`` (a truncated last line from a kill is ignored)."""
    return read_jsonl(path)


def select_episodes(episodes: Iterable[dict], demonstrators: Iterable[str] = ("noisy",),
                    task_types: Iterable[str] | None = None, limit: int | None = None) -> list[dict]:
    """Episodes of the given demonstrators (and task types), at most ``limit``."""
    who, types = set(demonstrators), set(task_types) if task_types else None
    out = [ep for ep in episodes if ep["demonstrator"] in who and (types is None or ep["task"]["task_type"] in types)]
    return out[:limit] if limit else out


def run_ical(learner: ICALLearner, episodes: list[dict], out_dir: str | Path, progress: bool = True,
             on_result: Callable[[dict], None] | None = None) -> list[dict]:
    """Process ``episodes`` in order, appending to ``out_dir/results.jsonl`` after each.

    Demos already in ``results.jsonl`` are skipped (resumption). Returns all records, old and new.
    """
    from tqdm.auto import tqdm

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "results.jsonl"
    records = read_results(path)
    drop_partial_line(path)
    done = {r["demo_id"] for r in records}
    todo = [ep for ep in episodes if ep["episode_id"] not in done]
    bar = tqdm(total=len(episodes), initial=len(episodes) - len(todo), disable=not progress, desc="ical")
    with open(path, "a") as fh:
        for ep in todo:
            record = asdict(learner.learn(ep))
            fh.write(json.dumps(record) + "\n")
            fh.flush()
            records.append(record)
            learned = sum(r["status"] in LEARNED for r in records)
            kept = sum(r["status"] == "kept_demo" for r in records)
            bar.update(1)
            bar.set_postfix(learned=learned, kept=kept, failed=len(records) - learned - kept)
            if on_result is not None:
                on_result(record)
    bar.close()
    return records
