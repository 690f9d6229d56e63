"""P-RAG rounds: step-wise agent, done flags, database growth, resumption, transition table.

The model is a scripted policy (test double for the model only) or a real tiny Llama; the
simulator, executor, prompts and trajectory database (real MiniLM embedder) are the real ones.
"""

from __future__ import annotations

import json
import re

import pytest
from planner_doubles import ScriptedLLM, one_torch_thread, tiny_llm

from icalkit.agents.llm_session import LLMSession
from icalkit.data_gen.prag import (
    PragAgent,
    PragConfig,
    load_results,
    round_table,
    run_prag,
    schedule,
    transition_table,
)
from icalkit.envs.household.tasks.sampler import sample_tasks
from icalkit.memory.trajectory_db import TrajectoryDB

COFFEE_PLAN = ["PickupObject Mug", "PutObject Mug CoffeeMachine", "ToggleObjectOn CoffeeMachine"]


def steps_taken(prompt: str) -> int:
    history = prompt.split("Your actions so far:")[1].split("Task:")[0]
    return len(re.findall(r"^\d+\. ", history, re.M))


def policy(plan: list[str], stop: bool = True):
    """Scripted policy: the plan's next step by the number of actions in the prompt, then Stop."""
    def answer(prompt: str) -> str:
        n = steps_taken(prompt)
        return plan[n] if n < len(plan) else ("Stop" if stop else plan[-1])
    return answer


single_thread = pytest.fixture(scope="module", autouse=True)(one_torch_thread)


@pytest.fixture(scope="module")
def embedder():
    from icalkit.memory.embed import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder()


@pytest.fixture(scope="module")
def coffee():
    return sample_tasks(["Coffee"], 2, "valid_unseen")


def agent_for(texts, tmp_path, embedder, **cfg) -> tuple[PragAgent, ScriptedLLM]:
    llm = ScriptedLLM(texts)
    return PragAgent(LLMSession(llm), TrajectoryDB(tmp_path / "traj.db", embedder), PragConfig(**cfg)), llm


def test_scripted_policy_solves_and_db_grows(tmp_path, embedder, coffee):
    agent, llm = agent_for(policy(COFFEE_PLAN), tmp_path, embedder, max_steps=10)
    recs = run_prag(agent, "self_iterate", 2, [], coffee[:1], tmp_path / "eps.jsonl", {coffee[0].task_id: 37})
    assert [(r["phase"], r["round"]) for r in recs] == [("self", 1), ("self", 2)]
    first = recs[0]
    assert first["success"] and first["stopped"] and first["done"] and first["end_reason"] == "stop"
    assert first["hl_steps"] == 4 and first["steps"] > 0 and first["ref_len"] == 37
    assert first["oracle"] == {"success_flag": False, "object_map": True}
    assert len(agent.db) == 2  # one trajectory per round
    assert "(none yet)" in llm.prompts[0][-1]["content"]
    round2 = llm.prompts[4][-1]["content"]  # first step of round 2 sees round 1's trajectory
    assert "(done: yes)" in round2 and "PickupObject Mug (ok)" in round2
    traj = first["trajectory"]
    assert len(traj["scene_graphs"]) == 4 and traj["history"][-1][0] == "Stop"
    rows = round_table(recs)
    assert rows[0]["success_rate"] == 1.0 and 0 < rows[0]["spl"] <= 1.0


def test_invalid_actions_reask_then_noop(tmp_path, embedder, coffee):
    agent, llm = agent_for(lambda p: "I think we should make coffee", tmp_path, embedder, max_steps=3)
    rec = agent.run_batch(coffee[:1], "self", 1, {})[0]
    assert rec["invalid_actions"] == 3 and rec["end_reason"] == "max_steps" and not rec["success"]
    assert rec["llm"]["calls"] == 6 and rec["llm"]["reasks"] == 3  # each step: answer + one re-ask
    assert "could not be used" in llm.prompts[1][-1]["content"]
    assert rec["trajectory"]["history"][0][1].startswith("invalid action:")
    assert rec["ref_len"] is None  # unknown, never the agent's own length
    assert rec["method"] == "prag_self_r1" and rec["split"] == coffee[0].split  # `icalkit report` reads it
    assert rec["init_total"] == rec["total"] and rec["init_satisfied"] <= rec["init_total"]
    row = round_table([rec])[0]
    assert row["n_no_ref"] == 1 and row["spl"] == 0.0


def test_failed_action_is_an_observation(tmp_path, embedder, coffee):
    agent, _ = agent_for(policy(["SliceObject Mug"]), tmp_path, embedder, max_steps=5)
    rec = agent.run_batch(coffee[:1], "self", 1, {})[0]
    assert rec["trajectory"]["history"][0][1].startswith("failed:")
    # without the oracle flag, done is the agent's own Stop even though the task failed
    assert rec["invalid_actions"] == 0 and rec["stopped"] and rec["done"] and not rec["success"]


def test_oracle_success_flag_decides_done(tmp_path, embedder, coffee):
    no_stop = policy(COFFEE_PLAN, stop=False)
    agent, _ = agent_for(no_stop, tmp_path, embedder, max_steps=6)
    plain = agent.run_batch(coffee[:1], "self", 1, {})[0]
    assert plain["success"] and not plain["done"] and plain["end_reason"] == "max_steps"
    agent, _ = agent_for(no_stop, tmp_path / "o", embedder, max_steps=6, oracle_success=True)
    oracle = agent.run_batch(coffee[:1], "self", 1, {})[0]
    assert oracle["done"] and oracle["end_reason"] == "success" and oracle["hl_steps"] == 3
    assert oracle["oracle"]["success_flag"] is True


def test_lockstep_batch_and_resume_after_kill(tmp_path, embedder, coffee):
    path = tmp_path / "eps.jsonl"
    agent, llm = agent_for(policy(COFFEE_PLAN), tmp_path, embedder, max_steps=6, batch_size=2)
    run_prag(agent, "self_iterate", 2, [], coffee, path, {})
    assert len(llm.prompts) == 16  # 2 rounds x 2 tasks x 4 steps, batched per step
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:3]) + "\n" + lines[3][:40])  # killed while writing the last record
    agent2, llm2 = agent_for(policy(COFFEE_PLAN), tmp_path, embedder, max_steps=6, batch_size=2)
    recs = run_prag(agent2, "self_iterate", 2, [], coffee, path, {})
    assert len(llm2.prompts) == 4  # only the torn episode was re-run
    assert len(recs) == 4 and len(load_results(path)) == 4
    assert len(agent2.db) == 4  # database additions are idempotent


def test_train_then_test_schedule(tmp_path, embedder, coffee):
    phases = [(p, r, add) for p, r, _, add in schedule("train_then_test", 2, coffee[:1], coffee[1:])]
    assert phases == [("train", 1, True), ("train", 2, True), ("test", 2, False)]
    with pytest.raises(ValueError, match="not one of"):
        schedule("both", 1, [], [])
    agent, _ = agent_for(policy(COFFEE_PLAN), tmp_path, embedder, max_steps=6)
    recs = run_prag(agent, "train_then_test", 1, coffee[:1], coffee[1:], tmp_path / "e.jsonl", {})
    assert [r["phase"] for r in recs] == ["train", "test"] and len(agent.db) == 1


def test_transition_table_on_hand_made_rounds():
    def rec(r, t, ok):
        return {"phase": "self", "round": r, "task_id": t, "success": ok}
    recs = [rec(1, "a", True), rec(1, "b", False), rec(1, "c", False), rec(1, "d", True),
            rec(2, "a", True), rec(2, "b", True), rec(2, "c", False), rec(2, "d", False),
            rec(3, "a", False), rec(3, "b", True), rec(3, "c", True), rec(3, "d", False)]
    rows = transition_table(recs)
    assert [(r["from_round"], r["to_round"]) for r in rows] == [(1, 2), (2, 3)]
    assert {k: rows[0][k] for k in ("stay_solved", "become_solved", "become_unsolved", "stay_unsolved")} == {
        "stay_solved": 1, "become_solved": 1, "become_unsolved": 1, "stay_unsolved": 1}
    assert rows[1]["become_solved"] == 1 and rows[1]["become_unsolved"] == 1 and rows[1]["stay_solved"] == 1


def test_real_tiny_model_runs_one_round(tmp_path, embedder, coffee):
    agent = PragAgent(LLMSession(tiny_llm()), TrajectoryDB(tmp_path / "t.db", embedder),
                      PragConfig(max_steps=2, max_new_tokens=8))
    recs = run_prag(agent, "self_iterate", 1, [], coffee[:1], tmp_path / "e.jsonl", {})
    assert len(recs) == 1 and recs[0]["hl_steps"] >= 1 and recs[0]["llm"]["completion_tokens"] > 0
    assert recs[0]["model"] == "tiny-llama" and len(agent.db) == 1
    assert json.loads((tmp_path / "e.jsonl").read_text().splitlines()[0])["task_id"] == coffee[0].task_id


def test_prag_command_end_to_end(tmp_path, capsys):
    """`icalkit prag` with a real (tiny) model folder: tables, plot, transitions; a re-run resumes."""
    from planner_doubles import save_tiny_model

    from icalkit.cli import main

    model = save_tiny_model(tmp_path / "tiny")
    out = tmp_path / "run"
    args = ["prag", "rounds=2", "task_types=[Coffee]", "prag.max_steps=2", "llm.max_new_tokens=6",
            f"llm.model={model}", "llm.cache=false", f"out_dir={out}", "wandb.mode=disabled"]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "| self | 1 |" in text and "stay_unsolved" in text
    assert (out / "success_vs_round.png").stat().st_size > 0 and (out / "transitions.md").is_file()
    assert len(load_results(out / "episodes.jsonl")) == 2
    assert main(args) == 0  # everything done: nothing re-runs, the same tables come out
    assert len((out / "episodes.jsonl").read_text().splitlines()) == 2
