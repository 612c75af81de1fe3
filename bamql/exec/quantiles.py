"""Exact quantiles (MEDIAN, ``quantile_cont``, ``quantile_disc``) beside the aggregate
kernel: the kernel counts each quantile's values in its place (``kernel_query``), then the
matching rows' values are read again per partition (``QuantileTask``, through the table's
runner: in this process or on the Dask worker that holds the partition) and each group's
quantile is taken from them exactly, as DuckDB defines it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import ClassVar

import numpy as np

from bamql.config import Backend, Device, Medium
from bamql.exec.rows import Vec, column_env, map_morsels, row_matches, widen
from bamql.fused import ir
from bamql.fused.domains import strides as key_strides
from bamql.fused.evaluate import evaluate
from bamql.kernels.accumulate import Grouped
from bamql.lazyjit import njit
from bamql.plan.interpolate import between, decimal_between
from bamql.storage.format import ColumnMeta
from bamql.storage.iostats import QueryStats
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
        matches, st = row_matches(store, q.table, q.predicate, cols, self.medium, device, backend)

        def morsel(window, rows, vals) -> dict[int, Slotted]:
            for c in cols:
                if c not in vals:
                    vals[c] = matches.fetch(c, rows, window)
            env, n = column_env(store, {c: vals[c] for c in cols}), len(rows)
            slot = group_slots([evaluate(k, env, n) for k in q.keys], domains, n)
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


#: Most values a quantile's column can hold (by its type and range) for its quantiles to be
#: taken from counts of each group's distinct values (``counts_query``): a GROUP BY of a
#: bounded number of groups, read in the kernel, instead of every matching row's value
COUNTED_VALUES = 1 << 16


def value_range(meta: ColumnMeta) -> int | None:
    """How many distinct values an integer-stored column can hold (its histogram's, or its
    range in stored units); None where it is not bounded so (a float stored as is, a
    string, a timestamp)."""
    if meta.kind not in ("int", "float") or meta.dictionary is not None:
        return None
    if meta.histogram:
        return len(meta.histogram)
    if meta.np_dtype.kind not in "iu" or meta.min is None or meta.max is None:
        return None
    lo, hi = meta.min, meta.max
    if meta.scale:
        lo, hi = round(lo * 10**meta.scale), round(hi * 10**meta.scale)
    return int(hi) - int(lo) + 1


def countable(q: ir.Query, columns: Mapping[str, ColumnMeta]) -> bool:
    """Whether every quantile of ``q`` is of a column whose values are few enough to be
    counted (``COUNTED_VALUES``)."""
    for j in ir.quantile_aggs(q):
        arg = q.aggs[j].arg
        if not isinstance(arg, ir.Col) or arg.name not in columns:
            return False
        n = value_range(columns[arg.name])
        if n is None or n > COUNTED_VALUES:
            return False
    return True


def counts_alone(q: ir.Query, columns: Mapping[str, ColumnMeta]) -> bool:
    """Whether ``q``'s every aggregate is a quantile without FILTER of a column whose values
    can be counted: its GROUP BYs of counts give its groups too, and no other kernel runs."""
    return bool(q.aggs) and countable(q, columns) and all(
        a.func in ir.QUANTILES and a.filter is None for a in q.aggs)


def counts_query(q: ir.Query, a: ir.Agg, nulls: bool = False) -> ir.Query:
    """``q``'s GROUP BY with quantile ``a``'s argument as one more key, counting the rows of
    each (group, value) where ``a``'s FILTER holds and, unless ``nulls``, the argument is
    valid: what ``counted_quantile`` takes (with ``nulls``, a NULL value's rows mark a group
    that has no value)."""
    terms = [t for t in (q.predicate, a.filter) if t is not None]
    if not nulls:
        terms.append(ir.IsNull(a.arg, negated=True))
    pred = None if not terms else terms[0] if len(terms) == 1 else ir.And(tuple(terms))
    keys = (*q.keys, a.arg)
    names = (*(f"__k{i}" for i in range(len(keys))), "__n")
    exprs = (*(ir.KeyRef(i, k.kind) for i, k in enumerate(keys)), ir.AggRef(0, "int"))
    return ir.Query(q.table, pred, keys, (ir.Agg("count", None, "int"),), names, exprs,
                    None, (), None)


def group_slots(keys: list[Vec], domains, n: int) -> np.ndarray:
    """The slot over the query's key ``domains`` of each of ``n`` rows or groups, given
    their keys' (values, valid) (a NULL in its key's last slot)."""
    slot = np.zeros(n, np.int64)
    for (kv, kok), d, s in zip(keys, domains, key_strides(domains), strict=True):
        slot += np.where(kok, d.index(np.where(kok, kv, 0)) - d.base, d.size) * s
    return slot


def quantiles(table: PartitionedTable, q: ir.Query, domains, g: Grouped, medium: Medium,
              runner, stats: QueryStats) -> Grouped:
    """``g`` (the kernel's groups of ``kernel_query(q)``) with each quantile of ``q``
    computed exactly from the matching rows' values, NULLs left out; a group without a
    value gets NULL. The values are read by the table's ``runner`` (``QuantileTask``); the
    reads are added to ``stats``."""
    task = QuantileTask(q, tuple(domains), medium)
    partials = runner.map(table, task)
    for st in partials.stats:
        absorb_io(stats, st)
    got = task.merge(partials.accs)
    present = group_slots(g.keys, domains, g.n)  # the slot of each of the kernel's groups
    aggs = list(g.aggs)
    for j, sv in got.items():
        slot, v = sv if sv is not None else (np.empty(0, np.int64), np.empty(0))
        aggs[j] = _quantile(slot, v, q.aggs[j], present)
    return Grouped(g.keys, aggs, g.n)


def absorb_io(stats: QueryStats, other: QueryStats) -> None:
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

    def pick(*ranks: np.ndarray) -> tuple[np.ndarray, ...]:
        got = _select(x, first, count, ordered, *(first + r for r in ranks))
        return got if len(ranks) > 1 else (got,)

    return _finish(a, groups, count, pick, present, x.dtype)


def counted_quantile(slot: np.ndarray, v: np.ndarray, weight: np.ndarray, a: ir.Agg,
                     present: np.ndarray) -> Vec:
    """Quantile ``a`` per group ``slot`` of values given as distinct ``(slot, v)`` pairs and
    the rows ``weight`` of each (a GROUP BY of the keys and the value, ``counts_query``),
    at the groups ``present``: each group's k-th smallest value is the one whose rows,
    counted in value order, pass k; the same answer as ``_quantile`` over the rows."""
    order = np.lexsort((v, slot))
    slot, v, weight = slot[order], v[order], weight[order]
    groups, first = np.unique(slot, return_index=True)
    cum = np.cumsum(weight)
    before = np.concatenate([[0], cum])[first]
    count = np.diff(np.append(before, cum[-1] if len(cum) else 0))

    def pick(*ranks: np.ndarray) -> tuple[np.ndarray, ...]:
        return tuple(v[np.searchsorted(cum, before + r, side="right")] for r in ranks)

    return _finish(a, groups, count, pick, present, v.dtype)


def _finish(a: ir.Agg, groups: np.ndarray, count: np.ndarray, pick, present: np.ndarray,
            dtype: np.dtype) -> Vec:
    """Quantile ``a`` of each group (``groups`` ascending, ``count`` values each) from
    ``pick(*ranks)``, the values at each group's 0-based ``ranks`` in value order, at the
    groups ``present`` (valid where the group has values)."""
    q = float(a.param)
    if a.func == "quantile_disc":
        got, = pick(np.maximum(np.ceil(count * q).astype(np.int64), 1) - 1)
    else:
        pos = q * (count - 1)
        lo, hi = np.floor(pos).astype(np.int64), np.ceil(pos).astype(np.int64)
        low, high = pick(lo, hi)
        if a.precision:  # a DECIMAL's integers: the same DECIMAL
            got = decimal_between(low, high, pos - lo, a.precision)
        else:
            got = between(low, high, pos - lo)
        dtype = got.dtype
    if not len(groups):
        return np.zeros(len(present), dtype), np.zeros(len(present), bool)
    i = np.clip(np.searchsorted(groups, present), 0, len(groups) - 1)
    return got[i], groups[i] == present


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
