"""The evaluation loop: (method, split, task) jobs run in worker processes, resumable per episode.

The parent owns the models (one per distinct model config), the results file and the schedule;
each worker owns an environment and one planner per method and runs one episode at a time. A
worker's model calls go to the parent, which batches them across workers
(:mod:`icalkit.eval.broker`). Only the parent writes: ``episodes.jsonl`` (one line per finished
episode; a re-run skips those) and ``errors.jsonl`` (episodes that raised or whose worker died;
a re-run tries them again). ``workers=0`` runs the same episodes one after another in the parent.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import multiprocessing.connection as mp_connection
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from icalkit.config import to_dict
from icalkit.envs.config import EnvConfig
from icalkit.eval.broker import LLMBroker, RemoteLLM, wait_for_parent
from icalkit.eval.episodes import build_planner, run_episode
from icalkit.eval.methods import MethodConfig, method_sampling
from icalkit.eval.splits import SplitTask
from icalkit.memory.config import MemoryConfig
from icalkit.models.llm.base import LLM, LLMError, ServerUnreachableError
from icalkit.models.llm.factory import LLMConfig

UNREACHABLE_STOP = 3  # episodes in a row that could not reach their model's server stop the run


@dataclass
class Job:
    """One episode to run."""

    method: str
    split: str
    task: SplitTask

    @property
    def key(self) -> str:
        return job_key(self.method, self.split, self.task.task.task_id)


def job_key(method: str, split: str, task_id: str) -> str:
    return f"{method}|{split}|{task_id}"


@dataclass
class Setup:
    """What every worker needs to build planners (plain, picklable data)."""

    methods: dict[str, MethodConfig]
    llm_keys: dict[str, str]          # method name -> model key ("" when it uses no model)
    model_names: dict[str, str]       # model key -> model name
    memory: MemoryConfig
    env: EnvConfig
    sampling: dict[str, Any]
    oracle_object_map: bool
    torch_threads: int = 1


@dataclass
class RunStats:
    """How the run used its time."""

    episodes: int = 0
    failed: int = 0
    wall_s: float = 0.0
    model_busy_s: float = 0.0
    model_calls: int = 0
    batch_sizes: list[int] = field(default_factory=list)
    workers: int = 0

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["batch_sizes"] = None
        d["mean_batch"] = sum(self.batch_sizes) / len(self.batch_sizes) if self.batch_sizes else 0.0
        d["episodes_per_hour"] = 3600 * self.episodes / self.wall_s if self.wall_s else 0.0
        d["model_busy_fraction"] = self.model_busy_s / self.wall_s if self.wall_s else 0.0
        return d


class _Planners:
    """Per-process cache of one planner per method and one env."""

    def __init__(self, setup: Setup, llm_for: Callable[[str], LLM | None]) -> None:
        self.setup, self.llm_for = setup, llm_for
        self.planners: dict[str, Any] = {}
        self.env = None

    def run(self, job: Job) -> dict[str, Any]:
        from icalkit.envs.factory import make_env

        s = self.setup
        if self.env is None:
            self.env = make_env(s.env.name, **s.env.kwargs())
        if job.method not in self.planners:
            method = s.methods[job.method]
            self.planners[job.method] = build_planner(method, self.llm_for(job.method), s.memory,
                                                      method_sampling(method, s.sampling), s.env,
                                                      s.oracle_object_map)
        rec = run_episode(self.planners[job.method], self.env, s.methods[job.method], job.task)
        rec["split"] = job.split
        return rec


def _worker_main(setup: Setup, conn: Any) -> None:
    """Worker process: run the jobs the parent sends on ``conn`` until told to stop; answer on it."""
    import torch

    torch.set_num_threads(max(1, setup.torch_threads))

    def llm_for(method: str) -> LLM | None:
        key = setup.llm_keys[method]
        return RemoteLLM(key, setup.model_names[key], conn) if key else None

    planners = _Planners(setup, llm_for)
    while True:
        msg = wait_for_parent(conn)
        if msg is None or msg[0] == "stop":
            return
        job: Job = msg[1]
        try:
            conn.send(("done", job.key, planners.run(job)))
        except Exception as exc:  # one bad episode never ends the run
            conn.send(("fail", job.key, f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=4)}"))


class _Worker:
    """A worker process and the parent's end of its private pipe."""

    def __init__(self, ctx: Any, worker_id: int, setup: Setup) -> None:
        self.id, self.job = worker_id, None
        self.conn, child = ctx.Pipe()
        # not a daemon: the executor's sandbox starts processes of its own inside a worker
        self.proc = ctx.Process(target=_worker_main, args=(setup, child))
        self.proc.start()
        child.close()

    def send(self, msg: Any) -> None:
        try:
            self.conn.send(msg)
        except (OSError, ValueError):  # the worker died; the liveness check handles it
            pass


class Evaluator:
    """Runs jobs and hands each finished record (or failure) to the callbacks.

    Args:
        setup: methods, models and settings shared by every episode.
        llms: the parent's models by key.
        workers: worker processes (0: one after another in this process).
        on_done: ``on_done(job, record)`` for each finished episode (the parent writes it).
        on_fail: ``on_fail(job, message)`` for each episode that raised or whose worker died.

    Raises (from :meth:`run`):
        LLMError: ``UNREACHABLE_STOP`` episodes in a row could not reach their model's server (it is
            down: every further episode would fail after its retries); the finished ones are kept.
    """

    def __init__(self, setup: Setup, llms: dict[str, LLM], workers: int,
                 on_done: Callable[[Job, dict], None], on_fail: Callable[[Job, str], None]) -> None:
        self.setup, self.llms, self.workers = setup, llms, workers
        self.on_done, self.on_fail = on_done, on_fail
        self.broker = LLMBroker(llms)
        self.stats = RunStats(workers=workers)
        self.pool: list[_Worker] = []
        self.unreachable = 0  # episodes in a row that could not reach their model's server

    def run(self, jobs: list[Job], progress: Callable[[], None] = lambda: None) -> RunStats:
        start = time.perf_counter()
        if self.workers == 0:
            self._run_inline(jobs, progress)
        else:
            self._run_workers(jobs, progress)
        self.stats.wall_s += time.perf_counter() - start
        self.stats.model_busy_s += self.broker.busy_s
        self.stats.model_calls += self.broker.calls
        self.stats.batch_sizes += self.broker.batch_sizes
        return self.stats

    def _finish(self, job: Job, rec: dict | None, error: str = "") -> None:
        if rec is not None:
            self.stats.episodes += 1
            self.on_done(job, rec)
        else:
            self.stats.failed += 1
            self.on_fail(job, error)
        first = error.splitlines()[0] if error else ""
        self.unreachable = self.unreachable + 1 if ServerUnreachableError.__name__ in first else 0
        if self.unreachable >= UNREACHABLE_STOP:
            raise LLMError(f"{self.unreachable} episodes in a row could not reach their model's server; the run "
                           f"stops (finished episodes are kept; start the server and run again to resume): {first}")

    def _run_inline(self, jobs: list[Job], progress: Callable[[], None]) -> None:
        from icalkit.eval.broker import TimedLLM

        timed = {k: TimedLLM(v, self.broker) for k, v in self.llms.items()}
        planners = _Planners(self.setup, lambda m: timed.get(self.setup.llm_keys[m]))
        for job in jobs:
            try:
                rec = planners.run(job)
            except Exception as exc:
                self._finish(job, None, f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=4)}")
            else:
                self._finish(job, rec)
            progress()

    def _run_workers(self, jobs: list[Job], progress: Callable[[], None]) -> None:
        ctx = mp.get_context("spawn")
        todo = list(jobs)
        by_key = {j.key: j for j in jobs}
        self.pool = pool = [_Worker(ctx, i, self.setup) for i in range(min(self.workers, len(jobs)))]
        next_id = len(pool)
        try:
            while todo or any(w.job for w in pool):
                for w in pool:
                    if w.job is None and todo:
                        w.job = todo.pop(0)
                        w.send(("job", w.job))
                busy = sum(1 for w in pool if w.job is not None)
                ready = mp_connection.wait([w.conn for w in pool], timeout=0.05 if self.broker.pending else 0.5)
                for w in [w for w in pool if w.conn in ready]:
                    try:
                        msg = w.conn.recv()
                    except (EOFError, OSError):
                        continue  # the worker died: handled below
                    if msg[0] == "gen":
                        self.broker.add(w.id, msg[1], msg[2], msg[3])
                    else:
                        job = by_key[msg[1]]
                        self._finish(job, msg[2] if msg[0] == "done" else None, msg[2] if msg[0] == "fail" else "")
                        w.job = None
                        progress()
                if self.broker.due(busy):
                    self.broker.flush(lambda wid, m: [w.send(m) for w in pool if w.id == wid])
                for i, w in enumerate(pool):
                    if not w.proc.is_alive():
                        self.broker.drop(w.id)
                        if w.job is not None:
                            self._finish(w.job, None, f"worker process died (exit code {w.proc.exitcode}) "
                                                      f"while running this episode")
                            progress()
                        w.conn.close()
                        pool[i] = _Worker(ctx, next_id, self.setup)
                        next_id += 1
        finally:
            for w in pool:
                if w.proc.is_alive():
                    w.send(("stop",))
            for w in pool:
                w.proc.join(timeout=5)
                if w.proc.is_alive():
                    w.proc.kill()


def model_key(cfg: LLMConfig) -> str:
    """A key naming a distinct model config (methods with equal configs share one model)."""
    return json.dumps(to_dict(cfg), sort_keys=True)
