"""A LoRA adapter merged into its base model: a full model folder that vLLM serves without its LoRA path.

On this CPU vLLM's LoRA path was measured far slower than the same model merged (``docs/finetune.md``),
so ``icalkit serve model=<adapter folder>`` serves the merge. The merge is written once beside the
adapter (``<adapter>_merged/``) and written again when the adapter or its base changes on disk
(``merged_from.json`` holds both folders' stamps), so a retrained adapter is never served stale.
"""

from __future__ import annotations

import json
from pathlib import Path

from icalkit.models.llm.base import AdapterError
from icalkit.models.llm.cache import weights_stamp


def is_adapter(folder: str | Path) -> bool:
    """Whether ``folder`` is a peft adapter (not a model folder)."""
    path = Path(folder)
    return (path / "adapter_config.json").is_file() and not (path / "config.json").is_file()


def merged_model(adapter: str | Path) -> Path:
    """The full model folder of ``adapter`` merged into its base (written when missing or stale).

    Raises:
        AdapterError: the adapter's base folder is missing, or peft cannot apply the adapter to it.
    """
    adapter = Path(adapter).resolve()
    base = Path(json.loads((adapter / "adapter_config.json").read_text()).get("base_model_name_or_path") or "")
    if not (base / "config.json").is_file():
        raise AdapterError(f"adapter {adapter} names its base {base or '(none)'}, which is not a model folder here; "
                           f"fix base_model_name_or_path in its adapter_config.json")
    out = adapter.parent / f"{adapter.name}_merged"
    source = {"adapter": str(adapter), "adapter_stamp": weights_stamp(adapter),
              "base": str(base), "base_stamp": weights_stamp(base)}
    record = out / "merged_from.json"
    if record.is_file() and json.loads(record.read_text()) == source:
        return out
    _merge(adapter, base, out)
    record.write_text(json.dumps(source, indent=1))
    return out


def _merge(adapter: Path, base: Path, out: Path) -> None:
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from icalkit.models.llm.hf import stop_ids

    tokenizer = AutoTokenizer.from_pretrained(base)
    model = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32)
    try:
        model = PeftModel.from_pretrained(model, adapter).merge_and_unload()
    except Exception as exc:  # peft raises many types for a bad adapter
        raise AdapterError(f"cannot apply LoRA adapter {adapter} to {base}: {exc}") from exc
    gen = model.generation_config  # stop where training ended answers, as a full fine-tune's save does
    gen.eos_token_id = stop_ids(tokenizer, gen.eos_token_id)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
