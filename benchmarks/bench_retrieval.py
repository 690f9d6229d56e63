"""Retrieval latency of the example memory: top-5 by ICAL's aggregated 3-signal score.

For 1k, 10k and 100k stored examples (synthetic clustered unit vectors, 384-d, three signals:
instruction, textual state, visual state), and for memories of vectors from the real embedder
(all-MiniLM-L6-v2 on generated dialogues' retrieval keys and the tasks' object lists), it times,
in the same run:

- the baseline: plain numpy brute force (mat-vec products, weighted sum, argpartition);
- the FAISS search of :class:`~icalkit.memory.example_memory.ExampleMemory` for each index kind,
  exact search (``flat``) and approximate search (``hnsw``, ``ivf``) as separate lines, as a
  ratio against the baseline, with recall@5 against exact;
- the index's build time, the time to save it beside the store and to load it back when the
  memory is reopened (instead of rebuilding);
- the full ``retrieve_vectors`` call (FAISS search + per-signal scores + loading the 5 examples
  from SQLite).

Query embedding is excluded (see bench_embed.py). Writes benchmarks/results/retrieval.json.

Usage: python benchmarks/bench_retrieval.py [--sizes 1000 10000 100000] [--real 2000] [--queries 200] [--threads 1]
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
WEIGHTS = (0.8, 0.1, 0.1)  # ICAL's weights, the memory's default
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


def build_store(path: Path, vecs: dict[str, np.ndarray], batch: int = 5000, names: dict | None = None) -> None:
    """Bulk-load synthetic examples with their vectors (``names``: embedder name per signal)."""
    names = names or TAG_NAMES
    store = ExampleStore(path)
    n = len(vecs["instruction"])
    for start in range(0, n, batch):
        items = []
        for i in range(start, min(n, start + batch)):
            ex = Example(task_id=f"t{i}", task_type=f"type{i % 20}", instruction=f"synthetic task {i}",
                         example_id=f"e{i}", revised_program="obj = InteractionObject('Apple')\nobj.pickup()")
            items.append((ex, {s: (names[s], vecs[s][i]) for s in vecs}))
        store.add_examples(items)
    store.close()


def numpy_top5(vecs: dict[str, np.ndarray], q: dict[str, np.ndarray]) -> np.ndarray:
    """Baseline: aggregated score over every example with numpy, top-5 positions."""
    score = sum(w * (vecs[s] @ q[s]) for w, s in zip(WEIGHTS, SIGNALS, strict=True) if s in q)
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


def bench_kind(path: Path, kind: str, queries: list, exact: list[set], base_ms: float,
               tags: tuple[Embedder, Embedder | None] | None = None) -> dict:
    """Build the memory's index of ``kind`` from the store, save it, reload it, time its searches."""
    text_tag, image_tag = tags or (TagOnly("synthetic-text", DIM), TagOnly("synthetic-image", DIM))
    params = INDEX_PARAMS[kind] if tags is None or kind != "ivf" else {**INDEX_PARAMS[kind], "min_train": 256}
    opened = dict(weights=WEIGHTS, index_kind=kind, index_params=params)
    mem = ExampleMemory(path, text_tag, image_tag, persist_index=False, **opened)
    t0 = time.perf_counter()
    mem.refresh()
    build_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    mem.save_index()
    save_s = time.perf_counter() - t0
    mem.store.close()
    t0 = time.perf_counter()
    mem = ExampleMemory(path, text_tag, image_tag, **opened)  # reopened: loads the saved index
    open_s = time.perf_counter() - t0
    if mem.index_report.get("source") != "loaded":
        raise RuntimeError(f"the saved {kind} index was not reloaded: {mem.index_report}")
    signals = [s for s in SIGNALS if s in queries[0]]
    joint = [np.concatenate([w * q[s] for w, s in zip(WEIGHTS, SIGNALS, strict=True) if s in signals])[None]
             for q in queries]
    search_ms = time_per_query(lambda j: mem.index.search(j, 5), joint)
    got = [set(mem.index.search(j, 5)[1][0].tolist()) for j in joint]
    recall = float(np.mean([len(g & e) / 5 for g, e in zip(got, exact, strict=True)]))
    e2e_ms = time_per_query(lambda q: mem.retrieve_vectors(q, k=5), queries)
    mem.store.close()
    return {
        "search": "exact" if kind == "flat" else "approximate",
        "index_build_s": round(build_s, 2),
        "index_save_s": round(save_s, 3),
        "index_load_s": round(mem.index_report["load_s"], 3),
        "memory_open_with_saved_index_s": round(open_s, 3),
        "search_ms": round(search_ms, 4),
        "speedup_vs_numpy": round(base_ms / search_ms, 2),
        "retrieve_end_to_end_ms": round(e2e_ms, 4),
        "recall_at_5": round(recall, 4),
    }


def real_vectors(n: int, cache: Path) -> tuple[dict[str, np.ndarray], str]:
    """Vectors of the real text embedder for ``n`` generated tasks (cached in ``cache``).

    instruction: the retrieval key (Commander turns) of a template or human-like dialogue;
    text_state: the task's required objects as a state text (no scene is built, to keep it cheap).
    """
    import random

    from icalkit.envs.household.tasks.instructions import write_instructions
    from icalkit.envs.household.tasks.registry import TASK_TYPES, choose_params
    from icalkit.memory.embed import SentenceTransformerEmbedder
    from icalkit.memory.example import format_state
    from icalkit.memory.keys import key_text

    emb = SentenceTransformerEmbedder(num_threads=1)
    path = cache / f"real_vectors_{n}_{emb.name.replace(':', '_')}.npz"
    if path.is_file():
        data = np.load(path)
        return {"instruction": data["instruction"], "text_state": data["text_state"]}, emb.name
    rng, names, keys, states = random.Random(0), sorted(TASK_TYPES), [], []
    for i in range(n):
        tt = TASK_TYPES[names[i % len(names)]]
        room = rng.choice(tt.rooms)
        params = choose_params(tt, room, rng)
        goal, turns = write_instructions(tt.name, params, f"bench/{i}", style="human" if i % 2 else "template")
        keys.append(key_text(goal, turns))
        states.append(format_state({t: {"count": c} for t, c in tt.setup(params, room, rng)[0].items()}))
    vecs = {"instruction": emb.embed_text(keys), "text_state": emb.embed_text(states)}
    cache.mkdir(parents=True, exist_ok=True)
    np.savez(path, **vecs)
    return vecs, emb.name


def bench_real(n: int, n_queries: int, workdir: Path, cache: Path) -> dict:
    """Exact vs approximate search on vectors of the real embedder (first n stored, rest queries)."""
    vecs, name = real_vectors(n + n_queries, cache)
    stored = {s: v[:n] for s, v in vecs.items()}
    queries = [{s: v[n + i] for s, v in vecs.items()} for i in range(n_queries)]
    t0 = time.perf_counter()
    build_store(workdir / f"real{n}.db", stored, names={"instruction": name, "text_state": name})
    row = {"n": n, "vectors": f"real ({name}, instruction + text_state)",
           "store_bulk_load_s": round(time.perf_counter() - t0, 2)}
    base_ms = time_per_query(lambda q: numpy_top5(stored, q), queries)
    row["numpy_bruteforce_ms"] = round(base_ms, 4)
    exact = [set(numpy_top5(stored, q).tolist()) for q in queries]
    for kind in INDEX_PARAMS:
        row[kind] = bench_kind(workdir / f"real{n}.db", kind, queries, exact, base_ms,
                               tags=(TagOnly(name, vecs["instruction"].shape[1]), None))
        print(f"real n={n:>6} {kind:>4}: {row[kind]}  (numpy brute force {base_ms:.3f} ms)", flush=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[1000, 10000, 100000],
                        help="synthetic memory sizes; none: keep the synthetic results already in --out")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--real", type=int, default=2000, help="stored examples with real-embedder vectors (0: skip)")
    parser.add_argument("--cache", type=Path, default=Path("runs/bench_cache"), help="real-embedder vector cache")
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
        real = [bench_real(args.real, args.queries, Path(tmp), args.cache)] if args.real else []
    result = {
        "benchmark": "example-memory retrieval, top-5, aggregated score over 3 signals x 384-d",
        "weights": WEIGHTS,
        "index_params": INDEX_PARAMS,
        "threads": args.threads,
        "machine": {"cpus": os.cpu_count(), "load_avg_at_end": os.getloadavg(), "platform": platform.platform(), "python": platform.python_version()},
        "target": "<= 2 ms per query at 100k with the FAISS path",
        "results": rows,
        "real_embedder_results": real,
    }
    if not args.sizes and args.out.is_file():  # only the real-embedder part was re-run
        result["results"] = json.loads(args.out.read_text())["results"]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
