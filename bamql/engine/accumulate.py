"""Aggregate accumulators: allocation, merging and turning them into result columns.

The layout is shared by the CPU and GPU templates: ``R[g]`` rows per group and per aggregate
``j``: ``C`` non-null count, ``SF``/``SI`` sums, ``MNF``/``MXF``/``MNI``/``MXI`` min/max.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bamql.planner import ir

_F_MAX, _I_MAX, _I_MIN = np.inf, np.iinfo(np.int64).max, np.iinfo(np.int64).min


def n_groups(domains) -> int:
    """Accumulator slots: one per key value, plus one per key for NULL."""
    return int(np.prod([size + 1 for _, size in domains])) if domains else 1


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
    init = {"C": 0, "SF": 0.0, "SI": 0, "MNF": _F_MAX, "MXF": -_F_MAX, "MNI": _I_MAX, "MXI": _I_MIN}
    out = {"R": np.zeros((nch, groups), np.int64)}
    for k, v in init.items():
        shape = (nch, groups, a) if k in used else (1, 1, 1)
        out[k] = np.full(shape, v, dtype=np.float64 if k.endswith("F") else np.int64)
    return out


def merge(acc: dict[str, np.ndarray], into: dict[str, np.ndarray] | None) -> dict[str, np.ndarray]:
    """Reduce the chunk axis of ``acc`` and add it to ``into`` (already reduced)."""
    red = {}
    for k, v in acc.items():
        if k.startswith("MN"):
            red[k] = v.min(axis=0)
        elif k.startswith("MX"):
            red[k] = np.where(np.isnan(v).any(axis=0), np.nan, v.max(axis=0)) if k == "MXF" else v.max(0)
        else:
            red[k] = v.sum(axis=0)
    return red if into is None else combine(red, into)


def combine(red: dict[str, np.ndarray], into: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Two reduced accumulator sets as one (partial aggregates of disjoint rows)."""
    red = dict(red)
    for k in red:
        if k.startswith("MN"):
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
    """Merged accumulators -> one row per non-empty group (one row if no GROUP BY)."""
    R = acc["R"]
    present = np.nonzero(R > 0)[0] if q.keys else np.array([0])
    keys = []
    stride = 1
    strides = []
    for _, size in reversed(domains):
        strides.append(stride)
        stride *= size + 1
    strides.reverse()
    for (base, size), st in zip(domains, strides, strict=True):
        slot = (present // st) % (size + 1)
        keys.append((base + slot, slot != size))
    aggs = []
    for j, a in enumerate(q.aggs):
        cnt = acc["C"][present, j]
        has = cnt > 0
        f = "F" if a.arg is not None and a.arg.kind == "float" else "I"
        if a.func == "count":
            aggs.append((cnt, np.ones(len(present), bool)))
        elif a.func == "sum":
            aggs.append((acc["S" + f][present, j], has))
        elif a.func == "avg":
            s = acc["S" + f][present, j].astype(np.float64)
            with np.errstate(all="ignore"):
                aggs.append((np.where(has, s / np.maximum(cnt, 1), 0.0), has))
        else:
            arr = acc[("MN" if a.func == "min" else "MX") + f][present, j]
            aggs.append((arr, has))
    return Grouped(keys, aggs, len(present))
