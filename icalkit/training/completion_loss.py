"""Completion-only loss with two exact savings for planner pairs: fewer logits and a shared prompt prefix.

Every planner prompt starts with the same system text and API reference (~440 of ~850 tokens),
and the loss covers only the program. Two things a plain causal-LM forward computes are
therefore not needed, and :class:`CompletionLossTrainer` skips them without changing the loss
or its gradient:

- **Logits only where there is a label.** The LM head (576 × 49,152 for SmolLM2) and the
  softmax run on the completion positions only, not on every prompt token.
- **A shared prefix computed once per micro-batch** (:class:`SharedPrefixCollator`). The
  longest token prefix the micro-batch's prompts share runs once (batch 1); its keys/values are
  repeated for the batch and the rest of each pair attends to them. Autograd carries every
  pair's gradient back through the one prefix pass, so the gradient is the sum it would be with
  the prefix in each row (tested against the plain forward).

One saving is not exact and is off by default: **the prompt without gradient**
(``prompt_grad=False``). Each pair's prompt is encoded with the current weights under
``no_grad`` (no activations kept, no backward) and only the completion runs with autograd,
attending to the prompt's keys/values. The loss is the same; the gradient leaves out the path
through the prompt's own representations (the weights still learn how the completion reads the
prompt). A planner pair is ~85 % prompt, so a step costs about half as much.

All of them call the decoder and the LM head directly, past a DDP wrapper's forward; multi-process
runs therefore use the model's own forward and loss (``icalkit.training.finetune`` decides).
"""

from __future__ import annotations

from typing import Any

IGNORE = -100


def shared_prefix_length(input_ids: list[list[int]], labels: list[list[int]]) -> int:
    """Length of the longest common token prefix of the rows that lies inside every prompt.

    The prefix stops at least one token before each row's first labelled token, so that the
    position predicting that token belongs to the row's own part.
    """
    limit = min(first_label(lab) for lab in labels) - 1
    limit = min(limit, *(len(ids) for ids in input_ids))
    first = input_ids[0]
    for i in range(max(limit, 0)):
        if any(ids[i] != first[i] for ids in input_ids[1:]):
            return i
    return max(limit, 0)


class SharedPrefixCollator:
    """Micro-batches as ``prefix_ids`` (1 × P, the shared prompt prefix) plus padded per-pair rests.

    Keys: ``prefix_ids``, ``input_ids`` / ``labels`` / ``position_ids`` (B × S, right-padded,
    positions continuing after the prefix) and ``attention_mask`` (B × (P + S): the prefix and
    each row's real tokens), whose sum is the micro-batch's pair tokens (the Trainer counts it).

    With ``split_prompt`` the rest is cut in two: ``prompt_ids`` / ``prompt_position_ids``
    (B × A, right-padded: each row's prompt after the prefix, up to but not including its last
    prompt token) and ``input_ids`` / ``labels`` / ``position_ids`` (B × C: the last prompt token,
    whose position predicts the first completion token, and the completion); ``attention_mask``
    is B × (P + A + C). Every row keeps at least one token in ``prompt_ids`` so that no padded
    query is left with nothing to attend to.
    """

    def __init__(self, pad_token_id: int, split_prompt: bool = False) -> None:
        self.pad = pad_token_id
        self.split_prompt = split_prompt

    def __call__(self, features: list[dict[str, Any]]) -> dict[str, Any]:
        import torch

        ids = [list(f["input_ids"]) for f in features]
        labels = [list(f["labels"]) for f in features]
        p = shared_prefix_length(ids, labels) if len(ids) > 1 else 0
        if not self.split_prompt:
            rest = [r[p:] for r in ids]
            mask, tensors = self._padded(rest, [r[p:] for r in labels], p)
            return {"prefix_ids": torch.tensor([ids[0][:p]], dtype=torch.long), **tensors,
                    "attention_mask": torch.cat([torch.ones(len(rest), p, dtype=torch.long), mask], dim=1)}
        starts = [first_label(lab) - 1 for lab in labels]  # the last prompt token starts the part with gradient
        p = max(0, min(p, min(starts) - 1))
        prompts = [r[p:s] for r, s in zip(ids, starts, strict=True)]
        prompt_mask, prompt = self._padded(prompts, prompts, p)
        rest_mask, tensors = self._padded([r[s:] for r, s in zip(ids, starts, strict=True)],
                                          [r[s:] for r, s in zip(labels, starts, strict=True)], 0)
        tensors["position_ids"] += torch.tensor(starts).unsqueeze(1)
        return {"prefix_ids": torch.tensor([ids[0][:p]], dtype=torch.long), "prompt_ids": prompt["input_ids"],
                "prompt_position_ids": prompt["position_ids"], **tensors,
                "attention_mask": torch.cat([torch.ones(len(ids), p, dtype=torch.long), prompt_mask, rest_mask], dim=1)}

    def _padded(self, rows: list[list[int]], labels: list[list[int]], start: int) -> tuple[Any, dict[str, Any]]:
        """(mask, {input_ids, labels, position_ids}) of right-padded rows whose positions begin at ``start``."""
        import torch

        width = max(len(r) for r in rows)

        def padded(values: list[list[int]], value: int) -> Any:
            return torch.tensor([r + [value] * (width - len(r)) for r in values], dtype=torch.long)

        return padded([[1] * len(r) for r in rows], 0), {
            "input_ids": padded(rows, self.pad), "labels": padded(labels, IGNORE),
            "position_ids": torch.arange(start, start + width).expand(len(rows), width).clone()}


def first_label(labels: list[int]) -> int:
    """Index of the first labelled token (the completion's start)."""
    return next((i for i, t in enumerate(labels) if t != IGNORE), len(labels))


def completion_loss(model: Any, batch: dict[str, Any], num_items: Any = None) -> Any:
    """Summed cross-entropy over labelled positions, divided by ``num_items`` (default: their count).

    ``model`` is a causal LM (or a peft model around one); ``batch`` comes from
    :class:`SharedPrefixCollator` (or any collator giving ``input_ids``/``labels``, with optional
    ``attention_mask``/``position_ids``, e.g. transformers' flattening collator).
    """
    import torch
    from transformers import DynamicCache

    lm = model.get_base_model() if hasattr(model, "get_base_model") else model
    decoder, head = lm.get_decoder(), lm.get_output_embeddings()
    prefix, prompt = batch.get("prefix_ids"), batch.get("prompt_ids")
    rows = batch["input_ids"].shape[0]
    extra: dict[str, Any] = {"use_cache": False}
    with torch.set_grad_enabled(torch.is_grad_enabled() and prompt is None):  # split prompt: no gradient
        if prefix is not None and prefix.shape[-1] > 0:
            cache = DynamicCache(config=lm.config)
            decoder(input_ids=prefix, past_key_values=cache, use_cache=True)
            cache.batch_repeat_interleave(rows)
            extra = {"past_key_values": cache, "use_cache": True}
        if prompt is not None:
            extra = {"past_key_values": extra.get("past_key_values") or DynamicCache(config=lm.config),
                     "use_cache": True}
            seen = extra["past_key_values"].get_seq_length() + prompt.shape[-1]
            decoder(input_ids=prompt, attention_mask=batch["attention_mask"][:, :seen],
                    position_ids=batch["prompt_position_ids"], **extra)
    hidden = decoder(input_ids=batch["input_ids"], attention_mask=batch.get("attention_mask"),
                     position_ids=batch.get("position_ids"), **extra).last_hidden_state
    targets = batch["labels"][:, 1:]
    keep = targets != IGNORE
    logits = head(hidden[:, :-1][keep]).float()
    total = torch.nn.functional.cross_entropy(logits, targets[keep], reduction="sum")
    denom = num_items if num_items is not None else keep.sum().clamp(min=1)
    return total / denom


def completion_loss_trainer() -> type:
    """A ``transformers.Trainer`` subclass whose loss is :func:`completion_loss`."""
    from transformers import Trainer

    class CompletionLossTrainer(Trainer):
        """Trainer computing :func:`completion_loss` (the loss is already scaled for accumulation)."""

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):  # noqa: ANN001, ANN201
            self.loss_is_scaled_for_ga = num_items_in_batch is not None
            with self.accelerator.autocast():  # accelerate autocasts model.forward only, which this loss bypasses
                loss = completion_loss(model, inputs, num_items_in_batch)
            return (loss, {}) if return_outputs else loss  # no logits kept: evaluation reads the loss only

    return CompletionLossTrainer
