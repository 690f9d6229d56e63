"""Choosing the copied example and what to copy next without a generative model: cross-replay transfer
scores (icalkit/data_gen/transfer.py), the copy planner's fallback, its silent-end decisions and the
next copy by the objects the dialogue names — on the real simulator, executor, memory and MiniLM
embedder (the mention re-grounding itself: tests/test_mention_grounding.py)."""

from __future__ import annotations

import re
from dataclasses import replace

import copy_fixtures
import pytest
from copy_fixtures import BROKEN
from planner_doubles import one_torch_thread

from icalkit.agents.context import transfer_rate
from icalkit.agents.planner import Planner, PlannerConfig
from icalkit.data_gen.transfer import extra_tasks, transfer_scores, transfer_summary
from icalkit.envs.household.scene import build_world
from icalkit.envs.household.simulator import Simulator
from icalkit.envs.household.tasks.sampler import sample_tasks
from icalkit.memory.example import Example
from icalkit.memory.example_memory import ExampleMemory
from icalkit.memory.store import records_digest

single_thread = pytest.fixture(scope="module", autouse=True)(one_torch_thread)
coffee_memory = copy_fixtures.coffee_memory  # a fixture
embedder = copy_fixtures.embedder  # a fixture


def test_transfer_scores_count_the_other_demonstrations_each_example_solves(coffee_memory):
    mem, examples, env = coffee_memory
    scores = transfer_scores(examples, env, None, progress=False)
    assert all(scores[ex.example_id][1] == 3 for ex in examples)  # tried on the 3 other scenes of its type
    assert scores[examples[3].example_id] == [0, 3]
    assert max(scores[ex.example_id][0] for ex in examples[:3]) >= 2  # an expert coffee transfers
    assert transfer_rate([0, 3]) == pytest.approx(0.2) and transfer_rate(None) == 0.5
    summary = transfer_summary(examples, scores)
    assert summary["Coffee"]["examples"] == 4 and summary["Coffee"]["best"] > summary["Coffee"]["mean"]

    before = records_digest(mem.store.path)
    assert mem.transfer_scores() == {}
    mem.set_transfer_scores(scores)
    assert mem.transfer_scores() == scores and records_digest(mem.store.path) != before  # eval re-runs
    with pytest.raises(ValueError, match="does not hold"):
        mem.set_transfer_scores({"not-an-id": [1, 1]})

    extra = extra_tasks(["Coffee"], 2)  # training tasks of a type a fine-tune may train on
    assert not {t.task_id for t in extra["Coffee"]} & {ex.task_id for ex in examples}
    more = transfer_scores(examples[2:], env, None, extra, progress=False)
    assert more[examples[3].example_id] == [0, 3] and more[examples[2].example_id][1] == 3  # 1 other + 2 extra
    assert extra_tasks(["Coffee"], 0) == {}


def test_transfer_tasks_need_the_types_that_may_use_them():
    from icalkit.data_gen.ical_settings import ICALSettings

    ICALSettings(raw_demos=True, transfer=True, transfer_tasks=20, transfer_types=["Coffee"]).check()
    for bad in ({"transfer_tasks": 20}, {"transfer_tasks": 20, "transfer_types": ["Coffee"], "transfer": False},
                {"transfer_tasks": -1, "transfer_types": ["Coffee"]}):
        with pytest.raises(ValueError, match="transfer_types"):
            ICALSettings(raw_demos=True, **{"transfer": True, **bad}).check()


def test_transfer_order_copies_the_example_that_transfers(coffee_memory, tmp_path, embedder):
    """Two candidates the room fits equally: the memory's top hit fails everywhere, so transfer_order
    copies the other one; without it the top hit is copied. copy_fallback recovers the same way."""
    _, examples, env = coffee_memory
    task = sample_tasks(["Coffee"], 1, "valid_unseen", 0)[0]
    bad, good = examples[3], examples[0]
    mem = ExampleMemory(tmp_path / "two.db", embedder)
    mem.add_many([Example(task_id=bad.task_id, task_type="Coffee", instruction=task.instruction,
                          dialogue=[text for _, text in task.dialogue], revised_program=BROKEN, example_id=bad.example_id),
                  Example(task_id=good.task_id, task_type="Coffee", instruction="Water the house plant",
                          revised_program=good.revised_program, example_id=good.example_id)])
    mem.set_transfer_scores({bad.example_id: [0, 3], good.example_id: [3, 3]})

    def run(**cfg):
        return Planner(None, mem, PlannerConfig(mode="copy", k=1, ground_ids=True, room_fit=2, **cfg)).run_episode(
            task, Simulator(build_world(task)))

    plain, ordered = run(), run(transfer_order=True)
    assert plain.retrieved == [bad.example_id] and not plain.success and plain.attempts == 1
    assert ordered.retrieved == [good.example_id] and ordered.success
    fallback = run(copy_fallback=True, max_replans=1)
    assert fallback.success and fallback.replans == 1 and fallback.failed_attempts == 1
    assert fallback.retrieved == [good.example_id] and fallback.programs[0] == BROKEN
    for bad_cfg, match in (({"transfer_order": True}, "room_fit"), ({"mode": "ical", "copy_fallback": True}, "copy_fallback"),
                           ({"mode": "copy", "mention_reground": True, "oracle_reground": True}, "alternatives"),
                           ({"mode": "zero_shot", "mention_reground": True}, "mention_reground")):
        with pytest.raises(ValueError, match=match):
            PlannerConfig(**bad_cfg).validate()


def test_copy_fallback_skips_examples_that_name_a_class_the_room_lacks(coffee_memory, tmp_path, embedder):
    """After "No Cup has been found", the fallback passes over the next example (it needs a cup too)
    and copies the one after it."""
    _, examples, _ = coffee_memory
    task = sample_tasks(["Coffee"], 1, "valid_unseen", 0)[0]
    assert "Cup" not in {o.object_type for o in build_world(task).objects.values()}
    good = examples[0].revised_program
    cup = re.sub(r'InteractionObject\("Mug"[^)]*\)', 'InteractionObject("Cup")', good)
    assert cup != good
    ranked = [Example(task_id=ex.task_id, task_type="Coffee", instruction="Make coffee", revised_program=p)
              for ex, p in zip(examples[:3], (cup, cup + "\n", good), strict=True)]
    mem = ExampleMemory(tmp_path / "cups.db", embedder)
    mem.add_many(ranked)
    mem.set_transfer_scores({ex.example_id: [3 - i, 3] for i, ex in enumerate(ranked)})  # the cups rank first
    res = Planner(None, mem, PlannerConfig(mode="copy", k=1, ground_ids=True, room_fit=3, transfer_order=True,
                                           copy_fallback=True, max_replans=1)).run_episode(task, Simulator(build_world(task)))
    assert "No Cup has been found" in res.errors[0]
    assert res.success and res.attempts == 2 and res.retrieved == [ranked[2].example_id]


def test_model_replans_come_after_the_last_copy_fails(coffee_memory, tmp_path, embedder):
    """planner.model_replans: two copies that fail (the fallback's included) and then the model's
    re-plan, written from the executor's error; a copy that succeeds never asks the model."""
    from planner_doubles import ScriptedLLM

    from icalkit.agents.llm_session import LLMSession

    _, examples, _ = coffee_memory
    task = sample_tasks(["Coffee"], 1, "valid_unseen", 0)[0]
    broken = [Example(task_id=ex.task_id, task_type="Coffee", instruction="Make coffee", revised_program=BROKEN + "#" * i)
              for i, ex in enumerate(examples[:2])]
    mem = ExampleMemory(tmp_path / "broken.db", embedder)
    mem.add_many(broken)
    good = f"Program:\n```python\n{examples[0].revised_program}\n```"
    cfg = dict(mode="copy", k=1, ground_ids=True, room_fit=2, copy_fallback=True, max_replans=1, model_replans=2)
    llm = ScriptedLLM([good])
    res = Planner(LLMSession(llm), mem, PlannerConfig(**cfg)).run_episode(task, Simulator(build_world(task)))
    assert res.success and res.attempts == 3 and res.replans == 2 and res.failed_attempts == 2
    assert sorted(res.programs[:2]) == sorted(b.revised_program for b in broken)
    feedback = res.errors[1].split(": ", 1)[1]  # the last copy's error, as the re-plan prompt shows it
    assert len(llm.prompts) == 1 and feedback in "\n".join(m["content"] for m in llm.prompts[0])
    assert res.model == "scripted"

    solved = ExampleMemory(tmp_path / "good.db", embedder)
    solved.add_many([Example(task_id=examples[0].task_id, task_type="Coffee", instruction="Make coffee",
                             revised_program=examples[0].revised_program)])
    quiet = ScriptedLLM([good])
    assert Planner(LLMSession(quiet), solved, PlannerConfig(**cfg)).run_episode(task, Simulator(build_world(task))).success
    assert quiet.prompts == []
    with pytest.raises(ValueError, match="needs a model"):
        Planner(None, mem, PlannerConfig(**cfg))
    for bad in ({"mode": "ical", "model_replans": 1}, {"mode": "copy", "model_replans": -1}):
        with pytest.raises(ValueError, match="model_replans"):
            PlannerConfig(**bad).validate()


def test_deployed_copies_pairs_hold_the_prompt_model_replans_sends(coffee_memory, tmp_path, embedder):
    """data.mistakes=[deployed_copies]: the copy agent runs its copies as deployed; the pair's prompt is
    the re-plan prompt ``model_replans`` then sends, and its completion solves the task from there."""
    from planner_doubles import ScriptedLLM

    from icalkit.agents.api.runtime import ApiConfig
    from icalkit.agents.executor import ExecutorLimits
    from icalkit.agents.feedback import DONE_PROGRAM, REVIEW_TEXT
    from icalkit.agents.llm_session import LLMSession
    from icalkit.data_gen.finetune_data import PairBuilder, PairConfig
    from icalkit.envs.household.tasks.sampler import task_from_id

    _, examples, env = coffee_memory
    mem = ExampleMemory(tmp_path / "broken.db", embedder)
    mem.add_many([Example(task_id=ex.task_id, task_type="Coffee", instruction="Make coffee",
                          revised_program=BROKEN + "#" * i) for i, ex in enumerate(examples[:2])])
    task = task_from_id(examples[2].task_id)
    copier = PlannerConfig(mode="copy", k=1, ground_ids=True, room_fit=2, copy_fallback=True, max_replans=1)
    cfg = PairConfig(task_types=["Coffee"], k=1, mistakes=["deployed_copies"], plan_pairs=False, planner=copier)
    cfg.validate()
    rows = PairBuilder(cfg, mem).build(task).rows
    assert [(r["kind"], r["mistake"]) for r in rows] == [("revision", "deployed_copies")]
    llm = ScriptedLLM([rows[0]["completion"]])
    env.reset(options={"task": task})
    limits = ExecutorLimits(api=ApiConfig(oracle_object_map=True))  # as the pairs replay (data.oracle_object_map)
    res = Planner(LLMSession(llm), mem, replace(copier, model_replans=1), limits).run_episode(task, env)
    assert llm.prompts == [rows[0]["prompt"]] and res.success and res.attempts == 3
    reviewer = replace(copier, review_done=True, model_replans=1)  # the model's own program is never reviewed
    env.reset(options={"task": task})
    planner = Planner(LLMSession(ScriptedLLM([rows[0]["completion"]])), mem, reviewer, limits)
    res = planner.run_episode(task, env)
    assert res.success and REVIEW_TEXT not in res.errors and planner.unasked_replan is None

    good = ExampleMemory(tmp_path / "good.db", embedder)  # with review_done a copy that ends silently is reviewed
    good.add_many([Example(task_id=examples[0].task_id, task_type="Coffee", instruction="Make coffee",
                           revised_program=examples[0].revised_program)])
    reviewer = replace(copier, review_done=True)
    rows = PairBuilder(replace(cfg, planner=reviewer), good).build(task).rows
    assert [(r["kind"], r["mistake"]) for r in rows] == [("review", "deployed_copies")]
    assert DONE_PROGRAM in rows[0]["completion"] and REVIEW_TEXT in rows[0]["prompt"][-1]["content"]
    llm = ScriptedLLM([rows[0]["completion"]])
    env.reset(options={"task": task})
    res = Planner(LLMSession(llm), good, replace(reviewer, model_replans=1), limits).run_episode(task, env)
    assert llm.prompts == [rows[0]["prompt"]] and res.success and res.errors == [REVIEW_TEXT]
    with pytest.raises(ValueError, match="set data.planner.mode=copy"):
        replace(cfg, planner=PlannerConfig(k=1)).validate()


def test_review_mistakes_turn_a_silent_partial_program_into_a_review_pair(coffee_memory):
    """data.review_mistakes: an injected mistake that ends without an error, the task unfinished (here a
    program stopped after part of the task), gets the deployed review prompt and the rest of the solution;
    without it such a mistake gives no feedback and is dropped."""
    from icalkit.agents.feedback import DONE_PROGRAM, REVIEW_TEXT
    from icalkit.data_gen.finetune_data import PairBuilder, PairConfig
    from icalkit.envs.household.tasks.sampler import task_from_id

    _, examples, _ = coffee_memory
    reviewer = PlannerConfig(mode="copy", k=1, ground_ids=True, review_done=True)
    cfg = PairConfig(task_types=["Coffee"], mistakes=["stop_early"], plan_pairs=False, planner=reviewer,
                     review_mistakes=True)
    cfg.validate()
    builder = PairBuilder(cfg)
    built = [builder.build(task_from_id(ex.task_id)) for ex in examples]
    rows = [r for b in built for r in b.rows]
    assert rows and {(r["kind"], r["mistake"]) for r in rows} == {("review", "stop_early")}
    for row in rows:
        assert REVIEW_TEXT in row["prompt"][-1]["content"] and DONE_PROGRAM not in row["completion"]
        assert row["mistaken_program"].strip() in row["prompt"][-1]["content"]
    quiet = PairBuilder(replace(cfg, review_mistakes=False))
    dropped = [quiet.build(task_from_id(ex.task_id)) for ex in examples]
    assert not [r for b in dropped for r in b.rows]
    assert sum(b.dropped.get("revision_stop_early_no_feedback", 0) for b in dropped) == len(rows)
    with pytest.raises(ValueError, match="review_done"):
        replace(cfg, planner=replace(reviewer, review_done=False)).validate()
    with pytest.raises(ValueError, match="'stop_early' ends without an error"):
        replace(cfg, review_mistakes=False).validate()
    oracle = PairBuilder(replace(cfg, planner=replace(reviewer, oracle_goal_feedback=True)))  # as deployed: goal feedback
    told = [r for ex in examples for r in oracle.build(task_from_id(ex.task_id)).rows]
    assert told and all(r["kind"] == "revision" and REVIEW_TEXT not in r["prompt"][-1]["content"] for r in told)


def test_a_review_that_would_move_what_the_copy_placed_is_not_run(coffee_memory, tmp_path, embedder):
    """planner.review_keeps_placed: after a copy that ended silently, a review answer picking up the
    object the copy placed (by its id) is not run and the episode keeps the copy's result; without the
    guard the same answer runs; an answer that moves nothing the copy placed runs either way, and so
    does a re-plan after a review that failed."""
    from planner_doubles import ScriptedLLM

    from icalkit.agents.api.runtime import ApiConfig
    from icalkit.agents.executor import ExecutorLimits
    from icalkit.agents.llm_session import LLMSession
    from icalkit.agents.review_guard import REVIEW_GUARD_TEXT
    from icalkit.envs.household.tasks.sampler import task_from_id

    _, examples, env = coffee_memory
    good = ExampleMemory(tmp_path / "good.db", embedder)
    good.add_many([Example(task_id=examples[0].task_id, task_type="Coffee", instruction="Make coffee",
                           revised_program=examples[0].revised_program)])
    task = task_from_id(examples[2].task_id)
    limits = ExecutorLimits(api=ApiConfig(oracle_object_map=True, precondition_checks=True))
    copier = PlannerConfig(mode="copy", k=1, ground_ids=True, review_done=True, model_replans=1)

    def run(cfg: PlannerConfig, review: str):
        env.reset(options={"task": task})
        return Planner(LLMSession(ScriptedLLM([f"Program:\n```python\n{review}```"])), good, cfg, limits).run_episode(task, env)

    placed = [t["object"] for t in run(copier, "# done\n").trace if t["call"] == "pickup_and_place"][0]
    undo = f'mug = InteractionObject("Mug", object_instance="{placed}")\nmug.pickup()\n'
    guarded = run(replace(copier, review_keeps_placed=True), undo)
    assert guarded.success and guarded.errors[-1].startswith(REVIEW_GUARD_TEXT) and placed in guarded.errors[-1]
    assert not [t for t in guarded.trace if t["call"] == "pickup"]  # the copy's trace: the review never ran
    assert [t for t in run(copier, undo).trace if t["call"] == "pickup"]  # unguarded it runs
    harmless = 'faucet = InteractionObject("Faucet")\nfaucet.toggle_off()\n'
    assert [t for t in run(replace(copier, review_keeps_placed=True), harmless).trace if t["call"] == "toggle_off"]
    two = replace(copier, review_keeps_placed=True, model_replans=2)  # a re-plan after a failed review is not checked
    env.reset(options={"task": task})
    replies = ["I cannot tell.", "I cannot tell.", f"Program:\n```python\n{undo}```"]  # the review unreadable
    res = Planner(LLMSession(ScriptedLLM(replies)), good, two, limits).run_episode(task, env)
    assert [t for t in res.trace if t["call"] == "pickup"] and REVIEW_GUARD_TEXT not in " ".join(res.errors)
    with pytest.raises(ValueError, match="review_keeps_placed"):
        replace(copier, review_done=False, review_keeps_placed=True).validate()


def test_the_review_guard_reads_which_placed_object_a_program_moves():
    """moved_placed: an id bound to a variable (also positionally, or through another name), or named
    inline; ``place`` counts (the executor picks up an object not in hand first); a name bound anew to a
    class-only object loses its id."""
    from icalkit.agents.review_guard import moved_placed

    towel = 'x = InteractionObject("Towel", object_instance="Towel_1")\n'
    assert moved_placed(towel + "x.pickup()\n", {"Towel_1"}) == "Towel_1"
    assert moved_placed(towel + 'x.place(InteractionObject("Cabinet"))\n', {"Towel_1"}) == "Towel_1"
    assert moved_placed('x = InteractionObject("Towel", "Towel_1")\ny = x\ny.pickup()\n', {"Towel_1"}) == "Towel_1"
    assert moved_placed('InteractionObject("Towel", object_instance="Towel_1").pickup_and_place(c)\n', {"Towel_1"})
    assert moved_placed(towel + 'x = InteractionObject("Towel")\nx.pickup()\n', {"Towel_1"}) is None
    assert moved_placed(towel + "x.pickup()\n", {"Towel_2"}) is None
    assert moved_placed(towel + "x.toggle_on()\n", {"Towel_1"}) is None


