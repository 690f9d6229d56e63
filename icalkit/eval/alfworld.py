"""The evaluation harness on ALFWorld games (``icalkit eval env.name=alfworld``).

The same jobs, records, metrics and tables as on the embedded simulator; what differs:

- a split is a set of ALFWorld games (generated from the embedded scenes of that split, or found
  below ``alfworld.games_dir/<split>``); its file records each game's path, the expert plan's length
  (Fast Downward, the reference length) and the goal-condition counts of the start state (the
  project's checker on the engine's facts);
- the planner is the flat LLM-Planner over text commands (:class:`AlfworldFlatPlanner`): method mode
  ``zero_shot`` (no examples) or ``flat`` (kNN examples from a plan memory: JSONL of instruction +
  expert plan of ``train`` games, written on first use). Modes that write Python programs against the
  household API (``ical``, ``rerank``, ``copy``) cannot act in ALFWorld and are refused with that reason.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from icalkit.data_gen.alfworld_plans import make_alfworld_env, read_plan_memory, write_plan_memory
from icalkit.envs.alfworld.config import AlfworldConfig
from icalkit.envs.alfworld.games import ALFWORLD_TYPES
from icalkit.eval.methods import MethodConfig
from icalkit.eval.splits import SplitConfig, SplitTask, split_path

ALFWORLD_MODES = ("zero_shot", "flat")


def alfworld_problem(method: MethodConfig) -> str | None:
    """Why ``method`` cannot run on ALFWorld (its planner writes household programs), or None."""
    if method.planner.mode not in ALFWORLD_MODES:
        return (f"method {method.name}: planner mode {method.planner.mode!r} writes Python programs against the "
                f"household API, which ALFWorld's text commands cannot run; on ALFWorld use mode "
                f"{' or '.join(ALFWORLD_MODES)} (configs/methods/alfworld_flat.yaml, zero_shot)")
    return None


def check_task_types(task_types: Sequence[str]) -> None:
    """Raise ValueError naming the task types that have no ALFWorld game."""
    bad = [t for t in task_types if t not in ALFWORLD_TYPES]
    if bad:
        raise ValueError(f"split.task_types {bad} have no ALFWorld games; with env.name=alfworld use some of "
                         f"{list(ALFWORLD_TYPES)} (configs/eval_alfworld.yaml sets all six)")


def alfworld_split_path(cfg: SplitConfig, split: str, games: AlfworldConfig) -> Path:
    """The split file of ``split``: the household name prefixed ``alfworld-`` plus the game source's hash."""
    source = json.dumps([games.games_dir, games.generate, games.max_games])
    base = split_path(cfg, split)
    return base.with_name(f"alfworld-{base.stem}-g{hashlib.sha256(source.encode()).hexdigest()[:8]}.jsonl")


def load_alfworld_split(cfg: SplitConfig, split: str, games: AlfworldConfig, progress: bool = True) -> list[SplitTask]:
    """The games of ``split`` with reference lengths and initial goal counts (file written once, read back).

    Raises:
        ValueError: a task type without ALFWorld games, or a split file that cannot be read (named).
        GameFileError: a game file that does not parse (named).
    """
    check_task_types(cfg.task_types)
    path = alfworld_split_path(cfg, split, games)
    if path.is_file():
        try:
            tasks = [SplitTask.from_dict(json.loads(line)) for line in path.read_text().splitlines() if line.strip()]
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"split file {path} is damaged ({exc}); delete it to generate it again") from None
        if not tasks or not all(t.game for t in tasks):
            raise ValueError(f"split file {path} holds no ALFWorld games; delete it to generate it again")
        return tasks
    from tqdm import tqdm

    files = games.game_files(list(cfg.task_types), cfg.size, split, cfg.seed)
    env, tasks = make_alfworld_env(), []
    for game in tqdm(files, desc=f"alfworld split {split}", unit="game", disable=not progress):
        _, info = env.reset(options={"game": game})
        start = info["goal_progress"]
        tasks.append(SplitTask(env.task, info["reference_length"] or None, start["satisfied"], start["total"],
                               game=str(game)))
    if not tasks:
        raise ValueError(f"no ALFWorld games for split {split} of types {cfg.task_types}")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(json.dumps(st.to_dict()) + "\n" for st in tasks))
    tmp.replace(path)
    return tasks


def build_alfworld_planner(method: MethodConfig, llm: Any, memory_cfg: Any, sampling: dict[str, Any]) -> Any:
    """The flat LLM-Planner of ``method`` (examples from its plan memory unless zero-shot)."""
    from icalkit.agents.llm_session import LLMSession
    from icalkit.agents.planner_alfworld import AlfworldFlatPlanner
    from icalkit.memory.config import build_text_embedder

    problem = alfworld_problem(method)
    if problem:
        raise ValueError(problem)
    examples, embedder = [], None
    if method.planner.mode == "flat":
        examples = read_plan_memory(method.memory)
        if method.memory_limit is not None:
            examples = examples[:method.memory_limit]
        embedder = build_text_embedder(memory_cfg.text_embedder) if examples else None
    return AlfworldFlatPlanner(LLMSession(llm, **sampling), examples, embedder, method.planner.k,
                               method.planner.max_replans)


def run_alfworld_episode(planner: Any, env: Any, method: MethodConfig, st: SplitTask) -> dict[str, Any]:
    """Play one split game; the record carries the split's start-of-episode facts, checked against the game's."""
    rec = planner.run_episode(env, st.game)
    if (rec["init_satisfied"], rec["init_total"]) != (st.init_satisfied, st.init_total):
        raise RuntimeError(f"game {st.game}: the split recorded {st.init_satisfied}/{st.init_total} initial goal "
                           f"conditions, the game started with {rec['init_satisfied']}/{rec['init_total']}: the "
                           f"split file is stale, delete it to regenerate")
    rec["ref_len"] = st.ref_len
    rec["method"] = method.name
    rec["game"] = st.game
    rec["task"] = {"instruction": st.task.instruction, "dialogue": st.task.dialogue, "params": st.task.params}
    return rec


def ensure_plan_memories(specs: Sequence[str], games: AlfworldConfig, task_types: Sequence[str], n_per_type: int,
                         seed: int = 0) -> list[str]:
    """Write the plan memory of every ``flat`` method in ``specs`` whose memory file is missing; the paths written."""
    from icalkit.eval.methods import load_method

    written = []
    for spec in specs:
        method = load_method(spec)
        if method.planner.mode == "flat" and method.memory and not Path(method.memory).is_file():
            n = write_plan_memory(method.memory, games, task_types, n_per_type, seed)
            print(f"icalkit eval: wrote {n} ALFWorld plan examples (train games' expert plans) to {method.memory}")
            written.append(method.memory)
    return written
