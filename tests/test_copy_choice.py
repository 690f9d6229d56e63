"""Choosing the copied example and what to copy next without a generative model: cross-replay transfer
scores (icalkit/data_gen/transfer.py), the copy planner's fallback, its silent-end decisions and the
next copy by the objects the dialogue names — on the real simulator, executor, memory and MiniLM
embedder (the mention re-grounding itself: tests/test_mention_grounding.py)."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest
from planner_doubles import one_torch_thread

from icalkit.agents.context import transfer_rate
from icalkit.agents.planner import Planner, PlannerConfig
from icalkit.data_gen.demos import run_episode
from icalkit.data_gen.programs import trajectory_to_program
from icalkit.data_gen.transfer import extra_tasks, transfer_scores, transfer_summary
from icalkit.envs.factory import make_env
from icalkit.envs.household.scene import build_world
from icalkit.envs.household.simulator import Simulator
from icalkit.envs.household.tasks.sampler import sample_tasks
from icalkit.envs.household.tasks.task import Task
from icalkit.memory.example import Example
from icalkit.memory.example_memory import ExampleMemory
from icalkit.memory.store import records_digest

single_thread = pytest.fixture(scope="module", autouse=True)(one_torch_thread)
BROKEN = 'mug = InteractionObject("Mug")\nmug.slice()\n'  # a mug cannot be sliced: fails in every room


@pytest.fixture(scope="module")
def embedder():
    from icalkit.memory.embed import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder()


def expert_program(env, task) -> str:
    ep, _ = run_episode(env, task, "expert", seed=1, keep_frames=False)
    steps = json.loads(ep.to_json())["steps"]
    return trajectory_to_program(build_world(Task.from_dict(json.loads(ep.to_json())["task"])), steps)


@pytest.fixture(scope="module")
def coffee_memory(tmp_path_factory, embedder):
    """Three Coffee demonstrations of train tasks (their expert programs) and one that fails anywhere."""
    env = make_env("household", render_obs=False)
    tasks = sample_tasks(["Coffee"], 4, "train", 0)
    examples = [Example(task_id=t.task_id, task_type="Coffee", instruction=t.instruction,
                        revised_program=expert_program(env, t) if i < 3 else BROKEN) for i, t in enumerate(tasks)]
    mem = ExampleMemory(tmp_path_factory.mktemp("mem") / "coffee.db", embedder)
    mem.add_many(examples)
    return mem, examples, env


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


def test_silent_next_copy_goes_on_after_a_copy_that_ends_without_an_error(coffee_memory, tmp_path, embedder):
    """planner.silent_next_copy: a copy that picks up the mug and stops (no error, coffee not made) is
    followed by the next copy — ``always`` every time, also after a finished task; ``review`` unless
    the model answers the empty program, whose own program never runs; off, the episode ends."""
    from planner_doubles import ScriptedLLM

    from icalkit.agents.feedback import DONE_PROGRAM, NEXT_COPY_TEXT, REVIEW_TEXT
    from icalkit.agents.llm_session import LLMSession

    _, examples, _ = coffee_memory
    task = sample_tasks(["Coffee"], 1, "valid_unseen", 0)[0]
    partial = 'mug = InteractionObject("Mug")\nmug.pickup()\n'
    good = examples[0].revised_program

    def run(programs: list[str], replies: list[str] | None = None, **cfg):
        mem = ExampleMemory(tmp_path / f"silent{len(list(tmp_path.iterdir()))}.db", embedder)
        ranked = [Example(task_id=ex.task_id, task_type="Coffee", instruction="Make coffee", revised_program=p)
                  for ex, p in zip(examples, programs, strict=False)]
        mem.add_many(ranked)
        mem.set_transfer_scores({ex.example_id: [3 - i, 3] for i, ex in enumerate(ranked)})  # in this order
        llm = ScriptedLLM(replies or [])
        cfg = PlannerConfig(**{"mode": "copy", "k": 1, "ground_ids": True, "room_fit": 3, "transfer_order": True,
                               "copy_fallback": True, "max_replans": 2, **cfg})
        res = Planner(LLMSession(llm) if replies is not None else None, mem, cfg).run_episode(
            task, Simulator(build_world(task)))
        return res, llm.prompts

    off, _ = run([partial, good])
    assert not off.success and off.attempts == 1 and off.errors == []
    more, _ = run([partial, good], silent_next_copy="always")
    assert more.success and more.attempts == 2 and more.failed_attempts == 0 and more.errors == [NEXT_COPY_TEXT]
    finished, _ = run([good, good + "\n", partial], silent_next_copy="always")  # the agent cannot know it is done
    assert finished.success and finished.attempts == 3 and finished.programs[-1] == partial
    capped, _ = run([partial, partial + "\n", good], silent_next_copy="always", precondition_checks=True,
                    max_replans=1)  # the good copy is left: one re-plan in all
    assert not capped.success and capped.attempts == 2 and capped.errors == [NEXT_COPY_TEXT]

    code = 'faucet = InteractionObject("Faucet")\nfaucet.toggle_on()\n'
    asked, prompts = run([partial, good], [f"Program:\n```python\n{code}```"], silent_next_copy="review")
    assert asked.success and asked.attempts == 2 and asked.programs == [partial, good]  # its code never ran
    assert len(prompts) == 1 and REVIEW_TEXT in prompts[0][-1]["content"]
    done_answer = f"Program:\n```python\n{DONE_PROGRAM}\n```"
    done, _ = run([partial, good], [done_answer], silent_next_copy="review")
    assert not done.success and done.attempts == 1
    ended, prompts = run([good, partial], [done_answer], silent_next_copy="review")  # finished, and it says so
    assert ended.success and ended.attempts == 1 and len(prompts) == 1
    for reply in ("I cannot tell.", f"Program:\n```python\n{DONE_PROGRAM}\n# and then"):  # unreadable; cut
        unread, prompts = run([partial, good], [reply], silent_next_copy="review")
        assert unread.success and unread.attempts == 2 and len(prompts) == 1  # work is left, no re-ask
    failing, prompts = run([BROKEN, good], [done_answer], silent_next_copy="review")
    assert failing.success and failing.attempts == 2 and prompts == []  # an error: the next copy, no review
    assert PlannerConfig(mode="copy", copy_fallback=True, silent_next_copy="review").uses_model
    for bad_cfg, match in (({"silent_next_copy": "sometimes"}, "one of"), ({"silent_next_copy": "always"}, "copy_fallback"),
                           ({"copy_fallback": True, "silent_next_copy": "review", "review_done": True}, "review_done"),
                           ({"copy_fallback": True, "silent_next_copy": "review", "oracle_goal_feedback": True},
                            "oracle_goal_feedback")):
        with pytest.raises(ValueError, match=match):
            PlannerConfig(mode="copy", **bad_cfg).validate()


def test_end_state_goes_on_while_the_room_misses_the_copied_demonstrations_end_state(coffee_memory, tmp_path, embedder):
    """planner.silent_next_copy=end_state: the next copy runs after a silent copy only while the room does
    not meet the end state the copied demonstration reached (here a mug full of coffee in the machine)."""
    from icalkit.agents.context import full_state
    from icalkit.agents.feedback import NEXT_COPY_TEXT
    from icalkit.data_gen.ical_steps import execute

    _, examples, env = coffee_memory
    task = sample_tasks(["Coffee"], 1, "valid_unseen", 0)[0]
    partial = 'mug = InteractionObject("Mug")\nmug.pickup()\n'
    good = examples[0].revised_program
    own = sample_tasks(["Coffee"], 4, "train", 0)[0]
    assert own.task_id == examples[0].task_id
    env.reset(options={"task": own})
    start = full_state(env.sim.world)
    made = execute(env, own, good)  # the demonstration's own run: its start state and its changes
    assert made.success

    def run(programs: list[str], demo_states: list[bool]):
        mem = ExampleMemory(tmp_path / f"end{len(list(tmp_path.iterdir()))}.db", embedder)
        ranked = [Example(task_id=ex.task_id, task_type="Coffee", instruction="Make coffee", revised_program=p,
                          **({"initial_state": start, "observed_changes": made.changes} if with_state else {}))
                  for ex, p, with_state in zip(examples, programs, demo_states, strict=False)]
        mem.add_many(ranked)
        mem.set_transfer_scores({ex.example_id: [3 - i, 3] for i, ex in enumerate(ranked)})  # in this order
        cfg = PlannerConfig(mode="copy", k=1, ground_ids=True, room_fit=3, transfer_order=True, copy_fallback=True,
                            max_replans=2, silent_next_copy="end_state")
        return Planner(None, mem, cfg).run_episode(task, Simulator(build_world(task)))

    # the first copy only picks the mug up, where its demonstration filled it at the machine: go on
    more = run([partial, good, partial], [True, True, True])
    assert more.success and more.attempts == 2 and more.failed_attempts == 0
    assert more.errors[0].startswith(NEXT_COPY_TEXT) and "Mug" in more.errors[0] and "coffee" in more.errors[0]
    # the room meets the end state after the good copy: the third (partial) copy does not run (attempts == 2)
    finished = run([good, good + "\n", partial], [True, True, True])
    assert finished.success and finished.attempts == 1 and finished.errors == []
    # a demonstration with no recorded changes sets no check: the silent copy ends the episode
    unknown = run([partial, good], [False, True])
    assert not unknown.success and unknown.attempts == 1


def test_named_next_copies_the_candidate_that_handles_what_the_dialogue_names(embedder):
    """planner.named_next: after the coffee of "a mug of coffee and a sandwich with lettuce and tomato",
    the next copy is the candidate whose (re-grounded) program handles the lettuce and tomato the
    episode has not touched, of whatever type; ties keep their order. Needs the copy fallback and the
    mention re-grounding; finish_placements needs the end-state check."""
    from types import SimpleNamespace

    from icalkit.agents.copy_progress import CopyProgress
    from icalkit.agents.executor import Executor
    from icalkit.agents.llm_session import CallStats

    task = next(t for t in sample_tasks(["Breakfast"], 5, "valid_unseen", 0) if t.task_id.endswith("0-00002"))
    cfg = PlannerConfig(mode="copy", k=1, mention_reground=True, copy_fallback=True, named_next=True,
                        silent_next_copy="end_state", finish_placements=True)
    planner = Planner(None, SimpleNamespace(text_embedder=embedder), cfg)
    executor = Executor(Simulator(build_world(task)))
    progress = CopyProgress(task.dialogue, executor, planner._mention_embedder(), named=True, places=True)
    assert {"Mug", "Lettuce", "Tomato"} <= progress.untouched_named() and "DiningTable" in progress.places

    def example(name: str, program: str) -> list[Example]:
        return [Example(task_id=f"train/x/{name}", task_type="Coffee", instruction=name, revised_program=program)]

    mug = example("mug", 'mug = InteractionObject("Mug")\nmug.pickup()\n')
    salad = example("salad", 'lettuce = InteractionObject("Lettuce")\nlettuce.slice()\n'
                             'tomato = InteractionObject("Tomato")\ntomato.slice()\n')
    lettuce = example("lettuce", 'lettuce = InteractionObject("LettuceSliced")\nlettuce.pickup()\n')
    assert planner.by_named(task, executor, [mug, lettuce, salad], {"Lettuce", "Tomato"}) == [salad, lettuce, mug]
    assert planner.by_named(task, executor, [mug, lettuce, salad], set()) == [mug, lettuce, salad]
    executor.run('mug = InteractionObject("Mug")\nmug.pickup()\n', task)
    assert "Mug" not in progress.untouched_named() and {"Lettuce", "Tomato"} <= progress.untouched_named()
    planner.progress = progress  # as run_episode sets it: the next copy is the salad's, the others stay
    answer, examples, _, rest = planner.next_copy(task, executor, [mug, lettuce, salad], set(), CallStats())
    assert examples == salad and "lettuce.slice()" in answer.text and rest == [lettuce, mug]
    for bad_cfg, match in (({"mode": "copy", "named_next": True, "copy_fallback": True}, "mention_reground"),
                           ({"mode": "copy", "finish_placements": True}, "silent_next_copy=end_state")):
        with pytest.raises(ValueError, match=match):
            PlannerConfig(**bad_cfg).validate()


def test_end_state_hands_what_is_left_to_the_model_once_the_copies_are_spent(coffee_memory, tmp_path, embedder):
    """silent_next_copy=end_state with model_replans: the last copy ends without an error while its
    demonstration's end state is unmet (the mug never filled), so the model is asked, told what is
    left; it is not asked while copies are left, nor after a copy that met the end state."""
    from planner_doubles import ScriptedLLM

    from icalkit.agents.context import full_state
    from icalkit.agents.feedback import NEXT_COPY_TEXT, UNFINISHED_TEXT
    from icalkit.agents.llm_session import LLMSession
    from icalkit.data_gen.ical_steps import execute

    _, examples, env = coffee_memory
    task = sample_tasks(["Coffee"], 1, "valid_unseen", 0)[0]
    own = sample_tasks(["Coffee"], 4, "train", 0)[0]
    env.reset(options={"task": own})
    start = full_state(env.sim.world)
    made = execute(env, own, examples[0].revised_program)
    partial = 'mug = InteractionObject("Mug")\nmug.pickup()\n'
    good = f"Program:\n```python\n{examples[0].revised_program}\n```"

    def run(programs: list[str]):
        mem = ExampleMemory(tmp_path / f"m{len(list(tmp_path.iterdir()))}.db", embedder)
        ranked = [Example(task_id=ex.task_id, task_type="Coffee", instruction="Make coffee", revised_program=p,
                          initial_state=start, observed_changes=made.changes)
                  for ex, p in zip(examples, programs, strict=False)]
        mem.add_many(ranked)
        mem.set_transfer_scores({ex.example_id: [3 - i, 3] for i, ex in enumerate(ranked)})
        cfg = PlannerConfig(mode="copy", k=1, ground_ids=True, room_fit=3, transfer_order=True, copy_fallback=True,
                            max_replans=1, silent_next_copy="end_state", model_replans=1, precondition_checks=True)
        llm = ScriptedLLM([good])
        return Planner(LLMSession(llm), mem, cfg).run_episode(task, Simulator(build_world(task))), llm

    res, llm = run([partial, 'mug = InteractionObject("Mug")\nmug.go_to()\n'])
    assert res.success and res.errors[0].startswith(NEXT_COPY_TEXT) and res.errors[1].startswith(UNFINISHED_TEXT)
    assert len(llm.prompts) == 1 and "not yet" in llm.prompts[0][-1]["content"] and "Mug" in res.errors[1]
    done, quiet = run([partial, examples[0].revised_program])
    assert done.success and quiet.prompts == [] and len(done.programs) == 2


def test_finish_placements_serves_the_plate_where_the_dialogue_says(tmp_path, embedder):
    """planner.finish_placements: a Plate Of Toast demonstration served on the plate that stood on its
    counter; the new room's clean plates are on a table, in a cabinet and in the sink, and the dialogue asks
    for the plate on the kitchen counter.
    The copy ends without an error, the plate in the wrong place, so the agent moves it there itself
    (one program, not a copy) and stops; without the setting the episode ends after the copy."""
    from icalkit.agents.api.runtime import ApiConfig
    from icalkit.agents.context import full_state
    from icalkit.agents.executor import ExecutorLimits
    from icalkit.data_gen.ical_steps import execute

    env = make_env("household", render_obs=False)
    own = next(t for t in sample_tasks(["Plate Of Toast"], 6, "train", 0) if t.task_id.endswith("0-00003"))
    program = expert_program(env, own)
    env.reset(options={"task": own})
    start = full_state(env.sim.world)
    made = execute(env, own, program)
    assert made.success and start["Plate_1"]["parent"].startswith("CounterTop")
    mem = ExampleMemory(tmp_path / "toast.db", embedder)
    mem.add_many([Example(task_id=own.task_id, task_type=own.task_type, instruction=own.instruction,
                          revised_program=program, initial_state=start, observed_changes=made.changes)])
    base = next(t for t in sample_tasks(["Plate Of Toast"], 5, "valid_seen", 0) if t.task_id.endswith("0-00001"))
    task = replace(base, dialogue=[*base.dialogue, ("Commander", "and leave the plate on the kitchen counter")])
    limits = ExecutorLimits(api=ApiConfig(oracle_object_map=True, precondition_checks=True))

    def run(**cfg):
        planner = Planner(None, mem, PlannerConfig(mode="copy", k=1, ground_ids=True, precondition_checks=True,
                                                   mention_reground=True, copy_fallback=True,
                                                   silent_next_copy="end_state", **cfg), limits)
        sim = Simulator(build_world(task))
        res = planner.run_episode(task, sim)
        return res, full_state(sim.world)

    served, state = run(finish_placements=True)
    plate = next(o for o, a in state.items() if o.startswith("Plate_") and any(
        b.get("parent") == o for k, b in state.items() if k.startswith("BreadSliced")))
    assert state[plate]["parent"].startswith("CounterTop") and served.success
    assert served.attempts == 2 and "pickup_and_place(spot_0)" in served.programs[-1]
    assert "each acted-on Plate" in served.errors[0] and "on a CounterTop" in served.errors[0]
    left, state = run()
    assert left.attempts == 1 and not state[plate]["parent"].startswith("CounterTop")
