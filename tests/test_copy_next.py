"""What the copy planner does after a copy that ends without an error (planner.silent_next_copy): go
on always, while the room misses the copied demonstration's end state, hand what is left to the
model, finish the placements onto the places the dialogue names, and take the next copy by the
objects it names — on the real simulator, executor, memory and MiniLM embedder."""

from __future__ import annotations

from dataclasses import replace

import copy_fixtures
import pytest
from copy_fixtures import BROKEN
from planner_doubles import one_torch_thread

from icalkit.agents.planner import Planner, PlannerConfig
from icalkit.envs.household.scene import build_world
from icalkit.envs.household.simulator import Simulator
from icalkit.envs.household.tasks.sampler import sample_tasks
from icalkit.memory.example import Example
from icalkit.memory.example_memory import ExampleMemory

single_thread = pytest.fixture(scope="module", autouse=True)(one_torch_thread)
coffee_memory = copy_fixtures.coffee_memory  # a fixture
embedder = copy_fixtures.embedder  # a fixture


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

    mem, start = copy_fixtures.recorded_memory("Plate Of Toast", 6, "0-00003", tmp_path / "toast.db", embedder)
    assert start["Plate_1"]["parent"].startswith("CounterTop")
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


def test_finish_placements_moves_the_rest_onto_the_copied_tasks_own_place(tmp_path, embedder):
    """planner.finish_placements, a copied demonstration's own goal place: it put all three pens on the coffee
    table; the new room has four toilet paper rolls, to go on "the counter" (the bathroom's counter top, which
    the re-grounding renames the coffee table to, though the dialogue names it too weakly for a named place).
    The copy moves three rolls; the agent moves the fourth onto that counter itself, and stops."""
    from icalkit.agents.api.runtime import ApiConfig
    from icalkit.agents.context import full_state
    from icalkit.agents.demo_end_state import goal_places
    from icalkit.agents.executor import ExecutorLimits

    mem, _ = copy_fixtures.recorded_memory("Put All X On Y", 2, "0-00001", tmp_path / "pens.db", embedder)
    demo = next(iter(mem))
    assert goal_places(demo, {}) == {"CoffeeTable"} and goal_places(demo, {"CoffeeTable": "Sofa"}) == {"Sofa"}
    assert goal_places(replace(demo, task_id="hand/written"), {}) == set()  # no task: no parameters to read
    task = next(t for t in sample_tasks(["Put All X On Y"], 5, "valid_unseen", 0) if t.task_id.endswith("0-00003"))
    rolls = [o for o, a in full_state(build_world(task)).items() if o.startswith("ToiletPaper_")]
    assert len(rolls) == 4 and "counter" in " ".join(u for _, u in task.dialogue)
    planner = Planner(None, mem, PlannerConfig(mode="copy", k=1, ground_ids=True, precondition_checks=True,
                                               mention_reground=True, copy_fallback=True, finish_placements=True,
                                               silent_next_copy="end_state"),
                      ExecutorLimits(api=ApiConfig(oracle_object_map=True, precondition_checks=True)))
    sim = Simulator(build_world(task))
    res = planner.run_episode(task, sim)
    assert "CounterTopBath" in planner.progress.near_places and "CounterTopBath" not in planner.progress.places
    assert res.success and res.attempts == 2 and "not yet every ToiletPaper on a CounterTopBath" in res.errors[0]
    assert res.programs[-1].count("pickup_and_place(spot_0)") == 1 and "CounterTopBath" in res.programs[-1]
    assert all(full_state(sim.world)[r]["parent"].startswith("CounterTopBath") for r in rolls)
