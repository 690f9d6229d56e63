"""The evaluation harness: splits, methods as configs, worker processes with batched model calls,
resume, reports, and bad input (missing memory, empty split, a worker killed mid-episode).

The model is a real tiny random Llama saved as a folder; the simulator, executor, memory (real
MiniLM embedder) and planner are the real ones.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal

import pytest
from planner_doubles import save_tiny_model
from test_planner import GOOD

from icalkit.cli import main
from icalkit.config import ConfigError
from icalkit.eval.methods import load_method
from icalkit.eval.splits import SplitConfig, load_split, split_path


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return save_tiny_model(tmp_path_factory.mktemp("tiny") / "model")


@pytest.fixture(scope="module")
def memory_path(tmp_path_factory):
    from icalkit.memory.embed import SentenceTransformerEmbedder
    from icalkit.memory.example import Example
    from icalkit.memory.example_memory import ExampleMemory

    path = tmp_path_factory.mktemp("mem") / "m.db"
    mem = ExampleMemory(path, SentenceTransformerEmbedder())
    program = GOOD.split("```python\n")[1].split("```")[0]
    mem.add_many([Example(task_id=f"train/coffee/{i}", task_type="Coffee", instruction=f"Make coffee {i}",
                          revised_program=program, summary="coffee", plan=["mug to machine", "on"])
                  for i in range(6)])
    return path


def method_file(tmp_path, name, memory, mode="ical"):
    path = tmp_path / f"{name}.yaml"
    path.write_text(f"planner: {{mode: {mode}, k: 2, max_replans: 1}}\nmemory: {memory}\n")
    return str(path)


def test_split_is_generated_once_with_reference_lengths_and_initial_counts(tmp_path):
    cfg = SplitConfig(task_types=["Coffee", "Boil X"], n_per_type=1, dir=str(tmp_path))
    tasks = load_split(cfg, "valid_unseen", progress=False)
    assert [t.task.task_type for t in tasks] == ["Coffee", "Boil X"]
    assert all(t.ref_len and t.ref_len > 0 and 0 <= t.init_satisfied < t.init_total for t in tasks)
    path = split_path(cfg, "valid_unseen")
    first = path.read_text()
    assert [t.task.task_id for t in load_split(cfg, "valid_unseen")] == [t.task.task_id for t in tasks]
    assert path.read_text() == first  # read back, not regenerated
    path.write_text("{not json\n")
    with pytest.raises(ValueError, match="damaged"):
        load_split(cfg, "valid_unseen")
    with pytest.raises(ValueError, match="task_types is empty"):
        load_split(SplitConfig(task_types=[], dir=str(tmp_path)), "valid_unseen")


def test_split_dialogues_human_like_and_hand_written(tmp_path, capsys):
    from dataclasses import replace

    from icalkit.envs.household.tasks.hand_written import HUMAN_DIALOGUES, load_human_dialogues

    base = SplitConfig(task_types=["Coffee", "Water Plant"], n_per_type=2, dir=str(tmp_path))
    template = load_split(base, "valid_unseen", progress=False)
    human = load_split(replace(base, dialogues="human"), "valid_unseen", progress=False)
    assert split_path(replace(base, dialogues="human"), "valid_unseen") != split_path(base, "valid_unseen")
    for h, t in zip(human, template, strict=True):  # the same tasks, rooms and start states; other words
        assert (h.task.task_id, h.task.scene_seed, h.task.initial_state, h.ref_len, h.init_satisfied) == \
            (t.task.task_id, t.task.scene_seed, t.task.initial_state, t.ref_len, t.init_satisfied)
        assert h.task.dialogue != t.task.dialogue
        assert t.task.instruction and not h.task.instruction  # no clean goal sentence beside human words
    hand = load_split(replace(base, dialogues=str(HUMAN_DIALOGUES)), "valid_unseen", progress=False)
    written = [d for t in base.task_types for d in [d for d in load_human_dialogues() if d.task_type == t][:2]]
    assert [[tuple(turn) for turn in t.task.dialogue] for t in hand] == [d.dialogue for d in written]
    assert [t.task.task_type for t in hand] == ["Coffee", "Coffee", "Water Plant", "Water Plant"]
    assert all(t.ref_len and t.init_satisfied < t.init_total and not t.task.instruction for t in hand)
    with pytest.raises(ValueError, match="'shakespeare' is neither one of template, human"):
        load_split(replace(base, dialogues="shakespeare"), "valid_unseen")
    one = tmp_path / "one.yaml"
    one.write_text("- {id: c, task_type: Coffee, params: {}, dialogue: [[Commander, coffee please]]}\n")
    with pytest.raises(ValueError, match="holds no dialogue of the task types Boil X"):
        load_split(replace(base, task_types=["Boil X"], dialogues=str(one)), "valid_unseen")
    # the command names a bad dialogue file before any episode runs
    one.write_text("- {id: c, task_type: Coffee, params: {}, dialogue: [[Narrator, coffee please]]}\n")
    assert main(["eval", "methods=[zero_shot]", f"split.dialogues={one}", f"split.dir={tmp_path}",
                 f"out_dir={tmp_path / 'run'}", "wandb.mode=disabled"]) == 2
    assert "config error: split: one.yaml entry 0 ('c'): dialogue must be a list of [Commander|Driver, text] pairs" \
        in capsys.readouterr().err


def test_methods_are_configs_and_unknown_names_list_the_shipped_ones():
    m = load_method("ical@5")
    assert m.name == "ical@5" and m.memory_limit == 5 and m.planner.mode == "ical"
    assert load_method("ical@0").planner.mode == "zero_shot"
    assert load_method("copy").planner.mode == "copy"
    with pytest.raises(ConfigError, match="zero_shot"):
        load_method("no_such_method")


def test_a_method_file_can_derive_from_another_and_give_only_what_differs(tmp_path):
    served = load_method("copy_next_serve")
    (tmp_path / "mine.yaml").write_text(
        "base: copy_next_serve\nmemory: other.db\nretriever: runs/retriever/other\nplanner: {room_fit: 7}\n")
    mine = load_method(str(tmp_path / "mine.yaml"))
    assert mine.name == "mine" and mine.memory == "other.db" and mine.retriever == "runs/retriever/other"
    assert mine.planner.room_fit == 7  # one planner key changed, the rest kept (merged section by section)
    assert dataclasses.replace(mine.planner, room_fit=served.planner.room_fit) == served.planner
    (tmp_path / "twice.yaml").write_text(f"base: {tmp_path / 'mine.yaml'}\nname: twice_named\n")
    twice = load_method(str(tmp_path / "twice.yaml"))
    assert twice.name == "twice_named" and twice.memory == "other.db" and twice.planner.room_fit == 7
    (tmp_path / "thrice.yaml").write_text(f"base: {tmp_path / 'twice.yaml'}\n")
    assert load_method(str(tmp_path / "thrice.yaml")).name == "thrice"  # the base's `name` is not inherited
    (tmp_path / "loop.yaml").write_text(f"base: {tmp_path / 'loop.yaml'}\n")
    with pytest.raises(ConfigError, match="leads back to itself"):
        load_method(str(tmp_path / "loop.yaml"))
    (tmp_path / "a.yaml").write_text(f"base: {tmp_path / 'b.yaml'}\n")
    (tmp_path / "b.yaml").write_text(f"base: {tmp_path / 'a.yaml'}\n")
    with pytest.raises(ConfigError, match="a.yaml: base .*b.yaml.* leads back to itself"):
        load_method(str(tmp_path / "b.yaml"))
    (tmp_path / "tuned.yaml").write_text("base: copy_next_serve\nllm: {model: runs/tuned, max_new_tokens: 64}\n")
    (tmp_path / "lora.yaml").write_text(f"base: {tmp_path / 'tuned.yaml'}\nllm: {{adapter: runs/lora}}\n")
    lora = load_method(str(tmp_path / "lora.yaml")).llm  # replaced whole, not mixed with the base's model
    assert lora is not None and lora.adapter == "runs/lora" and lora.model == "" and lora.max_new_tokens == 256
    (tmp_path / "empty.yaml").write_text("base:\nmemory: other.db\n")
    with pytest.raises(ConfigError, match="base must name one method"):
        load_method(str(tmp_path / "empty.yaml"))
    from icalkit.commands.eval import Config, resolve_methods

    (tmp_path / "same.yaml").write_text("base: copy_next_serve\nname: copy_next_serve\n")
    with pytest.raises(ConfigError, match="two are named 'copy_next_serve'"):  # its records would mix with the base's
        resolve_methods(Config(methods=["copy_next_serve", str(tmp_path / "same.yaml")]))
    (tmp_path / "typo.yaml").write_text("base: copy_next_serv\n")
    with pytest.raises(ConfigError, match="copy_next_serv.*shipped methods"):
        load_method(str(tmp_path / "typo.yaml"))
    (tmp_path / "bad.yaml").write_text("base: copy_next_serve\nplanner: {room_fits: 7}\n")
    with pytest.raises(ConfigError, match="room_fits"):
        load_method(str(tmp_path / "bad.yaml"))


def test_a_methods_completion_length_overrides_the_evaluations_and_is_part_of_its_fingerprint():
    from icalkit.agents.planner_config import PlannerConfig
    from icalkit.eval.methods import LATER_PLANNER_DEFAULTS, method_fingerprint, method_sampling
    from icalkit.models.llm.factory import LLMConfig

    sampling = {"max_new_tokens": 384, "temperature": 0.0, "seed": 0}
    plain, long = load_method("zero_shot"), load_method("zero_shot")
    long.max_new_tokens = 1024
    assert method_sampling(plain, sampling)["max_new_tokens"] == 384
    assert method_sampling(long, sampling) == {**sampling, "max_new_tokens": 1024}
    llm = LLMConfig()
    fp = method_fingerprint(plain, llm, sampling)
    # a longer limit for every method, or for one, is another configuration: its episodes are run again
    assert method_fingerprint(plain, llm, {**sampling, "max_new_tokens": 1024}) != fp
    assert method_fingerprint(long, llm, sampling) != fp
    long.max_new_tokens = -1
    with pytest.raises(ValueError, match="max_new_tokens must be >= 0"):
        long.validate()
    # so is the loop cut, which only a method that sets it sends
    looped = load_method("zero_shot")
    looped.loop_repeats = 3
    assert "loop_repeats" not in method_sampling(plain, sampling)
    assert method_sampling(looped, sampling) == {**sampling, "loop_repeats": 3}
    assert method_fingerprint(looped, llm, sampling) != fp
    looped.loop_repeats = 1
    with pytest.raises(ValueError, match="loop_repeats must be 0"):
        looped.validate()
    # planner settings added later count only away from their default (LATER_PLANNER_DEFAULTS: the
    # episodes recorded before them ran as the default does and stay valid)
    for key, value in (("room_fit", 5), ("review_done", True), ("silent_next_copy", "always")):
        later = load_method("zero_shot")
        setattr(later.planner, key, value)
        assert method_fingerprint(later, llm, sampling) != fp
        setattr(later.planner, key, getattr(plain.planner, key))
        assert method_fingerprint(later, llm, sampling) == fp
    # every planner setting beyond the first ones is such a later one, listed at its default
    first = {"mode", "k", "max_replans", "rerank_sets", "use_dialogue", "use_frame", "oracle_goal_feedback",
             "max_state_objects", "precondition_checks", "ground_ids", "copy_first"}
    defaults = {f.name: f.default for f in dataclasses.fields(PlannerConfig)}
    assert {k: defaults[k] for k in set(defaults) - first} == LATER_PLANNER_DEFAULTS


def test_eval_end_to_end_with_workers_resume_and_report(tmp_path, capsys, model, memory_path):
    out = tmp_path / "run"
    args = ["eval", f"methods=[zero_shot, {method_file(tmp_path, 'copy_m', memory_path, 'copy')}, "
                    f"{method_file(tmp_path, 'missing', tmp_path / 'none.db')}]",
            "splits=[valid_unseen]", "split.task_types=[Coffee]", "split.n_per_type=2", f"split.dir={tmp_path}",
            "workers=2", "llm.max_new_tokens=8", f"llm.model={model}", "llm.cache=false",
            "memory.image_embedder.kind=none", f"out_dir={out}", "wandb.mode=disabled"]
    assert main(args) == 1  # one method skipped: its memory is missing
    text = capsys.readouterr().out
    assert "missing: memory" in text and "none.db does not exist" in text
    recs = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert sorted(r["method"] for r in recs) == ["copy_m", "copy_m", "zero_shot", "zero_shot"]
    for r in recs:
        assert r["ref_len"] > 0 and r["init_total"] > 0 and r["split"] == "valid_unseen"
    copied = [r for r in recs if r["method"] == "copy_m"]
    assert all(r["llm"]["calls"] == 0 and r["programs"] and r["trace"] for r in copied)
    assert all(r["llm"]["calls"] >= 1 for r in recs if r["method"] == "zero_shot")
    summary = json.loads((out / "summary.json").read_text())
    assert summary["run"]["episodes"] == 4 and summary["run"]["model_calls"] >= 1
    assert 0 < summary["run"]["model_busy_fraction"] <= 1
    table = (out / "table1.md").read_text()
    assert "| zero_shot |" in table and "| copy_m |" in table
    assert (out / "table1.png").is_file() and (out / "per_type_unseen.md").is_file()
    # a re-run resumes: nothing is run twice
    assert main(args) == 1
    assert len((out / "episodes.jsonl").read_text().splitlines()) == 4
    # the run's config.yaml is the same evaluation again (provenance is kept beside it)
    assert set(json.loads((out / "provenance.json").read_text())) == {"git_commit", "split_hashes"}
    assert main(["eval", "--config", str(out / "config.yaml")]) == 1
    assert "0 episodes to run (4 already done)" in capsys.readouterr().out
    # a method whose definition changed under the same name is run again; its old episodes are kept aside
    (tmp_path / "copy_m.yaml").write_text(f"planner: {{mode: copy, k: 1}}\nmemory: {memory_path}\n")
    assert main(args) == 1
    assert "2 episodes of copy_m were run with another configuration" in capsys.readouterr().out
    stale = [json.loads(line) for line in (out / "episodes.stale.jsonl").read_text().splitlines()]
    assert [r["method"] for r in stale] == ["copy_m", "copy_m"]
    recs = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert len(recs) == 4 and len({r["method_fp"] for r in recs if r["method"] == "copy_m"}) == 1
    assert {r["method_fp"] for r in recs if r["method"] == "copy_m"}.isdisjoint(r["method_fp"] for r in stale)
    # icalkit report puts runs side by side
    assert main(["report", str(out), str(out), f"out_dir={tmp_path / 'rep'}"]) == 0
    assert "copy_m" in (tmp_path / "rep" / "report.md").read_text()
    # and, with pairs, episode by episode against a baseline run (here itself: nothing gained or lost)
    assert main(["report", str(out), f"baseline_runs=[{out}]", "pairs=[copy_m]", f"out_dir={tmp_path / 'rep'}"]) == 0
    assert "| copy_m | copy_m | 2 | " in (tmp_path / "rep" / "paired.md").read_text()
    assert main(["report", str(out), "pairs=[copy_m=absent]", f"out_dir={tmp_path / 'rep'}"]) == 2
    assert "pairs name methods the runs do not hold: ['absent']" in capsys.readouterr().out
    # more tasks of the same split: the episodes of the tasks it had are kept
    ids = {r["task_id"] for r in recs}
    assert main([*args[:4], "split.n_per_type=3", *args[5:]]) == 1
    assert "2 episodes to run (4 already done)" in capsys.readouterr().out
    recs = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    all_ids = {r["task_id"] for r in recs}
    assert len(recs) == 6 and ids < all_ids
    # the same tasks told in other words are other tasks: run again, the old episodes kept aside
    assert main([*args, "split.dialogues=human"]) == 1
    assert "4 episodes of copy_m, zero_shot were run with another configuration, model, memory or task set" \
        in capsys.readouterr().out
    recs = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert len(recs) == 6 and {r["task_id"] for r in recs} == all_ids
    assert "| 2 |" in (out / "table1.md").read_text()  # the table counts this run's two tasks, not the third
    # a line written before task hashes were recorded counts as a template task's, not a human one's
    old = [{k: v for k, v in r.items() if k != "task_hash"} for r in recs]
    (out / "episodes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in old))
    assert main([*args, "split.dialogues=human"]) == 1
    assert "4 episodes of copy_m, zero_shot were run with another" in capsys.readouterr().out
    (out / "episodes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in old))
    assert main([*args, "splits=[valid_seen]"]) == 1  # another split: its lines are kept, not set aside
    assert "were run with another" not in capsys.readouterr().out
    assert len((out / "episodes.jsonl").read_text().splitlines()) == 6 + 4


@pytest.mark.slow
def test_a_killed_worker_loses_only_its_episode(tmp_path, model, memory_path):
    from icalkit.envs.config import EnvConfig
    from icalkit.eval.runner import Evaluator, Job, Setup
    from icalkit.memory.config import MemoryConfig, TextEmbedderConfig
    from icalkit.models.llm.factory import build_llm

    method = load_method(method_file(tmp_path, "m", memory_path))
    tasks = load_split(SplitConfig(task_types=["Coffee"], n_per_type=4, dir=str(tmp_path)), "valid_unseen")
    llm = build_llm("hf", cache=False, model=str(model))
    setup = Setup({"m": method}, {"m": "k"}, {"k": llm.model_name},
                  MemoryConfig(text_embedder=TextEmbedderConfig()), EnvConfig(render=False),
                  {"max_new_tokens": 8, "temperature": 0.0, "seed": 0}, True)
    setup.memory.image_embedder.kind = "none"
    killed, failed = [], []

    class KillOneWorker(type(llm)):
        """The real model; its first batched call SIGKILLs a worker (every worker holds an episode then)."""

        def __init__(self):
            self.__dict__.update(llm.__dict__)

        def _generate(self, prompts, params):
            if not killed:
                victim = evaluator.pool[0].proc
                os.kill(victim.pid, signal.SIGKILL)
                killed.append(victim.pid)
            return super()._generate(prompts, params)

    done = []
    evaluator = Evaluator(setup, {"k": KillOneWorker()}, 2, lambda job, rec: done.append(job.key),
                          lambda job, msg: failed.append(msg))
    stats = evaluator.run([Job("m", "valid_unseen", t) for t in tasks])
    assert killed and len(failed) == 1 and "worker process died" in failed[0]
    assert len(done) == 3 and stats.episodes == 3 and stats.failed == 1


def test_eval_stops_when_the_models_server_is_down_and_keeps_what_it_wrote(tmp_path, capsys):
    """A method whose model's server does not answer: after UNREACHABLE_STOP episodes in a row fail to
    reach it the run stops with a message naming the cause, instead of failing every episode in turn."""
    from icalkit.eval.runner import UNREACHABLE_STOP
    from icalkit.models.llm.vllm_server import free_port

    out = tmp_path / "run"
    args = ["eval", "methods=[zero_shot]", "splits=[valid_unseen]", "split.task_types=[Coffee]", "split.n_per_type=5",
            f"split.dir={tmp_path}", "workers=0", "llm.backend=openai", f"llm.base_url=http://127.0.0.1:{free_port()}/v1",
            "llm.model=planner", "llm.cache=false", "memory.image_embedder.kind=none", f"out_dir={out}",
            "wandb.mode=disabled"]
    assert main(args) == 1
    text = capsys.readouterr().out
    assert f"{UNREACHABLE_STOP} episodes in a row could not reach their model's server; the run stops" in text
    errors = (out / "errors.jsonl").read_text().splitlines()
    assert len(errors) == UNREACHABLE_STOP and all("ServerUnreachableError" in e for e in errors)
    assert not (out / "episodes.jsonl").read_text().strip()


def test_paired_counts_the_episodes_gained_and_lost_by_type() -> None:
    """icalkit report's pairs: episode by episode (same split and task id), only the episodes both ran."""
    from icalkit.eval.report import paired

    def ep(method: str, task: str, ok: bool, task_type: str = "Salad", split: str = "valid_unseen") -> dict:
        return {"method": method, "task_id": f"{split}/{task}", "split": split, "task_type": task_type, "success": ok}

    base = [ep("a", "t1", False), ep("a", "t2", True, "Coffee"), ep("a", "t3", False), ep("a", "only", True)]
    ours = [ep("b", "t1", True), ep("b", "t2", False, "Coffee"), ep("b", "t3", True, "Breakfast"), ep("a", "t1", False)]
    row = paired(base, ours, "a", "b")
    assert (row["episodes"], row["baseline successes"], row["successes"], row["gained"], row["lost"]) == (3, 1, 2, 2, 1)
    assert row["gained by type"] == "Breakfast 1, Salad 1" and row["lost by type"] == "Coffee 1"
    assert paired(base, ours, "a", "missing")["episodes"] == 0
