"""One runner for every operator (engine.runner): the hashed GROUP BY and the rows step
(top-k with late materialization, row queries) run a partitioned table's partitions
through the table's runner, in this process or on a Dask cluster's workers (a local CPU
cluster here), with the same answers as each other and as DuckDB."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import bamql
from bamql.exec import hashagg, partials
from bamql.fused import domains
from bamql.storage.ingest import ingest
from tests.reference import assert_same_rows, duck

distributed = pytest.importorskip("distributed")
#: one pytest-xdist worker runs the module: its fixtures (a partitioned ingest, a cluster)
#: are built once
pytestmark = pytest.mark.xdist_group("runner")

ROOT = Path(bamql.__file__).parent


def trips(n: int = 4000) -> pa.Table:
    """Few distinct fares (ties on every order key), NaN and NULL among them, -0.0; tips
    with NULLs; distances of a wide float range; vendors with NULLs; a unique id."""
    i = np.arange(n)
    rng = np.random.default_rng(11)
    fare = np.array([5.5, 7.0, 12.25, 52.0, np.nan, -0.0, 0.0, 7.0])[(i * 7) % 8]
    tip = np.array([0.0, 1.5, 2.0, 2.0, 3.25])[(i * 3) % 5]
    return pa.table({
        "id": pa.array(i, pa.int64()),
        "vendor_id": pa.array(i % 3 + 1, pa.int64(), mask=i % 17 == 0),
        "fare_amount": pa.array(fare, mask=i % 11 == 0),
        "tip_amount": pa.array(tip, mask=i % 13 == 0),
        "trip_distance": pa.array(np.round(rng.uniform(0, 40, n), 1), mask=i % 19 == 0),
        "pickup_location_id": pa.array(i % 5 + 1, pa.int64()),
    })


@pytest.fixture(scope="module")
def parted(tmp_path_factory) -> tuple[Path, pa.Table]:
    d = tmp_path_factory.mktemp("runner")
    t = trips()
    pq.write_table(t, d / "t.parquet")
    ingest([d / "t.parquet"], d / "data" / "trips", page_size=512, partitions=4)
    return d / "data", t


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as c:
        yield c


#: (NaN keys order alike only in an ORDER BY: the reference's unordered comparison sorts
#: rows by value, which NaN leaves unsorted)
HASHED = [
    "SELECT fare_amount, COUNT(*), COUNT(tip_amount), SUM(tip_amount), MIN(trip_distance), "
    "MAX(tip_amount), AVG(vendor_id), SUM(id) FROM trips GROUP BY fare_amount ORDER BY 1",
    "SELECT vendor_id, trip_distance, COUNT(*), SUM(fare_amount), STDDEV(tip_amount), "
    "MAX(fare_amount) FROM trips GROUP BY vendor_id, trip_distance ORDER BY 1, 2",
    "SELECT fare_amount, COUNT(*) FROM trips WHERE vendor_id = 2 GROUP BY fare_amount "
    "ORDER BY 2 DESC, 1 LIMIT 5",
    # rows in the first partition alone: the others' partials hold no group
    "SELECT trip_distance, COUNT(*), SUM(tip_amount) FROM trips WHERE id < 300 "
    "GROUP BY trip_distance ORDER BY 1",
    "SELECT fare_amount, COUNT(*) FROM trips WHERE id < 0 GROUP BY fare_amount",
]

TOPK = [
    # ties on every key (only the keys selected: tied rows are alike), NaN and NULL fares
    "SELECT fare_amount, tip_amount, pickup_location_id FROM trips "
    "ORDER BY fare_amount DESC, tip_amount DESC, pickup_location_id LIMIT 10",
    "SELECT fare_amount, tip_amount, pickup_location_id FROM trips "
    "ORDER BY fare_amount, tip_amount DESC NULLS FIRST, pickup_location_id LIMIT 10 OFFSET 4",
    "SELECT id, fare_amount, tip_amount, trip_distance FROM trips "
    "ORDER BY fare_amount DESC, tip_amount DESC, pickup_location_id, id LIMIT 10",
    "SELECT id, fare_amount * 2 AS f2 FROM trips WHERE vendor_id = 1 "
    "ORDER BY fare_amount DESC NULLS FIRST, id DESC LIMIT 12",
    "SELECT id, trip_distance FROM trips ORDER BY trip_distance DESC, id LIMIT 10",
    "SELECT id, tip_amount FROM trips WHERE tip_amount > 3 AND id % 7 = 0",
    # quantiles: the values read after the kernel, by the same runner
    "SELECT vendor_id, MEDIAN(tip_amount), quantile_disc(id, 0.3), "
    "quantile_cont(trip_distance, 0.75) FROM trips GROUP BY vendor_id ORDER BY 1",
]


def _rows(con, sql: str) -> list[tuple]:
    return con.sql(sql).rows()


@pytest.fixture(scope="module")
def local(parted) -> dict[str, list[tuple]]:
    data, _ = parted
    with bamql.connect(data, device="cpu") as con:
        return {sql: _rows(con, sql) for sql in HASHED + TOPK}


@pytest.mark.parametrize("sql", HASHED)
def test_hashed_group_by_on_the_cluster_matches_local_and_duckdb(parted, client, local, sql):
    data, t = parted
    with bamql.connect(data, device="cpu", cluster=client) as con:
        text = con.explain(sql)
        assert "4 partitions of 4,000 rows, run on the Dask cluster" in text, text
        assert "Hash aggregate over trips" in text and "CPU kernel" in text
        res = con.sql(sql)
        got = res.rows()
    assert len(res.stats.worker_seconds) == 2  # one call per worker, each its two partitions
    assert res.stats.device == "cpu/dask" and len(res.stats.partition_seconds) == 4
    ordered = "ORDER BY" in sql
    assert_same_rows(got, local[sql], ordered)
    assert_same_rows(got, duck(sql, t), ordered)


@pytest.mark.parametrize("sql", TOPK)
def test_top_k_rows_and_quantiles_on_the_cluster_match_local_and_duckdb(parted, client, local, sql):
    data, t = parted
    with bamql.connect(data, device="cpu", cluster=client) as con:
        assert "run on the Dask cluster" in con.explain(sql)
        res = con.sql(sql)
        got = res.rows()
    assert len(res.stats.worker_seconds) == 2  # the rows (or quantiles' values) read on both
    assert res.stats.device == "cpu/dask"
    ordered = "ORDER BY" in sql
    # the same rows in the same order: ties in partition order, then row order
    assert_same_rows(got, local[sql], ordered=True)
    assert_same_rows(got, duck(sql, t), ordered)


def test_limit_without_order_takes_the_first_partitions_rows(parted, client):
    data, t = parted
    sql = "SELECT id, tip_amount FROM trips LIMIT 5 OFFSET 1000"
    with bamql.connect(data, device="cpu") as con:
        one = con.sql(sql)
    with bamql.connect(data, device="cpu", cluster=client) as con:
        got = con.sql(sql).rows()
    assert_same_rows(got, one.rows(), ordered=True)
    # partitions of 1,000 rows each in row order: the second's first rows
    assert [r[0] for r in got] == list(range(1000, 1005))
    assert len(one.stats.partition_seconds) == 2  # in this process the later ones are skipped


def test_hash_tables_past_the_largest_give_way_to_the_numpy_step_on_workers(
        parted, client, local, monkeypatch):
    # the workers are threads of this process: the patched limits and hook reach them
    data, t = parted
    seen: list[int] = []
    orig = hashagg.numpy_partial
    monkeypatch.setattr(hashagg, "numpy_partial", lambda *a: seen.append(1) or orig(*a))
    monkeypatch.setattr(domains, "FIRST_TABLE", 16)
    monkeypatch.setattr(domains, "LARGEST_TABLE", 64)
    sql = HASHED[1]  # a group per (vendor, distance): past 64 slots
    with bamql.connect(data, device="cpu", cluster=client) as con:
        got = con.sql(sql).rows()
    assert len(seen) == 4  # every partition, through the NumPy step
    assert_same_rows(got, local[sql], False)
    assert_same_rows(got, duck(sql, t), False)


def test_a_hash_task_pickles_and_merges_like_one_partial(parted):
    # what a worker receives and what it sends back: a task and partials that pickle, and
    # partials merged in any grouping give the same groups
    import pickle

    from bamql.config import Backend, Device

    data, _ = parted
    with bamql.connect(data, device="cpu") as con:
        q = con._translate(HASHED[0])
        table = con.store("trips")
        task = pickle.loads(pickle.dumps(hashagg.hash_task(q, table.columns, con._medium())))
        parts = [pickle.loads(pickle.dumps(task.run(s, Device.CPU, Backend.FILE, None)[0]))
                 for s in table.parts]
    whole = partials.finish_partial(task.merge(parts), q)
    paired = partials.finish_partial(task.merge([task.merge(parts[::2]), task.merge(parts[1::2])]), q)
    assert whole.n == paired.n == 7  # 6 fares (0.0 and -0.0 one, NaN one) and NULL
    order = lambda g: np.lexsort([g.keys[0][0], g.keys[0][1]])  # noqa: E731
    a, b = order(whole), order(paired)
    for (v1, ok1), (v2, ok2) in zip(whole.aggs, paired.aggs, strict=True):
        np.testing.assert_array_equal(ok1[a], ok2[b])
        np.testing.assert_allclose(np.asarray(v1[a], float), np.asarray(v2[b], float), rtol=1e-12)


def test_explain_says_where_the_partitions_run(parted):
    data, _ = parted
    with bamql.connect(data, device="cpu") as con:
        for sql in (HASHED[0], TOPK[0]):
            assert "4 partitions of 4,000 rows, run in this process" in con.explain(sql)


def test_the_dask_path_uses_only_public_dask_api():
    # no private attribute of a Dask object, no import from Dask's internal modules
    private = re.compile(r"\b(?:distributed|dask|client|self\.client|cluster)(?:\.\w+)*\._\w")
    internal = re.compile(r"^\s*(?:from|import)\s+(?:distributed|dask)\.\w", re.MULTILINE)
    for path in (ROOT / "exec" / "distributed.py", ROOT / "exec" / "dask_worker.py",
                 ROOT / "bench" / "scaleout.py"):
        text = path.read_text()
        assert not private.findall(text), (path.name, private.findall(text))
        assert not internal.findall(text), (path.name, internal.findall(text))


def test_top_k_ties_across_partitions_keep_partition_order(parted, client):
    # partitions 0 and 2 run on one worker, 1 and 3 on the other: rows that tie on the only
    # order key, in partitions 1 and 2, come in partition order, as in this process
    data, t = parted
    sql = ("SELECT id, pickup_location_id FROM trips WHERE id >= 1995 "
           "ORDER BY pickup_location_id DESC LIMIT 3")
    with bamql.connect(data, device="cpu") as con:
        one = con.sql(sql).rows()
    with bamql.connect(data, device="cpu", cluster=client) as con:
        got = con.sql(sql).rows()
    assert got == one == [(1999, 5), (2004, 5), (2009, 5)]
    assert [r[1] for r in duck(sql, t)] == [5, 5, 5]


SIM = textwrap.dedent("""
    import tempfile
    from pathlib import Path
    import distributed
    import pyarrow.parquet as pq
    import bamql
    import bamql.gpu.device
    from bamql.exec.hashagg import ON_GPU
    from bamql.storage.ingest import ingest
    from tests.exec.test_runner import HASHED, TOPK, trips
    from tests.reference import assert_same_rows, duck

    # the workers are threads of this process: they take the simulator for their GPU
    bamql.gpu.device.gpu_available = lambda: None
    if __name__ == "__main__":
        d = Path(tempfile.mkdtemp())
        t = trips(1200)
        pq.write_table(t, d / "t.parquet")
        ingest([d / "t.parquet"], d / "data" / "trips", page_size=512, partitions=2)
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                      dashboard_address=None) as c, distributed.Client(c) as cl:
            with bamql.connect(d / "data", device="gpu", backend="host", cache="64KiB",
                               cluster=cl) as con:
                for sql in HASHED[:2] + TOPK[:1]:
                    text = con.explain(sql)
                    assert "Dask cluster" in text and ("Hash aggregate" not in text
                                                       or ON_GPU in text), text
                    res = con.sql(sql)
                    assert res.stats.device == "gpu/dask", res.stats.device
                    assert_same_rows(res.rows(), duck(sql, t), ordered="ORDER BY" in sql)
        print("gpu workers ok")
""")


def test_gpu_workers_group_in_their_kernels_hash_tables_in_the_simulator(tmp_path):
    # each worker's GPU engine (the CUDA simulator) groups its partitions in the fused
    # kernel's hash table; the top-k reads on the workers' CPUs
    script = tmp_path / "sim.py"  # a file: the cluster's workers may re-import the main module
    script.write_text(SIM)
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1",
               PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    r = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True,
                       timeout=900, cwd=Path(__file__).resolve().parents[2])
    assert r.returncode == 0, r.stderr[-3000:]
    assert "gpu workers ok" in r.stdout
