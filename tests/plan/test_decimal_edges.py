"""DECIMAL edges of the plan tree's Arrow operators against DuckDB, values and Arrow types:
window SUM/AVG past 28 digits, CAST of a DECIMAL to an integer or a DECIMAL, ``%`` of
DECIMALs, ROUND and CAST of decimal constants of 28 digits or more. Each was rounded by
Python's 28-digit Decimal context or a DOUBLE, or failed with an internal error."""

from __future__ import annotations

from decimal import Decimal

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import bamql
from bamql.errors import BamqlError, OutOfRangeError
from bamql.storage.ingest import ingest

R1 = pa.table({"k": pa.array([1, 2, 3], pa.int64()),
               "d": pa.array([Decimal("12345678901234567890123.45"),
                              Decimal("-99999999999999999999999999999999999.99"), None],
                             pa.decimal128(37, 2))})
R2 = pa.table({"d": pa.array([Decimal("9007199254740993.0"), Decimal("123456789012345678901.5"),
                              Decimal("-2.5"), None], pa.decimal128(38, 1))})
NARROW = pa.table({"d": pa.array([Decimal("12.5"), Decimal("-7.25"), Decimal("2.5"), None],
                                 pa.decimal128(9, 2)),
                   "k": pa.array([1, 2, 3, 4], pa.int64())})
TABLES = {"r1": R1, "r2": R2, "n": NARROW}


@pytest.fixture(scope="module")
def src(tmp_path_factory):
    d = tmp_path_factory.mktemp("decedges")
    for name, t in TABLES.items():
        pq.write_table(t, d / f"{name}.parquet")
        ingest([d / f"{name}.parquet"], d / "data" / name)
    return d


def _duck(sql: str) -> pa.Table:
    con = duckdb.connect()
    for name, t in TABLES.items():
        con.register(name, t)
    return con.sql(sql).to_arrow_table()


def _ours(src, how: str, sql: str) -> pa.Table:
    if how == "store":
        with bamql.connect(src / "data", device="cpu") as con:
            return con.sql(sql).to_arrow()
    for name in TABLES:
        f = f"'{src / (name + '.parquet')}'"
        rel = f if how == "file" else f"(SELECT * FROM {f})"
        sql = sql.replace(f"FROM {name} ", f"FROM {rel} AS {name} ")
    with bamql.connect(":memory:") as con:
        return con.sql(sql).to_arrow()


def _same(ours: pa.Table, ref: pa.Table) -> None:
    assert ours.schema.types == ref.schema.types, (ours.schema, ref.schema)
    assert [tuple(r.values()) for r in ours.to_pylist()] == \
        [tuple(r.values()) for r in ref.to_pylist()]


QUERIES = [
    # 1. window SUM/AVG of a DECIMAL(37, 2): exact, DECIMAL(38, 2) and DOUBLE
    "SELECT k, SUM(d) OVER (ORDER BY k) AS s FROM r1 ORDER BY k",
    "SELECT k, SUM(d) OVER (PARTITION BY k) AS s FROM r1 ORDER BY k",
    "SELECT k, SUM(d) OVER () AS s, AVG(d) OVER () AS a FROM r1 ORDER BY k",
    "SELECT k, AVG(d) OVER (ORDER BY k) AS a FROM r1 ORDER BY k",
    "SELECT k, SUM(d) OVER (ORDER BY k ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) AS s "
    "FROM r1 ORDER BY k",
    "SELECT k, SUM(d) OVER (ORDER BY k) AS s, AVG(d) OVER (ORDER BY k) AS a FROM n ORDER BY k",
    # 2. CAST of a DECIMAL to an integer or a DECIMAL: rounded half away from zero, exactly
    "SELECT CAST(d AS BIGINT) AS c FROM r2 WHERE d < 1e17 ORDER BY c",
    "SELECT CAST(d AS DECIMAL(38,0)) AS c FROM r2 ORDER BY c",
    "SELECT CAST(d AS DECIMAL(30,2)) AS c FROM r2 ORDER BY c",
    "SELECT TRY_CAST(d AS BIGINT) AS c FROM r2 ORDER BY d",
    "SELECT CAST(d AS INTEGER) AS c, CAST(d AS DECIMAL(4,1)) AS e FROM n ORDER BY k",
    # 3. DECIMAL % : truncated remainder in DuckDB's common DECIMAL type (past 38: DOUBLE)
    "SELECT d % 7 AS m FROM r2 ORDER BY d",
    "SELECT d % (-7) AS m, -d % 7 AS n FROM r2 ORDER BY d",
    "SELECT d % 2.25 AS m FROM r2 ORDER BY d",
    "SELECT d % 7 AS m, d % 2.5 AS p, d % k AS q, 7 % d AS r FROM n ORDER BY k",
    # 4. ROUND and CAST of decimal constants of 28 digits or more
    "SELECT ROUND(1234567890123456789012345678.55, 1) AS r FROM (SELECT 1)",
    "SELECT ROUND(-1234567890123456789012345678.55, 1) AS r, ROUND(2.5) AS s, "
    "ROUND(-0.05, 1) AS t, ROUND(1234.5, -2) AS u FROM (SELECT 1)",
    "SELECT CAST(1234567890123456789012345678.55 AS DECIMAL(38,1)) AS r, "
    "CAST(12345678901234567.55 AS BIGINT) AS s, CAST(-2.5 AS INTEGER) AS t FROM (SELECT 1)",
]


@pytest.mark.parametrize("how", ["store", "file", "subquery"])
@pytest.mark.parametrize("sql", QUERIES)
def test_decimal_edges_answer_as_duckdb(src, how, sql):
    if how != "store" and "FROM (SELECT 1)" in sql:
        pytest.skip("no table")
    _same(_ours(src, how, sql), _duck(sql))


@pytest.mark.parametrize("sql", [
    "SELECT CAST(d AS BIGINT) FROM r2",
    "SELECT CAST(d AS DECIMAL(20,0)) FROM r2",
    "SELECT CAST(1234567890123456789012345678.55 AS BIGINT) FROM (SELECT 1)",
])
def test_a_decimal_cast_out_of_range_is_a_conversion_error(src, sql):
    with pytest.raises(duckdb.ConversionException):
        _duck(sql)
    with pytest.raises(OutOfRangeError) as e:
        _ours(src, "store", sql)
    assert "\n" not in str(e.value) and "Conversion Error" in str(e.value)


def test_a_window_sum_past_38_digits_is_an_overflow_error(tmp_path):
    t = pa.table({"k": [1, 2], "d": pa.array([Decimal("9" * 36 + ".99")] * 2,
                                             pa.decimal128(38, 2))})
    pq.write_table(t, tmp_path / "o.parquet")
    with bamql.connect(":memory:") as con, pytest.raises(BamqlError) as e:
        con.sql(f"SELECT SUM(d) OVER (ORDER BY k) FROM '{tmp_path / 'o.parquet'}'")
    assert "\n" not in str(e.value) and "Overflow" in str(e.value)
