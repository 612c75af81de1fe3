"""Partitioned tables on a Dask cluster: the client side (``DaskRunner``), and clusters.

A query goes to each worker that holds some of its partitions as one call:
``dask_worker.bamql_partitions`` for the fused kernel, ``dask_worker.bamql_task`` for
another operator's ``runner.PartitionTask`` (the hashed GROUP BY, the rows step and its
top-k). By default (``DaskDispatch.ACTOR``) the call is a method of the worker's
``PartitionActor``, a Dask actor the client calls directly: one round trip per worker, so a
query of a few milliseconds costs about as much on several workers as on one. With
``DaskDispatch.TASK`` it is a task restricted to that worker (``Client.submit``): the
scheduler schedules it and the dashboard shows every query, at the price of the
scheduler's batched messages both ways. Partition ``i`` goes to worker ``i mod n`` (sorted
addresses), so each partition's stores, plans and GPU page cache stay in one worker's
process. Each worker merges its partitions' partials and the client merges the workers'
(``runner.merge``, or the task's ``merge``); partials whose order matters (top-k
candidates, rows) come back per partition and are listed in partition order. When a
worker is lost the whole query runs again on the workers that remain (``RETRIES`` tries);
a query that keeps failing fails with one line, never with a partial answer.

``local_gpu_cluster`` starts one single-threaded worker per GPU of this machine
(dask-cuda's ``LocalCUDACluster`` when installed, otherwise a ``SpecCluster`` of nannies
that each see one GPU through ``CUDA_VISIBLE_DEVICES``). This module imports Dask; the
session imports it only when a cluster is used, so the core runs without Dask.
"""

from __future__ import annotations

import gc
import logging
import pickle
import threading
import time
import weakref
from collections import Counter
from urllib.parse import urlsplit

import distributed

from bamql.config import Backend, DaskDispatch, Device, Medium
from bamql.errors import BamqlError
from bamql.exec.dask_worker import (
    PartitionActor,
    bamql_partitions,
    bamql_task,
    clear_caches,
    share_cores,
)
from bamql.exec.runner import Declined, Dispatch, Partials, PartitionTask
from bamql.physical.planning import PhysicalPlan
from bamql.storage.partitioned import PartitionedTable

#: Tries per query (the first run and the retries after a lost worker).
RETRIES = 3
#: Seconds between checks of a cluster's worker list (a scheduler round trip) when
#: queries follow each other; a lost worker is noticed by the query that waits for it.
RECHECK_S = 2.0
#: Seconds a query waits for its tasks between checks that their workers are still there
#: (a task restricted to a worker that left would wait for it forever).
WATCH_S = 1.0

_workers: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # client -> (workers, time)


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else ""


async def _all(futures: list) -> list:
    """The results of actor calls, in order (awaited on the client's event loop)."""
    return [await f for f in futures]


class DaskRunner:
    """Runs a partitioned table's partitions on ``client``'s workers, on the CPU engine or
    (``device`` GPU) on each worker's GPU engine for ``backend`` with ``cache`` bytes of
    page cache; ``dispatch`` says how the calls reach the workers."""

    where = "dask"
    place = "on the Dask cluster (partition i on worker i mod n)"

    def __init__(self, client, device: Device, backend: Backend, cache: int | None,
                 dispatch: DaskDispatch = DaskDispatch.ACTOR) -> None:
        self.client, self.device, self.backend, self.cache = client, device, backend, cache
        self.dispatch = DaskDispatch(dispatch)
        #: worker address -> (its ``PartitionActor`` handle, the future that made it),
        #: made on the first call there and released by ``close`` or when the call fails
        self._actors: dict[str, tuple] = {}
        self._lock = threading.Lock()
        self._making = threading.Lock()  # one thread makes the missing actors at a time
        #: the last query's futures, released once the next query's tasks are submitted:
        #: the client sends its messages to the scheduler in batches at most every 10 ms,
        #: so a release sent just before the next submit would hold that submit back
        self._last: list = []

    def workers(self, fresh: bool = False) -> tuple[str, ...]:
        """The addresses of the client's workers, sorted; asked of the scheduler again
        every ``RECHECK_S`` seconds (at once when ``fresh``)."""
        have = _workers.get(self.client)
        now = time.monotonic()
        if not fresh and have is not None and now - have[1] < RECHECK_S:
            return have[0]
        workers = tuple(sorted(self.client.scheduler_info().get("workers", {})))
        if not workers:
            raise ConnectionError("the Dask cluster has no workers")
        if have is None or have[0] != workers:  # new workers: each its share of the cores
            try:
                self.client.run(share_cores, dict(Counter(urlsplit(w).hostname for w in workers)))
            except Exception:  # a worker leaving meanwhile: the next change tries again
                pass
        self._drop([w for w in list(self._actors) if w not in workers])  # workers gone
        _workers[self.client] = (workers, now)
        return workers

    def close(self) -> None:
        """Release the workers' actors (the session closes): Dask does not retire a worker
        that holds an actor. An actor's handle holds a future of its own, released when the
        handle is collected; handles left in reference cycles (the calls' futures) wait for
        the cyclic collector, so it runs once here."""
        had = bool(self._actors)
        self._drop(list(self._actors))
        if had:
            gc.collect()

    def _drop(self, workers: list[str]) -> None:
        """Forget and release the actors of ``workers``."""
        with self._lock:
            gone = [self._actors.pop(w) for w in workers if w in self._actors]
        for _, future in gone:
            try:
                future.release()
            except Exception:  # a client already closed: nothing left to release
                pass

    def clear_caches(self) -> dict[str, int]:
        """Empty every worker's GPU page caches; returns each worker's engine count."""
        return self.client.run(clear_caches)

    def run(self, table: PartitionedTable, plan: PhysicalPlan, medium: Medium) -> Partials:
        """Partition ``i`` on worker ``i mod n``; on a lost worker, again on the workers
        that remain."""
        args = (plan.query, plan.key_domains, medium, self.device, self.backend, self.cache)
        return self._retried(table, bamql_partitions, args, ordered=False)

    def map(self, table: PartitionedTable, task: PartitionTask) -> Partials:
        """``task`` over every partition, partition ``i`` on worker ``i mod n`` (each worker
        merges its own partitions' partials unless ``task.ordered``); on a lost worker,
        again on the workers that remain."""
        args = (task, self.device, self.backend, self.cache)
        return self._retried(table, bamql_task, args, ordered=task.ordered)

    def _retried(self, table: PartitionedTable, fn, args: tuple, ordered: bool) -> Partials:
        """``fn`` (a worker's task) with ``args`` over the partitions of ``table``, tried
        again on the workers that remain after a lost worker."""
        # each partition as (path, its page metadata's digest): a worker answers only from
        # the store this session opened (``dask_worker.open_store``)
        paths = [(str(p.path), p.manifest.pages_meta_sha256) for p in table.parts]
        last: BaseException | None = None
        for attempt in range(RETRIES):
            try:
                return self._run_once(self.workers(fresh=attempt > 0), paths, fn, args, ordered)
            except (BamqlError, Declined):
                raise
            except Exception as e:  # a lost worker, a cluster gone away...
                last = e
                if attempt + 1 < RETRIES:
                    time.sleep(0.5 * (attempt + 1))  # let the scheduler notice a lost worker
        raise BamqlError(f"distributed query failed after {RETRIES} tries: "
                         f"{type(last).__name__}: {_first_line(last) or type(last).__name__}")

    def _run_once(self, workers: tuple[str, ...], paths: list[tuple[str, str]], fn, args: tuple,
                  ordered: bool) -> Partials:
        """One try: each worker's share of ``paths`` as one task. The answers' partials are
        listed by worker (a kernel's accumulators, an unordered task's merged partial), or
        where ``ordered`` each partition's in partition order."""
        share: list[list[int]] = [[] for _ in workers]
        for i in range(len(paths)):
            share[i % len(workers)].append(i)
        calls = [(w, idx, pickle.dumps(([paths[i] for i in idx], args), protocol=5))
                 for w, idx in zip(workers, share, strict=True) if idx]
        t0 = time.perf_counter()
        t_send = time.monotonic()
        answers = self._answers(fn, [(w, blob) for w, _, blob in calls])
        t_back = time.monotonic() - t_send
        accs, stats, seconds, spans = [], [], [], []
        at: list[int] = []  # each partial's partition, where ``ordered``
        for (w, idx, _), answer in zip(calls, answers, strict=True):
            out = pickle.loads(answer)
            if out[0] == "error":  # raised by the partition itself: trying again won't help
                e = out[1]
                if isinstance(e, (BamqlError, Declined)):
                    raise e
                where = out[2] if len(out) > 2 and out[2] else ""
                raise BamqlError(f"a partition failed on worker {w}: {type(e).__name__}"
                                 + (f": {_first_line(e)}" if _first_line(e) else "")
                                 + (f" (raised at {where})" if where else ""))
            got, got_stats = out[1]
            if fn is bamql_partitions:
                accs.append(got)  # the worker's accumulators, merged
            else:
                accs += got
                at += idx if ordered else []
            stats += got_stats
            seconds.append(out[2])
            spans.append((out[3][0] - t_send, out[3][1] - t_send))
        if ordered:  # partition order, for the partials and their statistics alike
            order = sorted(range(len(at)), key=at.__getitem__)
            accs, stats = [accs[k] for k in order], [stats[k] for k in order]
        return Partials(accs, stats, Dispatch(time.perf_counter() - t0, seconds, spans, t_back))

    def _answers(self, fn, calls: list[tuple[str, bytes]]) -> list[bytes]:
        """Each ``(worker, blob)`` as ``fn(blob)`` on that worker, as ``self.dispatch`` says;
        their answers, in order."""
        if self.dispatch is DaskDispatch.ACTOR:
            return self._actor_answers(fn, calls)
        return self._task_answers(fn, calls)

    def _watch(self, workers: list[str]) -> None:
        """Raise ConnectionError if one of ``workers`` left the cluster (a call to it would
        wait forever)."""
        alive = self.client.scheduler_info().get("workers", {})
        gone = [w for w in workers if w not in alive]
        if gone:
            raise ConnectionError(f"worker {gone[0]} left the cluster")

    def _actors_on(self, workers: list[str]) -> list:
        """``(handle, future)`` of each of ``workers``' ``PartitionActor``, made there where
        it is missing."""
        with self._making:
            with self._lock:
                missing = [w for w in workers if w not in self._actors]
            if missing:
                client = self.client
                futures = [client.submit(PartitionActor, workers=[w], allow_other_workers=False,
                                         actor=True, pure=False) for w in missing]
                for f in futures:
                    while True:
                        try:
                            f.result(timeout=WATCH_S)  # made on its worker
                            break
                        except TimeoutError:
                            self._watch(missing)
                # the handles made here, in this client's context: an actor handle calls
                # through the client current where it is made (the process's default one
                # where it comes back from ``result``)
                with client.as_current():
                    made = [(distributed.Actor(PartitionActor, w, f.key), f)
                            for w, f in zip(missing, futures, strict=True)]
                with self._lock:
                    self._actors.update(zip(missing, made, strict=True))
            with self._lock:
                return [self._actors[w] for w in workers]

    def _actor_answers(self, fn, calls: list[tuple[str, bytes]]) -> list[bytes]:
        """Each ``(worker, blob)`` as a call of the worker's actor; their answers, in order.
        A failed call drops the actors of ``calls``' workers: the retry makes them anew."""
        workers = [w for w, _ in calls]
        try:
            actors = self._actors_on(workers)
            if any(a.client is not self.client for a, _ in actors):
                # bound to another client all the same: the tasks reach the workers instead
                self.dispatch = DaskDispatch.TASK
                self._drop(workers)
                return self._task_answers(fn, calls)
            method = "partitions" if fn is bamql_partitions else "task"
            futures = [getattr(a, method)(blob)
                       for (a, _), (_, blob) in zip(actors, calls, strict=True)]
            while True:
                try:
                    return self.client.sync(_all, futures, callback_timeout=WATCH_S)
                except TimeoutError:  # still running: are their workers and actors there?
                    self._watch(workers)
                    lost = [w for w, (_, f) in zip(workers, actors, strict=True)
                            if f.status != "finished"]
                    if lost:
                        raise ConnectionError(f"the actor on worker {lost[0]} was lost") \
                            from None
        except BaseException:
            self._drop(workers)
            raise

    def _task_answers(self, fn, calls: list[tuple[str, bytes]]) -> list[bytes]:
        """Each ``(worker, blob)`` as a task ``fn(blob)`` on that worker; their answers, in
        order."""
        client = self.client
        futures = [client.submit(fn, blob, workers=[w], allow_other_workers=False,
                                 pure=False) for w, blob in calls]
        with self._lock:
            self._last, last = futures, self._last
        del last  # released now, in the batch after this submit
        try:
            while True:
                try:
                    distributed.wait(futures, timeout=WATCH_S)
                    break
                except distributed.TimeoutError:  # still running: are their workers there?
                    self._watch([w for w, _ in calls])
            return client.gather(futures)
        except BaseException:
            client.cancel(futures)
            raise


#: How long a closing worker process of ``local_gpu_cluster`` may take to exit before its
#: nanny kills it. Dask's default, 4 s of a 5 s close, is too short for a worker that frees
#: a large pinned copy of its partitions (dask-cuda's LocalCUDACluster, used instead where
#: installed, lengthens its nannies' close the same way).
CLOSE_S = 60.0


class GpuNanny(distributed.Nanny):
    """A Dask nanny that gives its worker process ``CLOSE_S`` to exit when it closes."""

    async def close(self, timeout: float = CLOSE_S / 0.8, reason: str = "nanny-close"):
        # Nanny.close waits 0.8 x timeout for the process before killing it
        return await super().close(timeout=timeout, reason=reason)


def local_gpu_cluster(n_gpus: int | None = None):
    """A Dask cluster on this machine with one single-threaded worker per GPU.

    Parameters
    ----------
    n_gpus
        How many GPUs (the first ``n_gpus``); all of them when None.
    """
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

    Clients made here connect directly to the workers: answers then come from the workers
    without the scheduler relaying them. A Client passed in keeps its own setting."""
    if cluster is None or hasattr(cluster, "submit"):
        return cluster
    if isinstance(cluster, str) and cluster.startswith("local-gpus"):
        n = cluster.partition(":")[2]
        if cluster != "local-gpus" and not (cluster.startswith("local-gpus:") and n.isdigit()):
            raise BamqlError(f"cluster {cluster!r}: write local-gpus or local-gpus:N (N GPUs)")
        c = local_gpu_cluster(int(n) if n else None)
        client = distributed.Client(c, direct_to_workers=True)
        client.wait_for_workers(len(c.workers), timeout=120)  # before partitions are dealt out
        return client
    try:
        return distributed.Client(cluster, timeout="10s", direct_to_workers=True)
    except Exception as e:
        raise BamqlError(f"cannot reach the Dask scheduler at {cluster!r}: {e}") from None

