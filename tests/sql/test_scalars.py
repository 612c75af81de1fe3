"""The host evaluator's scalar functions against DuckDB on edge values: calendar fields and
date_trunc over four centuries of days, ROUND's ties, CAST's half-to-even and its range."""

from __future__ import annotations

import datetime as dt

import duckdb
import numpy as np
import pytest

from bamql.errors import OutOfRangeError
from bamql.fused import ir
from bamql.fused.evaluate import evaluate, extract_np, trunc_np

DAY_US = 86_400_000_000


def test_calendar_fields_match_python_dates_over_four_centuries():
    days = np.arange(-150_000, 150_000, 7, dtype=np.int64) + 3  # 1559 .. 2380, every weekday
    us = days * DAY_US + 3_723_000_000  # 01:02:03
    dates = [dt.date(1970, 1, 1) + dt.timedelta(days=int(x)) for x in days]
    iso = [d.isocalendar() for d in dates]
    want = {"year": [d.year for d in dates], "month": [d.month for d in dates],
            "day": [d.day for d in dates], "doy": [d.timetuple().tm_yday for d in dates],
            "quarter": [(d.month - 1) // 3 + 1 for d in dates], "week": [i[1] for i in iso],
            "isoyear": [i[0] for i in iso], "isodow": [i[2] for i in iso],
            "dow": [i[2] % 7 for i in iso], "second": [3] * len(dates)}
    for part, values in want.items():
        assert extract_np(part, us).tolist() == values, part
    starts = {"year": [dt.date(d.year, 1, 1) for d in dates],
              "month": [dt.date(d.year, d.month, 1) for d in dates],
              "quarter": [dt.date(d.year, (d.month - 1) // 3 * 3 + 1, 1) for d in dates],
              "week": [d - dt.timedelta(days=d.weekday()) for d in dates]}
    for unit, values in starts.items():
        got = trunc_np(unit, us) // DAY_US
        assert got.tolist() == [(v - dt.date(1970, 1, 1)).days for v in values], unit
    assert (trunc_np("day", us) == days * DAY_US).all()


def _eval(e: ir.Expr, values: list) -> list:
    v = np.array(values, dtype=np.float64)
    out, ok = evaluate(e, {"x": (v, np.ones(len(v), bool))}, len(v))
    return out.tolist()


EDGES = [0.15, 0.25, 0.35, 0.45, 1.005, 2.675, -1.25, -0.15, 2.5, -2.5, 0.5, -0.5, 1.5, 3.5,
         -0.0, -0.04, 123456789.125, 1e300, -1e17, 0.49999999999999994]


@pytest.mark.parametrize("digits", [0, 1, 2, 3])
def test_round_matches_duckdb_on_ties(digits):
    x = ir.Col("x", "float")
    ours = _eval(ir.Math(ir.MathFunc.ROUND, x, "float", digits), EDGES)
    con = duckdb.connect()
    ref = [con.sql(f"SELECT round({v!r}::DOUBLE, {digits})").fetchall()[0][0] for v in EDGES]
    assert [str(a) for a in ours] == [str(b) for b in ref]  # -0.0 too


def test_cast_to_integer_rounds_half_to_even_and_checks_its_range():
    x = ir.Col("x", "float")
    vals = [2.5, -2.5, 3.5, 0.5, -0.5, 2147483647.4, -2147483648.5]
    ours = _eval(ir.Cast(x, ir.CastTo.INTEGER, "int"), vals)
    con = duckdb.connect()
    assert ours == [con.sql(f"SELECT CAST({v!r}::DOUBLE AS INTEGER)").fetchall()[0][0] for v in vals]
    for bad, to in ((2147483647.5, ir.CastTo.INTEGER), (float("nan"), ir.CastTo.BIGINT),
                    (9.3e18, ir.CastTo.BIGINT)):
        with pytest.raises(OutOfRangeError, match="INT"):
            _eval(ir.Cast(x, to, "int"), [bad])


def test_case_evaluates_a_branch_only_on_the_rows_that_take_it():
    big = ir.Col("b", "int")
    v = np.array([2**62 + 5, 3], dtype=np.int64)
    env = {"b": (v, np.ones(2, bool))}
    times = ir.Arith("*", big, ir.Lit(4, "int"), "int")
    e = ir.Case(((ir.Cmp("<", big, ir.Lit(100, "int")), times),), ir.Lit(0, "int"), "int")
    out, ok = evaluate(e, env, 2)
    assert out.tolist() == [0, 12] and ok.all()
    with pytest.raises(OutOfRangeError):
        evaluate(times, env, 2)


def test_a_cast_null_is_a_null_of_the_type_as_in_duckdb(session):
    import pyarrow as pa

    t = pa.table({"a": [1, 2, None, 4], "b": [1.5, None, 2.5, 3.5]})
    session.register("t", t)
    con = duckdb.connect()
    con.register("t", t)
    for sql in ("SELECT CAST(NULL AS DOUBLE) AS x", "SELECT NULL::BIGINT AS x",
                "SELECT a + NULL::DOUBLE AS x FROM t",
                "SELECT SUM(NULL::BIGINT) AS s, COUNT(NULL::DOUBLE) AS c, MAX(a) + NULL::INTEGER AS m "
                "FROM t",
                "SELECT COUNT(*) AS n FROM t WHERE a > NULL::INTEGER OR b IS NULL"):
        got = session.sql(sql).table
        want = con.sql(sql).to_arrow_table()
        assert got.to_pylist() == want.to_pylist(), sql
        assert got.schema.types == want.schema.types, sql
