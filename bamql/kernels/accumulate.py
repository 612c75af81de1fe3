"""Aggregate accumulators: allocation, merging and turning them into result columns.

The layout is shared by the CPU and GPU templates: ``R[g]`` rows per group and per aggregate
``j``: ``C`` non-null count, ``SF``/``SI`` sums, ``MNF``/``MXF``/``MNI``/``MXI`` min/max,
``VS``/``VF`` a variance's shift and shifted sums (``variance_states``).
An integer sum takes two slots of ``SI``, so that it is exact as DuckDB's 128-bit one is
(``int_sums``); ``E`` counts the errors the kernels flag (``codegen.check_errors``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bamql.fused import ir
from bamql.fused.domains import n_slots, strides
from bamql.kernels.codegen import N_ERRORS, check_errors

_F_MAX, _I_MAX, _I_MIN = np.inf, np.iinfo(np.int64).max, np.iinfo(np.int64).min


#: ``VS`` before a group's first value: the bits of a signalling NaN, which no arithmetic
#: makes (a value with these bits is a NaN, whose variance is NaN anyway)
NO_SHIFT = 0x7FF4_0000_0000_0001


def n_groups(domains) -> int:
    """Accumulator slots: one per key value, plus one per key for NULL."""
    return n_slots(domains)


def alloc(nch: int, groups: int, aggs) -> dict[str, np.ndarray]:
    """Fresh accumulators with ``nch`` private chunks (arrays that no aggregate uses are tiny)."""
    a = max(len(aggs), 1)
    used = {"C"}
    for g in aggs:
        f = "F" if g.arg is not None and g.arg.kind == "float" else "I"
        if g.func in ("sum", "avg"):
            used.add("S" + f)
        elif g.func in ("min", "max"):
            used.add(("MN" if g.func == "min" else "MX") + f)
        elif g.func in ir.VARIANCES:
            used.update(("VS", "VF"))
    # NaN is the largest float (as in DuckDB): MNF starts at NaN, so that a MIN of NaNs only
    # is NaN, and merges with np.fmin (another chunk's value wins over NaN)
    init = {"C": 0, "SF": 0.0, "SI": 0, "MNF": np.nan, "MXF": -_F_MAX, "MNI": _I_MAX, "MXI": _I_MIN,
            "VS": NO_SHIFT, "VF": 0.0}
    out = {"R": np.zeros((nch, groups), np.int64)}
    for k, v in init.items():
        shape = (nch, groups, 2 * a if k in ("SI", "VF") else a) if k in used else (1, 1, 1)
        out[k] = np.full(shape, v, dtype=np.float64 if k.endswith("F") else np.int64)
    out["E"] = np.zeros((nch, N_ERRORS), np.int64)
    return out


def int_sums(SI: np.ndarray, rows: np.ndarray, j: int, cnt: np.ndarray) -> np.ndarray:
    """The exact integer sums of aggregate ``j`` in groups ``rows`` (Python ints, an object
    array), which int64 would wrap. Each of the ``cnt`` values ``x`` added ``x >> 32`` to
    ``SI[.., j]`` and ``(x & 0xFFFFFFFF) - 2**31`` to ``SI[.., len(aggs) + j]``: both halves
    lie within +-2**31, so neither sum wraps below 2**32 values per group."""
    a = SI.shape[-1] // 2
    hi, lo = SI[rows, j], SI[rows, a + j]
    if len(hi) and max(np.abs(hi).max(), cnt.max()) < 1 << 29 and np.abs(lo).max() < 1 << 61:
        return (hi * (1 << 32) + lo + cnt * (1 << 31)).astype(object)  # no int64 overflow
    return hi.astype(object) * (1 << 32) + lo.astype(object) + cnt.astype(object) * (1 << 31)


def int_avgs(sums: np.ndarray, cnt: np.ndarray) -> np.ndarray:
    """Exact integer sums over counts as float64, correctly rounded (0 where no count)."""
    f = sums.astype(np.float64)
    with np.errstate(all="ignore"):
        if np.all(np.abs(f) < 2.0**53):  # float(x) is exact: the division rounds once
            return np.where(cnt > 0, f / np.maximum(cnt, 1), 0.0)
    return np.array([x / int(c) if c else 0.0 for x, c in zip(sums, cnt, strict=True)],
                    dtype=np.float64)


def variance_states(acc: dict[str, np.ndarray]) -> np.ndarray:
    """The chunks' variance accumulators as one ``VM`` (groups, 3 * aggregates): each
    aggregate's shift, its mean less the shift, then its sum of squared deviations (M2).

    In a chunk (the GPU has one), a group's first value is its shift ``VS`` (float64 bits)
    and ``VF`` sums ``x - shift`` and ``(x - shift)**2``: a shift inside the group's values
    keeps the squares from cancelling, as they do for values far from 0 with a small
    spread. Chunks merge with Chan's formula (as DuckDB merges its Welford states), the
    difference of two means taken as the difference of their shifts plus that of their
    offsets, which a mean rounded to a large value's precision would lose."""
    C, VS, VF = acc["C"], acc["VS"], acc["VF"]
    if VF.shape[-1] != 2 * C.shape[-1]:  # no variance in the query: VS and VF are stand-ins
        return np.zeros((1, 0))
    a = C.shape[-1]
    n = C.astype(np.float64)
    with np.errstate(all="ignore"):
        s1, s2 = VF[..., :a], VF[..., a:]
        shift = np.where(n > 0, VS.view(np.float64), 0.0)
        off = np.where(n > 0, s1 / np.maximum(n, 1), 0.0)
        # finite values whose squares overflow: their spread does too (DuckDB's is inf)
        m2 = np.where(n > 0, np.where(np.isinf(s2) & np.isfinite(s1), np.inf, s2 - s1 * off), 0.0)
    t = n[0], shift[0], off[0], m2[0]
    for i in range(1, len(n)):
        t = _chan(*t, n[i], shift[i], off[i], m2[i])
    return np.concatenate(t[1:], axis=-1)


def _chan(na, sa, oa, qa, nb, sb, ob, qb):
    """Two (count, shift, mean - shift, M2) states of disjoint rows as one, with ``a``'s shift
    (an empty side leaves the other)."""
    nt = na + nb
    with np.errstate(all="ignore"):
        d = (sb - sa) + (ob - oa)
        w = nb / np.maximum(nt, 1)
        s = np.where(na == 0, sb, sa)
        o = np.where(na == 0, ob, np.where(nb == 0, oa, oa + d * w))
        q = np.where(na == 0, qb, np.where(nb == 0, qa, qa + qb + d * d * na * w))
    return nt, s, o, q


def _combine_vm(red: dict[str, np.ndarray], into: dict[str, np.ndarray]) -> np.ndarray:
    vm, other = red["VM"], into["VM"]
    if vm.shape[-1] == 0:  # no variance in the query
        return vm
    na, nb = red["C"].astype(np.float64), into["C"].astype(np.float64)
    _, *t = _chan(na, *np.split(vm, 3, axis=-1), nb, *np.split(other, 3, axis=-1))
    return np.concatenate(t, axis=-1)


def merge(acc: dict[str, np.ndarray], into: dict[str, np.ndarray] | None) -> dict[str, np.ndarray]:
    """Reduce the chunk axis of ``acc`` and add it to ``into`` (already reduced)."""
    red = {}
    for k, v in acc.items():
        if k in ("VS", "VF"):
            continue
        if k == "MNF":
            red[k] = np.fmin.reduce(v, axis=0)
        elif k.startswith("MN"):
            red[k] = v.min(axis=0)
        elif k.startswith("MX"):
            red[k] = np.where(np.isnan(v).any(axis=0), np.nan, v.max(axis=0)) if k == "MXF" else v.max(0)
        else:
            red[k] = v.sum(axis=0)
    if "VS" in acc:
        red["VM"] = variance_states(acc)
    return red if into is None else combine(red, into)


def combine(red: dict[str, np.ndarray], into: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Two reduced accumulator sets as one (partial aggregates of disjoint rows)."""
    red = dict(red)
    if "VM" in red:  # before the counts are added up
        red["VM"] = _combine_vm(red, into)
    for k in red:
        if k == "VM":
            continue
        if k == "MNF":
            red[k] = np.fmin(red[k], into[k])
        elif k.startswith("MN"):
            red[k] = np.minimum(red[k], into[k])
        elif k == "MXF":
            red[k] = np.where(np.isnan(red[k]) | np.isnan(into[k]), np.nan, np.maximum(red[k], into[k]))
        elif k.startswith("MX"):
            red[k] = np.maximum(red[k], into[k])
        else:
            red[k] = red[k] + into[k]
    return red


def combine_all(accs) -> dict[str, np.ndarray] | None:
    """Reduced accumulator sets of disjoint rows (partitions, workers) as one; None if none."""
    total = None
    for acc in accs:
        total = acc if total is None else combine(acc, total)
    return total


@dataclass(frozen=True)
class Grouped:
    """Finished groups: key columns and aggregate columns as (values, valid) pairs."""

    keys: list[tuple[np.ndarray, np.ndarray]]
    aggs: list[tuple[np.ndarray, np.ndarray]]
    n: int


def finish(acc: dict[str, np.ndarray], q: ir.Query, domains) -> Grouped:
    """Merged accumulators -> one row per non-empty group (one row if no GROUP BY); raises
    what the kernels flagged (an overflow, a group key outside its domain)."""
    if "E" in acc:
        check_errors(acc["E"].reshape(-1, N_ERRORS).sum(axis=0))
    R = acc["R"]
    present = np.nonzero(R > 0)[0] if q.keys else np.array([0])
    keys = []
    for d, st in zip(domains, strides(domains), strict=True):
        slot = (present // st) % (d.size + 1)
        keys.append((d.value(d.base + slot), slot != d.size))
    aggs = []
    for j, a in enumerate(q.aggs):
        cnt = acc["C"][present, j]
        has = cnt > 0
        f = "F" if a.arg is not None and a.arg.kind == "float" else "I"
        if a.func == "count":
            aggs.append((cnt, np.ones(len(present), bool)))
        elif a.func in ("sum", "avg") and f == "I":
            sums = int_sums(acc["SI"], present, j, cnt)
            aggs.append((sums if a.func == "sum" else int_avgs(sums, cnt), has))
        elif a.func == "sum":
            aggs.append((acc["S" + f][present, j], has))
        elif a.func == "avg":
            s = acc["S" + f][present, j].astype(np.float64)
            with np.errstate(all="ignore"):
                aggs.append((np.where(has, s / np.maximum(cnt, 1), 0.0), has))
        elif a.func in ir.VARIANCES:
            aggs.append(_variance(acc["VM"], present, j, 2 * len(q.aggs), cnt, a.func))
        else:
            arr = acc[("MN" if a.func == "min" else "MX") + f][present, j]
            aggs.append((arr, has))
    return Grouped(keys, aggs, len(present))


def _variance(vm: np.ndarray, rows: np.ndarray, j: int, at: int, cnt: np.ndarray,
              func: str) -> tuple[np.ndarray, np.ndarray]:
    """VAR/STDDEV (``func``) of aggregate ``j`` in groups ``rows`` from its M2 in ``vm``:
    NULL below two values (one for the population ones), as in DuckDB."""
    pop = func.endswith("pop")
    m2 = vm[rows, at + j]
    with np.errstate(all="ignore"):
        m2 = np.where(m2 < 0, 0.0, m2)  # rounding, where the spread is 0
        v = m2 / np.maximum(cnt - (0 if pop else 1), 1)
        if pop:  # one value has no spread, even an infinite or NaN one (DuckDB: 0)
            v = np.where(cnt == 1, 0.0, v)
        if func.startswith("stddev"):
            v = np.sqrt(v)
    return v, cnt > (0 if pop else 1)


#: Low 63 bits: flipped in a negative float's bits to order them as integers.
_LOW63 = np.int64(0x7FFF_FFFF_FFFF_FFFF)


def order_keys(a: np.ndarray) -> np.ndarray:
    """float64 values <-> int64 keys in DuckDB's float order (``-inf`` < ... < ``+inf`` < NaN):
    the bits, with a negative value's low 63 bits flipped. The map is its own inverse, on
    the array's buffer (a float64 array gives an int64 view and back). The GPU template keeps
    MIN and MAX of floats as keys, merged with integer atomics (``gpu.kernel``); NaNs must be
    the canonical (positive) one before, as the kernel makes them."""
    k = a.view(np.int64)
    k ^= (k >> 63) & _LOW63
    return k if a.dtype == np.float64 else k.view(np.float64)


def regroup(acc: dict[str, np.ndarray], slots: np.ndarray, groups: int) -> dict[str, np.ndarray]:
    """Reduced accumulators with group ``g`` moved into group ``slots[g]`` of ``groups``,
    the groups that land together combined as ``combine`` combines them (a join's GROUP BY
    a dimension column: the kernel groups by the join key, ``sql.joins``)."""
    out = {}
    for k, v in acc.items():
        if k == "VM" and v.shape[0] == len(slots):
            out[k] = _regroup_vm(v, acc["C"], slots, groups)
            continue
        if k == "E" or v.shape[0] != len(slots):  # the error counts; an array no aggregate uses
            out[k] = v
            continue
        if k == "MNF":
            new, at = np.full((groups, *v.shape[1:]), np.nan), np.fmin.at
        elif k.startswith("MN"):
            new, at = np.full((groups, *v.shape[1:]), _I_MAX, v.dtype), np.minimum.at
        elif k.startswith("MX"):  # np.maximum keeps NaN, the largest float (as in DuckDB)
            new = np.full((groups, *v.shape[1:]), -_F_MAX if k == "MXF" else _I_MIN, v.dtype)
            at = np.maximum.at
        else:
            new, at = np.zeros((groups, *v.shape[1:]), v.dtype), np.add.at
        at(new, slots, v)
        out[k] = new
    return out


def _regroup_vm(vm: np.ndarray, C: np.ndarray, slots: np.ndarray, groups: int) -> np.ndarray:
    """``regroup`` of the variance states: the groups that land together merged by Chan's
    formula, one group at a time (only groups with a value count)."""
    a = vm.shape[-1] // 3
    n = np.zeros((groups, a))
    out = np.zeros((groups, 3 * a))
    for g in np.nonzero(C.sum(axis=1) > 0)[0]:
        t = slots[g]
        n[t], *st = _chan(n[t], *np.split(out[t], 3), C[g].astype(np.float64), *np.split(vm[g], 3))
        out[t] = np.concatenate(st)
    return out


def count_present(acc: dict[str, np.ndarray], aggs) -> dict[str, np.ndarray]:
    """Reduced accumulators with the counts of aggregates ``aggs`` as 1 where a group has
    one, else 0 (``COUNT(DISTINCT c)``: a group of ``c``'s value counts once,
    ``sql.distinct``)."""
    out = dict(acc)
    C = acc["C"].copy()
    for j in aggs:
        C[:, j] = C[:, j] > 0
    out["C"] = C
    return out
