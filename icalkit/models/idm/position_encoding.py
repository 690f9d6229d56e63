"""Fixed sinusoidal 2-D position encodings (DETR's ``PositionEmbeddingSine``, normalised)."""

from __future__ import annotations

import math

import torch


def sine_position_encoding(height: int, width: int, dim: int, temperature: float = 10000.0,
                           device: torch.device | None = None) -> torch.Tensor:
    """Encodings of an ``height`` x ``width`` grid, shape (height * width, dim), row-major.

    Half of ``dim`` encodes the row, half the column, each as interleaved sin/cos of the
    normalised coordinate (in [0, 2π]) at geometrically spaced frequencies.
    """
    if dim % 4:
        raise ValueError(f"position encoding dim must be divisible by 4, got {dim}")
    quarter = dim // 4
    freqs = temperature ** (torch.arange(quarter, dtype=torch.float32, device=device) / quarter)
    ys = (torch.arange(height, dtype=torch.float32, device=device) + 0.5) / height * 2 * math.pi
    xs = (torch.arange(width, dtype=torch.float32, device=device) + 0.5) / width * 2 * math.pi
    y = ys[:, None] / freqs  # (H, dim/4)
    x = xs[:, None] / freqs  # (W, dim/4)
    y_enc = torch.cat([y.sin(), y.cos()], dim=1)[:, None, :].expand(height, width, dim // 2)
    x_enc = torch.cat([x.sin(), x.cos()], dim=1)[None, :, :].expand(height, width, dim // 2)
    return torch.cat([y_enc, x_enc], dim=2).reshape(height * width, dim)
