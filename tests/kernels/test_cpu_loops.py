"""The CPU kernels (kernels.cpu_loops): the filter keeps the same rows on the calling thread
(fewer than ``SERIAL_ROWS``) as in parallel, NULL sentinels and NaN included; the kernels
compiled for one thread (stores under ``PARALLEL_ROWS``) give the parallel ones' every bit."""

from __future__ import annotations

import numpy as np
import pytest

from bamql.fused import ir
from bamql.kernels import cpu_loops as kcpu
from bamql.kernels.codegen import N_ERRORS

SENTINEL = np.iinfo(np.int64).min


@pytest.mark.parametrize("parallel", [True, False])
@pytest.mark.parametrize("n", [0, 1, kcpu.SERIAL_ROWS - 1, kcpu.SERIAL_ROWS, 3 * kcpu.SERIAL_ROWS + 5])
def test_filter_keeps_the_same_rows_serial_or_parallel(n, parallel):
    rng = np.random.default_rng(n)
    x = rng.integers(-50, 50, n).astype(np.int64)
    x[rng.random(n) < 0.1] = SENTINEL  # NULL
    f = rng.normal(0, 10, n)
    f[rng.random(n) < 0.05] = np.nan
    pred = ir.And((ir.Cmp(">", ir.Col("x", "int"), ir.Lit(7, "int")),
                   ir.Cmp("<", ir.Col("f", "float"), ir.Lit(2.5, "float"))))
    kern, params = kcpu.filter_kernel(pred, ["x", "f"], {"x": SENTINEL, "f": SENTINEL},
                                      parallel=parallel)
    out = np.empty(n, bool)
    kern(n, x, f, *params, out, np.zeros(N_ERRORS, np.int64))
    # NULL fails; NaN is greater than every number (DuckDB), so it fails f < 2.5
    want = (x != SENTINEL) & (x > 7) & ~np.isnan(f) & (f < 2.5)
    np.testing.assert_array_equal(out, want)


def test_a_full_hash_table_stops_its_chunk():
    """A chunk whose table passes half full is flagged and takes no more rows: the run is
    repeated with a larger table, so probing a full table row after row would only waste
    time."""
    from bamql.fused.domains import HashSlots
    from bamql.kernels import accumulate

    n = 20_000
    x = np.arange(n, dtype=np.int64) * 7919  # every row a group of its own
    keys = (ir.Col("x", "int"),)
    slots = HashSlots(16, (0,))
    aggs = (ir.Agg("count", None, "int"),)
    kern, params = kcpu.agg_kernel(keys, slots, aggs, ["x"], {"x": SENTINEL})
    acc = accumulate.alloc(1, accumulate.n_groups(slots), aggs)
    acc.update(kcpu.hash_arrays(1, slots))
    kern(n, 1, x, kcpu.EVERY_ROW, *params, *acc.values())
    assert acc["HN"][0, 1] == 1  # flagged once, at the slot past half
    assert acc["HN"][0, 0] == slots.capacity // 2 + 1
    assert acc["R"].sum() == slots.capacity // 2 + 1  # the later rows were not counted


def test_one_thread_kernels_give_the_parallel_ones_every_bit():
    """Grouped sums, minima, variances and exact integer sums over chunks: the kernel
    compiled for one thread fills every chunk's accumulators exactly as the parallel one
    (the chunks, not the threads, fix the order of the additions)."""
    from bamql.fused.domains import Domain
    from bamql.kernels import accumulate

    rng = np.random.default_rng(7)
    n, nch = 50_000, 16
    g = rng.integers(0, 5, n).astype(np.int64)
    f = rng.normal(0, 1e6, n)
    f[rng.random(n) < 0.01] = np.nan
    x = rng.integers(-(2**62), 2**62, n).astype(np.int64)
    x[rng.random(n) < 0.1] = SENTINEL
    keys = (ir.Col("g", "int"),)
    aggs = (ir.Agg("sum", ir.Col("f", "float"), "float"), ir.Agg("min", ir.Col("f", "float"), "float"),
            ir.Agg("var_samp", ir.Col("f", "float"), "float"), ir.Agg("sum", ir.Col("x", "int"), "int"),
            ir.Agg("count", None, "int"))
    mask = rng.random(n) < 0.7
    got = []
    for parallel in (True, False):
        kern, params = kcpu.agg_kernel(keys, (Domain(0, 5),), aggs, ["g", "f", "x"],
                                       {"g": SENTINEL, "f": SENTINEL, "x": SENTINEL},
                                       parallel=parallel)
        acc = accumulate.alloc(nch, accumulate.n_groups((Domain(0, 5),)), aggs)
        kern(n, nch, g, f, x, mask, *params, *acc.values())
        got.append(acc)
    assert kcpu.parallel_for(kcpu.PARALLEL_ROWS) and not kcpu.parallel_for(kcpu.PARALLEL_ROWS - 1)
    for name, a in got[0].items():
        np.testing.assert_array_equal(a.view(np.uint8), got[1][name].view(np.uint8), err_msg=name)
