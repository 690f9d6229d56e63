"""Models for the planner and P-RAG tests: a scripted test double and a real tiny Llama."""

from __future__ import annotations

from functools import lru_cache

from icalkit.models.llm.base import LLM, Generation, SamplingParams


class ScriptedLLM(LLM):
    """Test double for the model only: returns the next canned text for every prompt.

    ``texts`` may also be a function of the prompt's last user message (for step-wise agents).
    """

    backend = "scripted"
    model_name = "scripted"

    def __init__(self, texts) -> None:
        self.texts = texts if callable(texts) else list(texts)
        self.prompts: list = []

    def _generate(self, prompts: list, params: SamplingParams) -> list[Generation]:
        out = []
        for p in prompts:
            self.prompts.append(p)
            if callable(self.texts):
                text = self.texts(p[-1]["content"] if isinstance(p, list) else p)
            else:
                text = self.texts.pop(0) if self.texts else ""
            out.append(Generation([text], 10, 5, 0.01, self.model_name, self.backend, finish_reasons=["stop"]))
        return out


@lru_cache(maxsize=1)
def tiny_model_and_tokenizer():
    """A random 2-layer Llama with SmolLM2's tokenizer (chat template included)."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from icalkit.models.llm.convert import default_model_dir

    tokenizer = AutoTokenizer.from_pretrained(default_model_dir())
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
                      bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                      pad_token_id=tokenizer.pad_token_id)
    return LlamaForCausalLM(cfg).eval(), tokenizer


@lru_cache(maxsize=1)
def tiny_llm():
    """The tiny Llama run by the real HF backend (no response cache)."""
    from icalkit.models.llm.hf import HFLLM

    model, tokenizer = tiny_model_and_tokenizer()
    return HFLLM.from_model(model, tokenizer, name="tiny-llama", chat_template=True)


def save_tiny_model(folder):
    """Save the tiny Llama as a model folder (for commands that load ``llm.model=<folder>``)."""
    model, tokenizer = tiny_model_and_tokenizer()
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def one_torch_thread():
    """Generator for a module fixture: one intra-op thread (two spinning threads on a busy
    2-core machine run several times slower)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
