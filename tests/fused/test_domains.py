"""Dense group-key domains (``fused.domains``): what the fused kernel groups by."""

from __future__ import annotations

from bamql.fused import domains, ir
from bamql.fused.domains import Domain
from bamql.storage.format import ColumnMeta


def _col(name, kind, lo=None, hi=None, scale=0, dictionary=None) -> ColumnMeta:
    return ColumnMeta(name=name, kind=kind, dtype="int64", first_page=0, n_pages=1,
                      rows_per_page=64, min=lo, max=hi, scale=scale, dictionary=dictionary,
                      decimal=False if kind == "float" else None)


COLS = {
    "p": _col("p", "int", 0, 9),
    "ts": _col("ts", "timestamp", 1_546_300_800_000_000, 1_609_459_199_000_000),  # 2019..2020
    "d": _col("d", "float", -3.25, 41.5, scale=2),
    "f": _col("f", "float", 0.0, 10.0),  # a plain double: it may hold NaN
    "s": _col("s", "string", 0, 1, dictionary=("N", "Y")),
    "none": _col("none", "int"),
}


def test_columns_and_calendar_fields():
    assert domains.key_domain(ir.Col("p", "int"), COLS) == Domain(0, 10)
    assert domains.key_domain(ir.Col("s", "string"), COLS) == Domain(0, 2)
    assert domains.key_domain(ir.Col("none", "int"), COLS) == Domain(0, 1)
    year = ir.Extract("year", ir.Col("ts", "timestamp"))
    assert domains.key_domain(year, COLS) == Domain(2019, 2)
    iso = ir.Extract("isoyear", ir.Col("ts", "timestamp"))
    assert domains.key_domain(iso, COLS) == Domain(2018, 4)
    assert domains.key_domain(ir.Extract("hour", ir.Col("ts", "timestamp")), COLS) == Domain(0, 24)


def test_rounded_decimals_and_integer_arithmetic():
    r = ir.Math(ir.MathFunc.ROUND, ir.Col("d", "float"), "float")
    assert domains.key_domain(r, COLS) == Domain(-5, 49)  # one beyond each end of [-3.25, 41.5]
    cast = ir.Cast(ir.Col("d", "float"), ir.CastTo.INTEGER, "int")
    assert domains.key_domain(cast, COLS) == Domain(-5, 49)
    plus = ir.Arith("+", ir.Col("p", "int"), ir.Lit(10, "int"), "int")
    assert domains.key_domain(plus, COLS) == Domain(10, 10)
    times = ir.Arith("*", ir.Lit(-2, "int"), ir.Col("p", "int"), "int")
    assert domains.key_domain(times, COLS) == Domain(-18, 19)
    gap = ir.Math(ir.MathFunc.ABS, ir.Arith("-", ir.Col("p", "int"), ir.Lit(4, "int"), "int"), "int")
    assert domains.key_domain(gap, COLS) == Domain(0, 6)


def test_keys_without_a_dense_range():
    assert domains.key_domain(ir.Col("f", "float"), COLS) is None
    assert domains.key_domain(ir.Math(ir.MathFunc.ROUND, ir.Col("f", "float"), "float"), COLS) is None
    assert domains.key_domain(ir.Math(ir.MathFunc.ROUND, ir.Col("d", "float"), "float", 1), COLS) is None
    assert domains.key_domain(ir.Col("ts", "timestamp"), COLS) is None
    sq = ir.Arith("*", ir.Col("p", "int"), ir.Col("p", "int"), "int")
    assert domains.key_domain(sq, COLS) is None
    assert domains.slots([ir.Col("p", "int"), ir.Col("f", "float")], COLS) is None
    assert domains.slots([ir.Col("p", "int"), ir.Col("s", "string")], COLS) == 11 * 3


def test_date_trunc_buckets_and_their_values():
    ts = ir.Col("ts", "timestamp")
    day = domains.key_domain(ir.Trunc(ir.TruncUnit.DAY, ts), COLS)
    assert day.size == 731 and day.unit == ir.TruncUnit.DAY  # 2019 and 2020 (a leap year)
    month = domains.key_domain(ir.Trunc(ir.TruncUnit.MONTH, ts), COLS)
    assert (month.base, month.size) == (2019 * 12, 24)
    import numpy as np

    us = np.array([1_546_300_800_000_000, 1_583_020_800_000_000], np.int64)  # 2019-01-01, 2020-03-01
    for unit in ir.TruncUnit:
        d = domains.Domain(0, 1, unit)
        # a bucket's value is its first microsecond, whose bucket is itself
        assert list(d.bucket(d.value(d.bucket(us)))) == list(d.bucket(us))
    week = domains.Domain(0, 1, ir.TruncUnit.WEEK)
    assert np.datetime64(int(week.value(week.bucket(us))[1]), "us").item().weekday() == 0  # Monday
    cond = ir.Cmp(">", ir.Col("p", "int"), ir.Lit(3, "int"))
    assert domains.key_domain(cond, COLS) == Domain(0, 2)
