"""Partial aggregates of disjoint rows, by group key: the hash aggregation's states
(``exec.hashagg``), from a morsel's rows (a sort of the keys' canonical bits: NULL one
group, every NaN one group, -0.0 and 0.0 one group, as in DuckDB) or from a kernel's hash
table of groups, merged as the kernels' accumulators merge (counts and sums add, an integer
sum in two 32-bit halves, exact beyond int64; MIN and MAX in DuckDB's float order, NaN above
+inf; variances by the parallel (Chan) formula) and finished as the groups the aggregate
path's select list takes (``exec.result.assemble``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bamql.fused import ir
from bamql.kernels.accumulate import Grouped, int_avgs, int_sums, order_keys
from bamql.kernels.codegen import FMIX_M1, FMIX_M2, FMIX_SHIFT, HASH_SEED, N_ERRORS, NAN_BITS, check_errors
from bamql.lazyjit import njit

Vec = tuple[np.ndarray, np.ndarray]  # (values, valid)

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
    """A merged partial -> the finished groups ``exec.result.assemble`` takes."""
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


def no_groups(q: ir.Query) -> Partial:
    """The partial of no row: no group."""
    none = (np.empty(0), np.empty(0, bool))
    return aggregate_morsel([none] * len(q.keys), tuple(k.kind for k in q.keys),
                            [none] * len(q.aggs), q.aggs)
