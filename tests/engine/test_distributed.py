"""Partitioned tables on Dask (LocalCluster, CPU engine): same answers as one node."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

import bamql
from bamql.queries import all_queries
from bamql.storage.ingest import ingest
from tests.reference import assert_same_rows

distributed = pytest.importorskip("distributed")
QUERIES = all_queries()


@pytest.fixture(scope="module")
def parted(tmp_path_factory, taxi_orc):
    d = tmp_path_factory.mktemp("parted")
    ingest(taxi_orc, d / "trips", partitions=4)
    return d


@pytest.fixture(scope="module")
def single(taxi_store):
    with bamql.connect(taxi_store, device="cpu") as c:
        return {n: c.sql(q).rows() for n, q in QUERIES.items()}


def test_partitioned_ingest_and_local_run(parted, single):
    from bamql.storage.partitioned import PartitionedTable

    with PartitionedTable(parted / "trips") as t:
        assert len(t.parts) == 4 and t.rows == 60_000
        assert t.verify() == []
    with bamql.connect(parted, device="cpu") as con:
        for name, sql in QUERIES.items():
            assert_same_rows(con.sql(sql).rows(), single[name], ordered="ORDER BY" in sql)
        text = con.sql("EXPLAIN " + QUERIES["q06"]).plan_text
        assert "4 partitions" in text


@pytest.mark.parametrize("workers", [1, 2, 4])
def test_every_query_distributed_matches_one_node(parted, single, workers):
    with distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        with bamql.connect(parted, device="cpu", cluster=client) as con:
            for name, sql in QUERIES.items():
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
    from bamql.engine import dask_worker

    monkeypatch.setattr(dask_worker, "INLINE_S", 30.0)  # "quick" whatever this machine's speed

    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        with bamql.connect(parted, device="cpu", cluster=client) as con:
            for _ in range(3):
                for name in ("q01", "q14"):
                    sql = QUERIES[name]
                    assert_same_rows(con.sql(sql).rows(), single[name], ordered="ORDER BY" in sql)

        def quick(dask_worker) -> int:
            return dask_worker.extensions["bamql"].quick_calls

        # each worker ran both queries' calls inline once they were known to be quick
        assert list(client.run(quick).values()) == [2, 2]


@pytest.mark.parametrize("direct,spin", [pytest.param(False, 0.0, marks=pytest.mark.slow), (True, 0.0),
                                         pytest.param(True, 0.05, marks=pytest.mark.slow)],
                         ids=["relayed", "direct", "direct-polled"])
def test_a_worker_killed_mid_query(parted, single, direct, spin, monkeypatch):
    # relayed: calls pass through the scheduler; direct: client to worker (the clients
    # bamql makes itself), waited for by the Client's loop or polled from the query's thread
    monkeypatch.setenv("BAMQL_DASK_SPIN_S", str(spin))  # read by connect()
    sql = QUERIES["q06"]

    def hold_partitions_back(seconds: float) -> None:
        """On a worker: each partition task of its process sleeps ``seconds`` first (the
        test-only seam ``distributed.before_partition``); defined here, so that it travels
        by value."""
        import functools
        import time

        from bamql.engine import distributed as dist

        dist.before_partition = functools.partial(time.sleep, seconds)

    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster, direct_to_workers=direct) as client:
        client.run(hold_partitions_back, 3.0)  # each partition task sleeps 3 s first
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
            time.sleep(1.5)  # tasks are running (each sleeps 3 s first)
            os.kill(next(iter(pids.values())), signal.SIGKILL)
            th.join(timeout=300)
            assert not th.is_alive()
            assert "error" not in out, out.get("error")
            assert_same_rows(out["rows"], single["q06"], ordered=False)  # never a wrong answer


def test_unreachable_cluster_is_a_clear_error(parted):
    with pytest.raises(bamql.BamqlError, match="cannot reach the Dask scheduler"):
        bamql.connect(parted, device="cpu", cluster="tcp://127.0.0.1:1")


def test_one_worker_per_gpu_cluster_and_affinity(parted, single, capfd):
    # the per-GPU cluster (nannies seeing one GPU each) runs here on CPU workers, as in CI
    from bamql.engine.distributed import local_gpu_cluster

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
        from bamql.engine import distributed as dist

        opened = client.run(lambda: sorted(os.path.basename(p) for p in dist._stores))
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

    from bamql.engine.distributed import local_gpu_cluster

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
def test_gpu_workers_match_one_node(parted, single):
    from bamql.engine.session import gpu_unavailable_reason

    why = gpu_unavailable_reason()
    if why is not None:
        pytest.skip(f"no GPU: {why}")
    for backend in ("host", "file"):
        with bamql.connect(parted, device="gpu", backend=backend, cluster="local-gpus") as con:
            for name, sql in QUERIES.items():
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
    assert client.direct_to_workers  # calls skip the scheduler
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


def test_unreachable_workers_fall_back_to_the_scheduler_relaying(monkeypatch):
    # a client that cannot reach the workers directly: the first call fails with OSError
    # while the scheduler still lists the same workers; the retry goes relayed
    import pickle

    from bamql.engine import distributed as dist

    monkeypatch.setattr(dist.time, "sleep", lambda s: None)
    now = time.monotonic()
    done = pickle.dumps(("ok", ("acc", ["stats"]), 0.001, (now + 1.0, now + 1.001)))

    class Rpc:
        async def bamql_partitions(self, blob):
            raise OSError("Timed out trying to connect to tcp://w1")

    class Scheduler:
        async def proxy(self, msg, worker):
            assert msg["op"] == "bamql_partitions" and worker == "tcp://w1"
            return done

    class Client:
        direct_to_workers = True
        scheduler = Scheduler()
        plugins: list = []

        def scheduler_info(self):
            return {"workers": {"tcp://w1": {}}}

        def register_plugin(self, plugin):
            self.plugins.append(plugin.name)

        def rpc(self, address):
            return Rpc()

        def sync(self, fn, *args):
            import asyncio

            return asyncio.run(fn(*args))

    client = Client()
    accs, stats, seconds, spans, answers_s = dist._run_on_workers(client, ["p0"], ())
    assert (accs, stats, seconds) == (["acc"], ["stats"], [0.001]) and answers_s >= 0
    assert len(spans) == 1 and 0 < spans[0][0] < spans[0][1]  # from the client's send
    assert client.direct_to_workers is False
    assert client.plugins == ["bamql-partitions"] * 2  # registered, and again on the retry


def test_a_worker_error_is_raised_on_the_client_as_it_was(parted):
    # an error on a worker comes back as an answer and is raised as itself, not retried
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        from bamql.engine import distributed as dist

        with pytest.raises(bamql.BamqlError, match="no-such-partition"):
            dist._run_on_workers(client, [str(parted / "no-such-partition")], (None,) * 6)
        # any other error of a partition: one line naming the worker, at once, not retried
        t0 = time.perf_counter()
        with pytest.raises(bamql.BamqlError, match="a partition failed on worker .*: KeyError"):
            dist._run_on_workers(client, [str(parted / "trips" / "part-000")], ("not a query",) + (None,) * 5)
        assert time.perf_counter() - t0 < 5


def test_workers_that_join_later_get_the_handler(parted, single):
    # the plugin reaches workers started after the first query; the next query (after the
    # worker list is checked again) deals partitions to them too, with the same answers
    from bamql.engine import distributed as dist

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
        runners = client.run(lambda dask_worker: "bamql" in dask_worker.extensions)
        assert list(runners.values()) == [True] * 3


def test_polled_calls_give_the_same_answers(parted, single, monkeypatch):
    # direct calls polled from the querying thread (the default on machines of 8+ cores)
    from bamql.engine import distributed as dist

    monkeypatch.setenv("BAMQL_DASK_SPIN_S", "0.05")  # read by connect()
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster, direct_to_workers=True) as client:
        with bamql.connect(parted, device="cpu", cluster=client) as con:
            for name, sql in QUERIES.items():
                assert_same_rows(con.sql(sql).rows(), single[name], ordered="ORDER BY" in sql)
            assert client in dist._pollers.by_client  # this thread's poller answered them
            poller = dist._pollers.by_client[client]
    poller.close()  # also after its cluster is gone, and twice
    poller.close()
    assert poller.loop.is_closed()


def test_a_bad_polling_setting_is_a_clear_error(parted, monkeypatch):
    from bamql.config import Config

    monkeypatch.setenv("BAMQL_DASK_SPIN_S", "fast")
    with pytest.raises(bamql.BamqlError, match="BAMQL_DASK_SPIN_S takes seconds"):
        Config.from_env()
    with pytest.raises(bamql.BamqlError, match="BAMQL_DASK_SPIN_S takes seconds"):
        bamql.connect(parted, device="cpu")
    monkeypatch.setenv("BAMQL_DASK_SPIN_S", "0")
    assert Config.from_env().dask_spin_s == 0.0


def test_a_worker_merges_its_partitions_before_answering(parted):
    # one accumulator set per worker, the same as merging the partitions' own; each
    # partition's statistics still come back, in partition order
    import asyncio
    import pickle

    import numpy as np

    from bamql.engine import accumulate
    from bamql.engine import distributed as dist
    from bamql.engine.dask_worker import PartitionRunner

    with bamql.connect(parted, device="cpu") as con:
        q = con._translate(QUERIES["q06"])
        store = con.store(q.table)
        domains = con._domains(q, store)
        paths = [str(p) for p in store.paths]
        args = (q, domains, con._medium(), "cpu", None, None)
        one = [dist.run_partition(p, *args) for p in paths[:3]]
    runner = PartitionRunner()
    try:
        status, (acc, stats), seconds, (start, end) = pickle.loads(
            asyncio.run(runner.run(pickle.dumps((paths[:3], args)))))
    finally:
        runner.close()
    assert status == "ok" and 0 < seconds and start <= end
    want = accumulate.combine(accumulate.combine(one[0][0], one[1][0]), one[2][0])
    assert accumulate.combine_all([]) is None
    assert sorted(acc) == sorted(want)
    for k in want:
        np.testing.assert_allclose(acc[k], want[k], rtol=1e-12)
    assert [s.rows for s in stats] == [s.rows for _, s in one] and sum(s.rows for s in stats) > 0
