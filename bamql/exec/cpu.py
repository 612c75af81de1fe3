"""The CPU executor: phase 1 filters stage by stage, phase 2 gathers dependent columns for
matching rows and aggregates, morsel by morsel (bounded memory)."""

from __future__ import annotations

import os
import time
from dataclasses import replace

import numpy as np

from bamql.config import AccessPath
from bamql.exec.fetch import fetch
from bamql.fused import domains, ir
from bamql.fused.evaluate import evaluate
from bamql.kernels import accumulate
from bamql.kernels import cpu_loops as kcpu
from bamql.kernels.codegen import N_ERRORS, check_errors
from bamql.physical.planning import PhysicalPlan
from bamql.physical.ranges import RowRanges
from bamql.storage.encoding import null_mask
from bamql.storage.iostats import QueryStats
from bamql.storage.pagemath import page_checksums
from bamql.storage.store import PageStore

#: Rows per morsel: a multiple of every plain column's rows per page (powers of two); a
#: packed column's page that straddles two morsels is read by both.
MORSEL_ROWS = 1 << 21
#: The least share of the candidate rows a one-stage filter is expected to keep for its
#: morsels to be aggregated under its mask (every row's values read, none compacted or
#: gathered: what a filter that keeps many rows costs most in); a filter expected to keep
#: fewer compacts its matches first, so that the dependent columns are read at them only.
MASKED_SHARE = 0.05
#: A filter of more nodes than this is evaluated column at a time (``fused.evaluate``)
#: instead of compiled: numba's compile time grows faster than linearly with a kernel's
#: length, and a wide predicate makes a long kernel.
WIDE_FILTER_NODES = 48


def _filter_wide(pred: ir.Expr, store: PageStore, vals: dict[str, np.ndarray], n: int) -> np.ndarray:
    """Where ``pred`` is TRUE over the stored values ``vals`` of ``n`` rows, evaluated by
    the NumPy interpreter: no compilation, one pass over the rows per node."""
    env = {c: (store.column(c).decode(v), ~null_mask(v)) for c, v in vals.items()}
    v, ok = evaluate(pred, env, n)
    return np.asarray(v, bool) & ok


def _morsels(ranges: RowRanges, size: int):
    """The candidate ranges of each aligned window of ``size`` rows that has any."""
    if not len(ranges):
        return
    first, last = ranges.starts // size, (ranges.ends - 1) // size
    span = np.zeros(int(last[-1]) + 2, np.int64)  # +1 where a range's windows begin, -1 after
    np.add.at(span, first, 1)
    np.add.at(span, last + 1, -1)
    wins = np.nonzero(np.cumsum(span)[:-1] > 0)[0]
    for w in wins.tolist():
        part = ranges.clip(w * size, (w + 1) * size)
        if len(part):
            yield part


def warm_readers(page_size: int) -> None:
    """Compile the page readers and checksums (numba, lazily) on empty input, so that the
    first query's time is its own and not the compiler's."""
    from bamql.storage import nativeio  # numba's, when a query reads pages

    none = np.empty(0, np.int64)
    empty = np.empty((0, page_size), np.uint8)
    nativeio.read_into(nativeio.DiskLayout.volumes([], 1, 0, page_size), none, empty, none)
    page_checksums(empty, none)
    RowRanges.of([(0, 1), (2, 3)]).row_numbers()  # the compiled row fill of morsels


def scan_spans(plan: PhysicalPlan, store: PageStore) -> np.ndarray:
    """The runs of global pages ``(first, end)`` of the candidate ranges that ``plan`` will
    read from the columns' own pages, sorted: those of its scans and streams, and of its
    gathers expected to read at least half of them (a gather's pages are known only once
    the filter has run). None of a column the OS page cache held whole when the plan was
    made, or of reads of a row-group or compressed copy."""
    resident = dict(plan.resident)
    runs = []
    for a in plan.access:
        c = store.column(a.column)
        p0, p1 = plan.ranges.page_runs(c.rows_per_page)
        if (a.shadow or a.compressed or resident.get(a.column, 0.0) >= 1.0
                or (a.path == AccessPath.GATHER and 2 * a.est_pages < (p1 - p0).sum())):
            continue
        runs.append(np.stack([c.first_page + p0, c.first_page + np.minimum(p1, c.n_pages)], 1))
    if not runs:
        return np.zeros((0, 2), np.int64)
    spans = np.concatenate(runs)
    return spans[np.argsort(spans[:, 0], kind="stable")]


class Matches:
    """Phase 1 of a plan on the CPU: its filter stages compiled, and per morsel the rows
    where every stage holds, with the predicate columns' stored values at those rows.
    ``fetch`` reads another column of the plan at any sorted subset of a morsel's rows."""

    def __init__(self, plan: PhysicalPlan, store: PageStore, stats: QueryStats) -> None:
        self.plan, self.store, self.stats = plan, store, stats
        store.prefetch(scan_spans(plan, store))  # the disk works while the kernels load
        sent = {name: c.sentinel for name, c in store.columns.items()}
        scales = {name: c.scale for name, c in store.columns.items()}
        self.filters = [(s, ir.columns_of(s.predicate)) for s in plan.stages]
        self.parallel = kcpu.parallel_for(store.rows)
        self.kernels = [None if ir.size(s.predicate) > WIDE_FILTER_NODES
                        else kcpu.filter_kernel(s.predicate, cols, sent, scales, self.parallel)
                        for s, cols in self.filters]
        self.paths = {a.column: a.path for a in plan.access}
        self.zst = {a.column: a.compressed for a in plan.access}  # streamed from the zstd copy
        # where each column is read: its own extent, or its row-group copy for a group gather
        self.src = {a.column: store.shadow[a.column] if a.shadow else store.column(a.column)
                    for a in plan.access}

    def warm(self) -> None:
        """Compile the filter kernels (numba compiles lazily) on empty input."""
        store = self.store
        for (_, cols), fk in zip(self.filters, self.kernels, strict=True):
            if fk is not None:
                k, params = fk
                kcpu.warm(k, 0, *[np.empty(0, store.column(c).np_dtype) for c in cols], *params,
                          np.empty(0, bool), np.zeros(N_ERRORS, np.int64))

    def fetch(self, column: str, rows: np.ndarray, window: RowRanges,
              needed: int | None = None) -> np.ndarray:
        """Stored values of ``column`` at ``rows`` (sorted, within ``window``), of which the
        query needs ``needed`` (default: all)."""
        return fetch(self.store, self.src[column], rows, window, self.paths[column], self.stats,
                     len(rows) if needed is None else needed, self.zst[column])

    def windows(self):
        """The plan's morsels (row windows), in row order."""
        return _morsels(self.plan.ranges, max(MORSEL_ROWS, self.store.page_size))

    def match(self, window: RowRanges) -> tuple[np.ndarray, dict[str, np.ndarray]] | None:
        """The rows of ``window`` where every stage holds, with the stored values of the
        predicate columns at them (None: no row); counts them in ``stats.rows_matched``.
        Windows may be matched by several threads at once."""
        store, stats = self.store, self.stats
        rows = window.row_numbers()
        vals: dict[str, np.ndarray] = {}
        for (s, cols), fk in zip(self.filters, self.kernels, strict=True):
            for c in s.columns:
                vals[c] = self.fetch(c, rows, window)
            if fk is None:
                mask = _filter_wide(s.predicate, store, {c: vals[c] for c in cols}, len(rows))
            else:
                k, params = fk
                mask = np.empty(len(rows), bool)
                err = np.zeros(N_ERRORS, np.int64)
                with kcpu.KERNEL_LOCK:
                    k(len(rows), *[vals[c] for c in cols], *params, mask, err)
                check_errors(err)  # an int64 overflow: one line, as in DuckDB
            if mask.all():  # the stage kept every row: nothing to compact
                continue
            rows = rows[mask]
            vals = {c: v[mask] for c, v in vals.items()}
            if not len(rows):
                return None
        if not len(rows):
            return None
        with stats._lock:
            stats.rows_matched += len(rows)
        return rows, vals

    def masked(self, window: RowRanges) -> tuple[np.ndarray, dict[str, np.ndarray], np.ndarray]:
        """Every row of ``window``, the stored values of the predicate columns at every row,
        and where every stage of the filter is TRUE (none compacted; each stage over every
        row, so ``masked`` plans only stages that raise no error); counts the matches in
        ``stats.rows_matched``."""
        rows = window.row_numbers()
        vals: dict[str, np.ndarray] = {}
        mask = np.ones(len(rows), bool)
        for (s, cols), fk in zip(self.filters, self.kernels, strict=True):
            for c in s.columns:
                vals[c] = self.fetch(c, rows, window)
            if fk is None:
                mask &= _filter_wide(s.predicate, self.store, {c: vals[c] for c in cols},
                                     len(rows))
                continue
            k, params = fk
            got = np.empty(len(rows), bool)
            err = np.zeros(N_ERRORS, np.int64)
            with kcpu.KERNEL_LOCK:
                k(len(rows), *[vals[c] for c in cols], *params, got, err)
            check_errors(err)
            mask &= got
        with self.stats._lock:
            self.stats.rows_matched += int(np.count_nonzero(mask))
        return rows, vals, mask

    def __iter__(self):
        """(window, rows, stored values of the predicate columns at rows) per morsel with a
        matching row; counts the matches in ``stats.rows_matched``."""
        for window in self.windows():
            got = self.match(window)
            if got is not None:
                yield window, *got


#: What a filter stage evaluated over rows an earlier stage left out may hold: comparisons
#: and tests of columns and constants, which raise no error on any row
_ERRORLESS = (ir.Col, ir.Lit, ir.Cmp, ir.And, ir.Or, ir.Not, ir.IsNull, ir.InList, ir.Dec)


def _errorless(e: ir.Expr) -> bool:
    return isinstance(e, _ERRORLESS) and all(_errorless(c) for c in e.children())


def masked(plan: PhysicalPlan) -> bool:
    """Whether ``plan``'s morsels are aggregated under their filter's mask (``MASKED_SHARE``):
    a filter expected to keep at least that share of the candidates, every column read
    whole over them (no gather, no row-group copy), and past its first stage only stages
    that raise no error (each stage runs on every row)."""
    share = plan.est_selectivity * plan.rows / max(plan.candidate_rows, 1)
    return (bool(plan.stages) and share >= MASKED_SHARE
            and all(_errorless(s.predicate) for s in plan.stages[1:])
            and all(a.path != AccessPath.GATHER and not a.shadow for a in plan.access))


def _morsel_inputs(matches: Matches, under_mask: bool):
    """Per morsel: (window, rows, the predicate columns' stored values at them, the mask of
    the rows the filter keeps or None): every row under the mask where ``under_mask``,
    else only the morsels with a match, at their matching rows."""
    if under_mask:
        for window in matches.windows():
            yield window, *matches.masked(window)
    else:
        for window, rows, vals in matches:
            yield window, rows, vals, None


def run_cpu(plan: PhysicalPlan, store: PageStore, stats: QueryStats) -> dict[str, np.ndarray]:
    """Execute ``plan`` on the CPU; fills ``stats``; returns merged accumulators."""
    q = plan.query
    sent = {name: c.sentinel for name, c in store.columns.items()}
    scales = {name: c.scale for name, c in store.columns.items()}
    t0 = time.perf_counter()
    matches = Matches(plan, store, stats)
    agg_cols: list[str] = []
    for e in (*q.keys, *q.aggs):
        for c in ir.columns_of(e):
            if c not in agg_cols:
                agg_cols.append(c)
    under_mask = masked(plan)
    akern, aparams = kcpu.agg_kernel(q.keys, plan.key_domains, q.aggs, agg_cols, sent, scales,
                                     matches.parallel)
    groups = accumulate.n_groups(plan.key_domains)
    nch = max(1, min(4 * (os.cpu_count() or 1), (1 << 26) // max(groups * max(len(q.aggs), 1), 1)))
    # numba compiles lazily on first call; warm both kernels on empty input to time it apart
    matches.warm()
    kcpu.warm(akern, 0, 1, *[np.empty(0, store.column(c).np_dtype) for c in agg_cols],
              kcpu.EVERY_ROW, *aparams,
              *accumulate.alloc(1, groups, q.aggs).values())
    warm_readers(store.page_size)  # the compiled page readers, too, compile on first use
    stats.compile_seconds = time.perf_counter() - t0
    total = None
    for window, rows, vals, mask in _morsel_inputs(matches, under_mask):
        needed = None if mask is None else int(np.count_nonzero(mask))
        for c in plan.dependent:
            vals[c] = matches.fetch(c, rows, window, needed)
        args = [vals[c] for c in agg_cols] + [kcpu.EVERY_ROW if mask is None else mask]
        acc = accumulate.alloc(nch, groups, q.aggs)
        with kcpu.KERNEL_LOCK:
            akern(len(rows), nch, *args, *aparams, *acc.values())
        total = accumulate.merge(acc, total)
    if total is None:
        total = accumulate.merge(accumulate.alloc(1, groups, q.aggs), None)
    return total


def run_cpu_hashed(plan: PhysicalPlan, store: PageStore, stats: QueryStats, take) -> None:
    """Execute ``plan``, a GROUP BY hashed in the kernel (``fused.domains.HashSlots``), on
    the CPU; fills ``stats``. Each morsel's chunks keep tables of their own, handed to
    ``take(accumulators, slots)`` (a chunk axis first); a morsel whose tables fill runs
    again with larger ones, which later morsels keep. Raises ``TableFull`` past the
    largest table."""
    q, slots = plan.query, plan.key_domains
    sent = {name: c.sentinel for name, c in store.columns.items()}
    scales = {name: c.scale for name, c in store.columns.items()}
    t0 = time.perf_counter()
    matches = Matches(plan, store, stats)
    agg_cols = list(dict.fromkeys(c for e in (*q.keys, *q.aggs) for c in ir.columns_of(e)))
    under_mask = masked(plan)
    akern, aparams = kcpu.agg_kernel(q.keys, slots, q.aggs, agg_cols, sent, scales,
                                     matches.parallel)
    cols = [np.empty(0, store.column(c).np_dtype) for c in agg_cols] + [kcpu.EVERY_ROW]

    def tables(nch: int, s) -> dict[str, np.ndarray]:
        acc = accumulate.alloc(nch, accumulate.n_groups(s), q.aggs)
        acc.update(kcpu.hash_arrays(nch, s))
        return acc

    matches.warm()
    kcpu.warm(akern, 0, 1, *cols, *aparams, *tables(1, replace(slots, capacity=16)).values())
    warm_readers(store.page_size)
    stats.compile_seconds = time.perf_counter() - t0
    largest = domains.LARGEST_TABLE // slots.dense_slots
    for window, rows, vals, mask in _morsel_inputs(matches, under_mask):
        needed = None if mask is None else int(np.count_nonzero(mask))
        for c in plan.dependent:
            vals[c] = matches.fetch(c, rows, window, needed)
        args = [vals[c] for c in agg_cols] + [kcpu.EVERY_ROW if mask is None else mask]
        # a table per core (each chunk's is filled, then read back and merged by key)
        nch = max(1, min(os.cpu_count() or 1, len(rows) // 65536 + 1))
        while True:
            acc = tables(nch, slots)
            with kcpu.KERNEL_LOCK:
                akern(len(rows), nch, *args, *aparams, *acc.values())
            if not acc["HN"][:, 1].any():
                break
            if slots.capacity * domains.TABLE_GROWTH > largest:
                raise domains.TableFull(q)
            slots = replace(slots, capacity=slots.capacity * domains.TABLE_GROWTH)
        take(acc, slots)
