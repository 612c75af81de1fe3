"""Partitioned tables: one task per partition, in this process or on a Dask cluster.

Each task plans its partition (its own zone maps) with the whole table's group-key domains,
runs the CPU engine and returns its partial aggregates; the client merges them. Workers
keep their opened stores in process-local state across queries. Tasks are retried on the
remaining workers when a worker dies (Dask ``retries``); a query whose tasks keep failing
fails with one line, never with a partial answer.
"""

from __future__ import annotations

import os
import threading
import time

import numpy as np

from bamql.engine import accumulate
from bamql.engine.stats import ColumnIO, QueryStats
from bamql.errors import BamqlError
from bamql.planner import ir
from bamql.planner.cost import MEDIA
from bamql.planner.physical import plan_query
from bamql.storage.store import PageStore

_stores: dict[str, PageStore] = {}  # per process: a worker's open partitions
_lock = threading.Lock()
#: Tries per partition task (the first run and the retries after a lost worker).
RETRIES = 3


def _store(path: str) -> PageStore:
    with _lock:
        s = _stores.get(path)
        if s is None:
            s = _stores[path] = PageStore(path)
        return s


def run_partition(path: str, q: ir.Query, domains, medium: str) -> tuple[dict, QueryStats]:
    """Run ``q`` on one partition: (reduced accumulators, its I/O statistics)."""
    from bamql.engine.cpu import run_cpu

    delay = float(os.environ.get("BAMQL_FAULT_DELAY", "0"))  # fault injection for tests
    if delay:
        time.sleep(delay)
    store = _store(path)
    plan = plan_query(q, store, MEDIA[medium], domains=domains)
    stats = QueryStats("cpu", "file", store.rows)
    for a in plan.access:
        c = store.column(a.column)
        stats.columns[a.column] = ColumnIO(a.column, a.role, a.path, c.itemsize,
                                           c.n_pages * store.page_size)
    t0 = time.perf_counter()
    acc = run_cpu(plan, store, stats)
    stats.seconds = time.perf_counter() - t0 - stats.compile_seconds
    return acc, stats


def run_partitioned(paths: list[str], q: ir.Query, domains, medium: str, client=None,
                    stats: QueryStats | None = None) -> dict[str, np.ndarray]:
    """All partitions of a query; merged accumulators (``stats`` absorbs theirs)."""
    if client is None:
        results = [run_partition(p, q, domains, medium) for p in paths]
    else:
        futures = [client.submit(run_partition, p, q, domains, medium, pure=False,
                                 retries=RETRIES - 1) for p in paths]
        try:
            results = client.gather(futures)
        except BamqlError:
            raise
        except Exception as e:  # lost workers beyond the retries, a cluster gone away...
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise BamqlError(f"distributed query failed after {RETRIES} tries per partition: "
                             f"{type(e).__name__}: {first}") from None
        finally:
            for f in futures:
                f.release()
    total = None
    for acc, st in results:
        total = acc if total is None else accumulate.combine(acc, total)
        if stats is not None:
            stats.absorb(st)
    return total


def connect_cluster(cluster):
    """A Dask client for ``cluster``: a Client, or a scheduler address string."""
    if cluster is None or hasattr(cluster, "submit"):
        return cluster
    try:
        from distributed import Client
    except ImportError:
        raise BamqlError("Dask is not installed; pip install 'bamql[dask]'") from None
    try:
        return Client(cluster, timeout="10s")
    except Exception as e:
        raise BamqlError(f"cannot reach the Dask scheduler at {cluster!r}: {e}") from None
