"""Fine-tune the planner's LLM on prompt → program pairs: LoRA (peft) or full, with transformers' Trainer.

The loop belongs to the library (``transformers.Trainer``): it runs plainly and under
``accelerate launch``, only the main process logs and saves, checkpoints carry optimizer,
scheduler, RNG and data position so that a stopped run resumes to the same result. What is ours:

- :func:`tokenize_pair`: the prompt rendered with the model's chat template exactly as the
  backends render it at inference, the completion + end-of-turn token; the loss is on the
  completion only (prompt labels are -100).
- Padding-free packing (``packing=true``): a micro-batch is one row of concatenated pairs with
  position ids restarting per pair; transformers turns them into a block-diagonal attention mask,
  so pairs never attend to one another and no token is padding.
- The loss (:mod:`icalkit.training.completion_loss`): logits only at the completion's
  positions, and the prompt prefix a micro-batch shares computed once; both exact.
- A time budget: the run stops, checkpoints and saves the model when it is spent; re-running the
  same command resumes from the checkpoint.
- Throughput (trained tokens/s, padding excluded; over the whole call and after the first
  optimizer step) and peak RSS in ``train_summary.json``.
"""

from __future__ import annotations

import json
import math
import resource
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from icalkit.data_gen.finetune_data import DatasetError

METHODS = ("full", "lora")
PRECISIONS = ("auto", "fp32", "bf16")
ATTENTIONS = ("sdpa_folded", "sdpa", "eager")
LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
COLUMNS = ("prompt", "completion")


@dataclass
class TrainConfig:
    """Training settings (a config section, e.g. ``train.method=lora``).

    Attributes:
        method: ``full`` or ``lora``.
        model: base model folder (empty: the converted default SmolLM2-135M-Instruct).
        lora_r, lora_alpha, lora_dropout, lora_targets: LoRA settings (method=lora).
        learning_rate, weight_decay, warmup_ratio: optimizer and schedule (AdamW, cosine).
        epochs: passes over the training pairs (ignored when ``max_steps > 0``).
        max_steps: optimizer steps (0: from ``epochs``).
        micro_batch: pairs per forward pass; grad_accum: micro-batches per optimizer step.
        max_length: pairs longer than this (tokens) are dropped and counted, never truncated.
        precision: ``fp32``, ``bf16`` (autocast; fp32 master weights) or ``auto``: bf16 where the
            hardware computes it natively (a GPU with bf16, a CPU with AVX512-BF16 or AMX), fp32
            elsewhere: an AVX2-only CPU emulates bf16 matrix products at ~1 GFLOP/s, against ~80
            GFLOP/s in fp32 (measured, 2-core AMD EPYC).
        completion_loss: logits and loss only at the completion's positions (exact; off: the
            model's own forward and loss over every position).
        shared_prefix: the prompt prefix a micro-batch shares runs once (exact; needs
            completion_loss, excludes packing). Both are turned off in multi-process runs.
        prompt_grad: back-propagate through the prompt (exact). ``false``: each prompt is encoded
            with the current weights without gradient and only the completion is trained through
            (not exact; about half the cost of a step; needs shared_prefix; see
            :mod:`icalkit.training.completion_loss`).
        attention: ``sdpa_folded`` (SDPA with each key/value head's query heads folded into one
            query, no key/value copies: :mod:`icalkit.training.attention`), ``sdpa`` or ``eager``
            (transformers' own).
        packing: padding-free micro-batches (see the module docstring); off: padded batches
            grouped by length.
        torch_compile: compile the model (slow first steps; dynamic shapes). With completion_loss
            the decoder is compiled in place (its forward is what the loss calls).
        threads: torch CPU threads (0: torch's default).
        time_budget_s: stop, checkpoint and save after this many seconds (0: no limit).
        stop_after_steps: stop (checkpoint, no final save) after this optimizer step (0: off);
            for tests and step-wise runs.
        save_steps: checkpoint every N optimizer steps; save_total_limit: checkpoints kept.
        eval_steps: validation loss every N steps (0: at the end only).
        logging_steps: log every N steps.
        resume: continue from the newest checkpoint in ``out_dir`` when there is one.
        seed: data order, dropout and LoRA init.
        device: ``auto`` (GPU when present), ``cpu`` or ``cuda``.
    """

    method: str = "full"
    model: str = ""
    lora_r: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.05
    lora_targets: list[str] = field(default_factory=lambda: list(LORA_TARGETS))
    learning_rate: float = 1e-4
    weight_decay: float = 0.0
    warmup_ratio: float = 0.03
    epochs: float = 1.0
    max_steps: int = 0
    micro_batch: int = 4
    grad_accum: int = 2
    max_length: int = 2048
    precision: str = "auto"
    completion_loss: bool = True
    shared_prefix: bool = True
    prompt_grad: bool = True
    attention: str = "sdpa_folded"
    packing: bool = False
    torch_compile: bool = False
    threads: int = 2
    time_budget_s: float = 0.0
    stop_after_steps: int = 0
    save_steps: int = 20
    save_total_limit: int = 2
    eval_steps: int = 0
    logging_steps: int = 5
    resume: bool = True
    seed: int = 0
    device: str = "auto"

    def validate(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"train.method {self.method!r} is not one of {METHODS}")
        if self.precision not in PRECISIONS:
            raise ValueError(f"train.precision {self.precision!r} is not one of {PRECISIONS}")
        if self.attention not in ATTENTIONS:
            raise ValueError(f"train.attention {self.attention!r} is not one of {ATTENTIONS}")
        if self.shared_prefix and (self.packing or not self.completion_loss):
            raise ValueError("train.shared_prefix needs train.completion_loss=true and train.packing=false")
        if not self.prompt_grad and not self.shared_prefix:
            raise ValueError("train.prompt_grad=false needs train.shared_prefix=true")
        if self.micro_batch < 1 or self.grad_accum < 1 or self.max_length < 16:
            raise ValueError("train.micro_batch and train.grad_accum must be >= 1, train.max_length >= 16")
        if self.max_steps < 0 or self.epochs <= 0 and self.max_steps == 0:
            raise ValueError("train.max_steps must be >= 0 and train.epochs > 0 when max_steps is 0")
        if self.method == "lora" and (self.lora_r < 1 or not self.lora_targets):
            raise ValueError("train.lora_r must be >= 1 and train.lora_targets non-empty for method=lora")
        if self.learning_rate <= 0 or self.save_steps < 1 or self.logging_steps < 1:
            raise ValueError("train.learning_rate must be > 0, train.save_steps and train.logging_steps >= 1")
        if min(self.threads, self.time_budget_s, self.stop_after_steps, self.eval_steps) < 0:
            raise ValueError("train.threads, time_budget_s, stop_after_steps and eval_steps must be >= 0")
        if self.device not in ("auto", "cpu") and not self.device.startswith("cuda"):
            raise ValueError(f"train.device must be auto, cpu or cuda, got {self.device!r}")


def load_pairs(path: str | Path):
    """The ``DatasetDict`` saved by :func:`icalkit.data_gen.finetune_data.build_pairs`.

    Raises:
        DatasetError: missing, not a dataset, without a non-empty ``train`` split, or without
            the ``prompt``/``completion`` columns.
    """
    from datasets import DatasetDict, load_from_disk

    path = Path(path)
    if not path.exists():
        raise DatasetError(f"fine-tuning dataset {path} does not exist; build it with `icalkit finetune` "
                           f"(data section) or icalkit.data_gen.finetune_data.build_pairs")
    try:
        ds = load_from_disk(str(path))
    except Exception as exc:  # noqa: BLE001 - datasets raises several types for a bad folder
        raise DatasetError(f"{path} is not a saved Hugging Face dataset (or an empty one): {exc}") from None
    if not isinstance(ds, DatasetDict) or "train" not in ds:
        raise DatasetError(f"{path} must be a DatasetDict with a 'train' split")
    if missing := [c for c in COLUMNS if c not in ds["train"].column_names]:
        raise DatasetError(f"{path} lacks the columns {missing}; found {ds['train'].column_names}")
    if len(ds["train"]) == 0:
        raise DatasetError(f"{path} has no training pairs")
    return ds


def tokenize_pair(tokenizer: Any, prompt: list[dict] | str, completion: str, end: str | None = None
                  ) -> dict[str, list[int]]:
    """``input_ids`` and ``labels`` of one pair; prompt labels are -100 (loss on the completion).

    The prompt is rendered as the backends do at inference (chat template with the generation
    prompt); the completion ends with ``end``, by default the chat template's end-of-turn token
    (:func:`~icalkit.models.llm.hf.end_of_turn`; eos without one).
    """
    from icalkit.models.llm.hf import end_of_turn

    if isinstance(prompt, str):
        prompt = [{"role": "user", "content": prompt}]
    text = tokenizer.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True)
    p_ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    end = end or end_of_turn(tokenizer)
    c_ids = tokenizer(completion + end, add_special_tokens=False)["input_ids"]
    return {"input_ids": p_ids + c_ids, "labels": [-100] * len(p_ids) + c_ids}


def tokenize_split(ds: Any, tokenizer: Any, max_length: int) -> tuple[Any, int]:
    """Tokenized split (with a ``length`` column) and how many pairs exceeded ``max_length``."""
    from icalkit.models.llm.hf import end_of_turn

    end = end_of_turn(tokenizer)
    tok = ds.map(lambda r: tokenize_pair(tokenizer, r["prompt"], r["completion"], end),
                 remove_columns=ds.column_names, desc="tokenize")
    tok = tok.map(lambda r: {"length": len(r["input_ids"])})
    kept = tok.filter(lambda r: r["length"] <= max_length)
    return kept, len(tok) - len(kept)


def load_model(cfg: TrainConfig) -> tuple[Any, Any]:
    """(model, tokenizer) ready for training: full weights, or the base wrapped with LoRA."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from icalkit.models.llm.convert import default_model_dir
    from icalkit.models.llm.hf import ensure_pad_token
    from icalkit.training.attention import register

    folder = Path(cfg.model) if cfg.model else default_model_dir()
    if not (folder / "config.json").is_file():
        raise FileNotFoundError(f"train.model {folder} is not a Hugging Face model folder (no config.json)")
    tokenizer = ensure_pad_token(AutoTokenizer.from_pretrained(folder))
    if cfg.attention == "sdpa_folded":
        register()
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32, attn_implementation=cfg.attention)
    model.config.use_cache = False  # no KV cache in training; with one, packed rows would attend across pairs
    if cfg.method == "lora":
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(model, LoraConfig(r=cfg.lora_r, lora_alpha=cfg.lora_alpha, lora_dropout=cfg.lora_dropout,
                                                 target_modules=list(cfg.lora_targets), task_type="CAUSAL_LM"))
    return model, tokenizer


def on_cpu(device: str) -> bool:
    """Whether training runs on the CPU (``auto``: when no GPU is present)."""
    import torch

    return device == "cpu" or (device == "auto" and not torch.cuda.is_available())


def fast_bf16(device: str) -> bool:
    """Whether ``device`` computes bf16 natively (see ``TrainConfig.precision``)."""
    import torch

    if not on_cpu(device):
        return torch.cuda.is_bf16_supported()
    try:
        return torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported()
    except AttributeError:  # a torch without these probes: assume emulation
        return False


def resolved_precision(cfg: TrainConfig) -> str:
    """``cfg.precision`` with ``auto`` decided for this machine."""
    if cfg.precision != "auto":
        return cfg.precision
    return "bf16" if fast_bf16(cfg.device) else "fp32"


def training_arguments(cfg: TrainConfig, out_dir: Path, has_eval: bool, report_to: str, fast: bool = False) -> Any:
    """transformers ``TrainingArguments`` for ``cfg``."""
    from transformers import TrainingArguments

    eval_strategy = "steps" if has_eval and cfg.eval_steps else "no"
    return TrainingArguments(
        output_dir=str(out_dir / "checkpoints"), per_device_train_batch_size=cfg.micro_batch,
        per_device_eval_batch_size=cfg.micro_batch, gradient_accumulation_steps=cfg.grad_accum,
        learning_rate=cfg.learning_rate, weight_decay=cfg.weight_decay, warmup_steps=cfg.warmup_ratio,
        lr_scheduler_type="cosine", num_train_epochs=cfg.epochs, max_steps=cfg.max_steps or -1,
        bf16=resolved_precision(cfg) == "bf16", use_cpu=on_cpu(cfg.device), torch_compile=cfg.torch_compile and not fast,
        train_sampling_strategy="random" if cfg.packing else "group_by_length", length_column_name="length",
        save_strategy="steps", save_steps=cfg.save_steps, save_total_limit=cfg.save_total_limit,
        eval_strategy=eval_strategy, eval_steps=cfg.eval_steps or None, logging_steps=cfg.logging_steps,
        include_num_input_tokens_seen="non_padding", seed=cfg.seed, data_seed=cfg.seed, report_to=report_to,
        remove_unused_columns=False, dataloader_num_workers=0, disable_tqdm=False)


def make_collator(tokenizer: Any, packing: bool, shared_prefix: bool = False, prompt_grad: bool = True) -> Any:
    """Padding-free flattening (packing), or padded batches (with the shared prefix split off, and the
    prompt from the completion without ``prompt_grad``)."""
    from transformers import DataCollatorForSeq2Seq, DataCollatorWithFlattening

    from icalkit.training.completion_loss import SharedPrefixCollator

    if packing:
        return DataCollatorWithFlattening(return_position_ids=True, separator_id=-100)
    if shared_prefix:
        return SharedPrefixCollator(tokenizer.pad_token_id, split_prompt=not prompt_grad)
    return DataCollatorForSeq2Seq(tokenizer, padding=True, label_pad_token_id=-100)


class StopCallbackFactory:
    """Builds the callback that stops on the time budget, after a step or on Ctrl-C / SIGTERM (and
    checkpoints), and times steps.

    The first SIGINT or SIGTERM during training finishes the optimizer step under way, then
    checkpoints and saves the model as the time budget does; a second one stops at once.
    """

    @staticmethod
    def build(time_budget_s: float, stop_after_steps: int) -> Any:
        from transformers import TrainerCallback

        class _Stop(TrainerCallback):
            def __init__(self) -> None:
                self.start = time.monotonic()
                self.reason = ""
                self.first: tuple[float, int] | None = None
                self.last: tuple[float, int] = (0.0, 0)

                self.signalled = False
                self._handlers: dict[int, Any] = {}

            def on_train_begin(self, args, state, control, **kwargs):  # noqa: ANN001 - transformers API
                if threading.current_thread() is threading.main_thread():
                    for sig in (signal.SIGINT, signal.SIGTERM):
                        self._handlers[sig] = signal.signal(sig, self._on_signal)

            def on_train_end(self, args, state, control, **kwargs):  # noqa: ANN001 - transformers API
                for sig, handler in self._handlers.items():
                    signal.signal(sig, handler)
                self._handlers.clear()

            def _on_signal(self, signum: int, frame: Any) -> None:
                signal.signal(signum, self._handlers.get(signum, signal.SIG_DFL))  # a second one stops at once
                self.signalled = True
                print(f"{signal.Signals(signum).name}: stopping after this optimizer step "
                      "(checkpoint + model); send it again to stop now", flush=True)

            def on_step_end(self, args, state, control, **kwargs):  # noqa: ANN001 - transformers API
                if self.signalled:
                    self.reason = "interrupted (SIGINT/SIGTERM)"
                elif time_budget_s and time.monotonic() - self.start > time_budget_s:
                    self.reason = f"time budget of {time_budget_s:.0f} s spent"
                elif stop_after_steps and state.global_step >= stop_after_steps:
                    self.reason = f"stop_after_steps={stop_after_steps} reached"
                if self.reason and state.global_step < state.max_steps:
                    control.should_save = control.should_training_stop = True
                if self.first is None:  # steady-state throughput: from the end of the first step on
                    self.first = (time.perf_counter(), state.num_input_tokens_seen)
                self.last = (time.perf_counter(), state.num_input_tokens_seen)
                return control

            def steady_tokens_per_s(self) -> float | None:
                """Tokens/s after the first optimizer step (its one-off warm-up left out); None if < 2 steps."""
                if self.first is None or self.last[1] <= self.first[1] or self.last[0] <= self.first[0]:
                    return None
                return round((self.last[1] - self.first[1]) / (self.last[0] - self.first[0]), 1)

        return _Stop()


def latest_checkpoint(out_dir: Path) -> str | None:
    """The newest ``checkpoint-N`` folder under ``out_dir/checkpoints`` (None if none)."""
    ckpts = sorted((out_dir / "checkpoints").glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[-1]))
    return str(ckpts[-1]) if ckpts else None


def peak_rss_gb() -> float:
    """Peak resident memory of this process so far, in GB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6


def save_trained(trainer: Any, tokenizer: Any, cfg: TrainConfig, out_dir: Path) -> Path:
    """Save the adapter (``adapter/``, pointing at its base folder) or full model (``model/``)."""
    target = out_dir / ("adapter" if cfg.method == "lora" else "model")
    trainer.model.config.use_cache = True  # off for training only: generation needs the KV cache
    trainer.save_model(str(target))
    if trainer.is_world_process_zero():
        tokenizer.save_pretrained(str(target))  # tokenizer + chat template travel with the weights
        if cfg.method == "full":  # generation stops where training ended answers, whatever eos the conversion set
            from icalkit.models.llm.hf import stop_ids

            gen = trainer.model.generation_config
            gen.eos_token_id = stop_ids(tokenizer, gen.eos_token_id)
            gen.save_pretrained(str(target))
    return target


def train(cfg: TrainConfig, dataset_path: str | Path, out_dir: str | Path, report_to: str = "none") -> dict:
    """Train on the saved pairs; returns (and writes to ``train_summary.json``) the run's figures.

    Args:
        cfg: training settings.
        dataset_path: folder written by ``build_pairs`` (``dataset/``).
        out_dir: run folder: ``checkpoints/``, ``adapter/`` or ``model/``, ``train_summary.json``.
        report_to: transformers' ``report_to`` (``wandb`` or ``none``).
    """
    import torch
    from accelerate import PartialState
    from transformers import Trainer

    from icalkit.training.completion_loss import completion_loss_trainer

    cfg.validate()
    fast = cfg.completion_loss and PartialState().num_processes == 1  # both bypass a DDP wrapper's forward
    out = Path(out_dir)
    ds = load_pairs(dataset_path)
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    model, tokenizer = load_model(cfg)
    if fast and cfg.torch_compile:  # the loss calls the decoder, not model.forward (which Trainer would compile)
        (model.get_base_model() if hasattr(model, "get_base_model") else model).get_decoder().compile(dynamic=True)
    train_ds, too_long = tokenize_split(ds["train"], tokenizer, cfg.max_length)
    if len(train_ds) == 0:
        raise DatasetError(f"every training pair is longer than train.max_length={cfg.max_length} tokens")
    eval_ds = tokenize_split(ds["validation"], tokenizer, cfg.max_length)[0] if len(ds.get("validation", [])) else None
    stop = StopCallbackFactory.build(cfg.time_budget_s, cfg.stop_after_steps)
    trainer_cls = completion_loss_trainer() if fast else Trainer
    collator = make_collator(tokenizer, cfg.packing, shared_prefix=fast and cfg.shared_prefix,
                             prompt_grad=not fast or cfg.prompt_grad)
    trainer = trainer_cls(model=model, args=training_arguments(cfg, out, eval_ds is not None, report_to, fast),
                          train_dataset=train_ds, eval_dataset=eval_ds, data_collator=collator,
                          processing_class=tokenizer,  # checkpoints carry the tokenizer: each one loads on its own
                          callbacks=[stop])
    resume = latest_checkpoint(out) if cfg.resume else None
    if resume and _trainer_state(resume)["global_step"] >= planned_steps(trainer):
        return _already_trained(trainer, tokenizer, cfg, out, resume)
    resumed_tokens = _tokens_before(resume)  # now: checkpoint rotation may delete that folder while training
    start = time.perf_counter()
    result = trainer.train(resume_from_checkpoint=resume)
    wall = time.perf_counter() - start
    state = trainer.state
    steps_done = state.global_step
    finished = not stop.reason
    summary: dict[str, Any] = {
        "method": cfg.method, "precision": resolved_precision(cfg), "packing": cfg.packing, "torch_compile": cfg.torch_compile,
        "completion_loss": fast, "shared_prefix": fast and cfg.shared_prefix,
        "prompt_grad": not fast or cfg.prompt_grad, "attention": cfg.attention,
        "micro_batch": cfg.micro_batch, "grad_accum": cfg.grad_accum,
        "train_pairs": len(train_ds), "dropped_too_long": too_long, "global_step": steps_done,
        "max_steps": state.max_steps, "finished": finished, "stopped_because": stop.reason,
        "resumed_from": resume, "train_loss": result.training_loss,
        "tokens_seen": int(state.num_input_tokens_seen), "wall_s": round(wall, 1),
        "peak_rss_gb": round(peak_rss_gb(), 2), "threads": torch.get_num_threads()}
    if not on_cpu(cfg.device):
        summary["device_name"] = torch.cuda.get_device_name()
        summary["peak_gpu_gb"] = round(torch.cuda.max_memory_allocated() / 1e9, 2)
    summary["train_tokens_per_s"] = round((summary["tokens_seen"] - resumed_tokens) / wall, 1) if wall else math.nan
    summary["steady_tokens_per_s"] = stop.steady_tokens_per_s()
    if finished or cfg.time_budget_s or stop.signalled:  # saved before the validation pass (long on a CPU)
        summary["saved"] = str(save_trained(trainer, tokenizer, cfg, out))
    if eval_ds is not None:
        summary["eval_loss"] = trainer.evaluate()["eval_loss"]
    if trainer.is_world_process_zero():
        (out / "train_summary.json").write_text(json.dumps(summary, indent=2))
    return summary


def _trainer_state(checkpoint: str) -> dict:
    return json.loads((Path(checkpoint) / "trainer_state.json").read_text())


def _tokens_before(checkpoint: str | None) -> int:
    """Tokens already trained when resuming from ``checkpoint`` (its trainer state)."""
    return int(_trainer_state(checkpoint).get("num_input_tokens_seen", 0)) if checkpoint else 0


def planned_steps(trainer: Any) -> int:
    """The optimizer steps this run's settings plan (as the Trainer computes them)."""
    return trainer.set_initial_training_values(trainer.args, trainer.get_train_dataloader())[-1]


def _already_trained(trainer: Any, tokenizer: Any, cfg: TrainConfig, out: Path, checkpoint: str) -> dict:
    """A run whose newest checkpoint has every planned step: nothing to train (the Trainer, resumed
    there, would take one more step when the plan ends inside an epoch). Returns the run's summary;
    if it was lost (stopped while saving), saves the checkpoint's weights and writes it anew."""
    summary_path = out / "train_summary.json"
    steps = _trainer_state(checkpoint)["global_step"]
    if summary_path.is_file() and json.loads(summary_path.read_text()).get("global_step") == steps:
        summary = json.loads(summary_path.read_text())
    else:
        trainer._load_from_checkpoint(checkpoint)
        summary = {"method": cfg.method, "global_step": steps, "max_steps": steps,
                   "saved": str(save_trained(trainer, tokenizer, cfg, out))}
        if trainer.is_world_process_zero():
            summary_path.write_text(json.dumps(summary, indent=2))
    print(f"already trained: {checkpoint} has all {steps} planned steps (nothing to resume)")
    return {**summary, "finished": True, "stopped_because": "", "resumed_from": checkpoint}
