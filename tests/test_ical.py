"""ICAL learning loop: parsing and re-asks, the feedback loop, saving, ablations, resumption.

The model is either a real one (a tiny random Llama with SmolLM2's tokenizer; SmolLM2 itself in
the slow test) or :class:`ScriptedLLM`, a test double of the *model only* that returns canned
texts so that each parsing and control path is exercised deterministically. The simulator,
executor, feedback, memory and embedder are the real ones.
"""

from __future__ import annotations

import copy
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from icalkit.agents.feedback import HumanFeedback
from icalkit.config import ConfigError, load_config
from icalkit.data_gen.demos import run_episode
from icalkit.data_gen.ical import ICALLearner, ICALSettings, example_key, read_results, run_ical
from icalkit.data_gen.ical_steps import (
    Abstraction,
    Prompter,
    parse_abstraction,
    parse_update,
    predicted_changes,
)
from icalkit.data_gen.programs import ReplayMismatch, trajectory_to_program
from icalkit.envs.factory import make_env
from icalkit.envs.household.scene import build_world
from icalkit.envs.household.tasks.sampler import sample_tasks
from icalkit.envs.household.tasks.task import Task
from icalkit.memory.embed import SentenceTransformerEmbedder
from icalkit.memory.example_memory import ExampleMemory
from icalkit.models.llm.base import LLM, Generation, finish_text

ROOT = Path(__file__).resolve().parents[1]
MALFORMED = {
    "empty": "",
    "missing_sections": "Summary: make coffee\nThe rest is left as an exercise.",
    "truncated_json": '{"summary": "make coffee", "plan": "1. go", "program": "mug = Interac',
    "garbage": "@@@ ### \x00\x01 lorem ipsum }{ ```",
    "program_without_api": "Summary: s\nPlan:\n1. a\nProgram:\n```python\nprint('hi')\n```",
}


class ScriptedLLM(LLM):
    """Test double of the model: answers from a list of texts or a function of the messages."""

    backend, model_name = "scripted", "scripted-test-double"

    def __init__(self, answers) -> None:
        self.answers, self.prompts = answers, []

    def _generate(self, prompts, params):
        out = []
        for p in prompts:
            self.prompts.append(p)
            text = self.answers(p) if callable(self.answers) else self.answers[min(len(self.prompts), len(self.answers)) - 1]
            text, _ = finish_text(text, params)  # stop strings and loops, as every backend returns its text
            out.append(Generation([text], 100, 50, 0.01, self.model_name, self.backend))
        return out


def answer(program: str, comments: str = "1. A mug must be clean before coffee.") -> str:
    return (f"Summary: do the task.\nAbstracted State: Mug_1: dirty=True\nPlan:\n1. first\n2. then\n"
            f"Abstraction Comments:\n{comments}\nProgram:\n```python\n{program}```\n")


def update_answer(program: str) -> str:
    return (f"Explanation: The mug was never filled, so the coffee machine must be used.\n"
            f"Plan:\n1. fill the mug\nProgram:\n```python\n{program}```\n")


@pytest.fixture(scope="module")
def demos() -> dict[str, dict]:
    """Expert and noisy episodes of one Coffee and one Water Plant task (render off)."""
    env = make_env("household", render_obs=False)
    out = {}
    for task in sample_tasks(["Coffee", "Water Plant"], 1, "train", 0):
        for who in ("expert", "noisy"):
            ep, _ = run_episode(env, task, who, noise=0.2, seed=1, keep_frames=False)
            out[ep.episode_id] = json.loads(ep.to_json())
    return out


@pytest.fixture(scope="module")
def embedder():
    return SentenceTransformerEmbedder()


@pytest.fixture
def memory(tmp_path, embedder):
    return ExampleMemory(tmp_path / "memory.db", embedder)


def program_of(ep: dict) -> str:
    return trajectory_to_program(build_world(Task.from_dict(ep["task"])), ep["steps"])


def partial(program: str) -> str:
    """The program up to (excluding) its second action: runs, but does not finish the task."""
    lines, out, actions = program.splitlines(), [], 0
    for line in lines:
        if "InteractionObject(" not in line:
            actions += 1
            if actions == 2:
                break
        out.append(line)
    return "\n".join(out) + "\n"


def learner(memory, llm, feedback_fn=None, **settings) -> ICALLearner:
    prompter = Prompter(llm) if llm is not None else None
    return ICALLearner(make_env("household", render_obs=False), memory, prompter, ICALSettings(**settings),
                       feedback_fn)


def coffee(demos) -> tuple[dict, dict]:
    return demos["train/coffee/0-00000/noisy"], demos["train/coffee/0-00000/expert"]


def user_text(messages) -> str:
    return "\n".join(m["content"] for m in messages if m["role"] == "user")


# -- parsing ---------------------------------------------------------------------------------
def test_parse_abstraction_markdown_and_json():
    prog = 'mug = InteractionObject("Mug")\nmug.pickup()\nmug.change_state("holding", True)\n'
    md = f"**Summary**: get mug\n## Plan\n1. go\n2. pick\n**Program**:\n```python\n{prog}```"
    a = parse_abstraction(md)
    assert a.summary == "get mug" and a.plan == ["go", "pick"] and a.program == prog
    assert a.predicted_state_changes == ['mug.change_state("holding", True)']
    js = json.dumps({"summary": "get mug", "plan": "1. go", "program": prog})
    assert parse_abstraction(js).program.strip() == prog.strip()


def test_parse_update_keeps_previous_and_adds_lesson():
    prev = Abstraction(program="x", summary="old summary", plan=["a"], comments=["c1"])
    new = parse_update(update_answer('m = InteractionObject("Mug")\n'), prev)
    assert new.summary == "old summary" and new.plan == ["fill the mug"]
    assert new.comments[0] == "c1" and "coffee machine" in new.comments[-1]
    assert predicted_changes("a.change_state('dirty', False)\nb.pickup()") == ["a.change_state('dirty', False)"]


def test_demo_that_no_longer_replays_is_recorded_not_crashed(demos, memory, tmp_path):
    noisy = copy.deepcopy(coffee(demos)[0])
    k = next(i for i, st in enumerate(noisy["steps"]) if st["action"] == "Pickup" and st["success"])
    noisy["steps"][k]["success"] = False  # as if recorded on another simulator version
    with pytest.raises(ReplayMismatch, match=f"step {k} \\(Pickup .*\\) was recorded as a failure but succeeds now"):
        program_of(noisy)
    llm = ScriptedLLM([])
    (rec,) = run_ical(learner(memory, llm), [noisy], tmp_path / "run", progress=False)
    assert rec["status"] == "bad_demo" and noisy["episode_id"] in rec["error"] and "collect it again" in rec["error"]
    assert rec["usage"]["calls"] == 0 and len(memory) == 0 and llm.prompts == []


@pytest.mark.parametrize("kind", sorted(MALFORMED))
def test_malformed_output_reasks_once_then_records_failure(kind, demos, memory, tmp_path):
    llm = ScriptedLLM([MALFORMED[kind]])
    records = run_ical(learner(memory, llm), [coffee(demos)[0]], tmp_path / "run", progress=False)
    (rec,) = records
    assert rec["status"] == "parse_failed" and rec["usage"]["calls"] == 2
    assert rec["error"] and rec["attempts"] == 0 and len(memory) == 0
    assert "could not be used" in user_text(llm.prompts[1]) and rec["error"] in user_text(llm.prompts[1])
    assert read_results(tmp_path / "run" / "results.jsonl") == records


# -- the loop with canned answers ------------------------------------------------------------
def test_canned_expert_program_is_saved_with_provenance(demos, memory, tmp_path):
    noisy, expert = coffee(demos)
    prog = program_of(expert) + 'mug.change_state("filled", True)\n'
    records = run_ical(learner(memory, ScriptedLLM([answer(prog)])), [noisy], tmp_path, progress=False)
    rec = records[0]
    assert rec["status"] == "learned" and rec["attempts"] == 1 and rec["usage"]["calls"] == 1
    ex = memory.get(rec["example_id"])
    assert ex.revised_program == prog and ex.demo_program == program_of(noisy)
    assert ex.provenance.model == "scripted-test-double" and ex.provenance.demo_id == noisy["episode_id"]
    assert ex.provenance.prompt_version.startswith("ical_abstraction@v1-") and ex.provenance.source == "kinesthetic"
    assert ex.summary == "do the task." and ex.plan == ["first", "then"]
    assert ex.abstraction_comments == ["A mug must be clean before coffee."]
    assert ex.predicted_state_changes == ['mug.change_state("filled", True)']
    assert any(c["attribute"] == "filled" and c["after"] for c in ex.observed_changes)
    assert ex.stats.env_steps > 0 and ex.stats.attempts == 1 and ex.success
    assert "Mug" in " ".join(ex.filtered_state) and ex.dialogue


def test_feedback_update_fixes_program(demos, memory, tmp_path):
    noisy, expert = coffee(demos)
    llm = ScriptedLLM([answer(partial(program_of(expert))), update_answer(program_of(expert))])
    rec = run_ical(learner(memory, llm), [noisy], tmp_path, progress=False)[0]
    assert rec["status"] == "learned" and rec["attempts"] == 2 and rec["feedbacks"] == 1
    assert not rec["first_attempt_success"] and rec["stop_reason"] == "success"
    assert "The task is not done yet" in user_text(llm.prompts[1])
    ex = memory.get(rec["example_id"])
    assert ex.feedback_history[0]["feedback"].startswith("The task is not done yet")
    assert "never filled" in ex.explanation and "coffee machine" in ex.abstraction_comments[-1]
    assert any(p.startswith("ical_update@v1-") for p in rec["prompt_ids"])


def test_repeated_error_stops_early(demos, memory, tmp_path):
    noisy, _ = coffee(demos)
    bad = 'mug = InteractionObject("Mug")\nmug.slice()\n'
    llm = ScriptedLLM([answer(bad), update_answer(bad)])
    rec = run_ical(learner(memory, llm), [noisy], tmp_path, progress=False)[0]
    assert rec["status"] == "failed" and rec["stop_reason"] == "repeated error"
    assert rec["feedbacks"] == 1 and rec["attempts"] == 2 and rec["usage"]["calls"] == 2
    assert "Code failed at line 2" in rec["error"] and len(memory) == 0


def test_update_parse_failure_is_recorded(demos, memory, tmp_path):
    noisy, expert = coffee(demos)
    llm = ScriptedLLM([answer(partial(program_of(expert))), "no idea", "still no idea"])
    rec = run_ical(learner(memory, llm), [noisy], tmp_path, progress=False)[0]
    assert rec["status"] == "failed" and rec["stop_reason"] == "update parse failure"
    assert rec["usage"]["calls"] == 3 and "missing section" in rec["error"]


def test_ablations_hitl_off_and_abstraction_off(demos, memory, tmp_path):
    noisy, expert = coffee(demos)
    llm = ScriptedLLM([answer(partial(program_of(expert)))])
    rec = run_ical(learner(memory, llm, hitl=False), [noisy], tmp_path / "a", progress=False)[0]
    assert rec["status"] == "failed" and rec["feedbacks"] == 0 and rec["usage"]["calls"] == 1
    llm = ScriptedLLM([])  # never called: the raw program succeeds on its own
    rec = run_ical(learner(memory, llm, abstraction=False), [noisy], tmp_path / "b", progress=False)[0]
    assert rec["raw_success"] and rec["status"] == "learned" and llm.prompts == []
    assert memory.get(rec["example_id"]).revised_program == program_of(noisy)


def test_raw_demos_baseline_needs_no_llm(demos, memory, tmp_path):
    noisy = [ep for ep in demos.values() if ep["demonstrator"] == "noisy"]
    records = run_ical(learner(memory, None, raw_demos=True), noisy, tmp_path, progress=False)
    assert len(memory) == len(noisy) == 2 and all(r["usage"]["calls"] == 0 for r in records)
    for ex in memory:
        assert ex.provenance.source == "raw-demo" and ex.revised_program == "" and ex.demo_program


def test_pruned_raw_demos_drop_detours_and_still_solve_their_task(demos, memory, tmp_path):
    """prune=true: the stored program is shorter than the noisy one and the executor still solves the
    demonstration's own task with it (prune_program itself: tests/test_prune.py)."""
    from icalkit.data_gen.ical_steps import execute

    noisy = [ep for ep in demos.values() if ep["demonstrator"] == "noisy"]
    records = run_ical(learner(memory, None, raw_demos=True, prune=True), noisy, tmp_path, progress=False)
    env = make_env("household", render_obs=False)
    for ex, rec in zip(sorted(memory, key=lambda e: e.task_id), sorted(records, key=lambda r: r["task_id"]), strict=True):
        assert rec["status"] == "learned" and rec["attempts"] > 1
        assert ex.example_id == example_key("raw-pruned", "", "", ex.provenance.demo_id)  # never the raw one's
        assert len(ex.revised_program.splitlines()) == len(ex.demo_program.splitlines()) - rec["pruned_lines"]
        assert execute(env, Task.from_dict(demos[ex.provenance.demo_id]["task"]), ex.revised_program).success
    assert sum(r["pruned_lines"] for r in records) > 0  # the noisy demonstrations had detours
    with pytest.raises(ValueError, match="raw_demos"):
        ICALSettings(prune=True).check()


def test_human_feedback_mode(demos, memory, tmp_path):
    noisy, expert = coffee(demos)
    shown: list[str] = []
    human = HumanFeedback(input_fn=lambda prompt: "Put the mug in the coffee machine and turn it on.",
                          output_fn=shown.append)
    llm = ScriptedLLM([answer(partial(program_of(expert))), update_answer(program_of(expert))])
    fb = lambda run, env: human(run.trace, env.sim)  # noqa: E731
    rec = run_ical(learner(memory, llm, feedback_fn=fb), [noisy], tmp_path, progress=False)[0]
    assert rec["status"] == "learned"
    assert "Put the mug in the coffee machine" in user_text(llm.prompts[1])
    assert any(s.startswith("Automatic feedback") for s in shown)
    assert memory.get(rec["example_id"]).feedback_history[0]["feedback"].startswith("Put the mug")


def test_memory_grows_and_is_retrieved_during_the_run(demos, memory, tmp_path):
    eps = [demos["train/water_plant/0-00000/noisy"], coffee(demos)[0]]
    llm = ScriptedLLM(lambda msgs: answer(echo_program(msgs)))
    records = run_ical(learner(memory, llm), eps, tmp_path, progress=False)
    assert [r["status"] for r in records] == ["learned", "learned"]
    assert "(no examples yet)" in user_text(llm.prompts[0])
    assert "### Example 1" in user_text(llm.prompts[1])


def echo_program(messages) -> str:
    """The demonstration program shown in an abstraction prompt (an identity 'revision')."""
    text = user_text(messages).split("useless steps:\n```python\n", 1)[1]
    return text.split("\n```", 1)[0] + "\n"


# -- resumption after a kill -----------------------------------------------------------------
RESUME_SCRIPT = """
import json, sys, time
sys.path.insert(0, {tests!r})
from test_ical import ScriptedLLM, answer, echo_program, learner
from icalkit.data_gen.demos import read_episodes
from icalkit.data_gen.ical import run_ical
from icalkit.memory.embed import SentenceTransformerEmbedder
from icalkit.memory.example_memory import ExampleMemory

def slow(messages):
    time.sleep({delay})
    return answer(echo_program(messages))

memory = ExampleMemory({mem!r}, SentenceTransformerEmbedder())
run_ical(learner(memory, ScriptedLLM(slow)), read_episodes({demos!r}), {out!r}, progress=False)
"""


def test_resume_after_kill(demos, tmp_path, embedder):
    noisy = [ep for ep in demos.values() if ep["demonstrator"] == "noisy"]
    demos_file = tmp_path / "episodes.jsonl"
    demos_file.write_text("".join(json.dumps(ep) + "\n" for ep in noisy))
    out, mem = tmp_path / "run", str(tmp_path / "memory.db")
    script = RESUME_SCRIPT.format(tests=str(ROOT / "tests"), delay=2.0, mem=mem, demos=str(demos_file), out=str(out))
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false"}
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(script)], cwd=ROOT, env=env)
    results = out / "results.jsonl"
    deadline = time.time() + 120
    while time.time() < deadline and not (results.exists() and results.read_text().count("\n") >= 1):
        time.sleep(0.2)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    first = read_results(results)
    assert len(first) == 1 and first[0]["status"] == "learned"  # killed while the 2nd demo was in flight
    memory = ExampleMemory(mem, embedder)
    assert len(memory) == 1
    llm = ScriptedLLM(lambda msgs: answer(echo_program(msgs)))
    records = run_ical(learner(memory, llm), noisy, out, progress=False)
    assert [r["demo_id"] for r in records] == [ep["episode_id"] for ep in noisy]
    assert records[0] == first[0] and len(llm.prompts) == 1  # only the unfinished demo was redone
    assert len(memory) == 2 and len({ex.example_id for ex in memory}) == 2


def test_example_saved_before_a_kill_is_not_duplicated(demos, memory, tmp_path):
    """A kill between the memory write and the results line must not store the example twice."""
    noisy, expert = coffee(demos)
    learn = learner(memory, ScriptedLLM([answer(program_of(expert))]))
    first = learn.learn(noisy)  # processed, but its results line "never written"
    again = run_ical(learn, [noisy], tmp_path, progress=False)[0]
    assert first.example_id == again["example_id"] and len(memory) == 1


# -- a real model ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tiny_llm():
    """A random 2-layer Llama with SmolLM2's tokenizer and chat template (real generation)."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from icalkit.models.llm.convert import default_model_dir
    from icalkit.models.llm.hf import HFLLM

    torch.set_num_threads(1)
    tok = AutoTokenizer.from_pretrained(default_model_dir())
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=8192,
                      bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    return HFLLM.from_model(LlamaForCausalLM(cfg).eval(), tok, name="tiny-llama", chat_template=True)


def truncated_demo(ep: dict) -> dict:
    """The demonstration cut short: its program runs but does not finish the task."""
    from icalkit.data_gen.ical_steps import execute

    env, task = make_env("household", render_obs=False), Task.from_dict(ep["task"])
    for frac in (0.5, 0.4, 0.3, 0.2, 0.1):
        cut = {**ep, "episode_id": ep["episode_id"] + "-cut", "steps": ep["steps"][: int(len(ep["steps"]) * frac)]}
        program = program_of(cut)
        if program.strip() and not execute(env, task, program).success:
            return cut
    raise AssertionError("no prefix of the demonstration leaves the task unfinished")


def test_real_tiny_model_full_iteration(demos, memory, tmp_path, tiny_llm):
    noisy, _ = coffee(demos)
    cut = truncated_demo(noisy)
    learn = ICALLearner(make_env("household", render_obs=False), memory, Prompter(tiny_llm, max_new_tokens=24),
                        ICALSettings())
    rec = run_ical(learn, [cut], tmp_path / "abs", progress=False)[0]
    assert rec["status"] == "parse_failed" and rec["usage"]["calls"] == 2  # random weights: no sections
    assert rec["usage"]["completion_tokens"] > 0 and rec["usage"]["prompt_tokens"] > 500
    learn.settings = ICALSettings(abstraction=False)
    rec = run_ical(learn, [cut], tmp_path / "noabs", progress=False)[0]
    assert not rec["raw_success"] and rec["attempts"] == 1 and rec["feedbacks"] == 1
    assert rec["status"] == "failed" and rec["stop_reason"] == "update parse failure"
    assert rec["usage"]["calls"] == 2 and rec["prompt_ids"][0].startswith("ical_update@v1-")


@pytest.mark.slow
def test_smollm2_full_iteration(demos, memory, tmp_path):
    """The real default model on a cut demonstration: every stage it reaches is recorded."""
    import torch

    from icalkit.models.llm.hf import HFLLM

    torch.set_num_threads(1)
    noisy, _ = coffee(demos)
    learn = ICALLearner(make_env("household", render_obs=False), memory,
                        Prompter(HFLLM(device="cpu"), max_new_tokens=256), ICALSettings(n_feedbacks=2))
    cut = truncated_demo(noisy)
    rec = run_ical(learn, [cut], tmp_path / "abs", progress=False)[0]
    assert rec["usage"]["calls"] >= 1 and rec["usage"]["completion_tokens"] > 0
    assert rec["status"] in ("learned", "failed", "parse_failed")
    assert (rec["attempts"] >= 1) == (rec["status"] != "parse_failed")
    assert len(memory) == (rec["status"] == "learned")
    learn.settings = ICALSettings(abstraction=False, n_feedbacks=1)  # execution -> feedback -> update
    rec = run_ical(learn, [cut], tmp_path / "noabs", progress=False)[0]
    assert rec["feedbacks"] == 1 and rec["usage"]["calls"] in (1, 2)
    assert rec["stop_reason"] in ("success", "feedback budget", "update parse failure")


# -- config ----------------------------------------------------------------------------------
def test_shipped_config_and_errors(tmp_path):
    from icalkit.commands.ical import Config

    cfg = load_config(Config, ROOT / "configs" / "ical.yaml")
    assert cfg.n_feedbacks == 5 and cfg.settings().mode() == "ical"
    assert load_config(Config, None, ["raw_demos=true"]).settings().mode() == "raw"
    for overrides, needle in ((["feedback=robot"], "feedback"), (["n_feedbacks=-1"], "n_feedbacks"),
                              (["hitl=false", "abstraction=false"], "raw_demos"), (["bogus=1"], "bogus"),
                              (["llm.backend=gpt"], "llm.backend"), (["demonstrators=[robot]"], "demonstrators"),
                              (["task_types=[Teleport]"], "Teleport"), (["raw_demos=true", "relabel=true"], "relabel")):
        with pytest.raises(ConfigError, match=needle):
            load_config(Config, None, overrides)


def test_cli_reports_missing_demos(tmp_path):
    from icalkit.cli import main

    with pytest.raises(SystemExit, match="no demonstrations"):
        main(["ical", f"demos_dir={tmp_path}", f"out_dir={tmp_path}/out", "wandb.enabled=false"])


# -- the same loop against an OpenAI-compatible server ---------------------------------------
class _EchoAPI(BaseHTTPRequestHandler):
    """OpenAI-compatible chat endpoint answering abstraction prompts with the shown program."""

    posts = 0

    def log_message(self, *args):
        pass

    def _send(self, body):
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self._send({"object": "list", "data": [{"id": "echo", "object": "model"}]})

    def do_POST(self):
        req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).posts += 1
        self._send({"id": "x", "object": "chat.completion", "created": 0, "model": "echo",
                    "choices": [{"index": 0, "finish_reason": "stop", "message": {
                        "role": "assistant", "content": answer(echo_program(req["messages"]))}}],
                    "usage": {"prompt_tokens": 100, "completion_tokens": 50, "total_tokens": 150}})


def test_cli_with_openai_server_and_cached_rerun(demos, tmp_path):
    from icalkit.cli import main

    server = ThreadingHTTPServer(("127.0.0.1", 0), _EchoAPI)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    demos_dir = tmp_path / "demos"
    demos_dir.mkdir()
    (demos_dir / "episodes.jsonl").write_text("".join(json.dumps(ep) + "\n" for ep in demos.values()))
    common = [f"demos_dir={demos_dir}", "llm.backend=openai", "llm.model=echo", "wandb.enabled=false",
              f"llm.base_url=http://127.0.0.1:{server.server_address[1]}/v1", "env.render=false",
              f"llm.cache_path={tmp_path / 'cache.sqlite'}", "memory.image_embedder.kind=none"]
    try:
        for run in ("first", "rerun"):
            out = tmp_path / run
            assert main(["ical", *common, f"out_dir={out}", f"memory.path={out / 'memory.db'}"]) == 0
            records = read_results(out / "results.jsonl")
            assert [r["status"] for r in records] == ["learned", "learned"]
            assert json.loads((out / "summary.json").read_text())["yield"] == 1.0
            assert (out / "ical_yield.png").is_file() and (out / "ical_per_type.md").is_file()
        assert _EchoAPI.posts == 2  # the re-run was answered from the response cache
        assert all(r["usage"]["cached"] == r["usage"]["calls"] == 1 for r in records)
    finally:
        server.shutdown()
