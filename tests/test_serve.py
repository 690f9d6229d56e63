"""`icalkit serve` checks that need no vLLM: adapters of another base or too high a rank, a port in
use, a server that never becomes healthy (its process group is gone afterwards), the command."""

from __future__ import annotations

import json
import os
import socket
import stat
import sys
import time
from pathlib import Path

import pytest

from icalkit.inference.serve import ServeConfig, check_adapter, serving
from icalkit.models.llm.base import AdapterError, LLMError
from icalkit.models.llm.vllm_server import free_port


@pytest.fixture
def base(tmp_path) -> Path:
    folder = tmp_path / "base"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "llama", "hidden_size": 32}))
    return folder


def _adapter(tmp_path: Path, base: Path, r: int = 8, name: str = "adapter") -> Path:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "adapter_config.json").write_text(json.dumps({"r": r, "base_model_name_or_path": str(base)}))
    return folder


def test_adapter_checks_name_the_problem(tmp_path, base):
    assert check_adapter("a", _adapter(tmp_path, base), base, 16) == (tmp_path / "adapter").resolve()
    with pytest.raises(AdapterError, match="rank 32, above the server's max_lora_rank=16"):
        check_adapter("big", _adapter(tmp_path, base, r=32, name="big"), base, 16)
    other = tmp_path / "other"
    other.mkdir()
    (other / "config.json").write_text(json.dumps({"model_type": "llama", "hidden_size": 64}))
    with pytest.raises(AdapterError, match="'x' was trained on .*other, not on the served model"):
        check_adapter("x", _adapter(tmp_path, other, name="x"), base, 16)
    copy = tmp_path / "copy"  # a copy of the same base is accepted
    copy.mkdir()
    (copy / "config.json").write_text((base / "config.json").read_text())
    check_adapter("c", _adapter(tmp_path, copy, name="c"), base, 16)
    with pytest.raises(AdapterError, match="no adapter_config.json"):
        check_adapter("none", tmp_path, base, 16)


def test_port_in_use_is_refused_before_starting(base):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        with pytest.raises(LLMError, match=f"port {port} on 127.0.0.1 is in use"):
            with serving(ServeConfig(model=str(base), port=port, python=sys.executable)):
                pass


def test_never_healthy_server_times_out_and_leaves_no_process(tmp_path, base):
    pid_file = tmp_path / "pid"
    fake = tmp_path / "fake_python"
    fake.write_text(f"#!/bin/sh\necho $$ > {pid_file}\nexec sleep 60\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    with pytest.raises(LLMError, match="did not answer on http://127.0.0.1:.* within 2 s"):
        with serving(ServeConfig(model=str(base), port=free_port(), python=str(fake), timeout_s=2,
                                 log_path=str(tmp_path / "log"))):
            pass
    pid = int(pid_file.read_text())
    time.sleep(0.2)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # the server's process group was stopped


def test_serve_command_reports_bad_input(tmp_path, base, capsys):
    from icalkit.cli import main

    assert main(["serve", f"model={base}", f"adapters={{t: {tmp_path / 'none'}}}"]) == 1
    assert "no adapter_config.json" in capsys.readouterr().out
    assert main(["serve", "port=0"]) == 2  # config error


def test_an_adapter_is_served_merged_into_its_base_and_merged_again_when_retrained(tmp_path):
    """model=<adapter folder>: the merge (a full model folder beside the adapter) computes what peft computes,
    is reused while adapter and base are unchanged, written again when the adapter is, and a missing base
    is named."""
    import torch
    from peft import LoraConfig, PeftModel, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from icalkit.models.llm.convert import default_model_dir

    tokenizer = AutoTokenizer.from_pretrained(default_model_dir())
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, eos_token_id=tokenizer.eos_token_id)
    base = tmp_path / "base"
    LlamaForCausalLM(cfg).save_pretrained(base)
    tokenizer.save_pretrained(base)
    peft = get_peft_model(AutoModelForCausalLM.from_pretrained(base), LoraConfig(r=4, target_modules=["q_proj", "v_proj"]))
    for name, param in peft.named_parameters():
        if "lora_B" in name:
            torch.nn.init.normal_(param, std=0.5)  # B = 0 would leave the outputs unchanged
    adapter = tmp_path / "run" / "adapter"
    peft.save_pretrained(adapter)

    merged = ServeConfig(model=str(adapter)).model_dir()
    assert merged == adapter.parent / "adapter_merged" and (merged / "config.json").is_file()
    ids = torch.tensor([tokenizer.encode("Make coffee, please.")])
    with torch.no_grad():
        want = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(base), adapter)(ids).logits
        plain = AutoModelForCausalLM.from_pretrained(base)(ids).logits
        got = AutoModelForCausalLM.from_pretrained(merged)(ids).logits
    assert torch.allclose(got, want, atol=1e-4) and not torch.allclose(got, plain, atol=1e-3)
    written = (merged / "model.safetensors").stat().st_mtime_ns
    assert ServeConfig(model=str(adapter)).model_dir() == merged
    assert (merged / "model.safetensors").stat().st_mtime_ns == written  # unchanged: not merged again
    os.utime(adapter / "adapter_model.safetensors", ns=(1, 1))  # the adapter rewritten (retrained)
    ServeConfig(model=str(adapter)).model_dir()
    assert (merged / "model.safetensors").stat().st_mtime_ns != written
    with pytest.raises(AdapterError, match="is an adapter .* not both"):
        with serving(ServeConfig(model=str(adapter), adapters={"a": str(adapter)}, python=sys.executable)):
            pass
    config = json.loads((adapter / "adapter_config.json").read_text())
    (adapter / "adapter_config.json").write_text(json.dumps({**config, "base_model_name_or_path": str(tmp_path / "gone")}))
    with pytest.raises(AdapterError, match="names its base .*gone, which is not a model folder here"):
        ServeConfig(model=str(adapter)).model_dir()


def test_a_port_whose_server_just_stopped_is_free():
    """Connections of a server that just stopped (TIME_WAIT) do not keep its port from the next server
    (bench_finetune.py serve starts a second server on the port of the first), a listening socket does."""
    from icalkit.models.llm.vllm_server import port_free

    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as vLLM's server (uvicorn) binds
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    client = socket.create_connection(("127.0.0.1", port))
    conn, _ = server.accept()
    conn.close()  # the server side closes first: its end of the connection waits in TIME_WAIT
    client.close()
    assert not port_free("127.0.0.1", port)
    server.close()
    assert port_free("127.0.0.1", port)
