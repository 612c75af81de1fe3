"""TIMESTAMP WITH TIME ZONE (issue 41, item 4): a Parquet timestamp with a time zone, or a
CSV's timestamps with UTC offsets, read in place, ingested or registered, comes back with
its zone (``timestamp[us, tz=UTC]``, the instants DuckDB returns in a UTC session), DESCRIBE
names it as DuckDB does, and comparisons with timestamp constants with and without an offset
answer as DuckDB's: a constant's offset is applied against a TIMESTAMP WITH TIME ZONE and
dropped against a TIMESTAMP, as DuckDB casts the text."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bamql.api.session import Session
from bamql.storage.ingest import ingest

UTC = dt.UTC
STAMPS = [dt.datetime(2024, 1, 1, 12, 0, tzinfo=UTC), dt.datetime(2024, 6, 1, 3, 30, tzinfo=UTC),
          None, dt.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)]
CSV = ("ts,x\n2024-01-01 14:00:00+02,1\n2024-06-01T03:30:00Z,2\n,3\n"
       "1969-12-31 18:59:59.999999-05,4\n")


@pytest.fixture(scope="module")
def d(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("tz")
    zoned = pa.array(STAMPS, pa.timestamp("us", tz="America/New_York"))
    pq.write_table(pa.table({"ts": zoned, "x": [1, 2, 3, 4]}), root / "tz.parquet")
    pq.write_table(pa.table({"ts": zoned.cast(pa.timestamp("ms", tz="UTC"), safe=False),
                            "x": [5, 6, 7, 8]}),
                   root / "utc_ms.parquet")
    naive = zoned.cast(pa.timestamp("us"))
    pq.write_table(pa.table({"ts": naive, "x": [1, 2, 3, 4]}), root / "naive.parquet")
    (root / "tz.csv").write_text(CSV)
    return root


@pytest.fixture(scope="module")
def duck():
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")  # bamql's zone: DuckDB's session one, made the same
    return con


def _same(ours: pa.Table, ref: pa.Table) -> None:
    assert ours.schema.types == ref.schema.types, (ours.schema, ref.schema)
    assert [tuple(r.values()) for r in ours.to_pylist()] == \
        [tuple(r.values()) for r in ref.to_pylist()]


@pytest.mark.parametrize("src", ["'{d}/tz.parquet'", "'{d}/tz.csv'", "'{d}/utc_ms.parquet'",
                                 "read_parquet(['{d}/tz.parquet', '{d}/utc_ms.parquet'])"])
@pytest.mark.parametrize("q", [
    "SELECT * FROM {src} ORDER BY x",
    "SELECT ts FROM {src} ORDER BY ts NULLS FIRST",
    "SELECT MIN(ts), MAX(ts), COUNT(ts) FROM {src}",
    "SELECT ts, COUNT(*) FROM {src} GROUP BY ts ORDER BY ts",
    "SELECT date_trunc('day', ts) AS day, COUNT(*) FROM {src} GROUP BY 1 ORDER BY 1",
    "SELECT ts + INTERVAL 1 HOUR AS t, CASE WHEN x > 1 THEN ts END AS c FROM {src} ORDER BY x",
    "SELECT x, CAST(ts AS VARCHAR) AS s FROM {src} ORDER BY x",
    "SELECT x, row_number() OVER (ORDER BY ts, x) AS r FROM {src} ORDER BY x",  # ties: by x
])
def test_a_zoned_timestamp_read_in_place_keeps_its_zone(session, duck, d, src, q):
    if "VARCHAR" in q and "csv" in src:
        pytest.skip("DuckDB reads a CSV column cast to VARCHAR as its text, offsets as written")
    sql = q.format(src=src.format(d=d))
    _same(session.sql(sql).to_arrow(), duck.sql(sql).to_arrow_table())


def test_describe_names_the_zone(session, duck, d):
    for f in ("tz.parquet", "tz.csv", "naive.parquet"):
        sql = f"DESCRIBE SELECT * FROM '{d}/{f}'"
        assert session.sql(sql).rows() == duck.sql(sql).fetchall()


@pytest.mark.parametrize("where", [
    "ts > TIMESTAMP '2024-03-01 00:00:00'",
    "ts > '2024-03-01 00:00:00'",
    "ts > '2024-03-01 00:00:00+05'",
    "ts = '2024-06-01 05:30:00+02'",
    "ts = '2024-06-01 03:30:00+02'",
    "ts >= '2024-06-01 05:30:00+02:00'",
    "ts < '2024-06-01 05:30:00+0200'",
    "ts > '2024-06-01T03:29:59.999999Z'",
    "ts > '2024-06-01 03:29:59.999999-00:30'",
    "ts <> '2024-06-01 05:30:00+02'",
    "ts IN ('2024-06-01 05:30:00+02', '2024-01-01 12:00:00')",
    "ts BETWEEN '2024-01-01 12:00:00Z' AND '2024-06-01 06:00:00+02'",
    "ts = TIMESTAMPTZ '2024-06-01 05:30:00+02'",
    "ts < TIMESTAMPTZ '2024-06-01 05:30:00+02'",
    "ts = TIMESTAMP '2024-06-01 05:30:00+02'",
    "ts < '1970-01-01 00:00:00+00'",
])
@pytest.mark.parametrize("f", ["tz.parquet", "naive.parquet", "tz.csv"])
def test_comparisons_with_constants_as_duckdb(session, duck, d, f, where):
    for sql in (f"SELECT COUNT(*) FROM '{d}/{f}' WHERE {where}",
                f"SELECT x FROM '{d}/{f}' WHERE {where} ORDER BY x"):
        assert session.sql(sql).rows() == duck.sql(sql).fetchall(), sql


def test_a_store_keeps_the_zone(tmp_path, duck, d):
    """Ingested: the manifest records the column's SQL type; the schema, DESCRIBE and the
    answers carry the zone; the naive column of the same store stays naive."""
    src = pa.table({"ts": pq.read_table(d / "tz.parquet").column("ts"),
                    "naive": pq.read_table(d / "naive.parquet").column("ts"), "x": [1, 2, 3, 4]})
    pq.write_table(src, tmp_path / "both.parquet")
    ingest([str(tmp_path / "both.parquet")], tmp_path / "db" / "t")
    cols = {c["name"]: c for c in json.loads((tmp_path / "db" / "t" / "manifest.json")
                                             .read_text())["columns"]}
    assert cols["ts"]["sql_type"] == "TIMESTAMP WITH TIME ZONE" and "sql_type" not in cols["naive"]
    s = Session(tmp_path / "db", device="cpu")
    try:
        assert s.schema("t").field("ts").type == pa.timestamp("us", tz="UTC")
        assert s.schema("t").field("naive").type == pa.timestamp("us")
        assert [r[:2] for r in s.sql("DESCRIBE t").rows()] == [
            ("ts", "TIMESTAMP WITH TIME ZONE"), ("naive", "TIMESTAMP"), ("x", "BIGINT")]
        duck.register("t", src)
        for sql in ("SELECT * FROM t ORDER BY x", "SELECT MAX(ts), MIN(naive) FROM t",
                    "SELECT x FROM t WHERE ts = '2024-06-01 05:30:00+02' ORDER BY x",
                    "SELECT x FROM t WHERE naive = '2024-06-01 03:30:00+02' ORDER BY x"):
            _same(s.sql(sql).to_arrow(), duck.sql(sql).to_arrow_table())
    finally:
        s.close()
        duck.unregister("t")


def test_a_registered_table_keeps_the_zone(session, duck, d):
    r = pq.read_table(d / "tz.parquet").rename_columns(["rts", "x"])
    session.register("r", r)
    duck.register("r", r)
    try:
        for sql in ("SELECT * FROM r ORDER BY x", "DESCRIBE r",
                    f"SELECT a.x FROM '{d}/naive.parquet' a JOIN r ON a.x = r.x "
                    "WHERE r.rts > '2024-06-01 05:29:00+02' ORDER BY a.x",
                    f"SELECT MAX(r.rts) FROM '{d}/naive.parquet' a JOIN r ON a.x = r.x",
                    # a joined timestamp as a group key: the plan tree groups it (it raised
                    # AttributeError)
                    f"SELECT r.rts, COUNT(*) FROM '{d}/naive.parquet' a JOIN r ON a.x = r.x "
                    "GROUP BY r.rts ORDER BY 1"):
            _same(session.sql(sql).to_arrow(), duck.sql(sql).to_arrow_table())
    finally:
        duck.unregister("r")


def test_zoned_and_naive_together_are_zoned(session, duck, d):
    """DuckDB unites a TIMESTAMP and a TIMESTAMP WITH TIME ZONE as the latter (the naive
    one's wall time read in the session's zone, UTC): in a union of files by name and in
    UNION ALL."""
    for sql in (f"SELECT * FROM read_parquet(['{d}/tz.parquet', '{d}/naive.parquet'], "
                "union_by_name = true) ORDER BY x, ts",
                f"SELECT ts FROM '{d}/naive.parquet' UNION ALL SELECT ts FROM '{d}/tz.parquet' "
                "ORDER BY 1"):
        _same(session.sql(sql).to_arrow(), duck.sql(sql).to_arrow_table())
