"""Revision and review pairs built from a retrieved copy: their prompts are, byte for byte, what the
deployed retrieve-run-revise planner sends (real simulator, executor, memory and MiniLM embedder;
the model is a scripted test double)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from planner_doubles import ScriptedLLM

from icalkit.agents.executor import Executor
from icalkit.data_gen.finetune_data import PairConfig, build_pairs

ROOT = Path(__file__).resolve().parents[1]


def test_copy_revision_pairs_are_the_deployed_first_replan(tmp_path):
    """``retrieved_copy``: the mistaken program is the retrieved example's program grounded as
    ``planner.copy_first`` runs it, and the revision prompt is, byte for byte, the re-plan prompt the
    deployed retrieve-run-revise planner sends after that copy fails; the completion finishes the task."""
    from dataclasses import replace

    from icalkit.agents.llm_session import LLMSession
    from icalkit.agents.planner import Planner
    from icalkit.commands.finetune import Config
    from icalkit.config import load_config
    from icalkit.envs.factory import make_env
    from icalkit.envs.household.scene import build_world
    from icalkit.envs.household.tasks.sampler import sample_tasks
    from icalkit.memory.embed import SentenceTransformerEmbedder
    from icalkit.memory.example import Example
    from icalkit.memory.example_memory import ExampleMemory

    tasks = sample_tasks(["Coffee"], 2, "train")
    present = {o.object_type for t in tasks for o in build_world(t).objects.values()}
    cup = next(c for c in ("Cup", "Bowl", "Pot", "Kettle", "Vase") if c not in present)  # another room's object
    program = (f'mug = InteractionObject("{cup}", object_instance="{cup}_7")\n'
               'machine = InteractionObject("CoffeeMachine", object_instance="CoffeeMachine_3")\n'
               'mug.pickup_and_place(machine)\nmachine.toggle_on()\n')
    mem = ExampleMemory(tmp_path / "m.db", SentenceTransformerEmbedder())
    mem.add_many([Example(task_id=t.task_id, task_type="Coffee", instruction=t.instruction, demo_program=program)
                  for t in tasks])
    cfg = load_config(Config, ROOT / "configs/finetune.yaml",
                      ["data.task_types=[Coffee]", "data.n_per_type=2", "data.k=1", f"data.memory_path={tmp_path}/m.db",
                       "data.mistakes=[skip_open, retrieved_copy]", "data.planner.precondition_checks=true",
                       "data.valid_fraction=0.0"])
    build_pairs(cfg.data, tmp_path / "pairs", mem, progress=False)
    records = {json.loads(line)["task_id"]: json.loads(line) for line in (tmp_path / "pairs/pairs.jsonl").open()}
    env = make_env("household", render_obs=False)
    for task in tasks:
        (rev,) = [r for r in records[task.task_id]["rows"] if r["kind"] == "revision"]
        assert rev["mistake"] == "retrieved_copy"  # tried before the randomly ordered kinds
        llm = ScriptedLLM(["no program"] * 2)
        deployed = Planner(LLMSession(llm), mem, replace(cfg.data.planner, mode="ical", k=1, max_replans=1,
                                                          ground_ids=True, copy_first=True))
        env.reset(options={"task": task})
        res = deployed.run_episode(task, env)
        assert res.programs[0] == rev["mistaken_program"] and f'"{cup}"' in rev["mistaken_program"]
        assert f"{cup}_7" not in rev["mistaken_program"]  # the example's own ids become classes
        assert llm.prompts[0] == rev["prompt"] and res.errors[0] in rev["prompt"][-1]["content"]
        rest = rev["completion"].split("```python\n")[1].split("```")[0]
        env.reset(options={"task": task})
        replay = Executor(env, deployed.limits)
        assert not replay.run(rev["mistaken_program"], task).success and replay.run(rest, task).success
    with pytest.raises(ValueError, match="needs data.k > 0"):
        PairConfig(mistakes=["retrieved_copy"]).validate()


def test_review_pairs_teach_the_deployed_review_of_a_silent_finish(tmp_path):
    """``data.planner.review_done``: a copy that ends without an error gives a ``review`` pair whose
    prompt is the deployed planner's review prompt (asked whether or not the task is done); its
    completion is the empty program when the copy finished the task, else the rest of the solution."""
    from dataclasses import replace

    from icalkit.agents.feedback import DONE_PROGRAM, REVIEW_TEXT
    from icalkit.agents.llm_session import LLMSession
    from icalkit.agents.planner import Planner
    from icalkit.commands.finetune import Config
    from icalkit.config import load_config
    from icalkit.envs.factory import make_env
    from icalkit.envs.household.tasks.sampler import sample_tasks
    from icalkit.memory.embed import SentenceTransformerEmbedder
    from icalkit.memory.example import Example
    from icalkit.memory.example_memory import ExampleMemory

    tasks = sample_tasks(["Coffee"], 2, "train")  # both mugs start dirty
    rinse = ('sink = InteractionObject("SinkBasin")\nmug.pickup_and_place(sink)\n'
             'faucet = InteractionObject("Faucet")\nfaucet.toggle_on()\nfaucet.toggle_off()\n')
    brew = 'machine = InteractionObject("CoffeeMachine")\nmug.pickup_and_place(machine)\nmachine.toggle_on()\n'
    env = make_env("household", render_obs=False)
    for finished, program in ((True, rinse + brew), (False, brew)):  # the copy ends silently either way
        mem = ExampleMemory(tmp_path / f"{finished}.db", SentenceTransformerEmbedder())
        mem.add_many([Example(task_id="train/coffee/x", task_type="Coffee", instruction="Make coffee",
                              demo_program='mug = InteractionObject("Mug")\n' + program)])
        cfg = load_config(Config, ROOT / "configs/finetune.yaml",
                          ["data.task_types=[Coffee]", "data.n_per_type=2", "data.k=1", "data.valid_fraction=0.0",
                           f"data.memory_path={tmp_path}/{finished}.db", "data.mistakes=[retrieved_copy]",
                           "data.planner.precondition_checks=true", "data.planner.review_done=true"])
        build_pairs(cfg.data, tmp_path / f"pairs{finished}", mem, progress=False)
        for line in (tmp_path / f"pairs{finished}/pairs.jsonl").open():
            rec = json.loads(line)
            (rev,) = [r for r in rec["rows"] if r["kind"] != "plan"]
            assert rev["kind"] == "review" and REVIEW_TEXT in rev["prompt"][-1]["content"]
            assert (DONE_PROGRAM in rev["completion"]) == finished
            task = next(t for t in tasks if t.task_id == rec["task_id"])
            llm = ScriptedLLM([rev["completion"]])
            deployed = Planner(LLMSession(llm), mem, replace(cfg.data.planner, mode="ical", k=1, max_replans=1,
                                                              ground_ids=True, copy_first=True))
            env.reset(options={"task": task})
            res = deployed.run_episode(task, env)
            assert llm.prompts == [rev["prompt"]] and res.errors == [REVIEW_TEXT]
            assert res.success and res.failed_attempts == 0 and len(res.programs) == 2
    with pytest.raises(ValueError, match="review_done"):
        replace(cfg.data.planner, mode="flat").validate()


def test_reground_pairs_teach_the_deployed_replacement_of_the_example_objects(tmp_path):
    """``data.planner.reground``: the ``reground`` pair's prompt is, byte for byte, what the deployed
    planner asks before the copy; its completion (the example's task parameters -> this task's) makes
    the copy solve the task, and the copy without it does not."""
    from dataclasses import replace

    from icalkit.agents.llm_session import LLMSession
    from icalkit.agents.planner import Planner, PlannerConfig
    from icalkit.data_gen.expert import expert_actions
    from icalkit.data_gen.finetune_data import PairBuilder
    from icalkit.data_gen.programs import trajectory_to_program
    from icalkit.envs.factory import make_env
    from icalkit.envs.household.scene import build_world
    from icalkit.envs.household.tasks.registry import TaskSpecError
    from icalkit.envs.household.tasks.sampler import sample_task, task_from_id
    from icalkit.memory.embed import SentenceTransformerEmbedder
    from icalkit.memory.example import Example
    from icalkit.memory.example_memory import ExampleMemory

    cards, task = sample_task("Put All X On Y", 2, "train"), sample_task("Put All X On Y", 1, "train")
    assert task_from_id(cards.task_id).to_dict() == cards.to_dict()  # the example's task, rebuilt from its id
    assert (cards.params["#0"], task.params["#0"]) == ("CreditCard", "Pen")  # both onto the coffee table
    mem = ExampleMemory(tmp_path / "m.db", SentenceTransformerEmbedder())
    mem.add_many([Example(task_id=cards.task_id, task_type=cards.task_type, instruction=cards.instruction,
                          demo_program=trajectory_to_program(build_world(cards), expert_actions(cards)))])
    planner = PlannerConfig(k=1, precondition_checks=True, ground_ids=True, copy_first=True, reground=True, max_replans=0)
    cfg = PairConfig(task_types=["Put All X On Y"], k=1, mistakes=["retrieved_copy"], plan_pairs=False, planner=planner)
    cfg.validate()
    rows = PairBuilder(cfg, mem).build(task).rows
    assert [r["kind"] for r in rows] == ["reground"]  # the re-grounded copy succeeds: no revision left
    assert rows[0]["completion"] == "Replace:\nCreditCard -> Pen"
    env = make_env("household", render_obs=False)
    for answer, solved in ((rows[0]["completion"], True), ("Replace:\n(none)", False)):
        llm = ScriptedLLM([answer])
        env.reset(options={"task": task})
        res = Planner(LLMSession(llm), mem, planner).run_episode(task, env)
        assert llm.prompts == [rows[0]["prompt"]] and res.success == solved
        assert ('"Pen"' in res.programs[0]) == solved and ('"CreditCard"' in res.programs[0]) != solved
    oracle = replace(planner, mode="copy", copy_first=False, reground=False, oracle_reground=True)
    env.reset(options={"task": task})
    res = Planner(None, mem, oracle).run_episode(task, env)  # the pair's target, with no model
    assert res.success and '"Pen"' in res.programs[0] and res.oracle["reground"]
    with pytest.raises(ValueError, match="needs planner.copy_first"):
        replace(planner, copy_first=False).validate()
    with pytest.raises(ValueError, match="oracle_reground re-grounds"):
        replace(oracle, mode="ical").validate()
    with pytest.raises(ValueError, match="list 'retrieved_copy'"):
        replace(cfg, mistakes=["skip_open"]).validate()
    with pytest.raises(TaskSpecError, match="not split/type/seed-index"):
        task_from_id("train/no_such_type/0-00001")
    mem.add_many([Example(task_id="mine/1", task_type=cards.task_type, instruction="Put the cards away",
                          demo_program='c = InteractionObject("CreditCard")\n')])
    other = PairBuilder(cfg, mem).build(sample_task("Put All X On Y", 2, "train"))  # its own example is excluded
    assert "reground" not in {r["kind"] for r in other.rows} and other.dropped["reground_example_task_unknown"] == 1


def test_replacement_answers_are_read_as_untrusted_text():
    """Only lines that replace a class the example uses by one the room shows and the example does
    not use count (a held-out Water Plant answer once turned the example's bottle into its faucet)."""
    from icalkit.agents.grounding import parse_replacements, replace_classes, replacements_text

    used, room = ["CreditCard", "Plate", "Faucet"], ["Pen", "Plate", "Faucet", "Sofa"]
    text = ("Sure.\nReplace:\n- `CreditCard` -> `Pen`\nFaucet -> os.system\nPlate -> Spaceship\nPlate -> Faucet\n"
            "Mug -> Sofa\n")
    assert parse_replacements(text, used, room) == {"CreditCard": "Pen"}
    assert parse_replacements("Replace:\nCreditCard -> Faucet\nCreditCard -> Cup", used, room) == {}
    assert parse_replacements(replacements_text({}), used, room) == {}
    with pytest.raises(ValueError, match="Replace"):
        parse_replacements("CreditCard -> Pen", used, room)
    program = 'a = InteractionObject("Apple", object_instance="Apple_2")\nb = InteractionObject("AppleSliced")\n' \
              'c = InteractionObject("Pineapple")\n'
    assert replace_classes(program, {"Apple": "Tomato"}) == program.replace('"Apple', '"Tomato')
