"""The worker side of distributed queries: a Dask worker plugin that adds one comm handler.

A query reaches each worker as one message to the handler ``HANDLER``, sent straight from
the client's event loop (``client.rpc``) or relayed by the scheduler. A handler, not an
actor, because an actor call adds a future per call, a hop from the calling thread to the
client's event loop per actor, and its result wrapping, which make a round trip slower
(measured in ``docs/measurements.md``). The plugin is Dask's own way to extend a worker,
as its P2P shuffle does; registered once with ``client.register_plugin``, it also reaches
workers that join later.

This module imports ``distributed``; ``bamql.engine.distributed`` imports it only when a
cluster is used, so the core runs without Dask.
"""

from __future__ import annotations

import pickle
import time

from distributed import Nanny
from distributed.diagnostics.plugin import WorkerPlugin

from bamql.lru import LRU

#: The worker handler's name (one comm operation per query and worker).
HANDLER = "bamql_partitions"

#: A call whose last run took less than this runs on the worker's event loop itself, not on
#: a thread: a GPU query of a few milliseconds saves two thread hops; anything slower (a
#: first run that loads the table and compiles, a big CPU partition) keeps the loop free.
INLINE_S = 0.05


class PartitionRunner:
    """A worker's partition runner: runs the partitions sent to it in its worker's process,
    where the opened stores and the GPU engine (and its page caches) stay across queries.

    The call and its answer travel as one pickled blob each: Dask serializing the query's IR
    and every accumulator array as objects of their own cost more than the pickling. A
    repeated call (the same blob) skips unpickling and, once it is known to be quick, the
    thread hop.
    """

    def __init__(self) -> None:
        from concurrent.futures import ThreadPoolExecutor

        #: pickled call -> [(paths, args), whether its last run was quick]
        self._calls = LRU(256)
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="bamql-partition")

    @staticmethod
    def _run(paths: list[str], args: tuple) -> tuple:
        """``(its partitions' accumulators merged, each partition's statistics)``: partial
        aggregates merged here travel as one set per worker, not one per partition, so the
        client pickles and unpickles one answer per worker."""
        from bamql.engine.accumulate import combine_all
        from bamql.engine.distributed import run_partition

        results = [run_partition(p, *args) for p in paths]
        return combine_all(acc for acc, _ in results), [st for _, st in results]

    @property
    def quick_calls(self) -> int:
        """How many remembered calls run on the event loop."""
        return sum(1 for _, quick in self._calls.values() if quick)

    async def run(self, blob: bytes) -> bytes:
        """Run the pickled ``(paths, args)`` call; returns the pickled ``("ok", (merged
        accumulators, statistics), seconds on this worker, (its start, its end) on
        time.monotonic)``, or ``("error", exception)``: an error travels as an answer, so a
        user's mistake does not fill the worker's log with tracebacks."""
        import asyncio

        t0 = time.perf_counter()
        start = time.monotonic()
        try:
            entry = self._calls.get(blob)
            if entry is None:
                entry = [pickle.loads(blob), False]
                self._calls.put(blob, entry)
            if entry[1]:
                out = self._run(*entry[0])
            else:
                out = await asyncio.get_running_loop().run_in_executor(self._pool, self._run, *entry[0])
            seconds = time.perf_counter() - t0
            entry[1] = seconds < INLINE_S
            return pickle.dumps(("ok", out, seconds, (start, time.monotonic())), protocol=5)
        except Exception as e:  # re-raised by the client
            try:
                return pickle.dumps(("error", e), protocol=5)
            except Exception:  # an exception that does not pickle: its text
                return pickle.dumps(("error", RuntimeError(f"{type(e).__name__}: {e}")), protocol=5)

    def close(self) -> None:
        """Called by the worker as it closes."""
        self._pool.shutdown(wait=False)


class PartitionPlugin(WorkerPlugin):
    """Gives each worker a ``PartitionRunner`` (``worker.extensions["bamql"]``) and the
    comm handler ``HANDLER`` that feeds it."""

    name = "bamql-partitions"
    idempotent = True  # registering again (a second client, a retry) keeps the runners

    def setup(self, worker) -> None:
        runner = worker.extensions.get("bamql")
        if runner is None:
            runner = worker.extensions["bamql"] = PartitionRunner()

        async def bamql_partitions(blob: bytes) -> bytes:
            return await runner.run(blob)

        worker.handlers[HANDLER] = bamql_partitions


#: How long a closing worker process of ``local_gpu_cluster`` may take to exit before its
#: nanny kills it. Dask's default, 4 s of a 5 s close, is too short for a worker that frees
#: a large pinned copy of its partitions: at 4 B rows (28-56 GB a worker on the H200 x2) each
#: close ended in "Worker process still alive after 4.0 seconds, killing" on the user's
#: terminal. (dask-cuda's LocalCUDACluster, used instead where installed, lengthens its
#: nannies' close the same way.)
CLOSE_S = 60.0


class GpuNanny(Nanny):
    """A Dask nanny that gives its worker process ``CLOSE_S`` to exit when it closes."""

    async def close(self, timeout: float = CLOSE_S / 0.8, reason: str = "nanny-close"):
        # Nanny.close waits 0.8 x timeout for the process before killing it
        return await super().close(timeout=timeout, reason=reason)
