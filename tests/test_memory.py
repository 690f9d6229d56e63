"""Embedders, example store, example memory retrieval, FAISS indexes, trajectory DB, durability."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

from icalkit.memory.embed import (
    ClipImageEmbedder,
    EmbedderError,
    RandomProjectionImageEmbedder,
    SentenceTransformerEmbedder,
    build_embedder,
    build_image_embedder,
)
from icalkit.memory.example import Example, ExampleFormatError, Provenance
from icalkit.memory.example_memory import EmptyMemoryError, ExampleMemory
from icalkit.memory.index import VectorIndex, exact_search
from icalkit.memory.store import ExampleStore, MixedEmbedderError, RecordStore, StoreError
from icalkit.memory.trajectory_db import TrajectoryDB, TrajectoryRecord

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def text_embedder() -> SentenceTransformerEmbedder:
    os.environ["HF_HUB_OFFLINE"] = "1"
    return SentenceTransformerEmbedder()


def unit(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    x = rng.standard_normal((n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def clustered(rng: np.random.Generator, n: int, d: int, n_clusters: int = 50, noise: float = 0.5) -> np.ndarray:
    centers = unit(rng, n_clusters, d)
    x = centers[rng.integers(0, n_clusters, n)] + noise * rng.standard_normal((n, d)).astype(np.float32) / np.sqrt(d)
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def make_example(i: int, instruction: str = "", task_type: str = "generic", state: dict | None = None) -> Example:
    return Example(
        task_id=f"task-{i}",
        task_type=task_type,
        instruction=instruction or f"instruction number {i}",
        filtered_state=state if state is not None else {f"Obj_{i}": {"isOpen": bool(i % 2)}},
        revised_program=f"target = InteractionObject('Obj_{i}')\ntarget.pickup()",
        plan=["go to the object", "pick it up"],
        observed_changes=[{"object": f"Obj_{i}", "attribute": "isPickedUp", "before": False, "after": True}],
        feedback_history=[{"attempt": 1, "feedback": "object not reachable"}],
        success=True,
        provenance=Provenance(source="kinesthetic", model="smollm2", prompt_version="v1", demo_id=f"demo-{i}"),
    )


# -- embedders -------------------------------------------------------------------------------
def test_text_embedder_offline_normalised_and_ordered(text_embedder):
    assert text_embedder.dim == 384 and text_embedder.name == "st:all-MiniLM-L6-v2"
    v = text_embedder.embed_text(
        ["put the apple in the fridge", "place an apple inside the refrigerator", "turn on the television"]
    )
    assert v.shape == (3, 384) and v.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert v[0] @ v[1] > v[0] @ v[2] + 0.3
    with pytest.raises(EmbedderError, match="single str"):
        text_embedder.embed_text("not a list")


def test_text_embedder_bad_folders(tmp_path):
    with pytest.raises(EmbedderError, match="does not exist"):
        SentenceTransformerEmbedder(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(EmbedderError, match="not a sentence-transformers folder"):
        SentenceTransformerEmbedder(tmp_path / "empty")
    corrupt = tmp_path / "corrupt"
    corrupt.mkdir()
    (corrupt / "modules.json").write_text("{ this is not json")
    with pytest.raises(EmbedderError, match="could not load"):
        SentenceTransformerEmbedder(corrupt)


def test_build_embedder_unknown_name_lists_available():
    with pytest.raises(EmbedderError, match="random-projection"):
        build_embedder("word2vec")


def test_random_projection_image_embedder():
    emb = build_embedder("random-projection", size=16, dim=64, seed=3)
    assert emb.name == "randproj-16x16-s3-d64"
    rng = np.random.default_rng(0)
    a = rng.integers(0, 256, (48, 64, 3), dtype=np.uint8)
    a_noisy = np.clip(a.astype(int) + rng.integers(-10, 10, a.shape), 0, 255).astype(np.uint8)
    b = rng.integers(0, 256, (48, 64, 3), dtype=np.uint8)
    v = emb.embed_image([a, a_noisy, b])
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert v[0] @ v[1] > 0.9 > v[0] @ v[2]
    np.testing.assert_array_equal(v, RandomProjectionImageEmbedder(16, 64, 3).embed_image([a, a_noisy, b]))
    with pytest.raises(EmbedderError, match="HxWx3"):
        emb.embed_image([np.zeros((4, 4), np.uint8)])
    with pytest.raises(EmbedderError, match="does not embed text"):
        emb.embed_text(["hello"])


def test_clip_embedder_from_local_folder_and_fallback(tmp_path):
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel

    cfg = CLIPConfig(
        text_config={"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2},
        vision_config={"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
                       "num_attention_heads": 2, "image_size": 32, "patch_size": 8},
        projection_dim=24,
    )
    folder = tmp_path / "tiny-clip"
    CLIPModel(cfg).save_pretrained(folder)
    CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}).save_pretrained(folder)
    emb = build_image_embedder(clip_path=folder)
    assert isinstance(emb, ClipImageEmbedder) and emb.name == "clip:tiny-clip" and emb.dim == 24
    v = emb.embed_image([np.full((40, 50, 3), c, np.uint8) for c in (0, 128, 255)])
    assert v.shape == (3, 24)
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    fallback = build_image_embedder(clip_path=tmp_path / "no-clip-here")
    assert fallback.name.startswith("randproj-")
    with pytest.raises(EmbedderError, match="no config.json"):
        ClipImageEmbedder(tmp_path / "no-clip-here")


# -- example record and store ----------------------------------------------------------------
def test_example_json_round_trip_and_bad_records():
    ex = make_example(7, "rinse the mug", "clean")
    back = Example.from_json(ex.to_json())
    assert back == ex and back.to_dict()["schema_version"] == 1
    with pytest.raises(ExampleFormatError, match="unknown Example fields"):
        Example.from_dict({**ex.to_dict(), "bogus": 1})
    with pytest.raises(ExampleFormatError, match="provenance.source"):
        Example.from_dict({**ex.to_dict(), "provenance": {"source": "dream"}})
    with pytest.raises(ExampleFormatError, match="schema_version"):
        Example.from_dict({**ex.to_dict(), "schema_version": 99})
    with pytest.raises(ExampleFormatError, match="plan must be list"):
        Example.from_dict({**ex.to_dict(), "plan": "a string"})


def test_store_round_trip_and_validation(tmp_path):
    rng = np.random.default_rng(0)
    store = ExampleStore(tmp_path / "ex.db")
    exs = [make_example(i) for i in range(5)]
    vecs = unit(rng, 5, 8)
    for ex, v in zip(exs, vecs, strict=True):
        store.add_example(ex, {"instruction": ("emb-a", v)})
    store.close()
    store = ExampleStore(tmp_path / "ex.db")
    assert len(store) == 5 and [e.example_id for e in store] == [e.example_id for e in exs]
    assert store.get_example(exs[3].example_id) == exs[3]
    sv = store.vectors("instruction")
    np.testing.assert_array_equal(sv.vectors, vecs)
    assert store.signal_embedders() == {"instruction": ("emb-a", 8)}
    with pytest.raises(StoreError, match="already exists"):
        store.add_example(exs[0], {"instruction": ("emb-a", vecs[0])})
    with pytest.raises(StoreError, match="L2-normalised"):
        store.add_example(make_example(9), {"instruction": ("emb-a", 2 * vecs[0])})
    with pytest.raises(MixedEmbedderError, match="'emb-a'.*'emb-b'"):
        store.add_example(make_example(10), {"instruction": ("emb-b", vecs[0])})
    assert len(store) == 5  # failed adds left nothing behind
    with pytest.raises(KeyError, match="nope"):
        store.get_example("nope")
    with pytest.raises(StoreError, match="holds 'examples'"):
        RecordStore(tmp_path / "ex.db", kind="trajectories")
    (tmp_path / "garbage.db").write_bytes(b"this is not an sqlite file" * 100)
    with pytest.raises(StoreError, match="garbage.db"):
        ExampleStore(tmp_path / "garbage.db")


def test_export_hf_dataset_and_jsonl(tmp_path):
    rng = np.random.default_rng(1)
    store = ExampleStore(tmp_path / "ex.db")
    exs = [make_example(i) for i in range(3)]
    for ex, v in zip(exs, unit(rng, 3, 4), strict=True):
        store.add_example(ex, {"instruction": ("emb-a", v)})
    ds = store.to_hf_dataset()
    assert ds.num_rows == 3 and ds[1]["task_id"] == "task-1"
    assert json.loads(ds[2]["filtered_state"]) == exs[2].filtered_state
    assert len(ds[0]["embedding_instruction"]) == 4
    assert json.loads(ds.info.description)["embedders"] == {"instruction": ["emb-a", 4]}
    assert store.to_jsonl(tmp_path / "out.jsonl") == 3
    lines = (tmp_path / "out.jsonl").read_text().splitlines()
    assert Example.from_json(lines[0]) == exs[0]


# -- retrieval -------------------------------------------------------------------------------
def test_aggregated_retrieval_weights_matter(tmp_path, text_embedder):
    img = RandomProjectionImageEmbedder(size=8, dim=32)
    mem = ExampleMemory(tmp_path / "m.db", text_embedder, img)
    rng = np.random.default_rng(0)
    frames = [rng.integers(0, 256, (32, 32, 3), dtype=np.uint8) for _ in range(3)]
    mem.add(make_example(0, "put the apple in the fridge", "fridge", {"Bread": {"isSliced": False}}), frames[0])
    mem.add(make_example(1, "turn on the television", "tv", {"Apple": {"inFridge": False}, "Fridge": {"isOpen": False}}), frames[1])
    mem.add(make_example(2, "water the house plant", "plant", {"Plant": {"isWatered": False}}), frames[2])
    q_state = {"Apple": {"inFridge": False}, "Fridge": {"isOpen": False}}
    query = ("place an apple inside the refrigerator", q_state, frames[2])
    top = lambda w: mem.retrieve(*query, k=3, weights=w)[0].example.task_id  # noqa: E731
    assert top((1, 0, 0)) == "task-0"
    assert top((0, 1, 0)) == "task-1"
    assert top((0, 0, 1)) == "task-2"
    res = mem.retrieve(*query, k=3, weights=(1.0, 0.5, 0.25))
    for r in res:  # aggregated score is the weighted sum of the reported per-signal similarities
        s = r.signal_scores
        assert r.score == pytest.approx(s["instruction"] + 0.5 * s["text_state"] + 0.25 * s["visual_state"], abs=1e-4)
    assert [r.score for r in res] == sorted((r.score for r in res), reverse=True)


def test_filters_empty_memory_and_embedder_mismatch(tmp_path, text_embedder):
    mem = ExampleMemory(tmp_path / "m.db", text_embedder)
    with pytest.raises(EmptyMemoryError, match="empty"):
        mem.retrieve("anything", "", k=1)
    mem.add_many([make_example(i, f"task about thing {i}", "even" if i % 2 == 0 else "odd") for i in range(6)])
    res = mem.retrieve("task about thing 2", "", k=6, exclude_task_ids=["task-2"], task_types=["even"])
    assert {r.example.task_id for r in res} == {"task-0", "task-4"}
    with pytest.raises(EmptyMemoryError, match="passes the filters"):
        mem.retrieve("x", "", task_types=["nonexistent"])
    with pytest.raises(MixedEmbedderError, match="randproj"):
        ExampleMemory(tmp_path / "m.db", RandomProjectionImageEmbedder(dim=384))
    with pytest.raises(MixedEmbedderError, match="other-model"):
        mem.retrieve_vectors({"instruction": np.ones(384, np.float32) / np.sqrt(384)},
                             embedder_names={"instruction": "other-model"})
    with pytest.raises(MixedEmbedderError, match=r"expects \(384,\)"):
        mem.retrieve_vectors({"instruction": np.ones(10, np.float32)})


def test_examples_without_frames_score_zero_on_visual_signal(tmp_path, text_embedder):
    mem = ExampleMemory(tmp_path / "m.db", text_embedder, RandomProjectionImageEmbedder(size=8, dim=32))
    mem.add(make_example(0, "open the drawer"))  # no frame yet: visual signal not registered
    frame = np.full((16, 16, 3), 200, np.uint8)
    res = mem.retrieve("open the drawer", "", frame, k=1)
    assert set(res[0].signal_scores) == {"instruction", "text_state"}
    mem.add(make_example(1, "close the drawer"), frame)
    res = mem.retrieve("open the drawer", "", frame, k=2, weights=(0, 0, 1))
    assert res[0].example.task_id == "task-1" and res[0].signal_scores["visual_state"] == pytest.approx(1.0, abs=1e-5)
    assert "visual_state" not in res[1].signal_scores and res[1].score == pytest.approx(0.0, abs=1e-6)


def _synthetic_memory(tmp_path, text_embedder, n: int, kind: str, rng, **params) -> tuple[ExampleMemory, np.ndarray, np.ndarray]:
    mem = ExampleMemory(tmp_path / f"{kind}.db", text_embedder, index_kind=kind, index_params=params)
    instr, state = clustered(rng, n, 384), clustered(rng, n, 384)
    for i in range(n):
        mem.store.add_example(make_example(i), {"instruction": (text_embedder.name, instr[i]),
                                                "text_state": (text_embedder.name, state[i])})
    return mem, instr, state


def test_flat_memory_matches_numpy_brute_force(tmp_path, text_embedder):
    rng = np.random.default_rng(2)
    mem, instr, state = _synthetic_memory(tmp_path, text_embedder, 300, "flat", rng)
    for qi in range(5):
        q = {"instruction": instr[qi * 7], "text_state": state[qi * 11]}
        res = mem.retrieve_vectors(q, k=5, weights=(0.7, 0.3, 0.0))
        brute = 0.7 * instr @ q["instruction"] + 0.3 * state @ q["text_state"]
        order = np.argsort(-brute)[:5]
        assert [r.example.task_id for r in res] == [f"task-{i}" for i in order]
        np.testing.assert_allclose([r.score for r in res], brute[order], atol=1e-5)


@pytest.mark.parametrize("kind,params", [("hnsw", {"ef_search": 64}), ("ivf", {"min_train": 256, "nprobe": 8})])
def test_approximate_indexes_recall_at_5(kind, params):
    rng = np.random.default_rng(3)
    data, queries = clustered(rng, 4000, 64), clustered(rng, 50, 64)
    index = VectorIndex(64, kind, **params)
    index.add(data[:1500])
    index.add(data[1500:])  # incremental
    _, approx = index.search(queries, 5)
    _, exact = exact_search(data, queries, 5)
    recall = np.mean([len(set(a) & set(e)) / 5 for a, e in zip(approx, exact, strict=True)])
    assert recall >= 0.9, f"{kind} recall@5 = {recall:.3f}"
    allowed = rng.random(4000) < 0.6
    _, filtered = index.search(queries, 5, allowed)
    assert allowed[filtered[filtered >= 0]].all()


def test_memory_sees_records_added_by_another_writer(tmp_path, text_embedder):
    mem_a = ExampleMemory(tmp_path / "shared.db", text_embedder)
    mem_b = ExampleMemory(tmp_path / "shared.db", text_embedder)
    mem_a.add(make_example(0, "slice the bread"))
    assert mem_b.retrieve("slice bread", "", k=1)[0].example.task_id == "task-0"
    mem_a.add(make_example(1, "boil a potato"))
    assert mem_b.retrieve("boil potato", "", k=1)[0].example.task_id == "task-1"


def test_concurrent_retrieve_while_adding(tmp_path, text_embedder):
    rng = np.random.default_rng(5)
    mem, instr, state = _synthetic_memory(tmp_path, text_embedder, 20, "hnsw", rng)
    extra = clustered(rng, 200, 384)
    errors: list[BaseException] = []

    def writer() -> None:
        for i in range(200):
            mem.store.add_example(make_example(100 + i), {"instruction": (text_embedder.name, extra[i]),
                                                          "text_state": (text_embedder.name, extra[i])})

    def reader() -> None:
        try:
            for i in range(100):
                res = mem.retrieve_vectors({"instruction": instr[i % 20], "text_state": state[i % 20]}, k=3)
                assert len(res) == 3
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=writer)] + [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    mem.refresh()
    assert mem.index.ntotal == len(mem) == 220


# -- durability ------------------------------------------------------------------------------
_WRITER = textwrap.dedent(
    """
    import sys, numpy as np
    from icalkit.memory.example import Example
    from icalkit.memory.store import ExampleStore
    path, tag, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    store = ExampleStore(path)
    rng = np.random.default_rng(abs(hash(tag)) % 1000)
    for i in range(n if n > 0 else 10**9):
        v = rng.standard_normal((8, 384)).astype(np.float32)
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        ex = Example(task_id=f"{tag}-{i}", task_type="t", instruction="x" * 2000, example_id=f"{tag}-{i}")
        store.add_example(ex, {"instruction": ("emb", v[:1]), "text_state": ("emb", v[1:2])})
        print(ex.example_id, flush=True)
    """
)


def _writer(path: Path, tag: str, n: int) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, "-c", _WRITER, str(path), tag, str(n)],
                            stdout=subprocess.PIPE, text=True, env=env)


def test_concurrent_appends_threads_and_processes(tmp_path):
    path = tmp_path / "c.db"
    store = ExampleStore(path)
    rng = np.random.default_rng(4)
    vec = unit(rng, 1, 16)[0]

    def worker(t: int) -> None:
        for i in range(25):
            store.add_example(make_example(1000 * t + i), {"instruction": ("emb16", vec)})

    procs = [_writer(tmp_path / "p.db", f"proc{j}", 40) for j in range(2)]
    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(store) == 100 and store.integrity_check() == "ok"
    for p in procs:
        p.communicate(timeout=60)
        assert p.returncode == 0
    pstore = ExampleStore(tmp_path / "p.db")
    assert len(pstore) == 80 and pstore.integrity_check() == "ok"
    assert {e.example_id for e in pstore} == {f"proc{j}-{i}" for j in range(2) for i in range(40)}


def test_kill_9_mid_write_loses_nothing_committed(tmp_path):
    path = tmp_path / "crash.db"
    for round_ in range(3):
        proc = _writer(path, f"r{round_}", 0)
        committed = [proc.stdout.readline().strip() for _ in range(20 + 15 * round_)]
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        store = ExampleStore(path)
        assert store.integrity_check() == "ok"
        ids = {e.example_id for e in store}
        assert set(committed) <= ids
        assert all(store.vectors(s).vectors.shape[0] == len(store) for s in ("instruction", "text_state"))
        store.close()


# -- trajectory database ---------------------------------------------------------------------
def test_trajectory_db_scoring_rule(tmp_path, text_embedder):
    db = TrajectoryDB(tmp_path / "traj.db", text_embedder)
    with pytest.raises(EmptyMemoryError):
        db.retrieve("goal", "graph")
    recs = [
        TrajectoryRecord("heat a cup of coffee", ["robot near sink", "mug on counter", "coffee machine on"],
                         [("go sink", "ok"), ("pickup mug", "ok"), ("toggle machine", "ok")], done=True, task_id="a"),
        TrajectoryRecord("heat a cup of coffee", ["robot in bedroom", "bed unmade"], [("go bed", "ok")], task_id="b"),
        TrajectoryRecord("make the bed", ["robot in bedroom", "pillow on floor"], [("go bed", "ok")], done=True, task_id="c"),
    ]
    for r in recs:
        db.add(r)
    goal, scene = "heat coffee in a mug", "a mug is on the counter"
    res = db.retrieve(goal, scene, k=3)
    q = text_embedder.embed_text([goal, scene])
    for r in res:  # s = sim(goal) + max_t sim(scene, step t), checked by an explicit loop
        steps = text_embedder.embed_text(r.record.scene_graphs)
        step_sims = steps @ q[1]
        expected = float(text_embedder.embed_text([r.record.goal])[0] @ q[0] + step_sims.max())
        assert r.score == pytest.approx(expected, abs=1e-4)
        assert r.best_step == int(np.argmax(step_sims))
    assert res[0].record.task_id == "a" and res[0].best_step == 1
    assert res[0].record.history[1] == ("pickup mug", "ok")
    assert [r.record.task_id for r in db.retrieve(goal, scene, k=3, done_only=True)] == ["a", "c"]
    assert [r.record.task_id for r in TrajectoryDB(tmp_path / "traj.db", text_embedder).retrieve(
        goal, scene, k=1, exclude_task_ids=["a"])] == ["b"]


# -- config ----------------------------------------------------------------------------------
def test_memory_config_overrides_and_builder(tmp_path, text_embedder):
    from icalkit.config import ConfigError, load_config
    from icalkit.memory.config import MemoryConfig, build_memory

    cfg = load_config(MemoryConfig, overrides=[f"path={tmp_path / 'm.db'}", "index=hnsw", "weights=[1, 0.5, 0]",
                                                 "image_embedder.kind=random-projection", "image_embedder.dim=64"])
    assert cfg.weights == (1.0, 0.5, 0.0) and cfg.index_params.ef_search == 128
    mem = build_memory(cfg, text_embedder=text_embedder)
    assert mem.index.kind == "hnsw" and mem.embedder_tags()["visual_state"] == ("randproj-32x32-s0-d64", 64)
    ids = mem.store.add_examples([(make_example(i), {"instruction": (text_embedder.name, text_embedder.embed_text(
        [f"bulk {i}"])[0])}) for i in range(3)])
    assert ids == [1, 2, 3] and len(mem) == 3
    written = load_config(MemoryConfig, overrides=[f"path={tmp_path / 'w.db'}", "index=hnsw", "index_params.hnsw_m=8"])
    assert build_memory(written, text_embedder=text_embedder).index.hnsw_m == 8  # a section an override or a saved config.yaml names
    with pytest.raises(ConfigError, match="memory.index|not one of"):
        load_config(MemoryConfig, overrides=["index=annoy"])
    with pytest.raises(ConfigError, match="clip_path"):
        load_config(MemoryConfig, overrides=["image_embedder.kind=clip"])


def test_index_files_are_written_through_private_temporary_names(tmp_path) -> None:
    """Evaluation workers opening one memory may save its index at once: each writes its own
    temporary file before the rename (a shared name made one worker's rename fail)."""
    import threading

    from icalkit.memory.index import private_tmp

    path = tmp_path / "m.db.faiss"
    names = {private_tmp(path)}
    worker = threading.Thread(target=lambda: names.add(private_tmp(path)))
    worker.start()
    worker.join()
    assert len(names) == 2 and all(n.parent == tmp_path and n.name.startswith("m.db.faiss.") for n in names)
