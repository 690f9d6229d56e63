"""Action API, executor, feedback and trajectory->program conversion on the real simulator."""

from __future__ import annotations

import copy
import inspect

import pytest
from api_world import executor, make_kitchen, toast_program, toast_task

from icalkit.agents.api import ApiConfig, InteractionObject, api_documentation
from icalkit.agents.api.flat import FlatPlanError, match_object, parse_flat_plan
from icalkit.agents.executor import Executor, ExecutorLimits
from icalkit.agents.feedback import HumanFeedback, action_feedback, goal_feedback, program_feedback
from icalkit.data_gen.programs import trajectory_to_program
from icalkit.envs.household.navigation import path_to_object
from icalkit.envs.household.scene import generate_scene
from icalkit.envs.household.simulator import Simulator
from icalkit.envs.household.state import World
from icalkit.envs.household.tasks.checker import check_goal
from icalkit.envs.household.tasks.task import Task


@pytest.fixture(scope="module")
def kitchen() -> World:
    return make_kitchen()


def test_documentation_is_generated_from_the_code() -> None:
    doc = api_documentation()
    for name in ("go_to", "pickup", "place", "pickup_and_place", "put_down", "open", "close",
                 "toggle_on", "toggle_off", "slice", "pour", "check_attribute", "change_state"):
        method = getattr(InteractionObject, name)
        assert f"def {name}(" in doc
        assert inspect.getdoc(method).splitlines()[0] in doc
    assert "InteractionObject(object_class, object_instance=None, parent_object=None)" in doc
    assert "fillLiquid" in doc and "toasted" in doc


def test_toast_program_succeeds_with_trace(kitchen: World) -> None:
    ex = executor(kitchen)
    trace = ex.run(toast_program(kitchen), toast_task())
    assert trace.failure is None, trace.failure
    assert trace.success and trace.goal.satisfied == trace.goal.total
    lines = [c.line for c in trace.calls]
    assert lines == [2, 5, 6, 7, 10, 11, 12]
    assert trace.calls[0].method == "pickup" and trace.calls[0].object.startswith("Knife_")
    assert trace.calls[0].primitives[-1].action == "Pickup"
    assert all(p.success for c in trace.calls for p in c.primitives)
    assert trace.steps == len(trace.primitive_actions) > 5
    assert ex.runtime.beliefs == [(trace.calls[4].object, "toasted", True)]
    assert program_feedback(trace) == "The program ran to completion and the task is done."


def test_action_failure_stops_with_feedback(kitchen: World) -> None:
    program = ("mug = InteractionObject('Mug')\n"
               "toaster = InteractionObject('Toaster')\n"
               "toaster.pickup()\n"
               "mug.pickup()\n")
    trace = executor(kitchen).run(program, toast_task())
    f = trace.failure
    assert f.kind == "action" and f.line == 3 and f.code == "toaster.pickup()"
    assert f.completed.endswith("toaster = InteractionObject('Toaster')")
    assert f.remaining.splitlines() == ["toaster.pickup()", "mug.pickup()"]
    assert [c.method for c in trace.calls] == ["pickup"] and trace.failures == 1
    text = action_feedback(trace)
    assert text == "Code failed at line 3, `toaster.pickup()`: The Toaster cannot be picked up."
    assert goal_feedback(trace).startswith("The task is not done yet (0 of 2 goal conditions hold)")
    assert "Cut a slice off the bread" in goal_feedback(trace)


def test_full_receptacle_message(kitchen: World) -> None:
    program = toast_program(kitchen).replace("toaster.toggle_on()", "").replace(
        'toast.change_state("toasted", True)',
        "toast2 = InteractionObject('BreadSliced', parent_object=bread)\n"
        "toast2.pickup_and_place(toaster)")
    trace = executor(kitchen).run(program, toast_task())
    assert trace.calls[-1].object != trace.calls[-2].object  # two different slices
    assert "Code failed at line 13, `toast2.pickup_and_place(toaster)`: The Toaster is full right now." \
        == action_feedback(trace)


def test_usage_errors_are_reported(kitchen: World) -> None:
    trace = executor(kitchen).run("mug = InteractionObject('Mugg')\n")
    assert trace.failure.kind == "usage" and "did you mean 'Mug'" in trace.failure.message
    trace = executor(kitchen).run("mug = InteractionObject('Mug')\nmug.check_attribute('shiny', 1)\n")
    assert trace.failure.kind == "usage" and "Unknown attribute 'shiny'" in trace.failure.message
    trace = executor(kitchen).run("mug = InteractionObject('Mug')\nmug.place('sink')\n")
    assert trace.failure.line == 2 and "expects an InteractionObject" in trace.failure.message


def test_check_attribute_reads_the_world(kitchen: World) -> None:
    program = ("mug = InteractionObject('Mug')\n"
               "print(mug.check_attribute('holding', False))\n"
               "mug.pickup()\n"
               "print(mug.check_attribute('holding', True), mug.check_attribute('filled', True))\n")
    trace = executor(kitchen).run(program)
    assert trace.failure is None and trace.output == "True\nTrue False\n"
    assert [c.result for c in trace.calls] == [True, None, True, False]


def test_step_and_failure_budgets(kitchen: World) -> None:
    trace = executor(kitchen, max_steps=3).run("m = InteractionObject('Mug')\nm.pickup()\n")
    assert trace.failure.kind == "limit" and "limit of 3 steps" in trace.failure.message
    assert trace.steps == 3
    ex = executor(kitchen, max_failures=2)
    loop = "t = InteractionObject('Toaster')\nfor i in range(10):\n    t.pickup()\n"
    first = ex.run(loop)
    assert first.failure.kind == "action" and first.failures == 1
    second = ex.run(loop)  # the episode's second failed primitive reaches the budget (>=, as the env)
    assert second.failure.kind == "limit" and second.failures == 2
    assert "limit of 2 failed actions is reached (last: The Toaster cannot be picked up" \
        in second.failure.message
    assert second.calls[0].success is False
    third = ex.run(loop)  # nothing more is sent once the budget is used up
    assert third.failure.kind == "limit" and third.steps == second.steps


def test_flat_plan_parsing_is_robust() -> None:
    steps = parse_flat_plan("1. navigation  fridge\n2) Open the Fridge; pickupobject apple, "
                            "Put Object apple counter top\n- ToggleObjectOn coffee machine\n"
                            "PourObject Mug sink")
    assert [str(s) for s in steps] == ["Navigation Fridge", "OpenObject Fridge", "PickupObject Apple",
                                       "PutObject Apple CounterTop", "ToggleObjectOn CoffeeMachine",
                                       "PourObject Mug SinkBasin"]
    assert match_object(["potatoe"])[0] == "Potato"
    assert parse_flat_plan(["PutObject DiningTable"])[0].objects == ["DiningTable"]
    with pytest.raises(FlatPlanError, match="unknown action 'Dance'"):
        parse_flat_plan("Dance wildly")
    with pytest.raises(FlatPlanError, match="no known object"):
        parse_flat_plan("PickupObject zzzzqqq")


def test_flat_plan_runs_through_the_api(kitchen: World) -> None:
    plan = "Navigation mug\nPickupObject Mug\nPutObject Mug Sink\nPickupObject Toaster"
    ex = executor(kitchen)
    trace = ex.run(plan, mode="flat")
    assert [c.method for c in trace.calls] == ["go_to", "pickup", "place", "pickup"]
    assert trace.failure.kind == "action" and trace.failure.line == 4
    assert trace.failure.code == "PickupObject Toaster"
    mug = ex.sim.world.objects[trace.calls[1].object]
    assert mug.parent is not None and mug.parent.startswith("SinkBasin")


def test_env_and_executor_share_one_budget() -> None:
    """The gym env truncates exactly when the executor's runtime stops: TEACh's budget, one test."""
    from icalkit.envs.household.env import HouseholdEnv

    task, _ = registry_task("Coffee", 0)
    env = HouseholdEnv(render_obs=False, max_failures=3)
    env.reset(options={"task": task})
    ex = Executor(env, ExecutorLimits(api=ApiConfig(max_failures=3)))
    kinds = [ex.run("t = InteractionObject('Toaster')\nt.pickup()\n").failure.kind for _ in range(3)]
    assert kinds == ["action", "action", "limit"] and env.sim.failures == 3
    _, _, terminated, truncated, info = env.step("Look Up")
    assert truncated and not terminated and info["failures"] == 3


def test_human_feedback_shows_state_and_failure(kitchen: World) -> None:
    ex = executor(kitchen)
    trace = ex.run("t = InteractionObject('Toaster')\nt.pickup()\n", toast_task())
    shown: list[str] = []
    human = HumanFeedback(input_fn=lambda prompt: "Pick up the bread, not the toaster.",
                          output_fn=shown.append)
    assert human(trace, ex.sim) == "Pick up the bread, not the toaster."
    assert any(s.startswith("State: Holding: nothing. Visible:") for s in shown)
    assert any("cannot be picked up" in s for s in shown)
    keep = HumanFeedback(input_fn=lambda prompt: "  ", output_fn=shown.append)
    assert keep(trace, ex.sim).startswith("Code failed at line 2")


def walk(sim: Simulator, steps: list, oid: str) -> None:
    for action in path_to_object(sim.world, oid):
        assert sim.step(action).success
        steps.append((action, None))


def act(sim: Simulator, steps: list, action: str, oid: str) -> None:
    steps.append((action, oid))
    assert sim.step(action, target=oid).success


def noisy_toast_demo(world: World) -> list:
    """A hand-written demonstration of Toast with mistakes (wrong pickup, useless toggles)."""
    sim, steps = Simulator(copy.deepcopy(world)), []
    w = sim.world
    knife, bread = w.of_type("Knife")[0].object_id, w.of_type("Bread")[0]
    mug, toaster = w.of_type("Mug")[0].object_id, w.of_type("Toaster")[0].object_id
    counter = w.of_type("CounterTop")[0].object_id
    walk(sim, steps, mug)
    act(sim, steps, "Pickup", mug)  # mistake: not needed
    walk(sim, steps, counter)
    act(sim, steps, "Place", counter)
    steps.append(("Pickup", toaster))  # failed attempt, dropped from the program
    walk(sim, steps, knife)
    act(sim, steps, "Pickup", knife)
    walk(sim, steps, bread.parent)
    act(sim, steps, "Open", bread.parent)
    walk(sim, steps, bread.object_id)
    act(sim, steps, "Slice", bread.object_id)
    walk(sim, steps, counter)
    act(sim, steps, "Place", counter)
    piece = next(o.object_id for o in w.objects.values() if o.sliced_from == bread.object_id)
    walk(sim, steps, piece)
    act(sim, steps, "Pickup", piece)
    walk(sim, steps, toaster)
    act(sim, steps, "Place", toaster)
    act(sim, steps, "ToggleOn", toaster)
    act(sim, steps, "ToggleOff", toaster)  # mistake kept; toast stays toasted
    act(sim, steps, "ToggleOn", toaster)
    assert check_goal(toast_task(), w.metadata()).success
    return steps


def test_trajectory_round_trip(kitchen: World) -> None:
    steps = noisy_toast_demo(kitchen)
    program = trajectory_to_program(kitchen, steps)
    assert "mug.pickup_and_place(counter_top)" in program
    assert "parent_object=bread" in program and "toaster.toggle_off()" in program
    assert "toaster.pickup()" not in program and "knife.go_to()" in program
    trace = executor(kitchen).run(program, toast_task())
    assert trace.failure is None, trace.failure
    assert trace.success
    moves = sum(1 for a, _ in steps if a not in ("Pickup", "Place", "Open", "Slice", "ToggleOn",
                                                 "ToggleOff"))
    assert trace.steps <= len(steps) + 2 and moves > 0
    assert trajectory_to_program(kitchen, steps[:0]) == ""
    with pytest.raises(ValueError, match="step 0"):
        trajectory_to_program(kitchen, [("Fly", None)])


def registry_task(type_name: str, seed: int) -> tuple[Task, World]:
    """A task of a registered type and its initial world, built as the env builds them."""
    import random

    from icalkit.envs.household.scene import apply_initial_state
    from icalkit.envs.household.tasks.registry import TASK_TYPES, choose_params

    tt = TASK_TYPES[type_name]
    room = tt.rooms[seed % len(tt.rooms)]
    rng = random.Random(seed)
    params = choose_params(tt, room, rng)
    required, initial = tt.setup(params, room, rng)
    task = Task(f"train/{type_name}/{seed}", type_name, tt.positional(params), tt.definition, "",
                [], room, seed, "train", required, initial)
    world = generate_scene(seed, "train", room, required)
    apply_initial_state(world, initial, random.Random(f"init/{task.task_id}/{seed}"))
    return task, world


def _type_names() -> list[str]:
    from icalkit.envs.household.tasks.registry import TASK_TYPES

    return sorted(TASK_TYPES)


@pytest.mark.parametrize("type_name", _type_names())
def test_expert_trajectory_program_round_trip(type_name: str) -> None:
    """Expert primitives -> program -> executed program reaches the expert's goal conditions."""
    from icalkit.data_gen.actor import SkillError
    from icalkit.data_gen.expert import expert_actions

    task, world = registry_task(type_name, 0)
    try:
        steps = expert_actions(task)
    except SkillError as exc:
        pytest.skip(f"the expert cannot solve {type_name} yet: {exc}")
    replayed = Simulator(copy.deepcopy(world))
    for s in steps:
        replayed.step(s["action"], s["target"])
    expert_goal = check_goal(task, replayed.world.metadata())
    program = trajectory_to_program(world, steps)
    trace = executor(world).run(program, task)
    assert trace.goal.satisfied == expert_goal.satisfied, (program, trace.failure)
    if expert_goal.success:
        assert trace.success and trace.failure is None
        assert trace.steps <= len(steps)


def test_demo_shows_both_kinds_of_feedback() -> None:
    from icalkit.agents.executor_demo import run_demo

    shown: list[str] = []
    first, second, third = run_demo(out=shown.append)
    assert first.failure.kind == "action" and "cannot hold the Bread" in first.failure.message
    assert second.failure is None and not second.success
    assert "turn it on" in " ".join(second.goal.failure_descs)
    assert third.success
    assert sum("feedback:" in s for s in shown) == 3


def test_executor_accepts_the_gym_env() -> None:
    from icalkit.envs.household.env import HouseholdEnv

    task, _ = registry_task("Coffee", 0)
    env = HouseholdEnv(render_obs=False)
    env.reset(options={"task": task})
    ex = Executor(env)
    trace = ex.run("mug = InteractionObject('Mug')\nmug.go_to()\n")
    assert trace.failure is None and trace.goal is not None and trace.goal.total > 0
    assert ex.sim is env.sim
    with pytest.raises(TypeError, match="needs a Simulator"):
        Executor(object())
    with pytest.raises(ValueError, match="unknown mode"):
        ex.run("x = 1", mode="bash")


def test_model_answer_formats_are_accepted(kitchen: World) -> None:
    from icalkit.agents.parsing import extract_code

    answer = "Here is the plan:\n```python\nmug = InteractionObject('Mug')\nmug.go_to()\n```\nDone."
    assert extract_code(answer) == "mug = InteractionObject('Mug')\nmug.go_to()\n"
    trace = executor(kitchen).run(answer)
    assert trace.failure is None and [c.method for c in trace.calls] == ["go_to"]
    steps = parse_flat_plan("Next Plans: Navigation fridge, OpenObject fridge")
    assert [str(s) for s in steps] == ["Navigation Fridge", "OpenObject Fridge"]


def test_noisy_demonstrations_convert_to_working_programs() -> None:
    """The noisy demonstrator's mistakes stay in the program, and the program still works."""
    from icalkit.data_gen.demos import run_episode
    from icalkit.envs.household.env import HouseholdEnv

    env = HouseholdEnv(render_obs=False)
    converted = succeeded = 0
    for type_name in ("Coffee", "Plate Of Toast", "Boil X", "pick_and_place", "Salad"):
        for seed in (0, 1):
            task, world = registry_task(type_name, seed)
            episode, _ = run_episode(env, task, "noisy", noise=0.4, seed=seed, keep_frames=False)
            if not episode.success:
                continue
            program = trajectory_to_program(world, episode.steps)
            converted += 1
            succeeded += executor(world).run(program, task).success
    assert converted >= 5
    assert succeeded >= 0.9 * converted


def test_without_oracle_map_only_seen_objects_resolve(kitchen: World) -> None:
    ex = executor(kitchen, oracle_object_map=False)
    unseen = [t for t in ("Toaster", "Mug", "Knife", "Bread", "Plate")
              if not any(o.object_type == t for o in map(ex.sim.world.objects.get, ex.runtime.seen))]
    assert unseen
    trace = ex.run(f"x = InteractionObject('{unseen[0]}')\nx.go_to()\n")
    assert trace.failure.kind == "action"
    assert trace.failure.message == f"No {unseen[0]} has been found."


def test_program_run_on_a_gym_env_counts_in_its_episode_budget() -> None:
    from icalkit.envs.household.env import HouseholdEnv

    task, _ = registry_task("Coffee", 0)
    env = HouseholdEnv(render_obs=True, frame_size=64, max_steps=40)
    first, _ = env.reset(options={"task": task})
    # the mug is in a closed cabinet: navigation succeeds, the pickup fails
    trace = Executor(env).run("mug = InteractionObject('Mug')\nmug.go_to()\nmug.pickup()\n", task)
    used = trace.steps
    assert trace.failure is not None and trace.failure.line == 3
    assert used > 1 and env.sim.steps == used and env.sim.failures == 1
    now = env.observation()  # the program moved the agent: the env shows where it is now
    assert now["text_state"] != first["text_state"] and (now["rgb"] != first["rgb"]).any()
    _, _, _, truncated, info = env.step("Look Up")
    assert info["steps"] == used + 1 and info["failures"] == 1 + (not info["action_success"])
    assert truncated == (used + 1 >= 40)
    env.reset(options={"task": task})
    assert env.sim.steps == 0


def test_flat_plan_repeating_steps_moves_every_instance() -> None:
    world = generate_scene(1, "train", "kitchen", {"Apple": 2, "DiningTable": 1})
    for o in world.objects.values():
        o.is_open = o.type.openable  # every apple reachable without an OpenObject step
    ex = executor(world)
    plan = "PickupObject apple\nPutObject apple DiningTable\n" * 2
    trace = ex.run(plan, mode="flat")
    assert trace.failure is None, trace.failure
    moved = [c.object for c in trace.calls if c.method == "pickup"]
    assert len(set(moved)) == 2 and all(m.startswith("Apple") for m in moved)
    assert all(ex.sim.world.objects[oid].parent.startswith("DiningTable") for oid in moved)
