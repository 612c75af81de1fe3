"""Exact quantiles (MEDIAN, ``quantile_cont``, ``quantile_disc``) beside the aggregate
kernel: the kernel counts each quantile's values in its place (``kernel_query``), then the
matching rows' values are read again per partition (``QuantileTask``, through the table's
runner: in this process or on the Dask worker that holds the partition) and each group's
quantile is taken from them exactly, as DuckDB defines it.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import numpy as np

from bamql.config import Backend, Device, Medium
from bamql.engine.accumulate import Grouped
from bamql.engine.rows import Vec, column_env, map_morsels, row_matches, widen
from bamql.engine.stats import QueryStats
from bamql.lazyjit import njit
from bamql.plan.interpolate import between, decimal_between
from bamql.planner import ir
from bamql.planner.domains import strides as key_strides
from bamql.planner.evaluate import evaluate
from bamql.storage.partitioned import PartitionedTable
from bamql.storage.store import PageStore

Slotted = tuple[np.ndarray, np.ndarray]  # (group slots, values)


def kernel_query(q: ir.Query) -> ir.Query:
    """``q`` as the aggregate kernel runs it: each quantile a ``COUNT`` of its argument in
    its place (the groups it has rows in), replaced after the kernel by ``quantiles``."""
    aggs = tuple(ir.Agg("count", a.arg, "int", a.filter) if a.func in ir.QUANTILES else a
                 for a in q.aggs)
    return dataclasses.replace(q, aggs=aggs)


@dataclasses.dataclass(frozen=True)
class QuantileTask:
    """One partition's values of a query's quantiles (``runner.PartitionTask``): per
    quantile aggregate, the group slot (over the table's key ``domains``) and the value of
    each matching row where its argument is valid and its FILTER holds (None: no such row).
    The partials keep the partitions' order, so that the values come together as in one
    process."""

    q: ir.Query
    domains: tuple
    medium: Medium

    ordered: ClassVar[bool] = True

    def run(self, store: PageStore, device: Device, backend: Backend,
            engine) -> tuple[dict[int, Slotted | None], QueryStats]:
        q, domains = self.q, self.domains
        js = ir.quantile_aggs(q)
        cols = tuple(dict.fromkeys(c for e in (*q.keys, *(q.aggs[j] for j in js))
                                   for c in ir.columns_of(e)))
        strides = key_strides(domains)
        matches, st = row_matches(store, q.table, q.predicate, cols, self.medium, device, backend)

        def morsel(window, rows, vals) -> dict[int, Slotted]:
            for c in cols:
                if c not in vals:
                    vals[c] = matches.fetch(c, rows, window)
            env, n = column_env(store, {c: vals[c] for c in cols}), len(rows)
            slot = np.zeros(n, np.int64)
            for k, d, s in zip(q.keys, domains, strides, strict=True):
                kv, kok = evaluate(k, env, n)
                slot += np.where(kok, d.index(np.where(kok, kv, 0)) - d.base, d.size) * s
            out = {}
            for j in js:
                a = q.aggs[j]
                v, ok = widen(*evaluate(a.arg, env, n), n)
                if a.filter is not None:
                    fv, fok = widen(*evaluate(a.filter, env, n), n)
                    ok = ok & fv.astype(bool) & fok
                out[j] = (slot, v) if ok.all() else (slot[ok], v[ok])
            return out

        parts = map_morsels(matches, morsel)
        return {j: _cat([p[j] for p in parts]) for j in js}, st

    def merge(self, partials: list[dict[int, Slotted | None]]) -> dict[int, Slotted | None]:
        """Partials in partition order as one: each quantile's slots and values
        concatenated."""
        return {j: _cat([p[j] for p in partials if p[j] is not None])
                for j in ir.quantile_aggs(self.q)}

    def enough(self, partials: list[dict[int, Slotted | None]]) -> bool:
        return False


def _cat(parts: list[Slotted]) -> Slotted | None:
    """(slots, values) pairs as one (None: none)."""
    if not parts:
        return None
    if len(parts) == 1:  # as it is: a copy would be a second pass over every value
        return parts[0]
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def quantiles(table: PartitionedTable, q: ir.Query, domains, g: Grouped, medium: Medium,
              runner, stats: QueryStats) -> Grouped:
    """``g`` (the kernel's groups of ``kernel_query(q)``) with each quantile of ``q``
    computed exactly from the matching rows' values, NULLs left out; a group without a
    value gets NULL. The values are read by the table's ``runner`` (``QuantileTask``); the
    reads are added to ``stats``."""
    task = QuantileTask(q, tuple(domains), medium)
    partials = runner.map(table, task)
    for st in partials.stats:
        _absorb_io(stats, st)
    got = task.merge(partials.accs)
    strides = key_strides(domains)
    present = np.zeros(g.n, np.int64)  # the slot of each of the kernel's groups
    for (kv, kok), d, s in zip(g.keys, domains, strides, strict=True):
        present += np.where(kok, d.index(np.where(kok, kv, 0)) - d.base, d.size) * s
    aggs = list(g.aggs)
    for j, sv in got.items():
        slot, v = sv if sv is not None else (np.empty(0, np.int64), np.empty(0))
        aggs[j] = _quantile(slot, v, q.aggs[j], present)
    return Grouped(g.keys, aggs, g.n)


def _absorb_io(stats: QueryStats, other: QueryStats) -> None:
    """Add ``other``'s column reads to ``stats`` (columns it lacks are added)."""
    for name, c in other.columns.items():
        if name not in stats.columns:
            stats.columns[name] = c
        else:
            stats.add(name, c.pages_read, c.bytes_read, c.values_needed)


def _quantile(slot: np.ndarray, v: np.ndarray, a: ir.Agg, present: np.ndarray) -> Vec:
    """Quantile ``a`` of the values ``v`` per group ``slot``, at the groups ``present``
    (DuckDB's definitions: ``quantile_cont`` interpolates at ``q * (n - 1)``,
    ``quantile_disc`` takes the value at ``ceil(q * n) - 1``; NaN sorts above +inf)."""
    x, groups, first, count, ordered = _by_group(slot, v)
    q = float(a.param)
    if a.func == "quantile_disc":
        at = np.maximum(np.ceil(count * q).astype(np.int64), 1) - 1
        got = _select(x, first, count, ordered, first + at)
    else:
        pos = q * (count - 1)
        lo, hi = np.floor(pos).astype(np.int64), np.ceil(pos).astype(np.int64)
        got2 = _select(x, first, count, ordered, first + lo, first + hi)
        if a.precision:  # a DECIMAL's integers: the same DECIMAL
            got = decimal_between(got2[0], got2[1], pos - lo, a.precision)
            x = got
        else:
            got, x = between(*got2, pos - lo), x.astype(np.float64)
    i = np.clip(np.searchsorted(groups, present), 0, max(len(groups) - 1, 0))
    has = (i < len(groups)) & (groups[i] == present) if len(groups) else np.zeros(len(present), bool)
    out = got[i] if len(groups) else np.zeros(len(present), x.dtype if len(x) else np.float64)
    return out, has


#: Groups up to which each group's order statistics are selected on its own values (a
#: partial sort per group); past it, every value is sorted by group and value at once.
_SELECT_GROUPS = 4096


def _by_group(slot: np.ndarray, v: np.ndarray):
    """The values grouped by slot (ascending): (values, each group's slot, first
    position and count, and whether values are ordered within groups). Few groups of
    small slots: a counting sort by slot alone, the values within a group left
    unordered (``_select`` orders what it needs); else sorted by slot and value."""
    if len(slot) and 0 <= slot.min() and slot.max() < 2**16:
        sizes = np.bincount(slot)
        groups = np.flatnonzero(sizes)
        if len(groups) <= _SELECT_GROUPS:
            count = sizes[groups]
            first = np.concatenate([[0], np.cumsum(count)[:-1]]).astype(np.int64)
            starts = np.zeros(len(sizes), np.int64)
            starts[groups] = first
            return _scatter(slot, v, starts), groups, first, count, False
    idx = np.lexsort((v, slot))
    groups, first, count = np.unique(slot[idx], return_index=True, return_counts=True)
    return v[idx], groups, first, count, True


@njit(cache=True)
def _scatter(slot, v, starts):
    """``v`` grouped by ``slot`` (a counting sort's last pass): slot ``s``'s values from
    ``starts[s]`` on, in their order."""
    at = starts.copy()
    out = np.empty_like(v)
    for i in range(len(v)):
        s = slot[i]
        out[at[s]] = v[i]
        at[s] += 1
    return out


def _select(x: np.ndarray, first: np.ndarray, count: np.ndarray, ordered: bool,
            *at: np.ndarray):
    """The values at positions ``at`` (each group's k-th smallest, as if each group's
    values were sorted, NaN last): read off where the values are ``ordered`` within
    groups, else one partial sort per group; a tuple where ``at`` is several, else one
    array."""
    out = [np.empty(len(first), x.dtype) for _ in at]
    if ordered or not len(x):
        out = [x[p] for p in at] if len(x) else out
    else:
        for g, (f, c) in enumerate(zip(first.tolist(), count.tolist(), strict=True)):
            ks = sorted({int(p[g]) - f for p in at})
            seg = np.partition(x[f:f + c], ks)
            for o, p in zip(out, at, strict=True):
                o[g] = seg[int(p[g]) - f]
    return tuple(out) if len(at) > 1 else out[0]
