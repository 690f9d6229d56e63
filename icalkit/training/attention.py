"""``sdpa_folded``: SDPA with the query heads of a key/value group folded into one longer query.

SmolLM2 uses grouped-query attention (9 query heads share 3 key/value heads). With a mask,
transformers' ``sdpa`` copies each key/value head once per query head (``repeat_kv``) and its
backward sums the copies again. Folding the group's query heads into the sequence axis instead,
(B, H, S, D) → (B, KV, H/KV · S, D), lets every query of a group attend to the one key/value head
it shares, with the mask repeated along the folded axis: the same attention, without the copies,
and with query blocks the CPU flash kernel runs faster (measured in
``benchmarks/profile_finetune_step.py``).

Without a mask (a causal square, or one query token) it is transformers' ``sdpa`` unchanged: a
fold would break the causal alignment the kernel relies on.
"""

from __future__ import annotations

from typing import Any

NAME = "sdpa_folded"


def sdpa_folded_forward(module: Any, query: Any, key: Any, value: Any, attention_mask: Any,
                        dropout: float = 0.0, scaling: float | None = None, **kwargs: Any) -> tuple[Any, None]:
    """Transformers' attention-function signature; returns ((B, S, H, D) output, None)."""
    import torch
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    groups = getattr(module, "num_key_value_groups", 1)
    b, h, s, d = query.shape
    if (groups == 1 or attention_mask is None or s == 1 or attention_mask.shape[1] != 1  # per-head masks: no fold
            or kwargs.get("position_bias") is not None):
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout,
                                      scaling=scaling, **kwargs)
    kv = key.shape[1]
    mask = attention_mask.expand(b, 1, s, -1).repeat(1, 1, groups, 1) if attention_mask.shape[-2] == s \
        else attention_mask
    out = torch.nn.functional.scaled_dot_product_attention(
        query.reshape(b, kv, groups * s, d), key, value, attn_mask=mask, dropout_p=dropout, scale=scaling)
    return out.reshape(b, h, s, d).transpose(1, 2).contiguous(), None


def register() -> str:
    """Register ``sdpa_folded`` with transformers (idempotent); its name for ``attn_implementation``."""
    from transformers import AttentionInterface, AttentionMaskInterface
    from transformers.masking_utils import sdpa_mask

    AttentionInterface.register(NAME, sdpa_folded_forward)
    AttentionMaskInterface.register(NAME, sdpa_mask)
    return NAME
