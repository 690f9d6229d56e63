"""``bench_finetune.py serve``: vLLM's OpenAI-compatible CPU server, one request at a time vs 8 at once, for the
base model, a LoRA adapter (vLLM's LoRA path) and the same adapter merged into its base (``icalkit serve
model=<adapter>``); the figures go to ``benchmarks/results/finetune.json`` (``serving``, or
``serving_planner_prompts`` with ``--pairs``)."""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path


def serve_figures(url: str, model: str, prompts: list, new_tokens: int) -> dict:
    """Greedy completions of ``prompts`` from one served model, one at a time vs 8 at once: tokens/s, ratio."""
    from icalkit.models.llm.openai_backend import OpenAILLM

    figures = {}
    for conc in (1, 8):
        llm = OpenAILLM(model, base_url=url, concurrency=conc)
        llm.generate(prompts[:2], max_new_tokens=8)  # warm-up
        start = time.perf_counter()
        gens = llm.generate(prompts, max_new_tokens=new_tokens)
        wall = time.perf_counter() - start
        tokens = sum(g.completion_tokens for g in gens)
        figures[f"concurrency_{conc}"] = {"tokens": tokens, "seconds": round(wall, 2), "tokens_per_s": round(tokens / wall, 1)}
    figures["ratio_8_vs_1"] = round(figures["concurrency_8"]["tokens_per_s"] / figures["concurrency_1"]["tokens_per_s"], 2)
    print(model, figures)
    return figures


def phase_serve(args: argparse.Namespace) -> dict:
    """Base and adapter from one server (vLLM's LoRA path), then the same adapter merged into its base and
    served as a full model (``icalkit serve model=<adapter>``), on the same prompts."""
    from icalkit.inference.serve import ServeConfig, serving

    if args.pairs:  # the planner's own prompts (chat messages), as the evaluation sends them
        rows = [r for line in Path(args.pairs).read_text().splitlines() for r in json.loads(line).get("rows", [])]
        prompts = [r["prompt"] for r in rows[: args.requests]]
    else:
        prompts = [f"Write a numbered plan for a household robot: put the {o} in the sink."
                   for o in ["apple", "mug", "bread", "tomato", "potato", "plate", "knife", "lettuce"]]
    prompts = (prompts * (args.requests // len(prompts) + 1))[: args.requests]
    rank = int(json.loads((Path(args.adapter) / "adapter_config.json").read_text()).get("r", 16))
    cfg = ServeConfig(adapters={"tuned": args.adapter}, max_lora_rank=max(16, rank), max_model_len=6144, timeout_s=600)
    with serving(cfg) as url:
        out = {"base": serve_figures(url, "smollm2", prompts, args.new_tokens),
               "adapter": serve_figures(url, "tuned", prompts, args.new_tokens)}
    with serving(ServeConfig(model=args.adapter, served_name="merged", max_model_len=6144, timeout_s=600)) as url:
        out["merged_adapter"] = serve_figures(url, "merged", prompts, args.new_tokens)
    out["merged_vs_adapter"] = {f"concurrency_{c}": round(out["merged_adapter"][f"concurrency_{c}"]["tokens_per_s"]
                                                          / out["adapter"][f"concurrency_{c}"]["tokens_per_s"], 2)
                                for c in (1, 8)}
    key = "serving_planner_prompts" if args.pairs else "serving"
    return {key: {"server": "vLLM CPU (.venv-vllm), eager", "adapter_dir": args.adapter, "adapter_rank": rank,
                        "prompts": args.pairs or "short (one line)", "requests": args.requests,
                        "max_new_tokens": args.new_tokens, "load_average_1m": os.getloadavg()[0], **out}}
