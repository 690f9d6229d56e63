"""Build an LLM backend by name, wrapped in the response cache.

Backends register by name with a lazy import path, so heavy libraries (vllm, openai) load only
when chosen. :class:`LLMConfig` is the typed config section (see :mod:`icalkit.config`);
:func:`build_llm_from_config` turns it into keyword arguments for :func:`build_llm`.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from icalkit.models.llm.base import LLM, UnknownBackendError
from icalkit.models.llm.cache import CachedLLM, ResponseCache

BACKENDS: dict[str, str] = {
    "hf": "icalkit.models.llm.hf:HFLLM",
    "transformers": "icalkit.models.llm.hf:HFLLM",
    "vllm": "icalkit.models.llm.vllm_backend:VLLMLLM",
    "openai": "icalkit.models.llm.openai_backend:OpenAILLM",
}


def default_cache_path() -> Path:
    """``<icalkit cache root>/llm_cache.sqlite`` (root: $ICALKIT_CACHE or ~/.cache/icalkit)."""
    from icalkit.models.llm.convert import cache_root

    return cache_root() / "llm_cache.sqlite"


def backend_class(name: str) -> type[LLM]:
    """The LLM class registered as ``name``; raise UnknownBackendError listing the names."""
    if name not in BACKENDS:
        raise UnknownBackendError(
            f"unknown LLM backend {name!r}; available: {', '.join(sorted(BACKENDS))}"
        )
    module, cls = BACKENDS[name].split(":")
    return getattr(importlib.import_module(module), cls)


def build_llm(
    backend: str = "hf", cache: bool = True, cache_path: str | Path | None = None, **kwargs: Any
) -> LLM:
    """Build the backend ``backend`` with ``kwargs``, behind the response cache unless disabled.

    Args:
        backend: "hf"/"transformers", "vllm" or "openai".
        cache: replay identical requests from a SQLite cache.
        cache_path: the cache file (default :func:`default_cache_path`).
        **kwargs: passed to the backend's constructor (e.g. ``model``, ``adapter``, ``base_url``).

    Raises:
        UnknownBackendError: ``backend`` is not registered (the message lists those that are).
        LLMError: the backend failed to start (missing model, unreachable library...).
    """
    llm = backend_class(backend)(**kwargs)
    if not cache:
        return llm
    return CachedLLM(llm, ResponseCache(cache_path or default_cache_path()))


@dataclass
class LLMConfig:
    """Which language model to use and how (a config section, e.g. ``llm.backend=openai``).

    Attributes:
        backend: "hf"/"transformers", "vllm" or "openai".
        model: model folder / .gguf file (hf, vllm; empty: the default SmolLM2), or the served
            model name (openai: the base model or a LoRA adapter's name on a vLLM server).
        gguf_file: GGUF file name inside ``model`` (hf only).
        adapter: LoRA adapter folder (hf, vllm).
        base_url: server URL for "openai", e.g. http://127.0.0.1:8000/v1.
        api_key_env: environment variable holding the API key (openai).
        cache: replay identical requests from the SQLite response cache.
        cache_path: cache file (empty: ~/.cache/icalkit/llm_cache.sqlite or $ICALKIT_CACHE).
        max_new_tokens: default generation length used by callers.
        temperature: default sampling temperature used by callers.
        device: "auto", "cpu" or "cuda" (hf).
        batch_size: prompts per forward pass (hf) / concurrent requests (openai).
        threads: torch CPU threads (hf; 0: torch's default).
    """

    backend: str = "hf"
    model: str = ""
    gguf_file: str = ""
    adapter: str = ""
    base_url: str = ""
    api_key_env: str = "OPENAI_API_KEY"
    cache: bool = True
    cache_path: str = ""
    max_new_tokens: int = 256
    temperature: float = 0.0
    device: str = "auto"
    batch_size: int = 16
    threads: int = 0

    def validate(self) -> None:
        """Cross-field checks; raise ValueError naming the problem."""
        if self.backend not in BACKENDS:
            raise ValueError(
                f"llm.backend {self.backend!r} is not one of {', '.join(sorted(BACKENDS))}"
            )
        if self.backend == "openai":
            if not self.base_url:
                raise ValueError("llm.backend=openai needs llm.base_url (e.g. http://127.0.0.1:8000/v1)")
            if not self.model:
                raise ValueError("llm.backend=openai needs llm.model (the served model name)")
            if self.gguf_file or self.adapter:
                raise ValueError(
                    "llm.gguf_file/llm.adapter do not apply to backend=openai: "
                    "select a served LoRA adapter by its name in llm.model"
                )
        elif self.base_url:
            raise ValueError(f"llm.base_url only applies to backend=openai, not {self.backend!r}")
        if self.gguf_file and self.backend not in ("hf", "transformers"):
            raise ValueError("llm.gguf_file only applies to the hf backend")
        if self.max_new_tokens < 1:
            raise ValueError(f"llm.max_new_tokens must be >= 1, got {self.max_new_tokens}")
        if self.temperature < 0:
            raise ValueError(f"llm.temperature must be >= 0, got {self.temperature}")
        if self.threads < 0:
            raise ValueError(f"llm.threads must be >= 0 (0: torch's default), got {self.threads}")
        if self.batch_size < 1:
            raise ValueError(f"llm.batch_size must be >= 1, got {self.batch_size}")
        if self.device not in ("auto", "cpu") and not self.device.startswith("cuda"):
            raise ValueError(f"llm.device must be auto, cpu or cuda[:N], got {self.device!r}")

    def backend_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for the backend's constructor."""
        if self.backend == "openai":
            return {"model": self.model, "base_url": self.base_url,
                    "api_key_env": self.api_key_env, "concurrency": self.batch_size}
        kwargs: dict[str, Any] = {"model": self.model or None, "adapter": self.adapter or None}
        if self.backend == "vllm":
            return kwargs
        return {**kwargs, "gguf_file": self.gguf_file or None, "device": self.device,
                "batch_size": self.batch_size, "threads": self.threads or None}


def build_llm_from_config(cfg: LLMConfig) -> LLM:
    """Validate ``cfg`` and build its backend (behind the cache when ``cfg.cache``)."""
    cfg.validate()
    return build_llm(cfg.backend, cache=cfg.cache, cache_path=cfg.cache_path or None,
                     **cfg.backend_kwargs())
