"""ICAL example ids and provenance say which mode, model and prompts made each example.

Real simulator, executor, memory and embedder; the model is the scripted double of test_ical.py
(two of them with different names, to play two models writing into one memory).
"""

from __future__ import annotations

from test_ical import ScriptedLLM, answer, coffee, demos, embedder, learner, memory, program_of  # noqa: F401

from icalkit.data_gen.ical import example_key, model_label, run_ical


class OtherModel(ScriptedLLM):
    model_name = "another-model"


def test_second_model_adds_its_own_example(demos, memory, tmp_path):  # noqa: F811
    noisy, expert = coffee(demos)
    first = run_ical(learner(memory, ScriptedLLM([answer(program_of(expert))])), [noisy], tmp_path / "a",
                     progress=False)[0]
    second = run_ical(learner(memory, OtherModel([answer(program_of(expert))])), [noisy], tmp_path / "b",
                      progress=False)[0]
    assert first["status"] == second["status"] == "learned"
    assert first["example_id"] != second["example_id"] and len(memory) == 2
    assert memory.get(first["example_id"]).provenance.model == "scripted-test-double"
    assert memory.get(second["example_id"]).provenance.model == "another-model"


def test_no_model_named_when_none_was_asked(demos, memory, tmp_path):  # noqa: F811
    noisy, _ = coffee(demos)
    llm = ScriptedLLM([])
    rec = run_ical(learner(memory, llm, abstraction=False), [noisy], tmp_path, progress=False)[0]
    assert rec["status"] == "learned" and llm.prompts == []
    ex = memory.get(rec["example_id"])
    assert ex.provenance.model == "" and ex.provenance.prompt_version == ""
    # the same demonstration through the same mode is the same example, whichever model is loaded
    again = run_ical(learner(memory, OtherModel([]), abstraction=False), [noisy], tmp_path / "again",
                     progress=False)[0]
    assert again["example_id"] == rec["example_id"] and len(memory) == 1


def test_example_key_separates_what_made_the_example():
    base = example_key("ical", "m", "ical_abstraction@v1-abc", "demo/1")
    assert base == example_key("ical", "m", "ical_abstraction@v1-abc", "demo/1")
    variants = [example_key("ical-noabs", "m", "ical_abstraction@v1-abc", "demo/1"),
                example_key("ical", "m2", "ical_abstraction@v1-abc", "demo/1"),
                example_key("ical", "m", "ical_abstraction@v2-def", "demo/1"),
                example_key("ical", "m", "ical_abstraction@v1-abc", "demo/2"),
                example_key("ical", "m", "ical_abstraction@v1-abc", "demo/1", relabeled=True),
                example_key("ical", "", "ical_abstraction@v1-abc", "demo/1")]
    assert len({base, *variants}) == 7


def test_model_label_names_the_adapter():
    class Adapted(ScriptedLLM):
        def cache_identity(self):
            return {"backend": "hf", "model": "/models/base", "adapter": "/runs/lora"}

    assert model_label(ScriptedLLM([])) == "scripted-test-double"
    assert model_label(Adapted([])) == "/models/base+/runs/lora"
