"""Logical query -> physical plan: predicate stages, pruning by zone maps and page value sets,
access paths, EXPLAIN."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import singledispatch

import numpy as np

from bamql import config
from bamql.config import AccessPath, Role
from bamql.errors import OutOfRangeError
from bamql.fused import ir
from bamql.fused.domains import Domain, key_domain, n_slots
from bamql.fused.evaluate import predicate_mask
from bamql.fused.show import show, show_query
from bamql.intmath import I64_MAX, I64_MIN, int_interval
from bamql.physical.cost import (
    CACHED,
    FILE,
    WHOLLY,
    WHOLLY_CACHED,
    Medium,
    choose_path,
    gather_cost,
    stream_cost,
    use_compressed,
)
from bamql.physical.ranges import RowRanges
from bamql.storage.cluster import clustered_by
from bamql.storage.encoding import null_mask
from bamql.storage.iostats import format_bytes
from bamql.storage.residency import COPY
from bamql.storage.store import PageStore


@dataclass(frozen=True)
class Stage:
    """One conjunct of the predicate and the columns it reads first (``path`` each)."""

    predicate: ir.Expr
    columns: tuple[str, ...]
    paths: tuple[AccessPath, ...]
    selectivity: float  # estimated, of this conjunct alone


@dataclass(frozen=True)
class Access:
    """How one column is read: ``scan`` (candidate pages), ``gather`` or ``stream``."""

    column: str
    role: Role
    path: AccessPath
    est_pages: float
    n_pages: int
    shadow: bool = False  # a gather through the column's row-group copy (storage.groups)
    compressed: bool = False  # a scan or stream of the column's zstd copy (storage.streams)


@dataclass(frozen=True)
class PhysicalPlan:
    """What the executors run. ``ranges`` are the row ranges that zone maps and page value
    sets could not rule out, merged across gaps too short to be worth a read of their own."""

    query: ir.Query
    rows: int
    page_size: int
    stages: tuple[Stage, ...]
    dependent: tuple[str, ...]
    access: tuple[Access, ...]
    ranges: RowRanges
    est_selectivity: float
    key_domains: tuple[Domain, ...]
    medium: config.Medium
    #: share of what each column's path reads (its pages, or its compressed copy) that the
    #: OS page cache held when planned
    resident: tuple[tuple[str, float], ...] = ()

    @property
    def candidate_rows(self) -> int:
        return self.ranges.rows

    def access_of(self, column: str) -> Access:
        return next(a for a in self.access if a.column == column)


# -- zone maps ---------------------------------------------------------------------------
Pages = tuple[str, np.ndarray] | None


@singledispatch
def _page_mask(e: ir.Expr, store: PageStore) -> Pages:
    """(column, pages that may match) for a single-column conjunct over constants (one
    rule per node class); None where the zone maps cannot tell."""
    return None


def _combined(e: ir.And | ir.Or, store: PageStore, combine) -> Pages:
    parts = [_page_mask(a, store) for a in e.args]
    if any(p is None for p in parts) or len({p[0] for p in parts}) != 1:
        return None
    return parts[0][0], combine.reduce([p[1] for p in parts])


@_page_mask.register
def _(e: ir.And, store: PageStore) -> Pages:
    return _combined(e, store, np.logical_and)


@_page_mask.register
def _(e: ir.Or, store: PageStore) -> Pages:
    return _combined(e, store, np.logical_or)


def _zones(store: PageStore, col: str):
    """Column ``col``'s meta and the slice of its pages in the store's zone maps."""
    c = store.column(col)
    return c, slice(c.first_page, c.first_page + c.n_pages)


def _integer_zones(c) -> bool:
    """Whether column ``c`` has integer zone maps (ints, timestamps, dictionary codes):
    exact int64 ones, never floats, which round from 2**53 on."""
    return c.np_dtype.kind == "i" and c.kind != "float"


@_page_mask.register
def _(e: ir.Cmp, store: PageStore) -> Pages:
    if not (isinstance(e.left, ir.Col) and isinstance(e.right, ir.Lit)):
        return None
    col, v = e.left.name, e.right.value
    if v is None:
        return col, np.zeros(store.column(col).n_pages, bool)
    if isinstance(v, float) and not np.isfinite(v):
        return None  # a page's max is +inf for a NaN too, which is above +inf: no pruning
    c, ids = _zones(store, col)
    if _integer_zones(c):
        zones = _int_zones(store, c, ids)
        if zones is None:
            return None
        m = _int_mask(e, *zones)
        return col, _with_value_sets(m, store, col, [v]) if e.op == "=" else m
    lo, hi = store.pages.zmin[ids], store.pages.zmax[ids]
    if e.op == "=":
        return col, _with_value_sets((lo <= v) & (v <= hi), store, col, [v])
    return col, {
        "<": lo < v, "<=": lo <= v, ">": hi > v, ">=": hi >= v,
        "<>": ~((lo == v) & (hi == v)),
    }[e.op]


@_page_mask.register
def _(e: ir.InList, store: PageStore) -> Pages:
    if not isinstance(e.arg, ir.Col) or e.negated:
        return None
    col = e.arg.name
    c, ids = _zones(store, col)
    values = [x.value for x in e.values]
    if _integer_zones(c):
        zones = _int_zones(store, c, ids)
        if zones is None:
            return None
        return col, _with_value_sets(_int_mask(e, *zones), store, col, values)
    lo, hi = store.pages.zmin[ids], store.pages.zmax[ids]
    vals = np.array([float(x) for x in values if x is not None], np.float64)
    if np.isnan(vals).any():
        return None  # a page holding NaN has no bound that NaN lies within
    return col, _with_value_sets(_any_within(np.unique(vals), lo, hi), store, col, values)


@_page_mask.register
def _(e: ir.IsNull, store: PageStore) -> Pages:
    if not isinstance(e.arg, ir.Col):
        return None
    col = e.arg.name
    c, ids = _zones(store, col)
    nulls = store.pages.nulls[ids]
    in_page = np.full(c.n_pages, c.rows_per_page)
    if c.n_pages:  # the last page holds the rest (an empty table has no page)
        in_page[-1] = store.rows - (c.n_pages - 1) * c.rows_per_page
    return col, (nulls < in_page) if e.negated else (nulls > 0)


def _int_zones(store: PageStore, c, ids: slice) -> tuple[np.ndarray, np.ndarray] | None:
    """Each page's min and max of integer column ``c`` as int64 (min > max: no value), or
    None where they are not known exactly: a store from before int64 zone maps whose float64
    ones pass 2**53, where they may have rounded."""
    if store.pages.izmin is not None:
        return store.pages.izmin[ids], store.pages.izmax[ids]
    lo, hi = store.pages.zmin[ids], store.pages.zmax[ids]
    some = lo <= hi  # a page of NULLs only has min +inf, max -inf
    if np.any(np.abs(lo[some]) > 2.0**53) or np.any(np.abs(hi[some]) > 2.0**53):
        return None
    ilo, ihi = np.full(len(lo), I64_MAX, np.int64), np.full(len(lo), I64_MIN, np.int64)
    ilo[some], ihi[some] = lo[some], hi[some]
    return ilo, ihi


def _int_mask(e: ir.Cmp | ir.InList, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Pages with int64 zone maps ``lo``/``hi`` that may hold a row where ``e`` (a column
    against constants) is TRUE. Each constant becomes the integers it admits (``intmath``,
    exact for ints and decimals, as the kernels compare for doubles), compared in int64."""
    m = np.zeros(len(lo), bool)
    if isinstance(e, ir.InList):
        ints = [x.value for x in e.values if type(x.value) is int]
        spans = [int_interval("=", x.value) for x in e.values
                 if x.value is not None and type(x.value) is not int]
        if ints:  # each page at once against the sorted list, not once per constant
            m |= _any_within(np.unique(np.array(ints, np.int64)), lo, hi)
    elif e.op == "<>":  # all but the integers equal to the constant
        start, stop = int_interval("=", e.right.value)
        spans = [(I64_MIN, start), (stop, I64_MAX + 1)]
    else:
        spans = [int_interval(e.op, e.right.value)]
    for start, stop in spans:
        start, last = max(start, I64_MIN), min(stop - 1, I64_MAX)  # [start, last] in int64
        if start <= last:
            m |= (hi >= start) & (lo <= last) & (lo <= hi)
    return m


def _any_within(values: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Pages whose zone ``[lo, hi]`` holds one of the sorted ``values`` (pages with no value,
    ``lo > hi``, hold none)."""
    if not len(values):
        return np.zeros(len(lo), bool)
    i = np.minimum(np.searchsorted(values, lo, side="left"), len(values) - 1)
    return (values[i] >= lo) & (values[i] <= hi) & (lo <= hi)


def _with_value_sets(m: np.ndarray, store: PageStore, col: str, values) -> np.ndarray:
    """``m`` less the pages whose value set (storage.valuesets) holds none of ``values``."""
    vs = store.value_sets.get(col)
    if vs is None:
        return m
    return m & vs.pages_holding(values)


def prune(conj: tuple[ir.Expr, ...], store: PageStore, max_gap: int = 0) -> RowRanges:
    """Row ranges that zone maps and value sets cannot rule out for the AND of ``conj``,
    joined across gaps of at most ``max_gap`` rows."""
    rows = store.rows
    masks = [m for m in (_page_mask(e, store) for e in conj) if m is not None]
    if not masks:
        return RowRanges.whole(rows)
    rpps = [store.column(c).rows_per_page for c, _ in masks]
    block = min(rpps)
    if any(r % block for r in rpps):
        # packed columns' pages (storage.packing) need not nest: cut the rows at every
        # page edge of every column, and keep a piece where each column's page is kept
        edges = np.unique(np.concatenate([np.arange(0, rows, r) for r in rpps] + [[rows]]))
        starts = edges[:-1]
        keep = np.ones(len(starts), bool)
        for (_, m), r in zip(masks, rpps, strict=True):
            keep &= m[starts // r]
        return RowRanges(starts[keep], edges[1:][keep]).merged(max_gap)
    n_blocks = -(-rows // block)
    keep = np.ones(n_blocks, bool)
    for (_, m), r in zip(masks, rpps, strict=True):
        keep &= np.repeat(m, r // block)[:n_blocks]
    return RowRanges.from_blocks(keep, block, rows).merged(max_gap)


def gap_rows(conj: tuple[ir.Expr, ...], store: PageStore, medium: Medium) -> int:
    """The longest gap between candidate ranges worth reading through rather than skipping:
    the bytes a ``medium`` moves in the time one more read costs (a disk seek, a page-cache
    call), over the bytes per row of the predicate columns (0 when skipping is free)."""
    cols = {n for e in conj for n in ir.columns_of(e)}
    per_row = sum(store.column(n).value_bits for n in cols) / 8  # packed columns: bits / 8
    if not per_row:
        return 0
    return int(2 * medium.seq_bytes_per_s / medium.random_reads_per_s / per_row)


# -- selectivity -------------------------------------------------------------------------
def sample_env(store: PageStore, columns) -> tuple[dict, int]:
    """The store's row sample as an evaluation environment (values, valid) per column."""
    env, n = {}, 0
    for name in columns:
        c = store.column(name)
        v = store.sample[name]
        # a scaled float's sample is decoded (NULL as NaN); an unscaled one's is as stored
        ok = ~np.isnan(v) if v.dtype.kind == "f" and c.scale else ~null_mask(v)
        env[name] = (v, ok)
        n = len(v)
    return env, n


def estimate(e: ir.Expr, store: PageStore) -> float:
    """Estimated share of rows where ``e`` is TRUE: exact histograms for one small-domain
    column, the row-aligned sample otherwise (never quite 0: the sample is finite)."""
    try:
        return _estimate(e, store)
    except OutOfRangeError:  # a sample row overflows: the query decides whether that is an error
        return 1.0


def _estimate(e: ir.Expr, store: PageStore) -> float:
    cols = ir.columns_of(e)
    if len(cols) == 1:
        c = store.column(cols[0])
        if c.histogram and c.nulls == 0:
            keys = np.array([int(k) for k in c.histogram], dtype=np.int64)
            counts = np.array(list(c.histogram.values()), dtype=np.float64)
            env = {cols[0]: (keys, np.ones(len(keys), bool))}
            return float(counts[predicate_mask(e, env, len(keys))].sum() / max(store.rows, 1))
    if not cols:
        return 1.0
    env, n = sample_env(store, cols)
    if n == 0:
        return 1.0
    hits = predicate_mask(e, env, n).sum()
    return float(max(hits, 0.5) / n)


# -- planning ----------------------------------------------------------------------------
#: Media read from disk, where row groups pay (elsewhere every page read costs the same).
DISK_MEDIA = (config.Medium.FILE, config.Medium.QUEUE, config.Medium.NVCOMP)


def _through_groups(access: list[Access], store: PageStore, sel: float, medium: Medium) -> list[Access]:
    """Dependent columns of one row group gathered through its copy when that is cheaper
    than their own best paths: the first member's page of a block costs a disk read, the
    others' come from the same OS page (storage.groups). Every touched block's pages of the
    query's members cross the disk: where most blocks hold a match, the group reads those
    columns' uncompressed pages, and their compressed copies stream fewer bytes. (The
    block's other members' pages cross it too; they are not counted, which leans toward the
    group where its saved requests matter.)"""
    out = list(access)
    for g in store.manifest.groups:
        idx = [i for i, a in enumerate(out) if a.role == Role.DEPENDENT and a.column in g.members]
        if len(idx) < 2:
            continue
        mine = 0.0
        for i in idx:
            c = store.column(out[i].column)
            mine += min(gather_cost(c.n_pages, c.rows_per_page, sel, store.page_size, medium)[1],
                        stream_cost(c.n_pages, store.page_size, medium,
                                    store.stream_bytes.get(c.name))[1])
        pages, first = gather_cost(g.n_pages, g.rows_per_page, sel, len(idx) * store.page_size,
                                   medium)
        others = 0.0 if medium.overlaps_cached else (len(idx) - 1) * pages / CACHED.random_reads_per_s
        if first + others < mine:
            for i in idx:
                out[i] = replace(out[i], path=AccessPath.GATHER, est_pages=pages, shadow=True,
                                 compressed=False)
    return out


def plan_query(q: ir.Query, store: PageStore, medium: Medium = FILE,
               domains: tuple[tuple[int, int], ...] | None = None,
               resident: Mapping[str, float] | None = None) -> PhysicalPlan:
    """Choose stage order, pruning and access paths for ``q`` over ``store``.

    ``domains`` overrides the group-key domains (a partition plans with its whole table's).
    ``resident`` is the share of each column's pages, row-group copy and compressed copy
    that the OS page cache holds (``storage.residency``): where it holds nearly all that
    another medium's plan reads, some media take that plan (``physical.cost.WHOLLY_CACHED``).
    """
    resident = dict(resident or {})
    if resident and medium.name in WHOLLY_CACHED:
        alt = plan_query(q, store, WHOLLY_CACHED[medium.name], domains, resident)
        if all(resident.get(read_key(a, store), 0.0) >= WHOLLY for a in alt.access):
            return alt
    conj = ir.conjuncts(q.predicate)
    sels = {c: estimate(c, store) for c in conj}
    ps = store.page_size
    # Greedy order: most rows filtered per byte of new column read, first.
    order, have, todo = [], set(), list(conj)
    while todo:
        def rank(c):
            new = [x for x in ir.columns_of(c) if x not in have]
            cost = sum(store.column(x).value_bits for x in new) / 8 or 0.01
            return (1.0 - sels[c]) / cost

        best = max(todo, key=rank)
        todo.remove(best)
        order.append(best)
        have.update(ir.columns_of(best))
    ranges = prune(conj, store, gap_rows(conj, store, medium))
    cand = ranges.rows / max(store.rows, 1)
    # rows alive before each stage, as a share of all rows: pruning removes no matching row,
    # so it is the product of the stages' selectivities so far, capped by the candidates
    stages, access, fetched, running = [], [], set(), 1.0
    for i, c in enumerate(order):
        new = tuple(x for x in ir.columns_of(c) if x not in fetched)
        paths = []
        for name in new:
            col = store.column(name)
            zb = store.stream_bytes.get(name)
            if i == 0:
                path, pages = AccessPath.SCAN, col.n_pages * cand
            else:
                path, pages = choose_path(col.n_pages, col.rows_per_page, min(running, cand), ps,
                                          medium, zb)
            paths.append(path)
            access.append(Access(name, Role.PREDICATE, path, pages, col.n_pages,
                                 compressed=path != AccessPath.GATHER and use_compressed(
                                     col.n_pages, ps, medium, zb)))
        fetched.update(new)
        stages.append(Stage(c, new, tuple(paths), sels[c]))
        running *= sels[c]
    est = min(running, cand) if conj else 1.0
    dep_cols: dict[str, None] = {}
    for e in (*q.keys, *q.aggs):
        for name in ir.columns_of(e):
            if name not in fetched:
                dep_cols.setdefault(name)
    for name in dep_cols:
        col = store.column(name)
        zb = store.stream_bytes.get(name)
        if not conj:
            path, pages = AccessPath.STREAM, float(col.n_pages)
        else:
            path, pages = choose_path(col.n_pages, col.rows_per_page, est, ps, medium, zb)
        access.append(Access(name, Role.DEPENDENT, path, pages, col.n_pages,
                             compressed=path != AccessPath.GATHER and use_compressed(col.n_pages, ps,
                                                                            medium, zb)))
    if conj and store.shadow and medium.name in DISK_MEDIA:
        access = _through_groups(access, store, est, medium)
    if domains is None:
        domains = tuple(key_domain(k, store.columns) for k in q.keys)
    return PhysicalPlan(q, store.rows, ps, tuple(stages), tuple(dep_cols), tuple(access), ranges,
                        est, domains, medium.name, tuple(sorted(
                            (a.column, resident[k]) for a in access
                            if (k := read_key(a, store)) in resident)))


def read_key(a: Access, store: PageStore) -> str:
    """The key of what ``a`` reads in ``plan_query``'s ``resident``: the column's compressed
    copy where it streams that, its row group's copy where it gathers through that, else
    its pages."""
    if a.compressed:
        return a.column + COPY
    if a.shadow:
        return next(g.file for g in store.manifest.groups if a.column in g.members)
    return a.column


def _cache_note(p: PhysicalPlan) -> str:
    """``, OS page cache: N% of the pages read`` where the plan found any there (EXPLAIN):
    the share of what each column's access path reads, weighted by the column's pages."""
    if not p.resident or not any(f for _, f in p.resident):
        return ""
    whole = {a.column: a.n_pages for a in p.access}
    n = sum(whole[c] for c, _ in p.resident)
    share = sum(whole[c] * f for c, f in p.resident) / max(n, 1)
    return f", OS page cache: {share:.0%} of the pages read"


def explain_text(p: PhysicalPlan, store: PageStore) -> str:
    """EXPLAIN: stages, zone-map pruning, access paths and estimated bytes vs whole columns."""
    q = p.query
    lines = [f"Aggregate over {q.table} ({p.rows:,} rows, {p.page_size} B pages, medium: {p.medium}"
             + _cache_note(p) + clustered_by(store.manifest.cluster_by, store.manifest.cluster_order)
             + ")", f"  logical: {show_query(q)}"]
    if q.keys:
        lines.append("  group by: " + ", ".join(show(k) for k in q.keys)
                     + f"  ({n_slots(p.key_domains):,} slots)")
    lines.append("  aggregates: " + ", ".join(show(a) for a in q.aggs))
    if p.stages:
        lines.append(f"  zone maps and value sets keep {p.candidate_rows:,} of {p.rows:,} rows "
                     f"({len(p.ranges):,} range(s))")
        for i, s in enumerate(p.stages):
            cols = ", ".join(f"{c} [{path}]" for c, path in zip(s.columns, s.paths, strict=True))
            lines.append(f"  stage {i + 1}: filter {show(s.predicate)}   sel~{s.selectivity:.4%}"
                         + (f"   reads {cols}" if cols else ""))
        lines.append(f"  estimated selectivity: {p.est_selectivity:.4%}")
    ours = whole = 0.0
    lines.append("  columns:")
    for a in p.access:
        c = store.column(a.column)
        est_b, whole_b = a.est_pages * p.page_size, c.n_pages * p.page_size
        if a.compressed:  # the copy's bytes, in proportion to the pages read
            est_b *= store.stream_bytes[a.column] / max(whole_b, 1)
        ours += est_b
        whole += whole_b
        lines.append(f"    {a.column:<24} {a.role:<9} {a.path:<6} est {format_bytes(est_b):>12} "
                     f"of {format_bytes(whole_b):>12} whole  {c.dtype}"
                     + (f"/1e{c.scale}" if c.scale else "") + ("  (row group)" if a.shadow else "")
                     + ("  (zstd copy)" if a.compressed else ""))
    lines.append(f"  estimated bytes: {format_bytes(ours)} (whole-column reader: {format_bytes(whole)}, "
                 f"{whole / ours if ours else float('inf'):.1f}x more)")
    return "\n".join(lines)
