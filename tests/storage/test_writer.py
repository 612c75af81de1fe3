"""The page writer's flushing to disk (``storage.writer``): every store is synced, except
within ``unsynced`` (a store made for one query, ``storage.inplace``)."""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from bamql.storage.ingest import ingest
from bamql.storage.writer import unsynced


def _files(d):
    return {p.relative_to(d).as_posix(): p.read_bytes() for p in sorted(d.rglob("*"))
            if p.is_file()}


def test_stores_are_synced_except_within_unsynced(tmp_path, monkeypatch):
    n = 5000
    rng = np.random.default_rng(3)
    pq.write_table(pa.table({"a": rng.integers(0, 100, n), "f": rng.normal(0, 1, n)}),
                   tmp_path / "x.parquet")
    synced: list[int] = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(fd) or real(fd))

    ingest([tmp_path / "x.parquet"], tmp_path / "a", table="t")
    assert synced  # the volumes and the manifest
    before = len(synced)
    with unsynced():
        ingest([tmp_path / "x.parquet"], tmp_path / "b", table="t")
    assert len(synced) == before
    ingest([tmp_path / "x.parquet"], tmp_path / "c", table="t")
    assert len(synced) > before  # synced again once out of it

    # the same store either way, byte for byte
    assert _files(tmp_path / "a") == _files(tmp_path / "b")
