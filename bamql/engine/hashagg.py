"""Hash aggregation: the step beside the kernels for a GROUP BY they do not take (an
expression, a float or timestamp key, a condition, a key of a large domain:
``planner.grouping``).

Per partition it reads as the row step does (``engine.rows``: the filter stages on the
predicate columns, the other columns only at the matching rows), evaluates the group keys
and the aggregates' arguments per morsel, and aggregates each morsel by its distinct keys
(a sort of the keys' canonical bits: NULL one group, every NaN one group, -0.0 and 0.0 one
group, as in DuckDB). The morsels' partial aggregates merge as the kernels' accumulators
do: counts and sums add (an integer sum in two 32-bit halves, exact beyond int64), MIN and
MAX in DuckDB's float order (NaN above +inf), variances by the parallel (Chan) formula.
The finished groups go through the aggregate path's select list, HAVING, ORDER BY and
LIMIT (``engine.result.assemble``). On the CPU engine the kernel groups each chunk of rows
into a hash table of its own (:func:`cpu_kernel_partial`); on a GPU the fused kernel groups
into a hash table of its own (``gpu.hashgroup``, :func:`gpu_kernel_partial`); past the
largest table, the NumPy step above (:func:`numpy_partial`). Each partition is a
:class:`HashTask` that the table's runner runs, in this process or on the Dask worker that
holds the partition; the partitions' partials merge by key on the worker and the client.
"""

from __future__ import annotations

import threading
import time
import weakref
from dataclasses import dataclass
from enum import Enum
from typing import ClassVar

import numpy as np

from bamql.config import Backend, Device, Medium
from bamql.engine.accumulate import Grouped, int_avgs, int_sums, order_keys
from bamql.engine.rows import morsel_envs, row_matches, widen
from bamql.engine.runner import Declined
from bamql.engine.stats import QueryStats
from bamql.kernels.codegen import (
    FMIX_M1,
    FMIX_M2,
    FMIX_SHIFT,
    HASH_SEED,
    N_ERRORS,
    NAN_BITS,
    check_errors,
)
from bamql.lazyjit import njit
from bamql.lru import LRU
from bamql.planner import ir
from bamql.planner.domains import (
    LARGEST_TABLE,
    TABLE_GROWTH,
    Domain,
    HashSlots,
    TableFull,
    first_capacity,
    key_domain,
    n_slots,
)
from bamql.planner.evaluate import evaluate
from bamql.planner.show import show
from bamql.planner.translate import MAX_GROUPS
from bamql.storage.store import PageStore

Vec = tuple[np.ndarray, np.ndarray]  # (values, valid)

#: EXPLAIN's line for the step on a GPU session
ON_GPU = ("hash aggregate: on the GPU, in the fused kernel's hash table of groups (where the "
          "kernel declines the query, more groups than its largest table or a key it cannot "
          "compute, the NumPy step on the CPU)")

#: Merge the morsels' partials once those after the first (the merged ones) hold more groups
#: than it and this many, or are this many (an integer sum's low halves, each below 2**32,
#: then stay far from int64's limit)
MERGE_GROUPS, MERGE_PARTS = 1 << 22, 1 << 10

_I_MAX, _I_MIN = np.iinfo(np.int64).max, np.iinfo(np.int64).min
_LOW32 = np.int64(0xFFFF_FFFF)


@dataclass
class Partial:
    """Partial aggregates of disjoint rows: ``keys`` (groups, 2 per key: valid, canonical
    bits) and per aggregate its state arrays by name (``n``: values counted; ``hi``/``lo``:
    an integer sum's halves; ``s``: a float sum; ``m``: MIN/MAX (floats as ``order_keys``);
    ``shift``/``off``/``m2``: a variance's shift, mean less shift and squared deviations)."""

    keys: np.ndarray
    aggs: list[dict[str, np.ndarray]]

    @property
    def n(self) -> int:
        return len(self.keys)


def canonical_keys(keys: list[Vec], kinds: tuple[str, ...]) -> np.ndarray:
    """The group keys of ``n`` rows as an (n, 2 * keys) int64 matrix of (valid, bits): a
    NULL's bits are 0, every NaN the one quiet NaN, -0.0 is 0.0; equal rows, one group."""
    n = len(keys[0][0]) if keys else 0
    out = np.zeros((n, 2 * len(keys)), np.int64)
    for i, ((v, ok), kind) in enumerate(zip(keys, kinds, strict=True)):
        ok = np.asarray(ok, bool)
        if kind == "float":
            x = np.asarray(v, np.float64)
            x = np.where(ok & (x != 0), x, 0.0)  # NULL and -0.0 as 0.0
            bits = np.where(np.isnan(x), NAN_BITS, x.view(np.int64))
        else:
            bits = np.where(ok, np.asarray(v).astype(np.int64), 0)
        out[:, 2 * i] = ok
        out[:, 2 * i + 1] = bits
    return out


@njit(nogil=True, cache=True)
def _group_ids(mat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's group (groups numbered by first appearance) and each group's first row:
    open addressing on the rows' bits, linear probing, a table of at least twice the rows."""
    n, w = mat.shape
    cap = 16
    while cap < 2 * n:
        cap *= 2
    table = np.full(cap, -1, np.int64)
    gid = np.empty(n, np.int64)
    firsts = np.empty(n, np.int64)
    ng = 0
    m1, m2, r = np.uint64(FMIX_M1), np.uint64(FMIX_M2), np.uint64(FMIX_SHIFT)
    for i in range(n):
        h = np.uint64(HASH_SEED)
        for k in range(w):  # the kernels' hash (``codegen.hash_lines``), as NumPy steps
            h = h ^ np.uint64(mat[i, k])
            h = (h ^ (h >> r)) * m1
            h = (h ^ (h >> r)) * m2
            h = h ^ (h >> r)
        s = np.int64(h & np.uint64(cap - 1))
        while True:
            g = table[s]
            if g < 0:
                table[s] = ng
                firsts[ng] = i
                gid[i] = ng
                ng += 1
                break
            j = firsts[g]
            same = True
            for k in range(w):
                if mat[i, k] != mat[j, k]:
                    same = False
                    break
            if same:
                gid[i] = g
                break
            s = (s + 1) & (cap - 1)
    return gid, firsts[:ng]


@njit(nogil=True, cache=True)
def _order_by_group(gid: np.ndarray, ng: int) -> tuple[np.ndarray, np.ndarray]:
    """The rows ordered by group, in row order within one (a counting sort), and where
    each group starts in that order."""
    starts = np.zeros(ng + 1, np.int64)
    for g in gid:
        starts[g + 1] += 1
    for g in range(ng):
        starts[g + 1] += starts[g]
    pos = starts[:ng].copy()
    order = np.empty(len(gid), np.int64)
    for i in range(len(gid)):
        order[pos[gid[i]]] = i
        pos[gid[i]] += 1
    return order, starts[:ng]


def _group(mat: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(distinct rows of ``mat``, the row order that puts each group's rows together, in
    row order within a group, and where each group starts in that order); groups are in
    the order of their first row. Hashed, not sorted: linear in the rows."""
    mat = np.ascontiguousarray(mat, np.int64)
    gid, firsts = _group_ids(mat)
    order, starts = _order_by_group(gid, len(firsts))
    return mat[firsts], order, starts


def aggregate_morsel(keys: list[Vec], kinds: tuple[str, ...], args: list[Vec | None],
                     aggs: tuple[ir.Agg, ...]) -> Partial:
    """The partial aggregates of one morsel: ``args[j]`` is aggregate ``j``'s argument
    (None: COUNT(*)) with its FILTER already in its valid mask."""
    mat = canonical_keys(keys, kinds)
    uniq, order, starts = _group(mat)
    gid = np.repeat(np.arange(len(starts)), np.diff(np.append(starts, len(order))))
    states = []
    for a, arg in zip(aggs, args, strict=True):
        v, ok = arg
        v, ok = v[order], ok[order]
        st = {"n": _reduce(np.add, ok.astype(np.int64), starts)}
        if a.func in ("sum", "avg") and a.arg is not None and a.arg.kind == "int":
            x = np.where(ok, v.astype(np.int64), 0)
            lo = _reduce(np.add, x & _LOW32, starts)  # a morsel's rows: < 2**31 of them
            st["hi"] = _reduce(np.add, x >> 32, starts) + (lo >> 32)
            st["lo"] = lo & _LOW32
        elif a.func in ("sum", "avg"):
            st["s"] = _reduce(np.add, np.where(ok, v.astype(np.float64), 0.0), starts)
        elif a.func in ("min", "max"):
            st["m"] = _extreme(a, v, ok, starts)
        elif a.func in ir.VARIANCES:
            st.update(_variance_state(v.astype(np.float64), ok, gid, starts, st["n"]))
        states.append(st)
    return Partial(uniq, states)


def _extreme(a: ir.Agg, v: np.ndarray, ok: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """MIN or MAX per group as int64 (floats as ``order_keys``: NaN above +inf)."""
    if a.arg.kind == "float":
        x = np.where(np.isnan(v), np.nan, v.astype(np.float64))  # one NaN: the positive one
        k = order_keys(x.copy())
    else:
        k = np.asarray(v).astype(np.int64)
    if a.func == "min":
        return _reduce(np.minimum, np.where(ok, k, _I_MAX), starts)
    return _reduce(np.maximum, np.where(ok, k, _I_MIN), starts)


def _reduce(ufunc: np.ufunc, x: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """``ufunc`` over each run of ``x`` that begins at ``starts`` (no runs: empty)."""
    return ufunc.reduceat(x, starts) if len(starts) else x[:0]


def _variance_state(x: np.ndarray, ok: np.ndarray, gid: np.ndarray, starts: np.ndarray,
                    n: np.ndarray) -> dict[str, np.ndarray]:
    """A morsel's variance state per group, in two passes over its values: the shift is a
    value of the group (its first), the mean less the shift, then the squared deviations
    from the mean; a finite spread whose squares overflow is inf, as in DuckDB."""
    first = _reduce(np.minimum, np.where(ok, np.arange(len(x)), len(x)), starts)
    has = n > 0
    shift = np.where(has, np.append(x, 0.0)[first], 0.0)
    with np.errstate(all="ignore"):
        d = np.where(ok, x - shift[gid], 0.0)
        off = np.where(has, _reduce(np.add, d, starts) / np.maximum(n, 1), 0.0)
        r = np.where(ok, d - off[gid], 0.0)
        m2 = _reduce(np.add, r * r, starts)
    return {"shift": shift, "off": off, "m2": np.where(has, m2, 0.0)}


def merge_partials(parts: list[Partial], aggs: tuple[ir.Agg, ...],
                   regroup: bool = False) -> Partial:
    """Partials of disjoint rows as one: each group's states combined (one partial as it
    is, unless ``regroup``: a partial that may hold one key in several groups)."""
    if len(parts) == 1 and not regroup:
        return parts[0]
    uniq, order, starts = _group(np.concatenate([p.keys for p in parts]))
    g = len(starts)
    gid = np.repeat(np.arange(g), np.diff(np.append(starts, len(order))))
    states = []
    for j, a in enumerate(aggs):
        cat = {k: np.concatenate([p.aggs[j][k] for p in parts])[order] for k in parts[0].aggs[j]}
        st = {"n": np.add.reduceat(cat["n"], starts)}
        if "hi" in cat:  # carry the low halves' overflow past 32 bits into the high ones
            lo = np.add.reduceat(cat["lo"], starts)
            st["hi"] = np.add.reduceat(cat["hi"], starts) + (lo >> 32)
            st["lo"] = lo & _LOW32
        elif "s" in cat:
            st["s"] = np.add.reduceat(cat["s"], starts)
        elif "m" in cat:
            red = np.minimum if a.func == "min" else np.maximum
            st["m"] = red.reduceat(cat["m"], starts)
        elif "m2" in cat:
            st.update(_merge_variance(cat, gid, starts, st["n"]))
        states.append(st)
    return Partial(uniq, states)


def _merge_variance(cat: dict[str, np.ndarray], gid: np.ndarray, starts: np.ndarray,
                    n: np.ndarray) -> dict[str, np.ndarray]:
    """Variance states of one group's parts as one (Chan et al.'s formula for any number of
    parts): the means' differences taken as differences of shifts plus differences of
    offsets, so that a mean rounded to a large value's precision loses nothing."""
    cnt = cat["n"].astype(np.float64)
    has = cat["n"] > 0
    pos = np.where(has, np.arange(len(cnt)), len(cnt))
    first = np.minimum.reduceat(pos, starts)
    shift = np.where(n > 0, np.append(cat["shift"], 0.0)[first], 0.0)
    with np.errstate(all="ignore"):
        delta = np.where(has, (cat["shift"] - shift[gid]) + cat["off"], 0.0)
        off = np.where(n > 0, np.add.reduceat(cnt * delta, starts) / np.maximum(n, 1), 0.0)
        r = np.where(has, delta - off[gid], 0.0)
        m2 = np.add.reduceat(np.where(has, cat["m2"] + cnt * r * r, 0.0), starts)
    return {"shift": shift, "off": off, "m2": m2}


def partial_of_slots(acc: dict[str, np.ndarray], q: ir.Query, at: np.ndarray,
                     keys: np.ndarray) -> Partial:
    """The groups at slots ``at`` (their keys ``keys``) of a kernel's hash table of groups
    (reduced accumulators, MIN/MAX of floats as floats) as a partial; raises what the kernel
    flagged."""
    check_errors(acc["E"].reshape(-1, N_ERRORS).sum(axis=0))
    states = []
    na = len(q.aggs)
    for j, a in enumerate(q.aggs):
        cnt = acc["C"][at, j]
        st = {"n": cnt}
        f = "F" if a.arg is not None and a.arg.kind == "float" else "I"
        if a.func in ("sum", "avg") and f == "I":
            sums = int_sums(acc["SI"], at, j, cnt)
            st["hi"] = np.array([int(x) >> 32 for x in sums], np.int64)
            st["lo"] = np.array([int(x) & 0xFFFF_FFFF for x in sums], np.int64)
        elif a.func in ("sum", "avg"):
            st["s"] = np.where(cnt > 0, acc["SF"][at, j], 0.0)
        elif a.func in ("min", "max"):
            m = acc[("MN" if a.func == "min" else "MX") + f][at, j]
            k = order_keys(np.where(np.isnan(m), np.nan, m).astype(np.float64)) if f == "F" \
                else m.astype(np.int64)
            st["m"] = np.where(cnt > 0, k, _I_MAX if a.func == "min" else _I_MIN)
        elif a.func in ir.VARIANCES:
            vm = acc["VM"]
            st.update(shift=vm[at, j], off=vm[at, na + j], m2=vm[at, 2 * na + j])
        states.append(st)
    return Partial(keys, states)


def finish_partial(p: Partial, q: ir.Query) -> Grouped:
    """A merged partial -> the finished groups ``engine.result.assemble`` takes."""
    keys = []
    for i, k in enumerate(q.keys):
        ok, bits = p.keys[:, 2 * i].astype(bool), np.ascontiguousarray(p.keys[:, 2 * i + 1])
        v = bits.view(np.float64) if k.kind == "float" else bits.astype(bool) \
            if k.kind == "bool" else bits
        keys.append((v, ok))
    out = []
    for a, st in zip(q.aggs, p.aggs, strict=True):
        cnt = st["n"]
        has = cnt > 0
        if a.func == "count":
            out.append((cnt, np.ones(p.n, bool)))
        elif "hi" in st:
            sums = st["hi"].astype(object) * (1 << 32) + st["lo"].astype(object)
            out.append((sums if a.func == "sum" else int_avgs(sums, cnt), has))
        elif a.func == "sum":
            out.append((st["s"], has))
        elif a.func == "avg":
            with np.errstate(all="ignore"):
                out.append((np.where(has, st["s"] / np.maximum(cnt, 1), 0.0), has))
        elif a.func in ("min", "max"):
            m = st["m"].copy()
            out.append((order_keys(m) if a.arg.kind == "float" else m, has))  # ints -> floats
        else:
            out.append(_variance(st["m2"], cnt, a.func))
    return Grouped(keys, out, p.n)


def _variance(m2: np.ndarray, cnt: np.ndarray, func: str) -> Vec:
    """VAR/STDDEV from the squared deviations: NULL below two values (one for the
    population ones), 0 for one value of the population ones, as in DuckDB."""
    pop = func.endswith("pop")
    with np.errstate(all="ignore"):
        m2 = np.where(m2 < 0, 0.0, m2)
        v = m2 / np.maximum(cnt - (0 if pop else 1), 1)
        if pop:
            v = np.where(cnt == 1, 0.0, v)
        if func.startswith("stddev"):
            v = np.sqrt(v)
    return v, cnt > (0 if pop else 1)


def hashed_columns(q: ir.Query) -> tuple[str, ...]:
    """The columns the keys and the aggregates read, in first-use order."""
    return tuple(dict.fromkeys(c for e in (*q.keys, *q.aggs) for c in ir.columns_of(e)))


def no_groups(q: ir.Query) -> Partial:
    """The partial of no row: no group."""
    none = (np.empty(0), np.empty(0, bool))
    return aggregate_morsel([none] * len(q.keys), tuple(k.kind for k in q.keys),
                            [none] * len(q.aggs), q.aggs)


def numpy_partial(store: PageStore, q: ir.Query, medium: Medium, device: Device,
                  backend: Backend) -> tuple[Partial, QueryStats]:
    """One partition of ``q`` (a hashed GROUP BY) through the NumPy step: its partial (one
    group per key) and the statistics of what it read."""
    t1 = time.perf_counter()
    cols = hashed_columns(q)
    kinds = tuple(k.kind for k in q.keys)
    parts: list[Partial] = []
    matches, st = row_matches(store, q.table, q.predicate, cols, medium, device, backend)
    t2 = time.perf_counter()
    for env, n in morsel_envs(matches, store, cols):
        keys = [widen(*evaluate(k, env, n), n) for k in q.keys]
        args = [_arg(a, env, n) for a in q.aggs]
        parts.append(aggregate_morsel(keys, kinds, args, q.aggs))
        if len(parts) >= MERGE_PARTS or \
                sum(p.n for p in parts[1:]) > max(MERGE_GROUPS, parts[0].n):
            parts = [merge_partials(parts, q.aggs)]
    st.seconds = time.perf_counter() - t2
    st.wall_seconds = time.perf_counter() - t1 - st.compile_seconds
    return (merge_partials(parts, q.aggs) if parts else no_groups(q)), st


#: Per open store: the plans of its hashed GROUP BYs by (query, slots, medium, page cache),
#: and by ("capacity", query, keys) the hash table its last run needed. A repeated query
#: reuses its plan, so the GPU engine reuses the plan's kernel source and prepared launch
#: (kept by the plan's identity), and starts at the table that held its groups.
_PLANS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_PLANS_LOCK = threading.Lock()


def _store_plans(store: PageStore) -> LRU:
    """``store``'s cache of hashed plans (made on first use; it goes with the store)."""
    with _PLANS_LOCK:
        plans = _PLANS.get(store)
        if plans is None:
            plans = _PLANS[store] = LRU(64)
        return plans


def _hash_plan(store: PageStore, q: ir.Query, slots: HashSlots, medium: Medium):
    """The plan of ``q`` with the hash table ``slots`` on ``store``, made once per
    (query, slots, medium, page cache): an open store's metadata does not change."""
    from bamql.engine.partition import page_cache, plan_partition

    resident = page_cache(store, q.columns, medium)
    key = (q, slots, medium, resident)
    plans = _store_plans(store)
    plan = plans.get(key)
    if plan is None:
        plan = plan_partition(store, q, slots, medium, resident)
        plans.put(key, plan)
    return plan


def gpu_kernel_partial(store: PageStore, q: ir.Query, hashed: tuple[int, ...],
                       dense: tuple[Domain, ...], medium: Medium, backend: Backend,
                       engine) -> tuple[Partial, QueryStats]:
    """One partition of ``q`` (a hashed GROUP BY) on the GPU ``engine``: the fused kernel
    with a hash table of groups, run again with a larger table where one overflows; its
    partial (one group per key) and statistics. Raises ``TableFull`` where the partition
    has more groups than the largest table takes."""
    from bamql.engine.partition import run_partition
    from bamql.gpu import hashgroup

    largest = LARGEST_TABLE // n_slots(dense)
    plans = _store_plans(store)
    needed = ("capacity", q, hashed, dense)  # the table the last run of the query needed
    cap = plans.get(needed) or first_capacity(store.rows)
    while True:
        plan = _hash_plan(store, q, HashSlots(cap, hashed, dense), medium)
        acc, st = run_partition(store, plan, Device.GPU, backend, engine)
        if not hashgroup.retry(acc):
            plans.put(needed, cap)
            break
        if cap * TABLE_GROWTH > largest:
            raise TableFull(q)
        cap *= TABLE_GROWTH
    # the kernel's table may hold one key in several slots: regrouped
    p = partial_of_slots(acc, q, *hashgroup.present(acc, q.keys, plan.key_domains))
    return merge_partials([p], q.aggs, regroup=True), st


def cpu_kernel_partial(store: PageStore, q: ir.Query, hashed: tuple[int, ...],
                       dense: tuple[Domain, ...], medium: Medium,
                       backend: Backend) -> tuple[Partial, QueryStats]:
    """One partition of ``q`` (a hashed GROUP BY) on the CPU engine's kernel: per morsel
    each chunk of rows groups into a hash table of its own (``kernels.cpu``), read back as
    a partial; the partials merged by their keys (one group per key) with the statistics.
    Raises ``TableFull`` where a morsel has more groups than the largest table takes."""
    from bamql.engine.accumulate import variance_states
    from bamql.engine.cpu import MORSEL_ROWS, run_cpu_hashed
    from bamql.engine.partition import partition_stats

    parts: list[Partial] = []

    def take(acc: dict[str, np.ndarray], slots: HashSlots) -> None:
        nonlocal parts
        nch = acc["R"].shape[0]
        for ch in range(nch):  # (an array no aggregate uses has one stand-in row)
            one = {k: v[ch:ch + 1] if len(v) == nch else v for k, v in acc.items()}
            red = {k: v[0] for k, v in one.items() if k not in ("VS", "VF")}
            if "VS" in one:
                red["VM"] = variance_states(one)
            at = np.flatnonzero(red["R"] > 0)
            h, gd = at % (slots.capacity + 2), at // (slots.capacity + 2)
            keys = np.zeros((len(at), 2 * len(q.keys)), np.int64)
            hm = red["HM"][h]
            for n, i in enumerate(slots.hashed):
                keys[:, 2 * i] = (hm >> n) & 1
                keys[:, 2 * i + 1] = red["HK"][h, n]
            slots.dense_keys(gd, tuple(k.kind for k in q.keys), keys)
            parts.append(partial_of_slots(red, q, at, keys))
        if len(parts) >= MERGE_PARTS or sum(p.n for p in parts[1:]) > max(MERGE_GROUPS, parts[0].n):
            parts = [merge_partials(parts, q.aggs, regroup=True)]

    t1 = time.perf_counter()
    slots = HashSlots(first_capacity(min(store.rows, MORSEL_ROWS)), hashed, dense)
    plan = _hash_plan(store, q, slots, medium)
    st = partition_stats(plan, store, Device.CPU, backend)
    run_cpu_hashed(plan, store, st, take)
    st.seconds = time.perf_counter() - t1 - st.compile_seconds
    st.wall_seconds = st.seconds
    return (merge_partials(parts, q.aggs, regroup=True) if parts else no_groups(q)), st


@dataclass(frozen=True)
class HashTask:
    """One partition's partial of a hashed GROUP BY (``runner.PartitionTask``): in the
    engine's kernel (the GPU's hash table of groups on a GPU, the CPU kernel's tables on
    the CPU), or with ``kernel`` False through the NumPy step. Where the kernel does not
    take the query (more groups than its largest table, a key it cannot compute) a
    partition raises ``runner.Declined`` and the operator runs it again through the NumPy
    step; the partials of one query thus always come from one way of grouping."""

    q: ir.Query
    medium: Medium
    #: the keys the kernel hashes, the dense domains of the others (``split_keys``)
    hashed: tuple[int, ...]
    dense: tuple[Domain, ...]
    kernel: bool = True

    #: the partials merge by key, in any order
    ordered: ClassVar[bool] = False

    def run(self, store: PageStore, device: Device, backend: Backend,
            engine) -> tuple[Partial, QueryStats]:
        if not self.kernel:
            return numpy_partial(store, self.q, self.medium, device, backend)
        try:
            if device == Device.GPU:
                return gpu_kernel_partial(store, self.q, self.hashed, self.dense, self.medium,
                                          backend, engine)
            return cpu_kernel_partial(store, self.q, self.hashed, self.dense, self.medium,
                                      backend)
        except TableFull:
            raise Declined("more groups than the kernel's largest hash table takes") from None
        except TypeError as e:  # a key or argument the kernel cannot compute
            if not str(e).startswith("codegen:"):
                raise
            raise Declined(str(e)) from None

    def merge(self, partials: list[Partial]) -> Partial:
        """Partials of disjoint partitions as one, one group per key."""
        return merge_partials(partials, self.q.aggs, regroup=True) if partials \
            else no_groups(self.q)

    def enough(self, partials: list[Partial]) -> bool:
        return False


def hash_task(q: ir.Query, columns, medium: Medium) -> HashTask:
    """The partition task of ``q`` (a hashed GROUP BY) over a table of ``columns`` (the
    whole table's: every partition splits its keys alike)."""
    hashed, dense = split_keys(q, columns)
    return HashTask(q, medium, hashed, dense)


#: The most slots the dense keys beside a hashed one may take together
DENSE_BESIDE = 256


def split_keys(q: ir.Query, columns) -> tuple[tuple[int, ...], tuple[Domain, ...]]:
    """Which GROUP BY keys the GPU kernel hashes (positions), and the dense domains of the
    others: the keys without a dense range (or with the largest, where all have one) are
    hashed; the rest stay dense beside them where their slots together are few, else
    every key is hashed."""
    doms = [key_domain(k, columns) for k in q.keys]
    hashed = [i for i, d in enumerate(doms) if d is None or d.size + 1 > MAX_GROUPS]
    if not hashed:
        hashed = [max(range(len(doms)), key=lambda i: doms[i].size)]
    dense = tuple(d for i, d in enumerate(doms) if i not in hashed)
    if n_slots(dense) > DENSE_BESIDE:
        return tuple(range(len(doms))), ()
    return tuple(hashed), dense




def _arg(a: ir.Agg, env, n: int) -> Vec:
    """Aggregate ``a``'s argument over ``n`` rows, valid only where its FILTER holds
    (COUNT(*): every row)."""
    if a.arg is None:
        v, ok = np.zeros(n, np.int64), np.ones(n, bool)
    else:
        v, ok = widen(*evaluate(a.arg, env, n), n)
    if a.filter is not None:
        fv, fok = widen(*evaluate(a.filter, env, n), n)
        ok = ok & fv.astype(bool) & fok
    return v, ok


class HashSite(Enum):
    """Where a hashed GROUP BY groups its rows."""

    GPU_KERNEL = "a hash table in the GPU kernel per partition, partials merged"
    CPU_KERNEL = "hash tables in the CPU kernel, one per chunk of rows, partials merged"


def explain_hashed(q: ir.Query, plan_text: str, gpu_session: bool, site: HashSite) -> str:
    """EXPLAIN of a hashed GROUP BY: its keys and aggregates, where it groups, then the plan
    that reads their columns at the matching rows."""
    lines = [f"Hash aggregate over {q.table}",
             "  group by: " + ", ".join(show(k) for k in q.keys) + f"  ({site.value})",
             "  aggregates: " + ", ".join(show(a) for a in q.aggs)]
    if gpu_session:
        lines.append(ON_GPU)
    plan = [ln.replace("Aggregate over", "Read", 1) for ln in plan_text.splitlines()
            if not ln.startswith(("  logical:", "  aggregates:"))]
    return "\n".join(lines + plan)
