"""ICAL pairs (``data.ical_pairs``): their prompts are, byte for byte, what ``icalkit ical`` sends for
the same noisy demonstration, and their answers are what ICAL's parsers read and learn from (real
simulator, executor, memory and MiniLM embedder; the model is a scripted test double)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from planner_doubles import ScriptedLLM

from icalkit.data_gen.ical_pairs import explanation, plan_steps, program_summary

ROOT = Path(__file__).resolve().parents[1]


def test_ical_pairs_are_the_prompts_ical_sends_and_teach_answers_it_learns_from(tmp_path):
    from icalkit.commands.finetune import Config
    from icalkit.config import load_config
    from icalkit.data_gen.finetune_data import build_pairs
    from icalkit.data_gen.ical import ICALLearner
    from icalkit.data_gen.ical_pairs import noisy_episode
    from icalkit.data_gen.ical_steps import Prompter, parse_abstraction
    from icalkit.envs.factory import make_env
    from icalkit.envs.household.tasks.sampler import sample_tasks
    from icalkit.memory.embed import SentenceTransformerEmbedder
    from icalkit.memory.example import Example
    from icalkit.memory.example_memory import ExampleMemory

    others = sample_tasks(["Water Plant"], 4, "valid_seen")
    coffee = sample_tasks(["Coffee"], 1, "valid_seen")[0]

    def memory(name: str, same_type: bool = False) -> ExampleMemory:  # ICAL saves what it learns into its own
        mem = ExampleMemory(tmp_path / f"{name}.db", SentenceTransformerEmbedder())
        mem.add_many([Example(task_id=t.task_id, task_type="Water Plant", instruction=t.instruction, success=True,
                              demo_program='cup = InteractionObject("Cup")\ncup.pickup()\n') for t in others])
        if same_type:  # a Coffee example: the pairs never show it (ICAL on a new type has none)
            mem.add(Example(task_id=coffee.task_id, task_type="Coffee", instruction=coffee.instruction, success=True,
                            demo_program='mug = InteractionObject("Mug", object_instance="Mug_9")\nmug.pickup()\n'))
        return mem

    mem = memory("m", same_type=True)
    cfg = load_config(Config, ROOT / "configs/finetune_ical.yaml",
                      ["data.task_types=[Coffee]", "data.heldout_types=[]", "data.n_per_type=2",
                       f"data.memory_path={tmp_path}/m.db", "data.valid_fraction=0.0"])
    stats = build_pairs(cfg.data, tmp_path / "pairs", mem, progress=False)
    assert stats["by_kind"] == {"ical_abstraction": 2, "ical_update": 2}, stats
    env = make_env("household", render_obs=False)
    for line in (tmp_path / "pairs/pairs.jsonl").open():
        rec = json.loads(line)
        abstraction, update = rec["rows"]
        task = next(t for t in sample_tasks(["Coffee"], 2, "train", cfg.data.seed) if t.task_id == rec["task_id"])
        episode = noisy_episode(env, task, cfg.data.seed)
        # ICAL answers first with the update pair's mistaken program, then with the update pair's answer
        right = parse_abstraction(abstraction["completion"]).program
        wrong = abstraction["completion"].replace(right.strip(), update["mistaken_program"].strip())
        llm = ScriptedLLM([wrong, update["completion"]])
        res = ICALLearner(env, memory(f"{task.task_id}-update".replace("/", "_")), Prompter(llm, 512),
                          cfg.data.ical).learn(episode)
        assert llm.prompts == [abstraction["prompt"], update["prompt"]]  # byte for byte
        assert "Solved examples:\n### Example 1" in abstraction["prompt"][-1]["content"]  # retrieved, other types
        assert "Mug_9" not in abstraction["prompt"][-1]["content"]
        assert res.status == "learned" and res.feedbacks == 1 and not res.first_attempt_success
        # and the abstraction pair's own answer is learned at once
        llm = ScriptedLLM([abstraction["completion"]])
        learned = memory(f"{task.task_id}-abstraction".replace("/", "_"))
        res = ICALLearner(env, learned, Prompter(llm, 512), cfg.data.ical).learn(episode)
        assert llm.prompts == [abstraction["prompt"]]
        assert res.status == "learned" and res.first_attempt_success and res.attempts == 1
        stored = learned.get(res.example_id)
        assert stored.summary == program_summary(right) and stored.plan == plan_steps(right)
        assert abstraction["completion"].startswith("Program:\n```python\n")  # the program first


def test_plan_and_explanation_follow_the_program():
    program = ('mug = InteractionObject("Mug", object_instance="Mug_1")\n'
               'machine = InteractionObject("CoffeeMachine")\n'
               'mug.pickup_and_place(machine)\nmug.change_state("filled", True)\nmachine.toggle_on()\n')
    assert plan_steps(program + "machine.go_to()\n") == ["Put the Mug in or on the CoffeeMachine", "Turn on the CoffeeMachine"]
    assert program_summary(program) == "2 steps, from 'Put the Mug in or on the CoffeeMachine' to 'Turn on the CoffeeMachine'."
    wrong = program.replace('"Mug", object_instance="Mug_1"', '"Cup"')
    said = explanation("Code failed at line 3: No Cup has been found.\nmore", wrong, program)
    assert said == ("Code failed at line 3: No Cup has been found. The new program uses "
                    '`mug = InteractionObject("Mug", object_instance="Mug_1")` instead of `mug = InteractionObject("Cup")`.')
    assert explanation("", program.replace("machine.toggle_on()\n", ""), program).endswith(
        "adds `machine.toggle_on()`.")


def test_ical_pairs_settings_are_checked():
    from icalkit.data_gen.finetune_data import PairConfig
    from icalkit.data_gen.ical_settings import ICALSettings

    with pytest.raises(ValueError, match="k must be >= 0"):
        PairConfig(ical_pairs=True, ical=ICALSettings(k=-1)).validate()
    PairConfig(ical_pairs=False, ical=ICALSettings(k=-1)).validate()  # not read without ICAL pairs
    assert PairConfig(k=0, ical_pairs=True).retrieves() and not PairConfig(k=0).retrieves()
