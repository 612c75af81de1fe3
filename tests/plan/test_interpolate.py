"""Interpolation between neighbours (``plan.interpolate``) as DuckDB's build does it: a fused
multiply-add, one rounding, signs of zero and infinities kept."""

from __future__ import annotations

import math
from fractions import Fraction

import duckdb
import numpy as np
import pyarrow as pa

from bamql.plan.interpolate import between, fused_multiply_add


def test_a_fused_multiply_add_rounds_once():
    """Against exact rational arithmetic, cancellation (c close to -a * b) included."""
    rng = np.random.default_rng(3)
    n = 20_000
    a = rng.normal(size=n) * rng.choice([1, 1e-5, 1e5, 1e150], n)
    b = rng.random(n)
    c = np.where(rng.random(n) < 0.3, rng.normal(size=n),
                 -a * b * rng.choice([1, 1 + 1e-9, 0.5, 1 - 1e-15], n))
    got = fused_multiply_add(a, b, c)
    want = [float(Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z)))
            for x, y, z in zip(a, b, c, strict=True)]
    np.testing.assert_array_equal(got, want)


def test_infinities_zeros_and_nan_as_plain_arithmetic():
    got = fused_multiply_add(np.array([math.inf, -math.inf, 1e300, math.nan, -0.0]),
                             np.array([0.5, 0.5, 1e10, 1.0, 0.5]),
                             np.array([1.0, math.inf, 1.0, 1.0, -0.0]))
    assert [repr(float(x)) for x in got] == ["inf", "nan", "inf", "nan", "-0.0"]


def test_between_two_values_as_duckdb():
    """Pairs of values, every fraction: ``quantile_cont`` of each pair in DuckDB."""
    rng = np.random.default_rng(11)
    n = 2000
    lo = rng.integers(-3000, 3000, n) / 100 * rng.choice([1, 1e-3, 7.1], n)
    hi = np.maximum(lo, -lo * rng.choice([1, 0.5, 0.3333, 0.25], n))
    t = pa.table({"g": np.r_[np.arange(n), np.arange(n)], "x": np.r_[lo, hi]})
    duck = duckdb.connect()
    duck.register("t", t)
    for q in (0.2, 0.3, 0.37, 0.5, 0.9):
        want = dict(duck.sql(f"SELECT g, quantile_cont(x, {q}) FROM t GROUP BY g").fetchall())
        got = between(lo, hi, np.full(n, q))
        assert [repr(float(x)) for x in got] == [repr(want[i]) for i in range(n)], q
