"""ALFWorld backend: games generated from the embedded scenes, played on TextWorld's PDDL engine.

The pure parts (problem generation, facts -> metadata, command parsing) run everywhere; the engine
tests need the `alfworld` extra (`make alfworld-setup`) and skip with that reason without it.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from icalkit.envs.alfworld.commands import STOP, parse_command
from icalkit.envs.alfworld.facts import facts_to_metadata, scene_graph, text_state
from icalkit.envs.alfworld.games import ALFWORLD_TYPES, UnsupportedTask, build_problem, goal_sentence
from icalkit.envs.household.scene import build_world
from icalkit.envs.household.tasks.checker import check_goal
from icalkit.envs.household.tasks.sampler import sample_task

HAVE_ENGINE = importlib.util.find_spec("textworld") is not None and importlib.util.find_spec("fast_downward") is not None
needs_engine = pytest.mark.skipif(not HAVE_ENGINE, reason="the alfworld extra is not installed (make alfworld-setup)")


def test_problem_from_an_embedded_scene():
    task = sample_task("pick_heat_then_place", 1, "train")
    problem = build_problem(task, build_world(task).metadata())
    x, y = task.params["#0"], task.params["#1"]
    assert f"(objectType ?o {x}Type)" in problem.text and f"(receptacleType ?r {y}Type)" in problem.text
    assert "(isHot ?o)" in problem.text and "(atLocation agent1 loc_start)" in problem.text
    assert f"(heatable {x.lower()}_1)" in problem.text
    assert problem.names["countertop_1"] == "countertop 1" and problem.object_ids["countertop_1"] == "CounterTop_1"
    assert problem.goal == goal_sentence("pick_heat_then_place", x, y)


def test_unsupported_types_are_refused_with_the_reason():
    task = sample_task("pick_and_place_with_movable_recep", 0, "train")
    with pytest.raises(UnsupportedTask, match="pick_and_place_with_movable_recep"):
        build_problem(task, build_world(task).metadata())


def test_facts_become_metadata_the_checker_counts():
    facts = [("objecttype", ("mug_1", "mugtype")), ("receptacletype", ("shelf_1", "shelftype")),
             ("receptacletype", ("fridge_1", "fridgetype")), ("coolable", ("mug_1",)),
             ("inreceptacle", ("mug_1", "fridge_1")), ("openable", ("fridge_1",)), ("opened", ("fridge_1",)),
             ("atlocation", ("agent1", "loc_fridge_1")), ("receptacleatlocation", ("fridge_1", "loc_fridge_1"))]
    ids = {"mug_1": "Mug_1", "shelf_1": "Shelf_1", "fridge_1": "Fridge_1"}
    task = sample_task("pick_cool_then_place", 0, "train")
    task.params = {"#0": "Mug", "#1": "Shelf"}
    before = check_goal(task, facts_to_metadata(facts, ids))
    assert not before.success and before.satisfied < before.total
    after_facts = [f for f in facts if f[0] != "inreceptacle"] + [("inreceptacle", ("mug_1", "shelf_1")),
                                                                 ("iscool", ("mug_1",))]
    after = check_goal(task, facts_to_metadata(after_facts, ids))
    assert after.success and after.satisfied == after.total
    mug = next(o for o in facts_to_metadata(after_facts, ids) if o["objectId"] == "Mug_1")
    assert mug["isCooled"] and mug["parentReceptacles"] == ["Shelf_1"]
    graph = scene_graph(facts, {"mug_1": "mug 1", "fridge_1": "fridge 1"})
    assert ("agent", "at", "fridge 1") in graph and ("mug 1", "in", "fridge 1") in graph
    assert text_state(graph) == "At fridge 1; in view: mug 1. Holding: nothing."


@pytest.mark.parametrize("text, command", [
    ("go to fridge 1", "go to fridge 1"), ("Action: Take  Apple 1 from CounterTop 1", "take apple 1 from countertop 1"),
    ("I think so.\n> open fridge 1", "open fridge 1"), ("1. heat mug 1 with microwave 1.", "heat mug 1 with microwave 1"),
    ("Done!", STOP)])
def test_parse_command(text, command):
    assert parse_command(text) == command


def test_parse_command_rejects_prose():
    with pytest.raises(ValueError, match="no command found; reply with one command: go to"):
        parse_command("You see a fridge.")


@pytest.fixture
def without_the_extra(monkeypatch):
    """The extra as in a venv without it: importing its packages fails (whether or not it is installed)."""
    for name in ("alfworld", "textworld", "textworld.envs", "textworld.envs.pddl", "fast_downward"):
        monkeypatch.setitem(sys.modules, name, None)


def test_missing_extra_is_a_clear_error(without_the_extra, tmp_path, capsys):
    from icalkit.cli import main
    from icalkit.envs.factory import make_env

    with pytest.raises(RuntimeError, match=r"needs the `alfworld` and `textworld\[pddl\]` packages .*make alfworld-setup"):
        make_env("alfworld")
    common = [f"alfworld.games_dir={tmp_path / 'games'}", f"out_dir={tmp_path / 'out'}", "wandb.mode=disabled"]
    assert main(["eval", "--config", str(Path(__file__).parents[1] / "configs" / "eval_alfworld.yaml"),
                 "methods=[zero_shot]", "splits=[valid_unseen]", f"split.dir={tmp_path}", *common]) == 2
    assert main(["alfworld-plan", "task_types=[look_at_obj_in_light]", *common]) == 2
    out = capsys.readouterr().out
    assert out.count("install the extra with `make alfworld-setup`") == 2, out
    assert not (tmp_path / "out" / "episodes.jsonl").exists()


# ----------------------------------------------------------------------------- with the engine


@pytest.fixture(scope="module")
def games(tmp_path_factory):
    from icalkit.envs.alfworld.games import generate_games

    return generate_games(ALFWORLD_TYPES, 1, "valid_unseen", tmp_path_factory.mktemp("games"))


@pytest.fixture(scope="module")
def env():
    from icalkit.envs.factory import make_env

    return make_env("alfworld", max_steps=50, max_failures=10)


def replay_expert(env, game) -> dict:
    """Play the game's expert plan; return the final info (checked along the way)."""
    obs, info = env.reset(options={"game": game})
    assert "Your task is to:" in obs["text"] and obs["admissible_commands"]
    start = info["goal_progress"]
    assert not start["success"] and start["satisfied"] < start["total"], game
    assert info["reference_length"] == len(info["expert_plan"]) > 0
    for command in info["expert_plan"]:
        obs, reward, terminated, truncated, info = env.step(command)
        assert obs["last_action_success"], (game, command, obs["error"])
    assert terminated and reward == 1.0 and info["won"], game
    assert info["goal_progress"]["satisfied"] == info["goal_progress"]["total"], (game, info["goal_progress"])
    return info


def small_game(games):
    """The look-at-in-light game (a living room or bedroom: few objects, fast engine steps)."""
    return next(g for g in games if "look_at_obj_in_light" in str(g))


@needs_engine
def test_expert_plan_wins(games, env):
    info = replay_expert(env, small_game(games))
    assert info["won"] and info["goal_progress"]["success"]


@needs_engine
@pytest.mark.slow
def test_expert_plan_wins_every_type(games, env):
    assert len(games) == len(ALFWORLD_TYPES)
    assert all(replay_expert(env, game)["won"] for game in games)


@needs_engine
def test_inadmissible_command_fails_naming_it(games, env):
    obs, _ = env.reset(options={"game": small_game(games)})
    before = env.facts()
    obs, reward, terminated, truncated, info = env.step("take the moon from the sky")
    assert not obs["last_action_success"] and reward == 0.0 and not terminated
    assert "'take the moon from the sky' is not admissible here; admissible: go to" in obs["error"]
    assert env.facts() == before and info["failures"] == 1


@needs_engine
def test_broken_game_files_name_the_file(tmp_path, games, env):
    from icalkit.envs.alfworld.engine import GameFileError

    bad_json = tmp_path / "a" / "game.tw-pddl"
    bad_json.parent.mkdir()
    bad_json.write_text("{not json")
    with pytest.raises(GameFileError, match=f"game file {bad_json} is not valid JSON"):
        env.reset(options={"game": bad_json})
    bad_pddl = tmp_path / "b" / "game.tw-pddl"
    bad_pddl.parent.mkdir()
    data = json.loads(Path(games[0]).read_text())
    bad_pddl.write_text(json.dumps({**data, "pddl_problem": "(define (problem p) (:domain alfred) (:init (oops"}))
    (bad_pddl.parent / "icalkit_task.json").write_text((Path(games[0]).parent / "icalkit_task.json").read_text())
    with pytest.raises(GameFileError, match=f"game file {bad_pddl} does not parse as a PDDL game"):
        env.reset(options={"game": bad_pddl})
    with pytest.raises(GameFileError, match="does not exist"):
        env.reset(options={"game": tmp_path / "missing" / "game.tw-pddl"})


@needs_engine
def test_official_layout_reads_traj_data(tmp_path, games):
    from icalkit.envs.alfworld.env import load_task

    trial = tmp_path / "valid_seen" / "pick_heat_then_place_in_recep-Mug-None-CounterTop-5" / "trial_T2019"
    trial.mkdir(parents=True)
    (trial / "game.tw-pddl").write_text(Path(games[0]).read_text())
    (trial / "traj_data.json").write_text(json.dumps({
        "task_type": "pick_heat_then_place_in_recep", "scene": {"scene_num": 5},
        "pddl_params": {"object_target": "Mug", "parent_target": "CounterTop", "toggle_target": ""},
        "turk_annotations": {"anns": [{"task_desc": "Put a heated mug on the counter."}]}}))
    task, ids = load_task(trial / "game.tw-pddl")
    assert (task.task_type, task.params, task.split) == ("pick_heat_then_place", {"#0": "Mug", "#1": "CounterTop"},
                                                         "valid_seen")
    assert task.instruction == "Put a heated mug on the counter." and ids == {}


@needs_engine
def test_prag_runs_on_alfworld_games(tmp_path, games):
    from planner_doubles import ScriptedLLM

    from icalkit.agents.llm_session import LLMSession
    from icalkit.data_gen.prag import PragAgent, PragConfig, run_prag
    from icalkit.data_gen.prag_alfworld import AlfworldGames
    from icalkit.memory.embed import SentenceTransformerEmbedder
    from icalkit.memory.trajectory_db import TrajectoryDB

    factory, tasks = AlfworldGames.load([small_game(games)])
    script = factory.plans[tasks[0].task_id] + ["Stop"]

    def answer(prompt: str) -> str:
        done = prompt.split("Your commands so far:")[1].split("Task:")[0].count(" -> ")
        return script[min(done, len(script) - 1)]

    db = TrajectoryDB(tmp_path / "traj.db", SentenceTransformerEmbedder())
    agent = PragAgent(LLMSession(ScriptedLLM(answer)), db, PragConfig(max_steps=12), None, factory,
                      "prag_step_alfworld")
    recs = run_prag(agent, "self_iterate", 1, [], tasks, tmp_path / "eps.jsonl", factory.ref_lens)
    rec = recs[0]
    assert rec["success"] and rec["stopped"] and rec["hl_steps"] == len(script) and rec["ref_len"] == len(script) - 1
    assert rec["satisfied"] == rec["total"] and rec["init_satisfied"] < rec["init_total"]
    assert list(rec["trajectory"]["history"][0]) == [script[0], "ok"]
    assert len(db) == 1


def test_shipped_alfworld_config_is_valid():
    from icalkit.commands.prag import Config
    from icalkit.config import load_config

    cfg = load_config(Config, Path(__file__).parents[1] / "configs" / "prag_alfworld.yaml", [])
    cfg.validate()
    assert cfg.env.name == "alfworld" and set(cfg.task_types) == set(ALFWORLD_TYPES)


@needs_engine
def test_flat_planner_replans_after_an_inadmissible_command(games, env):
    from planner_doubles import ScriptedLLM

    from icalkit.agents.llm_session import LLMSession
    from icalkit.agents.planner_alfworld import AlfworldFlatPlanner, PlanExample, parse_command_plan
    from icalkit.memory.embed import SentenceTransformerEmbedder

    game = small_game(games)
    _, info = env.reset(options={"game": game})
    plan = info["expert_plan"]
    answers = ["Plan:\n" + "\n".join([plan[0], "take the moon from the sky", *plan[1:]]),
               "Plan:\n" + "\n".join(plan[1:])]
    llm = ScriptedLLM(answers)
    pool = [PlanExample("other", "put a hot apple in/on fridge", ["go to countertop 1"]),
            PlanExample(env.task.task_id, "own game", plan)]
    planner = AlfworldFlatPlanner(LLMSession(llm), pool, SentenceTransformerEmbedder(), k=2)
    rec = planner.run_episode(env, game)
    assert rec["success"] and rec["replans"] == 1 and rec["failed_attempts"] == 1
    assert rec["satisfied"] == rec["total"] and rec["ref_len"] == len(plan) and rec["retrieved"] == ["other"]
    replan_prompt = llm.prompts[1][-1]["content"]
    assert "'take the moon from the sky' is not admissible here" in replan_prompt and plan[0] in replan_prompt
    assert parse_command_plan("Sure!\n1. go to desk 1\n2. Stop\n3. look") == ["go to desk 1"]


@needs_engine
@pytest.mark.slow
def test_alfworld_plan_command_with_the_default_model(tmp_path):
    from icalkit.cli import main

    out = tmp_path / "run"
    args = ["alfworld-plan", "task_types=[look_at_obj_in_light]", "n_examples_per_type=1", "max_replans=0",
            "torch_threads=1", "llm.max_new_tokens=48", "wandb.enabled=false", f"out_dir={out}",
            f"alfworld.games_dir={tmp_path / 'games'}"]
    assert main(args) == 0
    recs = [json.loads(x) for x in (out / "episodes.jsonl").read_text().splitlines()]
    assert len(recs) == 1 and recs[0]["llm"]["calls"] >= 1 and recs[0]["task_type"] == "look_at_obj_in_light"
    assert (out / "results.md").is_file()
    assert main(args) == 0  # resumed: the finished game is not played again
    assert len((out / "episodes.jsonl").read_text().splitlines()) == 1


# ----------------------------------------------------------------------------- the evaluation harness


def test_eval_refuses_task_types_without_alfworld_games():
    from icalkit.commands.eval import Config
    from icalkit.config import ConfigError, load_config

    path = Path(__file__).parents[1] / "configs" / "eval_alfworld.yaml"
    cfg = load_config(Config, path)
    assert cfg.env.name == "alfworld" and set(cfg.split.task_types) == set(ALFWORLD_TYPES)
    with pytest.raises(ConfigError, match=r"split.task_types \['Coffee'\] have no ALFWorld games"):
        load_config(Config, path, ["split.task_types=[Coffee, pick_and_place]"])
    from icalkit.eval.alfworld import alfworld_problem
    from icalkit.eval.methods import load_method

    assert all(alfworld_problem(load_method(m)) is None for m in cfg.methods)
    assert load_method("alfworld_flat").planner.mode == "flat"
    assert "cannot run" in alfworld_problem(load_method("copy"))


@needs_engine
@pytest.mark.slow
def test_eval_runs_on_alfworld_games_by_config(tmp_path, capsys):
    from planner_doubles import save_tiny_model

    from icalkit.cli import main
    from icalkit.data_gen.alfworld_plans import read_plan_memory
    from icalkit.eval.alfworld import alfworld_split_path
    from icalkit.eval.splits import SplitConfig

    out, plans = tmp_path / "run", tmp_path / "plans.jsonl"
    flat = tmp_path / "flat.yaml"
    flat.write_text(f"planner: {{mode: flat, k: 1, max_replans: 0}}\nmemory: {plans}\n")
    model = save_tiny_model(tmp_path / "tiny")
    args = ["eval", "--config", str(Path(__file__).parents[1] / "configs" / "eval_alfworld.yaml"),
            f"methods=[zero_shot, {flat}, ical]", "splits=[valid_unseen]", "split.task_types=[look_at_obj_in_light]",
            f"split.dir={tmp_path}", f"alfworld.games_dir={tmp_path / 'games'}", "alfworld_examples_per_type=1",
            "workers=0", "llm.max_new_tokens=8", f"llm.model={model}", "llm.cache=false", f"out_dir={out}",
            "wandb.mode=disabled"]
    assert main(args) == 1  # ical is refused: its programs cannot act in ALFWorld
    text = capsys.readouterr().out
    assert "method ical: planner mode 'ical' writes Python programs against the household API" in text
    examples = read_plan_memory(plans)  # written from a train game's expert plan
    assert len(examples) == 1 and examples[0].task_id.startswith("train/") and examples[0].plan
    split_file = alfworld_split_path(SplitConfig(task_types=["look_at_obj_in_light"], dir=str(tmp_path)),
                                     "valid_unseen", _games_cfg(tmp_path / "games"))
    (st,) = [json.loads(line) for line in split_file.read_text().splitlines()]
    assert st["game"].endswith("game.tw-pddl") and st["ref_len"] > 0 and st["init_satisfied"] < st["init_total"]
    recs = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert sorted(r["method"] for r in recs) == ["flat", "zero_shot"]
    for r in recs:
        assert (r["game"], r["ref_len"], r["init_total"]) == (st["game"], st["ref_len"], st["init_total"])
        assert r["split"] == "valid_unseen" and r["llm"]["calls"] >= 1 and r["task_type"] == "look_at_obj_in_light"
    assert next(r for r in recs if r["method"] == "flat")["retrieved"] == [examples[0].task_id]
    assert "| zero_shot |" in (out / "table1.md").read_text()
    assert main(args) == 1  # resumed: nothing is played twice
    assert len((out / "episodes.jsonl").read_text().splitlines()) == 2


def _games_cfg(games_dir):
    from icalkit.envs.alfworld.config import AlfworldConfig

    return AlfworldConfig(games_dir=str(games_dir))


@needs_engine
def test_eval_episode_of_the_expert_plan_scores_full_marks(tmp_path, env):
    from planner_doubles import ScriptedLLM

    from icalkit.eval.alfworld import build_alfworld_planner, load_alfworld_split, run_alfworld_episode
    from icalkit.eval.methods import load_method
    from icalkit.eval.splits import SplitConfig
    from icalkit.memory.config import MemoryConfig
    from icalkit.metrics import Episode, aggregate

    cfg = SplitConfig(task_types=["look_at_obj_in_light"], n_per_type=1, dir=str(tmp_path))
    (st,) = load_alfworld_split(cfg, "valid_unseen", _games_cfg(tmp_path / "games"), progress=False)
    _, info = env.reset(options={"game": st.game})
    assert st.ref_len == len(info["expert_plan"])
    llm = ScriptedLLM(lambda prompt: "Plan:\n" + "\n".join(info["expert_plan"]))
    method = load_method("zero_shot")
    planner = build_alfworld_planner(method, llm, MemoryConfig(), {"max_new_tokens": 64})
    rec = run_alfworld_episode(planner, env, method, st)
    assert rec["success"] and rec["satisfied"] == rec["total"] and rec["steps"] == st.ref_len
    assert aggregate([Episode.from_record(rec)])["plw_sr"] == 1.0
    st.init_satisfied += 1  # a split file that no longer matches its game
    with pytest.raises(RuntimeError, match="the split file is stale"):
        run_alfworld_episode(planner, env, method, st)


def test_alfworld_pair_config_refuses_household_types():
    from icalkit.data_gen.finetune_data import PairConfig

    with pytest.raises(ValueError, match=r"\['Coffee'\] are not ALFWorld types"):
        PairConfig(env="alfworld", task_types=["Coffee"]).validate()
    with pytest.raises(ValueError, match="data.env must be household or alfworld"):
        PairConfig(env="thor").validate()


@needs_engine
def test_alfworld_finetune_pairs_are_the_deployed_prompts(tmp_path, env):
    """Plan pairs carry exactly the flat planner's first prompt (examples retrieved from the plan memory,
    the game's own excluded) and the expert plan; revision pairs its re-plan prompt after a wrong
    receptacle and the expert's plan from there; both win when played as the planner plays them."""
    from planner_doubles import ScriptedLLM

    from icalkit.agents.llm_session import LLMSession
    from icalkit.agents.planner_alfworld import AlfworldFlatPlanner, parse_command_plan
    from icalkit.data_gen.alfworld_plans import build_alfworld_pairs, read_plan_memory
    from icalkit.data_gen.finetune_data import PairConfig
    from icalkit.envs.alfworld.config import AlfworldConfig
    from icalkit.memory.embed import SentenceTransformerEmbedder

    types = ["look_at_obj_in_light", "pick_and_place"]
    cfg = PairConfig(env="alfworld", task_types=types, n_per_type=2, split="valid_unseen", k=1,
                     memory_path=str(tmp_path / "plans.jsonl"), valid_fraction=0.0,
                     alfworld=AlfworldConfig(games_dir=str(tmp_path / "games")))
    embedder = SentenceTransformerEmbedder()
    stats = build_alfworld_pairs(cfg, tmp_path / "data", embedder, progress=False)
    rows = [r for line in (tmp_path / "data" / "pairs.jsonl").read_text().splitlines()
            for r in json.loads(line)["rows"]]
    assert stats["by_kind"]["plan"] == 4 and stats["pairs"] == len(rows) and "tokens" in stats
    memory = read_plan_memory(cfg.memory_path)
    assert len(memory) == 4
    for row in rows:
        assert row["retrieved"] and row["task_id"] not in row["retrieved"]
        if row["kind"] == "plan":  # the deployed planner sends the same prompt and wins with the completion
            llm = ScriptedLLM([row["completion"]])
            planner = AlfworldFlatPlanner(LLMSession(llm), memory, embedder, k=1, max_replans=0)
            assert planner.run_episode(env, row["game"])["success"]
            assert llm.prompts[0] == row["prompt"]
    revisions = [r for r in rows if r["kind"] == "revision"]
    assert revisions, stats["dropped"]
    for row in revisions:
        user = row["prompt"][-1]["content"]
        assert "The last step failed:" in user and "is not admissible here" in user
        done = user.split("Steps already done:\n", 1)[1].split("\nThe last step failed:", 1)[0].splitlines()
        env.reset(options={"game": row["game"]})
        for command in [*done, *parse_command_plan(row["completion"])]:
            obs, _, terminated, _, info = env.step(command)
            assert obs["last_action_success"], (command, obs["error"])
        assert info["won"]
    again = build_alfworld_pairs(cfg, tmp_path / "data", embedder, progress=False)  # resumes: nothing rebuilt
    assert again["pairs"] == stats["pairs"]
