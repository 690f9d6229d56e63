"""Text-embedding throughput (sentences/s) of the default embedder (all-MiniLM-L6-v2, CPU).

Embeds generated household instructions and textual states (short and long sentences) at a few
batch sizes; the ratio column compares each batch size with batch size 1. Also times the
random-projection image embedder (frames/s). Writes benchmarks/results/embed.json.

Usage: python benchmarks/bench_embed.py [--sentences 512] [--batch-sizes 1 16 64] [--threads 1 2]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np
import torch
from threadpoolctl import threadpool_limits

from icalkit.memory.embed import RandomProjectionImageEmbedder, SentenceTransformerEmbedder

RESULTS = Path(__file__).resolve().parent / "results" / "embed.json"
OBJECTS = ["apple", "mug", "bread", "tomato", "potato", "plate", "knife", "lettuce", "pan", "bowl"]
PLACES = ["fridge", "sink", "counter top", "microwave", "cabinet", "dining table", "stove burner"]
VERBS = ["put the {o} in the {p}", "slice the {o} and place it on the {p}", "rinse the {o} at the {p}",
         "heat the {o} in the {p} then bring it to the table", "find the {o} near the {p}"]


def sentences(n: int, seed: int = 0) -> list[str]:
    """``n`` instruction / state sentences of varied length."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        o, p = OBJECTS[rng.integers(len(OBJECTS))], PLACES[rng.integers(len(PLACES))]
        if i % 2:
            out.append(VERBS[rng.integers(len(VERBS))].format(o=o, p=p))
        else:  # textual state, a few objects with attributes
            objs = rng.choice(OBJECTS, size=4, replace=False)
            out.append("\n".join(f"{x}: isPickedUp=False, isSliced={bool(rng.integers(2))}, parent={p}" for x in objs))
    return out


def throughput(fn, items: list, batch: int) -> float:
    """Items per second of ``fn`` over ``items`` in chunks of ``batch`` (after one warm-up chunk)."""
    fn(items[:batch])
    t0 = time.perf_counter()
    for start in range(0, len(items), batch):
        fn(items[start:start + batch])
    return len(items) / (time.perf_counter() - t0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sentences", type=int, default=512)
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 16, 64])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="torch/OpenMP thread counts to compare")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    t0 = time.perf_counter()
    text = SentenceTransformerEmbedder(batch_size=max(args.batch_sizes))
    load_s = time.perf_counter() - t0
    data = sentences(args.sentences)
    rows = []
    for threads in args.threads:
        with threadpool_limits(limits=threads):
            torch.set_num_threads(threads)
            base = None
            for bs in args.batch_sizes:
                rate = throughput(text.embed_text, data if bs > 1 else data[:64], bs)
                base = base or rate
                rows.append({"threads": threads, "batch_size": bs, "sentences_per_s": round(rate, 1),
                             "ratio_vs_batch1": round(rate / base, 2)})
                print(f"{text.name} threads {threads} batch {bs:>3}: {rate:8.1f} sentences/s "
                      f"(x{rate / base:.2f} vs batch 1)", flush=True)
    rng = np.random.default_rng(0)
    frames = [rng.integers(0, 256, (224, 224, 3), dtype=np.uint8) for _ in range(256)]
    image = RandomProjectionImageEmbedder()
    img_rate = throughput(image.embed_image, frames, 32)
    print(f"{image.name}: {img_rate:.1f} frames/s (224x224, batch 32)")
    result = {
        "benchmark": "embedding throughput on CPU",
        "text_embedder": text.name,
        "dim": text.dim,
        "model_load_s": round(load_s, 2),
        "text": rows,
        "image": {"embedder": image.name, "frames_per_s": round(img_rate, 1), "frame": "224x224", "batch_size": 32},
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "load_avg_at_end": os.getloadavg()},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
