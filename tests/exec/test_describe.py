"""SHOW TABLES and DESCRIBE through a session, against DuckDB's answers on the same
tables."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pytest

import bamql
from bamql.errors import PlanError
from bamql.exec.describe import duckdb_type

D = pa.table({"k": pa.array([1, None], pa.int64()), "s": pa.array([None, "é"]),
              "f": pa.array([0.5, None]), "ts": pa.array([0, None], pa.timestamp("us"))})


@pytest.fixture
def con(taxi_store):
    with bamql.connect(taxi_store, device="cpu") as c:
        c.register("d", D)
        yield c


def _rows(res) -> list[tuple]:
    return [tuple(r.values()) for r in res.to_arrow().to_pylist()]


def test_show_tables_lists_stored_and_registered_tables(con):
    res = con.sql("SHOW TABLES")
    assert res.to_arrow().column_names == ["name"]
    assert _rows(res) == [("d",), ("trips",), ("zones",)]


def test_show_all_tables_as_duckdb_does(con):
    ref = duckdb.connect()
    ref.register("d", D)
    want = ref.execute("SHOW ALL TABLES")
    res = con.sql("SHOW ALL TABLES;")
    assert res.to_arrow().column_names == [c[0] for c in want.description]
    rows = {r[2]: r for r in _rows(res)}
    assert rows["d"] == want.fetchall()[0]  # a registered table: temporary, as in DuckDB
    trips = rows["trips"]
    schema = con.schema("trips")
    assert trips[1:] == ("main", "trips", schema.names, [duckdb_type(f.type) for f in schema], False)
    assert sorted(rows) == ["d", "trips", "zones"]


def test_describe_a_registered_table_as_duckdb_does(con):
    ref = duckdb.connect()
    ref.register("d", D)
    want = ref.execute("DESCRIBE d")
    for text in ("DESCRIBE d", "DESC D", "SHOW d", "SHOW COLUMNS FROM d;"):
        res = con.sql(text)
        assert res.to_arrow().column_names == [c[0] for c in want.description]
        assert _rows(res) == ref.execute("DESCRIBE d").fetchall()


def test_describe_a_stored_table_names_every_column_with_its_type(con):
    rows = _rows(con.sql("DESCRIBE trips"))
    schema = con.schema("trips")
    assert [r[0] for r in rows] == schema.names
    assert [r[1] for r in rows] == [duckdb_type(f.type) for f in schema]
    assert {r[1] for r in rows} <= {"BIGINT", "DOUBLE", "FLOAT", "VARCHAR", "TIMESTAMP"}


def test_describe_a_query_gives_its_result_columns(con):
    sql = "SELECT store_and_fwd_flag AS flag, COUNT(*) AS n, AVG(trip_distance) AS a FROM trips GROUP BY 1"
    rows = _rows(con.sql(f"DESCRIBE {sql}"))
    assert [r[:3] for r in rows] == [("flag", "VARCHAR", "YES"), ("n", "BIGINT", "YES"),
                                    ("a", "DOUBLE", "YES")]


def test_duckdb_type_names():
    ref = duckdb.connect()
    for t in (pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.float32(), pa.float64(),
              pa.string(), pa.bool_(), pa.timestamp("us"), pa.decimal128(12, 2), pa.date32()):
        ref.register("x", pa.table({"c": pa.array([], t)}))
        assert duckdb_type(t) == ref.execute("DESCRIBE x").fetchall()[0][1], t


def test_describe_an_unknown_table_is_one_line(con):
    with pytest.raises(PlanError, match=r"unknown table 'nope' \(tables: d, trips, zones\)"):
        con.sql("DESCRIBE nope")
