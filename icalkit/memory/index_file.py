"""The example memory's FAISS index saved beside its store, and the check that it still fits.

``memory.db`` gets ``memory.db.faiss`` (``faiss.write_index``) and ``memory.db.faiss.json``, a
sidecar naming what the index was built from: the number of records, the last record id and its
key, the embedder of every signal, the key kind, the score weights, the index kind and dim.
:func:`stale_reason` compares the sidecar with the store and the memory's settings and says why
the saved index cannot be used (``None`` when it can). Records added after the save are not a
reason: they are appended to the loaded index.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from icalkit.memory.index import private_tmp
from icalkit.memory.store import RecordStore


@dataclass(frozen=True)
class IndexStamp:
    """What a saved index was built from (the sidecar's content)."""

    records: int
    last_id: int
    last_key: str
    embedders: dict[str, list[Any]]
    key: str
    weights: list[float]
    index: str
    dim: int


def index_paths(store_path: str | Path) -> tuple[Path, Path]:
    """(index file, sidecar) beside the store file."""
    store_path = Path(store_path)
    return store_path.with_name(store_path.name + ".faiss"), store_path.with_name(store_path.name + ".faiss.json")


def write_stamp(path: Path, stamp: IndexStamp) -> None:
    """Write the sidecar atomically (a temporary file of this process and thread, then a rename)."""
    tmp = private_tmp(path)
    tmp.write_text(json.dumps(asdict(stamp), indent=1, sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)


def read_stamp(path: Path) -> IndexStamp | str:
    """The sidecar, or a sentence saying why it cannot be read."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return IndexStamp(**data)
    except FileNotFoundError:
        return f"no sidecar {path.name}"
    except (OSError, ValueError, TypeError) as exc:
        return f"sidecar {path.name} is unreadable ({type(exc).__name__}: {exc})"


def stale_reason(stamp: IndexStamp | str, expected: IndexStamp, store: RecordStore) -> str | None:
    """Why a saved index (described by ``stamp``) does not fit the store and settings, or None.

    ``expected`` carries the memory's current embedders, key kind, weights, index kind and dim
    (its record fields are ignored).
    """
    if isinstance(stamp, str):
        return stamp
    for name in ("embedders", "key", "weights", "index", "dim"):
        have, want = getattr(stamp, name), getattr(expected, name)
        if have != want:
            return f"the index was built with {name}={have!r}, the memory now has {name}={want!r}"
    if stamp.last_id > store.max_id():
        return f"the index covers records up to id {stamp.last_id}, the store ends at id {store.max_id()}"
    if store.count_upto(stamp.last_id) != stamp.records:
        return (f"the store now holds {store.count_upto(stamp.last_id)} records with id <= {stamp.last_id}, "
                f"the index was built from {stamp.records}")
    if stamp.last_id and store.key_of(stamp.last_id) != stamp.last_key:
        return f"record {stamp.last_id} is now {store.key_of(stamp.last_id)!r}, the index saw {stamp.last_key!r}"
    return None
