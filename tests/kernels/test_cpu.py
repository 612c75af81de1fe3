"""The CPU filter kernel (kernels.cpu.filter_kernel): the same rows kept on the calling
thread (fewer than ``SERIAL_ROWS``) as in parallel, NULL sentinels and NaN included."""

from __future__ import annotations

import numpy as np
import pytest

from bamql.kernels import cpu as kcpu
from bamql.kernels.codegen import N_ERRORS
from bamql.planner import ir

SENTINEL = np.iinfo(np.int64).min


@pytest.mark.parametrize("n", [0, 1, kcpu.SERIAL_ROWS - 1, kcpu.SERIAL_ROWS, 3 * kcpu.SERIAL_ROWS + 5])
def test_filter_keeps_the_same_rows_serial_or_parallel(n):
    rng = np.random.default_rng(n)
    x = rng.integers(-50, 50, n).astype(np.int64)
    x[rng.random(n) < 0.1] = SENTINEL  # NULL
    f = rng.normal(0, 10, n)
    f[rng.random(n) < 0.05] = np.nan
    pred = ir.And((ir.Cmp(">", ir.Col("x", "int"), ir.Lit(7, "int")),
                   ir.Cmp("<", ir.Col("f", "float"), ir.Lit(2.5, "float"))))
    kern, params = kcpu.filter_kernel(pred, ["x", "f"], {"x": SENTINEL, "f": SENTINEL})
    out = np.empty(n, bool)
    kern(n, x, f, *params, out, np.zeros(N_ERRORS, np.int64))
    # NULL fails; NaN is greater than every number (DuckDB), so it fails f < 2.5
    want = (x != SENTINEL) & (x > 7) & ~np.isnan(f) & (f < 2.5)
    np.testing.assert_array_equal(out, want)
