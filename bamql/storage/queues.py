"""The host side of GPU-initiated I/O: workers that drain the submission queue.

The queue lives in pinned, mapped host memory (``numba.cuda.mapped_array``), so GPU
threads write commands with ordinary stores and the host reads them without a copy.
One dispatcher thread takes every filled entry in ticket order at once (a vectorised scan
of the turn counters), frees them for their next turn, and splits the batch over a pool of
I/O threads. Each thread reads its pages straight into their pinned staging pages with
``PageStore.read_scattered`` (a compiled ``pread`` loop without the GIL; checksums
checked), then posts the sequence numbers as completions (x86 keeps the stores in order, so the data is there
before its completion). A read that fails still posts its completion, so no GPU thread
waits forever; the error is kept and raised by the caller after the kernel.

``max_in_flight`` is the deepest queue seen (reads submitted, not yet completed).
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from bamql.storage.store import PageStore


class HostQueue:
    """A submission queue of ``qsize`` entries and ``n_staging`` staging pages for ``store``.

    ``alloc(shape, dtype)`` allocates the shared arrays (``cuda.mapped_array`` by default).
    """

    def __init__(self, store: PageStore, qsize: int, n_staging: int, alloc=None,
                 io_threads: int = 64) -> None:
        if alloc is None:
            from numba import cuda

            alloc = cuda.mapped_array
        self.store, self.qsize = store, qsize
        z = lambda shape, dt: _zeros(alloc, shape, dt)  # noqa: E731
        self.sq_page = z(qsize, np.int64)
        self.sq_staging = z(qsize, np.int64)
        self.sq_seq = z(qsize, np.int64)
        self.sq_turn = z(qsize, np.int64)
        self.sq_tail = z(1, np.int64)
        self.cq_done = z(n_staging, np.int64)
        self.staging = z((n_staging, store.page_size), np.uint8)
        self.served = 0
        self.batches = 0
        self.max_in_flight = 0
        self.io_threads = io_threads
        self._in_flight = 0
        self._count = threading.Lock()
        self._head = 0
        # plain ndarray views of the shared memory, for fast vectorised host access
        self._page_np, self._stg_np, self._seq_np, self._turn_np, self._done_np, self._staging_np = (
            _host_view(a) for a in (self.sq_page, self.sq_staging, self.sq_seq, self.sq_turn,
                                    self.cq_done, self.staging))
        self._stop = threading.Event()
        self._pool = ThreadPoolExecutor(max_workers=io_threads, thread_name_prefix="bamql-io")
        self._thread: threading.Thread | None = None
        self.error: BaseException | None = None

    def start(self) -> HostQueue:
        self._thread = threading.Thread(target=self._dispatch, name="bamql-sq", daemon=True)
        self._thread.start()
        return self

    def _read(self, pages: np.ndarray, staging: np.ndarray, seqs: np.ndarray) -> None:
        try:  # straight into the staging pages, in compiled code without the GIL
            self.store.read_scattered(pages, self._staging_np, staging)
        except BaseException as e:  # surfaced by the caller after the kernel
            self.error = e
        finally:
            self._done_np[staging] = seqs  # after the data: x86 keeps stores in order
            with self._count:
                self._in_flight -= len(pages)

    def _dispatch(self) -> None:
        q = self.qsize
        turn = self._turn_np
        idle = 20e-6
        while not self._stop.is_set():
            h = self._head
            k = np.arange(h, h + q, dtype=np.int64)
            slots = k % q
            want = 2 * (k // q) + 1
            ready = turn[slots] == want
            n = q if ready.all() else int(np.argmin(ready))
            if n == 0:
                time.sleep(idle)
                idle = min(idle * 2, 1e-3)  # idle sessions should not burn a core
                continue
            idle = 20e-6
            s = slots[:n]
            pages = self._page_np[s].copy()
            staging = self._stg_np[s].copy()
            seqs = self._seq_np[s].copy()
            turn[s] = want[:n] + 1  # free for the next turn
            self._head = h + n
            with self._count:
                self._in_flight += n
                self.max_in_flight = max(self.max_in_flight, self._in_flight)
            self.served += n
            self.batches += 1
            per = max(4, -(-n // self.io_threads))
            for i in range(0, n, per):
                self._pool.submit(self._read, pages[i : i + per], staging[i : i + per],
                                  seqs[i : i + per])

    def reset_stats(self) -> None:
        self.served = self.batches = self.max_in_flight = 0

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._pool.shutdown(wait=True)

    def __enter__(self) -> HostQueue:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def _host_view(a) -> np.ndarray:
    """A plain ndarray over shared memory. ``np.asarray`` of numba's mapped array would copy
    it to a new host array (its ``__array__``), and writes would go nowhere."""
    return np.ndarray.view(a, np.ndarray) if isinstance(a, np.ndarray) else np.asarray(a)


def _zeros(alloc, shape, dtype):
    a = alloc(shape, dtype=dtype)
    _host_view(a)[...] = 0
    return a
