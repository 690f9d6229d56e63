"""Frame-pair data for the inverse dynamics model, each frame stored once.

``build_idm_dataset`` turns demonstration folders (from ``icalkit demos``) into::

    frames/      Hugging Face dataset, one row per frame: ``frame`` uint8 (S, S, 3)
    pairs/       Hugging Face dataset, one row per step: ``t_index``/``t1_index`` (rows of
                 frames/), ``action`` and ``object`` (vocabulary ids), ``episode_id``,
                 ``layout`` (room type + layout id), ``split`` ("train" or "heldout"),
                 ``success``, ``demonstrator``
    meta.json    vocabularies, image size, counts, skipped files, build frames/s

A pair's frames are two rows of ``frames/``: nothing is duplicated (the old in-memory export
held each frame about five times). The split is by scene layout: a layout of the
``valid_unseen`` split (layout ids 40..59, never used by ``train`` or ``valid_seen`` tasks) is
"heldout", every other layout "train", so evaluation is on layouts the model never saw.
"""

from __future__ import annotations

import json
import time
import warnings
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import Dataset

from icalkit.data_gen.demos import read_episodes
from icalkit.models.idm.configuration_idm import NO_OBJECT

META_NAME = "meta.json"
SPLITS = ("train", "heldout")


@dataclass
class Augment:
    """Photometric jitter applied identically to both frames of a pair (training only).

    Attributes:
        brightness: add a uniform offset in [-b, b] (frames in [0, 1]).
        contrast: scale around the mean by a factor in [1 - c, 1 + c].
    """

    brightness: float = 0.0
    contrast: float = 0.0

    def validate(self) -> None:
        if not (0 <= self.brightness < 1 and 0 <= self.contrast < 1):
            raise ValueError("augment.brightness and augment.contrast must be in [0, 1)")


def household_vocabulary() -> tuple[list[str], list[str]]:
    """The household simulator's 17 TEACh actions and its object classes (sorted) plus "None"."""
    from icalkit.envs.household.actions import ACTIONS
    from icalkit.envs.household.catalog import OBJECT_TYPES

    return list(ACTIONS), sorted(OBJECT_TYPES) + [NO_OBJECT]


def layout_of(task: dict) -> tuple[str, bool]:
    """(layout key such as ``kitchen_L03``, whether it is a held-out layout) of a task dict."""
    from icalkit.envs.household.scene import split_seed

    layout_id, _ = split_seed(task["split"], int(task["scene_seed"]))
    return f"{task['room_type']}_L{layout_id:02d}", task["split"] == "valid_unseen"


def object_class(target: str | None, types: dict[str, str]) -> str:
    """Class of an instance id (``Mug_2`` -> ``Mug``) or ``"None"`` for no target."""
    if not target:
        return NO_OBJECT
    return types.get(target) or target.rsplit("_", 1)[0]


def resize_frames(frames: np.ndarray, size: int) -> np.ndarray:
    """(T, H, W, 3) uint8 -> (T, size, size, 3) uint8 (area filter); unchanged if already that size."""
    if frames.shape[1:3] == (size, size):
        return frames
    from PIL import Image

    return np.stack([np.asarray(Image.fromarray(f).resize((size, size), Image.BOX)) for f in frames])


def load_episode_frames(path: Path, n_steps: int) -> np.ndarray:
    """Frames of one episode, checked: uint8 (n_steps + 1, H, W, 3)."""
    try:
        with np.load(path) as data:
            frames = data["frames"]
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
        raise ValueError(f"{path}: unreadable frames file ({type(exc).__name__}: {exc})") from None
    if frames.ndim != 4 or frames.shape[-1] != 3 or frames.dtype != np.uint8:
        raise ValueError(f"{path}: frames must be uint8 (T, H, W, 3), got {frames.dtype} {frames.shape}")
    if len(frames) != n_steps + 1:
        raise ValueError(f"{path}: {len(frames)} frames for {n_steps} steps (expected {n_steps + 1})")
    return frames


def build_idm_dataset(demo_dirs: list[str], out_dir: str | Path, image_size: int, actions: list[str],
                      objects: list[str], progress: bool = True) -> dict:
    """Write ``frames/``, ``pairs/`` and ``meta.json`` under ``out_dir`` from demonstration folders.

    Episodes without frames, or whose frames file is corrupt or does not match its steps, are
    skipped with a warning naming the file and counted in ``meta.json``. Steps whose action or
    target class is not in the vocabularies raise ``ValueError`` naming the episode.

    Returns:
        The contents of ``meta.json``.
    """
    import datasets
    from tqdm.auto import tqdm

    out = Path(out_dir)
    action_id = {a: k for k, a in enumerate(actions)}
    object_id = {o: k for k, o in enumerate(objects)}
    episodes = []
    for d in demo_dirs:
        path = Path(d) / "episodes.jsonl"
        if not path.is_file():
            raise FileNotFoundError(f"no demonstrations at {path}; collect them with `icalkit demos out_dir={d}`")
        episodes += [(Path(d), ep) for ep in read_episodes(path)]
    pairs: list[dict] = []
    skipped: list[str] = []
    n_frames = 0
    start = time.perf_counter()

    def frame_rows() -> Iterator[dict]:
        nonlocal n_frames
        for d, ep in tqdm(episodes, disable=not progress, desc="idm data"):
            if not ep.get("frames_file"):
                skipped.append(f"{ep['episode_id']}: recorded without frames")
                continue
            try:
                frames = load_episode_frames(d / ep["frames_file"], len(ep["steps"]))
            except ValueError as exc:
                warnings.warn(f"skipping episode {ep['episode_id']}: {exc}", stacklevel=2)
                skipped.append(str(exc))
                continue
            types = {o["objectId"]: o["objectType"] for o in ep.get("initial_objects", [])}
            layout, heldout = layout_of(ep["task"])
            base = n_frames
            for s in ep["steps"]:
                cls = object_class(s["target"], types)
                if s["action"] not in action_id or cls not in object_id:
                    raise ValueError(f"{d / 'episodes.jsonl'}: episode {ep['episode_id']} step {s['t']} "
                                     f"({s['action']}, {cls}) is outside the IDM vocabulary")
                pairs.append({"t_index": base + s["t"], "t1_index": base + s["t"] + 1,
                              "action": action_id[s["action"]], "object": object_id[cls],
                              "episode_id": ep["episode_id"], "layout": layout,
                              "split": "heldout" if heldout else "train", "success": bool(s["success"]),
                              "demonstrator": ep["demonstrator"]})
            for f in resize_frames(frames, image_size):
                n_frames += 1
                yield {"frame": f}

    features = datasets.Features({"frame": datasets.Array3D((image_size, image_size, 3), "uint8")})
    try:
        frames_ds = datasets.Dataset.from_generator(frame_rows, features=features, cache_dir=str(out / ".cache"))
    except Exception as exc:  # datasets wraps generator errors; an empty generator fails too
        if pairs:
            raise
        raise ValueError(f"no frame pairs in {demo_dirs}: every episode lacked readable frames "
                         f"({len(skipped)} skipped)") from exc
    if not pairs:
        raise ValueError(f"no frame pairs in {demo_dirs}: every episode lacked readable frames ({len(skipped)} skipped)")
    frames_ds.save_to_disk(str(out / "frames"))
    datasets.Dataset.from_list(pairs).save_to_disk(str(out / "pairs"))
    wall = time.perf_counter() - start
    meta = {"image_size": image_size, "actions": list(actions), "objects": list(objects),
            "frames": n_frames, "pairs": len(pairs),
            "pairs_per_split": {s: sum(p["split"] == s for p in pairs) for s in SPLITS},
            "layouts_per_split": {s: len({p["layout"] for p in pairs if p["split"] == s}) for s in SPLITS},
            "episodes": len(episodes), "skipped_episodes": len(skipped), "skipped": skipped[:50],
            "demo_dirs": [str(d) for d in demo_dirs], "build_wall_s": wall}
    (out / META_NAME).write_text(json.dumps(meta, indent=2) + "\n")
    import shutil

    shutil.rmtree(out / ".cache", ignore_errors=True)
    return meta


def read_meta(data_dir: str | Path) -> dict:
    """``meta.json`` of a built IDM dataset (clear error if the folder is not one)."""
    path = Path(data_dir) / META_NAME
    if not path.is_file():
        raise FileNotFoundError(f"{data_dir} is not an IDM dataset ({META_NAME} missing); build it with "
                                "`icalkit train-idm data.build=true ...`")
    return json.loads(path.read_text())


@lru_cache(maxsize=1)
def read_frames(data_dir: str | Path, size: int) -> np.ndarray:
    """All frames of a built dataset as one uint8 array (N, size, size, 3), read chunk by chunk
    from Arrow (no per-row Python objects, no wider dtype on the way); the last one is cached,
    so the splits of one dataset share it."""
    import datasets

    column = datasets.load_from_disk(str(Path(data_dir) / "frames")).data.column("frame")
    parts = [chunk.to_numpy(zero_copy_only=False) for chunk in column.chunks]
    frames = np.concatenate(parts) if parts else np.zeros((0, size, size, 3), np.uint8)
    return np.ascontiguousarray(frames.astype(np.uint8, copy=False).reshape(-1, size, size, 3))


class FramePairs(Dataset):
    """Frame pairs of one split of a built IDM dataset.

    The frames are read once into one uint8 array; items index into it.

    Args:
        data_dir: folder written by :func:`build_idm_dataset`.
        split: "train", "heldout" or "all".
        max_pairs: keep at most this many pairs (an evenly spaced subset), None = all.

    Items: ``(frames, action, object)`` with ``frames`` uint8 (2, S, S, 3).
    """

    def __init__(self, data_dir: str | Path, split: str = "train", max_pairs: int | None = None) -> None:
        import datasets

        if split not in (*SPLITS, "all"):
            raise ValueError(f"unknown split {split!r}; expected one of {[*SPLITS, 'all']}")
        self.meta = read_meta(data_dir)
        pairs = datasets.load_from_disk(str(Path(data_dir) / "pairs"))
        if split != "all":
            pairs = pairs.filter(lambda s: s == split, input_columns="split")
        if len(pairs) == 0:
            raise ValueError(f"{data_dir}: the {split!r} split holds no frame pairs")
        if max_pairs is not None and len(pairs) > max_pairs:
            pairs = pairs.select(np.linspace(0, len(pairs) - 1, max_pairs).astype(int))
        cols = pairs.with_format("numpy")[:]
        self.index = np.stack([cols["t_index"], cols["t1_index"]], axis=1)
        self.actions = torch.as_tensor(cols["action"], dtype=torch.long)
        self.objects = torch.as_tensor(cols["object"], dtype=torch.long)
        self.episode_ids = list(cols["episode_id"])
        self.frames = torch.from_numpy(read_frames(str(Path(data_dir).resolve()), self.meta["image_size"]))

    def __len__(self) -> int:
        return len(self.index)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return self.frames[self.index[i]], self.actions[i], self.objects[i]

    def counts(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-class counts of actions and objects (for the loss's class weights)."""
        return (torch.bincount(self.actions, minlength=len(self.meta["actions"])),
                torch.bincount(self.objects, minlength=len(self.meta["objects"])))


def to_model_input(frames: torch.Tensor, augment: Augment | None = None,
                   generator: torch.Generator | None = None) -> torch.Tensor:
    """uint8 (B, 2, S, S, 3) -> float (B, 2, 3, S, S) in [0, 1], with optional jitter per pair.

    Raises:
        ValueError: not a batch of RGB frame pairs.
    """
    if frames.dim() != 5 or frames.shape[1] != 2 or frames.shape[-1] != 3:
        raise ValueError(f"frame pairs must be uint8 (batch, 2, H, W, 3), got {tuple(frames.shape)}")
    x = frames.permute(0, 1, 4, 2, 3).float().div_(255.0)
    if augment is not None and (augment.brightness or augment.contrast):
        b = x.shape[0]
        shape = (b, 1, 1, 1, 1)
        offset = (torch.rand(shape, generator=generator) * 2 - 1) * augment.brightness
        scale = 1 + (torch.rand(shape, generator=generator) * 2 - 1) * augment.contrast
        mean = x.mean(dim=(1, 2, 3, 4), keepdim=True)
        x = ((x - mean) * scale + mean + offset).clamp_(0, 1)
    return x
