"""The DETR-style inverse dynamics model, its loss, save/load, and ``build``."""

from __future__ import annotations

from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from icalkit.models.idm.backbone import Backbone
from icalkit.models.idm.configuration_idm import CONFIG_NAME, IDMConfig
from icalkit.models.idm.position_encoding import sine_position_encoding
from icalkit.models.idm.transformer import IDMTransformer

WEIGHTS_NAME = "model.safetensors"


class InverseDynamicsModel(nn.Module):
    """(o_t, o_{t+1}) -> action logits and target-object logits.

    Both frames go through the backbone; their feature maps are projected to ``d_model``,
    flattened, given fixed sinusoidal spatial encodings plus a learned frame (t / t+1) embedding,
    and concatenated into one encoder sequence. The decoder has one learned query per action and
    one per object class (including "None"); a shared feed-forward head reduces each query to a
    scalar, giving the action logits and the object logits.
    """

    def __init__(self, config: IDMConfig) -> None:
        super().__init__()
        config.validate()
        if not config.actions or not config.objects:
            raise ValueError("an IDM needs its action and object vocabularies (config.actions / config.objects); "
                             "take them from the dataset, e.g. icalkit.data_gen.idm_data.household_vocabulary()")
        self.config = config
        self.backbone = Backbone(config.backbone, config.backbone_stage, config.backbone_channels,
                                 config.pretrained_path, config.backbone_kwargs)
        d = config.d_model
        self.input_proj = nn.Conv2d(self.backbone.num_channels, d, kernel_size=1)
        self.frame_embed = nn.Embedding(2, d)
        self.query_embed = nn.Embedding(len(config.actions) + len(config.objects), d)
        self.transformer = IDMTransformer(d, config.n_heads, config.enc_layers, config.dec_layers,
                                          config.ffn_dim, config.dropout)
        self.head = nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, 1))
        side = -(-config.image_size // self.backbone.stride)
        self.register_buffer("pos", sine_position_encoding(side, side, d), persistent=False)

    def check_frames(self, frames: torch.Tensor, where: str = "input") -> None:
        """Raise ``ValueError`` unless ``frames`` is (B, 2, 3, S, S) with S = ``image_size``."""
        s = self.config.image_size
        if frames.dim() != 5 or frames.shape[1:] != (2, 3, s, s):
            raise ValueError(f"{where}: frame pairs must have shape (batch, 2, 3, {s}, {s}) for this "
                             f"model, got {tuple(frames.shape)}")

    def forward(self, frames: torch.Tensor) -> dict[str, torch.Tensor | list]:
        """Predict from frame pairs.

        Args:
            frames: (B, 2, 3, S, S) floats in [0, 1]; frames[:, 0] = o_t, frames[:, 1] = o_{t+1}.

        Returns:
            ``action_logits`` (B, A), ``object_logits`` (B, O) and ``aux_outputs`` (a list of the
            same two for each intermediate decoder layer when ``aux_loss``; else empty).
        """
        self.check_frames(frames)
        b = frames.shape[0]
        feats = self.input_proj(self.backbone(frames.flatten(0, 1)))  # (2B, d, h, w)
        feats = feats.flatten(2).transpose(1, 2)  # (2B, hw, d)
        hw = feats.shape[1]
        feats = feats + self.pos[:hw].to(feats.dtype)
        feats = feats.view(b, 2, hw, -1) + self.frame_embed.weight[None, :, None, :].to(feats.dtype)
        hs = self.transformer(feats.reshape(b, 2 * hw, -1), self.query_embed.weight)  # (L, B, Q, d)
        scores = self.head(hs).squeeze(-1)  # (L, B, Q)
        n_act = len(self.config.actions)
        outs = [{"action_logits": s[:, :n_act], "object_logits": s[:, n_act:]} for s in scores]
        last = outs[-1]
        return {**last, "aux_outputs": outs[:-1] if self.config.aux_loss else []}

    def save_pretrained(self, directory: str | Path) -> None:
        """Write ``config.json`` and ``model.safetensors`` to ``directory``."""
        from safetensors.torch import save_file

        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        self.config.to_json_file(directory / CONFIG_NAME)
        state = {k: v.detach().cpu().contiguous() for k, v in self.state_dict().items()}
        save_file(state, str(directory / WEIGHTS_NAME))

    @classmethod
    def from_pretrained(cls, directory: str | Path) -> InverseDynamicsModel:
        """Load a model saved by :meth:`save_pretrained` (errors name the missing/bad file)."""
        from safetensors.torch import load_file

        directory = Path(directory)
        for name in (CONFIG_NAME, WEIGHTS_NAME):
            if not (directory / name).is_file():
                raise FileNotFoundError(f"{directory} is not a saved IDM: {name} is missing")
        config = IDMConfig.from_json_file(directory / CONFIG_NAME)
        config.pretrained_path = ""
        model = cls(config)
        try:
            model.load_state_dict(load_file(str(directory / WEIGHTS_NAME)))
        except (RuntimeError, OSError) as exc:
            raise ValueError(f"{directory / WEIGHTS_NAME} does not fit its config.json: {exc}") from None
        return model


class IDMCriterion(nn.Module):
    """Cross-entropy on action and object, weighted by inverse training-set class frequency.

    Args:
        action_weight / object_weight: per-class weights (A,), (O,) or None for uniform.
        object_loss_coef: multiplier of the object term.
    """

    def __init__(self, action_weight: torch.Tensor | None = None, object_weight: torch.Tensor | None = None,
                 object_loss_coef: float = 1.0) -> None:
        super().__init__()
        self.register_buffer("action_weight", action_weight)
        self.register_buffer("object_weight", object_weight)
        self.object_loss_coef = object_loss_coef

    def _single(self, out: dict, actions: torch.Tensor, objects: torch.Tensor) -> dict[str, torch.Tensor]:
        la = F.cross_entropy(out["action_logits"].float(), actions, weight=self.action_weight)
        lo = F.cross_entropy(out["object_logits"].float(), objects, weight=self.object_weight)
        return {"loss_action": la, "loss_object": lo}

    def forward(self, outputs: dict, actions: torch.Tensor, objects: torch.Tensor) -> dict[str, torch.Tensor]:
        """Losses for ``outputs`` of the model and targets (B,), (B,); ``loss`` is the total."""
        losses = self._single(outputs, actions, objects)
        total = losses["loss_action"] + self.object_loss_coef * losses["loss_object"]
        for k, aux in enumerate(outputs.get("aux_outputs", [])):
            a = self._single(aux, actions, objects)
            total = total + a["loss_action"] + self.object_loss_coef * a["loss_object"]
            losses.update({f"{n}_{k}": v for n, v in a.items()})
        losses["loss"] = total
        return losses


def class_weights(counts: torch.Tensor, max_weight: float = 10.0) -> torch.Tensor:
    """Inverse-frequency weights (mean 1 over the seen classes), capped at ``max_weight``.

    Classes absent from training get weight ``max_weight`` (they cannot affect the loss anyway).
    """
    counts = counts.float()
    seen = counts > 0
    w = torch.full_like(counts, max_weight)
    inv = counts[seen].sum() / (seen.sum() * counts[seen])
    w[seen] = inv.clamp(max=max_weight)
    return w


def build(config: IDMConfig, action_counts: torch.Tensor | None = None,
          object_counts: torch.Tensor | None = None) -> tuple[InverseDynamicsModel, IDMCriterion]:
    """Model and criterion (DETR's ``build``); class weights from training-set counts when given."""
    model = InverseDynamicsModel(config)
    criterion = IDMCriterion(class_weights(action_counts) if action_counts is not None else None,
                             class_weights(object_counts) if object_counts is not None else None)
    return model, criterion
