"""The physical operators of a fused leaf, behind one interface: what a SELECT that the fused
translator took whole (its IR) lowers to, and how it explains and runs itself.

- ``KernelAggregate``: the generated scan-filter-aggregate kernel over the table's
  partitions (CPU or GPU, local or on Dask), with a join's regrouping by dimension columns
  and exact quantiles read after the kernel;
- ``HashAggregate``: a GROUP BY whose keys have no dense range (``exec.hashagg``);
- ``Rows``: a query that returns rows (``exec.rows``: late materialization, top-k);
- ``Counted``: COUNT(*) and COUNT(column) of a whole table, answered from its metadata
  (its rows and each column's NULLs), with no kernel and no page read.

The first three run the table's partitions through its runner (in this process or on
Dask): the kernel through ``Runner.run``, the other two as ``Runner.map`` of a partition
task (``exec.runner.PartitionTask``), whose partials the runner brings back.

``lower`` is the one dispatch over the IR's kinds.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

import numpy as np

from bamql.config import Device
from bamql.errors import DeviceError
from bamql.exec.cpu import masked
from bamql.exec.hashagg import HashSite, explain_hashed, hash_task, hashed_columns
from bamql.exec.partials import finish_partial
from bamql.exec.partition import Resident, table_domains
from bamql.exec.quantiles import (
    absorb_io,
    countable,
    counted_quantile,
    counts_alone,
    counts_query,
    group_slots,
    kernel_query,
    quantiles,
)
from bamql.exec.result import Result, assemble
from bamql.exec.rows import RowsTask, arrow_rows, explain_rows, plan_rows
from bamql.exec.runner import Declined, merge, merge_stats
from bamql.fused import ir
from bamql.fused.show import show
from bamql.kernels.accumulate import Grouped, count_present, finish, n_groups, regroup
from bamql.physical.planning import explain_text
from bamql.sql.distinct import distinct_slots
from bamql.sql.joins import JoinQuery
from bamql.storage.iostats import QueryStats


def _out_of_memory() -> DeviceError:
    return DeviceError("out of host memory while running the query")


@dataclass(frozen=True)
class Rows:
    """Rows of one table: filtered, projected, ordered, limited."""

    q: ir.RowQuery

    @property
    def fact(self) -> ir.RowQuery:
        return self.q

    def local(self) -> bool:
        return False  # the table's runner runs it, on the Dask cluster where there is one

    def reads(self) -> tuple[str, ...]:
        """The columns its plan reads."""
        return (*ir.columns_of(self.q.predicate), *self.q.columns)

    def explain(self, s, resident: Resident) -> str:
        part = s.store(self.q.table).parts[0]
        return explain_rows(self.q, explain_text(plan_rows(
            part, self.q.table, self.q.predicate, self.q.columns, s._medium(), resident), part),
            s.device == Device.GPU)

    def run(self, s) -> Result:
        table = s.store(self.q.table)
        text = s.explain_query(self.q)  # before the run, which changes what the OS caches
        runner = s._runner(table)
        t0 = time.perf_counter()
        try:
            task = RowsTask(self.q, s._medium())
            partials = runner.map(table, task)
            out = arrow_rows(task.merge(partials.accs), self.q, table)
        except MemoryError:
            raise _out_of_memory() from None
        stats = merge_stats(table, partials, f"{s.device}/{runner.where}", s.backend,
                            time.perf_counter() - t0)
        return Result(out, stats, text)


@dataclass(frozen=True)
class HashAggregate:
    """A GROUP BY through the hash-aggregation step: each partition's partial through the
    table's runner (``hashagg.HashTask``), merged by key."""

    q: ir.Query

    @property
    def fact(self) -> ir.Query:
        return self.q

    def local(self) -> bool:
        return False  # the table's runner runs it, on the Dask cluster where there is one

    def reads(self) -> tuple[str, ...]:
        """The columns its plan reads."""
        return (*ir.columns_of(self.q.predicate), *hashed_columns(self.q))

    def site(self, s) -> HashSite:
        """Where it groups: in the kernel of the device that runs the partitions."""
        return HashSite.GPU_KERNEL if s.device == Device.GPU else HashSite.CPU_KERNEL

    def explain(self, s, resident: Resident) -> str:
        part = s.store(self.q.table).parts[0]
        return explain_hashed(self.q, explain_text(plan_rows(
            part, self.q.table, self.q.predicate, hashed_columns(self.q), s._medium(), resident),
            part), s.device == Device.GPU, self.site(s))

    def grouped(self, s) -> tuple[Grouped, QueryStats]:
        """The finished groups and the run's statistics."""
        table = s.store(self.q.table)
        runner = s._runner(table)
        task = hash_task(self.q, table.columns, s._medium())
        t0 = time.perf_counter()
        try:
            try:
                partials = runner.map(table, task)
            except Declined:  # more groups than the kernel's tables take: the NumPy step
                partials = runner.map(table, dataclasses.replace(task, kernel=False))
            g = finish_partial(task.merge(partials.accs), self.q)
        except MemoryError:
            raise _out_of_memory() from None
        return g, merge_stats(table, partials, f"{s.device}/{runner.where}", s.backend,
                              time.perf_counter() - t0)

    def run(self, s) -> Result:
        text = s.explain_query(self.q)  # before the run, which changes what the OS caches
        g, stats = self.grouped(s)
        return Result(assemble(g, self.q, s.store(self.q.table).columns), stats, text)


@dataclass(frozen=True)
class KernelAggregate:
    """The fused kernel: filter and aggregate (through dimension joins) in one pass."""

    query: ir.Query | JoinQuery

    @property
    def fact(self) -> ir.Query:
        return self.query.fact if isinstance(self.query, JoinQuery) else self.query

    def local(self) -> bool:
        return False

    def reads(self) -> tuple[str, ...]:
        """The columns its plan reads."""
        return kernel_query(self.fact).columns

    def explain(self, s, resident: Resident) -> str:
        q = self.fact
        part = s.store(q.table).parts[0]
        plan = s.plan(q, resident)
        under_mask = ("\n  on the CPU: every candidate row aggregated under the filter's mask "
                      "(nothing compacted or gathered)"
                      if s.device == Device.CPU and masked(plan) else "")
        return (explain_text(plan, part) + under_mask
                + _quantile_line(q, s.device, s.store(q.table).columns))

    def grouped(self, s) -> tuple[Grouped, QueryStats]:
        """The finished groups of a query over one table (no join) and the run's
        statistics."""
        assert not isinstance(self.query, JoinQuery)
        _, g, stats, _ = self._run(s, s._resident(self))
        return g, stats

    def _run(self, s, resident: Resident) -> tuple[str, Grouped | None, QueryStats, dict]:
        """The plan's text, the finished groups (None for a join: ``run`` finishes them
        from the accumulators, also returned) and the statistics."""
        query, q = self.query, self.fact
        table = s.store(q.table)
        plan = s.plan(q, resident)
        if not isinstance(query, JoinQuery) and counts_alone(q, table.columns):
            t0 = time.perf_counter()
            g, stats = _counted_quantiles(s, q, plan.key_domains, None, None)
            stats.seconds = time.perf_counter() - t0
            return plan, g, stats, {}
        runner = s._runner(table)
        t0 = time.perf_counter()
        try:
            partials = runner.run(table, plan, s._medium())
        except MemoryError:
            raise _out_of_memory() from None
        acc, stats = merge(table, partials, f"{s.device}/{runner.where}", s.backend,
                           time.perf_counter() - t0)
        if isinstance(query, JoinQuery):
            return plan, None, stats, acc
        g = finish(acc, kernel_query(q), plan.key_domains)
        if ir.quantile_aggs(q):  # the values read again: part of the query's time
            t1 = time.perf_counter()
            if countable(q, table.columns):
                g, _ = _counted_quantiles(s, q, plan.key_domains, g, stats)
            else:
                g = quantiles(table, q, plan.key_domains, g, s._medium(), runner, stats)
            stats.seconds += time.perf_counter() - t1
        return plan, g, stats, acc

    def run(self, s) -> Result:
        query, q = self.query, self.fact
        table = s.store(q.table)
        # the text before the run, of the plan that runs: one look at the OS page cache
        resident = s._resident(self)
        text = s.explain_query(query, resident)
        plan, g, stats, acc = self._run(s, resident)
        if isinstance(query, JoinQuery):
            cols = {**table.columns, **query.columns}
            domains = table_domains(query.out, cols)
            if query.distinct:
                (s1, g1), (s2, g2) = distinct_slots(query, plan.key_domains, domains)
                acc = regroup(count_present(regroup(acc, s1, g1), query.distinct), s2, g2)
            elif query.regroups:
                acc = regroup(acc, query.slots(plan.key_domains, domains), n_groups(domains))
            out = assemble(finish(acc, query.out, domains), query.out, cols)
        else:
            out = assemble(g, q, table.columns)
        return Result(out, stats, text)


@dataclass(frozen=True)
class Counted:
    """COUNT(*) and COUNT(column) over a whole table (no WHERE, no GROUP BY), from its
    metadata: the table's rows, less a column's NULLs (counted at ingest, checked when the
    store opens and by ``bamql verify``)."""

    q: ir.Query

    @property
    def fact(self) -> ir.Query:
        return self.q

    def local(self) -> bool:
        return True

    def reads(self) -> tuple[str, ...]:
        """No column: the metadata answers."""
        return ()

    def explain(self, s, resident: Resident) -> str:
        table = s.store(self.q.table)
        return (f"Counted {self.q.table}: {table.rows:,} rows, answered from the table's "
                "metadata (no page read)")

    def run(self, s) -> Result:
        t0 = time.perf_counter()
        table = s.store(self.q.table)
        text = s.explain_query(self.q)
        one = np.ones(1, bool)
        aggs = [(np.array([table.rows - (table.columns[a.arg.name].nulls if a.arg else 0)],
                          np.int64), one) for a in self.q.aggs]
        out = assemble(Grouped([], aggs, 1), self.q, table.columns)
        stats = QueryStats(f"{s.device}/metadata", s.backend, table.rows,
                           rows_matched=table.rows, seconds=time.perf_counter() - t0)
        return Result(out, stats, text)


def counted(q) -> bool:
    """Whether ``q`` counts a whole table's rows or a column's values, and nothing else
    (``Counted``)."""
    return (isinstance(q, ir.Query) and q.predicate is None and not q.keys and bool(q.aggs)
            and all(a.func == "count" and a.filter is None
                    and (a.arg is None or isinstance(a.arg, ir.Col)) for a in q.aggs))


Leaf = Rows | HashAggregate | KernelAggregate | Counted


def lower(s, query: ir.Query | ir.RowQuery | JoinQuery) -> Leaf:
    """The physical operator of a fused leaf's IR (the one dispatch over its kinds)."""
    if isinstance(query, ir.RowQuery):
        return Rows(query)
    if counted(query):
        return Counted(query)
    if not isinstance(query, JoinQuery) and s._hashed(query):
        return HashAggregate(query)
    return KernelAggregate(query)


def _counted_quantiles(s, q: ir.Query, domains, g: Grouped | None,
                       stats: QueryStats | None) -> tuple[Grouped, QueryStats]:
    """``g`` with each quantile of ``q`` taken from the counts of each group's distinct
    values (``quantiles.counts_query``, one GROUP BY per argument and FILTER, run as any
    GROUP BY is: in the kernel, on the session's device); their reads added to ``stats``.
    Without ``g`` (every aggregate a quantile without FILTER: ``counts_alone``), the groups
    are those of the first GROUP BY, which counts NULL values too, and the statistics are
    its own with the others' reads added."""
    done: dict[tuple, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    for j in ir.quantile_aggs(q):
        a = q.aggs[j]
        if (a.arg, a.filter) in done:
            continue
        c, st = lower(s, counts_query(q, a, nulls=g is None)).grouped(s)
        slot = group_slots(c.keys[:-1], domains, c.n)
        if stats is None:
            stats = st
        else:
            absorb_io(stats, st)
        if g is None:
            g = _groups_of(c, slot, len(q.keys), len(q.aggs))
        v, ok = c.keys[-1]
        done[a.arg, a.filter] = (slot[ok], v[ok], c.aggs[0][0][ok])
    present = group_slots(g.keys, domains, g.n)
    aggs = list(g.aggs)
    for j in ir.quantile_aggs(q):
        a = q.aggs[j]
        aggs[j] = counted_quantile(*done[a.arg, a.filter], a, present)
    return Grouped(g.keys, aggs, g.n), stats


def _groups_of(c: Grouped, slot: np.ndarray, keys: int, aggs: int) -> Grouped:
    """The groups (their first ``keys`` key columns) of a GROUP BY whose last key splits
    them, one per slot in slot order; one group without keys, rows or not."""
    if not keys:
        return Grouped([], [None] * aggs, 1)
    _, first = np.unique(slot, return_index=True)
    return Grouped([(v[first], ok[first]) for v, ok in c.keys[:keys]], [None] * aggs, len(first))


def _quantile_line(q: ir.Query, device: Device, columns) -> str:
    """EXPLAIN's line on a query's quantiles ('' where it has none)."""
    js = ir.quantile_aggs(q)
    if not js:
        return ""
    head = "\n  quantiles: " + ", ".join(show(q.aggs[j]) for j in js) + ": exact, "
    if counts_alone(q, columns):
        return head + ("from the rows of each distinct value of each group: a GROUP BY with the "
                       "value as a key, in the kernel, runs in place of the plan above")
    if countable(q, columns):
        return head + ("from the rows of each distinct value of each group (a second GROUP BY, "
                       "with the value as a key, in the kernel)")
    where = "on the CPU (no GPU kernel)" if device == Device.GPU else "on the CPU"
    return head + f"from the matching rows' values read again after the kernel, {where}"
