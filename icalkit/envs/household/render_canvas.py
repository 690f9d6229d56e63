"""Drawing surface of the renderer: RGB + segmentation buffers, clipped rectangle fills with
shape masks (round, cylinder) and screen-space overlay patterns (dirt, slices, cracks)."""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np


@lru_cache(maxsize=2048)
def _shape_mask(shape: str, h: int, w: int) -> np.ndarray | None:
    """Boolean (h, w) mask of a shape inside its rectangle (None = full rectangle)."""
    if shape == "round" and h > 2 and w > 2:
        yy = (np.arange(h) + 0.5) / h * 2 - 1
        xx = (np.arange(w) + 0.5) / w * 2 - 1
        return (yy[:, None] ** 2 + xx[None, :] ** 2) <= 1.0
    if shape == "cylinder" and h > 3 and w > 3:
        m = np.ones((h, w), dtype=bool)
        m[0, 0] = m[0, -1] = m[-1, 0] = m[-1, -1] = False
        return m
    return None


@lru_cache(maxsize=16)
def _patterns(size: int) -> dict[str, np.ndarray]:
    """Screen-space overlay patterns: dirt speckle, slice stripes, crack lines."""
    rng = np.random.default_rng(12345)
    coarse = rng.random(((size + 1) // 2, (size + 1) // 2)) < 0.4
    speckle = np.kron(coarse, np.ones((2, 2), dtype=bool))[:size, :size]
    cols = np.arange(size)
    stripes = np.broadcast_to((cols % 3) == 0, (size, size))
    yy, xx = np.mgrid[0:size, 0:size]
    cracks = ((xx + yy) % 7 == 0) | ((xx - yy) % 11 == 0)
    return {"dirty": speckle, "sliced": stripes, "broken": cracks}


class Canvas:
    """RGB + segmentation buffers with clipped rectangle fills."""

    def __init__(self, bg: np.ndarray) -> None:
        self.rgb = bg.copy()
        self.size = bg.shape[0]
        self.seg = np.zeros(bg.shape[:2], dtype=np.int32)
        self.pat = _patterns(self.size)

    def fill(self, rect: tuple[int, int, int, int], colour: tuple[int, int, int], k: int = 0,
             shape: str = "box", pattern: str | None = None) -> None:
        """Paint ``rect`` = (u0, v0, u1, v1) (end exclusive); ``k`` > 0 also writes the seg id."""
        u0, v0, u1, v1 = rect
        s = self.size
        a0, b0, a1, b1 = max(u0, 0), max(v0, 0), min(u1, s), min(v1, s)
        if a0 >= a1 or b0 >= b1:
            return
        if shape == "box" and pattern is None:  # fast path: plain rectangle
            self.rgb[b0:b1, a0:a1] = colour
            if k:
                self.seg[b0:b1, a0:a1] = k
            return
        mask = _shape_mask(shape, v1 - v0, u1 - u0) if shape != "box" else None
        if mask is not None:
            mask = mask[b0 - v0:b1 - v0, a0 - u0:a1 - u0]
        if pattern is not None:
            pm = self.pat[pattern][b0:b1, a0:a1]
            mask = pm if mask is None else (mask & pm)
        if mask is None:
            self.rgb[b0:b1, a0:a1] = colour
            if k:
                self.seg[b0:b1, a0:a1] = k
        else:
            self.rgb[b0:b1, a0:a1][mask] = colour
            if k:
                self.seg[b0:b1, a0:a1][mask] = k


def sub_rect(rect: tuple[int, int, int, int], frac: tuple[float, float, float, float]) -> tuple[int, int, int, int]:
    """Sub-rectangle of ``rect`` from fractions (u0, v0, u1, v1); at least one pixel."""
    u0, v0, u1, v1 = rect
    w, h = u1 - u0, v1 - v0
    a0, b0 = u0 + int(frac[0] * w), v0 + int(frac[1] * h)
    return (a0, b0, max(a0 + 1, u0 + int(math.ceil(frac[2] * w))), max(b0 + 1, v0 + int(math.ceil(frac[3] * h))))
