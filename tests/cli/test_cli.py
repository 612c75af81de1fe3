from __future__ import annotations

import subprocess
import sys

import pytest


def bamql(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "bamql.cli", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd, timeout=300)


def test_help_explains_commands():
    r = bamql("--help")
    assert r.returncode == 0
    for cmd in ("gen", "ingest", "verify", "demo"):
        assert cmd in r.stdout


def test_gen_ingest_verify(tmp_path):
    r = bamql("gen", "--rows", 5000, "--out", tmp_path / "orc", "--seed", 1, "--workers", 1)
    assert r.returncode == 0, r.stderr
    assert "rows/s" in r.stdout
    r = bamql("ingest", tmp_path / "orc" / "trips-000.orc", "--out", tmp_path / "data" / "trips",
              "--page-size", "1KiB", "--volumes", 2)
    assert r.returncode == 0, r.stderr
    assert "MB/s" in r.stdout
    r = bamql("verify", tmp_path / "data" / "trips")
    assert r.returncode == 0 and "OK" in r.stdout


@pytest.mark.slow  # in CI's slow run
def test_gen_parquet_and_ingest_it(tmp_path):
    r = bamql("gen", "--rows", 5000, "--out", tmp_path / "pq", "--seed", 1, "--workers", 1,
              "--format", "parquet")
    assert r.returncode == 0, r.stderr
    assert "PARQUET file(s)" in r.stdout
    r = bamql("ingest", tmp_path / "pq" / "trips-000.parquet", "--out", tmp_path / "data" / "trips")
    assert r.returncode == 0, r.stderr
    r = bamql("sql", tmp_path / "data", "SELECT COUNT(*) FROM trips", "--device", "cpu")
    assert r.returncode == 0 and "5000" in r.stdout, r.stdout + r.stderr
    r = bamql("gen", "--rows", 5000, "--out", tmp_path / "two", "--seed", 1, "--workers", 1,
              "--format", "parquet", "--columns", "fare_amount,pickup_location_id")
    assert r.returncode == 0, r.stderr
    import pyarrow.parquet as pq

    two = pq.read_table(tmp_path / "two" / "trips-000.parquet")
    assert two.column_names == ["pickup_location_id", "fare_amount"] and two.num_rows == 5000
    _one_line_error(bamql("gen", "--rows", 10, "--out", tmp_path / "bad", "--columns", "nope"),
                    "no column 'nope'")


def _one_line_error(r, text):
    assert r.returncode != 0
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("bamql: error:") and text in lines[0]
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize(
    "args, text",
    [
        (["ingest", "nope.orc", "--out", "x"], "does not exist"),
        (["verify", "no/such/store"], "does not exist"),
        (["gen", "--rows", "0", "--out", "g"], "must be positive"),
        (["ingest", "a.txt", "--out", "y"], "does not exist"),
        (["bench-scaleout", "--interleave", "--cluster", "tcp://127.0.0.1:1"],
         "does not combine with --cluster"),
    ],
)
def test_clear_one_line_errors(tmp_path, args, text):
    _one_line_error(bamql(*args, cwd=tmp_path), text)


def test_corrupt_store_fails_verify(tmp_path, taxi_store):
    import shutil

    t = tmp_path / "trips"
    shutil.copytree(taxi_store / "trips", t)
    with open(t / "vol-000.bin", "r+b") as f:
        f.seek(5000)
        b = f.read(1)
        f.seek(5000)
        f.write(bytes([b[0] ^ 1]))
    r = bamql("verify", t)
    assert r.returncode == 1
    assert "checksum mismatch" in r.stderr and "is corrupt: 1 problem(s)" in r.stderr
    assert "Traceback" not in r.stderr


def test_more_one_line_errors(tmp_path, taxi_orc, taxi_store):
    import shutil

    import pyarrow as pa
    import pyarrow.parquet as pq

    fake = tmp_path / "fake.orc"
    fake.write_text("not orc at all\n")
    _one_line_error(bamql("ingest", fake, "--out", tmp_path / "o1"), "not a readable ORC file")
    other = tmp_path / "other.parquet"
    pq.write_table(pa.table({"vendor_id": ["x"]}), other)  # a string where the ORC has integers
    _one_line_error(bamql("ingest", taxi_orc[0], other, "--out", tmp_path / "o2"), "schemas disagree")
    nested = tmp_path / "nested.parquet"
    pq.write_table(pa.table({"a": [[1]]}), nested)
    _one_line_error(bamql("ingest", nested, "--out", tmp_path / "o3"), "cannot store")
    _one_line_error(bamql("ingest", taxi_orc[0], "--out", taxi_store / "trips"), "already exists")
    t = tmp_path / "trips"
    shutil.copytree(taxi_store / "trips", t)
    with open(t / "vol-000.bin", "r+b") as f:
        f.truncate(1000)
    _one_line_error(bamql("verify", t), "truncated")
    _one_line_error(bamql("sql", t, "SELECT COUNT(*) FROM trips", "--device", "cpu"), "truncated")
    (t / "vol-000.bin").unlink()
    _one_line_error(bamql("verify", t), "missing")
    assert not list(tmp_path.glob(".*"))  # nothing half-written left behind


@pytest.mark.slow  # in CI's slow run
def test_ingest_only_some_columns(tmp_path, taxi_orc):
    r = bamql("ingest", *taxi_orc, "--out", tmp_path / "bad", "--columns", "fare_amount,nope")
    _one_line_error(r, "no column 'nope'")
    assert not (tmp_path / "bad").exists()
    r = bamql("ingest", *taxi_orc, "--out", tmp_path / "t", "--columns", "fare_amount, pickup_location_id")
    assert r.returncode == 0, r.stderr
    r = bamql("sql", tmp_path / "t",
              "SELECT COUNT(*), SUM(fare_amount) FROM t WHERE pickup_location_id = 256", "--device", "cpu")
    assert r.returncode == 0, r.stderr
    r = bamql("sql", tmp_path / "t", "SELECT SUM(tip_amount) FROM t", "--device", "cpu")
    _one_line_error(r, "unknown column 'tip_amount'")


@pytest.mark.slow  # in CI's slow run
def test_ingest_with_row_groups(tmp_path, taxi_orc):
    r = bamql("ingest", *taxi_orc, "--out", tmp_path / "bad" / "trips", "--page-size", 512,
              "--groups", "trip_distance,no_such_column")
    _one_line_error(r, "unknown column 'no_such_column'")
    assert not (tmp_path / "bad").exists()  # nothing written
    r = bamql("ingest", *taxi_orc, "--out", tmp_path / "data" / "trips", "--page-size", 512,
              "--groups", "auto")
    assert r.returncode == 0, r.stderr
    r = bamql("verify", tmp_path / "data" / "trips")
    assert r.returncode == 0 and "1 row group(s) included" in r.stdout


def test_duplicate_headers_are_one_line_errors_and_empty_sources_empty_tables(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    dup = tmp_path / "dup.csv"
    dup.write_text("a,b,a\n1,2,3\n")
    _one_line_error(bamql("ingest", dup, "--out", tmp_path / "o1"), "'a' appears 2 times")
    assert not list(tmp_path.glob(".*")) and not list(tmp_path.glob("o*"))
    # no rows is a table of no rows, as in DuckDB: every aggregate answers over nothing
    empty = tmp_path / "empty.parquet"
    pq.write_table(pa.table({"a": pa.array([], pa.int64())}), empty)
    header_only = tmp_path / "header.csv"
    header_only.write_text("a,b\n")  # columns of no value at all: VARCHAR, as in DuckDB
    for src, out in ((empty, "o2"), (header_only, "o3")):
        r = bamql("ingest", src, "--out", tmp_path / out / "t")
        assert r.returncode == 0, r.stderr
        r = bamql("sql", tmp_path / out, "SELECT COUNT(*), COUNT(a) FROM t WHERE a IS NULL",
                  "--format", "csv")
        assert r.returncode == 0 and r.stdout.split()[-1] == "0,0", r.stdout


@pytest.mark.parametrize("path", [b"data", 5])  # None: a session with no stored tables
def test_connect_with_a_path_of_the_wrong_type_is_a_clean_error(path):
    import bamql
    from bamql.errors import UsageError

    with pytest.raises(UsageError, match=f"not {type(path).__name__}"):
        bamql.connect(path, device="cpu")


def test_sql_of_the_wrong_type_or_after_close_is_a_clean_error(taxi_store):
    import bamql
    from bamql.errors import UsageError

    con = bamql.connect(taxi_store, device="cpu")
    for bad in (None, b"SELECT COUNT(*) FROM trips", 5):
        with pytest.raises(UsageError, match=f"not {type(bad).__name__}"):
            con.sql(bad)
    assert con.sql("SELECT COUNT(*) AS n FROM trips").rows() == [(60_000,)]
    con.close()
    for call in (lambda: con.sql("SELECT COUNT(*) FROM trips"), lambda: con.table("trips"),
                 lambda: con.explain("SELECT COUNT(*) FROM trips")):
        with pytest.raises(UsageError, match="is closed"):
            call()
    con.close()  # closing twice is fine


def test_an_open_kernel_directory_is_one_note_and_the_query_runs(taxi_store, tmp_path):
    import os

    (tmp_path / "kernels").mkdir(mode=0o777)
    (tmp_path / "kernels").chmod(0o777)  # writable by anyone: refused
    env = dict(os.environ, BAMQL_CACHE_DIR=str(tmp_path))
    # MAX needs a kernel (COUNT(*) alone is answered from the table's metadata)
    r = subprocess.run([sys.executable, "-m", "bamql.cli", "sql", str(taxi_store),
                        "SELECT COUNT(*) AS n, MAX(fare_amount) AS m FROM trips", "--device",
                        "cpu", "--format", "csv"],
                       capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0 and "60000" in r.stdout, r.stderr
    lines = r.stderr.strip().splitlines()
    # (a new cache directory holds a new key: the store, sealed under another, is verified once)
    assert [ln for ln in lines if "verified in full" not in ln] == [
        f"bamql: note: kernel cache off, compiling in memory: kernel directory "
        f"{tmp_path / 'kernels'} is open to other users (mode 0777; chmod 700 it)"], lines
    assert not list((tmp_path / "kernels").iterdir())  # nothing written there


@pytest.mark.slow  # in CI's slow run
def test_sql_on_files_with_no_directory_and_ingest_of_globs_with_append(tmp_path):
    import duckdb
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    from tests.conftest import SAMPLES

    t = pacsv.read_csv(SAMPLES[0]).slice(0, 1500)
    (tmp_path / "d").mkdir()
    pq.write_table(t.slice(0, 1000), tmp_path / "d" / "a.parquet")
    pq.write_table(t.slice(1000), tmp_path / "d" / "b.parquet")
    env_cache = {"BAMQL_FILE_CACHE": str(tmp_path / "cache")}
    q = "SELECT COUNT(*), SUM(passenger_count) FROM 'd/*.parquet'"
    r = subprocess.run([sys.executable, "-m", "bamql.cli", "sql", "--device", "cpu",
                        "--format", "csv", q], capture_output=True, text=True, cwd=tmp_path,
                       timeout=300, env={**__import__("os").environ, **env_cache})
    assert r.returncode == 0, r.stderr
    want = duckdb.sql(q.replace("'d/", f"'{tmp_path}/d/")).fetchall()[0]
    assert r.stdout.splitlines()[-1] == f"{want[0]},{want[1]}"
    assert (tmp_path / "cache").is_dir()
    r = bamql("sql", "--help")
    assert "read_parquet" in r.stdout and "BAMQL_FILE_CACHE" in r.stdout
    # a quoted glob is expanded by bamql; --append adds the next file atomically
    r = bamql("ingest", "d/a*.parquet", "--out", "data/trips", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    r = bamql("ingest", "--append", "d/b.parquet", "--out", "data/trips", cwd=tmp_path)
    assert r.returncode == 0 and "1,500 rows now" in r.stdout, r.stderr
    r = bamql("sql", "data", "SELECT COUNT(*), SUM(passenger_count) FROM trips", "--format",
              "csv", "--device", "cpu", cwd=tmp_path)
    assert r.stdout.splitlines()[-1] == f"{want[0]},{want[1]}", r.stderr
    r = bamql("ingest", "--append", "d/none*.parquet", "--out", "data/trips", cwd=tmp_path)
    _one_line_error(r, "no files match d/none*.parquet")
    r = bamql("sql", "--device", "cpu", "SELECT COUNT(*) FROM 'ftp://host/x.parquet'")
    _one_line_error(r, "ftp:// is not supported")


@pytest.mark.slow  # in CI's slow run
def test_ingest_refresh_picks_up_new_files(tmp_path):
    import duckdb
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    from tests.conftest import SAMPLES

    t = pacsv.read_csv(SAMPLES[1]).slice(0, 1500)
    (tmp_path / "d").mkdir()
    pq.write_table(t.slice(0, 1000), tmp_path / "d" / "a.parquet")
    r = bamql("ingest", "d/*.parquet", "--out", "data/trips", "--page-size", "512", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    r = bamql("ingest", "--refresh", "data/trips", cwd=tmp_path)
    assert r.returncode == 0 and "up to date: 1 file unchanged" in r.stdout, r.stderr
    pq.write_table(t.slice(1000), tmp_path / "d" / "b.parquet")
    # from another directory: the recorded glob is absolute
    r = bamql("ingest", "--refresh", tmp_path / "data" / "trips", cwd=tmp_path / "d")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("added 1 file, 500 rows; 1 file unchanged"), r.stdout
    q = "SELECT COUNT(*), SUM(passenger_count) FROM trips"
    r = bamql("sql", "data", q, "--format", "csv", "--device", "cpu", cwd=tmp_path)
    want = duckdb.sql(q.replace("trips", f"'{tmp_path}/d/*.parquet'")).fetchall()[0]
    assert r.stdout.splitlines()[-1] == f"{want[0]},{want[1]}", r.stderr
    _one_line_error(bamql("ingest", "--refresh", "data/trips", "--page-size", "4096",
                          cwd=tmp_path), "--page-size does not go with --refresh")
    _one_line_error(bamql("ingest", "--refresh", "data/trips", "d/a.parquet", cwd=tmp_path),
                    "--refresh takes one table directory")
    _one_line_error(bamql("ingest", "d/a.parquet", cwd=tmp_path), "--out TABLE_DIR")
    (tmp_path / "d" / "a.parquet").unlink()
    _one_line_error(bamql("ingest", "--refresh", "data/trips", cwd=tmp_path), "has vanished")
    assert "--refresh" in bamql("ingest", "--help").stdout


def test_ingest_pack_info_and_refresh_keep_the_bits(tmp_path):
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    import bamql as bq
    from tests.conftest import SAMPLES

    t = pacsv.read_csv(SAMPLES[1]).slice(0, 1500)
    (tmp_path / "d").mkdir()
    pq.write_table(t.slice(0, 1000), tmp_path / "d" / "a.parquet")
    r = bamql("ingest", "d/*.parquet", "--out", "data/trips", "--page-size", "512", "--pack",
              cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    pq.write_table(t.slice(1000), tmp_path / "d" / "b.parquet")
    r = bamql("ingest", "--refresh", "data/trips", cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.startswith("added 1 file, 500 rows"), r.stderr
    _one_line_error(bamql("ingest", "--refresh", "data/trips", "--pack", cwd=tmp_path),
                    "--pack does not go with --refresh")
    r = bamql("info", tmp_path / "data" / "trips")
    assert r.returncode == 0, r.stderr
    lines = {ln.split()[0]: ln.split() for ln in r.stdout.splitlines()[2:]}
    zone = lines["pickup_location_id"]  # int16, 9 bits, plain MB, stored MB, ratio
    assert zone[1:4] == ["int16,", "9", "bits"] and zone[-1] == "1.50"  # 6 pages of 256 rows, 4 of 455
    with bq.connect(tmp_path / "data", device="cpu") as con:
        f = con.schema("trips").field("pickup_location_id")
        assert f.metadata[b"bits"] == b"9"
        assert con.sql("SELECT COUNT(*) FROM trips").rows() == [(1500,)]
    r = bamql("verify", tmp_path / "data" / "trips")
    assert r.returncode == 0 and "OK" in r.stdout


def test_sql_is_quiet_by_default_and_verbose_names_the_engine():
    quiet = subprocess.run([sys.executable, "-m", "bamql.cli", "sql", "SELECT 1 AS one"],
                           capture_output=True, text=True, timeout=300)
    assert quiet.returncode == 0 and "one" in quiet.stdout and quiet.stderr == "", quiet.stderr
    loud = subprocess.run([sys.executable, "-m", "bamql.cli", "sql", "-v", "SELECT 1 AS one"],
                          capture_output=True, text=True, timeout=300)
    assert loud.returncode == 0 and "engine" in loud.stderr, loud.stderr
