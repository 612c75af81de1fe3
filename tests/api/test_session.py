"""Sessions: every table runs as a list of partitions through a runner."""

from __future__ import annotations

import logging

import pytest

import bamql
from bamql.errors import BamqlError
from bamql.exec import runner
from bamql.queries import all_queries
from bamql.storage.ingest import ingest

QUERIES = all_queries()


@pytest.fixture(scope="module")
def parted(tmp_path_factory, taxi_orc):
    d = tmp_path_factory.mktemp("parted3")
    ingest(taxi_orc, d / "trips", partitions=3)
    return d


def test_a_store_is_a_table_of_one_partition(taxi_store):
    with bamql.connect(taxi_store, device="cpu") as con:
        table = con.store("trips")
        assert len(table.parts) == 1 and not table.partitioned
        assert table.columns is table.parts[0].columns and table.rows == table.parts[0].rows
        res = con.sql(QUERIES["q06"])
        # its statistics are its partition's own, and EXPLAIN speaks of no partitions
        assert res.stats.device == "cpu" and res.stats.partition_wall_seconds == []
        assert not res.plan_text.startswith("1 partitions")
        assert "partitions" not in con.sql("EXPLAIN ANALYZE " + QUERIES["q06"]).plan_text


def test_partitions_are_planned_once_each(parted):
    with bamql.connect(parted, device="cpu") as con:
        table = con.store("trips")
        assert len(table.parts) == 3 and table.partitioned
        for _ in range(3):
            st = con.sql(QUERIES["q06"]).stats
        assert st.device == "cpu/local" and len(st.partition_wall_seconds) == 3
        # the session keeps the first partition's plan, the runner the others'
        assert len(con._local._plans) == 2


def test_faults_are_injected_by_wrapping_the_partition_run(parted, monkeypatch):
    # no hook in the engine: a test wraps the function the runner calls per partition
    calls = []
    run = runner.run_partition

    def counted(*args, **kwargs):
        calls.append(1)
        return run(*args, **kwargs)

    monkeypatch.setattr(runner, "run_partition", counted)
    # a kernel's query: COUNT(*) alone is answered from the table's metadata
    with bamql.connect(parted, device="cpu") as con:
        con.sql("SELECT SUM(fare_amount) FROM trips")
        assert len(calls) == 3

        def fail(*args, **kwargs):
            raise BamqlError("injected")

        monkeypatch.setattr(runner, "run_partition", fail)
        with pytest.raises(BamqlError, match="injected"):
            con.sql("SELECT SUM(fare_amount) FROM trips")


def test_out_of_memory_is_a_device_error(taxi_store, monkeypatch):
    def oom(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(runner, "run_partition", oom)
    with bamql.connect(taxi_store, device="cpu") as con:
        with pytest.raises(bamql.DeviceError, match="out of host memory"):
            con.sql("SELECT SUM(fare_amount) FROM trips")


def test_a_store_runs_here_even_with_a_cluster(taxi_store):
    # only partitioned tables go to the cluster: a single store is opened in this process
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        with bamql.connect(taxi_store, device="cpu", cluster=client) as con:
            assert con.sql(QUERIES["q06"]).stats.device == "cpu"
            assert "partitions" not in con.explain(QUERIES["q06"])


def test_the_note_goes_to_logging(taxi_store, monkeypatch, caplog):
    from bamql.api import session
    monkeypatch.setattr(session, "gpu_unavailable_reason", lambda: "no driver here")
    with caplog.at_level(logging.INFO, logger="bamql"), bamql.connect(taxi_store) as con:
        assert con.note == "using the CPU engine (no usable GPU: no driver here)"
    assert [(r.name, r.levelno, r.getMessage()) for r in caplog.records] == [
        ("bamql", logging.INFO, con.note)]
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="bamql"), bamql.connect(taxi_store, device="cpu"):
        pass
    assert caplog.records == []  # no note, nothing logged


def test_reading_in_place_removes_only_dead_processes_leftovers(tmp_path):
    import os
    import subprocess
    import sys

    import duckdb
    import pyarrow as pa
    import pyarrow.parquet as pq

    from bamql.api.session import Session
    from bamql.config import Config
    from tests.reference import session_rows

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # reaped: its pid names no process now
    with pytest.raises(ProcessLookupError):
        os.kill(dead.pid, 0)
    root = tmp_path / "c" / ".inplace"
    left = {name: root / name for name in (
        f"{dead.pid}-0", f"{dead.pid}-17",  # a process killed mid-query
        f"{os.getppid()}-0",  # a live process's (the test's parent)
        f"{os.getpid()}-{10**9}",  # this process's own
        "junk", f"{dead.pid}-x", f"x{dead.pid}-0", f"{dead.pid}", "0-0")}  # no pid-n name
    for d in left.values():
        (d / "trips").mkdir(parents=True)
        (d / "trips" / "manifest.json").write_text("{}")
    (root / f"{dead.pid}-3").write_text("a file, not a directory")
    pq.write_table(pa.table({"x": [1, 2, None]}), tmp_path / "x.parquet")
    sql = f"SELECT COUNT(*), SUM(x) FROM '{tmp_path}/x.parquet'"
    with Session(config=Config(device="cpu", file_cache=tmp_path / "c")) as s:
        assert session_rows(s, sql) == duckdb.sql(sql).fetchall()
        gone = {n for n, d in left.items() if not d.exists()}
        assert gone == {f"{dead.pid}-0", f"{dead.pid}-17"}
        assert (root / f"{dead.pid}-3").is_file()
        # only the session's first in-place directory sweeps: a later leftover stays
        (root / f"{dead.pid}-5").mkdir()
        assert session_rows(s, sql.replace("SUM", "MAX")) == duckdb.sql(
            sql.replace("SUM", "MAX")).fetchall()
        assert (root / f"{dead.pid}-5").is_dir()
    ours = [p.name for p in root.iterdir() if p.name.startswith(f"{os.getpid()}-")]
    assert ours == [f"{os.getpid()}-{10**9}"]  # the session removed its own when it closed


@pytest.mark.parametrize("sql", ["SELECT 1", "SELECT 1 + 2 AS x, 'a' AS s", "SELECT 2.5 * 4 AS v, NULL AS n",
                                 "SELECT COUNT(*) AS n", "SELECT CAST(7 AS DOUBLE) AS d"])
def test_a_select_without_from_answers_one_row_as_duckdb(sql):
    import duckdb

    with bamql.connect(device="cpu") as con:
        assert con.sql(sql).rows() == duckdb.sql(sql).fetchall()
        assert con.execute(sql).rows() == duckdb.sql(sql).fetchall()


def test_a_select_without_from_names_no_table_of_its_own():
    with bamql.connect(device="cpu") as con:
        for sql, text in (("SELECT *", "needs FROM"),
                          ("SELECT x", r"unknown column 'x' \(the query has no FROM\)")):
            with pytest.raises(BamqlError, match=text) as e:
                con.sql(sql)
            assert "bamql_one_row" not in str(e.value)
