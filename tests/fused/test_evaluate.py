"""The NumPy evaluator's float comparisons follow DuckDB's order: NaN = NaN, NaN above all."""

from __future__ import annotations

import itertools

import duckdb
import numpy as np
import pytest

from bamql.fused.evaluate import compare

VALUES = [float("nan"), -np.inf, -1.0, 0.0, 2.5, np.inf]


@pytest.mark.parametrize("op", ["=", "<>", "<", "<=", ">", ">="])
def test_float_comparisons_match_duckdb(op):
    pairs = list(itertools.product(VALUES, VALUES))
    a = np.array([p[0] for p in pairs])
    b = np.array([p[1] for p in pairs])
    rows = ", ".join(f"('{x}'::DOUBLE, '{y}'::DOUBLE)" for x, y in pairs)
    ref = [r[0] for r in duckdb.sql(f"SELECT x {op} y FROM (VALUES {rows}) t(x, y)").fetchall()]
    assert compare(op, a, b).tolist() == ref
    ints = np.arange(-2, 3)  # integers compare as before
    assert compare(op, ints, np.zeros(5, np.int64)).tolist() == {
        "=": ints == 0, "<>": ints != 0, "<": ints < 0, "<=": ints <= 0, ">": ints > 0,
        ">=": ints >= 0}[op].tolist()
