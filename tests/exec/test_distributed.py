"""Partitioned tables on Dask (LocalCluster, CPU engine): same answers as one node."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

import bamql
from bamql.api.session import gpu_unavailable_reason
from bamql.queries import all_queries
from bamql.storage.ingest import ingest
from tests.conftest import selects_slow
from tests.reference import assert_same_rows

distributed = pytest.importorskip("distributed")
QUERIES = all_queries()
#: the queries compared with one node in the default run, one of each shape (fused
#: aggregates, a GROUP BY in the kernel and a hashed one, top-k rows, a quantile, the plan
#: tree's join and window); every bench query in the slow run
QUICK = ("q01", "q03", "q06", "q14", "t03", "h02", "k01", "m01", "j01", "w01")
GPU_REASON = gpu_unavailable_reason()
#: one pytest-xdist worker runs the module: its fixtures (a partitioned ingest, every query
#: compiled and answered on one node) are built once, not once per worker
pytestmark = pytest.mark.xdist_group("distributed")


@pytest.fixture(scope="module")
def parted(tmp_path_factory, taxi_orc):
    d = tmp_path_factory.mktemp("parted")
    ingest(taxi_orc, d / "trips", partitions=4)
    return d


@pytest.fixture(scope="module")
def queries(request) -> dict[str, str]:
    return QUERIES if selects_slow(request.config) else {n: QUERIES[n] for n in QUICK}


@pytest.fixture(scope="module")
def single(taxi_store, queries):
    with bamql.connect(taxi_store, device="cpu") as c:
        return {n: c.sql(q).rows() for n, q in queries.items()}


def test_partitioned_ingest_and_local_run(parted, single, queries):
    from bamql.storage.partitioned import PartitionedTable

    with PartitionedTable(parted / "trips") as t:
        assert len(t.parts) == 4 and t.rows == 60_000
        assert t.verify() == []
    with bamql.connect(parted, device="cpu") as con:
        for name, sql in queries.items():
            assert_same_rows(con.sql(sql).rows(), single[name], ordered="ORDER BY" in sql)
        text = con.sql("EXPLAIN " + QUERIES["q06"]).plan_text
        assert "4 partitions" in text


@pytest.mark.parametrize("workers", [1, *(pytest.param(n, marks=pytest.mark.slow) for n in (2, 4))])
def test_every_query_distributed_matches_one_node(parted, single, queries, workers):
    with distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        with bamql.connect(parted, device="cpu", cluster=client) as con:
            for name, sql in queries.items():
                res = con.sql(sql)
                assert_same_rows(res.rows(), single[name], ordered="ORDER BY" in sql)
            res = con.sql("EXPLAIN ANALYZE " + QUERIES["q06"])
            st = res.stats
            assert st.device == "cpu/dask" and st.bytes_read > 0  # summed over the workers
            text = "\n".join(r[0] for r in res.rows())
            assert "4 partitions:" in text and "the client waited" in text
            assert "the longest worker call took" in text and len(st.worker_seconds) == workers
            assert len(st.partition_seconds) == 4  # every partition's own statistics came back
            # each call starts after the client's send and ends before its last answer came
            assert len(st.worker_spans) == workers
            assert all(0 <= a <= b <= st.answers_seconds for a, b in st.worker_spans)
            assert st.answers_seconds <= st.dispatch_seconds


def test_repeated_queries_run_on_the_workers_event_loop(parted, single, monkeypatch):
    # a call known to be quick skips the thread hop; its answers stay the same
    from bamql.exec import dask_worker
    monkeypatch.setattr(dask_worker, "INLINE_S", 30.0)  # "quick" whatever this machine's speed
    dask_worker._calls.clear()
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        with bamql.connect(parted, device="cpu", cluster=client) as con:
            for _ in range(3):
                for name in ("q01", "q14"):
                    sql = QUERIES[name]
                    assert_same_rows(con.sql(sql).rows(), single[name], ordered="ORDER BY" in sql)
    # both workers (threads of this process) ran both queries' calls inline once they were
    # known to be quick
    assert sum(quick for _, quick in dask_worker._calls.values()) == 4


@pytest.mark.slow
@pytest.mark.parametrize("direct", [False, True],
                         ids=["relayed", "direct"])
def test_a_worker_killed_mid_query(parted, single, direct):
    # relayed: answers pass through the scheduler; direct: from the worker to the client
    sql = QUERIES["q06"]

    def hold_partitions_back(seconds: float) -> None:
        """On a worker: each partition of its process sleeps ``seconds`` first (its module's
        ``run_partition`` wrapped); defined here, so that it travels by value."""
        import time

        from bamql.exec import dask_worker
        run = dask_worker.run_partition

        def slow(*args, **kwargs):
            time.sleep(seconds)
            return run(*args, **kwargs)

        dask_worker.run_partition = slow

    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster, direct_to_workers=direct) as client:
        client.run(hold_partitions_back, 3.0)  # each partition sleeps 3 s first
        with bamql.connect(parted, device="cpu", cluster=client) as con:
            out: dict = {}

            def query():
                try:
                    out["rows"] = con.sql(sql).rows()
                except Exception as e:  # re-raised below
                    out["error"] = e

            pids = client.run(os.getpid)  # worker address -> process id
            th = threading.Thread(target=query)
            th.start()
            time.sleep(1.5)  # tasks are running (each partition sleeps 3 s first)
            os.kill(next(iter(pids.values())), signal.SIGKILL)
            th.join(timeout=300)
            assert not th.is_alive()
            assert "error" not in out, out.get("error")
            assert_same_rows(out["rows"], single["q06"], ordered=False)  # never a wrong answer


def test_unreachable_cluster_is_a_clear_error(parted, monkeypatch):
    # the session's own connect call, with its timeout cut to 1 s: nothing listens on port
    # 1, so the client retries until the timeout whatever its length
    client = distributed.Client

    def quick(*args, **kwargs):
        assert kwargs.get("timeout"), "the session's connect has no timeout"
        return client(*args, **{**kwargs, "timeout": "1s"})

    monkeypatch.setattr(distributed, "Client", quick)
    with pytest.raises(bamql.BamqlError, match="cannot reach the Dask scheduler"):
        bamql.connect(parted, device="cpu", cluster="tcp://127.0.0.1:1")


def test_one_worker_per_gpu_cluster_and_affinity(parted, single, capfd):
    # the per-GPU cluster (nannies seeing one GPU each) runs here on CPU workers, as in CI
    from bamql.exec.distributed import local_gpu_cluster

    capfd.readouterr()
    with local_gpu_cluster(2) as cluster, distributed.Client(cluster) as client:
        client.wait_for_workers(2, timeout=60)
        envs = client.run(lambda: os.environ.get("CUDA_VISIBLE_DEVICES"))
        # each worker's first visible GPU is its own (dask-cuda, when installed, lists the
        # others after it)
        assert sorted(v.split(",")[0] for v in envs.values()) == ["0", "1"]
        with bamql.connect(parted, device="cpu", cluster=client) as con:
            for name in ("q01", "q06", "q14"):
                sql = QUERIES[name]
                assert_same_rows(con.sql(sql).rows(), single[name], ordered="ORDER BY" in sql)
        # partition i goes to worker i mod n: each worker opened only its own partitions
        from bamql.exec import dask_worker
        opened = client.run(lambda: sorted(os.path.basename(p) for p in dask_worker._stores))
        seen = sorted(p for ps in opened.values() for p in ps)
        assert seen == ["part-000", "part-001", "part-002", "part-003"]
        assert all(len(ps) == 2 for ps in opened.values())
    # the worker processes' start and stop notes did not reach the user's terminal
    _, err = capfd.readouterr()
    assert "INFO" not in err, err[:500]


def test_local_gpu_cluster_lets_a_slow_worker_exit(capfd):
    # a worker freeing a big pinned copy of its partitions takes seconds to exit; Dask's own
    # nanny kills it after 4 s, with a WARNING on the user's terminal (seen at 4 B rows)
    import time

    from bamql.exec.distributed import local_gpu_cluster

    class SlowExit(distributed.WorkerPlugin):
        def teardown(self, worker):
            time.sleep(5)

    capfd.readouterr()
    with local_gpu_cluster(1) as cluster, distributed.Client(cluster) as client:
        client.wait_for_workers(1, timeout=60)
        client.register_plugin(SlowExit(), name="slow-exit")
        t0 = time.perf_counter()
    assert time.perf_counter() - t0 >= 5  # it waited for the worker's own exit
    _, err = capfd.readouterr()
    assert "still alive" not in err and "killing" not in err, err[:500]


@pytest.mark.gpu
@pytest.mark.skipif(GPU_REASON is not None, reason=f"no GPU: {GPU_REASON}")  # before the fixtures
def test_gpu_workers_match_one_node(parted, single, queries):
    for backend in ("host", "file"):
        with bamql.connect(parted, device="gpu", backend=backend, cluster="local-gpus") as con:
            for name, sql in queries.items():
                assert_same_rows(con.sql(sql).rows(), single[name], ordered="ORDER BY" in sql)
            st = con.sql(QUERIES["q06"]).stats
            assert st.device == "gpu/dask" and st.backend == backend
        # and in this process, one partition after another on the session's GPU
        with bamql.connect(parted, device="gpu", backend=backend) as con:
            for name in ("q01", "q06", "q14"):
                sql = QUERIES[name]
                assert_same_rows(con.sql(sql).rows(), single[name], ordered="ORDER BY" in sql)


def test_a_session_closes_the_cluster_it_started(parted, single):
    con = bamql.connect(parted, device="cpu", cluster="local-gpus:2")
    client = con.cluster
    assert len(client.scheduler_info()["workers"]) == 2
    assert client.direct_to_workers  # answers skip the scheduler
    assert_same_rows(con.sql(QUERIES["q01"]).rows(), single["q01"], ordered=False)
    con.close()
    assert client.status == "closed"


def test_partitioned_ingest_from_a_program_read_from_stdin(tmp_path, taxi_orc):
    """Spawned processes re-import the main module from its file; a program piped to
    ``python -`` has none, so its partitions are written in-process, not lost."""
    import subprocess
    import sys

    code = (f"from bamql.storage.ingest import ingest\n"
            f"r = ingest({[str(p) for p in taxi_orc]!r}, {str(tmp_path / 'p')!r}, partitions=2)\n"
            f"print('rows', r.rows)\n")
    r = subprocess.run([sys.executable, "-"], input=code, capture_output=True, text=True,
                       timeout=300, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "rows 60000" in r.stdout
    with bamql.connect(tmp_path / "p", device="cpu") as con:
        assert con.sql("SELECT COUNT(*) FROM p").rows() == [(60000,)]


def _runner(client):
    from bamql.config import Backend, Device
    from bamql.exec.distributed import DaskRunner

    return DaskRunner(client, Device.CPU, Backend.FILE, None)


def _listed(path):
    """A table of the one partition at ``path`` as the runner reads one (no digest: the
    worker opens whatever is there)."""
    from types import SimpleNamespace

    return SimpleNamespace(paths=[path], parts=[SimpleNamespace(
        path=path, manifest=SimpleNamespace(pages_meta_sha256=None))])


def test_a_worker_error_is_raised_on_the_client_as_it_was(parted):
    # an error on a worker comes back as an answer and is raised as itself, not retried
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        with bamql.connect(parted, device="cpu") as con:
            plan = con.plan(con._translate(QUERIES["q06"]))
        runner = _runner(client)
        with pytest.raises(bamql.BamqlError, match="no-such-partition"):
            runner.run(_listed(parted / "no-such-partition"), plan, "file")
        # any other error of a partition: one line naming the worker, at once, not retried
        t0 = time.perf_counter()
        with pytest.raises(bamql.BamqlError,
                           match=r"a partition failed on worker .*: KeyError.* \(raised at \w+\.py:\d+ in "):
            runner.run(_listed(parted / "trips" / "part-000"), plan, "no medium")
        assert time.perf_counter() - t0 < 5


def test_workers_that_join_later_get_partitions(parted, single):
    # the next query after the worker list is checked again deals partitions to workers
    # started after the first query, with the same answers
    from bamql.exec import distributed as dist
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        with bamql.connect(parted, device="cpu", cluster=client) as con:
            assert_same_rows(con.sql(QUERIES["q06"]).rows(), single["q06"], ordered=False)
            cluster.scale(3)
            client.wait_for_workers(3, timeout=60)
            dist._workers.pop(client, None)  # as if RECHECK_S had passed
            for name in ("q01", "q06"):
                assert_same_rows(con.sql(QUERIES[name]).rows(), single[name], ordered=False)
            st = con.sql(QUERIES["q01"]).stats
            assert len(st.worker_seconds) == 3  # every worker answered a share


def test_queries_are_tasks_the_scheduler_sees(parted, single, monkeypatch):
    # BAMQL_DASK_DISPATCH=task: each query is one task per worker, through the scheduler
    # (the dashboard's task stream shows them), and always on the same workers;
    # clear_caches reaches every worker
    monkeypatch.setenv("BAMQL_DASK_DISPATCH", "task")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        with bamql.connect(parted, device="cpu", cluster=client) as con:
            with distributed.get_task_stream(client) as stream:
                for _ in range(3):
                    assert_same_rows(con.sql(QUERIES["q01"]).rows(), single["q01"], ordered=False)
            runner = con._dask
            workers = runner.workers()
            assert runner.clear_caches() == {w: 0 for w in workers}  # no GPU engines here
    tasks = [t for t in stream.data if str(t["key"]).startswith("bamql_partitions")]
    assert len(tasks) == 6  # three queries, two workers each
    assert sorted(t["worker"] for t in tasks) == sorted(workers * 3)


def test_queries_call_one_actor_per_worker_by_default(parted, single):
    # the default dispatch: a PartitionActor on each worker, made by the first query and
    # called directly by every later one; the scheduler runs no task per query
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        with bamql.connect(parted, device="cpu", cluster=client) as con:
            assert con._dask.dispatch == "actor"
            with distributed.get_task_stream(client) as stream:
                for _ in range(3):
                    for name in ("q01", "q14"):
                        res = con.sql(QUERIES[name])
                        assert_same_rows(res.rows(), single[name], ordered="ORDER BY" in QUERIES[name])
                        assert len(res.stats.worker_seconds) == 2
            workers = con._dask.workers()
            assert sorted(con._dask._actors) == sorted(workers)
            assert con._dask.dispatch == "actor"  # never fell back to tasks
    keys = [str(t["key"]) for t in stream.data]
    assert not [k for k in keys if k.startswith(("bamql_partitions", "bamql_task"))]
    assert len([k for k in keys if k.startswith("PartitionActor")]) == 2  # made once each


def test_eight_threads_share_one_session_on_the_cluster(parted, single):
    # concurrent queries of one session through the workers' actors (made by whichever
    # thread comes first): every answer as one node's
    from concurrent.futures import ThreadPoolExecutor

    names = ["q01", "q06", "q14", "q03"] * 4
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        with bamql.connect(parted, device="cpu", cluster=client) as con:
            def one(name: str):
                return name, con.sql(QUERIES[name]).rows()

            with ThreadPoolExecutor(8) as pool:
                for name, rows in pool.map(one, names):
                    assert_same_rows(rows, single[name], ordered="ORDER BY" in QUERIES[name])
            assert sorted(con._dask._actors) == sorted(con._dask.workers())


def test_a_closed_session_lets_dask_retire_its_workers(parted, single):
    # an actor keeps Dask from retiring its worker: the session releases its actors as it
    # closes, and a session on a client that is not the process's default one calls its
    # own actors (never falling back to tasks)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client, \
            distributed.Client(cluster, set_as_default=False) as other:
        with bamql.connect(parted, device="cpu", cluster=client) as con:
            assert_same_rows(con.sql(QUERIES["q06"]).rows(), single["q06"], ordered=False)
            first = con._dask.workers()[0]
        with bamql.connect(parted, device="cpu", cluster=other) as con2:
            with distributed.get_task_stream(other) as stream:
                assert_same_rows(con2.sql(QUERIES["q01"]).rows(), single["q01"], ordered=False)
            assert con2._dask.dispatch == "actor" and len(con2._dask._actors) == 2
        assert not [t for t in stream.data if str(t["key"]).startswith("bamql_partitions")]
        # the releases travel in the clients' batched messages: on a loaded machine (CI
        # beside other work) that took more than 20 s once
        retired, deadline = {}, time.monotonic() + 60
        while not retired and time.monotonic() < deadline:  # once the releases reached
            retired = client.retire_workers([first], close_workers=True)  # the scheduler
            time.sleep(0.2)
        assert first in retired  # no actor holds it


def _leave(dask_worker) -> None:
    """On a worker (``client.run``): close it, once this call has answered."""
    dask_worker.loop.add_callback(dask_worker.close)


def test_a_worker_that_leaves_takes_its_actor_with_it(parted, single):
    # a worker retired between queries: the next query's call to its actor fails, and the
    # query runs again on the workers there are now (the cluster may have started one in
    # its place), with the same answer
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        with bamql.connect(parted, device="cpu", cluster=client) as con:
            assert_same_rows(con.sql(QUERIES["q06"]).rows(), single["q06"], ordered=False)
            first, second = con._dask.workers()
            client.run(_leave, workers=[first])  # the worker closes (its actor with it)
            deadline = time.monotonic() + 30
            while first in client.scheduler_info()["workers"] and time.monotonic() < deadline:
                time.sleep(0.05)
            for _ in range(2):
                res = con.sql(QUERIES["q06"])
                assert_same_rows(res.rows(), single["q06"], ordered=False)
            now = con._dask.workers()
            assert first not in now and second in now
            assert sorted(con._dask._actors) == sorted(now)
            assert len(res.stats.worker_seconds) == len(now)


def test_a_worker_merges_its_partitions_before_answering(parted):
    # one accumulator set per worker, the same as merging the partitions' own; each
    # partition's statistics still come back, in partition order
    import asyncio
    import pickle

    import numpy as np

    from bamql.config import Backend, Device
    from bamql.exec.dask_worker import bamql_partitions
    from bamql.exec.runner import LocalRunner
    from bamql.kernels import accumulate

    with bamql.connect(parted, device="cpu") as con:
        q = con._translate(QUERIES["q06"])
        table = con.store(q.table)
        plan = con.plan(q)
        one = LocalRunner(Device.CPU, Backend.FILE).run(table, plan, con._medium())
        paths = [str(p) for p in table.paths]
        args = (q, plan.key_domains, con._medium(), Device.CPU, Backend.FILE, None)
    status, (acc, stats), seconds, (start, end) = pickle.loads(
        asyncio.run(bamql_partitions(pickle.dumps((paths[:3], args)))))
    assert status == "ok" and 0 < seconds and start <= end
    want = accumulate.combine(accumulate.combine(one.accs[0], one.accs[1]), one.accs[2])
    assert accumulate.combine_all([]) is None
    assert sorted(acc) == sorted(want)
    for k in want:
        np.testing.assert_allclose(acc[k], want[k], rtol=1e-12)
    assert [s.rows for s in stats] == [s.rows for s in one.stats[:3]] and sum(s.rows for s in stats) > 0


def test_a_worker_answers_from_the_store_the_session_opened(tmp_path):
    """A worker kept each partition's store by path: after an append (the table rewritten
    and swapped in), a new session's queries were answered from the old rows; a session
    still holding the old table is refused in one line, not answered from the new rows
    with the old table's plan (review)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from bamql.errors import BamqlError
    from bamql.storage.ingest import append

    pq.write_table(pa.table({"x": pa.array(range(6000)), "k": pa.array([i % 50 for i in range(6000)])}),
                   tmp_path / "a.parquet")
    pq.write_table(pa.table({"x": pa.array(range(6000, 6100)), "k": pa.array([i % 90 for i in range(100)])}),
                   tmp_path / "b.parquet")
    ingest([str(tmp_path / "a.parquet")], tmp_path / "db" / "t", partitions=2)
    sql = ["SELECT COUNT(*), SUM(x) FROM t", "SELECT COUNT(*) FROM (SELECT k FROM t GROUP BY k)"]
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        with bamql.connect(tmp_path / "db", device="cpu", cluster=client) as old:
            assert [old.sql(q).rows() for q in sql] == [[(6000, 17997000)], [(50,)]]
            append([str(tmp_path / "b.parquet")], tmp_path / "db" / "t")
            assert [old.sql(q).rows() for q in sql] == [[(6000, 17997000)], [(50,)]]  # its snapshot
            with bamql.connect(tmp_path / "db", device="cpu", cluster=client) as new:
                assert [new.sql(q).rows() for q in sql] == [[(6100, 18601950)], [(90,)]]
            with pytest.raises(BamqlError, match="changed since this session opened it"):
                old.sql(sql[0])
