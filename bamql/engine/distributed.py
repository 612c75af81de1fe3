"""Partitioned tables: one task per partition, in this process or on a Dask cluster.

Each task plans its partition (its own zone maps) with the whole table's group-key domains,
runs the CPU or the GPU engine and returns its partial aggregates; the client merges them.
Workers keep their opened stores, and on GPUs their engine with its page caches, in
process-local state across queries. Each worker holds one actor (``PartitionWorker``);
partition ``i`` goes to the actor of worker ``i mod n`` (sorted addresses), so each
partition's cache stays on one GPU. When a worker is lost the whole query runs again on
fresh actors on the workers that remain (``RETRIES`` tries); a query that keeps failing
fails with one line, never with a partial answer.

``local_gpu_cluster`` starts one single-threaded worker per GPU of this machine
(dask-cuda's ``LocalCUDACluster`` when installed, otherwise a ``SpecCluster`` of nannies
that each see one GPU through ``CUDA_VISIBLE_DEVICES``).
"""

from __future__ import annotations

import os
import pickle
import threading
import time
import weakref

import numpy as np

from bamql.engine import accumulate
from bamql.engine.session import remember
from bamql.engine.stats import ColumnIO, QueryStats
from bamql.errors import BamqlError
from bamql.planner import ir
from bamql.planner.cost import MEDIA
from bamql.planner.physical import plan_query
from bamql.storage.store import PageStore

_stores: dict[str, PageStore] = {}  # per process: a worker's open partitions
_engines: dict = {}  # per process: (backend, cache) -> GpuEngine, caches kept across queries
_plans: dict = {}  # per process: (path, query, domains, medium) -> plan of that partition
_lock = threading.Lock()
#: Tries per partition task (the first run and the retries after a lost worker).
RETRIES = 3


def _store(path: str) -> PageStore:
    with _lock:
        s = _stores.get(path)
        if s is None:
            s = _stores[path] = PageStore(path)
        return s


def gpu_engine(backend: str, cache=None):
    """This process's GPU engine for ``backend`` (made once; its page caches persist)."""
    with _lock:
        e = _engines.get((backend, cache))
        if e is None:
            from bamql.engine.gpu import GpuEngine
            from bamql.kernels.gpu import gpu_available

            why = gpu_available()
            if why is not None:
                raise BamqlError(f"no usable GPU on worker {os.uname().nodename}: {why}")
            e = _engines[(backend, cache)] = GpuEngine(None, backend=backend, cache=cache)
        return e


def clear_caches() -> int:
    """Empty the GPU page caches of this process (run on every worker); returns how many."""
    with _lock:
        for e in _engines.values():
            e.clear_cache()
        return len(_engines)


def run_partition(path: str, q: ir.Query, domains, medium: str, device: str = "cpu",
                  backend: str | None = None, cache=None, engine=None) -> tuple[dict, QueryStats]:
    """Run ``q`` on one partition: (reduced accumulators, its I/O statistics).

    On ``device="gpu"`` it runs on ``engine`` or this process's GPU engine for ``backend``.
    """
    delay = float(os.environ.get("BAMQL_FAULT_DELAY", "0"))  # fault injection for tests
    if delay:
        time.sleep(delay)
    t_wall = time.perf_counter()
    store = _store(path)
    key = (path, q, domains, medium)
    plan = _plans.get(key)
    if plan is None:  # a partition's metadata does not change: its plans can be reused
        plan = plan_query(q, store, MEDIA[medium], domains=domains)
        remember(_plans, key, plan, limit=1024)
    stats = QueryStats(device, backend or "file", store.rows)
    for a in plan.access:
        c = store.column(a.column)
        stats.columns[a.column] = ColumnIO(a.column, a.role, a.path, c.itemsize,
                                           c.n_pages * store.page_size)
    t0 = time.perf_counter()
    if device == "gpu":
        acc = (engine or gpu_engine(backend or "host", cache)).run(plan, store, stats)
    else:
        from bamql.engine.cpu import run_cpu

        acc = run_cpu(plan, store, stats)
        stats.seconds = time.perf_counter() - t0 - stats.compile_seconds
    stats.wall_seconds = time.perf_counter() - t_wall - stats.compile_seconds
    return acc, stats


#: A call whose last run took less than this runs on the worker's event loop itself, not on
#: a thread: a GPU query of a few milliseconds saves two thread hops; anything slower (a
#: first run that loads the table and compiles, a big CPU partition) keeps the loop free.
INLINE_S = 0.05


class PartitionWorker:
    """A Dask actor, one per worker: runs the partitions sent to it in its worker's process,
    where the opened stores and the GPU engine (and its page caches) stay across queries.

    An actor call reaches the worker without a scheduled task, whose round trips outweighed
    a GPU query of a few milliseconds per partition (``bench/results/h200x2-200M-scaleout.json``
    was measured with tasks). It goes straight to the worker when the client connects
    directly to workers (``direct_to_workers=True``, as the clients bamql makes do);
    otherwise the scheduler relays it.

    The call and its answer travel as one pickled blob each: Dask serializing the query's IR
    and every accumulator array as objects of their own cost more than the pickling. A
    repeated call (the same blob) skips unpickling and, once it is known to be quick, the
    thread hop.
    """

    def __init__(self) -> None:
        from concurrent.futures import ThreadPoolExecutor

        #: pickled call -> [(paths, args), whether its last run was quick]
        self._calls: dict[bytes, list] = {}
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="bamql-partition")

    @staticmethod
    def _run(paths: list[str], args: tuple) -> bytes:
        return pickle.dumps([run_partition(p, *args) for p in paths], protocol=5)

    @property
    def quick_calls(self) -> int:
        """How many remembered calls run on the event loop."""
        return sum(1 for _, quick in self._calls.values() if quick)

    async def run(self, blob: bytes) -> bytes:
        """Run the pickled ``(paths, args)`` call; returns the pickled results."""
        import asyncio

        entry = self._calls.get(blob)
        if entry is None:
            entry = [pickle.loads(blob), False]
            remember(self._calls, blob, entry, limit=256)
        t0 = time.perf_counter()
        if entry[1]:
            out = self._run(*entry[0])
        else:
            out = await asyncio.get_running_loop().run_in_executor(self._pool, self._run, *entry[0])
        entry[1] = time.perf_counter() - t0 < INLINE_S
        return out


_actors: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # client -> actors


#: Seconds between checks of a cluster's worker list (a scheduler round trip) when
#: queries follow each other; a lost worker is noticed at once by the failed call.
RECHECK_S = 2.0


def _actors_for(client, fresh: bool) -> list:
    """One PartitionWorker per worker of ``client``'s cluster (sorted by address), made once
    and made again when the workers change or after a failure."""
    have = _actors.get(client)
    now = time.monotonic()
    if not fresh and have is not None and now - have[3] < RECHECK_S:
        return have[1]
    workers = tuple(sorted(client.scheduler_info().get("workers", {})))
    if not workers:
        raise ConnectionError("the Dask cluster has no workers")
    if fresh or have is None or have[0] != workers:
        futs = [client.submit(PartitionWorker, actor=True, workers=[w], allow_other_workers=False,
                              pure=False) for w in workers]
        actors = [f.result(timeout=60) for f in futs]
        have = (workers, actors, futs)  # the futures keep the actors alive
    _actors[client] = (*have[:3], now)
    return have[1]


async def _gather(futures: list) -> list:
    return [await f for f in futures]


def _run_on_actors(client, paths: list[str], args: tuple) -> list:
    """Partition ``i`` on actor ``i mod n``; on a lost worker, again on fresh actors."""
    last: BaseException | None = None
    for attempt in range(RETRIES):
        try:
            actors = _actors_for(client, fresh=attempt > 0)
            share: list[list[str]] = [[] for _ in actors]
            for i, p in enumerate(paths):
                share[i % len(actors)].append(p)
            calls = [a.run(pickle.dumps((ps, args), protocol=5))
                     for a, ps in zip(actors, share, strict=True) if ps]
            # one hop to the client's event loop for all the answers
            return [r for blob in client.sync(_gather, calls) for r in pickle.loads(blob)]
        except BamqlError:
            raise
        except Exception as e:  # a lost worker, a cluster gone away...
            last = e
            have = _actors.get(client)
            if (isinstance(e, OSError) and getattr(client, "direct_to_workers", False)
                    and have is not None
                    and tuple(sorted(client.scheduler_info().get("workers", {}))) == have[0]):
                # the workers are alive but cannot be reached from here (a cluster behind a
                # gateway): let the scheduler relay the calls from now on
                client.direct_to_workers = False
            time.sleep(0.5 * (attempt + 1))  # let the scheduler notice a lost worker
    first = str(last).strip().splitlines()[0] if str(last).strip() else type(last).__name__
    raise BamqlError(f"distributed query failed after {RETRIES} tries: "
                     f"{type(last).__name__}: {first}")


def run_partitioned(paths: list[str], q: ir.Query, domains, medium: str, client=None,
                    stats: QueryStats | None = None, device: str = "cpu", backend: str | None = None,
                    cache=None, engine=None) -> dict[str, np.ndarray]:
    """All partitions of a query; merged accumulators (``stats`` absorbs theirs).

    Without ``client`` they run here one after another (on ``engine`` for the GPU).
    """
    if client is None:
        results = [run_partition(p, q, domains, medium, device, backend, cache, engine)
                   for p in paths]
    else:
        t0 = time.perf_counter()
        results = _run_on_actors(client, paths, (q, domains, medium, device, backend, cache))
        if stats is not None:
            stats.dispatch_seconds = time.perf_counter() - t0
    total = None
    for acc, st in results:
        total = acc if total is None else accumulate.combine(acc, total)
        if stats is not None:
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
    # restarted by the memory monitor
    workers = {f"gpu-{i}": {"cls": distributed.Nanny,
                            "options": {"nthreads": 1, "memory_limit": 0,
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
