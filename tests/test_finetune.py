"""Fine-tuning: pairs built from the planner's own prompts, completion-only tokenization, packing,
resumable training with a tiny model, adapters/full models that the backends load, bad input."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
import torch
from planner_doubles import one_torch_thread

from icalkit.agents.executor import Executor
from icalkit.agents.grounding import ground_program, shown_ids, ungrounded_ids
from icalkit.data_gen.finetune_data import DatasetError, PairConfig, build_pairs
from icalkit.data_gen.mistakes import inject_mistake
from icalkit.training.finetune import TrainConfig, load_pairs, make_collator, tokenize_pair, train

ROOT = Path(__file__).resolve().parents[1]


one_thread = pytest.fixture(scope="module", autouse=True)(one_torch_thread)


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import AutoTokenizer

    from icalkit.models.llm.convert import default_model_dir

    return AutoTokenizer.from_pretrained(default_model_dir())


@pytest.fixture(scope="module")
def tiny_dir(tokenizer, tmp_path_factory) -> Path:
    """A random 2-layer Llama with SmolLM2's vocabulary and chat template, saved as a folder."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
                      bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                      pad_token_id=tokenizer.pad_token_id)
    path = tmp_path_factory.mktemp("tiny")
    LlamaForCausalLM(cfg).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def pairs(tmp_path_factory) -> tuple[Path, dict, PairConfig]:
    cfg = PairConfig(task_types=["Coffee", "Boil X", "Clean All X"], heldout_types=["Clean All X"],
                     n_per_type=2, valid_fraction=0.25)
    out = tmp_path_factory.mktemp("pairs")
    return out, build_pairs(cfg, out, progress=False), cfg


def test_pair_prompts_are_what_the_planner_sends_and_programs_replay(pairs, tiny_dir):
    from icalkit.agents.llm_session import LLMSession
    from icalkit.agents.planner import Planner, PlannerConfig
    from icalkit.envs.factory import make_env
    from icalkit.envs.household.tasks.sampler import sample_tasks
    from icalkit.models.llm.hf import HFLLM

    out, stats, cfg = pairs
    records = [json.loads(line) for line in (out / "pairs.jsonl").read_text().splitlines()]
    assert {r["task_type"] for r in records} == {"Coffee", "Boil X"}  # the held-out type is absent
    planner = Planner(LLMSession(HFLLM(tiny_dir)), None, PlannerConfig(mode="zero_shot"))
    env = make_env("household", render_obs=False)
    for task in sample_tasks(cfg.training_types(), cfg.n_per_type, cfg.split, cfg.seed):
        (rec,) = [r for r in records if r["task_id"] == task.task_id]
        plan_rows = [r for r in rec["rows"] if r["kind"] == "plan"]
        assert len(plan_rows) == 1, rec["dropped"]
        row = plan_rows[0]
        env.reset(options={"task": task})
        assert row["prompt"] == planner._first_prompt(task, Executor(env), [])  # byte-identical prompt
        program = row["completion"].split("```python\n")[1].split("```")[0]
        assert not ungrounded_ids(program, shown_ids(row["prompt"]))
        env.reset(options={"task": task})
        assert Executor(env).run(program, task).success
        for rev in (r for r in rec["rows"] if r["kind"] == "revision"):
            text = rev["prompt"][-1]["content"]
            assert "It stopped with an error:" in text
            # the completion is the rest of the solution from where the mistaken program left the world
            rest = rev["completion"].split("```python\n")[1].split("```")[0]
            assert rest != program and not ungrounded_ids(rest, shown_ids(rev["prompt"]))
            env.reset(options={"task": task})
            replay = Executor(env)
            assert not replay.run(rev["mistaken_program"], task).success
            assert replay.run(rest, task).success
    assert stats["pairs"] == sum(len(r["rows"]) for r in records)
    assert stats["by_kind"]["plan"] == 4 and stats["by_kind"]["revision"] > 0 and stats["tokens"]["prompt"]["min"] > 300
    ds = load_pairs(out / "dataset")
    train_tasks, valid_tasks = set(ds["train"]["task_id"]), set(ds["validation"]["task_id"])
    assert valid_tasks and not train_tasks & valid_tasks  # whole tasks per split


def test_grounding_and_mistakes():
    program = ('mug = InteractionObject("Mug", object_instance="Mug_2")\n'
               'bread = InteractionObject("Bread", object_instance="Bread_1")\n'
               'bread_sliced = InteractionObject("BreadSliced", object_instance="BreadSliced_8", parent_object="Bread_1")\n'
               'cabinet = InteractionObject("Cabinet", object_instance="Cabinet_3")\n'
               'cabinet.open()\nmug.pickup()\n')
    grounded = ground_program(program, {"Mug_2", "Cabinet_3"})
    assert 'object_instance="Mug_2"' in grounded and "BreadSliced_8" not in grounded and "Bread_1" not in grounded
    assert ungrounded_ids(grounded, {"Mug_2", "Cabinet_3"}) == []
    # ids of a retrieved example belong to its own scene: they ground nothing in the new task
    for head in ("New task:", "Task:"):
        prompt = [{"role": "user", "content": f"Solved examples:\n### Example 1\nPlate_9: -\n\n### Example 2\n"
                                              f"Knife_4: -\n\n{head}\nCommander: hi\n\nCurrent state:\nMug_2: -"}]
        assert shown_ids(prompt) == {"Mug_2"}
    import random

    rng = random.Random(0)
    assert "cabinet.open()" not in inject_mistake(grounded, "skip_open", rng, ["Mug"])
    assert inject_mistake("mug.pickup()\n", "skip_open", rng, ["Mug"]) is None
    wrong = inject_mistake(grounded, "wrong_object", rng, ["Mug", "Cup"])
    assert wrong != grounded and wrong.count("\n") == grounded.count("\n")
    assert len(inject_mistake(grounded, "missing_step", rng, []).splitlines()) == len(grounded.splitlines()) - 1
    early = inject_mistake(grounded, "stop_early", rng, [])  # cut after an action line that is not the last
    assert grounded.startswith(early) and early.endswith("cabinet.open()\n")
    # an object the room lacks, of the same TEACh kind (an example's Cup where the room has a Mug)
    absent = inject_mistake(grounded, "absent_object", rng, ["Mug"], absent=["Cup", "Toaster", "Drawer"])
    assert absent == grounded.replace('InteractionObject("Mug", object_instance="Mug_2")', 'InteractionObject("Cup")')
    assert inject_mistake(grounded, "absent_object", rng, ["Mug"], absent=["Toaster", "Drawer"]) is None


def test_completion_only_labels_match_the_inference_rendering(tokenizer, tiny_dir):
    from icalkit.models.llm.hf import HFLLM

    prompt = [{"role": "system", "content": "You are a robot."}, {"role": "user", "content": "Make coffee."}]
    ex = tokenize_pair(tokenizer, prompt, "Program:\n```python\nmug.pickup()\n```")
    n_prompt = sum(label == -100 for label in ex["labels"])
    rendered = HFLLM(tiny_dir).render(prompt)  # what the transformers backend feeds the model
    assert tokenizer.decode(ex["input_ids"][:n_prompt]) == rendered
    assert ex["labels"][n_prompt:] == ex["input_ids"][n_prompt:]
    assert tokenizer.decode(ex["labels"][n_prompt:]).endswith("```" + tokenizer.eos_token)


def test_packing_keeps_pairs_apart(tokenizer, tiny_dir):
    """A packed row gives the same loss as the pairs one by one (block-diagonal attention)."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_dir, attn_implementation="sdpa").eval()
    feats = [tokenize_pair(tokenizer, [{"role": "user", "content": q}], a)
             for q, a in [("Make coffee.", "mug.pickup()"), ("Water the plant, please.", "pot.pour(plant)\nx = 1")]]
    with torch.no_grad():
        packed = model(**make_collator(tokenizer, packing=True)(feats), use_cache=False).logits
        single = [model(input_ids=torch.tensor([f["input_ids"]])).logits[0] for f in feats]
    assert torch.allclose(packed[0], torch.cat(single), atol=1e-4)


def _prefix_case(tokenizer, tiny_dir: Path, method: str) -> tuple:
    """A tiny model (full or LoRA) and three pairs sharing a system turn."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_dir, attn_implementation="sdpa")
    if method == "lora":
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(model, LoraConfig(r=4, target_modules=["q_proj", "v_proj", "down_proj"],
                                                 init_lora_weights=False))
    system = {"role": "system", "content": "You are a household robot. Write a program with the API."}
    feats = [tokenize_pair(tokenizer, [system, {"role": "user", "content": q}], a) for q, a in
             [("Make coffee.", "mug.pickup()"), ("Water the plant, please.", "pot.pour(plant)\nx = 1"),
              ("Boil a potato in a pot on the stove.", "pot.go_to()")]]
    return model, feats


def _loss_and_grads(model, fn) -> tuple:
    model.zero_grad()
    loss = fn()
    loss.backward()
    return loss.detach(), [p.grad.clone() for p in model.parameters() if p.requires_grad]


def _close(a: list, b: list) -> bool:
    return all(torch.allclose(x, y, atol=1e-5, rtol=1e-4) for x, y in zip(a, b, strict=True))


@pytest.mark.parametrize("method", ["full", "lora"])
def test_completion_loss_with_shared_prefix_is_exact(tokenizer, tiny_dir, method):
    """Loss and gradients equal the model's own loss on padded rows, with the shared prefix run once."""
    from icalkit.training.completion_loss import SharedPrefixCollator, completion_loss

    model, feats = _prefix_case(tokenizer, tiny_dir, method)
    shared = SharedPrefixCollator(tokenizer.pad_token_id)(feats)
    assert shared["prefix_ids"].shape[1] > 10  # the system turn is shared
    assert int(shared["attention_mask"].sum()) == sum(len(f["input_ids"]) for f in feats)
    plain = make_collator(tokenizer, packing=False)(feats)
    n_items = int((plain["labels"][:, 1:] != -100).sum())
    ours, ours_g = _loss_and_grads(model, lambda: completion_loss(model, shared, n_items))
    ref, ref_g = _loss_and_grads(model, lambda: model(**plain, use_cache=False).loss)
    assert torch.allclose(ours, ref, atol=1e-5)
    assert _close(ours_g, ref_g)


@pytest.mark.parametrize("method", ["full", "lora"])
def test_prompt_without_gradient_keeps_the_loss_and_trains_through_the_completion_only(tokenizer, tiny_dir, method):
    """``prompt_grad=false``: the loss equals the model's own; the gradient equals the one of pairs
    whose prompt ran under no_grad one by one, and differs from the exact gradient."""
    import torch.nn.functional as F

    from icalkit.training.completion_loss import SharedPrefixCollator, completion_loss, first_label

    model, feats = _prefix_case(tokenizer, tiny_dir, method)
    split = SharedPrefixCollator(tokenizer.pad_token_id, split_prompt=True)(feats)
    assert split["prefix_ids"].shape[1] > 10 and split["prompt_ids"].shape[1] >= 1
    assert int(split["attention_mask"].sum()) == sum(len(f["input_ids"]) for f in feats)
    plain = make_collator(tokenizer, packing=False)(feats)
    n_items = int((plain["labels"][:, 1:] != -100).sum())

    def detached_prompts():
        total = 0
        for f in feats:
            ids, labels, s = torch.tensor([f["input_ids"]]), torch.tensor(f["labels"]), first_label(f["labels"]) - 1
            with torch.no_grad():
                cache = model(input_ids=ids[:, :s], use_cache=True).past_key_values
            logits = model(input_ids=ids[:, s:], past_key_values=cache, use_cache=True).logits[0, :-1]
            total = total + F.cross_entropy(logits, labels[s + 1:], ignore_index=-100, reduction="sum")
        return total / n_items

    ours, ours_g = _loss_and_grads(model, lambda: completion_loss(model, split, n_items))
    ref, ref_g = _loss_and_grads(model, detached_prompts)
    exact, exact_g = _loss_and_grads(model, lambda: model(**plain, use_cache=False).loss)
    assert torch.allclose(ours, exact, atol=1e-5) and torch.allclose(ours, ref, atol=1e-5)
    assert _close(ours_g, ref_g) and not _close(ours_g, exact_g)


@pytest.mark.parametrize("case", ["shared_prefix", "prompt_without_gradient", "packing"])
def test_folded_attention_equals_transformers_sdpa(tokenizer, tiny_dir, case):
    """``sdpa_folded`` (grouped-query heads folded into the query, no key/value copies) gives the loss
    and gradients of transformers' ``sdpa`` on masked batches: shared prefix, split prompt, packed row."""
    from icalkit.training.attention import register
    from icalkit.training.completion_loss import SharedPrefixCollator, completion_loss

    model, feats = _prefix_case(tokenizer, tiny_dir, "full")
    assert model.config.num_key_value_heads < model.config.num_attention_heads  # the fold has groups to fold
    if case == "packing":
        batch = make_collator(tokenizer, packing=True)(feats)
        step = lambda: model(**batch, use_cache=False).loss  # noqa: E731
    else:
        batch = SharedPrefixCollator(tokenizer.pad_token_id, split_prompt=case != "shared_prefix")(feats)
        step = lambda: completion_loss(model, batch)  # noqa: E731
    ref, ref_g = _loss_and_grads(model, step)
    model.set_attn_implementation(register())
    calls = []
    handle = torch.nn.functional.scaled_dot_product_attention
    torch.nn.functional.scaled_dot_product_attention = lambda q, *a, **k: calls.append(q.shape) or handle(q, *a, **k)
    try:
        ours, ours_g = _loss_and_grads(model, step)
    finally:
        torch.nn.functional.scaled_dot_product_attention = handle
    assert any(shape[1] == model.config.num_key_value_heads and shape[2] > 1 for shape in calls)  # folded queries
    assert torch.allclose(ours, ref, atol=1e-6) and _close(ours_g, ref_g)


def _train_cfg(tiny_dir: Path, **kw) -> TrainConfig:
    base = dict(model=str(tiny_dir), method="full", max_steps=6, micro_batch=2, grad_accum=1, precision="fp32",
                learning_rate=1e-2, save_steps=100, logging_steps=1, threads=1, device="cpu", warmup_ratio=0.0)
    return TrainConfig(**{**base, **kw})


def _weights(folder: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(next(folder.glob("*.safetensors"))))


def test_ctrl_c_finishes_the_step_then_checkpoints_and_saves_and_a_second_stops_at_once():
    import os
    import signal
    from types import SimpleNamespace

    from transformers import TrainerControl

    from icalkit.training.finetune import StopCallbackFactory

    heard = []

    def previous(*_):
        heard.append("previous handler")

    outer = signal.signal(signal.SIGINT, previous)
    try:
        stop = StopCallbackFactory.build(0.0, 0)
        stop.on_train_begin(None, None, None)
        os.kill(os.getpid(), signal.SIGINT)  # handled by the callback: the step under way goes on
        state = SimpleNamespace(global_step=2, max_steps=6, num_input_tokens_seen=100)
        control = stop.on_step_end(None, state, TrainerControl())
        assert control.should_save and control.should_training_stop and stop.signalled
        assert stop.reason.startswith("interrupted") and heard == []
        os.kill(os.getpid(), signal.SIGINT)  # the second one goes to the handler from before (stops at once)
        assert heard == ["previous handler"]
        stop.on_train_end(None, None, None)
        assert signal.getsignal(signal.SIGINT) is previous
    finally:
        signal.signal(signal.SIGINT, outer)


@pytest.mark.slow
def test_stopped_run_resumes_to_the_same_result(pairs, tiny_dir, tmp_path):
    data = pairs[0] / "dataset"
    whole = train(_train_cfg(tiny_dir), data, tmp_path / "whole")
    first = train(_train_cfg(tiny_dir, stop_after_steps=3), data, tmp_path / "split")
    assert not first["finished"] and first["global_step"] == 3 and "saved" not in first
    assert (tmp_path / "split" / "checkpoints" / "checkpoint-3").is_dir()
    # saving every step with a limit of 1 deletes the checkpoint it resumed from while it trains
    second = train(_train_cfg(tiny_dir, save_steps=1, save_total_limit=1), data, tmp_path / "split")
    assert second["finished"] and second["resumed_from"].endswith("checkpoint-3")
    assert not (tmp_path / "split" / "checkpoints" / "checkpoint-3").exists() and second["train_tokens_per_s"] > 0
    a, b = _weights(tmp_path / "whole" / "model"), _weights(tmp_path / "split" / "model")
    assert a.keys() == b.keys() and all(torch.allclose(a[k], b[k], atol=1e-6) for k in a)
    base = _weights(tiny_dir)
    assert any(not torch.allclose(a[k], base[k]) for k in a)  # training changed the weights
    assert whole["tokens_seen"] > 0 and whole["peak_rss_gb"] > 0 and "eval_loss" in whole


@pytest.mark.slow
def test_lora_adapter_points_at_its_base_and_loads(pairs, tiny_dir, tmp_path):
    from icalkit.models.llm.hf import HFLLM

    summary = train(_train_cfg(tiny_dir, method="lora", lora_r=4, max_steps=2), pairs[0] / "dataset", tmp_path)
    adapter = Path(summary["saved"])
    assert adapter.name == "adapter" and (adapter / "adapter_model.safetensors").is_file()
    config = json.loads((adapter / "adapter_config.json").read_text())
    assert Path(config["base_model_name_or_path"]).resolve() == tiny_dir.resolve() and config["r"] == 4
    llm = HFLLM(tiny_dir, adapter=adapter)
    assert type(llm.model).__name__.startswith("Peft")
    assert llm.generate(["hello"], max_new_tokens=3)[0].completion_tokens > 0


def test_bad_datasets_and_configs_are_named(pairs, tiny_dir, tmp_path):
    from datasets import Dataset, DatasetDict

    with pytest.raises(DatasetError, match="does not exist"):
        load_pairs(tmp_path / "nowhere")
    (tmp_path / "junk").mkdir()
    with pytest.raises(DatasetError, match="not a saved Hugging Face dataset"):
        load_pairs(tmp_path / "junk")
    DatasetDict({"train": Dataset.from_list([{"text": "x"}])}).save_to_disk(str(tmp_path / "cols"))
    with pytest.raises(DatasetError, match=r"lacks the columns \['prompt', 'completion'\]"):
        load_pairs(tmp_path / "cols")
    DatasetDict({"train": Dataset.from_list([{"prompt": "p", "completion": "c"}]).select([])}).save_to_disk(
        str(tmp_path / "empty"))
    with pytest.raises(DatasetError, match="or an empty one"):
        load_pairs(tmp_path / "empty")
    with pytest.raises(DatasetError, match="longer than train.max_length=16"):
        train(_train_cfg(tiny_dir, max_length=16), pairs[0] / "dataset", tmp_path / "run")
    with pytest.raises(ValueError, match="train.method"):
        TrainConfig(method="qlora").validate()
    with pytest.raises(ValueError, match=r"train.attention 'flash' is not one of \('sdpa_folded'"):
        TrainConfig(attention="flash").validate()
    with pytest.raises(ValueError, match="every task type is held out"):
        PairConfig(task_types=["Coffee"], heldout_types=["Coffee"]).validate()
    with pytest.raises(DatasetError, match="data.memory_path"):
        build_pairs(PairConfig(k=2), tmp_path / "no_memory")


def test_a_tokenizer_without_a_pad_token_trains_with_eos_as_padding(pairs, tiny_dir, tmp_path):
    """SmolLM2's GGUF converted under older transformers has no pad token and ``<|im_start|>`` as eos
    (seen on the GPU machine): padded micro-batches then failed in the collator, and the model learned
    to end its answers with ``<|im_start|>``. The saved model stops at the template's turn tokens."""
    import json
    import shutil

    from transformers import AutoTokenizer, GenerationConfig

    folder = Path(shutil.copytree(tiny_dir, tmp_path / "nopad"))
    tok = AutoTokenizer.from_pretrained(folder)
    tok.pad_token, tok.eos_token = None, "<|im_start|>"
    tok.save_pretrained(folder)
    gen = GenerationConfig.from_pretrained(folder)
    gen.eos_token_id = tok.eos_token_id
    gen.save_pretrained(folder)
    assert AutoTokenizer.from_pretrained(folder).pad_token_id is None
    summary = train(_train_cfg(folder, max_steps=2, micro_batch=4), pairs[0] / "dataset", tmp_path / "run")
    assert summary["finished"] and summary["global_step"] == 2
    saved = json.loads((tmp_path / "run" / "model" / "generation_config.json").read_text())["eos_token_id"]
    assert tok.convert_tokens_to_ids("<|im_end|>") in saved


def test_pairs_only_builds_the_dataset_and_trains_nothing(tmp_path):
    from icalkit.commands import finetune as finetune_cmd

    cfg = finetune_cmd.Config(data=PairConfig(task_types=["Coffee"], n_per_type=1, valid_fraction=0.0),
                              out_dir=str(tmp_path), pairs_only=True)
    assert finetune_cmd.run(cfg) == 0
    assert len(load_pairs(tmp_path / "data" / "dataset")["train"]) > 0
    assert not (tmp_path / "train_summary.json").exists() and not (tmp_path / "model").exists()


def test_gpu_config_is_valid():
    from icalkit.commands.finetune import Config
    from icalkit.config import load_config

    cfg = load_config(Config, ROOT / "configs" / "finetune_gpu.yaml")
    cfg.validate()
    assert cfg.train.device == "auto" and cfg.data.n_per_type == 60


def test_retrieval_augmented_pairs_carry_what_the_deployed_planner_retrieves(tmp_path):
    """``data.k=1`` through the config loader (as ``icalkit finetune`` does): each prompt carries the
    example the deployed planner retrieves for the task (its own example excluded), byte for byte."""
    from icalkit.agents.context import retrieval_state
    from icalkit.agents.llm_session import LLMSession
    from icalkit.agents.planner import Planner
    from icalkit.commands.finetune import Config
    from icalkit.config import load_config
    from icalkit.envs.factory import make_env
    from icalkit.envs.household.tasks.sampler import sample_tasks
    from icalkit.memory.embed import SentenceTransformerEmbedder
    from icalkit.memory.example import Example
    from icalkit.memory.example_memory import ExampleMemory

    tasks = sample_tasks(["Coffee"], 2, "train")
    mem = ExampleMemory(tmp_path / "m.db", SentenceTransformerEmbedder())
    mem.add_many([Example(task_id=t.task_id, task_type="Coffee", instruction=t.instruction,
                          revised_program=f'mug = InteractionObject("Mug")  # {t.task_id}', summary="coffee")
                  for t in tasks])
    cfg = load_config(Config, ROOT / "configs/finetune.yaml",
                      ["data.task_types=[Coffee]", "data.n_per_type=2", "data.k=1", f"data.memory_path={tmp_path}/m.db",
                       "data.revisions_per_task=0", "data.valid_fraction=0.0"])
    build_pairs(cfg.data, tmp_path / "pairs", mem, progress=False)
    records = {json.loads(line)["task_id"]: json.loads(line) for line in (tmp_path / "pairs/pairs.jsonl").open()}
    env = make_env("household", render_obs=False)
    deployed = Planner(LLMSession(None), mem, cfg.data.planner.__class__(mode="ical", k=1))
    for task, other in zip(tasks, reversed(tasks), strict=True):
        (row,) = records[task.task_id]["rows"]
        assert other.task_id in row["prompt"][-1]["content"] and task.task_id not in row["prompt"][-1]["content"]
        env.reset(options={"task": task})
        executor = Executor(env)
        sets, _ = deployed.retrieve(task, retrieval_state(executor.sim.world, task))
        assert row["prompt"] == deployed._first_prompt(task, executor, sets[0])


def test_wandb_offline_logs_the_run_after_another_stage_used_wandb(pairs, tiny_dir, tmp_path, monkeypatch):
    """`icalkit demo` opens W&B runs (offline) before its fine-tune stage; the Trainer's own
    ``wandb.init()`` then asked for a login and the demo died. The command now opens the run."""
    from icalkit.cli import main
    from icalkit.tracking import RunLogger, WandbConfig

    for var in ("WANDB_MODE", "WANDB_API_KEY", "WANDB_PROJECT", "WANDB_DIR"):
        monkeypatch.delenv(var, raising=False)
    RunLogger(tmp_path / "earlier", {}, WandbConfig(mode="offline"), "demos").finish()
    out = tmp_path / "ft"
    assert main(["finetune", f"dataset={pairs[0] / 'dataset'}", f"out_dir={out}", f"train.model={tiny_dir}",
                 "train.max_steps=2", "train.micro_batch=2", "train.grad_accum=1", "train.precision=fp32",
                 "train.threads=1", "train.save_steps=100", "wandb.enabled=true", "wandb.mode=offline"]) == 0
    runs = list(out.glob("wandb/offline-run-*/run-*.wandb"))  # the offline run `wandb sync` uploads
    assert len(runs) == 1
    deadline = time.monotonic() + 60  # wandb's service process may still be writing the file (seen under load)
    while b"train/loss" not in runs[0].read_bytes() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert b"train/loss" in runs[0].read_bytes()
    # the run's config.yaml is the same command again (every step done: it resumes to the end)
    assert main(["finetune", "--config", str(out / "config.yaml"), "wandb.enabled=false"]) == 0
    assert json.loads((out / "train_summary.json").read_text())["global_step"] == 2
    # stopped while saving (no summary, no model): the checkpoint's weights are saved, nothing trained
    shutil.rmtree(out / "model")
    (out / "train_summary.json").unlink()
    assert main(["finetune", "--config", str(out / "config.yaml"), "wandb.enabled=false"]) == 0
    assert json.loads((out / "train_summary.json").read_text())["global_step"] == 2
    assert (out / "model" / "model.safetensors").is_file()


def test_bf16_autocasts_the_completion_loss(pairs, tiny_dir, tmp_path):
    """accelerate autocasts ``model.forward``, which the completion loss bypasses: it must autocast
    itself (before this was fixed, a bf16 run computed in fp32 and gave the fp32 loss exactly)."""
    # what the decoder's projections compute in, seen by a global forward hook (the tiny random
    # model's near-uniform loss differs between fp32 and bf16 by about one float32 ulp only)
    seen: dict[str, set] = {}

    def record(module, args, output):
        if isinstance(module, torch.nn.Linear) and torch.is_grad_enabled():
            seen.setdefault(precision, set()).add(output.dtype)

    handle = torch.nn.modules.module.register_module_forward_hook(record)
    try:
        runs = {}
        for precision in ("fp32", "bf16"):
            runs[precision] = train(_train_cfg(tiny_dir, precision=precision, max_steps=1), pairs[0] / "dataset",
                                    tmp_path / precision)
    finally:
        handle.remove()
    assert runs["bf16"]["precision"] == "bf16" and runs["fp32"]["precision"] == "fp32"
    assert runs["bf16"]["completion_loss"] and runs["bf16"]["shared_prefix"]  # the path that bypassed autocast
    assert seen == {"fp32": {torch.float32}, "bf16": {torch.bfloat16}}
