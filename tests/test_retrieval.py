"""Retrieval keys shared by learning and deployment, recorded memory settings, the saved FAISS index,
the dialogue generators, and the learned retriever's data and training (issue 13)."""

from __future__ import annotations

import logging
import os
import random

import numpy as np
import pytest

from icalkit.agents.context import RETRIEVAL_STATE_OBJECTS, retrieval_query, retrieval_state, retrieval_text
from icalkit.envs.household.scene import build_world
from icalkit.envs.household.tasks.sampler import sample_task
from icalkit.memory.embed import SentenceTransformerEmbedder
from icalkit.memory.example import Example, format_state
from icalkit.memory.example_memory import (
    DEFAULT_WEIGHTS,
    EmptyMemoryError,
    ExampleMemory,
    MemorySettingsError,
)
from icalkit.memory.index import VectorIndex
from icalkit.memory.keys import KeyKindError, key_text
from icalkit.memory.store import ExampleStore


@pytest.fixture(scope="module")
def embedder() -> SentenceTransformerEmbedder:
    os.environ["HF_HUB_OFFLINE"] = "1"
    return SentenceTransformerEmbedder()


def example_like_ical(task, world) -> Example:
    """An example stored the way ICALLearner._save stores one."""
    return Example(task_id=task.task_id, task_type=task.task_type, instruction=task.instruction,
                   dialogue=[f"{who}: {text}" for who, text in task.dialogue],
                   filtered_state=retrieval_state(world, task), success=True)


# -- keys ------------------------------------------------------------------------------------
def test_key_text_kinds_and_forms() -> None:
    turns = [("Driver", "hi what now"), ("Commander", "make coffee"), ("Driver", "done")]
    stored = [f"{s}: {t}" for s, t in turns]
    for form in (turns, stored):
        assert key_text("Make a coffee.", form, "commander") == "make coffee"
        assert key_text("Make a coffee.", form, "dialogue") == "Driver: hi what now\nCommander: make coffee\nDriver: done"
        assert key_text("Make a coffee.", form, "instruction") == "Make a coffee."
    assert key_text("Put the mug away.", [], "commander") == "Put the mug away."  # relabeled examples
    with pytest.raises(KeyKindError, match="unknown retrieval key kind 'goal'.*commander"):
        key_text("x", [], "goal")


def test_learning_and_deployment_build_the_same_key(tmp_path, embedder) -> None:
    task = sample_task("Sandwich", 0, "train")
    world = build_world(task)
    mem = ExampleMemory(tmp_path / "m.db", embedder)
    ex = example_like_ical(task, world)
    text, state = retrieval_query(task, world, mem)
    assert mem.key_text(ex.instruction, ex.dialogue) == text == retrieval_text(task, mem)
    assert format_state(ex.filtered_state) == format_state(state)
    assert len(state) <= RETRIEVAL_STATE_OBJECTS
    mem.add(ex)
    hit = mem.retrieve(text, state, k=1)[0]
    assert hit.signal_scores["instruction"] == pytest.approx(1.0, abs=1e-4)
    assert hit.signal_scores["text_state"] == pytest.approx(1.0, abs=1e-4)
    assert hit.score == pytest.approx(DEFAULT_WEIGHTS[0] + DEFAULT_WEIGHTS[1], abs=1e-4)


# -- recorded settings -----------------------------------------------------------------------
def test_memory_records_key_and_weights(tmp_path, embedder, caplog) -> None:
    path = tmp_path / "m.db"
    mem = ExampleMemory(path, embedder, key="dialogue", weights=(0.5, 0.5, 0.0))
    mem.add(Example(task_id="t0", task_type="Coffee", instruction="Make coffee.", dialogue=["Commander: coffee pls"]))
    mem.close()
    again = ExampleMemory(path, embedder)  # no settings: the recorded ones
    assert again.key == "dialogue" and again.weights == (0.5, 0.5, 0.0)
    with pytest.raises(MemorySettingsError, match=r"written with retrieval key 'dialogue', but key 'commander'"):
        ExampleMemory(path, embedder, key="commander")
    with pytest.raises(MemorySettingsError, match=r"written with weights \(0.5, 0.5, 0.0\), but \(0.8, 0.1, 0.1\)"):
        ExampleMemory(path, embedder, weights=(0.8, 0.1, 0.1))
    fresh = ExampleMemory(tmp_path / "new.db", embedder)
    assert fresh.key == "commander" and fresh.weights == DEFAULT_WEIGHTS
    with pytest.raises(EmptyMemoryError, match="is empty: add examples before retrieving"):
        fresh.retrieve("make coffee", "", k=3)
    # a store written before key kinds were recorded embedded goal sentences
    legacy = ExampleStore(tmp_path / "legacy.db")
    vec = embedder.embed_text(["Make coffee."])[0]
    legacy.add_example(Example(task_id="t", task_type="Coffee", instruction="Make coffee."),
                       {"instruction": (embedder.name, vec), "text_state": (embedder.name, vec)})
    legacy.close()
    with caplog.at_level(logging.INFO):
        assert ExampleMemory(tmp_path / "legacy.db", embedder).key == "instruction"
    with pytest.raises(MemorySettingsError, match="retrieval key 'instruction'"):
        ExampleMemory(tmp_path / "legacy.db", embedder, key="commander")


# -- the saved index -------------------------------------------------------------------------
def _fill(mem: ExampleMemory, n: int, start: int = 0) -> None:
    mem.add_many([Example(task_id=f"t{i}", task_type="Coffee" if i % 2 else "Boil X",
                          instruction=f"task number {i}", dialogue=[f"Commander: do task {i} please"])
                  for i in range(start, start + n)])


@pytest.mark.parametrize("kind", ["flat", pytest.param("hnsw", marks=pytest.mark.slow)])
def test_index_saved_beside_store_and_reloaded(tmp_path, embedder, kind, caplog) -> None:
    path = tmp_path / "m.db"
    mem = ExampleMemory(path, embedder, index_kind=kind)
    _fill(mem, 6)
    first = [h.example.task_id for h in mem.retrieve("do task 3 please", "", k=3)]
    assert mem.index_report["source"] == "built" and path.with_name("m.db.faiss").is_file()
    mem.close()
    writer = ExampleMemory(path, embedder, index_kind=kind, persist_index=False)
    _fill(writer, 2, start=6)  # added after the save: appended to the loaded index when retrieving
    writer.close()
    again = ExampleMemory(path, embedder, index_kind=kind)
    assert again.index_report["source"] == "loaded" and again.index.ntotal == 6
    assert [h.example.task_id for h in again.retrieve("do task 3 please", "", k=3)] == first
    assert again.index.ntotal == 8
    # other index kind, corrupt sidecar, garbage index file, a replaced store: rebuilt, saying why
    other = "hnsw" if kind == "flat" else "flat"
    with caplog.at_level(logging.WARNING):
        assert ExampleMemory(path, embedder, index_kind=other).index_report["why"].startswith("the index was built with index=")
        path.with_name("m.db.faiss.json").write_text("{not json")
        assert "unreadable" in ExampleMemory(path, embedder, index_kind=kind).index_report["why"]
    ExampleMemory(path, embedder, index_kind=kind).save_index()
    path.with_name("m.db.faiss").write_bytes(b"garbage")
    rebuilt = ExampleMemory(path, embedder, index_kind=kind)
    assert "cannot read FAISS index" in rebuilt.index_report["why"]
    assert [h.example.task_id for h in rebuilt.retrieve("do task 3 please", "", k=3)] == first
    rebuilt.save_index()
    path.unlink()
    for suffix in ("-wal", "-shm"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)
    replaced = ExampleMemory(path, embedder, index_kind=kind)  # a new, empty store with the old index beside it
    assert replaced.index_report["source"] == "built" and "store ends at id 0" in replaced.index_report["why"]
    assert any("rebuilding the FAISS index" in r.message for r in caplog.records)


def test_index_keeps_no_second_copy_of_vectors() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((300, 16)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    for kind in ("flat", "hnsw", "ivf"):
        index = VectorIndex(16, kind, min_train=100)
        index.add(x[:150])
        index.add(x[150:])
        assert not any(isinstance(v, np.ndarray) and v.size >= x.size for v in vars(index).values())
        np.testing.assert_allclose(index.vectors([0, 149, 299]), x[[0, 149, 299]], atol=1e-6)
        allowed = np.zeros(300, bool)
        allowed[[3, 7, 200]] = True
        assert set(index.search(x[:1], 3, allowed)[1][0].tolist()) == {3, 7, 200}


# -- dialogue generators ---------------------------------------------------------------------
def test_step_by_step_sandwich_dialogues_name_the_sandwich_and_fillings() -> None:
    from icalkit.envs.household.tasks.instructions import dialogue

    for seed in range(60):
        turns = dialogue("Sandwich", {"lettuce": "1", "tomato": "1"}, random.Random(seed))
        text = " ".join(t for _, t in turns).lower()
        assert "sandwich" in text and "lettuce" in text and "tomato" in text, text


def test_human_style_dialogues() -> None:
    from icalkit.envs.household.tasks.instructions import write_instructions

    params = {"X": "Potato", "N": "2", "Y": "Plate", "prep": "on"}
    a = write_instructions("N Cooked Slices Of X In Y", params, 3, style="human")
    assert a == write_instructions("N Cooked Slices Of X In Y", params, 3, style="human")  # deterministic
    # the task never named by its keyword in the whole dialogue (now 1, 6, 4 and 34 of 80: the
    # Coffee steps name the coffee maker)
    without = {}
    for task_type, keyword, p in [("Coffee", "coffee", {}), ("Water Plant", "water", {}),
                                  ("Plate Of Toast", "toast", {}), ("Sandwich", "sandwich", {"lettuce": "1", "tomato": "1"})]:
        texts = [" ".join(t for _, t in write_instructions(task_type, p, i, style="human")[1]) for i in range(80)]
        assert len(set(texts)) == len(texts)
        without[task_type] = sum(keyword not in t.lower() for t in texts)
    assert min(without.values()) >= 1 and sum(without.values()) >= 20, without
    with pytest.raises(ValueError, match="unknown dialogue style 'poetic'"):
        write_instructions("Coffee", {}, 0, style="poetic")
    # every TEACh type has other step wordings and a clarifying exchange that carries its structure
    from icalkit.envs.household.tasks import instruction_templates as T
    from icalkit.training.retriever_data import TFD_TYPES

    assert set(T.HUMAN_STEPS) == set(T.CLARIFY) == set(TFD_TYPES)
    raw = [" ".join(t for _, t in write_instructions("N Slices Of X In Y", params, i, style="human")[1]).lower()
           for i in range(60)]
    assert any("raw" in t or "uncooked" in t or "don't cook" in t for t in raw)


# -- learned retriever -----------------------------------------------------------------------
def test_hand_written_dialogues_are_valid_and_held_out(tmp_path) -> None:
    from collections import Counter

    from icalkit.envs.household.tasks.hand_written import (
        DEV_DIALOGUES,
        TEST2_DIALOGUES,
        TEST3_DIALOGUES,
        TEST4_DIALOGUES,
        TEST5_DIALOGUES,
        TEST6_DIALOGUES,
        TEST7_DIALOGUES,
        TEST8_DIALOGUES,
        TEST9_DIALOGUES,
        TEST10_DIALOGUES,
        TEST11_DIALOGUES,
        TEST12_DIALOGUES,
        TEST13_DIALOGUES,
        TEST14_DIALOGUES,
        TEST15_DIALOGUES,
        TEST16_DIALOGUES,
        TEST17_DIALOGUES,
        TEST18_DIALOGUES,
        TEST19_DIALOGUES,
        DialogueFileError,
        load_human_dialogues,
    )
    from icalkit.envs.household.tasks.registry import BREAKFAST_MENUS
    from icalkit.training.retriever_data import (
        TFD_TYPES,
        training_pairs,
        without_held_out,
    )

    hand = load_human_dialogues()
    counts = Counter(d.task_type for d in hand)
    assert set(counts) == set(TFD_TYPES) and min(counts.values()) >= 3
    dev = load_human_dialogues(DEV_DIALOGUES)  # the set settings are chosen on: other dialogues, same types
    assert Counter(d.task_type for d in dev) == dict.fromkeys(TFD_TYPES, 3)
    long_turns = lambda ds: {t for d in ds for _, t in d.dialogue if len(t) > 30}  # noqa: E731 (as without_held_out)
    # written without copying the test set; one short turn came out word for word the same in both
    # (found after the dev set was used; kept so that the dev figures in docs/memory.md reproduce)
    assert long_turns(dev) & long_turns(hand) == {"2 lettuce slices and a tomato slice"}
    test2 = load_human_dialogues(TEST2_DIALOGUES)  # round 29's test set, by a writer who never read the reader
    assert Counter(d.task_type for d in test2) == dict.fromkeys(TFD_TYPES, 4)
    assert not long_turns(test2) & (long_turns(hand) | long_turns(dev))
    test3 = load_human_dialogues(TEST3_DIALOGUES)  # round 30's, by another writer who never read the reader
    assert Counter(d.task_type for d in test3) == dict.fromkeys(TFD_TYPES, 4)
    # written blind to the other sets; one Driver-like turn came out word for word as in an earlier set
    assert long_turns(test3) & (long_turns(hand) | long_turns(dev) | long_turns(test2)) == {
        "lettuce and tomato are on the plate"}
    leaked = [{"anchor": dev[0].dialogue[0][1] + " " + dev[0].dialogue[1][1], "positive": "x"}]
    assert without_held_out(leaked, [*hand, *dev]) == ([], 1)
    rows = training_pairs(TFD_TYPES, 3, seed=1, keys=("commander", "dialogue"))
    assert {r["task_type"] for r in rows} == set(TFD_TYPES)
    test4 = load_human_dialogues(TEST4_DIALOGUES)  # round 31's, by another writer who never read the reader
    assert Counter(d.task_type for d in test4) == dict.fromkeys(TFD_TYPES, 4)
    assert not long_turns(test4) & (long_turns(hand) | long_turns(dev) | long_turns(test2) | long_turns(test3))
    test5 = load_human_dialogues(TEST5_DIALOGUES)  # round 32's breakfasts, by another writer who never read the reader
    assert Counter(d.params["menu"] for d in test5) == dict.fromkeys(BREAKFAST_MENUS, 4)
    assert {d.task_type for d in test5} == {"Breakfast"}
    test6 = load_human_dialogues(TEST6_DIALOGUES)  # round 33's breakfasts, half of them changing their mind
    assert Counter((d.params["menu"], d.params["serve"]) for d in test6) == {
        (m, s): 2 for m in BREAKFAST_MENUS for s in ("CounterTop", "DiningTable")}
    mixed = []  # rounds 34's and 35's: breakfasts and the single dishes they are made of
    for path in (TEST7_DIALOGUES, TEST8_DIALOGUES, TEST9_DIALOGUES):
        dialogues = load_human_dialogues(path)
        assert Counter((d.params["menu"], d.params["serve"]) for d in dialogues if d.task_type == "Breakfast") == {
            (m, s): 2 for m in BREAKFAST_MENUS for s in ("CounterTop", "DiningTable")}
        assert Counter(d.task_type for d in dialogues if d.task_type != "Breakfast") == dict.fromkeys(
            ("Coffee", "Plate Of Toast", "N Slices Of X In Y", "N Cooked Slices Of X In Y", "Salad", "Sandwich"), 4)
        mixed += dialogues
    test10 = load_human_dialogues(TEST10_DIALOGUES)  # round 36's: mostly single dishes, 14 breakfasts
    assert Counter((d.params["menu"], d.params["serve"]) for d in test10 if d.task_type == "Breakfast") == {
        (m, s): 1 for m in BREAKFAST_MENUS for s in ("CounterTop", "DiningTable")}
    assert Counter(d.task_type for d in test10 if d.task_type != "Breakfast") == dict.fromkeys(
        ("Coffee", "Plate Of Toast", "N Slices Of X In Y", "N Cooked Slices Of X In Y", "Salad", "Sandwich"), 8)
    mixed += test10
    test11 = load_human_dialogues(TEST11_DIALOGUES)  # round 37's: every TEACh task type
    assert Counter(d.task_type for d in test11) == dict.fromkeys(TFD_TYPES, 5)
    mixed += test11
    test12 = load_human_dialogues(TEST12_DIALOGUES)  # round 37's second: 42 breakfasts, 22 single dishes
    assert Counter((d.params["menu"], d.params["serve"]) for d in test12 if d.task_type == "Breakfast") == {
        (m, s): 3 for m in BREAKFAST_MENUS for s in ("CounterTop", "DiningTable")}
    assert Counter(d.task_type for d in test12 if d.task_type != "Breakfast") == {
        **dict.fromkeys(("Coffee", "Plate Of Toast", "N Slices Of X In Y", "N Cooked Slices Of X In Y"), 4),
        "Salad": 3, "Sandwich": 3}
    mixed += test12
    test13 = load_human_dialogues(TEST13_DIALOGUES)  # round 38's: 28 breakfasts, 36 single dishes, many corrections
    assert Counter((d.params["menu"], d.params["serve"]) for d in test13 if d.task_type == "Breakfast") == {
        (m, s): 2 for m in BREAKFAST_MENUS for s in ("CounterTop", "DiningTable")}
    assert Counter(d.task_type for d in test13 if d.task_type != "Breakfast") == {
        "Sandwich": 8, "Salad": 8, "N Slices Of X In Y": 6, "N Cooked Slices Of X In Y": 6, "Plate Of Toast": 4,
        "Coffee": 4}
    mixed += test13
    test14 = load_human_dialogues(TEST14_DIALOGUES)  # round 39's: 28 breakfasts, 36 dishes of the other types
    assert Counter((d.params["menu"], d.params["serve"]) for d in test14 if d.task_type == "Breakfast") == {
        (m, s): 2 for m in BREAKFAST_MENUS for s in ("CounterTop", "DiningTable")}
    assert Counter(d.task_type for d in test14 if d.task_type != "Breakfast") == {
        **dict.fromkeys(("Boil X", "Clean All X", "Coffee", "N Cooked Slices Of X In Y", "N Slices Of X In Y",
                         "Plate Of Toast", "Put All X In One Y", "Put All X On Y", "Water Plant"), 3),
        "Salad": 5, "Sandwich": 4}
    mixed += test14
    for path in (TEST15_DIALOGUES, TEST16_DIALOGUES, TEST17_DIALOGUES, TEST18_DIALOGUES,
                 TEST19_DIALOGUES):  # rounds 40-43's: as 39's
        dialogues = load_human_dialogues(path)
        assert Counter((d.params["menu"], d.params["serve"]) for d in dialogues if d.task_type == "Breakfast") == {
            (m, s): 2 for m in BREAKFAST_MENUS for s in ("CounterTop", "DiningTable")}
        assert Counter(d.task_type for d in dialogues if d.task_type != "Breakfast") == Counter(
            d.task_type for d in test14 if d.task_type != "Breakfast")
        mixed += dialogues
    assert without_held_out(rows, [*hand, *test2, *test3, *test4, *test5, *test6, *mixed]) == (rows, 0)
    leaked = [{**rows[0], "anchor": rows[0]["anchor"] + "\n" + hand[0].dialogue[1][1]}, *rows[1:]]
    assert without_held_out(leaked, hand) == (rows[1:], 1)
    bad = tmp_path / "bad.yaml"
    bad.write_text("- {id: x, task_type: Make Tea, params: {}, dialogue: [[Commander, hi]]}\n")
    with pytest.raises(DialogueFileError, match="unknown task type 'Make Tea'"):
        load_human_dialogues(bad)


def test_the_generators_phrases_are_exempt_and_nothing_else() -> None:
    """`make retriever-trained8` refused to train in round 42: 14 of its 960 generated pairs, and 81 of the request
    reader's 1,500, say a hand-written turn word for word ("put all the potatoes on one plate", test15's). Those
    turns are the generators' own stock phrases (:data:`GENERATOR_PHRASES`): the real pairs say each of them and keep
    their pairs. Any other hand-written turn still drops its pair: one retriever pair holds a turn of test19 (sealed,
    unread), and is dropped; the reader's pairs hold none."""
    from icalkit.commands import finetune, train_retriever
    from icalkit.config import load_config
    from icalkit.data_gen import request_pairs
    from icalkit.envs.household.tasks.hand_written import HAND_WRITTEN, load_human_dialogues
    from icalkit.training.retriever_data import GENERATOR_PHRASES, pair_text, training_pairs, without_held_out

    cfg = load_config(train_retriever.Config, "configs/train_retriever_trained8.yaml")
    types = ["Clean All X", "Coffee", "N Cooked Slices Of X In Y", "N Slices Of X In Y", "Plate Of Toast",
             "Put All X In One Y", "Put All X On Y", "Salad"]  # the Makefile's TRAINED8
    rows = training_pairs(types, cfg.pairs_per_type, cfg.seed, cfg.keys, cfg.human_share, cfg.goal_share)
    reader = request_pairs.request_pairs(load_config(finetune.Config, "configs/finetune_reader.yaml").requests)
    said = [pair_text(r).lower() for r in rows] + [request_pairs.pair_text(r).lower() for r in reader]
    held = [d for path in HAND_WRITTEN for d in load_human_dialogues(path)]
    written = {t.strip().lower() for d in held for _, t in d.dialogue}
    assert all(p in written and any(p in t for t in said) for p in GENERATOR_PHRASES)  # both say each
    kept, dropped = without_held_out(rows, held)
    assert dropped == len(rows) - len(kept) == 1  # (the leak check's own test: test_hand_written_dialogues_...)
    assert without_held_out(reader, held, request_pairs.pair_text) == (reader, 0)


def test_type_distinct_batches() -> None:
    from icalkit.training.train_retriever import TypeDistinctBatchSampler

    types = [f"type{i % 5}" for i in range(40)]
    sampler = TypeDistinctBatchSampler(types, 4, seed=0)
    batches = list(sampler)
    assert batches and all(len({types[i] for i in b}) == 4 for b in batches)
    assert len({i for b in batches for i in b}) == sum(len(b) for b in batches)  # no row twice
    with pytest.raises(ValueError, match="exceeds the 5 task types"):
        TypeDistinctBatchSampler(types, 6)


@pytest.mark.slow
def test_adapter_training_saves_a_loadable_embedder(tmp_path) -> None:
    from icalkit.training.retriever_data import TFD_TYPES, training_pairs
    from icalkit.training.train_retriever import RetrieverTrainConfig, train_retriever

    rows = training_pairs(TFD_TYPES[:4], 3, seed=2)
    cfg = RetrieverTrainConfig(batch_size=4, adapter_steps=5, threads=1, max_minutes=5)
    summary = train_retriever(rows, tmp_path / "model", cfg)
    assert summary["steps"] == 5 and summary["texts"] > len(rows)
    tuned = SentenceTransformerEmbedder(tmp_path / "model")
    assert tuned.name.startswith("st:model-") and tuned.dim == 384
    v = tuned.embed_text(["make me a coffee", "boil an egg"])
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    with pytest.raises(ValueError, match="unknown retriever training method 'lora'"):
        train_retriever(rows, tmp_path / "x", RetrieverTrainConfig(method="lora"))
    # a memory written with the untuned embedder refuses the learned one (and the other way round)
    from icalkit.memory.store import MixedEmbedderError

    untuned = ExampleMemory(tmp_path / "m.db", SentenceTransformerEmbedder())
    untuned.add(Example(task_id="t", task_type="Coffee", instruction="Make coffee.", dialogue=["Commander: coffee"]))
    untuned.close()
    with pytest.raises(MixedEmbedderError, match=r"st:all-MiniLM-L6-v2.*st:model-|st:model-.*st:all-MiniLM-L6-v2"):
        ExampleMemory(tmp_path / "m.db", tuned)


@pytest.mark.slow
def test_full_training_moves_the_encoder_and_saves_it(tmp_path) -> None:
    """The shipped method: the whole encoder trains (type-distinct batches) and its folder loads."""
    from icalkit.training.retriever_data import TFD_TYPES, training_pairs
    from icalkit.training.train_retriever import RetrieverTrainConfig, train_retriever

    rows = training_pairs(TFD_TYPES[:4], 2, seed=2)
    cfg = RetrieverTrainConfig(method="full", batch_size=4, epochs=1.0, learning_rate=1e-4, threads=1,
                               max_minutes=5, max_seq_length=64)
    summary = train_retriever(rows, tmp_path / "model", cfg)
    assert summary["method"] == "full" and summary["steps"] == len(rows) // 4 and not summary["stopped_early"]
    tuned, base = SentenceTransformerEmbedder(tmp_path / "model"), SentenceTransformerEmbedder()
    assert tuned.name != base.name and tuned.dim == 384
    text = ["please make me a coffee"]
    assert float(tuned.embed_text(text)[0] @ base.embed_text(text)[0]) < 0.9999  # weights moved


# -- task-type vote re-ranking ---------------------------------------------------------------
def test_type_vote_moves_up_examples_whose_type_scores_high() -> None:
    from icalkit.memory.rerank import type_vote

    types = ["Salad", "Sandwich", "Sandwich", "Salad", "Coffee"]
    found = [(0.90, 0), (0.88, 1), (0.87, 2), (0.60, 3), (0.50, 4)]  # best first, one Salad on top
    assert type_vote(found, types, 0.0) == found
    order = [p for _, p in type_vote(found, types, 1.0)]
    assert order[:3] == [1, 2, 0]  # two Sandwiches near the top outvote one Salad
    assert {s for s, _ in type_vote(found, types, 1.0)} == {s for s, _ in found}  # scores kept
    # a lone candidate of its type is padded with the pool's lowest score, not its own
    assert [p for _, p in type_vote([(0.9, 0), (0.85, 1), (0.84, 2), (0.1, 3)], ["A", "B", "B", "C"], 1.0)][0] == 1


def test_memory_type_vote_setting(tmp_path, embedder) -> None:
    from icalkit.eval.methods import MethodConfig, load_method, method_problem
    from icalkit.memory.config import MemoryConfig, build_memory
    from icalkit.memory.rerank import type_vote

    cfg = MemoryConfig(path=str(tmp_path / "m.db"), type_vote=1.0)
    cfg.image_embedder.kind = "none"
    mem = build_memory(cfg, embedder)
    mem.add_many([Example(task_id=f"t{i}", task_type=t, instruction=text, dialogue=[f"Commander: {text}"])
                  for i, (t, text) in enumerate([("Salad", "make a salad with lettuce and tomato"),
                                                 ("Sandwich", "make a sandwich with toast and lettuce"),
                                                 ("Sandwich", "toast two slices of bread, lettuce in between"),
                                                 ("Coffee", "make a coffee")])])
    plain = ExampleMemory(tmp_path / "m.db", embedder, type_vote=0.0)  # the same store, no re-ranking
    for query in ("a salad with lettuce, or a sandwich?", "make a coffee"):
        before = plain.retrieve(query, "", k=4)
        voted = type_vote([(h.score, i) for i, h in enumerate(before)], [h.example.task_type for h in before], 1.0)
        assert [h.example.task_id for h in mem.retrieve(query, "", k=4)] == [before[i].example.task_id for _, i in voted]
        assert [h.example.task_id for h in mem.retrieve(query, "", k=2)] == [before[i].example.task_id for _, i in voted[:2]]
    bad = MemoryConfig(type_vote=-1.0)
    with pytest.raises(ValueError, match="type_vote must be >= 0"):
        bad.validate()
    # a method naming a learned retriever that was never trained: skipped, with the command to train it
    method = MethodConfig(name="copy_learned", memory=str(tmp_path / "m.db"), retriever=str(tmp_path / "nope"))
    method.planner.mode = "copy"
    assert "make retriever" in method_problem(method) and "nope" in method_problem(method)
    shipped = load_method("copy_learned")  # the eval method that reads the learned retriever by config
    shipped.validate()
    assert shipped.retriever == "runs/retriever/model" and shipped.type_vote > 0 and shipped.planner.mode == "copy"


def test_encode_cache_resumes_and_refuses_other_models(tmp_path, caplog) -> None:
    import torch

    from icalkit.training.train_retriever import EncodeCache

    path = tmp_path / "enc.pt"
    first = EncodeCache(path, "base-a", 96)
    first.add(["make coffee", "boil an egg"], torch.eye(2))
    again = EncodeCache(path, "base-a", 96)  # a new run: nothing to encode again
    assert set(again.vectors) == {"make coffee", "boil an egg"} and again.encoded_now == 0
    torch.testing.assert_close(again.vectors["boil an egg"], torch.tensor([0.0, 1.0]))
    with caplog.at_level(logging.WARNING):
        assert EncodeCache(path, "base-b", 96).vectors == {}  # another base model: encoded again
        assert EncodeCache(path, "base-a", 128).vectors == {}
        path.write_bytes(b"not a torch file")
        assert EncodeCache(path, "base-a", 96).vectors == {}
    assert sum("encoding again" in r.message for r in caplog.records) == 3
