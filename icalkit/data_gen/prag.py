"""P-RAG: progressive retrieval-augmented planning without ground truth (Xu et al. 2024).

An empty :class:`~icalkit.memory.trajectory_db.TrajectoryDB` grows round by round. In a round the
agent solves every task of a task set step by step: at each step the model sees the goal, the
current observation, the flat action space, its own actions so far and the top-K stored
trajectories (retrieved by ``sim(goal) + max_t sim(scene graph_t)``) with their done flags, and
answers one action (``Navigation X`` ... or ``Stop``). An unparseable or invalid action gets one
re-ask, then counts as a no-op failed step. After the round every trajectory (goal, scene graph
per step, (action, observation) history, done) enters the database.

``done`` is the agent's own ``Stop`` unless ``oracle_success`` is on, in which case it is the
simulator's success flag and episodes also end when the goal holds (recorded in every result).
Episodes of a batch run in lockstep so that each step is one batched model call; results are
appended per (phase, round, task) to a JSONL file, and a re-run skips what is there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from icalkit.agents.context import task_text
from icalkit.agents.executor import Executor, ExecutorLimits
from icalkit.agents.flat_plans import STOP, action_space_text, parse_action
from icalkit.agents.llm_session import CallStats, LLMSession
from icalkit.agents.prompts import load_template
from icalkit.data_gen.results_file import RecordWriter, load_records
from icalkit.envs.household.observe import attributes, relation_to_parent, scene_graph, scene_graph_text
from icalkit.envs.household.scene import build_world
from icalkit.envs.household.simulator import Simulator
from icalkit.envs.household.tasks.checker import check_goal
from icalkit.envs.household.tasks.task import Task
from icalkit.memory.example_memory import EmptyMemoryError
from icalkit.memory.trajectory_db import ScoredTrajectory, TrajectoryDB, TrajectoryRecord
from icalkit.metrics import Episode, aggregate

PRAG_MODES = ("train_then_test", "self_iterate")
EMPTY_VIEW = "nothing in view"


@dataclass
class PragConfig:
    """P-RAG settings (a config section, e.g. ``prag.k=5``).

    Attributes:
        k: trajectories retrieved per step.
        max_steps: high-level steps per episode (the episode budget).
        oracle_success: use the simulator's success flag as ``done`` and end episodes on success.
        batch_size: episodes run in lockstep (one batched model call per step).
        max_new_tokens: completion length of one action.
        history_in_prompt: most recent own actions shown.
        trajectory_actions: actions shown per retrieved trajectory.
        max_view_objects: objects listed in the observation.
        use_dialogue: show the TEACh dialogue instead of the goal sentence.
    """

    k: int = 3
    max_steps: int = 30
    oracle_success: bool = False
    batch_size: int = 8
    max_new_tokens: int = 24
    history_in_prompt: int = 8
    trajectory_actions: int = 10
    max_view_objects: int = 20
    use_dialogue: bool = False

    def validate(self) -> None:
        small = {n: getattr(self, n) for n in ("k", "max_steps", "batch_size", "max_new_tokens",
                                                  "history_in_prompt", "trajectory_actions", "max_view_objects")
                 if getattr(self, n) < 1}
        if small:
            raise ValueError(f"prag settings must be >= 1: {small}")


def observation_text(sim: Simulator, max_objects: int = 20) -> str:
    """Compact observation: visible objects with their state and place, and what is held."""
    world = sim.world
    parts = []
    for oid in sim.visible_objects()[:max_objects]:
        obj = world.objects[oid]
        attrs = [a for a in attributes(obj) if a not in ("toggled off", "clean", "whole", "empty")]
        rel = relation_to_parent(world, obj)
        parts.append(oid + (f" ({', '.join(attrs)})" if attrs else "") + (f" {rel[0]} {rel[1]}" if rel else ""))
    held = world.held or "nothing"
    return f"{'; '.join(parts) or EMPTY_VIEW}. Holding: {held}."


class StepEpisode:
    """One P-RAG episode in progress: the world, its executor and the trajectory so far."""

    def __init__(self, task: Task, cfg: PragConfig, limits: ExecutorLimits | None = None) -> None:
        self.task, self.cfg = task, cfg
        self.sim = Simulator(build_world(task))
        self.executor = Executor(self.sim, limits)
        self.start_trajectory()

    def start_trajectory(self) -> None:
        """Empty trajectory at the current state (goal text, first scene graph, initial goal counts)."""
        self.goal = task_text(self.task, self.cfg.use_dialogue)
        self.history: list[tuple[str, str]] = []
        self.scene_graphs = [self.scene_graph()]
        self.init_goal = self.goal_result()
        self.stats = CallStats()
        self.finished = self.stopped = False
        self.end_reason = ""
        self.invalid = 0

    def scene_graph(self) -> str:
        """Scene-graph text of the current view (the retrieval key of this step)."""
        text = scene_graph_text(scene_graph(self.sim.world, self.sim.visible_objects()))
        held = self.sim.world.held
        return text or (f"agent holds {held}" if held else EMPTY_VIEW)

    def goal_result(self):  # -> GoalResult
        return check_goal(self.task, self.sim.world.metadata())

    # The hooks below are what another backend overrides (see data_gen/prag_alfworld.py).
    parse = staticmethod(parse_action)

    def action_space(self) -> str:
        """The actions shown to the model."""
        return action_space_text()

    def observation(self, max_objects: int) -> str:
        return observation_text(self.sim, max_objects)

    def act(self, action: str) -> tuple[str, bool]:
        """Run one parsed action: (its outcome for the history, whether the episode budget is spent)."""
        trace = self.executor.run(action, self.task, mode="flat")
        return ("ok" if trace.completed else f"failed: {trace.failure.message}",
                trace.failure is not None and trace.failure.kind == "limit")

    def steps_taken(self) -> int:
        return self.executor.runtime.steps

    def oracle(self) -> dict:
        return {"success_flag": self.cfg.oracle_success, "object_map": self.executor.limits.api.oracle_object_map}

    def apply(self, action: str | None, raw: str, error: str | None) -> None:
        """Take one step: the parsed action, or a no-op failure for an unusable answer."""
        if action is None:
            self.invalid += 1
            reason = (error or "").split("; reply with")[0][:120]
            self.history.append(((raw.strip().splitlines() or ["(empty answer)"])[0][:80], f"invalid action: {reason}"))
        elif action == STOP:
            self.history.append((STOP, "episode ended by the agent"))
            self.stopped = self.finished = True
            self.end_reason = "stop"
            return
        else:
            outcome, exhausted = self.act(action)
            self.history.append((action, outcome))
            if exhausted:
                self.finished, self.end_reason = True, "budget"
        self.scene_graphs.append(self.scene_graph())
        if self.cfg.oracle_success and self.goal_result().success:
            self.finished, self.end_reason = True, "success"
        elif len(self.history) >= self.cfg.max_steps and not self.finished:
            self.finished, self.end_reason = True, "max_steps"

    def record(self, phase: str, round_idx: int, ref_len: int | None, model: str, retrieved: list[str]) -> dict:
        """The result record of the finished episode, with its trajectory for the database."""
        goal = self.goal_result()
        done = goal.success if self.cfg.oracle_success else self.stopped
        traj = TrajectoryRecord(goal=self.goal, scene_graphs=self.scene_graphs, history=self.history, done=done,
                                task_id=self.task.task_id, task_type=self.task.task_type, round=round_idx,
                                record_id=f"{phase}-r{round_idx}-{self.task.task_id}")
        return {"phase": phase, "round": round_idx, "method": f"prag_{phase}_r{round_idx}", "split": self.task.split,
                "task_id": self.task.task_id, "task_type": self.task.task_type,
                "goal": self.goal, "success": goal.success, "satisfied": goal.satisfied, "total": goal.total,
                "init_satisfied": self.init_goal.satisfied, "init_total": self.init_goal.total,
                "steps": self.steps_taken(), "hl_steps": len(self.history),
                "ref_len": ref_len, "stopped": self.stopped, "done": done,
                "end_reason": self.end_reason, "invalid_actions": self.invalid, "retrieved": retrieved,
                "model": model, "llm": self.stats.to_dict(),
                "oracle": self.oracle(),
                "trajectory": traj.to_dict()}


def trajectory_text(hits: Sequence[ScoredTrajectory], max_actions: int) -> str:
    """Retrieved trajectories as prompt text: goal, done flag, first actions with their outcome."""
    if not hits:
        return "(none yet)"
    blocks = []
    for n, hit in enumerate(hits, 1):
        rec = hit.record
        acts = "; ".join(f"{a} ({'ok' if o == 'ok' else 'failed'})" for a, o in rec.history[:max_actions])
        blocks.append(f"{n}. Goal: {rec.goal} (done: {'yes' if rec.done else 'no'})\n   Actions: {acts or '-'}")
    return "\n".join(blocks)


class PragAgent:
    """Runs P-RAG rounds with one model and one trajectory database."""

    def __init__(self, llm: LLMSession, db: TrajectoryDB, cfg: PragConfig | None = None,
                 limits: ExecutorLimits | None = None,
                 episode_factory: Callable[[Task, PragConfig, ExecutorLimits | None], StepEpisode] | None = None,
                 template: str = "prag_step") -> None:
        self.cfg = cfg or PragConfig()
        self.cfg.validate()
        self.llm, self.db, self.limits = llm, db, limits
        self.template = load_template(template)
        self.new_episode = episode_factory or StepEpisode  # another backend's episodes, e.g. ALFWorld games

    def retrieve(self, ep: StepEpisode) -> list[ScoredTrajectory]:
        """Top-K stored trajectories for the episode's goal and current scene graph."""
        try:
            return self.db.retrieve(ep.goal, ep.scene_graphs[-1], k=self.cfg.k)
        except EmptyMemoryError:
            return []

    def prompt(self, ep: StepEpisode, hits: Sequence[ScoredTrajectory]) -> list[dict]:
        recent = ep.history[-self.cfg.history_in_prompt:]
        first = len(ep.history) - len(recent) + 1
        history = "\n".join(f"{first + i}. {a} -> {o}" for i, (a, o) in enumerate(recent)) or "(none)"
        return self.template.render(actions=ep.action_space(), trajectories=trajectory_text(hits, self.cfg.trajectory_actions),
                                    goal=ep.goal, history=history, observation=ep.observation(self.cfg.max_view_objects))

    def run_batch(self, tasks: Sequence[Task], phase: str, round_idx: int, ref_lens: dict[str, int | None]) -> list[dict]:
        """Run episodes in lockstep until each stops or runs out of steps; return their records."""
        eps = [self.new_episode(t, self.cfg, self.limits) for t in tasks]
        retrieved: dict[str, list[str]] = {t.task_id: [] for t in tasks}
        while active := [e for e in eps if not e.finished]:
            hits = [self.retrieve(e) for e in active]
            for e, h in zip(active, hits, strict=True):
                retrieved[e.task.task_id] = list(dict.fromkeys(retrieved[e.task.task_id] + [x.record.record_id for x in h]))
            prompts = [self.prompt(e, h) for e, h in zip(active, hits, strict=True)]
            answers = self.llm.ask(prompts, active[0].parse, self.template.prompt_id, [e.stats for e in active],
                                   max_new_tokens=self.cfg.max_new_tokens)
            for e, a in zip(active, answers, strict=True):
                e.apply(a.value, a.text, a.error)
        return [e.record(phase, round_idx, ref_lens.get(e.task.task_id), self.llm.model_name, retrieved[e.task.task_id])
                for e in eps]

    def run_round(self, tasks: Sequence[Task], phase: str, round_idx: int, ref_lens: dict[str, int | None],
                  done: dict[tuple, dict], on_record: Callable[[dict], None]) -> list[dict]:
        """All tasks of one round (those already in ``done`` are skipped); records in task order."""
        todo = [t for t in tasks if (phase, round_idx, t.task_id) not in done]
        for i in range(0, len(todo), self.cfg.batch_size):
            for rec in self.run_batch(todo[i:i + self.cfg.batch_size], phase, round_idx, ref_lens):
                done[(phase, round_idx, rec["task_id"])] = rec
                on_record(rec)
        return [done[(phase, round_idx, t.task_id)] for t in tasks]


def add_round(db: TrajectoryDB, records: Iterable[dict]) -> int:
    """Add the trajectories of a finished round to the database (idempotent); return how many."""
    have = {r.record_id for r in db.records()}
    added = 0
    for rec in records:
        traj = TrajectoryRecord.from_dict(rec["trajectory"])
        if traj.record_id not in have:
            db.add(traj)
            added += 1
    return added


def load_results(path: Path) -> dict[tuple, dict]:
    """Records of a results JSONL keyed by (phase, round, task_id); a torn last line is dropped."""
    return load_records(path, lambda r: (r["phase"], r["round"], r["task_id"]))


def schedule(mode: str, rounds: int, train: Sequence[Task], test: Sequence[Task]) -> list[tuple[str, int, Sequence[Task], bool]]:
    """(phase, round, tasks, add_to_db) of a run: train rounds then a test round, or self-iteration."""
    if mode not in PRAG_MODES:
        raise ValueError(f"P-RAG mode {mode!r} is not one of {PRAG_MODES}")
    if rounds < 1:
        raise ValueError(f"P-RAG needs at least one round, got {rounds}")
    if mode == "self_iterate":
        return [("self", r, test, True) for r in range(1, rounds + 1)]
    return [("train", r, train, True) for r in range(1, rounds + 1)] + [("test", rounds, test, False)]


def run_prag(agent: PragAgent, mode: str, rounds: int, train: Sequence[Task], test: Sequence[Task],
             results_path: Path, ref_lens: dict[str, int | None],
             on_round: Callable[[str, int, list[dict]], None] | None = None) -> list[dict]:
    """Run (or resume) every round of a P-RAG run; returns the records of all rounds in order."""
    done = load_results(results_path)
    all_records: list[dict] = []
    with RecordWriter(results_path) as writer:
        for phase, r, tasks, add in schedule(mode, rounds, train, test):
            records = agent.run_round(tasks, phase, r, ref_lens, done, writer.write)
            if add:
                add_round(agent.db, records)
            all_records += records
            if on_round is not None:
                on_round(phase, r, records)
    return all_records


def round_table(records: Sequence[dict]) -> list[dict]:
    """Success rate, SPL and goal-condition rate per (phase, round)."""
    groups: dict[tuple, list[dict]] = {}
    for rec in records:
        groups.setdefault((rec["phase"], rec["round"]), []).append(rec)
    rows = []
    for (phase, r), recs in groups.items():
        m = aggregate(Episode.from_record(x) for x in recs)
        rows.append({"phase": phase, "round": r, "n": m["n"], "success_rate": m["sr"], "spl": m["spl"],
                     "n_no_ref": m["n_no_ref"], "gc": m["gc"], "stop_rate": sum(x["stopped"] for x in recs) / len(recs),
                     "invalid_per_episode": sum(x["invalid_actions"] for x in recs) / len(recs),
                     "hl_steps": sum(x["hl_steps"] for x in recs) / len(recs)})
    return rows


def transition_table(records: Sequence[dict], phase: str | None = None) -> list[dict]:
    """Round-to-round transitions of each task's success (stay/become solved/unsolved).

    Consecutive rounds of the same phase are compared over the tasks present in both.
    """
    by_round: dict[tuple, dict[str, bool]] = {}
    for rec in records:
        if phase is None or rec["phase"] == phase:
            by_round.setdefault((rec["phase"], rec["round"]), {})[rec["task_id"]] = bool(rec["success"])
    keys = sorted(by_round, key=lambda k: (k[0], k[1]))
    rows = []
    for a, b in zip(keys, keys[1:], strict=False):
        if a[0] != b[0]:
            continue
        prev, cur = by_round[a], by_round[b]
        common = [t for t in prev if t in cur]
        rows.append({"phase": a[0], "from_round": a[1], "to_round": b[1], "n": len(common),
                     "stay_solved": sum(prev[t] and cur[t] for t in common),
                     "become_solved": sum(not prev[t] and cur[t] for t in common),
                     "become_unsolved": sum(prev[t] and not cur[t] for t in common),
                     "stay_unsolved": sum(not prev[t] and not cur[t] for t in common)})
    return rows
