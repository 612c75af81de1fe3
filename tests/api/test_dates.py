"""DATE columns (issue 41): a Parquet, ORC or CSV date read in place, ingested into a store
or registered (``date32``, ``date64``) is a DATE, held as its midnight's microseconds (as the
TIMESTAMP DuckDB promotes it to) and returned as ``date32``: every answer and result type as
DuckDB's, DESCRIBE says DATE. Each query ran through a DATE refusal before."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.orc as orc
import pyarrow.parquet as pq
import pytest

from bamql.api.session import Session
from bamql.errors import PlanError
from bamql.storage.ingest import ingest
from tests.reference import assert_same_rows, duck_tables

DAYS = [dt.date(2019, 1, 5), None, dt.date(1969, 12, 31), dt.date(2019, 1, 1), dt.date(2024, 2, 29),
        dt.date(1900, 3, 1), dt.date(2019, 1, 5), None, dt.date(2100, 12, 31), dt.date(1970, 1, 1)]
STAMPS = [dt.datetime(2019, 1, 5, 10, 0), dt.datetime(2019, 1, 1), None,
          dt.datetime(2018, 12, 31, 23, 59, 59, 999999), dt.datetime(2024, 2, 29),
          dt.datetime(1900, 3, 1, 0, 0, 1), dt.datetime(2019, 1, 4), dt.datetime(2000, 1, 1),
          dt.datetime(2100, 12, 31), dt.datetime(1969, 12, 31, 23, 0)]
N = len(DAYS)


def _table() -> pa.Table:
    return pa.table({"x": pa.array(range(N), pa.int64()), "d": pa.array(DAYS, pa.date32()),
                     "ts": pa.array(STAMPS, pa.timestamp("us")),
                     "k": pa.array([i % 3 for i in range(N)], pa.int64())})


@pytest.fixture(scope="module")
def d(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("dates")
    t = _table()
    pq.write_table(t, root / "d.parquet")
    orc.write_table(t, root / "d.orc")
    pcsv.write_csv(t, root / "d.csv")
    return root


@pytest.fixture(scope="module")
def duck():
    con = duckdb.connect()
    con.register("t", _table())
    return con


def _same(ours: pa.Table, ref: pa.Table, ordered: bool = True) -> None:
    assert ours.schema.types == ref.schema.types, (ours.schema, ref.schema)
    a = [tuple(r.values()) for r in ours.to_pylist()]
    b = [tuple(r.values()) for r in ref.to_pylist()]
    if not ordered:
        a, b = sorted(a, key=repr), sorted(b, key=repr)
    assert a == b


QUERIES = [
    "SELECT * FROM {src} ORDER BY x",
    "SELECT d FROM {src} ORDER BY d NULLS FIRST, x",
    "SELECT MIN(d), MAX(d), COUNT(d), COUNT(DISTINCT d), COUNT(*) FROM {src}",
    "SELECT d, COUNT(*) FROM {src} GROUP BY d ORDER BY d",
    "SELECT k, MIN(d), MAX(d) FROM {src} GROUP BY k ORDER BY k",
    "SELECT x FROM {src} WHERE d >= DATE '2019-01-01' ORDER BY x",
    "SELECT x FROM {src} WHERE d = '2019-01-05' ORDER BY x",
    "SELECT x FROM {src} WHERE d = '2019-01-05 10:00:00' ORDER BY x",  # the text cast to DATE
    "SELECT x FROM {src} WHERE d > '2019-01-01 12:00' ORDER BY x",
    "SELECT x FROM {src} WHERE d < ts ORDER BY x",  # promoted to its midnight's TIMESTAMP
    "SELECT x FROM {src} WHERE d = ts ORDER BY x",
    "SELECT x FROM {src} WHERE d > TIMESTAMP '2019-01-04 23:00:00' ORDER BY x",
    "SELECT x FROM {src} WHERE ts >= DATE '2019-01-05 10:00' ORDER BY x",
    "SELECT x FROM {src} WHERE d IN ('2019-01-05', DATE '1969-12-31') ORDER BY x",
    "SELECT x FROM {src} WHERE d BETWEEN '1970-01-01' AND '2019-01-04' ORDER BY x",
    "SELECT x FROM {src} WHERE d IS NULL ORDER BY x",
    "SELECT x, EXTRACT(year FROM d), EXTRACT(month FROM d), EXTRACT(day FROM d), "
    "EXTRACT(dow FROM d) FROM {src} ORDER BY x",
    "SELECT x, date_trunc('month', d), date_trunc('week', d) FROM {src} ORDER BY x",
    "SELECT EXTRACT(year FROM d) AS y, COUNT(*) FROM {src} GROUP BY y ORDER BY y NULLS LAST",
    "SELECT x, CAST(d AS TIMESTAMP), CAST(ts AS DATE) FROM {src} ORDER BY x",
    "SELECT x, COALESCE(d, DATE '2000-01-01'), CASE WHEN k = 1 THEN d END FROM {src} ORDER BY x",
    "SELECT x, CASE WHEN k = 1 THEN d ELSE ts END FROM {src} ORDER BY x",  # a TIMESTAMP
    "SELECT x, d + INTERVAL 1 HOUR FROM {src} ORDER BY x",
    "SELECT x, d + 1, d - 1, d - DATE '1970-01-01' FROM {src} ORDER BY x",
    "SELECT MAX(d) - MIN(d), MAX(d) - 1 FROM {src}",
    "SELECT x, CAST(d AS VARCHAR), strftime(d, '%Y/%m/%d') FROM {src} ORDER BY x",
    "SELECT x, row_number() OVER (PARTITION BY k ORDER BY d NULLS FIRST, x) FROM {src} ORDER BY x",
    "SELECT DATE '2019-01-05' AS c, x FROM {src} ORDER BY x",
    "SELECT quantile_disc(d, 0.5) FROM {src}",
    "SELECT k FROM {src} GROUP BY k HAVING MAX(d) > DATE '2020-01-01' ORDER BY k",
    # a string over the groups: the DATE of its day, or the TIMESTAMP it names (both raised
    # a NumPy error: the string was compared with the integers)
    "SELECT k, MAX(d) FROM {src} GROUP BY k HAVING MAX(d) >= '2019-01-05 10:00' ORDER BY k",
    "SELECT k FROM {src} GROUP BY k HAVING '2019-01-04 12:00' < MAX(ts) ORDER BY k",
]


@pytest.mark.parametrize("f", ["d.parquet", "d.orc", "d.csv"])
@pytest.mark.parametrize("q", QUERIES)
def test_a_date_read_in_place_answers_as_duckdb(session, duck, d, f, q):
    _same(session.sql(q.format(src=f"'{d}/{f}'")).to_arrow(),
          duck.sql(q.format(src="t")).to_arrow_table())


def test_describe_says_date(session, duck, d):
    for f in ("d.parquet", "d.csv"):
        sql = f"DESCRIBE SELECT * FROM '{d}/{f}'"
        assert session.sql(sql).rows() == duck.sql(sql).fetchall()
    sql = "DESCRIBE SELECT d, MAX(d) AS m, date_trunc('month', d) AS t, d + 1 AS n FROM {} GROUP BY d"
    assert [r[1] for r in session.sql(sql.format(f"'{d}/d.parquet'")).rows()] == \
        [r[1] for r in duck.sql(sql.format("t")).fetchall()] == ["DATE", "DATE", "TIMESTAMP", "DATE"]


def test_a_store_holds_dates(tmp_path, duck, d):
    """Ingested: the manifest records the column's SQL type; the schema, DESCRIBE and the
    answers are DATEs; the store verifies and bit-packs it."""
    for pack in (False, True):
        root = tmp_path / f"db{int(pack)}"
        ingest([str(d / "d.parquet")], root / "t", pack=pack)
        cols = {c["name"]: c for c in json.loads((root / "t" / "manifest.json").read_text())["columns"]}
        assert cols["d"]["sql_type"] == "DATE" and cols["d"]["kind"] == "timestamp"
        s = Session(root, device="cpu")
        try:
            assert s.schema("t").field("d").type == pa.date32()
            assert [r[:2] for r in s.sql("DESCRIBE t").rows()] == [
                ("x", "BIGINT"), ("d", "DATE"), ("ts", "TIMESTAMP"), ("k", "BIGINT")]
            for q in QUERIES:
                sql = q.format(src="t")
                _same(s.sql(sql).to_arrow(), duck.sql(sql).to_arrow_table())
        finally:
            s.close()


@pytest.mark.parametrize("typ", [pa.date32(), pa.date64()])
def test_a_registered_date_is_a_date(session, typ):
    t = _table()
    t = t.set_column(1, "d", t.column("d").cast(typ))
    session.register("r", t)
    ref = duckdb.connect()
    ref.register("r", t)
    for q in QUERIES[:12] + ["DESCRIBE r"]:
        sql = q.format(src="r")
        _same(session.sql(sql).to_arrow(), ref.sql(sql).to_arrow_table())


def test_a_date64_of_milliseconds_past_midnight_is_its_day(session):
    """An Arrow date64 should hold midnights; one that does not is read as DuckDB reads it,
    its milliseconds truncated to the day (toward 1970)."""
    ms = 86_400_000
    t = pa.table({"d": pa.array([3 * ms + 5, -2 * ms + 1, None], pa.date64())})
    session.register("r64", t)
    ref = duckdb.connect()
    ref.register("r64", t)
    for sql in ("SELECT d FROM r64", "SELECT MIN(d), MAX(d) FROM r64"):
        _same(session.sql(sql).to_arrow(), ref.sql(sql).to_arrow_table(), ordered=False)


def test_dates_and_timestamps_of_files_unite_as_timestamps(session, duck, tmp_path):
    """``union_by_name`` of a DATE and a TIMESTAMP column: DuckDB's TIMESTAMP."""
    pq.write_table(pa.table({"v": pa.array([dt.date(2019, 1, 5)], pa.date32())}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"v": pa.array([dt.datetime(2019, 1, 5, 1)], pa.timestamp("us"))}),
                   tmp_path / "b.parquet")
    sql = (f"SELECT v FROM read_parquet(['{tmp_path}/a.parquet', '{tmp_path}/b.parquet'], "
           "union_by_name = true) ORDER BY v")
    _same(session.sql(sql).to_arrow(), duckdb.sql(sql).to_arrow_table())


def test_a_date_join_key_joins_in_the_plan_tree(tmp_path, d):
    """A registered table joined on a DATE: the kernels' joins take integer keys only, so
    the plan tree's join answers, as DuckDB."""
    ingest([str(d / "d.parquet")], tmp_path / "db" / "t")
    s = Session(tmp_path / "db", device="cpu")
    try:
        s.register("r", _table())
        sql = "SELECT t.x, r.d FROM t JOIN r ON t.d = r.d"
        ours = s.sql(sql).rows()
        assert ours
        assert_same_rows(ours, duck_tables(sql, {"t": pq.read_table(d / "d.parquet"),
                                                               "r": _table()}), ordered=False)
    finally:
        s.close()


@pytest.mark.parametrize("sql", [
    "SELECT d + x FROM {src}", "SELECT d - x FROM {src}", "SELECT x + d FROM {src}",
    "SELECT x FROM {src} WHERE d + x > DATE '2000-01-01'", "SELECT d + CAST(1 AS BIGINT) FROM {src}",
    "SELECT d + 3000000000 FROM {src}", "SELECT MAX(d) + COUNT(*) FROM {src}",
    "SELECT MAX(d) + x FROM {src} GROUP BY x"])
def test_a_date_plus_a_bigint_is_refused_as_duckdb_refuses_it(session, duck, d, sql):
    """DuckDB adds to a DATE only an INTEGER (``+(DATE, BIGINT)`` is a binder error): a
    BIGINT day count was answered (review)."""
    with pytest.raises(duckdb.BinderException):
        duck.sql(sql.format(src="t"))
    for src in (f"'{d}/d.parquet'", "t_reg"):
        session.register("t_reg", _table())
        with pytest.raises(PlanError):
            session.sql(sql.format(src=src)).to_arrow()


def test_a_date_plus_an_integer_constant_is_a_date(session, duck, d):
    sql = "SELECT x, d + 1, d - (-3), 2 + d, d - 7 FROM {src} ORDER BY x"
    _same(session.sql(sql.format(src=f"'{d}/d.parquet'")).to_arrow(),
          duck.sql(sql.format(src="t")).to_arrow_table())


def test_null_beside_a_date_in_arithmetic_is_typed_as_duckdb_types_it(session, duck, d):
    """``d + NULL`` was a DOUBLE NULL (DuckDB: DATE); ``NULL - d`` is BIGINT days, a
    TIMESTAMP's the TIMESTAMP (review)."""
    sql = "SELECT d + NULL, d - NULL, NULL + d, NULL - d, ts + NULL, NULL + ts FROM {src}"
    _same(session.sql(sql.format(src=f"'{d}/d.parquet'")).to_arrow(),
          duck.sql(sql.format(src="t")).to_arrow_table())
    with pytest.raises(PlanError):
        session.sql(f"SELECT NULL * d FROM '{d}/d.parquet'").to_arrow()
