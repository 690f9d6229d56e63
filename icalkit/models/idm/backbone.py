"""CNN backbone of the IDM: one timm feature stage, random init or local pretrained weights."""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


class Backbone(nn.Module):
    """A timm CNN truncated at one stage.

    Args:
        name: timm model name.
        stage: feature stage (1..4) whose map is returned.
        channels: stage widths (timm ResNets only), None = the model's own.
        pretrained_path: local weights file (safetensors or torch) to load; "" = random init.
        extra: more keyword arguments for ``timm.create_model``.
    """

    def __init__(self, name: str, stage: int = 2, channels: list[int] | None = None,
                 pretrained_path: str = "", extra: dict | None = None) -> None:
        super().__init__()
        import timm

        kwargs = {"channels": tuple(channels)} if channels else {}
        kwargs.update(extra or {})
        try:
            self.body = timm.create_model(name, pretrained=False, features_only=True,
                                          out_indices=(stage,), **kwargs)
        except (RuntimeError, TypeError) as exc:
            raise ValueError(f"timm cannot build backbone {name!r} (stage {stage}, channels "
                             f"{channels}, {extra}): {exc}") from None
        if pretrained_path:
            self._load(Path(pretrained_path))
        self.num_channels = self.body.feature_info.channels()[-1]
        self.stride = self.body.feature_info.reduction()[-1]
        self.register_buffer("mean", torch.tensor(IMAGENET_MEAN).view(1, 3, 1, 1), persistent=False)
        self.register_buffer("std", torch.tensor(IMAGENET_STD).view(1, 3, 1, 1), persistent=False)

    def _load(self, path: Path) -> None:
        if path.suffix == ".safetensors":
            from safetensors.torch import load_file

            state = load_file(str(path))
        else:
            state = torch.load(path, map_location="cpu", weights_only=True)
        missing, unexpected = self.body.load_state_dict(state, strict=False)
        if len(missing) == len(self.body.state_dict()):
            raise ValueError(f"pretrained weights {path} match none of the backbone's parameters")

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """(B, 3, H, W) floats in [0, 1] -> feature map (B, C, H/stride, W/stride).

        When the backbone was converted to channels-last memory format, the input follows it.
        """
        x = (images - self.mean) / self.std
        if next(self.body.parameters()).is_contiguous(memory_format=torch.channels_last):
            x = x.contiguous(memory_format=torch.channels_last)
        return self.body(x)[-1]
