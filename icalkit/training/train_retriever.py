"""Fine-tune the sentence embedder into a retriever: contrastive training on simulator pairs.

Two methods, both saving a sentence-transformers folder that ``text_embedder.model`` loads (its
name, folder name + content digest, is stored with every vector the memory writes):

- ``adapter`` (CPU-cheap: seconds once the texts are encoded): the encoder stays frozen; every training text is encoded
  once and a linear layer (initialised to the identity, kept near it by a penalty) is trained on
  top with a supervised contrastive loss: texts of the same task type (dialogue, another
  instance's dialogue, goal sentence) attract, all others in the batch repel. The saved model is
  the encoder + ``Dense`` + ``Normalize``.
- ``full`` (the shipped config's method): the whole encoder is fine-tuned by sentence-transformers (``SentenceTransformerTrainer``
  with ``MultipleNegativesRankingLoss``); two instances of one type must not be each other's
  negative, so batches hold one pair per task type (:class:`TypeDistinctBatchSampler`). A step of
  12 pairs takes ~1.15 s on 2 CPU threads: 2 epochs over 2,280 pairs in ~7 minutes.

A time budget stops either run; what was trained so far is saved.
"""

from __future__ import annotations

import json
import logging
import random
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from torch.utils.data import BatchSampler, SequentialSampler
from transformers import TrainerCallback

log = logging.getLogger(__name__)


@dataclass
class RetrieverTrainConfig:
    """Training settings (plain values; the command's config builds this)."""

    method: str = "adapter"  # adapter (frozen encoder + trained linear layer) | full
    base_model: str | None = None  # None = bundled all-MiniLM-L6-v2
    batch_size: int = 16  # full: pairs per batch (one per task type); adapter: task types per batch
    adapter_steps: int = 800
    adapter_lr: float = 5e-4
    adapter_temperature: float = 0.05
    adapter_identity_penalty: float = 0.001
    epochs: float = 1.0
    learning_rate: float = 5e-5
    warmup_ratio: float = 0.1
    max_seq_length: int = 128
    max_minutes: float = 14.0
    threads: int = 1
    seed: int = 0
    encode_cache: str | None = "runs/retriever/encoded_texts.pt"  # adapter: encodings kept across runs; None = off


class TypeDistinctBatchSampler(BatchSampler):
    """Batches whose rows all have different task types (no same-type pair is a negative).

    Args:
        types: task type of every dataset row.
        batch_size: rows per batch (at most the number of distinct types).
        seed: shuffling seed (a new order each epoch).
    """

    def __init__(self, types: Sequence[str], batch_size: int, seed: int = 0):
        super().__init__(SequentialSampler(range(len(types))), batch_size, drop_last=True)
        self.types, self.seed, self.epoch = list(types), seed, 0
        if len(set(self.types)) < batch_size:
            raise ValueError(f"batch_size {batch_size} exceeds the {len(set(self.types))} task types in the data")

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def _batches(self) -> list[list[int]]:
        rng = random.Random(f"{self.seed}/{self.epoch}")
        pools: dict[str, list[int]] = {}
        for i, t in enumerate(self.types):
            pools.setdefault(t, []).append(i)
        for pool in pools.values():
            rng.shuffle(pool)
        batches = []
        while sum(1 for p in pools.values() if p) >= self.batch_size:
            live = [t for t, p in pools.items() if p]
            chosen = sorted(live, key=lambda t: -len(pools[t]) * rng.random())[: self.batch_size]
            batches.append([pools[t].pop() for t in chosen])
        return batches

    def __iter__(self) -> Iterator[list[int]]:
        yield from self._batches()

    def __len__(self) -> int:
        return len(self._batches())


class TimeBudget(TrainerCallback):
    """Stops training (the trainer then saves) once ``max_minutes`` have passed."""

    def __init__(self, max_minutes: float):
        self.deadline = time.monotonic() + 60 * max_minutes
        self.stopped_early = False

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        if time.monotonic() > self.deadline:
            control.should_training_stop = self.stopped_early = True
        return control


METHODS = ("adapter", "full")


def train_retriever(rows: list[dict[str, Any]], out_dir: str | Path, cfg: RetrieverTrainConfig) -> dict[str, Any]:
    """Train on (anchor, positive, task_type) rows with ``cfg.method``; save to ``out_dir``; return a summary."""
    if cfg.method not in METHODS:
        raise ValueError(f"unknown retriever training method {cfg.method!r}; available: {list(METHODS)}")
    return (train_adapter if cfg.method == "adapter" else train_full)(rows, out_dir, cfg)


def _summary(out_dir: Path, base: str, cfg: RetrieverTrainConfig, **fields: Any) -> dict[str, Any]:
    summary = {"model_dir": str(out_dir), "base_model": base, **fields, "config": asdict(cfg)}
    (out_dir / "train_summary.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    return summary


def supcon_loss(z: Any, labels: Any, temperature: float) -> Any:
    """Supervised contrastive loss of unit rows ``z`` (n, d) with integer ``labels`` (n,).

    Every row is an anchor whose positives are the other rows with its label; rows without a
    positive are skipped.
    """
    import torch

    sim = z @ z.T / temperature
    eye = torch.eye(len(z), dtype=torch.bool)
    sim = sim.masked_fill(eye, float("-inf"))
    log_prob = sim - torch.logsumexp(sim, dim=1, keepdim=True)
    pos = (labels[:, None] == labels[None, :]) & ~eye
    has = pos.any(dim=1)
    return -(log_prob.masked_fill(~pos, 0).sum(1)[has] / pos.sum(1)[has]).mean()


def train_adapter(rows: list[dict[str, Any]], out_dir: str | Path, cfg: RetrieverTrainConfig) -> dict[str, Any]:
    """Frozen encoder + a trained linear layer (see the module docstring)."""
    import torch
    from sentence_transformers import SentenceTransformer, models

    from icalkit.memory.embed import default_text_model_path

    torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed)
    out_dir = Path(out_dir)
    start = time.perf_counter()
    deadline = time.monotonic() + 60 * cfg.max_minutes
    base = cfg.base_model or str(default_text_model_path())
    encoder = SentenceTransformer(base, device="cpu", local_files_only=True)
    encoder.max_seq_length = cfg.max_seq_length
    texts = {}
    for r in rows:
        for col in ("anchor", "positive"):
            texts.setdefault(r[col], r["task_type"])
    names = sorted(set(texts.values()))
    cache = EncodeCache(cfg.encode_cache, base, cfg.max_seq_length)
    x, y = _encode_within(encoder, texts, names, deadline_s=0.8 * 60 * cfg.max_minutes, cache=cache)
    encode_s = time.perf_counter() - start
    dim = x.shape[1]
    dense = models.Dense(dim, dim, bias=False, activation_function=torch.nn.Identity())
    with torch.no_grad():
        dense.linear.weight.copy_(torch.eye(dim))
    opt = torch.optim.Adam(dense.parameters(), lr=cfg.adapter_lr)
    per_type = max(2, 256 // len(names))
    by_type = [torch.nonzero(y == k).flatten() for k in range(len(names))]
    losses: list[float] = []
    while len(losses) < cfg.adapter_steps and time.monotonic() < deadline:
        chosen = torch.randperm(len(names))[: cfg.batch_size]
        idx = torch.cat([by_type[k][torch.randint(len(by_type[k]), (per_type,))] for k in chosen.tolist()])
        z = torch.nn.functional.normalize(dense.linear(x[idx]), dim=1)
        loss = supcon_loss(z, y[idx], cfg.adapter_temperature)
        loss = loss + cfg.adapter_identity_penalty * ((dense.linear.weight - torch.eye(dim)) ** 2).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    steps = len(losses)
    model = SentenceTransformer(modules=[*encoder, dense, models.Normalize()], device="cpu")
    model.save(str(out_dir))
    return _summary(out_dir, base, cfg, method="adapter", texts=len(y), pairs=len(rows), steps=steps,
                    encoded_now=cache.encoded_now, encoded_from_cache=len(y) - cache.encoded_now,
                    encode_s=round(encode_s, 1), seconds=round(time.perf_counter() - start, 1),
                    stopped_early=steps < cfg.adapter_steps, first_loss=round(losses[0], 4) if losses else None,
                    final_loss=round(sum(losses[-20:]) / len(losses[-20:]), 4) if losses else None)


class EncodeCache:
    """Frozen-encoder vectors of training texts, kept in one file across runs (resumable encoding).

    The file records the base model and ``max_seq_length``; a file written with other ones is
    ignored (with a log line) and overwritten. ``path=None`` keeps nothing.
    """

    def __init__(self, path: str | Path | None, base: str, max_seq_length: int):
        import torch

        self.path, self.tag = (Path(path) if path else None), {"base": str(base), "max_seq_length": max_seq_length}
        self.vectors: dict[str, Any] = {}
        self.encoded_now = 0
        if self.path is not None and self.path.is_file():
            try:
                saved = torch.load(self.path, weights_only=True)
            except Exception as exc:  # noqa: BLE001 - a broken cache is rebuilt, never fatal
                log.warning("retriever encode cache %s is unreadable (%s): encoding again", self.path, exc)
                return
            if {k: saved.get(k) for k in self.tag} != self.tag:
                log.warning("retriever encode cache %s was written for %s, not %s: encoding again",
                            self.path, {k: saved.get(k) for k in self.tag}, self.tag)
                return
            self.vectors = dict(zip(saved["texts"], saved["vectors"], strict=True))

    def add(self, texts: list[str], vectors: Any) -> None:
        import torch

        self.vectors.update(zip(texts, vectors, strict=True))
        self.encoded_now += len(texts)
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(".tmp")
            torch.save({**self.tag, "texts": list(self.vectors), "vectors": torch.stack(list(self.vectors.values()))}, tmp)
            tmp.replace(self.path)


def _encode_within(encoder: Any, texts: dict[str, str], names: list[str], deadline_s: float,
                   cache: EncodeCache | None = None) -> tuple[Any, Any]:
    """Encode texts (those not in ``cache``, in a random order, 256 at a time) until ``deadline_s`` seconds.

    Returns unit vectors (n, d) and task-type indices (n,) of the texts encoded (cached ones first).
    """
    import torch
    from tqdm import tqdm

    cache = cache or EncodeCache(None, "", 0)
    start = time.perf_counter()
    items = list(texts.items())
    random.Random(0).shuffle(items)
    todo = [t for t, _ in items if t not in cache.vectors]
    for i in tqdm(range(0, len(todo), 256), desc="encoding training texts"):
        if time.perf_counter() - start > deadline_s:
            break
        chunk = todo[i:i + 256]
        cache.add(chunk, encoder.encode(chunk, batch_size=32, convert_to_tensor=True,
                                        normalize_embeddings=True).float())
    done = [(t, k) for t, k in items if t in cache.vectors]
    return (torch.stack([cache.vectors[t] for t, _ in done]),
            torch.tensor([names.index(k) for _, k in done]))


def train_full(rows: list[dict[str, Any]], out_dir: str | Path, cfg: RetrieverTrainConfig) -> dict[str, Any]:
    """Fine-tune the whole encoder with sentence-transformers (see the module docstring).

    Returns:
        ``{"model_dir", "steps", "seconds", "stopped_early", "train_loss", "pairs"}`` (also written
        to ``out_dir/train_summary.json``).
    """
    import datasets
    import torch
    from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer
    from sentence_transformers.losses import MultipleNegativesRankingLoss
    from sentence_transformers.training_args import SentenceTransformerTrainingArguments

    from icalkit.memory.embed import default_text_model_path

    torch.set_num_threads(cfg.threads)
    out_dir = Path(out_dir)
    base = cfg.base_model or str(default_text_model_path())
    model = SentenceTransformer(base, device="cpu", local_files_only=True)
    model.max_seq_length = cfg.max_seq_length
    types = [r["task_type"] for r in rows]
    data = datasets.Dataset.from_list([{"anchor": r["anchor"], "positive": r["positive"]} for r in rows])

    class Trainer(SentenceTransformerTrainer):
        def get_batch_sampler(self, dataset: Any, batch_size: int, drop_last: bool, *a: Any, **k: Any) -> Any:
            return TypeDistinctBatchSampler(types, batch_size, cfg.seed)

    args = SentenceTransformerTrainingArguments(
        output_dir=str(out_dir / "checkpoints"), num_train_epochs=cfg.epochs, per_device_train_batch_size=cfg.batch_size,
        learning_rate=cfg.learning_rate, warmup_ratio=cfg.warmup_ratio, seed=cfg.seed, logging_steps=10,
        save_strategy="no", report_to="none", use_cpu=True, dataloader_num_workers=0, disable_tqdm=False)
    budget = TimeBudget(cfg.max_minutes)
    trainer = Trainer(model=model, args=args, train_dataset=data, loss=MultipleNegativesRankingLoss(model),
                      callbacks=[budget])
    start = time.perf_counter()
    result = trainer.train()
    model.save(str(out_dir))
    return _summary(out_dir, base, cfg, method="full", pairs=len(rows), steps=int(result.global_step),
                    seconds=round(time.perf_counter() - start, 1), stopped_early=budget.stopped_early,
                    train_loss=round(float(result.training_loss), 4))
