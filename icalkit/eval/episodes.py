"""One evaluation episode: build a method's planner and run it on one task of a split.

Used in the parent process (``workers=0``: episodes one after another) and in worker processes
(the model then answers through :class:`~icalkit.eval.broker.RemoteLLM`): the same code either way.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from icalkit.agents.api.runtime import ApiConfig
from icalkit.agents.executor import ExecutorLimits
from icalkit.agents.llm_session import LLMSession
from icalkit.agents.planner import Planner
from icalkit.envs.config import EnvConfig
from icalkit.eval.methods import MethodConfig
from icalkit.eval.splits import SplitTask
from icalkit.memory.config import MemoryConfig, build_memory
from icalkit.models.llm.base import LLM


class TruncatedMemory:
    """A memory seen through its first ``limit`` examples (for the learning curve)."""

    def __init__(self, memory: Any, limit: int) -> None:
        self.memory = memory
        examples = list(memory)
        kept = {ex.task_id for ex in examples[:limit]}
        self.hidden = sorted({ex.task_id for ex in examples[limit:]} - kept)
        self.kept = examples[:limit]

    def __iter__(self) -> Any:
        return iter(self.kept)

    def retrieve(self, *args: Any, exclude_task_ids: Any = (), **kwargs: Any) -> list:
        return self.memory.retrieve(*args, exclude_task_ids=[*exclude_task_ids, *self.hidden], **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.memory, name)


def build_planner(method: MethodConfig, llm: LLM | None, memory_cfg: MemoryConfig, sampling: dict[str, Any],
                  env_cfg: EnvConfig, oracle_object_map: bool) -> Planner:
    """The deployment agent of ``method`` (its memory opened, cut to ``memory_limit`` examples)."""
    if env_cfg.name == "alfworld":
        from icalkit.eval.alfworld import build_alfworld_planner

        return build_alfworld_planner(method, llm, memory_cfg, sampling)
    memory = None
    if method.planner.mode != "zero_shot":
        cfg = dataclasses.replace(memory_cfg, path=method.memory, type_vote=method.type_vote or memory_cfg.type_vote)
        if method.retriever:
            cfg.text_embedder = dataclasses.replace(cfg.text_embedder, model=method.retriever)
        memory = build_memory(cfg)
        if method.memory_limit is not None:
            memory = TruncatedMemory(memory, method.memory_limit)
    session = LLMSession(llm, **sampling) if llm is not None else None
    limits = ExecutorLimits(api=ApiConfig(max_steps=env_cfg.max_steps, max_failures=env_cfg.max_failures,
                                          oracle_object_map=oracle_object_map))
    return Planner(session, memory, method.planner, limits)


def run_episode(planner: Planner, env: Any, method: MethodConfig, st: SplitTask) -> dict[str, Any]:
    """Run one task; the record holds the planner's result plus the split's start-of-episode facts."""
    if st.game:  # an ALFWorld game
        from icalkit.eval.alfworld import run_alfworld_episode

        return run_alfworld_episode(planner, env, method, st)
    obs, _ = env.reset(options={"task": st.task})
    frame = obs.get("rgb") if isinstance(obs, dict) else None
    rec = planner.run_episode(st.task, env, st.ref_len, frame).to_dict()
    if (rec["init_satisfied"], rec["init_total"]) != (st.init_satisfied, st.init_total):
        raise RuntimeError(f"task {st.task.task_id}: the split recorded {st.init_satisfied}/{st.init_total} "
                           f"initial goal conditions, the episode started with {rec['init_satisfied']}/"
                           f"{rec['init_total']}: the split file is stale, delete it to regenerate")
    rec["method"] = method.name
    rec["task"] = {"instruction": st.task.instruction, "dialogue": st.task.dialogue, "params": st.task.params}
    return rec
