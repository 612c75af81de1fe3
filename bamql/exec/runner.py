"""Runners: where a table's partitions run, and how their partial results merge.

The session plans a query on a table's first partition and hands the table's partitions to
a runner: :class:`LocalRunner` runs them one after another in this process (on the CPU
engine or the session's GPU engine), ``bamql.exec.distributed.DaskRunner`` on a Dask
cluster's workers. Both return :class:`Partials`, which :func:`merge` turns into the
query's accumulators and statistics the same way.

The fused kernel's aggregates go through ``Runner.run``; every other operator that reads a
table (the hashed GROUP BY, the rows step and its top-k) through ``Runner.map``, as a
:class:`PartitionTask`: a picklable description of one partition's work that a worker runs
as the session would, and whose ``merge`` combines the partitions' partials, on a worker
for its own partitions and on the client for the workers'.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

import numpy as np

from bamql.config import Backend, Device, Medium
from bamql.exec.partition import page_cache, plan_partition, run_partition
from bamql.kernels import accumulate
from bamql.lru import LRU
from bamql.physical.planning import PhysicalPlan
from bamql.storage.iostats import QueryStats
from bamql.storage.partitioned import PartitionedTable
from bamql.storage.store import PageStore


@dataclass
class Dispatch:
    """How a cluster's answers came back (see the fields of the same names in QueryStats)."""

    dispatch_seconds: float
    worker_seconds: list[float]
    worker_spans: list[tuple[float, float]]
    answers_seconds: float


@dataclass
class Partials:
    """What a runner brings back: partials of disjoint rows (the kernel's accumulators or a
    task's partials; one per partition, or per worker that merged its own), each
    partition's statistics, and on a cluster how the answers came back."""

    accs: list[Any]
    stats: list[QueryStats]
    dispatch: Dispatch | None = field(default=None)


class Declined(Exception):
    """Raised by a partition's task where the engine's way of running it does not take the
    query (a hash table of groups past the largest, a key the kernel cannot compute): a
    runner raises it as it is, untried again, and the operator runs the query another way."""


class PartitionTask(Protocol):
    """One partition's work of an operator, picklable, so that a Dask worker runs it too."""

    #: whether the partials keep the partitions' order (the rows step's ties and LIMIT
    #: without ORDER BY): a worker then sends each partition's partial apart and the runner
    #: lists them in partition order; otherwise a worker merges its own first
    ordered: ClassVar[bool]

    def run(self, store: PageStore, device: Device, backend: Backend,
            engine) -> tuple[Any, QueryStats]:
        """``(partial, statistics)`` of one partition, on ``engine`` (a GPU engine) or the
        CPU engine (``engine`` None)."""
        ...

    def merge(self, partials: list[Any]) -> Any:
        """Partials of disjoint partitions as one (of the same kind)."""
        ...

    def enough(self, partials: list[Any]) -> bool:
        """Whether the partitions run so far answer the query (the later ones may be
        skipped, as a LIMIT without ORDER BY allows)."""
        ...


class Runner(Protocol):
    """Runs a table's partitions."""

    #: the statistics' device suffix (``cpu/local``, ``gpu/dask``)
    where: str
    #: EXPLAIN's words for where the partitions run
    place: str

    def run(self, table: PartitionedTable, plan: PhysicalPlan, medium: Medium) -> Partials:
        """Every partition of ``table``; ``plan`` is the first partition's."""
        ...

    def map(self, table: PartitionedTable, task: PartitionTask) -> Partials:
        """``task`` over the partitions of ``table``: their partials (in partition order
        where ``task.ordered``)."""
        ...


class LocalRunner:
    """The partitions one after another in this process, on ``engine`` (a GPU engine) or
    the CPU engine (``engine`` None)."""

    where = "local"
    place = "in this process"

    def __init__(self, device: Device, backend: Backend, engine=None) -> None:
        self.device, self.backend, self.engine = device, backend, engine
        #: plans of the partitions after the first (the session keeps the first's):
        #: (partition, query, medium, page cache) -> plan; an open store's metadata does not change
        self._plans = LRU(1024)

    def _plan(self, store, plan: PhysicalPlan, medium: Medium) -> PhysicalPlan:
        resident = page_cache(store, plan.query.columns, medium)
        key = (str(store.path), plan.query, medium, resident)
        p = self._plans.get(key)
        if p is None:
            p = plan_partition(store, plan.query, plan.key_domains, medium, resident)
            self._plans.put(key, p)
        return p

    def run(self, table: PartitionedTable, plan: PhysicalPlan, medium: Medium) -> Partials:
        accs, stats = [], []
        for i, store in enumerate(table.parts):
            acc, st = run_partition(store, plan if i == 0 else self._plan(store, plan, medium),
                                    self.device, self.backend, self.engine)
            accs.append(acc)
            stats.append(st)
        return Partials(accs, stats)

    def map(self, table: PartitionedTable, task: PartitionTask) -> Partials:
        outs, stats = [], []
        for store in table.parts:
            out, st = task.run(store, self.device, self.backend, self.engine)
            outs.append(out)
            stats.append(st)
            if task.enough(outs):
                break
        return Partials(outs, stats)


def merge(table: PartitionedTable, partials: Partials, label: str, backend: Backend,
          seconds: float) -> tuple[dict[str, np.ndarray] | None, QueryStats]:
    """The query's accumulators and statistics from its partitions'.

    A table of one store reports its partition's statistics as they are; a partitioned
    table's sum its partitions' I/O under ``label`` (such as ``cpu/dask``), with the whole
    run's ``seconds`` and each partition's own time.
    """
    return accumulate.combine_all(partials.accs), merge_stats(table, partials, label, backend,
                                                              seconds)


def merge_stats(table: PartitionedTable, partials: Partials, label: str, backend: Backend,
                seconds: float) -> QueryStats:
    """The query's statistics from its partitions' (as :func:`merge` reports them)."""
    if not table.partitioned:
        return partials.stats[0]
    stats = QueryStats.merged(partials.stats, label, backend, table.rows, seconds, True)
    d = partials.dispatch
    if d is not None:
        stats.dispatch_seconds = d.dispatch_seconds
        stats.worker_seconds = d.worker_seconds
        stats.worker_spans = d.worker_spans
        stats.answers_seconds = d.answers_seconds
    return stats
