"""Configuration of the inverse dynamics model, with its action and object vocabularies."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

NO_OBJECT = "None"
CONFIG_NAME = "config.json"


@dataclass
class IDMConfig:
    """Sizes and vocabularies of an :class:`~icalkit.models.idm.InverseDynamicsModel`.

    Attributes:
        image_size: frames are ``image_size`` x ``image_size`` RGB.
        backbone: a timm model name (``resnet10t``, ``resnet18``, ``resnet50``, ...).
        backbone_channels: stage widths for timm ResNets (``null`` = the model's own); narrower
            stages make a CPU-sized backbone.
        backbone_stage: which feature stage feeds the transformer (1..4; stage k has stride 2^(k+1)).
        backbone_kwargs: more timm keyword arguments (e.g. ``stem_width: 8`` for a thin stem).
        pretrained_path: local weights (safetensors or torch file) for the backbone; empty = random.
        d_model / n_heads / enc_layers / dec_layers / ffn_dim / dropout: transformer sizes.
        aux_loss: also supervise every intermediate decoder layer (as DETR).
        actions / objects: output vocabularies; ``objects`` includes ``"None"`` (no target). Empty
            in a config file = take them from the dataset (the household simulator's by default,
            see :func:`icalkit.data_gen.idm_data.household_vocabulary`); a model needs both.
    """

    image_size: int = 64
    backbone: str = "resnet10t"
    backbone_channels: list[int] | None = field(default_factory=lambda: [32, 64, 128, 256])
    backbone_stage: int = 2
    backbone_kwargs: dict[str, int] = field(default_factory=dict)
    pretrained_path: str = ""
    d_model: int = 128
    n_heads: int = 4
    enc_layers: int = 2
    dec_layers: int = 2
    ffn_dim: int = 256
    dropout: float = 0.1
    aux_loss: bool = True
    actions: list[str] = field(default_factory=list)
    objects: list[str] = field(default_factory=list)

    def validate(self) -> None:
        """Raise ``ValueError`` naming the first bad field."""
        if not 16 <= self.image_size <= 1024:
            raise ValueError(f"image_size must be in [16, 1024], got {self.image_size}")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})")
        if min(self.d_model, self.n_heads, self.enc_layers, self.dec_layers, self.ffn_dim) < 1:
            raise ValueError("d_model, n_heads, enc_layers, dec_layers and ffn_dim must be >= 1")
        if not 1 <= self.backbone_stage <= 4:
            raise ValueError(f"backbone_stage must be 1..4, got {self.backbone_stage}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")
        if self.actions and (len(set(self.actions)) != len(self.actions) or len(self.actions) < 2):
            raise ValueError("actions must hold at least two distinct names")
        if self.objects and (len(set(self.objects)) != len(self.objects) or NO_OBJECT not in self.objects):
            raise ValueError(f"objects must be distinct names including {NO_OBJECT!r} (no target)")
        if self.pretrained_path and not Path(self.pretrained_path).is_file():
            raise ValueError(f"pretrained_path {self.pretrained_path!r} is not a file")

    @property
    def no_object_index(self) -> int:
        return self.objects.index(NO_OBJECT)

    def to_json_file(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(asdict(self), indent=2) + "\n")

    @classmethod
    def from_json_file(cls, path: str | Path) -> IDMConfig:
        path = Path(path)
        try:
            data = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise ValueError(f"cannot read IDM config {path}: {exc}") from None
        unknown = set(data) - set(cls.__dataclass_fields__)
        if unknown:
            raise ValueError(f"IDM config {path} has unknown keys {sorted(unknown)}")
        cfg = cls(**data)
        cfg.validate()
        return cfg

    def check_vocabulary(self, actions: list[str], objects: list[str], where: str) -> None:
        """Raise ``ValueError`` if ``actions``/``objects`` (of ``where``) differ from this model's."""
        for name, mine, theirs in (("action", self.actions, actions), ("object", self.objects, objects)):
            if list(mine) != list(theirs):
                extra = sorted(set(theirs) - set(mine))[:8]
                missing = sorted(set(mine) - set(theirs))[:8]
                raise ValueError(
                    f"{where}: the {name} vocabulary differs from the model's ({len(theirs)} vs "
                    f"{len(mine)} names; not in the model: {extra}; missing: {missing}); train a "
                    "model on this vocabulary or rebuild the data with the model's")
