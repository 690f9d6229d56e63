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
