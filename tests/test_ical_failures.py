"""ICAL on a demonstration the model cannot improve: relabeling the partial run, keeping the verified
demonstration (``keep_demo``), and cutting a looping answer (``loop_repeats``).

Real simulator, executor, memory and embedder; the model is the scripted double of test_ical.py.
"""

from __future__ import annotations

import copy

import pytest
from test_ical import (  # noqa: F401
    MALFORMED,
    ScriptedLLM,
    answer,
    coffee,
    demos,
    embedder,
    learner,
    memory,
    partial,
    program_of,
)

from icalkit.data_gen.ical import ICALLearner, ICALSettings, run_ical
from icalkit.data_gen.ical_report import summarize
from icalkit.data_gen.ical_steps import Prompter
from icalkit.envs.factory import make_env


def test_relabel_stores_flagged_example(demos, memory, tmp_path):  # noqa: F811
    noisy, expert = coffee(demos)
    relabel = "Instruction: Pick up the mug.\nSummary: picks up a mug.\nPlan:\n1. pick up the mug"
    llm = ScriptedLLM([answer(partial(program_of(expert))), relabel])
    rec = run_ical(learner(memory, llm, relabel=True, n_feedbacks=0), [noisy], tmp_path, progress=False)[0]
    assert rec["status"] == "relabeled" and rec["stop_reason"] == "feedback budget"
    ex = memory.get(rec["example_id"])
    assert ex.relabeled and ex.instruction == "Pick up the mug." and ex.plan == ["pick up the mug"]
    assert any(p.startswith("ical_relabel@v1-") for p in rec["prompt_ids"])


def test_keep_demo_stores_the_verified_demonstration(demos, memory, tmp_path):  # noqa: F811
    """``keep_demo``: an unreadable answer, or a revision still failing after the feedback rounds,
    leaves the demonstration's own program in the memory when it replays to success (one example
    per demonstration, without the model's output); a demonstration that fails too is not kept."""
    noisy, expert = coffee(demos)
    ids, recs = set(), []
    for text, after in ((MALFORMED["missing_sections"], "parse_failed"), (answer(partial(program_of(expert))), "failed")):
        rec = run_ical(learner(memory, ScriptedLLM([text]), keep_demo=True, relabel=True, n_feedbacks=0), [noisy],
                       tmp_path / after, progress=False)[0]
        assert (rec["status"], rec["kept_after"], rec["raw_success"], rec["success"]) == ("kept_demo", after, True, False)
        assert rec["error"]  # why the model's revision was not kept
        ex = memory.get(rec["example_id"])
        assert ex.success and not ex.revised_program and ex.demo_program == program_of(noisy)
        assert (ex.provenance.source, ex.provenance.model, ex.provenance.prompt_version) == ("raw-demo", "", "")
        ids.add(rec["example_id"])
        recs.append(rec)
    assert len(ids) == 1 and len(memory) == 1  # the same demonstration is kept once
    totals = summarize(recs)  # the run's summary counts kept demonstrations apart from learned examples
    assert (totals["learned"], totals["kept_demos"], totals["kept_after"]) == (0, 2, {"parse_failed": 1, "failed": 1})
    broken = copy.deepcopy(noisy)
    broken["episode_id"], broken["steps"] = "train/coffee/0-00000/noisy-cut", noisy["steps"][:4]
    rec = run_ical(learner(memory, ScriptedLLM([MALFORMED["missing_sections"]]), keep_demo=True), [broken],
                   tmp_path / "broken", progress=False)[0]
    assert (rec["status"], rec["raw_success"], rec["kept_after"]) == ("parse_failed", False, "") and len(memory) == 1
    with pytest.raises(ValueError, match="keep_demo"):
        ICALSettings(keep_demo=True, raw_demos=True).check()


def test_loop_repeats_cuts_a_looping_answer(demos, memory, tmp_path):  # noqa: F811
    """A weak model loops inside the program until its token limit; ``loop_repeats`` cuts the answer
    at the third repetition of the block (the re-ask too), and the demonstration is kept."""
    noisy, _ = coffee(demos)
    looping = "Program:\n```python\nfaucet = InteractionObject(\"Faucet\")\n" + "faucet.toggle_on()\nfaucet.toggle_off()\n" * 40
    llm = ScriptedLLM([looping])
    prompter = Prompter(llm, loop_repeats=3)
    res = ICALLearner(make_env("household", render_obs=False), memory, prompter,
                      ICALSettings(keep_demo=True)).learn(noisy)
    assert (res.status, res.kept_after) == ("kept_demo", "parse_failed")
    assert res.last_output.count("faucet.toggle_on()") == 3 and res.last_output.endswith("faucet.toggle_off()\n")
    assert len(llm.prompts) == 2  # the answer and its one re-ask, each cut
