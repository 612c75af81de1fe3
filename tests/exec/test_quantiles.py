"""Exact quantiles beside the kernel (``exec.quantiles``) as DuckDB's: equal neighbours
are the answer as they are (two infinities, two -0.0s), not an interpolation between them."""

from __future__ import annotations

import math
from fractions import Fraction

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import bamql
from bamql.storage.ingest import ingest

TABLE = pa.table({"g": [1, 1, 2, 2, 3, 3, 3, 4],
                  "f": [-math.inf, -math.inf, -0.0, -0.0, math.inf, math.inf, 1.0, None]})


@pytest.mark.parametrize("sql", [
    "SELECT g, MEDIAN(f) FROM r GROUP BY g ORDER BY g",
    "SELECT g, quantile_cont(f, 0.25), quantile_disc(f, 0.5) FROM r GROUP BY g ORDER BY g",
    "SELECT MEDIAN(f) FROM r WHERE g = 2",
])
def test_equal_neighbours_as_duckdb(tmp_path, sql):
    pq.write_table(TABLE, tmp_path / "r.parquet")
    ingest([str(tmp_path / "r.parquet")], tmp_path / "db" / "r")
    duck = duckdb.connect()
    duck.register("r", TABLE)
    with bamql.connect(tmp_path / "db", device="cpu") as con:
        got = con.sql(sql).rows()
    # repr tells -0.0 from 0.0 and keeps infinities apart
    assert [tuple(map(repr, r)) for r in got] == [tuple(map(repr, r)) for r in duck.sql(sql).fetchall()]


@pytest.mark.parametrize("groups", [1, 7, 300, 5000, 70000])
@pytest.mark.parametrize("func", ["quantile_cont", "quantile_disc"])
def test_each_groups_order_statistics_as_a_full_sort(groups, func):
    """Few groups select each group's order statistics by a partial sort of its values,
    many groups (or slots past 16 bits) sort every value: both as a sort of each group."""
    import numpy as np

    from bamql.exec.quantiles import _quantile
    from bamql.fused import ir
    rng = np.random.default_rng(groups)
    n = 20_000
    slot = rng.integers(0, groups, n).astype(np.int64) * (3 if groups == 70000 else 1)
    v = rng.normal(size=n).round(1)
    v[rng.random(n) < 0.05] = np.nan
    v[rng.random(n) < 0.05] = -0.0
    agg = ir.Agg(func, ir.Col("x", "float"), "float", param=0.3)
    present = np.unique(slot)
    got, has = _quantile(slot, v, agg, present)
    assert has.all()
    for i, g in enumerate(present[:: max(1, len(present) // 200)]):
        x = np.sort(v[slot == g])  # NaN last, as DuckDB orders it
        j = int(np.searchsorted(present, g))
        if func == "quantile_disc":
            want = x[max(math.ceil(len(x) * 0.3), 1) - 1]
        else:
            pos = 0.3 * (len(x) - 1)
            lo, hi = math.floor(pos), math.ceil(pos)
            d = pos - lo  # DuckDB's lo * (1 - d) + hi * d, its last multiply-add fused
            want = x[lo] if d == 0 else math.nan if np.isnan(x[lo]) or np.isnan(x[hi]) else \
                float(Fraction(float(x[lo])) * Fraction(1.0 - d) + Fraction(float(x[hi] * d)))
        # 0.0 and -0.0 are equal values: which of them a sort puts first is its own choice
        assert got[j] == want or (math.isnan(got[j]) and math.isnan(want)), (g, i)


def test_an_infinite_neighbour_is_weighed_as_duckdb(tmp_path):
    """-inf beside a number interpolates to -inf (DuckDB's lo * (1 - d) + hi * d), not to
    -inf + inf = NaN; -inf beside +inf is NaN in both."""
    inf = math.inf
    t = pa.table({"g": [1, 1, 1, 2, 2, 3, 3, 4, 4, 4],
                  "f": [-inf, 27.0, inf, 1.0, inf, -inf, inf, -inf, -inf, 5.0]})
    pq.write_table(t, tmp_path / "r.parquet")
    ingest([str(tmp_path / "r.parquet")], tmp_path / "db" / "r")
    sql = ("SELECT g, quantile_cont(f, 0.25), MEDIAN(f), quantile_cont(f, 0.75) FROM r "
           "GROUP BY g ORDER BY g")
    duck = duckdb.connect()
    duck.register("r", t)
    with bamql.connect(tmp_path / "db", device="cpu") as con:
        got = con.sql(sql).rows()
    assert [tuple(map(repr, r)) for r in got] == [tuple(map(repr, r)) for r in duck.sql(sql).fetchall()]


def _decimals(precision: int) -> pa.Table:
    """Negative and positive DECIMALs whose interpolations fall between the integers, with
    NULLs, in groups of one, two and many values (a DECIMAL(38) also past 64 bits)."""
    from decimal import Decimal

    import numpy as np

    rng = np.random.default_rng(precision)
    vals = [None if i % 13 == 0 else Decimal(int(rng.integers(-10**5, 10**5))) / 100
            for i in range(300)]
    vals[:3] = [Decimal("-1.01"), Decimal("-1.06"), Decimal("1.01")]
    g = [1, 1, 2] + [3 + i % 5 for i in range(297)]
    if precision == 38:
        vals[3:6] = [Decimal("-" + "9" * 30 + ".01"), Decimal("9" * 30 + ".02"),
                     Decimal("9" * 30 + ".07")]
    return pa.table({"g": g, "x": pa.array(vals, pa.decimal128(precision, 2))})


@pytest.mark.parametrize("precision", [
    pytest.param(10, marks=pytest.mark.slow), 18, pytest.param(20, marks=pytest.mark.slow), 38])
@pytest.mark.parametrize("sql", [
    "SELECT g, MEDIAN(x), quantile_cont(x, 0.37), quantile_disc(x, 0.61) FROM r "
    "GROUP BY g ORDER BY g",
    "SELECT MEDIAN(x), quantile_cont(x, 0.9) FROM r WHERE x < 0",
    # the plan tree's aggregate (over a window's output), ascending and descending
    "SELECT g, MEDIAN(x), quantile_cont(x, [0.25, 0.75]) FROM "
    "(SELECT g, x, row_number() OVER (ORDER BY x) AS n FROM r) WHERE n % 4 <> 0 "
    "GROUP BY g ORDER BY g",
    "SELECT percentile_cont(0.3) WITHIN GROUP (ORDER BY x DESC) FROM "
    "(SELECT g, x, row_number() OVER () AS n FROM r) WHERE g < 3",
])
def test_a_decimals_quantile_is_that_decimal_as_duckdbs(precision, sql):
    """DuckDB keeps a DECIMAL's continuous quantile a DECIMAL of its type, interpolated in
    its integers and cut toward zero (from the double lo + (hi - lo) * d up to 18 digits,
    exactly past them): bamql answers the same type and the same digits."""
    t = _decimals(precision)
    duck = duckdb.connect()
    duck.register("r", t)
    want = duck.sql(sql).arrow().read_all()
    with bamql.connect(device="cpu") as con:
        con.register("r", t)
        got = con.sql(sql).arrow()
    assert got.schema.types == want.schema.types
    assert [list(r.values()) for r in got.to_pylist()] == \
        [list(r.values()) for r in want.to_pylist()]


@pytest.mark.parametrize("func", ["quantile_cont", "quantile_disc"])
@pytest.mark.parametrize("q", [0.0, 0.3, 0.5, 0.97, 1.0])
def test_counts_of_distinct_values_give_each_groups_quantile(func, q):
    """A quantile from (group, value, rows) triples is the quantile of the rows they stand
    for (``counted_quantile`` against ``_quantile`` over the rows themselves)."""
    import numpy as np

    from bamql.exec.quantiles import _quantile, counted_quantile
    from bamql.fused import ir
    rng = np.random.default_rng(int(q * 100))
    n = 30_000
    slot = rng.integers(0, 40, n).astype(np.int64)
    v = rng.integers(-50, 50, n).astype(np.float64) / 4
    agg = ir.Agg(func, ir.Col("x", "float"), "float", param=q)
    present = np.arange(-1, 42, dtype=np.int64)  # groups without values among them
    pairs, rows = np.unique(np.stack([slot, v.view(np.int64)]), axis=1, return_counts=True)
    got = counted_quantile(pairs[0], pairs[1].view(np.float64), rows, agg, present)
    want = _quantile(slot, v, agg, present)
    np.testing.assert_array_equal(got[1], want[1])
    np.testing.assert_array_equal(got[0][got[1]], want[0][want[1]])


COUNTED = [
    "SELECT g, MEDIAN(i), quantile_cont(f, 0.37), quantile_disc(d, 0.61), MEDIAN(d) FROM r "
    "GROUP BY g ORDER BY g",
    "SELECT MEDIAN(f), quantile_disc(i, 0.1), COUNT(*) FROM r WHERE i > 3",
    "SELECT g, quantile_cont(i, 0.25) FILTER (WHERE f < 0), MIN(i), MEDIAN(i) FROM r "
    "GROUP BY g HAVING COUNT(*) > 1 ORDER BY 1",
    "SELECT g, MEDIAN(f) FROM r WHERE i IS NULL GROUP BY g ORDER BY g",
    "SELECT MEDIAN(f) FROM r WHERE i > 1000",
    # every aggregate a quantile: the counts alone, a group whose values are all NULL kept
    "SELECT g, MEDIAN(h), quantile_disc(h, 0.9), quantile_cont(i, 0.2) FROM r GROUP BY g "
    "ORDER BY g",
    "SELECT MEDIAN(h) FROM r WHERE g = 2",
]


def counted_table(n: int = 5000) -> pa.Table:
    """Integers, scaled floats and DECIMALs with NULLs, in 6 groups and a NULL one; ``h`` is
    NULL throughout group 2."""
    from decimal import Decimal

    import numpy as np

    rng = np.random.default_rng(3)
    nulls = rng.random(n) < 0.1
    g = rng.integers(0, 6, n)
    t = pa.table({
        "g": pa.array(g, mask=rng.random(n) < 0.05),
        "h": pa.array(rng.integers(0, 9, n), mask=g == 2),
        "i": pa.array(rng.integers(-20, 300, n), mask=nulls),
        "f": pa.array(rng.integers(-999, 999, n) / 10, mask=rng.random(n) < 0.1),
        "d": pa.array([Decimal(int(x)) / 100 for x in rng.integers(-10**4, 10**4, n)],
                      pa.decimal128(12, 2), mask=rng.random(n) < 0.1)})
    return t


@pytest.mark.parametrize("sql", COUNTED)
def test_quantiles_of_few_values_are_counted_as_duckdb(tmp_path, sql):
    """A quantile of a column whose type and range bound its values (an integer, a float
    stored as scaled integers, a DECIMAL) is taken from the rows of each value of each
    group (a GROUP BY in the kernel): the same answers as DuckDB, NULL keys, NULL values,
    FILTERs, empty groups and no matching row included."""
    t = counted_table()
    pq.write_table(t, tmp_path / "r.parquet")
    ingest([str(tmp_path / "r.parquet")], tmp_path / "db" / "r")
    duck = duckdb.connect()
    duck.register("r", t)
    want = duck.sql(sql).arrow().read_all()
    with bamql.connect(tmp_path / "db", device="cpu") as con:
        plan = con.explain(sql)
        assert "each distinct value of each group" in plan
        # the counts alone where every aggregate is a quantile without FILTER
        assert ("in place of the plan above" in plan) == (sql not in COUNTED[1:3])
        got = con.sql(sql).arrow()
    assert got.schema.types == want.schema.types
    assert got.to_pylist() == [dict(zip(got.column_names, r.values(), strict=True))
                               for r in want.to_pylist()]
