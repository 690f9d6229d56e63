"""Generation throughput of the transformers backend (default SmolLM2-135M-Instruct, CPU).

Greedy generation of ``--new-tokens`` tokens for batches of 1, 4 and 16 household-style prompts
in one ``generate`` call each (left padding, no response cache). Tokens/s counts the tokens
actually generated (up to each completion's end of turn); the ratio column compares every batch
size with batch 1. Best of ``--repeats`` runs, interleaved, so that load from other processes
affects all batch sizes alike. Writes benchmarks/results/llm.json.

Usage: python benchmarks/bench_llm.py [--batch-sizes 1 4 16] [--new-tokens 32] [--threads 1]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import torch

from icalkit.models.llm.hf import HFLLM

RESULTS = Path(__file__).resolve().parent / "results" / "llm.json"
OBJECTS = ["apple", "mug", "bread", "tomato", "potato", "plate", "knife", "lettuce"]
PLACES = ["fridge", "sink", "counter top", "microwave", "cabinet", "dining table", "stove burner", "shelf"]


def prompts(n: int) -> list[str]:
    """``n`` distinct planning prompts of varied length."""
    out = []
    for i in range(n):
        o, p = OBJECTS[i % len(OBJECTS)], PLACES[(3 * i) % len(PLACES)]
        extra = " Explain each step briefly and mention what could go wrong." * (i % 3)
        out.append(f"Write a numbered plan for a household robot: put the {o} in the {p}.{extra}")
    return out


def run_once(llm: HFLLM, batch: list[str], new_tokens: int) -> tuple[float, int]:
    """(seconds, generated tokens) of one batched generate call."""
    start = time.perf_counter()
    gens = llm.generate(batch, max_new_tokens=new_tokens)
    return time.perf_counter() - start, sum(g.completion_tokens for g in gens)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads (1: robust on a busy machine; 0: torch's default)")
    args = parser.parse_args()

    llm = HFLLM(device="cpu", batch_size=max(args.batch_sizes), threads=args.threads or None)
    llm.generate(prompts(2), max_new_tokens=4)  # warm-up
    best: dict[int, tuple[float, int]] = {}
    for _ in range(args.repeats):
        for b in args.batch_sizes:
            secs, toks = run_once(llm, prompts(b), args.new_tokens)
            if b not in best or toks / secs > best[b][1] / best[b][0]:
                best[b] = (secs, toks)
    base = best[args.batch_sizes[0]][1] / best[args.batch_sizes[0]][0]
    rows = []
    print(f"{'batch':>5} {'tokens':>7} {'seconds':>8} {'tokens/s':>9} {'ratio':>6}")
    for b in args.batch_sizes:
        secs, toks = best[b]
        rows.append({"batch_size": b, "tokens": toks, "seconds": round(secs, 3),
                     "tokens_per_s": round(toks / secs, 2), "ratio_vs_batch1": round(toks / secs / base, 2)})
        print(f"{b:>5} {toks:>7} {secs:>8.2f} {toks / secs:>9.1f} {toks / secs / base:>6.2f}")
    result = {
        "benchmark": "llm_generation_throughput", "backend": "hf", "model": llm.model_name,
        "dtype": str(next(llm.model.parameters()).dtype), "device": llm.device,
        "max_new_tokens": args.new_tokens, "repeats": args.repeats,
        "torch_threads": torch.get_num_threads(), "cpu_count": os.cpu_count(),
        "load_average_1m": round(os.getloadavg()[0], 2), "platform": platform.platform(),
        "torch": torch.__version__, "results": rows,
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
