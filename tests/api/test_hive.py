"""Hive-partitioned files queried in place and ingested: answers equal DuckDB's
``read_parquet(..., hive_partitioning = true)`` over the same files (the real TLC sample,
two levels of keys, a NULL partition), and a WHERE on the keys reads fewer files."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from bamql.api.session import Session
from bamql.config import Config
from bamql.errors import BamqlError
from bamql.storage.ingest import ingest
from bamql.storage.partitioned import open_table
from tests.conftest import SAMPLES
from tests.reference import assert_same_rows, session_rows

YEARS = ("2019", "2020", "__HIVE_DEFAULT_PARTITION__")
ZONES = ("03", "10", "x")  # a leading zero and a word: VARCHAR, as in DuckDB


@pytest.fixture(scope="module")
def trips(tmp_path_factory) -> Path:
    """trips/yr=Y/zone=Z/part-0.parquet: the real sample's first 2700 rows in 9 files."""
    root = tmp_path_factory.mktemp("hive") / "trips"
    t = pacsv.read_csv(SAMPLES[0]).slice(0, 2700)
    for k in range(9):
        d = root / f"yr={YEARS[k // 3]}" / f"zone={ZONES[k % 3]}"
        d.mkdir(parents=True)
        pq.write_table(t.slice(k * 300, 300), d / "part-0.parquet")
    return root


QUERIES = [
    "SELECT yr, zone, COUNT(*), SUM(total_amount), AVG(trip_distance) FROM {src} "
    "GROUP BY yr, zone ORDER BY yr NULLS LAST, zone",
    "SELECT COUNT(*), SUM(fare_amount) FROM {src} WHERE yr = 2019",
    "SELECT zone, COUNT(*) FROM {src} WHERE yr IS NULL AND zone IN ('03', 'x') GROUP BY zone "
    "ORDER BY zone",
    "SELECT COUNT(*), MAX(tip_amount) FROM {src} WHERE yr BETWEEN 2020 AND 2030 AND zone <> '10' "
    "AND trip_distance > 1.5",
    "SELECT COUNT(*), SUM(total_amount) FROM {src} WHERE yr > 2020",  # empty
    "SELECT COUNT(*) FROM {src} WHERE yr = 2019 OR zone = 'x'",  # prunes nothing
    "SELECT COUNT(*) FROM {src} WHERE zone = 10",  # a VARCHAR key against a number
    "SELECT COUNT(*) FROM {src} WHERE yr IS NOT NULL AND zone >= '1'",
]


@pytest.mark.parametrize("q", QUERIES)
@pytest.mark.parametrize("src", ["read_parquet('{d}/**/*.parquet', hive_partitioning = true)",
                                 "'{d}/**/*.parquet'", "'{d}/'"])
def test_hive_files_answer_as_duckdb(session, trips, q, src):
    ref_sql = q.format(src=f"read_parquet('{trips}/**/*.parquet', hive_partitioning = true)")
    try:
        ref = duckdb.sql(ref_sql).fetchall()
    except duckdb.Error:
        with pytest.raises(BamqlError):
            session_rows(session, q.format(src=src.format(d=trips)))
        return
    assert_same_rows(session_rows(session, q.format(src=src.format(d=trips))), ref,
                     ordered="ORDER BY" in q)


@pytest.mark.parametrize("cache_files", [True, False])
def test_where_on_keys_prunes_files_and_explain_counts_them(tmp_path, trips, cache_files):
    session = Session(config=Config(device="cpu", file_cache=tmp_path / "cache",
                                    cache_files=cache_files))
    src = f"'{trips}/**/*.parquet'"
    text = session.sql(f"EXPLAIN SELECT COUNT(*) FROM {src} WHERE yr = 2019 AND zone IN "
                       "('03', '10')").to_arrow().to_pylist()
    text = "\n".join(str(v) for r in text for v in r.values())
    assert "files: 2 of 9 Parquet files after partition pruning" in text
    assert "partitioned by yr, zone" in text
    # the store made holds only the two files' rows
    assert session_rows(session, f"SELECT COUNT(*) FROM {src} WHERE yr = 2019 AND zone IN ('03', '10')") \
        == [(600,)]
    cache = session.config.file_cache_dir
    stores = [p for p in cache.iterdir() if not p.name.startswith(".")] if cache_files \
        else list((cache / ".inplace").iterdir())
    (store,) = stores
    with open_table(store) as t:
        assert t.rows == 600
    session.close()


def test_hive_partitioning_false_reads_no_keys(session, trips):
    sql = f"SELECT COUNT(*) FROM read_parquet('{trips}/**/*.parquet', hive_partitioning = false)"
    assert session_rows(session, sql) == [(2700,)]
    with pytest.raises(BamqlError, match="yr"):
        session_rows(session, sql + " WHERE yr = 2019")


def test_options_a_reader_does_not_take_are_refused(session, trips):
    with pytest.raises(BamqlError, match="does not take the option nosuch"):
        session_rows(session, f"SELECT COUNT(*) FROM read_parquet('{trips}/**/*.parquet', "
                       "nosuch = true)")
    with pytest.raises(BamqlError, match="takes true or false"):
        session_rows(session, f"SELECT COUNT(*) FROM read_parquet('{trips}/**/*.parquet', "
                       "hive_partitioning = 'yes')")


def test_ingest_keeps_partition_columns(tmp_path, trips):
    r = ingest([str(trips)], tmp_path / "t")
    assert r.rows == 2700
    t = open_table(tmp_path / "t")
    got = t.parts[0].to_table(["yr", "zone", "fare_amount"])
    t.close()
    ref = pq.read_table(trips, partitioning="hive")  # pyarrow's own reading of the layout
    assert got.schema.field("yr").type == pa.int64()
    assert pc.sum(pc.is_null(got.column("yr"))).as_py() == 900
    ours = duckdb.sql("SELECT yr, zone, COUNT(*), SUM(fare_amount) FROM got GROUP BY ALL").fetchall()
    theirs = duckdb.sql(f"SELECT yr, zone, COUNT(*), SUM(fare_amount) FROM read_parquet("
                        f"'{trips}/**/*.parquet', hive_partitioning = true) GROUP BY ALL").fetchall()
    assert_same_rows(ours, theirs, ordered=False)
    assert ref.num_rows == 2700


def test_a_key_that_is_also_a_column_is_refused(session, tmp_path):
    d = tmp_path / "d" / "v=1"
    d.mkdir(parents=True)
    pq.write_table(pa.table({"v": [5]}), d / "p.parquet")
    with pytest.raises(BamqlError, match="'v' is both in the file and a partition key"):
        session_rows(session, f"SELECT SUM(v) FROM '{tmp_path}/d/**/*.parquet'")
