"""Partitioned tables: one task per partition, in this process or on a Dask cluster.

Each task plans its partition (its own zone maps) with the whole table's group-key domains,
runs the CPU or the GPU engine and returns its partial aggregates; on a cluster each worker
merges those of its partitions, and the client merges the workers'.
Workers keep their opened stores, and on GPUs their engine with its page caches, in
process-local state across queries. Each worker runs its partitions in a comm handler of
its own (``engine.dask_worker``), one message per query and worker; partition ``i`` goes to
worker ``i mod n`` (sorted addresses), so each partition's cache stays on one GPU. When a
worker is lost the whole query runs again on the workers that remain (``RETRIES`` tries); a
query that keeps failing fails with one line, never with a partial answer.

``local_gpu_cluster`` starts one single-threaded worker per GPU of this machine
(dask-cuda's ``LocalCUDACluster`` when installed, otherwise a ``SpecCluster`` of nannies
that each see one GPU through ``CUDA_VISIBLE_DEVICES``).
"""

from __future__ import annotations

import logging
import os
import pickle
import threading
import time
import weakref
from collections.abc import Callable

import numpy as np

from bamql.config import Backend, Config, Device
from bamql.engine import accumulate
from bamql.engine.stats import ColumnIO, QueryStats
from bamql.errors import BamqlError
from bamql.lru import LRU
from bamql.planner import ir
from bamql.planner.cost import MEDIA
from bamql.planner.physical import plan_query
from bamql.storage.store import PageStore

_stores: dict[str, PageStore] = {}  # per process: a worker's open partitions
_engines: dict = {}  # per process: (backend, cache) -> GpuEngine, caches kept across queries
_plans = LRU(1024)  # per process: (path, query, domains, medium) -> plan of that partition
_lock = threading.Lock()
#: Tries per partition task (the first run and the retries after a lost worker).
RETRIES = 3
#: Test-only seam: called at the start of every partition task of this process. None in
#: production; tests set it (on workers too, through ``client.run``) to hold partitions
#: back or make them fail.
before_partition: Callable[[], None] | None = None


def _store(path: str) -> PageStore:
    with _lock:
        s = _stores.get(path)
        if s is None:
            s = _stores[path] = PageStore(path)
        return s


def gpu_engine(backend: Backend | str, cache: int | None = None):
    """This process's GPU engine for ``backend`` (made once; its page caches persist), with
    this process's ``BAMQL_*`` settings."""
    with _lock:
        e = _engines.get((backend, cache))
        if e is None:
            from bamql.gpu.device import gpu_available
            from bamql.gpu.engine import GpuEngine

            why = gpu_available()
            if why is not None:
                raise BamqlError(f"no usable GPU on worker {os.uname().nodename}: {why}")
            config = Config.from_env(device=Device.GPU, backend=backend, cache=cache)
            e = _engines[(backend, cache)] = GpuEngine(None, config)
        return e


def clear_caches() -> int:
    """Empty the GPU page caches of this process (run on every worker); returns how many."""
    with _lock:
        for e in _engines.values():
            e.clear_cache()
        return len(_engines)


def run_partition(path: str, q: ir.Query, domains, medium: str, device: str = "cpu",
                  backend: str | None = None, cache: int | None = None,
                  engine=None) -> tuple[dict, QueryStats]:
    """Run ``q`` on one partition: (reduced accumulators, its I/O statistics).

    On ``device="gpu"`` it runs on ``engine`` or this process's GPU engine for ``backend``.
    """
    if before_partition is not None:
        before_partition()
    t_wall = time.perf_counter()
    store = _store(path)
    key = (path, q, domains, medium)
    plan = _plans.get(key)
    if plan is None:  # a partition's metadata does not change: its plans can be reused
        plan = plan_query(q, store, MEDIA[medium], domains=domains)
        _plans.put(key, plan)
    stats = QueryStats(device, backend or Backend.FILE, store.rows)
    for a in plan.access:
        c = store.column(a.column)
        stats.columns[a.column] = ColumnIO(a.column, a.role, a.path, c.itemsize,
                                           c.n_pages * store.page_size)
    t0 = time.perf_counter()
    if device == Device.GPU:
        acc = (engine or gpu_engine(backend or Backend.HOST, cache)).run(plan, store, stats)
    else:
        from bamql.engine.cpu import run_cpu

        acc = run_cpu(plan, store, stats)
        stats.seconds = time.perf_counter() - t0 - stats.compile_seconds
    stats.wall_seconds = time.perf_counter() - t_wall - stats.compile_seconds
    return acc, stats


_workers: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # client -> (workers, time)


#: Seconds between checks of a cluster's worker list (a scheduler round trip) when
#: queries follow each other; a lost worker is noticed at once by the failed call.
RECHECK_S = 2.0


def _workers_for(client, fresh: bool) -> tuple[str, ...]:
    """The addresses of ``client``'s workers (sorted), each with the partition handler
    (``dask_worker.PartitionPlugin``, registered once per client and again after a
    failure); the list is checked again every ``RECHECK_S`` seconds."""
    from bamql.engine.dask_worker import PartitionPlugin

    have = _workers.get(client)
    now = time.monotonic()
    if not fresh and have is not None and now - have[1] < RECHECK_S:
        return have[0]
    workers = tuple(sorted(client.scheduler_info().get("workers", {})))
    if not workers:
        raise ConnectionError("the Dask cluster has no workers")
    if fresh or have is None or have[0] != workers:
        client.register_plugin(PartitionPlugin())  # idempotent: runners and caches stay
    _workers[client] = (workers, now)
    return workers


def _direct(rpc, calls: list[tuple[str, bytes]]) -> list:
    """The handler calls, one per ``(worker, blob)``, over ``rpc(worker)`` connections."""
    from bamql.engine.dask_worker import HANDLER

    return [getattr(rpc(w), HANDLER)(blob=b) for w, b in calls]


async def _call_all(client, calls: list[tuple[str, bytes]]) -> list:
    """Send each ``(worker, blob)`` to its worker's handler, all at once, from the client's
    event loop: straight to the worker, or relayed by the scheduler when the client does not
    connect directly to workers."""
    import asyncio

    from bamql.engine.dask_worker import HANDLER

    if getattr(client, "direct_to_workers", False):
        sends = _direct(client.rpc, calls)
    else:
        sends = [client.scheduler.proxy(msg={"op": HANDLER, "blob": b}, worker=w) for w, b in calls]
    return await asyncio.gather(*sends)


class _Poller:
    """Direct calls to the workers from the thread that runs the query: a private event loop
    with its own Dask connection pool, polled while the workers run (up to the session's
    ``Config.dask_spin_s``, ``BAMQL_DASK_SPIN_S``) instead of sleeping.

    Through ``client.sync`` a call hops to the Client's event-loop thread and back, and each
    sleeping thread wakes late; polling from the calling thread avoids both. The loop does
    not hand the GIL over on every pass (``time.sleep(0)``): that gives the saving back.
    Measurements: ``docs/measurements.md``.
    """

    def __init__(self, client) -> None:
        import asyncio

        from distributed.core import ConnectionPool

        self.loop = asyncio.new_event_loop()
        self.pool = ConnectionPool(limit=64, connection_args=getattr(client, "connection_args", None))
        self.loop.run_until_complete(self.pool.start())

    async def _polled(self, calls: list[tuple[str, bytes]], spin_s: float) -> list:
        import asyncio

        answers = asyncio.ensure_future(asyncio.gather(*_direct(self.pool, calls)))
        end = time.perf_counter() + spin_s
        while not answers.done() and time.perf_counter() < end:
            await asyncio.sleep(0)  # one pass of the loop: the sockets polled, not slept on
        return await answers

    def call(self, calls: list[tuple[str, bytes]], spin_s: float) -> list:
        return self.loop.run_until_complete(self._polled(calls, spin_s))

    def close(self) -> None:
        """Close the connections and the loop (again: nothing)."""
        import asyncio

        if self.loop.is_closed():
            return
        try:
            if asyncio._get_running_loop() is None:
                self.loop.run_until_complete(self.pool.close())
            else:  # a finalizer run inside another loop: drop the connections at once
                for comms in (*self.pool.available.values(), *self.pool.occupied.values()):
                    for c in list(comms):
                        c.abort()
        except Exception:  # connections already gone with their cluster
            pass
        finally:
            self.loop.close()


_pollers = threading.local()  # .by_client: client -> this thread's _Poller


def _polled_call(client, calls: list[tuple[str, bytes]], spin_s: float) -> list:
    """``calls`` through this thread's poller for ``client`` (made on first use, dropped
    after a failure)."""
    mine = getattr(_pollers, "by_client", None)
    if mine is None:
        mine = _pollers.by_client = weakref.WeakKeyDictionary()
    p = mine.get(client)
    if p is None:
        p = mine[client] = _Poller(client)
        weakref.finalize(client, p.close)
    try:
        return p.call(calls, spin_s)
    except BaseException:
        del mine[client]
        p.close()
        raise


def _answers(client, calls: list[tuple[str, bytes]], spin_s: float) -> list:
    """The workers' answers to ``calls``: polled from this thread for up to ``spin_s``
    seconds where that applies, otherwise through the Client's event loop."""
    import asyncio

    if (spin_s > 0 and getattr(client, "direct_to_workers", False)
            and asyncio._get_running_loop() is None):  # not inside a notebook's loop
        return _polled_call(client, calls, spin_s)
    return client.sync(_call_all, client, calls)


def _calls(workers: tuple[str, ...], paths: list[str], args: tuple) -> list[tuple[str, bytes]]:
    """One ``(worker, pickled call)`` per worker with partitions: partition ``i`` on worker
    ``i mod n``, so each partition's cache stays on one GPU."""
    share: list[list[str]] = [[] for _ in workers]
    for i, p in enumerate(paths):
        share[i % len(workers)].append(p)
    return [(w, pickle.dumps((ps, args), protocol=5))
            for w, ps in zip(workers, share, strict=True) if ps]


def _run_on_workers(client, paths: list[str], args: tuple,
                    spin_s: float = 0.0) -> tuple[list, list, list, list, float]:
    """Partition ``i`` on worker ``i mod n``: (each worker's merged accumulators, each
    partition's statistics, worker by worker, each worker call's time on its worker, each
    call's start and end from the client's send, the time from the send to the last
    answer). On a lost worker, again on the workers that remain."""
    last: BaseException | None = None
    for attempt in range(RETRIES):
        try:
            calls = _calls(_workers_for(client, fresh=attempt > 0), paths, args)
            accs, stats, seconds, spans = [], [], [], []
            t_send = time.monotonic()
            answers = _answers(client, calls, spin_s)
            t_back = time.monotonic() - t_send
            for (w, _), answer in zip(calls, answers, strict=True):
                if answer is None:  # no handler there (a worker that joined just now)
                    raise ConnectionError("a worker has no bamql handler yet")
                out = pickle.loads(answer)
                if out[0] == "error":  # raised by the partition itself: trying again won't help
                    e = out[1]
                    if isinstance(e, BamqlError):
                        raise e
                    text = str(e).strip().splitlines()[0] if str(e).strip() else ""
                    raise BamqlError(f"a partition failed on worker {w}: {type(e).__name__}: {text}")
                accs.append(out[1][0])
                stats += out[1][1]
                seconds.append(out[2])
                spans.append((out[3][0] - t_send, out[3][1] - t_send))
            return accs, stats, seconds, spans, t_back
        except BamqlError:
            raise
        except Exception as e:  # a lost worker, a cluster gone away...
            last = e
            if attempt + 1 < RETRIES:
                time.sleep(0.5 * (attempt + 1))  # let the scheduler notice a lost worker
            have = _workers.get(client)
            if (isinstance(e, OSError) and getattr(client, "direct_to_workers", False)
                    and have is not None
                    and tuple(sorted(client.scheduler_info().get("workers", {}))) == have[0]):
                # the workers are alive but cannot be reached from here (a cluster behind a
                # gateway): let the scheduler relay the calls from now on
                client.direct_to_workers = False
    first = str(last).strip().splitlines()[0] if str(last).strip() else type(last).__name__
    raise BamqlError(f"distributed query failed after {RETRIES} tries: "
                     f"{type(last).__name__}: {first}")


def run_partitioned(paths: list[str], q: ir.Query, domains, medium: str, client=None,
                    stats: QueryStats | None = None, device: str = "cpu", backend: str | None = None,
                    cache=None, engine=None, spin_s: float = 0.0) -> dict[str, np.ndarray]:
    """All partitions of a query; merged accumulators (``stats`` absorbs theirs).

    Without ``client`` they run here one after another (on ``engine`` for the GPU); with
    it, a direct call polls for the workers' answers for up to ``spin_s`` seconds.
    """
    if client is None:
        results = [run_partition(p, q, domains, medium, device, backend, cache, engine)
                   for p in paths]
        accs, part_stats = [a for a, _ in results], [st for _, st in results]
    else:
        t0 = time.perf_counter()
        accs, part_stats, worker_seconds, spans, answers_s = _run_on_workers(
            client, paths, (q, domains, medium, device, backend, cache), spin_s)
        if stats is not None:
            stats.dispatch_seconds = time.perf_counter() - t0
            stats.worker_seconds = worker_seconds
            stats.worker_spans = spans
            stats.answers_seconds = answers_s
    total = accumulate.combine_all(accs)
    if stats is not None:
        for st in part_stats:
            stats.absorb(st)
    return total


def local_gpu_cluster(n_gpus: int | None = None):
    """A Dask cluster on this machine with one single-threaded worker per GPU.

    Parameters
    ----------
    n_gpus
        How many GPUs (the first ``n_gpus``); all of them when None.
    """
    try:
        import distributed
    except ImportError:
        raise BamqlError("Dask is not installed; pip install 'bamql[dask]'") from None
    if n_gpus is None:
        from numba import cuda

        n_gpus = len(cuda.gpus) if cuda.is_available() else 0
    if n_gpus < 1:
        raise BamqlError("no GPUs for a local GPU cluster")
    try:
        from dask_cuda import LocalCUDACluster
    except ImportError:
        LocalCUDACluster = None
    if LocalCUDACluster is not None:
        return LocalCUDACluster(CUDA_VISIBLE_DEVICES=list(range(n_gpus)), threads_per_worker=1,
                                memory_limit=0, dashboard_address=":0")
    # one nanny per GPU; memory_limit=0: pinned host copies of stores must not get a worker
    # restarted by the memory monitor; silence_logs: the worker processes' start and stop
    # notes (a dozen INFO lines each) stay out of the user's terminal, warnings do not;
    # GpuNanny: time for a worker to free its pinned copies as it exits
    from bamql.engine.dask_worker import GpuNanny

    workers = {f"gpu-{i}": {"cls": GpuNanny,
                            "options": {"nthreads": 1, "memory_limit": 0,
                                        "silence_logs": logging.WARNING,
                                        "env": {"CUDA_VISIBLE_DEVICES": str(i)}}}
               for i in range(n_gpus)}
    scheduler = {"cls": distributed.Scheduler, "options": {"dashboard_address": ":0"}}
    return distributed.SpecCluster(scheduler=scheduler, workers=workers, silence_logs=40)


def connect_cluster(cluster):
    """A Dask client for ``cluster``: a Client, a scheduler address, or ``"local-gpus"``
    (``"local-gpus:N"``) for one worker per GPU of this machine.

    Clients made here connect directly to the workers: actor calls then skip the
    scheduler, which otherwise relays each of them (2 workers on a 2-core machine: 1.39 ms
    a round trip relayed, 0.94 ms direct). A Client passed in keeps its own setting."""
    if cluster is None or hasattr(cluster, "submit"):
        return cluster
    try:
        from distributed import Client
    except ImportError:
        raise BamqlError("Dask is not installed; pip install 'bamql[dask]'") from None
    if isinstance(cluster, str) and cluster.startswith("local-gpus"):
        n = cluster.partition(":")[2]
        if cluster != "local-gpus" and not (cluster.startswith("local-gpus:") and n.isdigit()):
            raise BamqlError(f"cluster {cluster!r}: write local-gpus or local-gpus:N (N GPUs)")
        c = local_gpu_cluster(int(n) if n else None)
        client = Client(c, direct_to_workers=True)
        client.wait_for_workers(len(c.workers), timeout=120)  # before partitions are dealt out
        return client
    try:
        return Client(cluster, timeout="10s", direct_to_workers=True)
    except Exception as e:
        raise BamqlError(f"cannot reach the Dask scheduler at {cluster!r}: {e}") from None
