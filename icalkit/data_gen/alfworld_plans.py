"""ALFWorld plan data: the flat planner's plan memory and its fine-tuning pairs.

- **Plan memory** (JSONL, one train game per line: instruction + Fast Downward expert plan): the
  examples the flat LLM-Planner retrieves (:class:`~icalkit.agents.planner_alfworld.AlfworldFlatPlanner`).
- **Fine-tuning pairs** (``icalkit finetune data.env=alfworld``): for every train game, the prompt is
  exactly what the deployed flat planner sends (``AlfworldFlatPlanner.start`` + ``plan_prompt``: the
  k examples it retrieves from the plan memory, the game's own excluded; the objects the first
  observation names) and the completion is the expert plan, one command per line, kept only if it
  wins the game. A revision pair teaches grounded re-planning: the agent goes to a wrong receptacle
  and tries to take the object there (the commonest failure: the object is somewhere else); the
  engine's refusal goes into the planner's re-plan prompt, and the completion is the expert's plan
  from that state, kept only if it then wins.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from icalkit.agents.planner_alfworld import (
    OBJECT_NAME,
    AlfworldFlatPlanner,
    PlanExample,
    PromptState,
    goal_text,
    step_error,
)
from icalkit.data_gen.finetune_data import DatasetError, PairConfig, TaskPairs, summarize, to_dataset
from icalkit.envs.alfworld.config import AlfworldConfig


def make_alfworld_env(max_steps: int = 50, max_failures: int = 50) -> Any:
    """An :class:`~icalkit.envs.alfworld.env.AlfworldEnv` (error naming the install command without the extra)."""
    from icalkit.envs.factory import make_env

    return make_env("alfworld", max_steps=max_steps, max_failures=max_failures)


def expert_plan_records(games: Sequence[Path], env: Any = None, progress: bool = False) -> list[dict]:
    """One record per game: task id and type, game path, goal sentence (``instruction``) and expert plan."""
    from tqdm import tqdm

    env, records = env or make_alfworld_env(), []
    for game in tqdm(games, desc="expert plans", unit="game", disable=not progress):
        obs, info = env.reset(options={"game": game})
        records.append({"task_id": env.task.task_id, "task_type": env.task.task_type, "game": str(game),
                        "plan": info["expert_plan"], "instruction": goal_text(obs["text"])})
    return records


def plan_examples(games: Sequence[Path], env: Any = None) -> list[PlanExample]:
    """The flat planner's examples (goal sentence, expert plan) of ``games``."""
    return [PlanExample(r["task_id"], r["instruction"], r["plan"]) for r in expert_plan_records(games, env)]


def write_plan_memory(path: str | Path, games: AlfworldConfig, task_types: Sequence[str], n_per_type: int,
                      seed: int = 0, split: str = "train", progress: bool = True) -> int:
    """Write the flat planner's examples (instruction, expert plan) of ``n_per_type`` games per type."""
    from icalkit.envs.alfworld.env import load_task

    files = games.game_files(list(task_types), n_per_type, split, seed)
    if not games.generate:  # official data: every game of the split is found; keep n per type
        per_type: dict[str, list[Path]] = {}
        for f in files:
            per_type.setdefault(load_task(f)[0].task_type, []).append(f)
        files = [f for t in task_types for f in per_type.get(t, [])[:n_per_type]]
    lines = [json.dumps(r) for r in expert_plan_records(files, progress=progress)]
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(line + "\n" for line in lines))
    tmp.replace(path)
    return len(lines)


def read_plan_memory(path: str | Path) -> list[PlanExample]:
    """The :class:`PlanExample` s of a plan memory; ValueError naming the file when a line is malformed."""
    examples = []
    for n, line in enumerate(Path(path).read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
            examples.append(PlanExample(str(d["task_id"]), str(d["instruction"]), [str(c) for c in d["plan"]]))
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"plan memory {path} line {n} is malformed ({type(exc).__name__}: {exc}); "
                             f"delete the file to write it again") from None
    if not examples:
        raise ValueError(f"plan memory {path} holds no examples; delete it to write it again")
    return examples


def plan_completion(plan: Sequence[str]) -> str:
    """The assistant answer for a flat plan (what :func:`parse_command_plan` reads back)."""
    return "\n".join(plan)


def play(env: Any, commands: Sequence[str], seen: set[str]) -> tuple[bool, dict, dict]:
    """Run ``commands`` until one fails; (all succeeded, last observation, last info). ``seen`` grows."""
    obs, info = env.observation(), {}
    for command in commands:
        obs, _, _, _, info = env.step(command)
        seen |= set(OBJECT_NAME.findall(obs["text"]))
        if not obs["last_action_success"]:
            return False, obs, info
    return True, obs, info


class AlfworldPairBuilder:
    """Builds one game's pairs at a time (see the module docstring).

    Args:
        planner: the deployed flat planner (its retrieval and prompt functions; no model is called).
        revisions_per_game: wrong-receptacle revision pairs per game (0 or 1).
        seed: seed of the wrong receptacle's choice.
    """

    def __init__(self, planner: AlfworldFlatPlanner, revisions_per_game: int = 1, seed: int = 0) -> None:
        self.planner, self.revisions, self.seed = planner, revisions_per_game, seed
        self.env = make_alfworld_env()

    def _start(self, game: Path) -> tuple[PromptState, list[str], Any]:
        """Reset ``game``: the planner's prompt state, the expert plan and the task."""
        obs, info = self.env.reset(options={"game": game})
        task = self.env.task
        return self.planner.start(obs["text"], task.task_id, None, task.instruction), list(info["expert_plan"]), task

    def build(self, game: Path) -> TaskPairs:
        """Plan pair (+ revision pair) of ``game``; never raises for a game whose plan fails."""
        state, plan, task = self._start(game)
        out = TaskPairs(task.task_id, task.task_type)
        prompt = self.planner.plan_prompt(state)
        ok, _, info = play(self.env, plan, set())
        if not plan or not ok or not info.get("won"):
            out.drop("expert_plan_fails")
            return out
        meta = {"task_id": task.task_id, "task_type": task.task_type, "game": str(game),
                "retrieved": [e.task_id for e in state.examples]}
        out.rows.append({**meta, "kind": "plan", "mistake": "", "prompt": prompt, "completion": plan_completion(plan)})
        if self.revisions:
            row = self._revision(game, plan, random.Random(f"{self.seed}/{task.task_id}"), out)
            if row is not None:
                out.rows.append({**meta, **row})
        return out

    def _revision(self, game: Path, plan: list[str], rng: random.Random, out: TaskPairs) -> dict | None:
        """Go to a wrong receptacle and try the take there; the engine's refusal → the expert's plan from there."""
        at = next((i for i, c in enumerate(plan) if c.startswith("take ") and i and plan[i - 1].startswith("go to ")),
                  None)
        if at is None:
            out.drop("revision_no_take_step")
            return None
        state, _, _ = self._start(game)
        right = plan[at - 1][len("go to "):]
        others = sorted(r for r in state.seen if r != right)  # the first observation names the receptacles
        if f" from {right}" not in plan[at] or not others:
            out.drop("revision_no_other_receptacle")
            return None
        wrong = rng.choice(others)
        take = plan[at].replace(f" from {right}", f" from {wrong}")
        done = [*plan[:at - 1], f"go to {wrong}"]
        ok, _, _ = play(self.env, done, state.seen)
        if not ok:
            out.drop("revision_prefix_fails")
            return None
        ok, obs, _ = play(self.env, [take], state.seen)
        if ok:  # the object is there too: not a mistake
            out.drop("revision_not_a_mistake")
            return None
        prompt = self.planner.replan_prompt(state, done, step_error(take, obs))
        rest = self.env.expert_replan()
        ok, _, info = play(self.env, rest, set())
        if not rest or not ok or not info.get("won"):
            out.drop("revision_fix_fails")
            return None
        return {"kind": "revision", "mistake": "wrong_receptacle", "prompt": prompt, "completion": plan_completion(rest)}


def build_alfworld_pairs(cfg: PairConfig, out_dir: str | Path, embedder: Any = None, progress: bool = True) -> dict:
    """Build (resumably) the ALFWorld pairs of a :class:`~icalkit.data_gen.finetune_data.PairConfig` with
    ``env: alfworld`` into ``out_dir``: pairs.jsonl, dataset/, stats.json.

    With ``cfg.k > 0`` the prompts carry examples retrieved from the plan memory ``cfg.memory_path``
    (written from ``n_per_type`` games of every type in ``cfg.task_types`` of ``cfg.split`` if missing,
    held-out types included: their only trace is in the memory).

    Raises:
        DatasetError: no pair survived, or ``k > 0`` without a memory path.
    """
    from tqdm import tqdm

    from icalkit.data_gen.finetune_data import token_counter
    from icalkit.data_gen.results_file import RecordWriter, load_records
    from icalkit.envs.alfworld.env import load_task

    cfg.validate()
    out = Path(out_dir)
    examples: list[PlanExample] = []
    if cfg.k > 0:
        if not cfg.memory_path:
            raise DatasetError("data.k > 0 retrieves examples: set data.memory_path to an ALFWorld plan memory "
                               "(JSONL; written from the train games when missing)")
        if not Path(cfg.memory_path).is_file():
            n = write_plan_memory(cfg.memory_path, cfg.alfworld, cfg.task_types, cfg.n_per_type, cfg.seed, cfg.split,
                                  progress)
            print(f"icalkit finetune: wrote {n} ALFWorld plan examples to {cfg.memory_path}")
        examples = read_plan_memory(cfg.memory_path)
        if embedder is None:
            from icalkit.memory.config import TextEmbedderConfig, build_text_embedder

            embedder = build_text_embedder(TextEmbedderConfig())
    planner = AlfworldFlatPlanner(None, examples, embedder if examples else None, cfg.k)
    files = cfg.alfworld.game_files(cfg.training_types(), cfg.n_per_type, cfg.split, cfg.seed)
    wanted = set(cfg.training_types())
    games = [g for g in files if load_task(g)[0].task_type in wanted]
    done = load_records(out / "pairs.jsonl", lambda r: r["game"])
    todo = [g for g in games if str(g) not in done]
    if todo:
        builder = AlfworldPairBuilder(planner, cfg.revisions_per_task, cfg.seed)
        with RecordWriter(out / "pairs.jsonl") as writer:
            for game in tqdm(todo, desc="alfworld pairs", unit="game", disable=not progress):
                rec = vars(builder.build(game)) | {"game": str(game)}
                done[str(game)] = rec
                writer.write(rec)
    records = [done[str(g)] for g in games]
    to_dataset(records, cfg.valid_fraction, cfg.seed).save_to_disk(str(out / "dataset"))
    stats = summarize(records, token_counter()) | {"env": "alfworld", "heldout_types": list(cfg.heldout_types)}
    (out / "stats.json").write_text(json.dumps(stats, indent=2))
    return stats
