"""The Dask worker's share of its machine's cores (engine.dask_worker.share_cores): several
worker processes on one machine each run their parallel CPU kernels on their share, not on
every core each."""

from __future__ import annotations

import os
from types import SimpleNamespace

import numba
import pytest

from bamql.exec import dask_worker


@pytest.fixture
def restore_threads():
    before, threads = dask_worker._threads, numba.get_num_threads()
    yield
    dask_worker._threads = before
    numba.set_num_threads(threads)


def test_workers_on_one_machine_share_its_cores(restore_threads):
    me = SimpleNamespace(address="tcp://10.0.0.7:40001")
    cores = os.cpu_count() or 1
    mine = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else cores
    assert dask_worker.share_cores({"10.0.0.7": 4, "10.0.0.8": 1}, dask_worker=me) \
        == max(1, min(mine, cores // 4))
    # a machine of its own: every core it may run on
    assert dask_worker.share_cores({"10.0.0.8": 4}, dask_worker=me) == max(1, min(mine, cores))
    # more workers than cores: one thread each
    assert dask_worker.share_cores({"10.0.0.7": 10 * cores}, dask_worker=me) == 1


def test_a_call_runs_its_kernels_on_the_share(restore_threads):
    dask_worker.share_cores({"10.0.0.7": 10 * (os.cpu_count() or 1)},
                            dask_worker=SimpleNamespace(address="tcp://10.0.0.7:1"))
    seen = dask_worker._fitted(lambda paths, x: (paths, x, numba.get_num_threads()), ["p"], 3)
    assert seen == (["p"], 3, 1)


def test_a_replaced_partition_is_opened_anew_and_its_gpu_table_dropped(tmp_path, monkeypatch):
    """A worker kept one store per path: a table appended to (another store at the same
    path) was answered from the old one. Opened by (path, digest), the new store replaces
    it, the GPU engines drop the old one's table, and the old digest is refused (review)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from bamql.errors import BamqlError
    from bamql.storage.ingest import append, ingest

    pq.write_table(pa.table({"x": pa.array(range(100))}), tmp_path / "a.parquet")
    ingest([str(tmp_path / "a.parquet")], tmp_path / "t")
    path = str(tmp_path / "t")
    dropped = []
    monkeypatch.setattr(dask_worker, "_stores", {})
    monkeypatch.setattr(dask_worker, "_engines", {"e": SimpleNamespace(drop=dropped.append)})
    old = dask_worker.open_store(path)
    digest = old.manifest.pages_meta_sha256
    assert dask_worker.open_store((path, digest)) is old
    append([str(tmp_path / "a.parquet")], tmp_path / "t")
    assert dask_worker.open_store((path, digest)) is old  # the session's snapshot, still open
    with pytest.raises(BamqlError, match="changed since this session opened it"):
        dask_worker.open_store((path, "0" * 64))
    from bamql.storage.store import PageStore

    with PageStore(path) as now:
        fresh = now.manifest.pages_meta_sha256
    new = dask_worker.open_store((path, fresh))
    assert new is not old and new.rows == 200 and dropped == [old]
    assert dask_worker.open_store((path, fresh)) is new
    with pytest.raises(BamqlError, match="changed since this session opened it"):
        dask_worker.open_store((path, digest))
    old.close()
    new.close()
