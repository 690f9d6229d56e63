"""Retrieval latency of the example memory: top-5 by ICAL's aggregated 3-signal score.

For 1k, 10k and 100k stored examples (synthetic clustered unit vectors, 384-d, three signals:
instruction, textual state, visual state) it times, in the same run:

- the baseline: plain numpy brute force (three mat-vec products, weighted sum, argpartition);
- the FAISS search of :class:`~icalkit.memory.example_memory.ExampleMemory` for each index kind
  (flat = exact, hnsw, ivf), as a ratio against the baseline, with recall@5 against exact;
- the full ``retrieve_vectors`` call (FAISS search + per-signal scores + loading the 5 examples
  from SQLite).

Query embedding is excluded (see bench_embed.py). Writes benchmarks/results/retrieval.json.

Usage: python benchmarks/bench_retrieval.py [--sizes 1000 10000 100000] [--queries 200] [--threads 1]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from icalkit.memory.embed import Embedder
from icalkit.memory.example import Example
from icalkit.memory.example_memory import SIGNALS, ExampleMemory
from icalkit.memory.store import ExampleStore

DIM = 384
N_TYPES = 200
NOISE = 0.6
WEIGHTS = (1.0, 0.7, 0.3)
RESULTS = Path(__file__).resolve().parent / "results" / "retrieval.json"
TAG_NAMES = {"instruction": "synthetic-text", "text_state": "synthetic-text", "visual_state": "synthetic-image"}
INDEX_PARAMS = {"flat": {}, "hnsw": {"hnsw_m": 32, "ef_search": 128, "ef_construction": 64}, "ivf": {"nprobe": 16}}


class TagOnly(Embedder):
    """Names the synthetic vectors' "embedder"; the benchmark passes precomputed vectors."""

    def __init__(self, name: str, dim: int):
        self.name, self.dim = name, dim


def synthetic(rng: np.random.Generator, n: int, n_types: int, centers: dict | None = None) -> tuple[dict, dict]:
    """Unit vectors per signal: each example belongs to one of ``n_types`` task types; all three
    signals of an example sit near their type's centre (noise of norm ~0.6), as in real memories
    where examples of a task type have similar instructions, states and frames."""
    if centers is None:
        centers = {}
        for s in SIGNALS:
            c = rng.standard_normal((n_types, DIM)).astype(np.float32)
            centers[s] = c / np.linalg.norm(c, axis=1, keepdims=True)
    types = rng.integers(0, n_types, n)
    out = {}
    for s in SIGNALS:
        x = centers[s][types] + NOISE * rng.standard_normal((n, DIM)).astype(np.float32) / np.sqrt(DIM)
        out[s] = x / np.linalg.norm(x, axis=1, keepdims=True)
    return out, centers


def build_store(path: Path, vecs: dict[str, np.ndarray], batch: int = 5000) -> None:
    """Bulk-load synthetic examples with their vectors."""
    store = ExampleStore(path)
    n = len(vecs["instruction"])
    for start in range(0, n, batch):
        items = []
        for i in range(start, min(n, start + batch)):
            ex = Example(task_id=f"t{i}", task_type=f"type{i % 20}", instruction=f"synthetic task {i}",
                         example_id=f"e{i}", revised_program="obj = InteractionObject('Apple')\nobj.pickup()")
            items.append((ex, {s: (TAG_NAMES[s], vecs[s][i]) for s in SIGNALS}))
        store.add_examples(items)
    store.close()


def numpy_top5(vecs: dict[str, np.ndarray], q: dict[str, np.ndarray]) -> np.ndarray:
    """Baseline: aggregated score over every example with numpy, top-5 positions."""
    score = sum(w * (vecs[s] @ q[s]) for w, s in zip(WEIGHTS, SIGNALS, strict=True))
    top = np.argpartition(-score, 4)[:5]
    return top[np.argsort(-score[top])]


def time_per_query(fn, queries: list) -> float:
    """Median wall time of ``fn(q)`` in milliseconds (after 3 warm-up calls)."""
    for q in queries[:3]:
        fn(q)
    times = []
    for q in queries:
        t0 = time.perf_counter()
        fn(q)
        times.append(time.perf_counter() - t0)
    return 1e3 * float(np.median(times))


def bench_size(n: int, n_queries: int, workdir: Path, rng: np.random.Generator) -> dict:
    vecs, centers = synthetic(rng, n, N_TYPES)
    qv, _ = synthetic(rng, n_queries, N_TYPES, centers)
    queries = [{s: qv[s][i] for s in SIGNALS} for i in range(n_queries)]
    t0 = time.perf_counter()
    build_store(workdir / f"mem{n}.db", vecs)
    row = {"n": n, "store_bulk_load_s": round(time.perf_counter() - t0, 2)}
    base_ms = time_per_query(lambda q: numpy_top5(vecs, q), queries)
    row["numpy_bruteforce_ms"] = round(base_ms, 4)
    exact = [set(numpy_top5(vecs, q).tolist()) for q in queries]
    for kind in INDEX_PARAMS:
        row[kind] = bench_kind(workdir / f"mem{n}.db", kind, queries, exact, base_ms)
        print(f"n={n:>6} {kind:>4}: {row[kind]}  (numpy brute force {base_ms:.3f} ms)", flush=True)
    return row


def bench_kind(path: Path, kind: str, queries: list, exact: list[set], base_ms: float) -> dict:
    """Build the memory's index of ``kind`` from the store and time its searches."""
    text_tag, image_tag = TagOnly("synthetic-text", DIM), TagOnly("synthetic-image", DIM)
    mem = ExampleMemory(path, text_tag, image_tag, weights=WEIGHTS, index_kind=kind, index_params=INDEX_PARAMS[kind])
    t0 = time.perf_counter()
    mem.refresh()
    build_s = time.perf_counter() - t0
    joint = [np.concatenate([w * q[s] for w, s in zip(WEIGHTS, SIGNALS, strict=True)])[None] for q in queries]
    search_ms = time_per_query(lambda j: mem.index.search(j, 5), joint)
    got = [set(mem.index.search(j, 5)[1][0].tolist()) for j in joint]
    recall = float(np.mean([len(g & e) / 5 for g, e in zip(got, exact, strict=True)]))
    e2e_ms = time_per_query(lambda q: mem.retrieve_vectors(q, k=5), queries)
    mem.store.close()
    return {
        "index_build_s": round(build_s, 2),
        "search_ms": round(search_ms, 4),
        "speedup_vs_numpy": round(base_ms / search_ms, 2),
        "retrieve_end_to_end_ms": round(e2e_ms, 4),
        "recall_at_5": round(recall, 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--threads", type=int, default=1,
                        help="OpenMP/BLAS threads for FAISS and numpy (1: best single-query latency on a shared box)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    threadpool_limits(limits=args.threads)
    rng = np.random.default_rng(0)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.sizes:
            rows.append(bench_size(n, args.queries, Path(tmp), rng))
    result = {
        "benchmark": "example-memory retrieval, top-5, aggregated score over 3 signals x 384-d",
        "weights": WEIGHTS,
        "index_params": INDEX_PARAMS,
        "threads": args.threads,
        "machine": {"cpus": os.cpu_count(), "load_avg_at_end": os.getloadavg(), "platform": platform.platform(), "python": platform.python_version()},
        "target": "<= 2 ms per query at 100k with the FAISS path",
        "results": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
