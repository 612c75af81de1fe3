"""Expressions of the plan tree (``plan.expr``) against DuckDB over the same files."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import bamql
from bamql.errors import PlanError


@pytest.mark.parametrize("cond", [
    "s IN (SELECT k FROM {u} WHERE false)", "s NOT IN (SELECT k FROM {u} WHERE false)",
    "t IN (SELECT k FROM {u} WHERE k > 100)", "k IN (SELECT w FROM {u} WHERE false)",
    "f NOT IN (SELECT w FROM {u} WHERE 1 = 0)", "e IN (SELECT k FROM {u} WHERE false)",
])
def test_in_an_empty_subquery_checks_the_types_as_duckdb(tmp_path: Path, cond: str):
    """``x IN (subquery)`` of no rows is false for every x, but the two sides' types must
    still agree: DuckDB refuses a string IN an empty list of integers. The tree answered 0
    (NOT IN: every row) without comparing the types (found by ``tests.sql.fuzz``)."""
    r, u = tmp_path / "r.parquet", tmp_path / "u.parquet"
    pq.write_table(pa.table({"k": [1, 2], "s": ["a", None], "f": [1.5, None],
                             "t": pa.array([1, None], pa.timestamp("us")),
                             "e": pa.array([None, None], pa.string())}), r)
    pq.write_table(pa.table({"k": [1, 5], "w": ["a", "b"]}), u)
    sql = f"SELECT COUNT(*) FROM '{r}' AS r WHERE {cond.format(u=repr(str(u)) + ' AS u')}"
    with pytest.raises(duckdb.BinderException):
        duckdb.sql(sql).fetchall()
    with bamql.connect(None, device="cpu") as con, pytest.raises(PlanError):
        con.sql(sql)


def test_in_an_empty_subquery_of_agreeing_types_answers_as_duckdb(tmp_path: Path):
    r, u = tmp_path / "r.parquet", tmp_path / "u.parquet"
    pq.write_table(pa.table({"k": [1, None, 3], "s": ["a", None, "b"]}), r)
    pq.write_table(pa.table({"k": [1, 5], "w": ["a", "b"]}), u)
    with bamql.connect(None, device="cpu") as con:
        for cond in ("k IN (SELECT k FROM {u} WHERE false)", "k NOT IN (SELECT k FROM {u} WHERE false)",
                     "s NOT IN (SELECT w FROM {u} WHERE w = 'z')", "k NOT IN (SELECT k FROM {u})"):
            sql = f"SELECT COUNT(*) FROM '{r}' AS r WHERE {cond.format(u=repr(str(u)) + ' AS u')}"
            assert con.sql(sql).rows() == duckdb.sql(sql).fetchall(), sql


@pytest.mark.parametrize(("p", "s"), [(31, 24), (38, 30), (20, 2)])
def test_a_wide_decimal_in_a_list_of_decimal_constants_compares_exactly(tmp_path: Path, p: int, s: int):
    """A DECIMAL of more than 18 digits (read by the plan tree) IN a list of decimal
    constants: the list was made one array of DOUBLEs, so a 23-digit constant equal to a
    value matched nothing (``d = c`` compared exactly; found by ``tests.sql.fuzz``)."""
    from decimal import Decimal, getcontext

    getcontext().prec = 60
    raw = [Decimal("0.012908601619813060575812"), Decimal("0.008943227837199461868187"),
           Decimal("1.5"), None]
    vals = [None if v is None else v.quantize(Decimal(1).scaleb(-s)) for v in raw]
    path = tmp_path / "d.parquet"
    pq.write_table(pa.table({"d": pa.array(vals, pa.decimal128(p, s))}), path)
    a, b, c = (format(v, "f") for v in vals[:3])
    with bamql.connect(None, device="cpu") as con:
        for items in (f"{a}, {b}", f"{a}, {b}, {c}", f"{a}, NULL", f"{b}", "1e17, 1.5", f"-{a}, 7"):
            for neg in ("", "NOT "):
                sql = f"SELECT COUNT(*) FROM '{path}' WHERE d {neg}IN ({items})"
                assert con.sql(sql).rows() == duckdb.sql(sql).fetchall(), sql


def test_an_integer_in_constants_not_all_integers_compares_each_exactly(tmp_path: Path):
    """The plan tree made ``i IN (-9223372036854775808, 0, 2.5)`` one list of DOUBLEs, so
    i = -9223372036854775807 matched: both round to -2**63 (found by ``tests.sql.fuzz``;
    the subquery sends the query to the tree)."""
    r, u = tmp_path / "r.parquet", tmp_path / "u.parquet"
    big = 2**63 - 1
    pq.write_table(pa.table({"i": pa.array([-big, big, 2, None, 0], pa.int64())}), r)
    pq.write_table(pa.table({"k": [1, 5]}), u)
    sub = f"(SELECT k FROM '{u}' AS u WHERE false)"
    with bamql.connect(None, device="cpu") as con:
        for items in ("-9223372036854775808, 0, 2.5", "9223372036854775807, 1e18, 2.5",
                      "-9223372036854775808, NULL, 2.5", "2, 2.0"):
            for neg in ("", "NOT "):
                sql = f"SELECT i FROM '{r}' AS r WHERE i {neg}IN ({items}) AND i NOT IN {sub} ORDER BY i"
                assert con.sql(sql).rows() == duckdb.sql(sql).fetchall(), sql


@pytest.mark.parametrize("q", [
    "SELECT x // 7 FROM {src}", "SELECT x // y FROM {src}", "SELECT y // x FROM {src}",
    "SELECT SUM(x // -7) FROM {src}",
])
def test_integer_division_of_a_hugeint_is_refused_not_a_double(tmp_path: Path, q: str):
    """A CSV's integers beyond BIGINT are DuckDB's HUGEINT, which ``//`` divides as integers
    (truncated); bamql holds them as DECIMAL(38,0), the type a DECIMAL(38,0) column has too,
    whose ``//`` DuckDB divides as DOUBLEs. It answered the DOUBLE (found by
    ``tests.sql.fuzz``); now either side of 38 digits is refused in one line."""
    path = tmp_path / "big.csv"
    path.write_text("x,y\n12345678901234567890123,1\n-12345678901234567890125,2\n7,3\n,5\n")
    sql = q.format(src=f"'{path}'")
    ref = duckdb.connect()
    ref.execute("SET error_on_division_by_zero = false")
    assert isinstance(ref.sql(sql).fetchall()[0][0], int | type(None))  # an integer in DuckDB
    with bamql.connect(None, device="cpu") as con, pytest.raises(PlanError) as e:
        con.sql(sql)
    assert "\n" not in str(e.value)


def test_integer_division_of_bigints_and_doubles_answers_as_duckdb(tmp_path: Path):
    path = tmp_path / "small.csv"
    path.write_text("x,y,f\n-7,2,2.5\n7,-2,0.5\n9,0,\n,3,1.0\n")
    ref = duckdb.connect()
    ref.execute("SET error_on_division_by_zero = false")
    with bamql.connect(None, device="cpu") as con:
        for q in ("SELECT x // y FROM {src}", "SELECT x // f FROM {src}",
                  "SELECT CAST(x AS DOUBLE) // 7 FROM {src}"):
            sql = q.format(src=f"'{path}'")
            assert con.sql(sql).rows() == ref.sql(sql).fetchall(), sql
