"""Saving rendered frames as PNG files and tiling them into contact sheets (Pillow)."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def _check_rgb(rgb: np.ndarray, what: str) -> np.ndarray:
    arr = np.asarray(rgb)
    if arr.ndim != 3 or arr.shape[2] != 3:
        raise ValueError(f"{what} must be an (H, W, 3) RGB array, got shape {arr.shape}")
    if arr.dtype != np.uint8:
        raise ValueError(f"{what} must be uint8, got {arr.dtype}")
    return arr


def save_png(rgb: np.ndarray, path: str | Path, scale: int = 1) -> Path:
    """Write an (H, W, 3) uint8 frame as a PNG (parent folders are created).

    Args:
        rgb: the frame.
        path: output file.
        scale: integer up-scaling factor (nearest neighbour) for easier viewing.

    Returns:
        The path written.
    """
    from PIL import Image

    arr = _check_rgb(rgb, "frame")
    if not isinstance(scale, int) or scale < 1:
        raise ValueError(f"scale must be a positive int, got {scale!r}")
    if scale > 1:
        arr = np.repeat(np.repeat(arr, scale, axis=0), scale, axis=1)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(arr, mode="RGB").save(out)
    return out


def frame_grid(frames: list[np.ndarray], cols: int, pad: int = 2) -> np.ndarray:
    """Tile equally sized frames row-major into one image with ``pad`` black pixels between them.

    Args:
        frames: list of (H, W, 3) uint8 frames of the same shape.
        cols: frames per row (>= 1).
        pad: gap in pixels.

    Returns:
        (rows * (H + pad) - pad, cols * (W + pad) - pad, 3) uint8 contact sheet.
    """
    if not frames:
        raise ValueError("frame_grid needs at least one frame")
    if not isinstance(cols, int) or cols < 1:
        raise ValueError(f"cols must be a positive int, got {cols!r}")
    first = _check_rgb(frames[0], "frames[0]")
    h, w = first.shape[:2]
    for n, f in enumerate(frames):
        if _check_rgb(f, f"frames[{n}]").shape != first.shape:
            raise ValueError(f"frames[{n}] has shape {f.shape}, expected {first.shape}")
    cols = min(cols, len(frames))
    rows = (len(frames) + cols - 1) // cols
    sheet = np.zeros((rows * (h + pad) - pad, cols * (w + pad) - pad, 3), dtype=np.uint8)
    for n, f in enumerate(frames):
        r, c = divmod(n, cols)
        sheet[r * (h + pad): r * (h + pad) + h, c * (w + pad): c * (w + pad) + w] = f
    return sheet
