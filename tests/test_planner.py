"""Deployment planner (ICAL Algorithm S2): re-planning, modes, malformed outputs, real model.

The model is a scripted test double (a subclass of the LLM base class returning canned texts) to
drive the control flow; one test runs a real tiny Llama end to end. Simulator, executor, prompts
and the example memory (with the real MiniLM embedder) are the real ones.
"""

from __future__ import annotations

import pytest
from planner_doubles import ScriptedLLM, one_torch_thread, tiny_llm

from icalkit.agents.flat_plans import parse_action, parse_flat_answer, program_to_flat
from icalkit.agents.grounding import bind_object_names
from icalkit.agents.llm_session import LLMSession
from icalkit.agents.parsing import ParseError, parse_program_answer, parse_score
from icalkit.agents.planner import Planner, PlannerConfig
from icalkit.envs.household.scene import build_world
from icalkit.envs.household.simulator import Simulator
from icalkit.envs.household.tasks.sampler import sample_tasks
from icalkit.memory.example import Example
from icalkit.memory.example_memory import ExampleMemory

GOOD = '''Summary: make coffee.
Abstracted State: Mug clean, CoffeeMachine off.
Plan:
1. put the mug in the coffee machine
2. turn it on
Program:
```python
mug = InteractionObject("Mug")
machine = InteractionObject("CoffeeMachine")
mug.pickup_and_place(machine)
machine.toggle_on()
```'''
FAILING = '''Summary: slice something.
Program:
```python
mug = InteractionObject("Mug")
mug.slice()
```'''


single_thread = pytest.fixture(scope="module", autouse=True)(one_torch_thread)


@pytest.fixture(scope="module")
def coffee():
    return sample_tasks(["Coffee"], 1, "valid_unseen")[0]


@pytest.fixture(scope="module")
def memory(tmp_path_factory):
    from icalkit.memory.embed import SentenceTransformerEmbedder

    mem = ExampleMemory(tmp_path_factory.mktemp("mem") / "m.db", SentenceTransformerEmbedder())
    program = GOOD.split("```python\n")[1].split("```")[0]
    mem.add_many([Example(task_id=f"train/coffee/{i}", task_type="Coffee", instruction=f"Make coffee {i}",
                          revised_program=program, summary="coffee", plan=["mug to machine", "on"])
                  for i in range(12)])
    return mem


def sim_for(task) -> Simulator:
    return Simulator(build_world(task))


def planner(texts, memory=None, **cfg) -> tuple[Planner, ScriptedLLM]:
    llm = ScriptedLLM(texts)
    return Planner(LLMSession(llm), memory, PlannerConfig(**cfg)), llm


def test_parsers_are_tolerant_and_explain_errors():
    assert "toggle_on" in parse_program_answer(GOOD)["Program"]
    with pytest.raises(ParseError, match="Program"):
        parse_program_answer("I do not know.")
    with pytest.raises(ParseError, match="not valid Python"):
        parse_program_answer("Program:\n```python\nmug = (\n```")
    assert parse_score("Score: 7/10") == 7.0
    with pytest.raises(ParseError):
        parse_score("great answer")
    assert parse_action("  \nAction: pick up the mug") == "PickupObject Mug"
    assert parse_action("Stop") == "Stop"
    with pytest.raises(ParseError, match="reply with one action"):
        parse_action("hmm, let me think")
    assert parse_flat_answer("Plan:\n1. Navigation Mug\nnonsense here\n2. PickupObject Mug") == [
        "Navigation Mug", "PickupObject Mug"]
    assert program_to_flat('a = InteractionObject("Mug")\nb = InteractionObject("Sink")\na.pickup_and_place(b)') == [
        "PickupObject Mug", "PutObject Mug Sink"]


def test_success_first_try_with_retrieval(coffee, memory):
    agent, llm = planner([GOOD], memory, k=3)
    res = agent.run_episode(coffee, sim_for(coffee), ref_len=37)
    assert res.success and res.satisfied == res.total > 0
    assert res.replans == 0 and res.attempts == 1 and res.llm["calls"] == 1
    assert len(res.retrieved) == 3 and res.ref_len == 37 and res.steps > 0
    prompt = llm.prompts[0][-1]["content"]
    assert "Make coffee" in prompt and "def pickup_and_place" in prompt  # examples + API docs shown
    assert res.llm["prompt_ids"][0].startswith("planner@v1")


def test_replan_after_execution_error(coffee, memory):
    agent, llm = planner([FAILING, GOOD], memory, k=2)
    res = agent.run_episode(coffee, sim_for(coffee))
    assert res.success and res.replans == 1 and res.failed_attempts == 1
    assert "slice" in res.errors[0].lower() or "knife" in res.errors[0].lower()
    replan = llm.prompts[1][-1]["content"]
    assert res.errors[0] in replan and "mug.slice()" in replan
    assert res.llm["prompt_ids"][1].startswith("planner_replan@v1")


def test_precondition_checks_let_a_replan_that_starts_over_succeed(coffee):
    """The tuned planner's commonest failure: a re-plan restarting from the first step."""
    first = FAILING.replace('mug.slice()', 'mug.pickup()\nmug.slice()')
    restart = GOOD.replace("mug.pickup_and_place(machine)", "mug.pickup()\nmug.place(machine)")
    results = {}
    for checks in (False, True):
        agent, _ = planner([first, restart], None, mode="zero_shot", max_replans=1, precondition_checks=checks)
        assert agent.limits.api.precondition_checks is checks
        results[checks] = agent.run_episode(coffee, sim_for(coffee))
    assert not results[False].success and "already holding the Mug" in results[False].errors[-1]
    assert results[True].success and results[True].replans == 1


def test_ground_ids_turns_an_id_the_prompt_never_showed_into_its_class(coffee):
    """A tuned model copies a retrieved example's ids (``Mug_99``), which this scene lacks."""
    copied = GOOD.replace('InteractionObject("Mug")', 'InteractionObject("Mug", object_instance="Mug_99")')
    runs = {}
    for ground in (False, True):
        agent, llm = planner([copied, copied], None, mode="zero_shot", max_replans=1, ground_ids=ground)
        runs[ground] = agent.run_episode(coffee, sim_for(coffee))
    assert not runs[False].success and "Mug_99" in runs[False].errors[0]
    assert runs[True].success and "Mug_99" not in runs[True].programs[0]
    assert 'InteractionObject("Mug")' in runs[True].programs[0]
    with pytest.raises(ValueError, match="ground_ids applies to programs, not to flat plans"):
        PlannerConfig(mode="flat", ground_ids=True).validate()


def test_ground_ids_binds_an_object_variable_the_program_never_defined(coffee):
    """A tuned model's long program reads ``coffee_machine`` it never assigned (a NameError)."""
    undefined = GOOD.replace('machine = InteractionObject("CoffeeMachine")\n', "").replace(
        "machine", "coffee_machine")
    runs = {ground: planner([undefined, undefined], None, mode="zero_shot", max_replans=1,
                            ground_ids=ground)[0].run_episode(coffee, sim_for(coffee)) for ground in (False, True)}
    assert not runs[False].success and "name 'coffee_machine' is not defined" in runs[False].errors[0]
    assert runs[True].success, runs[True].errors
    assert runs[True].programs[0].startswith('coffee_machine = InteractionObject("CoffeeMachine")\n')


def test_bind_object_names_only_binds_object_classes_read_before_assignment():
    program = ("bread = InteractionObject('Bread')\nbread.pickup_and_place(dining_table)\n"
               "s.pickup_and_place(plate_2)\nplate_2 = 3\nn = len([bread])\nfoo.go_to()\nsink.go_to()\n"
               "bread.go_to()\n")
    bound = bind_object_names(program)
    assert bound == ('dining_table = InteractionObject("DiningTable")\nplate_2 = InteractionObject("Plate")\n'
                     'sink = InteractionObject("SinkBasin")\n' + program)
    assert bind_object_names("mug = InteractionObject('Mug')\nmug.go_to()\n").startswith("mug = ")
    assert bind_object_names("for x in (:\n") == "for x in (:\n"  # unparsable: the executor reports it


def test_grounded_copy_runs_the_retrieved_program_with_its_scene_ids_as_classes(coffee, tmp_path):
    """The copy baseline runs another scene's program; grounded, its ids become classes."""
    from icalkit.memory.embed import SentenceTransformerEmbedder

    program = GOOD.split("```python\n")[1].split("```")[0].replace(
        'InteractionObject("Mug")', 'InteractionObject("Mug", object_instance="Mug_99")')
    mem = ExampleMemory(tmp_path / "m.db", SentenceTransformerEmbedder())
    mem.add_many([Example(task_id="train/coffee/0", task_type="Coffee", instruction="Make coffee",
                          revised_program=program)])
    runs = {ground: Planner(None, mem, PlannerConfig(mode="copy", k=1, ground_ids=ground)).run_episode(
        coffee, sim_for(coffee)) for ground in (False, True)}
    assert not runs[False].success and "Mug_99" in runs[False].errors[0]
    assert runs[True].success and runs[True].programs == [program.replace(', object_instance="Mug_99"', "")]


def test_copy_first_runs_the_retrieved_program_and_the_model_revises_it(coffee, tmp_path):
    """copy_first: attempt 1 is the grounded copy; the model only writes re-plans, from its feedback."""
    from icalkit.memory.embed import SentenceTransformerEmbedder

    good = GOOD.split("```python\n")[1].split("```")[0]
    broken = good.replace('InteractionObject("Mug")', 'InteractionObject("Cup")')  # another room's object
    for copied, model_calls in ((good, 0), (broken, 1)):
        mem = ExampleMemory(tmp_path / f"{model_calls}.db", SentenceTransformerEmbedder())
        mem.add_many([Example(task_id="train/coffee/0", task_type="Coffee", instruction="Make coffee",
                              revised_program=copied)])
        agent, llm = planner([GOOD], mem, k=1, ground_ids=True, copy_first=True)
        res = agent.run_episode(coffee, sim_for(coffee))
        assert res.success and res.llm["calls"] == model_calls and res.programs[0] == copied
        if model_calls:  # the one call is the re-plan prompt: the copied program and its error
            assert res.replans == 1 and "Cup" in res.errors[0]
            assert 'InteractionObject("Cup")' in llm.prompts[0][-1]["content"]
            assert res.errors[0] in llm.prompts[0][-1]["content"]
    with pytest.raises(ValueError, match="copy_first"):
        PlannerConfig(mode="zero_shot", copy_first=True).validate()


def test_room_fit_copies_the_example_the_room_can_follow(coffee, tmp_path):
    """room_fit: the retrieved example whose program names only classes this room has is copied
    (the top hit's task type first); off, the copy takes the top hit and fails on the missing class."""
    from types import SimpleNamespace

    from icalkit.agents.context import room_fit_order
    from icalkit.memory.embed import SentenceTransformerEmbedder

    good = GOOD.split("```python\n")[1].split("```")[0]
    broken = good.replace('InteractionObject("Mug")', 'InteractionObject("Cup")')  # another room's object
    mem = ExampleMemory(tmp_path / "m.db", SentenceTransformerEmbedder())
    nearest, fitting = (Example(task_id=f"train/coffee/{i}", task_type="Coffee", instruction=text, revised_program=p)
                        for i, (text, p) in enumerate([("Fill a clean mug with coffee", broken), ("Boil a potato in a pot", good)]))
    mem.add_many([nearest, fitting])
    runs = {fit: Planner(None, mem, PlannerConfig(mode="copy", k=1, ground_ids=True, room_fit=fit)).run_episode(
        coffee, sim_for(coffee)) for fit in (0, 2)}
    assert runs[0].retrieved == [nearest.example_id] and "No Cup has been found" in runs[0].errors[0]
    assert runs[2].retrieved == [fitting.example_id] and runs[2].success
    ex = [SimpleNamespace(task_type=t, revised_program=p, demo_program="") for t, p in
          [("Coffee", broken), ("Water Plant", good), ("Coffee", good), ("Coffee", broken)]]
    assert room_fit_order(ex, {"Mug", "CoffeeMachine"}) == [ex[2], ex[0], ex[3], ex[1]]  # type, share, rank
    assert room_fit_order([], {"Mug"}) == []
    with pytest.raises(ValueError, match="room_fit"):
        PlannerConfig(room_fit=-1).validate()


def test_malformed_output_reask_then_failed_attempt(coffee):
    agent, _ = planner(["no code here", "still nothing", "garbage", GOOD], None, mode="zero_shot", max_replans=1)
    res = agent.run_episode(coffee, sim_for(coffee))
    # first attempt: answer + re-ask both unparseable -> failed attempt; re-plan: "garbage" then re-ask GOOD
    assert res.success and res.replans == 1 and res.failed_attempts == 1
    assert res.llm["parse_failures"] == 3 and res.llm["reasks"] == 2 and res.llm["calls"] == 4
    assert res.errors[0].startswith("the answer could not be read")


def test_budget_of_replans_and_zero_shot_prompt(coffee):
    agent, llm = planner([FAILING] * 10, None, mode="zero_shot", max_replans=2)
    res = agent.run_episode(coffee, sim_for(coffee))
    assert not res.success and res.replans == 2 and res.attempts == 3 and len(res.errors) == 3
    assert "Think step by step" in llm.prompts[0][-1]["content"]
    with pytest.raises(ValueError, match="needs an example memory"):
        Planner(LLMSession(llm), None, PlannerConfig(mode="ical"))
    with pytest.raises(ValueError, match="planner.mode"):
        PlannerConfig(mode="nope").validate()


def test_rerank_keeps_best_scored_set(coffee, memory):
    agent, llm = planner([FAILING, GOOD, "unparseable", "x", "Score: 2", "Score: 9"], memory, mode="rerank", k=2,
                         max_replans=0)
    res = agent.run_episode(coffee, sim_for(coffee))
    assert res.rerank_scores == [2.0, 9.0, -1.0]
    assert res.success and len(res.retrieved) == 2 and res.programs[0].count("toggle_on") == 1


def test_flat_llm_planner_grounded_replan(coffee, memory):
    bad, good = "Plan:\nSliceObject Mug", "Plan:\nPickupObject Mug\nPutObject Mug CoffeeMachine\nToggleObjectOn CoffeeMachine"
    agent, llm = planner([bad, good], memory, mode="flat", k=2)
    res = agent.run_episode(coffee, sim_for(coffee))
    assert res.success and res.replans == 1
    first, second = llm.prompts[0][-1]["content"], llm.prompts[1][-1]["content"]
    assert "PutObject Mug CoffeeMachine" in first  # examples converted to flat plans
    assert "Objects observed so far" in second and "Mug" in second


def test_real_tiny_model_runs_one_episode(coffee, memory):
    """A real (random, tiny) Llama through the HF backend: the episode ends with a record, no crash."""
    agent = Planner(LLMSession(tiny_llm(), max_new_tokens=24), memory, PlannerConfig(k=1, max_replans=1))
    res = agent.run_episode(coffee, sim_for(coffee))
    assert res.attempts == 2 and res.llm["calls"] >= 2 and res.llm["completion_tokens"] > 0
    assert res.model and not res.success


def test_planner_state_shows_the_closed_container_of_a_task_object() -> None:
    """A task object inside a closed cabinet/drawer brings its container into the prompt's state,
    with ``open=False`` (right after it unless the task lists it anyway), so a program can know
    to open it first."""
    from icalkit.agents.context import filtered_state, planner_state, state_text

    found = 0
    for task in sample_tasks(["Coffee", "Put All X In One Y", "Salad"], 4, "train"):
        world = build_world(task)
        state, listed = planner_state(world, task), filtered_state(world, task)
        ids = list(state)
        for attrs in state.values():
            parent = attrs.get("parent")
            if parent and world.objects[parent].type.openable and not world.objects[parent].is_open:
                first = min(ids.index(o) for o in ids if state[o].get("parent") == parent)
                assert parent in state and (parent in listed or ids.index(parent) == first + 1)
                assert f"{parent}: open=False" in state_text(state).splitlines()
                found += 1
    assert found > 0  # the sample has objects in closed containers
