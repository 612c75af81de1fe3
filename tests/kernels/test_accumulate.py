"""Merging partial float MIN/MAX: NaN is the largest value, as in DuckDB."""

from __future__ import annotations

import numpy as np
import pytest

from bamql.fused import ir
from bamql.kernels import accumulate


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


def _exact_var(xs, pop: bool) -> float:
    from fractions import Fraction

    fx = [Fraction(float(x)) for x in xs]
    m = sum(fx) / len(fx)
    return float(sum((x - m) ** 2 for x in fx) / (len(fx) - (0 if pop else 1)))


def test_variances_are_exact_for_a_tiny_spread_far_from_zero(tmp_path):
    """Values within 1e-3 of 1e9 (and of -5e12) in groups split over many chunks: the
    variance of the stored doubles to 1e-10 relative, where sums of squares lose it all
    (DuckDB's Welford loses about 1e-6 here, so the reference is exact arithmetic)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    import bamql
    from bamql.storage.ingest import ingest

    rng = np.random.default_rng(3)
    n = 20_000
    k = rng.integers(0, 3, n)
    x = np.where(k == 2, -5e12, 1e9) + rng.normal(0, 1e-3, n) * (k + 1)
    pq.write_table(pa.table({"k": k, "x": x}), tmp_path / "t.parquet")
    ingest([tmp_path / "t.parquet"], tmp_path / "data" / "t", page_size=4096)
    with bamql.connect(tmp_path / "data", device="cpu") as con:
        rows = con.sql("SELECT k, VAR_SAMP(x), VAR_POP(x), STDDEV(x) FROM t GROUP BY k").rows()
    assert len(rows) == 3
    for g, vs, vp, sd in rows:
        xs = x[k == g]
        assert vs == pytest.approx(_exact_var(xs, pop=False), rel=1e-10)
        assert vp == pytest.approx(_exact_var(xs, pop=True), rel=1e-10)
        assert sd == pytest.approx(_exact_var(xs, pop=False) ** 0.5, rel=1e-10)


def test_regrouped_variance_states_merge_as_one_group():
    """``regroup`` of variance states (a join's GROUP BY a dimension column) equals the
    variance of the groups' rows together."""
    from bamql.kernels.accumulate import _chan, regroup

    rng = np.random.default_rng(5)
    parts = [rng.normal(1e6, 2.0, m) for m in (5, 9, 1)]
    C = np.array([[len(p)] for p in parts])
    vm = np.array([[p[0], p.mean() - p[0], ((p - p.mean()) ** 2).sum()] for p in parts])
    out = regroup({"C": C, "VM": vm, "R": C[:, 0]}, np.array([0, 0, 1]), 2)
    both = np.concatenate(parts[:2])
    assert out["VM"][0, 2] == pytest.approx(((both - both.mean()) ** 2).sum(), rel=1e-10)
    assert out["VM"][1, 2] == 0.0 and out["C"][1, 0] == 1
    assert _chan(0.0, 0.0, 0.0, 0.0, 2.0, 1.0, 0.5, 0.5)[1:] == (1.0, 0.5, 0.5)


@pytest.mark.parametrize("chunks", [(1, 1), (1, 2), (2, 3)])
def test_partials_without_a_variance_combine_whatever_their_chunks(chunks):
    """One group and one aggregate in one chunk look like a variance's arrays; a query
    without a variance must still combine partitions of one chunk and of several."""
    aggs = [ir.Agg("count", None, "int")]
    partials = []
    for nch in chunks:
        acc = accumulate.alloc(nch, 1, aggs)
        acc["C"][:] = 2
        partials.append(accumulate.merge(acc, None))
    total = accumulate.combine_all(partials)
    assert int(total["C"].sum()) == 2 * sum(chunks)
    assert total["VM"].shape[-1] == 0
