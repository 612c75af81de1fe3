"""One partition of a query: its plan, its I/O statistics, its run on the CPU or a GPU engine.

Every table runs through here, in the session's process or on a Dask worker: a table of
one store is a table of one partition.
"""

from __future__ import annotations

import time

import numpy as np

from bamql.config import Backend, Device, Medium
from bamql.exec.cpu import run_cpu
from bamql.fused import ir
from bamql.fused.domains import Domain, key_domain
from bamql.physical.cost import MEDIA, reads_page_cache
from bamql.physical.planning import PhysicalPlan, plan_query
from bamql.storage.format import ColumnMeta
from bamql.storage.iostats import ColumnIO, QueryStats
from bamql.storage.residency import cached_shares
from bamql.storage.store import PageStore

Domains = tuple[Domain, ...]


def table_domains(q: ir.Query, columns: dict[str, ColumnMeta]) -> Domains:
    """The group-key domains of ``q`` over a whole table's ``columns``: every partition
    plans with them, so that the partitions' partial aggregates line up slot by slot."""
    return tuple(key_domain(k, columns) for k in q.keys)


#: share of a column's pages (or a row-group copy's, by file name) in the OS page cache
Resident = tuple[tuple[str, float], ...]


def page_cache(store: PageStore, columns: tuple[str, ...], medium: Medium) -> Resident:
    """What the OS page cache holds of ``columns`` of ``store`` (``storage.residency``) where
    plans over ``medium`` depend on it (``physical.cost.reads_page_cache``); () elsewhere."""
    if not reads_page_cache(medium):
        return ()
    return tuple(sorted(cached_shares(store, columns).items()))


def plan_partition(store: PageStore, q: ir.Query, domains: Domains, medium: Medium,
                   resident: Resident | None = None) -> PhysicalPlan:
    """The plan of ``q`` over one partition: its own zone maps, the table's key domains, and
    what the OS page cache holds of it (``resident``; None: looked up here)."""
    if resident is None:
        resident = page_cache(store, q.columns, medium)
    return plan_query(q, store, MEDIA[medium], domains=domains, resident=dict(resident))


def partition_stats(plan: PhysicalPlan, store: PageStore, device: Device,
                    backend: Backend) -> QueryStats:
    """Empty statistics of one partition's run, with a row per column the plan reads."""
    stats = QueryStats(device, backend, store.rows)
    for a in plan.access:
        c = store.column(a.column)
        stats.columns[a.column] = ColumnIO(a.column, a.role, a.path, c.itemsize,
                                           c.n_pages * store.page_size, whole_pages=c.n_pages)
    return stats


def run_partition(store: PageStore, plan: PhysicalPlan, device: Device, backend: Backend,
                  engine=None) -> tuple[dict[str, np.ndarray], QueryStats]:
    """Run ``plan`` over ``store``: (its reduced accumulators, its statistics).

    Parameters
    ----------
    store, plan
        The partition and its plan (:func:`plan_partition`).
    device, backend
        What the statistics name.
    engine
        A GPU engine (``.run(plan, store, stats)``); None runs the CPU engine.
    """
    t_wall = time.perf_counter()
    stats = partition_stats(plan, store, device, backend)
    t0 = time.perf_counter()
    if engine is not None:
        acc = engine.run(plan, store, stats)
    else:
        acc = run_cpu(plan, store, stats)
    end = time.perf_counter()
    if not stats.seconds:  # the GPU engine times its kernel itself
        stats.seconds = end - t0 - stats.compile_seconds
    stats.wall_seconds = end - t_wall - stats.compile_seconds
    return acc, stats
