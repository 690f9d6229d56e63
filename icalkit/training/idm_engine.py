"""One training epoch and one evaluation of the inverse dynamics model (DETR's ``engine.py``)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from icalkit.data_gen.idm_data import Augment, to_model_input


@dataclass
class EpochResult:
    """What :func:`train_one_epoch` did: batches done (of the epoch), mean losses, samples/s,
    and whether it stopped early at the deadline (``finished`` False: resume from ``batches``)."""

    batches: int
    finished: bool
    loss: float = math.nan
    loss_action: float = math.nan
    loss_object: float = math.nan
    samples_per_s: float = 0.0


def train_one_epoch(model, criterion, loader, optimizer, accelerator, augment: Augment | None = None,
                    start_batch: int = 0, deadline: float | None = None, max_grad_norm: float = 1.0,
                    on_step: Callable[[int, dict], None] | None = None, progress: bool = True) -> EpochResult:
    """Train on ``loader`` (already prepared by ``accelerator``, first ``start_batch`` batches skipped).

    Stops after the batch during which ``time.monotonic()`` passed ``deadline``, so a caller can
    save and resume. ``on_step(batch_index, losses)`` is called after each optimizer step.
    """
    from tqdm.auto import tqdm

    model.train()
    sums = {"loss": 0.0, "loss_action": 0.0, "loss_object": 0.0}
    n = samples = 0
    start = time.perf_counter()
    batch_index = start_batch
    bar = tqdm(total=len(loader) + start_batch, initial=start_batch, desc="train",
               disable=not (progress and accelerator.is_main_process))
    for frames, actions, objects in loader:
        with accelerator.autocast():
            outputs = model(to_model_input(frames, augment))
            losses = criterion(outputs, actions, objects)
        optimizer.zero_grad(set_to_none=True)
        accelerator.backward(losses["loss"])
        if max_grad_norm:
            accelerator.clip_grad_norm_(model.parameters(), max_grad_norm)
        optimizer.step()
        batch_index += 1
        n += 1
        samples += len(actions)
        values = {k: losses[k].item() for k in sums}
        for k, v in values.items():
            sums[k] += v
        bar.update(1)
        bar.set_postfix(loss=f"{values['loss']:.3f}")
        if on_step is not None:
            on_step(batch_index, values)
        if deadline is not None and time.monotonic() > deadline:
            break
    bar.close()
    wall = time.perf_counter() - start
    means = {k: v / n for k, v in sums.items()} if n else {}
    return EpochResult(batches=batch_index, finished=n == len(loader), samples_per_s=samples / wall if wall > 0 else 0.0, **means)


@dataclass
class EvalResult:
    """Held-out metrics: losses, accuracies, confusion matrices (rows = truth, columns = prediction)."""

    loss: float
    action_accuracy: float
    object_accuracy: float
    interaction_object_accuracy: float
    pairs: int
    action_confusion: torch.Tensor = field(repr=False)
    object_confusion: torch.Tensor = field(repr=False)
    interaction_pairs: int = 0

    def per_class_accuracy(self, names: list[str], which: str = "action") -> dict[str, float]:
        """Recall per class present in the held-out data."""
        cm = self.action_confusion if which == "action" else self.object_confusion
        total = cm.sum(1)
        return {names[k]: float(cm[k, k] / total[k]) for k in range(len(names)) if total[k] > 0}


@torch.no_grad()
def evaluate(model, criterion, loader, accelerator, no_object: int, progress: bool = True) -> EvalResult:
    """Accuracy and loss of ``model`` on ``loader``; ``no_object`` is the "None" object id.

    ``interaction_object_accuracy`` counts only pairs whose true target is an object.
    """
    from tqdm.auto import tqdm

    model.eval()
    cfg = accelerator.unwrap_model(model).config
    n_act, n_obj = len(cfg.actions), len(cfg.objects)
    cm_a = torch.zeros(n_act, n_act, dtype=torch.long)
    cm_o = torch.zeros(n_obj, n_obj, dtype=torch.long)
    loss_sum, n_batches = 0.0, 0
    for frames, actions, objects in tqdm(loader, desc="eval", disable=not (progress and accelerator.is_main_process)):
        with accelerator.autocast():
            outputs = model(to_model_input(frames))
            loss = criterion(outputs, actions, objects)["loss"]
        pa, po = outputs["action_logits"].argmax(-1), outputs["object_logits"].argmax(-1)
        pa, po, ta, to, loss = accelerator.gather_for_metrics((pa, po, actions, objects, loss.reshape(1)))
        loss_sum += loss.float().mean().item()
        n_batches += 1
        cm_a += torch.bincount((ta * n_act + pa).cpu(), minlength=n_act * n_act).view(n_act, n_act)
        cm_o += torch.bincount((to * n_obj + po).cpu(), minlength=n_obj * n_obj).view(n_obj, n_obj)
    pairs = int(cm_a.sum())
    if pairs == 0:
        raise ValueError("evaluate: the data loader yielded no pairs")
    mask = torch.ones(n_obj, dtype=torch.bool)
    mask[no_object] = False
    inter_total = int(cm_o[mask].sum())
    inter_correct = int(cm_o.diagonal()[mask].sum())
    return EvalResult(loss=loss_sum / max(n_batches, 1), action_accuracy=float(cm_a.diagonal().sum()) / pairs,
                      object_accuracy=float(cm_o.diagonal().sum()) / pairs,
                      interaction_object_accuracy=inter_correct / inter_total if inter_total else math.nan,
                      pairs=pairs, action_confusion=cm_a, object_confusion=cm_o, interaction_pairs=inter_total)
