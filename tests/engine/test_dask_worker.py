"""The Dask worker's share of its machine's cores (engine.dask_worker.share_cores): several
worker processes on one machine each run their parallel CPU kernels on their share, not on
every core each."""

from __future__ import annotations

import os
from types import SimpleNamespace

import numba
import pytest

from bamql.engine import dask_worker


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
