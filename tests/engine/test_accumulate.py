"""Merging partial float MIN/MAX: NaN is the largest value, as in DuckDB."""

from __future__ import annotations

import numpy as np

from bamql.engine import accumulate
from bamql.planner import ir


def test_float_order_keys_order_nan_last_and_round_trip():
    x = np.array([-np.inf, -5.5, -1e-300, 0.0, 1e-300, 3.0, np.inf, np.nan])
    k = accumulate.order_keys(x.copy())
    assert k.dtype == np.int64 and (np.diff(k) > 0).all()
    back = accumulate.order_keys(k)
    assert back.dtype == np.float64
    assert np.array_equal(back, x, equal_nan=True)


def test_min_of_chunks_ignores_nan_unless_all_are_nan_and_max_keeps_it():
    arg = ir.Col("x", "float")
    aggs = (ir.Agg("min", arg, "float"), ir.Agg("max", arg, "float"))
    acc = accumulate.alloc(3, 1, aggs)
    assert np.isnan(acc["MNF"]).all()  # nothing seen yet: NaN, the largest
    acc["C"][:] = 1
    acc["MNF"][:, 0, 0] = [np.nan, 4.0, np.nan]  # chunk 0 saw only NaN, chunk 2 nothing
    acc["MXF"][:, 0, 1] = [np.nan, 4.0, -np.inf]
    red = accumulate.merge(acc, None)
    assert red["MNF"][0, 0] == 4.0 and np.isnan(red["MXF"][0, 1])
    other = accumulate.merge(accumulate.alloc(1, 1, aggs), None)
    other["MNF"][0, 0], other["MXF"][0, 1] = 7.0, 9.0
    both = accumulate.combine(red, other)
    assert both["MNF"][0, 0] == 4.0 and np.isnan(both["MXF"][0, 1])
    only_nan = dict(other, MNF=np.full_like(other["MNF"], np.nan))
    assert np.isnan(accumulate.combine(only_nan, accumulate.merge(
        accumulate.alloc(1, 1, aggs), None))["MNF"][0, 0])
