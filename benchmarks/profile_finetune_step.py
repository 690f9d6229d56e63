"""Where one exact training step of the planner's model spends its time on this CPU.

One micro-batch of the benchmark's planner pairs (``bench_finetune.py``'s ``data_6``) through the
default exact path (completion-only logits, shared prompt prefix, bf16 autocast, gradient through
the prompt): forward + backward, timed after a warm-up (best of ``--repeats``) for each attention
implementation (``sdpa_folded``, the default: the CPU flash kernel with each key/value head's query
heads folded into one query; ``sdpa``: transformers' own, which copies the key/value heads;
``eager``; ``sdpa`` forced to its math backend), then ``torch.profiler`` on the default: the share
of matrix products, of the attention kernels and of the rest. Writes ``benchmarks/results/finetune_profile.json``.

Usage: python benchmarks/profile_finetune_step.py [--micro-batch 4] [--repeats 2]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "finetune_profile.json"
VARIANTS = {"sdpa_folded": "sdpa_folded", "sdpa": "sdpa", "eager": "eager", "sdpa_math": "sdpa"}


def step_fn(attention: str, variant: str, micro_batch: int):
    """(one forward + backward of a fixed micro-batch, its token count)."""
    import torch
    from bench_finetune import build_data
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from icalkit.training.completion_loss import completion_loss
    from icalkit.training.finetune import TrainConfig, load_model, load_pairs, make_collator, tokenize_split

    model, tok = load_model(TrainConfig(method="full", device="cpu", precision="bf16", attention=attention))
    pairs, _ = tokenize_split(load_pairs(build_data(6))["train"], tok, 2048)
    feats = [{k: pairs[i][k] for k in ("input_ids", "labels")} for i in range(micro_batch)]
    batch = make_collator(tok, False, shared_prefix=True, prompt_grad=True)(feats)
    model.train()

    def step() -> float:
        backend = sdpa_kernel(SDPBackend.MATH) if variant == "sdpa_math" else contextlib.nullcontext()
        with backend, torch.autocast("cpu", dtype=torch.bfloat16):
            loss = completion_loss(model, batch)
        loss.backward()
        model.zero_grad(set_to_none=True)
        return float(loss)

    return step, sum(len(f["input_ids"]) for f in feats)


def main() -> None:
    import torch
    from torch.profiler import ProfilerActivity, profile

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--micro-batch", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    rows, default_step = {}, None
    for variant, attention in VARIANTS.items():
        step, tokens = step_fn(attention, variant, args.micro_batch)
        step()  # warm-up
        times = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            step()
            times.append(time.perf_counter() - start)
        rows[variant] = {"step_s": round(min(times), 2), "tokens": tokens, "tokens_per_s": round(tokens / min(times), 1)}
        default_step = default_step or step
        print(variant, rows[variant])
    for row in rows.values():
        row["ratio_vs_sdpa"] = round(row["tokens_per_s"] / rows["sdpa"]["tokens_per_s"], 2)  # transformers' own
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        default_step()
    ops = {e.key: e.self_cpu_time_total for e in prof.key_averages()}
    total = sum(ops.values())
    attn = sum(t for k, t in ops.items() if "scaled_dot_product" in k)
    share = {"matmul": round(ops.get("aten::mm", 0) / total, 3), "attention": round(attn / total, 3)}
    share["other"] = round(1 - share["matmul"] - share["attention"], 3)
    top = sorted(ops.items(), key=lambda kv: -kv[1])[:8]
    result = {"benchmark": "finetune_profile", "micro_batch": args.micro_batch, "threads": args.threads,
              "path": "completion-only logits + shared prefix, bf16 autocast, gradient through the prompt (exact)",
              "variants": rows, "default": "sdpa_folded", "default_time_share": share,
              "default_top_ops_ms": {k: round(t / 1000, 1) for k, t in top}}
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
