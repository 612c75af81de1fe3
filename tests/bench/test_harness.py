from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest

from bamql.bench.rapids import dnf_filters, run_query
from bamql.queries import TAXI_QUERIES, load
from bamql.sql.translate import translate
from bamql.storage.store import PageStore
from tests.conftest import read_orc
from tests.reference import assert_same_rows, duck


@pytest.mark.slow  # in CI's slow run; the default run keeps lighter simulator checks
def test_bench_cpu_engines_write_json_and_plots(tmp_path):
    out = tmp_path / "res" / "cpu"
    r = subprocess.run([sys.executable, "-m", "bamql.cli", "bench", "--engines",
                        "bamql-cpu,duckdb,pyarrow-whole,rapids", "--rows", "200000", "--reps", "1",
                        "--queries", "q01,q06,q14", "--page-sizes", "512,4096",
                        "--selectivity", "0.001,0.02", "--workdir", str(tmp_path / "w"),
                        "--out", str(out)], capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr
    assert "skipping rapids" in r.stderr  # no cuDF here: a one-line notice, not an error
    data = json.loads(out.with_suffix(".json").read_text())
    assert data["config"]["engines"] == ["bamql-cpu", "duckdb", "pyarrow-whole"]
    assert all(run["ok"] for run in data["runs"])  # every answer agreed with DuckDB
    ours = [x for x in data["runs"] if x["engine"] == "bamql-cpu"]
    assert {x["page_size"] for x in ours} == {512, 4096} and {x["share"] for x in ours} == {0.001, 0.02}
    assert all(x["bytes_read"] <= x["whole_bytes"] for x in ours)
    # the page-granular minimum comes from the ORC and is a lower bound: no engine reads less
    assert all(x["page_amplification"] >= 1.0 for x in ours)
    assert all(x["page_min_bytes"] <= x["bytes_read"] for x in ours)
    for name in ("time", "bytes", "selectivity", "pagesize"):
        png = out.with_name(f"cpu-{name}.png")
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name


def test_bench_errors(tmp_path):
    for args, text in [(["--queries", "q99"], "unknown queries"),
                       (["--engines", "spark"], "unknown engine"),
                       (["--selectivity", "lots"], "--selectivity")]:
        r = subprocess.run([sys.executable, "-m", "bamql.cli", "bench", *args, "--rows", "1000",
                            "--workdir", str(tmp_path)], capture_output=True, text=True, timeout=120)
        assert r.returncode == 1 and text in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("name", TAXI_QUERIES)
def test_rapids_baseline_logic_on_pandas(taxi_store, taxi_orc, name):
    """The RAPIDS engine's query code, run on pandas (same API), agrees with DuckDB."""
    table = read_orc(taxi_orc)
    with PageStore(taxi_store / "trips") as s:
        q = translate(load(name), {"trips": s.columns})
    rows = run_query(table.to_pandas(), q)
    assert_same_rows(rows, duck(load(name), table), ordered=True)
    assert dnf_filters(q) == [[("pickup_location_id", "in", [255, 256])]]


def test_rapids_baseline_predicates_on_pandas(taxi_store, taxi_orc):
    table = read_orc(taxi_orc)
    df = table.to_pandas()
    assert isinstance(df, pd.DataFrame)
    sql = ("SELECT COUNT(*), AVG(fare_amount + tip_amount), MAX(trip_distance) FROM trips "
           "WHERE (payment_type = 1 OR passenger_count > 2) AND NOT trip_distance < 1 "
           "AND congestion_surcharge IS NOT NULL")
    with PageStore(taxi_store / "trips") as s:
        q = translate(sql, {"trips": s.columns})
    assert_same_rows(run_query(df, q), duck(sql, table), ordered=True)


@pytest.mark.slow  # in CI's slow run; the default run keeps lighter simulator checks
def test_scaleout_bench_runs_on_cpu_workers(tmp_path):
    pytest.importorskip("distributed")
    pytest.importorskip("duckdb")
    import json

    from bamql.bench.scaleout import check, run_scaleout, summary

    said: list[str] = []
    res = run_scaleout(100_000, (1, 2), ("q01", "q06"), reps=1, workdir=tmp_path / "w",
                       out=tmp_path / "so", say=said.append, device="cpu")
    check(res)  # every answer agreed with DuckDB
    # the preparation and the reference answers say how long they took
    assert any(m.startswith("100,000 rows in 2 partitions ready in ") for m in said)
    assert any(m.startswith("generated 100,000 rows as Parquet in ") for m in said)
    assert any(m.startswith("ingested 2 partitions in ") for m in said)
    assert any(m.startswith("DuckDB's answers (the reference) in ") for m in said)
    doc = json.loads((tmp_path / "so.json").read_text())
    assert doc["config"]["partitions"] == 2 and len(doc["runs"]) == 4
    # only the columns the queries read were ingested
    want = ["trip_distance", "pickup_location_id", "total_amount", "extra", "fare_amount",
            "tolls_amount", "mta_tax"]
    assert doc["config"]["columns"] == want
    (store,) = (tmp_path / "w").glob("r100000-*/parts-512-2-*/trips/part-000")
    with PageStore(store) as s:
        assert sorted(s.columns) == sorted(want)
    assert all(r["ok"] and r["median_s"] > 0 and r["bytes_read"] > 0 for r in doc["runs"])
    assert all(len(r["partition_seconds"]) == 2 and max(r["partition_seconds"]) <= r["median_s"] * 5
               for r in doc["runs"])
    # the time breakdown: a partition's call on its worker holds its engine time, and the
    # client's wait for the workers holds each call
    for r in doc["runs"]:
        walls, engine = r["partition_wall_seconds"], r["partition_seconds"]
        assert all(w >= e for w, e in zip(walls, engine, strict=True))
        assert max(walls) <= r["dispatch_seconds"] <= r["median_s"] * 5
        assert len(r["worker_seconds"]) == r["gpus"] and max(r["worker_seconds"]) <= r["dispatch_seconds"]
        assert len(r["worker_spans"]) == r["gpus"] and r["answers_seconds"] <= r["dispatch_seconds"]
        assert all(0 <= a <= b <= r["answers_seconds"] for a, b in r["worker_spans"])
        # CPU workers launch no kernels: no kernel time, on the device or around it
        assert r["partition_gpu_seconds"] == r["partition_kernel_seconds"] == [0.0, 0.0]
    assert "2 GPU(s)" in summary(res) and "where the time went" in summary(res)
    # the times and speed-ups as a PNG beside the JSON, and no temporary file left
    assert res["plots"] == [str(tmp_path / "so-time.png")]
    png = (tmp_path / "so-time.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert int.from_bytes(png[16:20], "big") == 12 * 110  # two panels: times and speed-ups
    assert sorted(p.name for p in tmp_path.iterdir()) == ["so-time.png", "so.json", "w"]


def test_a_cold_scaleout_needs_the_disk_backend_and_root(tmp_path, monkeypatch):
    # refused before anything is generated: a cold run of the GPU's in-memory backends
    # times nothing cold; without root the OS page cache cannot be dropped
    from bamql.bench import scaleout
    from bamql.errors import BamqlError

    with pytest.raises(BamqlError, match="the GPU's file backend, not host"):
        scaleout.run_scaleout(1000, (1,), ("q01",), backend="host", mode="cold",
                              workdir=tmp_path / "w", say=lambda m: None)
    monkeypatch.setattr(scaleout, "drop_os_cache", lambda: False)
    with pytest.raises(BamqlError, match="needs root"):
        scaleout.run_scaleout(1000, (1,), ("q01",), device="cpu", mode="cold",
                              workdir=tmp_path / "w", say=lambda m: None)
    with pytest.raises(BamqlError, match="mode takes warm or cold, not 'hot'"):
        scaleout.run_scaleout(1000, (1,), ("q01",), device="cpu", mode="hot",
                              workdir=tmp_path / "w", say=lambda m: None)
    assert not (tmp_path / "w").exists()


@pytest.mark.slow
def test_a_cold_scaleout_drops_the_os_cache_before_every_timed_run(tmp_path, monkeypatch):
    pytest.importorskip("distributed")
    pytest.importorskip("duckdb")
    from bamql.bench import scaleout

    drops: list[int] = []
    monkeypatch.setattr(scaleout, "drop_os_cache", lambda: drops.append(1) or True)
    res = scaleout.run_scaleout(50_000, (1, 2), ("q01", "t01"), reps=2, workdir=tmp_path / "w",
                                say=lambda m: None, device="cpu", mode="cold",
                                baselines=("duckdb",), plots=False, compress="zstd")
    scaleout.check(res)  # every answer, bamql's and DuckDB's, as DuckDB's reference
    assert res["config"]["mode"] == "cold" and all(r["mode"] == "cold" for r in res["runs"])
    # the partitions hold compressed copies (their directory says so)
    assert res["config"]["compress"] == "zstd"
    (part,) = (tmp_path / "w").glob("r50000-*/parts-512-2-*-zstd/trips/part-000")
    with PageStore(part) as s:
        assert s.manifest.streams is not None
    # the check up front, then each timed run: 2 queries x 2 reps x (2 worker counts + DuckDB)
    assert len(drops) == 1 + 2 * 2 * 3


@pytest.mark.slow
def test_scaleout_bench_prepares_only_then_reuses_the_table(tmp_path, capsys):
    pytest.importorskip("distributed")
    pytest.importorskip("duckdb")
    from bamql.cli.main import main

    args = ["bench-scaleout", "--rows", "50000", "--gpus", "1,2", "--queries", "q01",
            "--device", "cpu", "--reps", "1", "--workdir", str(tmp_path / "w")]
    assert main([*args, "--prepare-only", "--out", str(tmp_path / "none")]) == 0
    out, err = capsys.readouterr()
    (d,) = (tmp_path / "w").glob("r50000-*/parts-512-2-*")
    assert f"prepared: {d}" in out and "generated 50,000 rows as Parquet" in err
    assert not (tmp_path / "none.json").exists()  # nothing timed, nothing written
    stamp = (d / "trips" / "partitions.json").stat().st_mtime_ns
    # the timed run takes the prepared table as it is: nothing generated or ingested again
    assert main([*args, "--out", str(tmp_path / "so"), "--no-plots"]) == 0
    out, err = capsys.readouterr()
    assert "generated" not in err and "ingested" not in err and "q01" in out
    assert (d / "trips" / "partitions.json").stat().st_mtime_ns == stamp
    assert (tmp_path / "so.json").exists() and not (tmp_path / "so-time.png").exists()
    assert f"results: {tmp_path / 'so'}.json\n" in out


@pytest.mark.slow
def test_scaleout_bench_on_an_existing_cluster(tmp_path):
    distributed = pytest.importorskip("distributed")
    pytest.importorskip("duckdb")
    from bamql.bench.scaleout import check, run_scaleout

    with distributed.LocalCluster(n_workers=3, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        res = run_scaleout(100_000, (1, 2), ("q01",), reps=1, workdir=tmp_path / "w",
                           out=None, say=lambda m: None, device="cpu",
                           cluster=cluster.scheduler_address)
        assert len(cluster.scheduler_info["workers"]) == 3  # the cluster is left running
    check(res)
    assert res["config"]["gpus"] == [3] and res["config"]["partitions"] == 3
    assert [r["gpus"] for r in res["runs"]] == [3] and res["runs"][0]["ok"]


@pytest.mark.slow
def test_scaleout_bench_interleaves_the_gpu_counts(tmp_path, monkeypatch):
    pytest.importorskip("distributed")
    pytest.importorskip("duckdb")
    from bamql.api.session import Session
    from bamql.bench import scaleout

    turns: list[int] = []  # the worker count of each timed query, in order
    real = Session.sql

    def sql(self, text):
        res = real(self, text)
        turns.append(len(self.cluster.scheduler_info()["workers"]))
        return res

    monkeypatch.setattr(Session, "sql", sql)
    said: list[str] = []
    res = scaleout.run_scaleout(100_000, (1, 2), ("q01", "q06"), reps=3, workdir=tmp_path / "w",
                                out=None, say=said.append, device="cpu", interleave=True)
    scaleout.check(res)  # every answer agreed with DuckDB, on both counts
    assert res["config"]["interleave"] is True
    assert sorted((r["gpus"], r["query"]) for r in res["runs"]) == [
        (1, "q01"), (1, "q06"), (2, "q01"), (2, "q06")]
    assert all(len(r["times_s"]) == 3 for r in res["runs"])
    # both clusters warmed up (one run of each query) before any timing; then, per query,
    # the counts take turns in alternating order: 1 2, 2 1, 1 2
    assert turns[:4] == [1, 1, 2, 2]
    assert turns[4:] == [1, 2, 2, 1, 1, 2] * 2
    assert sum("warmed up" in m for m in said) == 2


def test_scaleout_plot_of_one_count_and_a_wrong_answer(tmp_path):
    from bamql.bench.plots import plot_scaleout

    # one count (a cluster as it is: no speed-up panel) and a wrong answer (marked "!")
    res = {"config": {"gpus": [3], "device": "cpu", "backend": "host", "rows": 1000,
                      "partitions": 3, "mode": "warm", "reps": 1},
           "runs": [{"gpus": 3, "query": "q01", "median_s": 0.01, "speedup": 1.0, "ok": True},
                    {"gpus": 3, "query": "q06", "median_s": 0.02, "speedup": 1.0, "ok": False}]}
    png = plot_scaleout(res, tmp_path / "one.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert int.from_bytes(png[16:20], "big") == 6 * 110  # one panel: 6 in at 110 dpi, not 12


def test_scaleout_plot_of_two_counts_beside_the_peers(tmp_path):
    from bamql.bench.plots import plot_scaleout

    # the peers' runs carry no speed-up: the speed-up panel reads bamql's runs only
    res = {"config": {"gpus": [1, 2], "device": "gpu", "backend": "host", "rows": 1000,
                      "partitions": 2, "mode": "warm", "reps": 1},
           "runs": [{"gpus": 1, "query": "q01", "median_s": 0.02, "speedup": 1.0, "ok": True},
                    {"gpus": 2, "query": "q01", "median_s": 0.01, "speedup": 2.0, "ok": True},
                    {"engine": "dask-cudf", "gpus": 2, "query": "q01", "median_s": 0.05,
                     "ok": True},
                    {"engine": "duckdb", "gpus": 0, "query": "q01", "median_s": 0.1, "ok": True}]}
    png = plot_scaleout(res, tmp_path / "two.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert int.from_bytes(png[16:20], "big") == 12 * 110  # both panels


def test_busiest_worker_follows_the_order_statistics_come_back_in():
    from bamql.bench.scaleout import _busiest

    # 5 partitions on 2 workers: worker 0 ran 0, 2, 4 (listed first), worker 1 ran 1, 3
    assert _busiest([1.0, 2.0, 3.0, 10.0, 20.0], 2) == 30.0
    assert _busiest([4.0, 5.0], 1) == 9.0


def test_engines_take_turns_within_each_repetition(tmp_path, monkeypatch):
    # a drifting machine must weigh on every engine alike: a, b, a, b, ... not a, a, b, b
    from bamql.bench import engines, harness

    calls: list[tuple[str, str]] = []

    class Logged(engines.BamqlEngine):
        def run(self, sql, q, mode):
            calls.append((self.name, mode))
            return super().run(sql, q, mode)

    fakes = {n: Logged("cpu", name=n) for n in ("bamql-cpu", "bamql-cpu-b")}
    monkeypatch.setattr(harness, "all_engines", lambda: fakes)
    cfg = harness.BenchConfig(rows=100_000, queries=("q01",), engines=tuple(fakes), reps=3,
                              page_sizes=(4096,), workdir=tmp_path / "w", out=tmp_path / "r",
                              plots=False)
    res = harness.run(cfg, say=lambda _: None)
    timed = [n for n, _ in calls[2:]]  # after one warm-up run each
    assert timed == ["bamql-cpu", "bamql-cpu-b"] * 3
    assert [r["engine"] for r in res["runs"]] == ["bamql-cpu", "bamql-cpu-b"]
    assert all(r["ok"] and len(r["times_s"]) == 3 for r in res["runs"])


def test_bench_clustered_stores_and_duckdb_sorted(tmp_path):
    """--cluster-by clusters bamql's stores and gives duckdb-sorted a copy sorted the same
    way; every engine agrees, and the clustered store reads fewer pages for Q6."""
    import pyarrow.parquet as pq

    from bamql.storage.partitioned import open_table

    out = tmp_path / "res"
    r = subprocess.run([sys.executable, "-m", "bamql.cli", "bench", "--engines",
                        "bamql-cpu,duckdb,duckdb-sorted", "--rows", "30000", "--reps", "1",
                        "--queries", "q06", "--page-sizes", "512", "--selectivity", "0.01",
                        "--workdir", str(tmp_path / "w"), "--out", str(out), "--no-plots",
                        "--cluster-by", "pickup_location_id"],
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr
    data = json.loads(out.with_suffix(".json").read_text())
    assert data["config"]["cluster_by"] == ["pickup_location_id"]
    assert {x["engine"] for x in data["runs"]} == {"bamql-cpu", "duckdb", "duckdb-sorted"}
    assert all(x["ok"] for x in data["runs"])
    base = next((tmp_path / "w").glob("r30000-*"))
    copy = pq.read_table(base / "parquet-sorted-pickup_location_id" / "trips.parquet")
    zones = copy.column("pickup_location_id").to_numpy()
    assert len(zones) == 30000 and (zones[1:] >= zones[:-1]).all()
    with open_table(base / "data-512-gauto-cpickup_location_id" / "trips") as t:
        assert t.parts[0].manifest.cluster_by == ("pickup_location_id",)
    ours = next(x for x in data["runs"] if x["engine"] == "bamql-cpu")
    assert ours["bytes_read"] * 10 < ours["whole_bytes"]
    r = subprocess.run([sys.executable, "-m", "bamql.cli", "bench", "--engines", "duckdb-sorted",
                        "--rows", "1000", "--workdir", str(tmp_path / "w2")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "needs --cluster-by" in r.stderr and "Traceback" not in r.stderr


def test_bench_zordered_stores_and_duckdb_sorted_share_one_row_order(tmp_path):
    """--cluster-by zorder(a,b) Z-orders bamql's store and writes duckdb-sorted's copy in
    the same row order (the same function over the same rows); every engine agrees."""
    import pyarrow.parquet as pq

    from bamql.storage.partitioned import open_table

    out = tmp_path / "res"
    r = subprocess.run([sys.executable, "-m", "bamql.cli", "bench", "--engines",
                        "bamql-cpu,duckdb-sorted", "--rows", "20000", "--reps", "1",
                        "--queries", "q06", "--page-sizes", "512", "--selectivity", "0.01",
                        "--workdir", str(tmp_path / "w"), "--out", str(out), "--no-plots",
                        "--cluster-by", "zorder(pickup_location_id,pickup_datetime)"],
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr
    data = json.loads(out.with_suffix(".json").read_text())
    assert data["config"]["cluster_order"] == "zorder"
    assert all(x["ok"] for x in data["runs"]) and len(data["runs"]) == 2
    base = next((tmp_path / "w").glob("r20000-*"))
    keys = ["pickup_location_id", "pickup_datetime"]
    copy = pq.read_table(base / ("parquet-sorted-" + "-".join(keys) + "-zorder") / "trips.parquet")
    with open_table(base / ("data-512-gauto-c" + "-".join(keys) + "-zorder") / "trips") as t:
        m = t.parts[0].manifest
        assert m.cluster_by == tuple(keys) and m.cluster_order == "zorder"
        stored = t.parts[0].to_table(keys)
    for k in keys:
        assert stored.column(k).to_pylist() == copy.column(k).to_pylist()


def test_bench_packed_stores_record_each_columns_bytes(tmp_path):
    """--pack benchmarks bit-packed stores (kept apart from plain ones) and the JSON gives
    each column's plain and stored bytes per page size."""
    out = tmp_path / "res"
    args = [sys.executable, "-m", "bamql.cli", "bench", "--engines", "bamql-cpu,duckdb", "--rows",
            "30000", "--reps", "1", "--queries", "q01,q06", "--page-sizes", "512",
            "--workdir", str(tmp_path / "w"), "--out", str(out), "--no-plots"]
    for extra in ([], ["--pack"]):
        r = subprocess.run(args + extra, capture_output=True, text=True, timeout=900)
        assert r.returncode == 0, r.stderr
        data = json.loads(out.with_suffix(".json").read_text())
        assert data["config"]["pack"] is bool(extra)
        assert all(x["ok"] for x in data["runs"])
        cols = {c["column"]: c for c in data["config"]["columns"]["512"]}
        zone = cols["pickup_location_id"]
        if extra:  # 1..265 in 9 bits instead of int16
            assert zone["bits"] == 9 and zone["ratio"] > 1.7
            assert zone["stored_bytes"] < zone["plain_bytes"]
        else:
            assert all(c["bits"] == 0 and c["ratio"] == 1.0 for c in cols.values())
    stores = sorted(p.name for p in next((tmp_path / "w").glob("r30000-*")).glob("data-*"))
    assert stores == ["data-512-gauto", "data-512-gauto-packed"]


def test_cold_runs_follow_an_untimed_cold_run_of_each_engine(tmp_path, monkeypatch):
    # a cold plan (disk paths) may compile kernels a warm plan did not: not in a timed run
    from bamql.bench import engines, harness

    calls: list[str] = []

    class Logged(engines.BamqlEngine):
        def run(self, sql, q, mode):
            calls.append(f"{self.name}:{mode}")
            return super().run(sql, q, mode)

    fakes = {n: Logged("cpu", name=n) for n in ("bamql-cpu", "bamql-cpu-b")}
    monkeypatch.setattr(harness, "all_engines", lambda: fakes)
    monkeypatch.setattr(harness, "drop_os_cache", lambda: calls.append("drop") or True)
    cfg = harness.BenchConfig(rows=100_000, queries=("q01",), engines=tuple(fakes), reps=2,
                              modes=("warm", "cold"), page_sizes=(4096,),
                              workdir=tmp_path / "w", out=tmp_path / "r", plots=False)
    res = harness.run(cfg, say=lambda _: None)
    cold = calls[calls.index("bamql-cpu:cold") - 1:]
    untimed = ["drop", "bamql-cpu:cold", "drop", "bamql-cpu-b:cold"]
    assert cold == untimed + untimed * 2  # the untimed round, then the timed repetitions
    assert all(len(r["times_s"]) == 2 for r in res["runs"])


def test_scaleout_bench_times_the_peers_beside_bamql(tmp_path):
    """``baselines``: DuckDB timed on the same rows (and checked), dask-cudf skipped in one
    line where it is not installed; speed-ups are bamql's own."""
    pytest.importorskip("distributed")
    from bamql.bench.scaleout import check, run_scaleout, summary

    said: list[str] = []
    res = run_scaleout(50_000, (1,), ("q01",), reps=1, workdir=tmp_path / "w", say=said.append,
                       device="cpu", baselines=("dask-cudf", "duckdb"))
    check(res)
    (duck,) = [r for r in res["runs"] if r.get("engine") == "duckdb"]
    assert duck["ok"] and duck["gpus"] == 0 and duck["median_s"] > 0 and "speedup" not in duck
    ours = [r for r in res["runs"] if r.get("engine", "bamql") == "bamql"]
    assert [r["speedup"] for r in ours] == [1.0]
    if not any(r.get("engine") == "dask-cudf" for r in res["runs"]):
        assert any(m.startswith("dask-cudf skipped: it is not usable here") for m in said)
    assert "the peers on the same rows" in summary(res)


def test_a_wrong_answer_keeps_its_first_rows_beside_the_reference():
    import datetime
    import decimal
    import json

    from bamql.bench.scaleout import _rows_apart

    assert _rows_apart(True, [(1,)], [(1,)]) == {}
    apart = _rows_apart(False, [(1, decimal.Decimal("1.5"), None)] * 30,
                        [(1, datetime.datetime(2019, 1, 1), 2.0)])
    assert len(apart["got"]) == 20 and apart["got"][0] == ["1", "1.5", "None"]
    assert apart["want"] == [["1", "2019-01-01 00:00:00", "2.0"]]
    json.dumps(apart)  # the run's JSON takes it
