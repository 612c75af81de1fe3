"""Files queried in place (FROM 'x/*.parquet', read_parquet/read_csv/read_orc, directories,
connect() with no path): answers equal DuckDB's over the same files."""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.orc as paorc
import pyarrow.parquet as pq
import pytest

from bamql.api.connection import connect
from bamql.api.session import Session
from bamql.config import Config
from bamql.errors import BamqlError, IngestError, PlanError
from bamql.storage import filecache
from tests.conftest import SAMPLES
from tests.reference import assert_same_rows, duck_tables, session_rows

QUERIES = [
    "SELECT COUNT(*), SUM(total_amount), AVG(trip_distance), MIN(fare_amount), "
    "MAX(pickup_datetime) FROM {src}",
    "SELECT passenger_count, COUNT(*), AVG(tip_amount) FROM {src} GROUP BY passenger_count "
    "ORDER BY passenger_count",
    "SELECT payment_type, SUM(fare_amount) FROM {src} WHERE trip_distance > 2.5 "
    "AND store_and_fwd_flag = 'N' GROUP BY 1 ORDER BY 1",
    "SELECT COUNT(*), SUM(passenger_count) FROM {src} WHERE pickup_location_id IN (161, 236, 237)",
    "SELECT COUNT(*) FROM {src} WHERE trip_distance > 1000",  # empty answer
]


def _sample(rows: int = 3000) -> pa.Table:
    """The first rows of the real TLC sample, with NULLs in a few places."""
    t = pacsv.read_csv(SAMPLES[0]).slice(0, rows)
    tip = t.column("tip_amount").to_pylist()
    pc = t.column("passenger_count").to_pylist()
    for i in range(0, rows - 1, 37):
        tip[i] = None
        pc[i + 1] = None
    t = t.set_column(t.schema.get_field_index("tip_amount"), "tip_amount", pa.array(tip, pa.float64()))
    return t.set_column(t.schema.get_field_index("passenger_count"), "passenger_count",
                        pa.array(pc, pa.int64()))


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    """trips/ with three Parquet files (one in a subdirectory, one of zero rows), a marker
    file and hidden file that directories skip; csv/ and orc/ with the same rows."""
    root = tmp_path_factory.mktemp("files")
    t = _sample()
    (root / "trips" / "more").mkdir(parents=True)
    pq.write_table(t.slice(0, 1200), root / "trips" / "a.parquet", row_group_size=500)
    pq.write_table(t.slice(1200), root / "trips" / "more" / "b.parquet")
    pq.write_table(t.slice(0, 0), root / "trips" / "empty.parquet")
    (root / "trips" / "_SUCCESS").write_text("")
    pq.write_table(t.slice(0, 10), root / "trips" / ".hidden.parquet")
    (root / "csv").mkdir()
    pacsv.write_csv(t.slice(0, 1500), root / "csv" / "x1.csv")
    pacsv.write_csv(t.slice(1500), root / "csv" / "x2.csv")
    (root / "orc").mkdir()
    paorc.write_table(t, root / "orc" / "all.orc")
    return root


def _duck(sql: str) -> list[tuple]:
    return duckdb.sql(sql).fetchall()


@pytest.mark.parametrize("q", QUERIES)
@pytest.mark.parametrize("src", ["'{d}/trips/**/*.parquet'", "read_parquet('{d}/trips/**/*.parquet')",
                                 "read_parquet(['{d}/trips/a.parquet', '{d}/trips/more/b.parquet'])",
                                 "'{d}/csv/x?.csv'", "read_csv(['{d}/csv/x1.csv', '{d}/csv/x2.csv'])"])
def test_files_answer_as_duckdb(session, files, q, src):
    sql = q.format(src=src.format(d=files))
    assert_same_rows(session_rows(session, sql), _duck(sql), ordered="ORDER BY" in sql)


@pytest.mark.parametrize("q", QUERIES[:3])
def test_a_directory_reads_its_visible_files(session, files, q):
    ours = session_rows(session, q.format(src=f"'{files}/trips/'"))
    # the hidden file and the marker are skipped, as the glob over the data files does
    ref = _duck(q.format(src=f"'{files}/trips/**/[!.]*.parquet'"))
    assert_same_rows(ours, ref, ordered=True)


@pytest.mark.parametrize("q", QUERIES[:3])
def test_orc_files_answer_as_duckdb_over_their_rows(session, files, q):
    ours = session_rows(session, q.format(src=f"read_orc('{files}/orc/all.orc')"))
    ref = duck_tables(q.format(src="t"), {"t": paorc.read_table(files / "orc" / "all.orc")})
    assert_same_rows(ours, ref, ordered=True)


@pytest.mark.parametrize("q", QUERIES[:3])
def test_the_real_tlc_sample_in_place(session, q):
    src = f"'{SAMPLES[0].parent}/yellow_tripdata_sample_2019-*.csv'"
    sql = q.format(src=src)
    assert_same_rows(session_rows(session, sql), _duck(sql), ordered=True)


def test_a_second_query_reuses_the_store_and_a_change_replaces_it(tmp_path, files):
    d = tmp_path / "d"
    d.mkdir()
    t = _sample(1000)
    pq.write_table(t, d / "x.parquet")
    cache = tmp_path / "cache"
    sql = f"SELECT COUNT(*), SUM(total_amount) FROM '{d}/*.parquet'"
    with Session(config=Config(device="cpu", file_cache=cache, cache_files=True)) as s:
        before = filecache.INGESTS
        first = session_rows(s, sql)
        assert filecache.INGESTS == before + 1
        (store,) = [p for p in cache.iterdir() if not p.name.startswith(".")]
        ino = store.stat().st_ino
        assert session_rows(s, sql) == first
        assert session_rows(s, sql.replace("COUNT(*), ", "COUNT(*),")) == first
        assert filecache.INGESTS == before + 1
    with Session(config=Config(device="cpu", file_cache=cache, cache_files=True)) as s:
        assert session_rows(s, sql) == first
        assert filecache.INGESTS == before + 1 and store.stat().st_ino == ino
        # a changed file (other rows, other size and mtime): a new store, the stale one gone
        pq.write_table(t.slice(0, 400), d / "x.parquet")
        os.utime(d / "x.parquet", ns=(1, 1))
        assert_same_rows(session_rows(s, sql), _duck(sql), ordered=True)
        assert session_rows(s, sql)[0][0] == 400
        assert filecache.INGESTS == before + 2
        stores = [p for p in cache.iterdir() if not p.name.startswith(".")]
        assert len(stores) == 1 and stores[0] != store
        # a new file matching the glob is another file list: a store of its own
        pq.write_table(t.slice(0, 100), d / "y.parquet")
        assert session_rows(s, sql)[0][0] == 500
        assert filecache.INGESTS == before + 3


def test_connect_without_a_path_serves_files_only(files, tmp_path, monkeypatch):
    monkeypatch.setenv("BAMQL_FILE_CACHE", str(tmp_path / "c"))
    with connect(device="cpu") as s:
        assert s.tables() == []
        sql = f"SELECT COUNT(*) FROM '{files}/trips/a.parquet'"
        assert session_rows(s, sql) == _duck(sql)
        assert (tmp_path / "c").is_dir()
        with pytest.raises(PlanError, match="unknown table 'trips'"):
            s.sql("SELECT COUNT(*) FROM trips")


def test_explain_names_the_files_and_the_store(files, tmp_path):
    with Session(config=Config(device="cpu", file_cache=tmp_path / "c", cache_files=True)) as s:
        txt = s.explain(f"SELECT COUNT(*) FROM '{files}/trips/'")  # 3 visible files
        first = txt.splitlines()[0]
        assert first.startswith("files: 3 Parquet files, ")
        assert "read through a store cached at" in first and str(s.config.file_cache_dir) in first
        res = s.sql(f"EXPLAIN ANALYZE SELECT COUNT(*) FROM '{files}/csv/'")
        assert res.table["explain"][0].as_py().startswith("files: 2 CSV files, ")


def test_explain_in_place_says_what_was_read(session, files):
    txt = session.explain(f"SELECT COUNT(*) FROM '{files}/trips/'")
    first, second = txt.splitlines()[:2]
    assert first.startswith("files: 3 Parquet files, ") and "metadata only" in first
    assert second.startswith("would read in place: row groups")
    res = session.sql(f"EXPLAIN ANALYZE SELECT SUM(fare_amount) FROM '{files}/csv/'")
    line = res.table["explain"][0].as_py()
    assert line.startswith("files: 2 CSV files, ") and "columns fare_amount;" in line


def test_stored_tables_and_files_in_one_session(taxi_store, files, tmp_path):
    with Session(taxi_store, config=Config(device="cpu", file_cache=tmp_path / "c")) as s:
        names = s.tables()
        a = session_rows(s, f"SELECT COUNT(*) FROM {names[0]}")
        b = session_rows(s, f"SELECT COUNT(*) FROM '{files}/trips/a.parquet'")
        assert b == [(1200,)] and a[0][0] > 0 and s.tables() == names


@pytest.mark.parametrize("src, error, text", [
    ("'{d}/nothing/*.parquet'", IngestError, "no files match"),
    ("'{d}/absent.parquet'", IngestError, "does not exist"),
    ("'{d}/empty_dir/'", IngestError, "holds no Parquet, ORC or CSV files"),
    ("read_parquet('{d}/csv/x1.csv')", IngestError, "is not a Parquet file"),
    ("read_csv('{d}/trips/a.parquet')", IngestError, "is not a CSV file"),
    ("read_parquet('{d}/trips/a.parquet', delim=',')", PlanError, "does not take the option delim"),
    ("read_json('{d}/x.json')", PlanError, "read_json() is not supported"),
    ("read_parquet(42)", PlanError, "quoted path"),
    ("'ftp://host/trips/x.parquet'", IngestError, "ftp:// is not supported"),
    ("'https://example.com/x.parquet'", IngestError, "https:// is not supported"),
    ("'{d}/bad/'", IngestError, "x.parquet is not a readable Parquet file"),
    ("'{d}/mixed/'", IngestError, "schemas disagree"),
])
def test_bad_files_are_one_line_errors(session, files, src, error, text):
    (files / "empty_dir").mkdir(exist_ok=True)
    (files / "bad").mkdir(exist_ok=True)
    (files / "bad" / "x.parquet").write_bytes(b"not parquet at all")
    (files / "mixed").mkdir(exist_ok=True)
    pq.write_table(pa.table({"a": [1, 2]}), files / "mixed" / "1.parquet")
    pq.write_table(pa.table({"a": ["x", "y"]}), files / "mixed" / "2.parquet")
    with pytest.raises(error) as e:
        session.sql(f"SELECT COUNT(*) FROM {src.format(d=files)}")
    msg = str(e.value)
    assert text in msg and "\n" not in msg and isinstance(e.value, BamqlError)
    if "mixed" in src:
        assert "'a'" in msg and "2.parquet" in msg


def test_a_file_uri_is_read_as_the_local_file(session, files):
    p = files / "trips" / "a.parquet"
    assert session_rows(session, f"SELECT COUNT(*) FROM 'file://{p}'") == [(1200,)]


def test_an_unreadable_file_is_one_line(session, tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root reads every file")
    p = tmp_path / "locked.parquet"
    pq.write_table(pa.table({"a": [1]}), p)
    p.chmod(0)
    with pytest.raises(IngestError, match="cannot read .*permission denied"):
        session.sql(f"SELECT COUNT(*) FROM '{p}'")


def test_a_zero_row_parquet_file_is_an_empty_table(session, files):
    sql = f"SELECT COUNT(*), SUM(total_amount) FROM '{files}/trips/empty.parquet'"
    assert_same_rows(session_rows(session, sql), _duck(sql), ordered=True)


def test_an_unknown_column_of_files_names_the_files_not_their_store(session, files):
    src = f"{files}/trips/**/*.parquet"
    with pytest.raises(PlanError) as e:
        session.sql(f"SELECT SUM(nope) FROM '{src}'")
    msg = str(e.value)
    assert "unknown column 'nope'" in msg and src in msg and "files_" not in msg, msg


def test_files_join_the_zone_table_as_duckdb(session, files):
    zones = session.dimensions["zones"].table
    sql = (f"SELECT z.Borough, COUNT(*), SUM(t.fare_amount) FROM '{files}/trips/**/*.parquet' t "
           "JOIN zones z ON t.pickup_location_id = z.LocationID WHERE z.Zone LIKE '%a%' "
           "GROUP BY z.Borough ORDER BY z.Borough")
    con = duckdb.connect()
    con.register("zones", zones)
    assert_same_rows(session_rows(session, sql), con.sql(sql).fetchall(), ordered=True)


def test_a_glob_over_symlink_loops_ends(session, files, tmp_path):
    """``**`` follows no symlinked directory: loops (``self -> .``, ``sub/back -> ..``) leave
    each file matched once, at once."""
    root = tmp_path / "loop"
    (root / "sub").mkdir(parents=True)
    pq.write_table(pq.read_table(files / "trips" / "a.parquet"), root / "sub" / "a.parquet")
    (root / "self").symlink_to(".")
    (root / "sub" / "back").symlink_to("..")
    sql = f"SELECT COUNT(*) FROM '{root}/**/*.parquet'"
    assert session_rows(session, sql) == _duck(f"SELECT COUNT(*) FROM '{root}/sub/a.parquet'")
    assert session_rows(session, f"SELECT COUNT(*) FROM '{root}'") == session_rows(session, sql)


def test_what_is_no_regular_file_or_a_system_directory_is_refused(session, tmp_path):
    fifo = tmp_path / "p.csv"
    os.mkfifo(fifo)  # opening it would block until a writer came
    with pytest.raises(BamqlError, match="is not a regular file"):
        session.sql(f"SELECT * FROM '{fifo}'")
    for root in ("/", "/proc", "/proc/**/*.csv", "/sys/"):
        with pytest.raises(BamqlError, match="refused: name the directory"):
            session.sql(f"SELECT COUNT(*) FROM '{root}'")
