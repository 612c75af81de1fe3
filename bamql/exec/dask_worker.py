"""What a Dask worker runs for bamql: one call per query and worker, its partitions in turn.

``bamql.exec.distributed.DaskRunner`` calls :func:`bamql_partitions` (the fused
kernel's aggregates) or :func:`bamql_task` (any other operator's ``PartitionTask``) on
each worker that holds partitions of a query: as a method of the worker's
:class:`PartitionActor` (a Dask actor, called straight from the client) or as a task the
scheduler runs there. The worker's process keeps what a call opens across queries, in
this module: its partitions' stores and plans and, on GPUs, its GPU engines with their
page caches. This module imports no Dask: the task is a plain function and the actor a
plain class that the scheduler sends by reference.
"""

from __future__ import annotations

import asyncio
import os
import pickle
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from bamql.config import Backend, Config, Device, Medium
from bamql.errors import BamqlError
from bamql.exec.partition import Domains, page_cache, plan_partition, run_partition
from bamql.fused import ir
from bamql.kernels.accumulate import combine_all
from bamql.lru import LRU
from bamql.parallel import set_share
from bamql.physical.planning import PhysicalPlan
from bamql.storage.store import PageStore

_lock = threading.Lock()
_stores: dict[str, PageStore] = {}  # this process's open partitions by path (``open_store``)
_engines: dict = {}  # (backend, cache) -> GpuEngine; its page caches persist across queries
_plans = LRU(1024)  # (path, digest, query, domains, medium) -> plan of that partition
#: pickled call -> [(paths, arguments), whether its last run was quick]: a repeated query
#: skips unpickling its IR
_calls = LRU(256)
#: A call whose last run took less than this runs on the worker's event loop, not on a
#: thread: a query of a few milliseconds saves the thread hops.
INLINE_S = 0.05
_pool: list[ThreadPoolExecutor] = []  # the thread that runs slow calls (made on first use)


def _thread() -> ThreadPoolExecutor:
    with _lock:
        if not _pool:
            _pool.append(ThreadPoolExecutor(1, thread_name_prefix="bamql-partitions"))
        return _pool[0]


def open_store(path: str | tuple[str, str]) -> PageStore:
    """This process's store of the partition at ``path`` (opened once), or of ``(path,
    digest)``: the store the client opened there, known by its page metadata's digest
    (``manifest.pages_meta_sha256``). A table appended to, refreshed or ingested again is
    another store at the same path: it is opened anew (the GPU engines' tables of the old
    one dropped), and a client that still holds the old one is refused in one line (it was
    answered from whichever store the worker had opened first)."""
    path, digest = (path, None) if isinstance(path, str) else path
    with _lock:
        s = _stores.get(path)
        if s is not None and (digest is None or s.manifest.pages_meta_sha256 == digest):
            return s
        new = PageStore(path)
        if digest is not None and new.manifest.pages_meta_sha256 != digest:
            new.close()
            raise BamqlError(f"table partition {path} changed since this session opened it "
                             "(appended, refreshed or ingested again): connect again")
        _stores[path] = new
        if s is not None:  # replaced: no GPU page of the old store may serve the new one
            for e in _engines.values():
                e.drop(s)
        return new


def gpu_engine(backend: Backend, cache: int | None = None):
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
            e = _engines[(backend, cache)] = GpuEngine(config)
        return e


def clear_caches() -> int:
    """Empty the GPU page caches of this process (``client.run`` runs it on every
    worker); returns how many engines there were."""
    with _lock:
        for e in _engines.values():
            e.clear_cache()
        return len(_engines)


#: The threads of this worker's parallel CPU kernels (numba's): its share of its machine's
#: cores among the bamql workers there (``share_cores``); None: numba's default, every core
_threads: int | None = None


def share_cores(workers_per_host: dict[str, int], dask_worker=None) -> int:
    """Give this worker its share of its machine's cores (``client.run`` runs it on every
    worker, passing ``dask_worker``): the cores it may run on, at most the machine's cores
    over the bamql workers on the machine (``workers_per_host``: host -> workers). Several
    worker processes that each start a thread per core for every parallel kernel keep
    each other's threads waiting; returns the share."""
    global _threads
    from urllib.parse import urlsplit

    host = urlsplit(dask_worker.address).hostname if dask_worker is not None else None
    here = max(1, workers_per_host.get(host, 1))
    mine = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    _threads = max(1, min(mine or 1, (os.cpu_count() or 1) // here))
    set_share(_threads)  # the rows step's threads too
    return _threads


def _fit_threads() -> None:
    """Limit this thread's parallel kernels to the worker's share of the cores (numba's
    setting is per thread: the event loop's and the call thread's alike)."""
    if _threads is None:
        return
    import numba

    numba.set_num_threads(min(_threads, numba.config.NUMBA_NUM_THREADS))


def _plan(store: PageStore, q: ir.Query, domains: Domains, medium: Medium) -> PhysicalPlan:
    resident = page_cache(store, q.columns, medium)  # this worker's OS page cache
    key = (str(store.path), store.manifest.pages_meta_sha256, q, domains, medium, resident)
    p = _plans.get(key)
    if p is None:  # a partition's metadata does not change: its plans can be reused
        p = plan_partition(store, q, domains, medium, resident)
        _plans.put(key, p)
    return p


def _run(paths: list, q: ir.Query, domains: Domains, medium: Medium, device: Device,
         backend: Backend, cache: int | None) -> tuple:
    """``(the partitions' accumulators merged, each partition's statistics)``: merged here,
    the partial aggregates travel as one set per worker, not one per partition."""
    engine = gpu_engine(backend, cache) if device == Device.GPU else None
    results = []
    for path in paths:
        store = open_store(path)
        results.append(run_partition(store, _plan(store, q, domains, medium), device, backend,
                                     engine))
    return combine_all(acc for acc, _ in results), [st for _, st in results]


def _run_task(paths: list, task, device: Device, backend: Backend,
              cache: int | None) -> tuple:
    """``(partials, each partition's statistics)`` of ``task`` (a ``runner.PartitionTask``)
    over ``paths``: one partial per partition, in the order of ``paths``, where the task
    keeps the partitions' order, else the partitions' partials merged here."""
    engine = gpu_engine(backend, cache) if device == Device.GPU else None
    outs, stats = [], []
    for path in paths:
        out, st = task.run(open_store(path), device, backend, engine)
        outs.append(out)
        stats.append(st)
    return (outs if task.ordered else [task.merge(outs)]), stats


async def bamql_partitions(blob: bytes) -> bytes:
    """The task: run the pickled ``(paths, (query, domains, medium, device, backend,
    cache))`` call on this worker.

    Returns the pickled ``("ok", (merged accumulators, statistics), seconds on this worker,
    (its start, its end) on time.monotonic)``, or ``("error", exception)``: an error travels
    as an answer, so that a user's mistake does not fill the worker's log with tracebacks.
    The call and its answer are one pickled blob each: Dask serializing the query's IR and
    every accumulator array as objects of their own costs more than the pickling.

    A coroutine, so Dask runs it on the worker's event loop: a call whose last run took
    less than ``INLINE_S`` runs right there, anything slower (a first run that loads the
    table and compiles, a big partition) on a thread of its own, which keeps the loop free.
    """
    return await _answer(blob, _run)


async def bamql_task(blob: bytes) -> bytes:
    """The task of an operator other than the fused kernel: run the pickled ``(paths, (task,
    device, backend, cache))`` call on this worker, as :func:`bamql_partitions` runs its
    call, answering ``("ok", (partials, statistics), seconds, span)`` (``_run_task``)."""
    return await _answer(blob, _run_task)


class PartitionActor:
    """A worker's bamql calls as a Dask actor: the client calls its methods on the worker
    directly, each a round trip of its own, with no scheduler between them (a task passes
    through the scheduler's batched messages both ways). One per worker, made on a session's
    first query there; the calls run as the tasks do, on the worker's event loop when
    quick, else on this module's thread."""

    async def partitions(self, blob: bytes) -> bytes:
        """:func:`bamql_partitions` of ``blob``."""
        return await _answer(blob, _run)

    async def task(self, blob: bytes) -> bytes:
        """:func:`bamql_task` of ``blob``."""
        return await _answer(blob, _run_task)


async def _answer(blob: bytes, run) -> bytes:
    """``run(paths, *arguments)`` of the pickled call ``blob``, its answer pickled (see
    :func:`bamql_partitions`)."""
    t0 = time.perf_counter()
    start = time.monotonic()
    try:
        entry = _calls.get(blob)
        if entry is None:
            entry = [pickle.loads(blob), False]  # (paths, arguments), whether it is quick
            _calls.put(blob, entry)
        paths, args = entry[0]
        if entry[1]:
            _fit_threads()
            out = run(paths, *args)
        else:
            out = await asyncio.get_running_loop().run_in_executor(_thread(), _fitted, run,
                                                                   paths, *args)
        seconds = time.perf_counter() - t0
        entry[1] = seconds < INLINE_S
        return pickle.dumps(("ok", out, seconds, (start, time.monotonic())), protocol=5)
    except Exception as e:  # re-raised by the client
        where = _origin(e)
        try:
            return pickle.dumps(("error", e, where), protocol=5)
        except Exception:  # an exception that does not pickle: its text
            return pickle.dumps(("error", RuntimeError(f"{type(e).__name__}: {e}"), where),
                                protocol=5)


def _fitted(run, paths: list[str], *args):
    """``run(paths, *args)`` on the call thread, within the worker's share of the cores."""
    _fit_threads()
    return run(paths, *args)


def _origin(e: BaseException) -> str:
    """Where ``e`` was raised (``file:line in function``, the innermost frame): an error
    without a message still says something once it has crossed to the client."""
    import traceback

    tb = traceback.extract_tb(e.__traceback__)
    if not tb:
        return ""
    f = tb[-1]
    return f"{f.filename.rsplit('/', 1)[-1]}:{f.lineno} in {f.name}"
