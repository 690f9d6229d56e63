"""transformers backend: any local model folder or GGUF file, optional LoRA adapter (peft).

Models are loaded once per process (:func:`load_model` is memoised on its arguments) and run
batched with left padding. Stop strings end a sequence early (transformers' ``stop_strings``)
and are cut from the returned text; so does a loop (``loop_repeats``), which otherwise keeps a
whole batch waiting until the looping sequence has used all its tokens.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from icalkit.models.llm.base import (
    LLM,
    AdapterError,
    Generation,
    ModelLoadError,
    ModelNotFoundError,
    Prompt,
    SamplingParams,
    Timer,
    finish_text,
    loop_end,
)
from icalkit.models.llm.cache import files_stamp, weights_stamp

_MARK = "ICALKIT_TURN_MARK"


def turn_tokens(tokenizer: Any) -> tuple[str | None, str | None]:
    """The special tokens that open and close a turn in ``tokenizer``'s chat template (ChatML:
    ``<|im_start|>``, ``<|im_end|>``), read from the rendered template; None for each it lacks.

    The closing one is what a trained answer must end with: ``tokenizer.eos_token`` depends on the
    transformers version that converted the GGUF (one converted SmolLM2's with ``<|im_start|>``)."""
    if not getattr(tokenizer, "chat_template", None):
        return None, None
    added = (t.content for t in tokenizer.added_tokens_decoder.values() if t.special)
    special = sorted({*tokenizer.all_special_tokens, *added}, key=len, reverse=True)

    def leading(text: str) -> str | None:
        text = text.lstrip()
        return next((t for t in special if t and text.startswith(t)), None)

    user = [{"role": "user", "content": _MARK}]
    try:
        closed = tokenizer.apply_chat_template([*user, {"role": "assistant", "content": _MARK}], tokenize=False)
        asked = tokenizer.apply_chat_template(user, tokenize=False, add_generation_prompt=True)
        plain = tokenizer.apply_chat_template(user, tokenize=False)
    except Exception:  # noqa: BLE001 - a template that refuses these turns names no turn tokens
        return None, None
    return leading(asked[len(plain):]), leading(closed.rsplit(_MARK, 1)[-1])


def end_of_turn(tokenizer: Any) -> str:
    """The token a trained answer ends with: the template's end of turn (:func:`turn_tokens`), else eos."""
    return turn_tokens(tokenizer)[1] or tokenizer.eos_token


def stop_ids(tokenizer: Any, eos: int | list[int] | None) -> list[int]:
    """Where an answer ends: the ``eos`` id(s) and the template's turn tokens (a chat model that
    closes its turn or opens a new one has ended its answer)."""
    turns = [tokenizer.convert_tokens_to_ids(t) for t in turn_tokens(tokenizer) if t]
    return sorted({*(eos if isinstance(eos, list) else [eos]), *turns} - {None})


def ensure_pad_token(tokenizer: Any) -> Any:
    """``tokenizer`` with a pad token: its end-of-sequence token where it has none (SmolLM2's GGUF
    converted under some transformers versions), for batched generation and padded training batches."""
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def resolve_device(device: str = "auto") -> str:
    """"auto" → "cuda" when a GPU is visible, else "cpu"; other values pass through."""
    if device != "auto":
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def _split_model_path(model: str | Path | None, gguf_file: str | None) -> tuple[Path, str | None]:
    """Normalise (model, gguf_file): a path to a .gguf file becomes (its folder, its name)."""
    if model is None:
        from icalkit.models.llm.convert import default_model_dir

        return default_model_dir(), None
    path = Path(model).expanduser()
    if path.suffix == ".gguf" and gguf_file is None:
        path, gguf_file = path.parent, path.name
    if not path.is_dir():
        raise ModelNotFoundError(f"model folder {path} does not exist")
    if gguf_file is not None:
        if not (path / gguf_file).is_file():
            raise ModelNotFoundError(f"GGUF file {path / gguf_file} does not exist")
    elif not (path / "config.json").is_file():
        raise ModelNotFoundError(
            f"{path} is not a Hugging Face model folder (no config.json); "
            "pass a model folder or a .gguf file"
        )
    return path.resolve(), gguf_file


def _check_adapter(adapter: str | Path) -> Path:
    path = Path(adapter).expanduser()
    if not path.is_dir():
        raise AdapterError(f"LoRA adapter folder {path} does not exist")
    if not (path / "adapter_config.json").is_file():
        raise AdapterError(f"{path} is not a peft adapter folder (no adapter_config.json)")
    return path.resolve()


@functools.lru_cache(maxsize=4)
def load_model(
    model_dir: str, gguf_file: str | None = None, adapter: str | None = None,
    device: str = "cpu", dtype: str = "auto", stamp: tuple = (),
) -> tuple[Any, Any]:
    """Load (model, tokenizer) once per process; arguments must already be resolved paths.

    ``stamp`` (see :func:`files_stamp`) is only part of the memo key, so that a model or adapter
    folder rewritten on disk is loaded again.

    Raises:
        ModelLoadError: the folder exists but transformers cannot load it.
        AdapterError: the adapter cannot be applied to this model.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if dtype == "auto":
        torch_dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
    elif isinstance(getattr(torch, dtype, None), torch.dtype):
        torch_dtype = getattr(torch, dtype)
    else:
        raise ValueError(f"dtype {dtype!r} is not a torch dtype name (e.g. float32, bfloat16)")
    kwargs: dict[str, Any] = {"gguf_file": gguf_file} if gguf_file else {}
    try:
        tokenizer = AutoTokenizer.from_pretrained(model_dir, **kwargs)
        model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch_dtype, **kwargs)
    except Exception as exc:  # noqa: BLE001 - corrupt files raise many types (SafetensorError...)
        raise ModelLoadError(f"cannot load model from {model_dir}: {exc}") from exc
    if adapter is not None:
        from peft import PeftModel

        try:
            model = PeftModel.from_pretrained(model, adapter)
        except Exception as exc:  # peft raises many types for a bad adapter
            raise AdapterError(f"cannot apply LoRA adapter {adapter} to {model_dir}: {exc}") from exc
    model.to(device).eval()
    return model, tokenizer


class HFLLM(LLM):
    """Generate with a transformers causal LM.

    Args:
        model: model folder, path to a ``.gguf`` file, or None for the default SmolLM2 model.
        gguf_file: GGUF file name inside the ``model`` folder.
        adapter: optional peft LoRA adapter folder.
        device: "auto", "cpu", "cuda", "cuda:1"...
        dtype: "auto" (float32 on CPU, bfloat16 on GPU) or a torch dtype name.
        batch_size: most prompts per forward pass.
        chat_template: apply the tokenizer's chat template (None: when it has one). Chat-message
            prompts need a template; plain strings become one user message.
        threads: torch intra-op threads for the whole process (None: leave torch's setting).
            On a busy machine with few cores, 1 can be several times faster than spinning
            threads that wait for each other.
    """

    backend = "hf"

    def __init__(
        self, model: str | Path | None = None, gguf_file: str | None = None,
        adapter: str | Path | None = None, device: str = "auto", dtype: str = "auto",
        batch_size: int = 16, chat_template: bool | None = None, threads: int | None = None,
    ) -> None:
        if threads is not None:
            import torch

            torch.set_num_threads(threads)
        model_dir, gguf_file = _split_model_path(model, gguf_file)
        adapter_dir = _check_adapter(adapter) if adapter is not None else None
        self.device = resolve_device(device)
        loaded = load_model(
            str(model_dir), gguf_file, str(adapter_dir) if adapter_dir else None, self.device,
            dtype, files_stamp(model_dir, adapter_dir),
        )
        self.model_name = str(model_dir / gguf_file) if gguf_file else str(model_dir)
        self.adapter = adapter_dir
        self.weights_stamp = weights_stamp(model_dir, adapter_dir)  # the files these weights came from
        self._setup(*loaded, batch_size=batch_size, chat_template=chat_template)

    @classmethod
    def from_model(
        cls, model: Any, tokenizer: Any, name: str = "in-memory", batch_size: int = 16,
        chat_template: bool | None = None,
    ) -> HFLLM:
        """Wrap an already-built model and tokenizer (e.g. a tiny model made in code)."""
        self = cls.__new__(cls)
        self.model_name, self.adapter, self.weights_stamp = name, None, ""
        self.device = str(next(model.parameters()).device)
        self._setup(model.eval(), tokenizer, batch_size=batch_size, chat_template=chat_template)
        return self

    def _setup(self, model: Any, tokenizer: Any, batch_size: int, chat_template: bool | None) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.model, self.tokenizer, self.batch_size = model, tokenizer, batch_size
        has_template = bool(getattr(tokenizer, "chat_template", None))
        if chat_template and not has_template:
            raise ModelLoadError(f"{self.model_name}: chat_template=True but the tokenizer has none")
        self.use_chat_template = has_template if chat_template is None else chat_template
        ensure_pad_token(tokenizer)
        gen_cfg = getattr(model, "generation_config", None)
        eos = getattr(gen_cfg, "eos_token_id", None) or tokenizer.eos_token_id
        own = set(eos if isinstance(eos, list) else [eos]) - {None}
        # with the chat template, also the turn tokens, whichever the conversion made eos (stop_ids)
        self.eos_ids = set(stop_ids(tokenizer, eos)) if self.use_chat_template else own
        self.turn_stops = sorted(self.eos_ids - own)  # in the cache key: answers end earlier with them

    def cache_identity(self) -> dict[str, Any]:
        """Backend, model path, adapter, the stamp of the files the weights were loaded from,
        their precision when it is not float32 (bf16 weights answer differently) and the turn
        tokens that end an answer besides eos (``turn_stops``)."""
        ident = super().cache_identity()
        if self.adapter is not None:
            ident["adapter"] = str(self.adapter)
        if self.weights_stamp:
            ident["weights"] = self.weights_stamp
        if self.turn_stops:
            ident["turn_stops"] = self.turn_stops
        dtype = str(next(self.model.parameters()).dtype).removeprefix("torch.")
        if dtype != "float32":  # float32 keys stay as they were before precision was recorded
            ident["dtype"] = dtype
        return ident

    def render(self, prompt: Prompt) -> str:
        """The exact text fed to the model for one prompt (chat template applied when used)."""
        if not self.use_chat_template:
            if not isinstance(prompt, str):
                raise ModelLoadError(
                    f"{self.model_name} has no chat template; pass plain string prompts"
                )
            return prompt
        messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else prompt
        return self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)

    def _generate(self, prompts: list[Prompt], params: SamplingParams) -> list[Generation]:
        texts = [self.render(p) for p in prompts]
        # Sort by length so that each batch pads little; results go back in the input order.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        results: dict[int, Generation] = {}
        for start in range(0, len(order), self.batch_size):
            idx = order[start : start + self.batch_size]
            for i, gen in zip(idx, self._generate_batch([texts[i] for i in idx], params), strict=True):
                results[i] = gen
        return [results[i] for i in range(len(texts))]

    def _generate_batch(self, texts: list[str], params: SamplingParams) -> list[Generation]:
        import torch

        tok = self.tokenizer
        tok.padding_side = "left"
        enc = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False)
        enc = {k: v.to(self.device) for k, v in enc.items()}
        kwargs: dict[str, Any] = {
            "max_new_tokens": params.max_new_tokens,
            "pad_token_id": tok.pad_token_id,
            "eos_token_id": sorted(self.eos_ids),
            "num_return_sequences": params.n,
        }
        if params.greedy:
            kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        else:
            kwargs.update(do_sample=True, temperature=params.temperature, top_k=0, top_p=1.0)
            torch.manual_seed(params.seed)
        if params.stop:
            kwargs.update(stop_strings=list(params.stop), tokenizer=tok)
        if params.loop_repeats:
            kwargs["stopping_criteria"] = self._loop_stop(enc["input_ids"].shape[1], params.loop_repeats)
        with Timer() as timer, torch.inference_mode():
            out = self.model.generate(**enc, **kwargs)
        new = out[:, enc["input_ids"].shape[1] :].tolist()
        prompt_lens = enc["attention_mask"].sum(dim=1).tolist()
        gens = []
        for row in range(len(texts)):
            outs, reasons, n_tokens = [], [], 0
            for ids in new[row * params.n : (row + 1) * params.n]:
                completion, reason = self._decode(ids, params)
                outs.append(completion)
                reasons.append(reason)
                n_tokens += self._count(ids)
            gens.append(Generation(
                texts=outs, prompt_tokens=int(prompt_lens[row]), completion_tokens=n_tokens,
                latency_s=timer.elapsed, model=self.model_name, backend=self.backend,
                finish_reasons=reasons,
            ))
        return gens

    def _count(self, ids: list[int]) -> int:
        """Generated tokens up to and including the first end-of-turn token."""
        for k, t in enumerate(ids):
            if t in self.eos_ids:
                return k + 1
        pad = self.tokenizer.pad_token_id
        while ids and ids[-1] == pad:
            ids = ids[:-1]
        return len(ids)

    def _loop_stop(self, start: int, repeats: int) -> Any:
        """A stopping criterion that ends each sequence at its first loop (:func:`loop_end`),
        checked when a sequence has just produced a newline."""
        from transformers import StoppingCriteria, StoppingCriteriaList

        tok = self.tokenizer
        if getattr(self, "_newline_ids", None) is None:
            vocab = tok.get_vocab().values()
            self._newline_ids = {i for i in vocab if "\n" in tok.decode([i])}
        newline_ids = self._newline_ids

        class _LoopStop(StoppingCriteria):
            def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
                import torch

                done = [t in newline_ids and loop_end(tok.decode(row[start:], skip_special_tokens=True),
                                                      repeats) is not None
                        for t, row in zip(input_ids[:, -1].tolist(), input_ids, strict=True)]
                return torch.tensor(done, dtype=torch.bool, device=input_ids.device)

        return StoppingCriteriaList([_LoopStop()])

    def _decode(self, ids: list[int], params: SamplingParams) -> tuple[str, str]:
        ended = any(t in self.eos_ids for t in ids)
        count = self._count(ids)
        text, cut = finish_text(self.tokenizer.decode(ids[:count], skip_special_tokens=True), params)
        return text, cut or ("stop" if (ended or count < len(ids)) else "length")

