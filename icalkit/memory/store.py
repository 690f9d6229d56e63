"""Durable SQLite storage for JSON records and their embedding vectors.

:class:`RecordStore` is the shared machinery (used by the example memory and the P-RAG trajectory
database): WAL journal, ``synchronous=FULL``, one ``BEGIN IMMEDIATE`` transaction per add, so
appends are safe from many threads and processes and a crash (even ``kill -9``) loses at most the
record in flight and never corrupts the file. Record ids grow monotonically (AUTOINCREMENT) and
writers are serialised, so "all ids > last seen" is a correct incremental update.

Every vector is stored with its signal, embedder name and dimension. The first vector of a signal
fixes the signal's embedder; adding a vector from another embedder raises
:class:`MixedEmbedderError` naming both.

:class:`ExampleStore` stores :class:`~icalkit.memory.example.Example` records and exports them to
JSONL and to a Hugging Face ``datasets.Dataset``.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from icalkit.memory.example import Example

STORE_SCHEMA_VERSION = 1
NORM_TOLERANCE = 1e-3

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS records(
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    key TEXT UNIQUE NOT NULL,
    task_id TEXT NOT NULL DEFAULT '',
    task_type TEXT NOT NULL DEFAULT '',
    payload TEXT NOT NULL,
    created REAL NOT NULL);
CREATE TABLE IF NOT EXISTS signals(signal TEXT PRIMARY KEY, embedder TEXT NOT NULL, dim INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS vectors(
    record INTEGER NOT NULL REFERENCES records(id),
    signal TEXT NOT NULL,
    embedder TEXT NOT NULL,
    dim INTEGER NOT NULL,
    n INTEGER NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY(record, signal));
"""


class StoreError(RuntimeError):
    """The store file is unusable or was given invalid data."""


class MixedEmbedderError(StoreError):
    """Vectors of one signal would come from two different embedders (or dimensions)."""


@dataclass(frozen=True)
class NewRecord:
    """A record to append: unique key, JSON payload, ``{signal: (embedder, vectors)}``, tags."""

    key: str
    payload: Mapping[str, Any]
    vectors: Mapping[str, tuple[str, np.ndarray]]
    task_id: str = ""
    task_type: str = ""


@dataclass(frozen=True)
class SignalVectors:
    """Vectors of one signal for a range of records.

    Attributes:
        record_ids: (r,) int64 ids of records that have this signal, ascending.
        counts: (r,) int64 number of vectors per record (1 for examples, steps for trajectories).
        vectors: (sum(counts), dim) float32, rows grouped by record in ``record_ids`` order.
    """

    record_ids: np.ndarray
    counts: np.ndarray
    vectors: np.ndarray


class RecordStore:
    """SQLite store of JSON records with per-signal embedding vectors.

    Args:
        path: SQLite file (created with its parent folder if missing).
        kind: what the file holds ("examples", "trajectories"); opening a file of another kind
            is an error.
        timeout_s: how long a writer waits for the lock held by another thread/process.
    """

    def __init__(self, path: str | Path, kind: str, timeout_s: float = 60.0):
        self.path = Path(path).expanduser()
        self.kind = kind
        self.timeout_s = timeout_s
        self._local = threading.local()
        self._lock = threading.Lock()
        self._conns: list[sqlite3.Connection] = []
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._init_schema(self._conn())

    # -- connections -------------------------------------------------------------------------
    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None or getattr(self._local, "pid", None) != os.getpid():
            try:
                conn = sqlite3.connect(str(self.path), timeout=self.timeout_s, isolation_level=None,
                                       check_same_thread=False)
                conn.execute(f"PRAGMA busy_timeout={int(self.timeout_s * 1000)}")
                self._enable_wal(conn)
                conn.execute("PRAGMA synchronous=FULL")
            except sqlite3.DatabaseError as exc:
                raise StoreError(f"cannot open store {self.path}: {exc}") from exc
            self._local.conn, self._local.pid = conn, os.getpid()
            with self._lock:
                self._conns.append(conn)
        return conn

    def _enable_wal(self, conn: sqlite3.Connection) -> None:
        """Switch to WAL, retrying while another process opening the same new file holds the lock.

        Two processes creating one store at once can get "database is locked" from the
        journal-mode change at once, busy timeout or not (seen in CI), so it is retried.
        """
        deadline = time.monotonic() + self.timeout_s
        while True:
            try:
                if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                    conn.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.02)

    def _write(self, conn: sqlite3.Connection) -> _Transaction:
        return _Transaction(conn)

    def _init_schema(self, conn: sqlite3.Connection) -> None:
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                for stmt in filter(str.strip, _SCHEMA.split(";")):
                    conn.execute(stmt)
                row = conn.execute("SELECT value FROM meta WHERE key='kind'").fetchone()
                if row is None:
                    conn.execute("INSERT INTO meta VALUES('kind', ?)", (self.kind,))
                    conn.execute("INSERT INTO meta VALUES('schema_version', ?)", (str(STORE_SCHEMA_VERSION),))
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"store {self.path} is not a usable SQLite file: {exc}") from exc
        if row is not None and row[0] != self.kind:
            raise StoreError(f"{self.path} holds {row[0]!r} records, not {self.kind!r}")

    def close(self) -> None:
        """Close every connection opened by this object."""
        with self._lock:
            for conn in self._conns:
                try:
                    conn.close()
                except sqlite3.Error:
                    pass
            self._conns.clear()
        self._local = threading.local()

    # -- writing -----------------------------------------------------------------------------
    def add(
        self,
        key: str,
        payload: Mapping[str, Any],
        vectors: Mapping[str, tuple[str, np.ndarray]],
        task_id: str = "",
        task_type: str = "",
    ) -> int:
        """Append one record with its vectors in one transaction; return its id.

        Args:
            key: unique record key (e.g. example id); a duplicate raises :class:`StoreError`.
            payload: JSON-serialisable dict.
            vectors: ``{signal: (embedder_name, array (n, dim) or (dim,))}``, unit-norm rows.
            task_id, task_type: indexed tags used by retrieval filters.
        """
        return self.add_batch([NewRecord(key, payload, vectors, task_id, task_type)])[0]

    def add_batch(self, records: Sequence[NewRecord]) -> list[int]:
        """Append several records in ONE transaction (all or nothing); return their ids.

        For bulk imports; loops that must lose at most one item on a crash use :meth:`add`.
        """
        prepared = [
            (r, [(s, name, *_check_vectors(s, arr)) for s, (name, arr) in r.vectors.items()],
             json.dumps(r.payload, ensure_ascii=False, sort_keys=True))
            for r in records
        ]
        conn = self._conn()
        ids = []
        with self._write(conn):
            known = self.signal_embedders()
            for rec, blobs, text in prepared:
                for signal, name, dim, _, _ in blobs:
                    if signal not in known:
                        conn.execute("INSERT INTO signals VALUES(?,?,?)", (signal, name, dim))
                        known[signal] = (name, dim)
                    elif known[signal] != (name, dim):
                        raise MixedEmbedderError(
                            f"{self.path}: signal {signal!r} holds vectors from embedder {known[signal][0]!r} "
                            f"(dim {known[signal][1]}); refusing vectors from {name!r} (dim {dim}) — "
                            "one memory, one embedder per signal"
                        )
                try:
                    cur = conn.execute(
                        "INSERT INTO records(key, task_id, task_type, payload, created) VALUES(?,?,?,?,?)",
                        (rec.key, rec.task_id, rec.task_type, text, time.time()),
                    )
                except sqlite3.IntegrityError as exc:
                    raise StoreError(f"{self.path}: a record with key {rec.key!r} already exists") from exc
                rid = int(cur.lastrowid)
                conn.executemany(
                    "INSERT INTO vectors VALUES(?,?,?,?,?,?)",
                    [(rid, signal, name, dim, n, blob) for signal, name, dim, n, blob in blobs],
                )
                ids.append(rid)
        return ids

    # -- reading -----------------------------------------------------------------------------
    def count(self) -> int:
        """Number of records."""
        return int(self._conn().execute("SELECT COUNT(*) FROM records").fetchone()[0])

    def max_id(self) -> int:
        """Largest record id (0 when empty)."""
        return int(self._conn().execute("SELECT COALESCE(MAX(id), 0) FROM records").fetchone()[0])

    def signal_embedders(self) -> dict[str, tuple[str, int]]:
        """``{signal: (embedder_name, dim)}`` fixed by the vectors stored so far."""
        rows = self._conn().execute("SELECT signal, embedder, dim FROM signals").fetchall()
        return {s: (e, int(d)) for s, e, d in rows}

    def check_embedders(self, expected: Mapping[str, tuple[str, int]]) -> None:
        """Raise :class:`MixedEmbedderError` if a stored signal used another embedder/dim."""
        stored = self.signal_embedders()
        for signal, (name, dim) in expected.items():
            if signal in stored and stored[signal] != (name, int(dim)):
                raise MixedEmbedderError(
                    f"{self.path}: signal {signal!r} was written with embedder {stored[signal][0]!r} "
                    f"(dim {stored[signal][1]}), but {name!r} (dim {dim}) is configured"
                )

    def get(self, key: str) -> dict[str, Any]:
        """Payload of the record with ``key``; ``KeyError`` naming the key if absent."""
        row = self._conn().execute("SELECT payload FROM records WHERE key=?", (key,)).fetchone()
        if row is None:
            raise KeyError(f"no record with key {key!r} in {self.path}")
        return json.loads(row[0])

    def payloads(self, ids: list[int] | np.ndarray) -> list[dict[str, Any]]:
        """Payloads of records by id, in the order given."""
        ids = [int(i) for i in ids]
        if not ids:
            return []
        found: dict[int, str] = {}
        conn = self._conn()
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            marks = ",".join("?" * len(chunk))
            found.update(conn.execute(f"SELECT id, payload FROM records WHERE id IN ({marks})", chunk).fetchall())
        missing = [i for i in ids if i not in found]
        if missing:
            raise KeyError(f"record ids {missing[:5]} not in {self.path}")
        return [json.loads(found[i]) for i in ids]

    def iter_payloads(self, batch: int = 1000) -> Iterator[tuple[int, dict[str, Any]]]:
        """Yield ``(id, payload)`` in id order, reading ``batch`` rows at a time."""
        last = 0
        conn = self._conn()
        while True:
            rows = conn.execute(
                "SELECT id, payload FROM records WHERE id>? ORDER BY id LIMIT ?", (last, batch)
            ).fetchall()
            if not rows:
                return
            for rid, text in rows:
                yield int(rid), json.loads(text)
            last = rows[-1][0]

    def tags(self, after_id: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(ids int64, task_ids object, task_types object)`` of records with id > after_id."""
        rows = self._conn().execute(
            "SELECT id, task_id, task_type FROM records WHERE id>? ORDER BY id", (after_id,)
        ).fetchall()
        ids = np.array([r[0] for r in rows], dtype=np.int64)
        return ids, np.array([r[1] for r in rows], dtype=object), np.array([r[2] for r in rows], dtype=object)

    def vectors(self, signal: str, after_id: int = 0, upto_id: int | None = None) -> SignalVectors:
        """Vectors of ``signal`` for records with ``after_id < id <= upto_id``."""
        upto = self.max_id() if upto_id is None else upto_id
        rows = self._conn().execute(
            "SELECT record, dim, n, data FROM vectors WHERE signal=? AND record>? AND record<=? ORDER BY record",
            (signal, after_id, upto),
        ).fetchall()
        dim = self.signal_embedders().get(signal, ("", 0))[1]
        if not rows:
            return SignalVectors(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, dim), np.float32))
        mats = [np.frombuffer(r[3], dtype="<f4").reshape(r[2], r[1]) for r in rows]
        return SignalVectors(
            np.array([r[0] for r in rows], dtype=np.int64),
            np.array([r[2] for r in rows], dtype=np.int64),
            np.concatenate(mats).astype(np.float32, copy=False),
        )

    def meta(self, key: str) -> str | None:
        """Value of a ``meta`` entry (settings recorded with the store), or None."""
        row = self._conn().execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str, only_if_missing: bool = False) -> str:
        """Record a ``meta`` entry; with ``only_if_missing`` keep an existing value. Returns the stored value."""
        conn = self._conn()
        with self._write(conn):
            verb = "INSERT OR IGNORE" if only_if_missing else "INSERT OR REPLACE"
            conn.execute(f"{verb} INTO meta VALUES(?, ?)", (key, value))
            return str(conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()[0])

    def count_upto(self, upto_id: int) -> int:
        """Number of records with id <= ``upto_id``."""
        return int(self._conn().execute("SELECT COUNT(*) FROM records WHERE id<=?", (upto_id,)).fetchone()[0])

    def key_of(self, record_id: int) -> str | None:
        """Unique key of the record with ``record_id`` (None if absent)."""
        row = self._conn().execute("SELECT key FROM records WHERE id=?", (record_id,)).fetchone()
        return None if row is None else str(row[0])

    def integrity_check(self) -> str:
        """SQLite's ``PRAGMA integrity_check`` result ("ok" when healthy)."""
        return str(self._conn().execute("PRAGMA integrity_check").fetchone()[0])


def records_digest(path: str | Path) -> str:
    """Digest of a store's records, read without opening it for writing (the file's bytes change
    when it is merely opened: SQLite's WAL switch); "" when there is no file. ``icalkit eval`` keys
    a method's episodes on it, so a rebuilt memory (or new transfer scores) re-runs them."""
    if not path or not Path(path).is_file():
        return ""
    digest = hashlib.sha256()
    try:
        with sqlite3.connect(f"file:{Path(path).resolve()}?mode=ro", uri=True) as conn:
            for row in conn.execute("SELECT * FROM records ORDER BY rowid"):
                digest.update(repr(row).encode())
            transfer = conn.execute("SELECT value FROM meta WHERE key='transfer'").fetchone()
            if transfer is not None:  # cross-replay scores order the copy planner's candidates
                digest.update(b"transfer:" + str(transfer[0]).encode())
    except sqlite3.DatabaseError as exc:  # not a store: the caller's own check names the problem
        return f"unreadable: {exc}"
    return digest.hexdigest()


class _Transaction:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on any exception)."""

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn

    def __enter__(self) -> sqlite3.Connection:
        self.conn.execute("BEGIN IMMEDIATE")
        return self.conn

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self.conn.execute("ROLLBACK" if exc_type else "COMMIT")


def _check_vectors(signal: str, arr: np.ndarray) -> tuple[int, int, bytes]:
    """Validate (n, dim) or (dim,) unit-norm finite vectors; return (dim, n, float32 LE bytes)."""
    a = np.asarray(arr, dtype=np.float32)
    if a.ndim == 1:
        a = a[None, :]
    if a.ndim != 2 or a.shape[0] == 0 or a.shape[1] == 0:
        raise StoreError(f"signal {signal!r}: vectors must be (n, dim) with n, dim >= 1, got shape {a.shape}")
    if not np.isfinite(a).all():
        raise StoreError(f"signal {signal!r}: vectors contain NaN or inf")
    norms = np.linalg.norm(a, axis=1)
    if np.abs(norms - 1.0).max() > NORM_TOLERANCE:
        raise StoreError(f"signal {signal!r}: vectors must be L2-normalised (norms {norms.min():.4f}..{norms.max():.4f})")
    return int(a.shape[1]), int(a.shape[0]), a.astype("<f4").tobytes()


class ExampleStore(RecordStore):
    """Durable store of :class:`Example` records and their embeddings."""

    def __init__(self, path: str | Path, timeout_s: float = 60.0):
        super().__init__(path, kind="examples", timeout_s=timeout_s)

    def add_example(self, example: Example, vectors: Mapping[str, tuple[str, np.ndarray]]) -> int:
        """Append ``example`` with ``{signal: (embedder_name, vector)}``; return its record id."""
        return self.add(example.example_id, example.to_dict(), vectors, example.task_id, example.task_type)

    def add_examples(self, items: Sequence[tuple[Example, Mapping[str, tuple[str, np.ndarray]]]]) -> list[int]:
        """Bulk import ``(example, vectors)`` pairs in one transaction (see :meth:`add_batch`)."""
        return self.add_batch(
            [NewRecord(e.example_id, e.to_dict(), v, e.task_id, e.task_type) for e, v in items]
        )

    def get_example(self, example_id: str) -> Example:
        """The example with ``example_id`` (``KeyError`` if absent)."""
        return Example.from_dict(self.get(example_id))

    def examples(self, ids: list[int] | np.ndarray) -> list[Example]:
        """Examples by record id, in the order given."""
        return [Example.from_dict(p) for p in self.payloads(ids)]

    def __iter__(self) -> Iterator[Example]:
        for _, payload in self.iter_payloads():
            yield Example.from_dict(payload)

    def __len__(self) -> int:
        return self.count()

    def _rows(self, include_embeddings: bool) -> Iterator[dict[str, Any]]:
        signals = sorted(self.signal_embedders()) if include_embeddings else []
        vecs = {}
        for s in signals:
            sv = self.vectors(s)
            vecs[s] = dict(zip(sv.record_ids.tolist(), sv.vectors, strict=True))
        for rid, payload in self.iter_payloads():
            row = dict(payload)
            for s in signals:
                v = vecs[s].get(rid)
                row[f"embedding_{s}"] = None if v is None else v.tolist()
            yield row

    def to_jsonl(self, path: str | Path, include_embeddings: bool = False) -> int:
        """Write one JSON example per line (optionally with ``embedding_<signal>``); return count."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        n = 0
        with open(path, "w", encoding="utf-8") as fh:
            for row in self._rows(include_embeddings):
                fh.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
                n += 1
        return n

    def to_hf_dataset(self, include_embeddings: bool = True) -> Any:
        """Export to ``datasets.Dataset``.

        Free-form nested fields (states, observed changes, feedback history) become JSON strings so
        the dataset has a fixed schema; the embedder of every signal is stored in
        ``dataset.info.description`` as JSON ``{"embedders": {signal: [name, dim]}}``.
        """
        import datasets

        json_fields = ("initial_state", "filtered_state", "observed_changes", "feedback_history")
        rows = []
        for row in self._rows(include_embeddings):
            for f in json_fields:
                row[f] = json.dumps(row[f], ensure_ascii=False, sort_keys=True)
            rows.append(row)
        if not rows:
            raise StoreError(f"{self.path} holds no examples to export")
        info = datasets.DatasetInfo(description=json.dumps({"embedders": self.signal_embedders()}))
        return datasets.Dataset.from_list(rows, info=info)
