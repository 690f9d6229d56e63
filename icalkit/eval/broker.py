"""Model calls batched across episodes that run in worker processes.

The evaluation's episodes run in worker processes, but the model lives once, in the parent: a
worker's planner talks to a :class:`RemoteLLM`, which sends its prompts to the parent and waits;
the parent's :class:`LLMBroker` gathers the requests of all workers and answers them with one
batched ``generate`` call per model and sampling setting. Because a worker spends most of an
episode waiting for the model, the parent flushes as soon as every busy worker is waiting (or
after ``max_wait_s``), which keeps the model busy with the largest batch there is.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any

from icalkit.models.llm.base import LLM, Generation, GenerationError, Prompt, SamplingParams


def wait_for_parent(conn: Any, poll_s: float = 2.0) -> Any:
    """The next message from the parent on ``conn``, or None once the parent is gone (no orphans)."""
    parent = os.getppid()
    while True:
        try:
            if conn.poll(poll_s):
                return conn.recv()
        except (EOFError, OSError):
            return None
        if os.getppid() != parent:
            return None


class RemoteLLM(LLM):
    """An :class:`LLM` in a worker process whose generations are made by the parent.

    Args:
        key: which of the parent's models answers (one per distinct model config).
        model_name: the model's name, for records.
        conn: this worker's own pipe to the parent (a private pipe per worker: a worker killed
            mid-message cannot leave a lock that blocks the others).
    """

    backend = "remote"

    def __init__(self, key: str, model_name: str, conn: Any) -> None:
        self.key, self.model_name, self.conn = key, model_name, conn

    def _generate(self, prompts: list[Prompt], params: SamplingParams) -> list[Generation]:
        self.conn.send(("gen", self.key, prompts, params.to_dict()))
        msg = wait_for_parent(self.conn)
        if msg is None:
            raise SystemExit("the evaluation's parent process is gone")
        kind, payload = msg
        if kind == "gen_error":
            raise GenerationError(payload)
        return [Generation.from_dict(g) for g in payload]


@dataclass
class _Pending:
    worker_id: int
    key: str
    prompts: list[Prompt]
    params: dict[str, Any]
    since: float = field(default_factory=time.perf_counter)


class LLMBroker:
    """Gathers generation requests from workers and answers them in batches.

    Args:
        llms: the parent's models by key.
        max_wait_s: longest a request waits for others before its batch is generated.
    """

    def __init__(self, llms: dict[str, LLM], max_wait_s: float = 0.25) -> None:
        self.llms, self.max_wait_s = llms, max_wait_s
        self.pending: list[_Pending] = []
        self.busy_s = 0.0
        self.calls = 0
        self.batch_sizes: list[int] = []

    def add(self, worker_id: int, key: str, prompts: list[Prompt], params: dict[str, Any]) -> None:
        """Queue one worker's request."""
        self.pending.append(_Pending(worker_id, key, prompts, params))

    def waiting(self) -> set[int]:
        """Workers waiting for an answer."""
        return {p.worker_id for p in self.pending}

    def due(self, busy_workers: int) -> bool:
        """Whether to generate now: every busy worker waits, or the oldest request waited long enough."""
        if not self.pending:
            return False
        return len(self.waiting()) >= busy_workers or time.perf_counter() - self.pending[0].since >= self.max_wait_s

    def flush(self, reply: Any) -> None:
        """Generate for every pending request, one batched call per (model, sampling); ``reply(worker, msg)``."""
        groups: dict[tuple[str, str], list[_Pending]] = {}
        for p in self.pending:
            groups.setdefault((p.key, repr(sorted(p.params.items()))), []).append(p)
        self.pending = []
        for (key, _), reqs in groups.items():
            prompts = [pr for r in reqs for pr in r.prompts]
            params = dict(reqs[0].params)
            params["stop"] = list(params.get("stop") or [])
            start = time.perf_counter()
            try:
                gens = self.llms[key].generate(prompts, **params)
            except Exception as exc:  # the backend failed: every waiting worker gets the error
                for r in reqs:
                    reply(r.worker_id, ("gen_error", f"{type(exc).__name__}: {exc}"))
                continue
            finally:
                self.busy_s += time.perf_counter() - start
            self.calls += 1
            self.batch_sizes.append(len(prompts))
            i = 0
            for r in reqs:
                reply(r.worker_id, ("gen", [g.to_dict() for g in gens[i:i + len(r.prompts)]]))
                i += len(r.prompts)

    def drop(self, worker_id: int) -> None:
        """Forget the requests of a worker that died."""
        self.pending = [p for p in self.pending if p.worker_id != worker_id]


class TimedLLM(LLM):
    """A model called directly (episodes one after another) whose busy time the broker counts."""

    def __init__(self, llm: LLM, broker: LLMBroker) -> None:
        self.llm, self.broker = llm, broker
        self.backend, self.model_name = llm.backend, llm.model_name

    def _generate(self, prompts: list[Prompt], params: SamplingParams) -> list[Generation]:
        start = time.perf_counter()
        try:
            return self.llm.generate(prompts, **{**params.to_dict()})
        finally:
            self.broker.busy_s += time.perf_counter() - start
            self.broker.calls += 1
            self.broker.batch_sizes.append(len(prompts))
