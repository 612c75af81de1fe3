"""bamql.api.dbapi against PEP 249 and against DuckDB's own DB-API cursor on the same data."""

from __future__ import annotations

import datetime

import duckdb
import pyarrow as pa
import pyarrow.csv as pacsv
import pytest

import bamql.api.dbapi as db
from tests.conftest import SAMPLES
from tests.reference import assert_same_rows, normalize

SQL = ("SELECT payment_type, COUNT(*) AS n, AVG(fare_amount) AS fare, MAX(pickup_datetime) AS last, "
       "MIN(store_and_fwd_flag) AS flag FROM trips WHERE passenger_count >= ? "
       "GROUP BY payment_type ORDER BY payment_type")


@pytest.fixture(scope="module")
def duck():
    c = duckdb.connect()
    c.register("trips", normalize(pa.concat_tables(pacsv.read_csv(p) for p in SAMPLES)))
    return c


@pytest.fixture
def con(sample_store):
    with db.connect(sample_store, device="cpu") as c:
        yield c


def test_module_globals():
    assert (db.apilevel, db.threadsafety, db.paramstyle) == ("2.0", 1, "qmark")
    for name in ("Date", "Time", "Timestamp", "DateFromTicks", "TimeFromTicks",
                 "TimestampFromTicks", "Binary", "STRING", "BINARY", "NUMBER", "DATETIME",
                 "ROWID"):
        assert hasattr(db, name), name
    assert db.Date(2019, 1, 2) == datetime.date(2019, 1, 2)
    assert db.Timestamp(2019, 1, 2, 3) == datetime.datetime(2019, 1, 2, 3)
    assert db.DateFromTicks(0) == datetime.date.fromtimestamp(0)
    assert db.Binary(bytearray(b"ab")) == b"ab"


def test_exception_hierarchy():
    assert issubclass(db.Warning, Exception) and issubclass(db.Error, Exception)
    assert issubclass(db.InterfaceError, db.Error) and issubclass(db.DatabaseError, db.Error)
    for cls in (db.DataError, db.OperationalError, db.IntegrityError, db.InternalError,
                db.ProgrammingError, db.NotSupportedError):
        assert issubclass(cls, db.DatabaseError), cls


def test_cursor_round_trip_matches_duckdb(con, duck):
    cur = con.cursor()
    assert cur.description is None and cur.rowcount == -1 and cur.arraysize == 1
    assert cur.execute(SQL, [2]) is cur
    assert cur.rowcount == len(duck.execute(SQL, [2]).fetchall())
    ref = duck.execute(SQL, [2])
    assert_same_rows([cur.fetchone()], [ref.fetchone()], ordered=True)
    assert_same_rows(cur.fetchmany(), ref.fetchmany(), ordered=True)  # arraysize rows
    cur.arraysize = 2
    assert_same_rows(cur.fetchmany(), ref.fetchmany(2), ordered=True)
    assert_same_rows(cur.fetchall(), ref.fetchall(), ordered=True)
    assert cur.fetchone() is None and cur.fetchall() == []


def test_description_names_and_types(con, duck):
    cur = con.execute(SQL, [1])
    ref = duck.execute(SQL, [1]).description
    assert [d[0] for d in cur.description] == [d[0] for d in ref]
    assert all(len(d) == 7 and d[2:] == (None,) * 5 for d in cur.description)
    codes = [d[1] for d in cur.description]
    assert codes == ["BIGINT", "BIGINT", "DOUBLE", "TIMESTAMP", "VARCHAR"]
    kinds = [db.NUMBER, db.NUMBER, db.NUMBER, db.DATETIME, db.STRING]
    assert all(c == k for c, k in zip(codes, kinds, strict=True))
    assert all(str(r[1]) == c for r, c in zip(ref, codes, strict=True) if str(r[1]) != "HUGEINT")
    assert codes[4] != db.NUMBER and codes[0] != db.STRING and codes[3] != db.BINARY


def test_iteration_parameters_and_executemany(con, duck):
    cur = con.cursor()
    sql = "SELECT COUNT(*) FROM trips WHERE pickup_location_id = ?"
    assert list(cur.execute(SQL, [1])) == cur.connection.session.sql(SQL, [1]).rows()
    cur.executemany(sql, [[236], [237]])
    assert cur.fetchall() == duck.execute(sql, [237]).fetchall()
    named = "SELECT COUNT(*) FROM trips WHERE store_and_fwd_flag = $f"
    assert cur.execute(named, {"f": "Y"}).fetchall() == duck.execute(named, {"f": "Y"}).fetchall()
    assert cur.fetch_arrow_table().num_rows == 1


def test_errors_are_pep_249_classes(con, sample_store, tmp_path):
    cur = con.cursor()
    with pytest.raises(db.ProgrammingError, match="no query has run"):
        cur.fetchone()
    with pytest.raises(db.ProgrammingError, match="unknown table 'nope'"):
        cur.execute("SELECT COUNT(*) FROM nope")
    with pytest.raises(db.ProgrammingError, match="a CTE that reads itself"):
        cur.execute("WITH RECURSIVE r AS (SELECT n FROM r UNION ALL SELECT 1 AS n) SELECT * FROM r")
    with pytest.raises(db.ProgrammingError, match="1 placeholder"):
        cur.execute("SELECT COUNT(*) FROM trips WHERE vendor_id = ?", [1, 2])
    with pytest.raises(db.ProgrammingError, match="SQL syntax error"):
        cur.execute("SELEC 1")
    with pytest.raises(db.OperationalError, match="does not exist"):
        db.connect(tmp_path / "missing")
    with pytest.raises(db.DatabaseError, match="device must be one of"):
        db.connect(sample_store, device="tpu")
    # a failed execute leaves no result behind
    with pytest.raises(db.Error):
        cur.execute("SELECT COUNT(*) FROM trips WHERE vendor_id = ?")
    cur.execute("SELECT COUNT(*) FROM trips")
    assert cur.fetchone()[0] == 20_000


def test_out_of_range_is_a_data_error(con):
    # the sum of 20,000 values near 2**62 overflows BIGINT arithmetic
    with pytest.raises(db.DataError, match="Out of Range"):
        con.execute("SELECT SUM(vendor_id * 4611686018427387904) * 4 FROM trips")


def test_commit_rollback_close(sample_store):
    con = db.connect(sample_store, device="cpu")
    con.commit()
    con.rollback()
    cur = con.cursor()
    cur.setinputsizes([None])
    cur.setoutputsize(10)
    cur.execute("SELECT COUNT(*) FROM trips")
    cur.close()
    with pytest.raises(db.InterfaceError, match="cursor is closed"):
        cur.fetchall()
    con.close()
    con.close()  # twice is fine
    with pytest.raises(db.InterfaceError, match="connection is closed"):
        con.cursor()
    with pytest.raises(db.InterfaceError):
        con.commit()
    with db.connect(sample_store, device="cpu") as c2:
        pass
    with pytest.raises(db.InterfaceError):
        c2.execute("SELECT COUNT(*) FROM trips")
