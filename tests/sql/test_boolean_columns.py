"""BOOLEAN columns (held as 0/1 integers) in conditions as DuckDB has them: a column as a
condition (WHERE b, NOT b, CASE WHEN b, FILTER (WHERE b)), compared with TRUE and FALSE
(FALSE < TRUE), IN lists of them, and IS [NOT] TRUE / FALSE of any condition (never NULL),
in a stored table and in a file read in place, through the fused kernels and the plan tree."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import bamql
from bamql.storage.ingest import ingest

TABLE = pa.table({"b": pa.array([True, False, None, True, False, None], pa.bool_()),
                  "k": [1, 2, 3, 4, 5, 6], "x": [1.5, 2.5, None, 4.0, -1.0, 3.0]})
QUERIES = [
    "SELECT k FROM t WHERE b ORDER BY k",
    "SELECT k FROM t WHERE NOT b ORDER BY k",
    "SELECT COUNT(*) FROM t WHERE b < true",
    "SELECT COUNT(*) FROM t WHERE true = b",
    "SELECT COUNT(*) FROM t WHERE b <> false",
    "SELECT COUNT(*) FROM t WHERE b BETWEEN false AND true",
    "SELECT k FROM t WHERE b IN (false, true) ORDER BY k",
    "SELECT k FROM t WHERE b NOT IN (true, NULL) ORDER BY k",
    "SELECT COUNT(*) FROM t WHERE b IS TRUE",
    "SELECT COUNT(*) FROM t WHERE b IS NOT TRUE",
    "SELECT COUNT(*) FROM t WHERE b IS FALSE",
    "SELECT COUNT(*) FROM t WHERE b IS NOT FALSE",
    "SELECT COUNT(*) FROM t WHERE (x > 2) IS NOT FALSE",
    "SELECT COUNT(*) FROM t WHERE NULL IS NOT TRUE",
    "SELECT k FROM t WHERE b OR x < 0 ORDER BY k",
    "SELECT SUM(x), COUNT(*) FILTER (WHERE b) FROM t WHERE b >= false",
    "SELECT CASE WHEN b THEN 1 ELSE 0 END AS c, k FROM t ORDER BY k",
    "SELECT b, COUNT(*) FROM t GROUP BY b ORDER BY b",
    # the plan tree
    "SELECT k, b IS TRUE AS bt, ROW_NUMBER() OVER (ORDER BY k) AS r FROM t ORDER BY k",
    "SELECT k FROM (SELECT * FROM t) s WHERE b IS NOT FALSE ORDER BY k",
    "SELECT k FROM t WHERE k IN (SELECT k FROM t WHERE b IS TRUE) ORDER BY k",
]


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    d = tmp_path_factory.mktemp("bools")
    pq.write_table(TABLE, d / "t.parquet")
    ingest([str(d / "t.parquet")], d / "db" / "t")
    return d


@pytest.mark.parametrize("where", ["store", "file"])
@pytest.mark.parametrize("sql", QUERIES)
def test_boolean_conditions_as_duckdb(sources, where, sql):
    duck = duckdb.connect()
    duck.register("t", TABLE)
    want = duck.sql(sql).fetchall()
    if where == "store":
        with bamql.connect(sources / "db", device="cpu") as con:
            got = con.sql(sql).rows()
    else:
        with bamql.connect(device="cpu") as con:
            got = con.sql(sql.replace("FROM t", f"FROM '{sources}/t.parquet'")).rows()
    assert got == want, sql
