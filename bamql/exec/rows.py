"""Row materialization: the step beside the aggregate kernels that returns rows, reading as
late as it can (the exact quantiles read their values the same way: ``exec.quantiles``).

Per partition it plans the needed columns as an aggregate's dependent columns would be
(zone maps and value sets prune, the cost model picks each column's access path), runs the
filter stages on the predicate columns (``exec.cpu.Matches``), and per morsel of
matching rows reads the other columns only at the rows it keeps: with ``ORDER BY ...
LIMIT k`` it first reads the order columns, keeps the morsel's top ``k`` and reads the
select list's columns for those rows alone. It always runs on the CPU. Each partition is a
``RowsTask`` that the table's runner runs (in this process, or on the Dask worker that holds
the partition); its rows (with a LIMIT, its top-k candidates) come back in partition order
and are sorted and cut here as one partition's would be.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import ClassVar

import numpy as np
import pyarrow as pa

from bamql.config import Backend, Device, Medium
from bamql.exec.cpu import Matches, warm_readers
from bamql.exec.partition import Resident, page_cache, partition_stats
from bamql.exec.result import arrow_column, exact_value, unique_names
from bamql.fused import ir
from bamql.fused.evaluate import evaluate
from bamql.fused.show import show
from bamql.lru import LRU
from bamql.parallel import cores
from bamql.physical.cost import MEDIA
from bamql.physical.planning import PhysicalPlan, plan_query
from bamql.storage.encoding import null_mask
from bamql.storage.iostats import QueryStats
from bamql.storage.partitioned import PartitionedTable
from bamql.storage.store import PageStore

Vec = tuple[np.ndarray, np.ndarray]  # (values, valid)

#: EXPLAIN's line for a step that a GPU session runs on the CPU
ON_CPU = "rows: materialized on the CPU (row queries and quantiles have no GPU kernel)"


#: (store path, its page metadata's digest, table, predicate, columns, medium, resident) ->
#: the plan of ``plan_rows``; (store path, digest, query, rows wanted) -> ``topk_bound``'s
#: filter. A store's metadata does not change under one digest, so a repeated query (on a
#: Dask worker too) reuses what its zone maps gave, which at millions of pages per column
#: takes milliseconds to work out
_plans = LRU(512)
_bounds = LRU(512)


def plan_rows(store: PageStore, table: str, predicate: ir.Expr | None, columns: tuple[str, ...],
              medium: Medium, resident: Resident | None = None) -> PhysicalPlan:
    """The plan that filters ``store`` by ``predicate`` and reads ``columns`` at the
    matching rows: planned as an aggregate over those columns is (``COUNT(c)`` each);
    ``resident``: what the OS page cache holds of them (None: looked up here)."""
    aggs = tuple(ir.Agg("count", ir.Col(c, store.column(c).kind), "int") for c in columns)
    q = ir.Query(table, predicate, (), aggs, (), (), None, (), None)
    if resident is None:
        resident = page_cache(store, q.columns, medium)
    key = (str(store.path), store.manifest.pages_meta_sha256, table, predicate, columns,
           medium, resident)
    plan = _plans.get(key)
    if plan is None:
        plan = plan_query(q, store, MEDIA[medium], resident=dict(resident))
        _plans.put(key, plan)
    return plan


def row_matches(store: PageStore, table: str, predicate: ir.Expr | None,
                columns: tuple[str, ...], medium: Medium, device: Device,
                backend: Backend) -> tuple[Matches, QueryStats]:
    """The rows of ``store`` that ``predicate`` keeps, by morsel, with ``columns`` readable
    at them (``plan_rows``); compiled and warmed, its compile time in the statistics."""
    plan = plan_rows(store, table, predicate, columns, medium)
    stats = partition_stats(plan, store, device, backend)
    t0 = time.perf_counter()
    matches = Matches(plan, store, stats)
    matches.warm()
    warm_readers(store.page_size)
    stats.compile_seconds = time.perf_counter() - t0
    return matches, stats


def column_env(store: PageStore, vals: dict[str, np.ndarray]) -> dict[str, Vec]:
    """Stored values -> the evaluator's (values, valid) per column (floats as float64,
    integers, timestamps and dictionary codes as int64)."""
    env = {}
    for c, v in vals.items():
        meta = store.column(c)
        x = meta.decode(v)  # a scaled float's a new float64 array already: not copied again
        x = x.astype(np.float64 if meta.kind == "float" else np.int64, copy=False)
        env[c] = (x, ~null_mask(v))
    return env


def morsel_envs(matches: Matches, store: PageStore,
                columns: tuple[str, ...]) -> Iterator[tuple[dict[str, Vec], int]]:
    """Each morsel's ``columns`` at its matching rows (read there when the filter did not),
    as the evaluator's environment, with its row count."""
    for window, rows, vals in matches:
        for c in columns:
            if c not in vals:
                vals[c] = matches.fetch(c, rows, window)
        yield column_env(store, {c: vals[c] for c in columns}), len(rows)


def sort_order(keys: list[tuple[Vec, bool, bool]]) -> np.ndarray:
    """The permutation that sorts rows by ``keys`` ((values, valid), descending, NULLs
    first) as DuckDB does: NULLs last unless NULLS FIRST, NaN above every other float."""
    if not keys:
        return np.empty(0, np.int64)
    n = len(keys[0][0][0])
    if n == 0:
        return np.empty(0, np.int64)
    sort_keys = []
    for (v, ok), desc, nulls_first in keys:
        v = np.where(ok, v, v[ok][0] if ok.any() else 0) if v.dtype != object else v
        inv = np.unique(v, return_inverse=True)[1].reshape(-1)  # NaN: the largest rank
        sort_keys += [(ok if nulls_first else ~ok).astype(np.int8), -inv if desc else inv]
    return np.lexsort(sort_keys[::-1])


def _candidates(key: tuple[Vec, bool, bool], want: int) -> np.ndarray | None:
    """The rows that can be among the first ``want`` in the order of the first order key
    ``key`` ((values, valid), descending, NULLs first): those at or before the ``want``-th
    value (ties kept: later keys order them), found by a partial sort; None where the
    values have no numeric order to partition (exact integers held as objects)."""
    (v, ok), desc, nulls_first = key
    v = np.asarray(v)
    if v.dtype.kind not in "iufb":
        return None
    x = v.astype(np.int8) if v.dtype.kind == "b" else v
    if x.dtype.kind == "f":
        # NaN is the largest float; descending, it comes first as +inf would (a tie kept)
        x = -np.where(np.isnan(x), np.inf, x) if desc else x
    elif desc:
        x = ~x.astype(np.int64)  # order reversed without negating int64's minimum
    valid = np.flatnonzero(ok)
    nulls = np.flatnonzero(~ok)
    if nulls_first:  # NULLs first, all of them (they tie: later keys order them)
        return nulls if len(nulls) >= want else np.concatenate(
            [nulls, _upto(valid, x[valid], want - len(nulls))])
    if len(valid) >= want:
        return _upto(valid, x[valid], want)
    return np.concatenate([valid, nulls])


def _upto(idx: np.ndarray, xv: np.ndarray, k: int) -> np.ndarray:
    """``idx`` whose values ``xv`` are at or before the ``k``-th smallest (NaN largest)."""
    if len(idx) <= k:
        return idx
    t = np.partition(xv, k - 1)[k - 1]
    return idx if t != t else idx[xv <= t]


def top_order(keys: list[tuple[Vec, bool, bool]], want: int) -> np.ndarray:
    """The first ``want`` rows of ``sort_order(keys)``, sorting only the rows that can be
    among them (``_candidates`` on the first key) rather than all."""
    n = len(keys[0][0][0]) if keys else 0
    if want <= 0:
        return np.empty(0, np.int64)
    cand = _candidates(keys[0], want) if keys and n > 4 * want else None
    if cand is None:
        return sort_order(keys)[:want]
    cand = np.sort(cand)  # rows that tie on every key stay in row order, as in a full sort
    sub = [((np.asarray(v)[cand], np.asarray(ok)[cand]), d, nf) for (v, ok), d, nf in keys]
    return cand[sort_order(sub)[:want]]


@dataclasses.dataclass
class _Kept:
    """Rows kept so far: the output columns and the order keys, as (values, valid)."""

    outs: list[Vec]
    keys: list[Vec]

    def extend(self, other: _Kept) -> _Kept:
        if not self.n:  # no concatenation with an empty start: it would widen ints
            return other
        if not other.n:
            return self
        cat = [(np.concatenate([a[0], b[0]]), np.concatenate([a[1], b[1]]))
               for a, b in zip(self.outs + self.keys, other.outs + other.keys, strict=True)]
        return _Kept(cat[: len(self.outs)], cat[len(self.outs):])

    @staticmethod
    def concat(parts: list[_Kept]) -> _Kept:
        """``parts`` one after another, in one concatenation per column (the empty ones
        left out: concatenated with values they would widen ints)."""
        parts = [p for p in parts if p.n] or parts[:1]
        if len(parts) == 1:
            return parts[0]
        cols = [p.outs + p.keys for p in parts]
        cat = [(np.concatenate([c[i][0] for c in cols]), np.concatenate([c[i][1] for c in cols]))
               for i in range(len(cols[0]))]
        return _Kept(cat[: len(parts[0].outs)], cat[len(parts[0].outs):])

    def take(self, idx: np.ndarray) -> _Kept:
        return _Kept([(v[idx], ok[idx]) for v, ok in self.outs],
                     [(v[idx], ok[idx]) for v, ok in self.keys])

    @property
    def n(self) -> int:
        return len(self.outs[0][0]) if self.outs else len(self.keys[0][0]) if self.keys else 0


def _partition_rows(store: PageStore, q: ir.RowQuery, medium: Medium, device: Device,
                    backend: Backend, want: int | None) -> tuple[_Kept, QueryStats]:
    """The rows of one partition: all of them, or its first ``want`` in ``q``'s order."""
    t0 = time.perf_counter()
    predicate = q.predicate
    if want:
        key = (str(store.path), store.manifest.pages_meta_sha256, q, want)
        bound = _bounds.get(key, False)
        if bound is False:
            bound = topk_bound(store, q, want)
            _bounds.put(key, bound)
        predicate = bound if bound is not None else predicate
    matches, stats = row_matches(store, q.table, predicate, q.columns, medium, device, backend)
    order_cols = tuple(dict.fromkeys(c for e, _, _ in q.order for c in ir.columns_of(e)))
    kept = _Kept([(np.empty(0), np.empty(0, bool)) for _ in q.exprs],
                 [(np.empty(0), np.empty(0, bool)) for _ in q.order])
    t1 = time.perf_counter()
    if want is None:  # every matching row: the morsels side by side
        kept = _Kept.concat([kept, *_all_rows(matches, store, q)])
        stats.seconds = time.perf_counter() - t1
        stats.wall_seconds = time.perf_counter() - t0 - stats.compile_seconds
        return kept, stats
    parts: list[_Kept] = []
    count = 0
    for window, rows, vals in (matches if want != 0 else ()):
        if q.order and want is not None and len(rows) > want:
            # the order columns at every match, the rest only at the morsel's top ``want``
            for c in order_cols:
                if c not in vals:
                    vals[c] = matches.fetch(c, rows, window)
            env = column_env(store, {c: vals[c] for c in order_cols})
            keys = [(evaluate(e, env, len(rows)), d, nf) for e, d, nf in q.order]
            top = np.sort(top_order(keys, want))
            rows = rows[top]
            vals = {c: v[top] for c, v in vals.items()}
        elif want is not None and not q.order:
            rows = rows[: want - count]  # any rows will do: the first ones
            vals = {c: v[: len(rows)] for c, v in vals.items()}
        got = _morsel_rows(matches, store, q, window, rows, vals)
        if q.order:  # a top-k: what is kept stays small
            kept = kept.extend(got)
            if kept.n > want:
                kept = kept.take(top_order(_order_keys(kept, q), want))
            continue
        parts.append(got)  # concatenated once, after the last morsel
        count += got.n
        if count >= want:
            break
    if parts:
        kept = _Kept.concat([kept, *parts])
    stats.seconds = time.perf_counter() - t1
    stats.wall_seconds = time.perf_counter() - t0 - stats.compile_seconds
    return kept, stats


def _morsel_rows(matches: Matches, store: PageStore, q: ir.RowQuery, window, rows: np.ndarray,
                 vals: dict[str, np.ndarray]) -> _Kept:
    """One morsel's output columns and order keys at its matching ``rows``."""
    for c in q.columns:
        if c not in vals:
            vals[c] = matches.fetch(c, rows, window)
    env = column_env(store, {c: vals[c] for c in q.columns})
    n = len(rows)
    got = _Kept([evaluate(exact_value(e), env, n) for e in q.exprs],
                [evaluate(e, env, n) for e, _, _ in q.order])
    got.outs = [widen(v, ok, n) for v, ok in got.outs]
    got.keys = [widen(v, ok, n) for v, ok in got.keys]
    return got


def _all_rows(matches: Matches, store: PageStore, q: ir.RowQuery) -> list[_Kept]:
    """Every morsel's matching rows, in row order."""
    return map_morsels(matches, lambda window, rows, vals: _morsel_rows(
        matches, store, q, window, rows, vals))


def map_morsels(matches: Matches, fn) -> list:
    """``fn(window, rows, values)`` of every morsel with a matching row, in row order: the
    morsels side by side on the cores the process may use (NumPy and the reads release the
    GIL), one at a time where there is one."""
    windows = list(matches.windows())

    def one(window):
        got = matches.match(window)
        return None if got is None else fn(window, *got)

    threads = min(len(windows), cores())
    if threads <= 1:
        out = [one(w) for w in windows]
    else:
        with ThreadPoolExecutor(threads, thread_name_prefix="bamql-rows") as pool:
            out = list(pool.map(one, windows))
    return [x for x in out if x is not None]


def topk_bound(store: PageStore, q: ir.RowQuery, want: int) -> ir.Expr | None:
    """A filter that keeps every row of ``store`` that can be among the first ``want`` of
    ``ORDER BY col [DESC] ... LIMIT``, from the order column's zone maps: ``want`` pages each
    hold a value at least their maximum, so the ``want``-th largest page maximum bounds the
    ``want``-th largest value from below (``col >= bound``; ascending, ``<=`` the
    ``want``-th smallest minimum), and the pages whose range misses the bound are pruned
    as any filter's are. None where it does not hold: a WHERE (a page's extreme may fail
    it), NULLs first, an expression, or a column whose zone maps may leave out NaN."""
    if q.predicate is not None or not q.order:
        return None
    e, desc, nulls_first = q.order[0]
    if nulls_first or not isinstance(e, ir.Col):
        return None
    c = store.column(e.name)
    exact = c.kind in ("int", "timestamp") and not c.scale and store.pages.izmin is not None
    if not (exact or (c.kind == "float" and c.scale)):
        return None  # strings order by code and compare by text; a plain double may hold NaN
    ids = slice(c.first_page, c.first_page + c.n_pages)
    in_page = np.full(c.n_pages, c.rows_per_page)
    if c.n_pages:
        in_page[-1] = store.rows - (c.n_pages - 1) * c.rows_per_page
    ends = (store.pages.izmax if desc else store.pages.izmin) if exact else \
        (store.pages.zmax if desc else store.pages.zmin)
    vals = ends[ids][store.pages.nulls[ids] < in_page]  # pages holding a value
    if len(vals) < want:
        return None
    bound = np.partition(vals, len(vals) - want)[len(vals) - want] if desc else \
        np.partition(vals, want - 1)[want - 1]
    lit = ir.Lit(float(bound), "float") if c.kind == "float" else ir.Lit(int(bound), c.kind)
    return ir.Cmp(">=" if desc else "<=", e, lit)


def widen(v: np.ndarray, ok: np.ndarray, n: int) -> Vec:
    """A constant's or a column's values as an array of ``n`` (constants broadcast)."""
    v, ok = np.asarray(v), np.asarray(ok, bool)
    if v.shape != (n,):
        v = np.broadcast_to(v, (n,)).copy()
    return v, ok if ok.shape == (n,) else np.broadcast_to(ok, (n,)).copy()


def _order_keys(kept: _Kept, q: ir.RowQuery) -> list[tuple[Vec, bool, bool]]:
    return [(k, d, nf) for k, (_, d, nf) in zip(kept.keys, q.order, strict=True)]


@dataclasses.dataclass(frozen=True)
class RowsTask:
    """One partition's rows of a row query (``runner.PartitionTask``): all of them, or with
    a LIMIT its first ``offset + limit`` in the query's order (its top-k candidates). The
    partials keep the partitions' order: rows that tie on every order key come in
    partition order, then row order, wherever the partitions ran."""

    q: ir.RowQuery
    medium: Medium

    ordered: ClassVar[bool] = True

    @property
    def want(self) -> int | None:
        """How many rows of each partition can be in the answer (None: all)."""
        return None if self.q.limit is None else self.q.offset + self.q.limit

    def run(self, store: PageStore, device: Device, backend: Backend,
            engine) -> tuple[_Kept, QueryStats]:
        return _partition_rows(store, self.q, self.medium, device, backend, self.want)

    def merge(self, partials: list[_Kept]) -> _Kept:
        """Partials in partition order as one: concatenated, then cut to the first
        ``want`` in the query's order."""
        kept = partials[0]
        for p in partials[1:]:
            kept = kept.extend(p)
        want = self.want
        if want is not None and self.q.order and kept.n > want:
            kept = kept.take(top_order(_order_keys(kept, self.q), want))
        return kept

    def enough(self, partials: list[_Kept]) -> bool:
        """A LIMIT without ORDER BY takes the first rows: enough once they are there."""
        want = self.want
        return want is not None and not self.q.order and sum(p.n for p in partials) >= want


def arrow_rows(kept: _Kept, q: ir.RowQuery, table: PartitionedTable) -> pa.Table:
    """A row query's answer as an Arrow table from its rows (``RowsTask.merge`` of its
    partitions' partials): ordered, offset and limited."""
    if q.order:
        kept = kept.take(sort_order(_order_keys(kept, q)))
    stop = kept.n if q.limit is None else min(kept.n, q.offset + q.limit)
    if min(q.offset, stop) > 0 or stop < kept.n:
        kept = kept.take(np.arange(min(q.offset, stop), stop))
    arrays = [_column(v, ok, e, table) for (v, ok), e in zip(kept.outs, q.exprs, strict=True)]
    return pa.Table.from_arrays(arrays, names=unique_names(list(q.names)))


def _column(v: np.ndarray, ok: np.ndarray, e: ir.Expr, table: PartitionedTable) -> pa.Array:
    """One output column in Arrow: a dictionary column's codes as its strings."""
    if e.kind == "string" and isinstance(e, ir.Col):
        d = table.columns[e.name].dictionary or ()
        return pa.array([d[int(x)] if o else None for x, o in zip(v, ok, strict=True)],
                        pa.string())
    return arrow_column(v, ok, e, None, table.columns)


def explain_rows(q: ir.RowQuery, plan_text: str, on_gpu: bool) -> str:
    """EXPLAIN of a row query: its output and order, then the plan that reads its rows."""
    lines = [f"Rows of {q.table}: " + ", ".join(
        n if isinstance(e, ir.Col) and e.name == n else f"{show(e)} AS {n}"
        for n, e in zip(q.names, q.exprs, strict=True))]
    if q.order:
        lines.append("  order by: " + ", ".join(
            f"{show(e)}{' DESC' if d else ''}{' NULLS FIRST' if nf else ''}" for e, d, nf in q.order)
            + ("  (top-k per morsel and partition, the candidates merged)"
               if q.limit is not None else ""))
    if q.limit is not None or q.offset:
        lines.append(f"  limit {q.limit if q.limit is not None else 'all'} offset {q.offset}")
    lines += list(q.steps)
    if on_gpu:
        lines.append(ON_CPU)
    # the plan is an aggregate's of COUNT(c) per needed column: show it as the read it is
    plan = [ln.replace("Aggregate over", "Read", 1) for ln in plan_text.splitlines()
            if not ln.startswith(("  logical:", "  aggregates:"))]
    return "\n".join(lines + plan)
