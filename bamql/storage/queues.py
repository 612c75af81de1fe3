"""The host side of GPU-initiated I/O: workers that drain the submission queue.

The queue lives in pinned, mapped host memory (``numba.cuda.mapped_array``), so GPU
threads write commands with ordinary stores and the host reads them without a copy.
One dispatcher thread takes filled entries in ticket order (a batch at a time), frees
them for their next turn, and hands the reads to a pool of threads that call
``os.preadv`` (the GIL is released) into pinned staging buffers; each finished read posts
its sequence number as the completion. ``max_in_flight`` records the deepest queue seen.
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
        self.max_in_flight = 0
        self._head = 0
        self._stop = threading.Event()
        self._pool = ThreadPoolExecutor(max_workers=io_threads, thread_name_prefix="bamql-io")
        self._thread: threading.Thread | None = None
        self.error: BaseException | None = None

    def start(self) -> HostQueue:
        self._thread = threading.Thread(target=self._dispatch, name="bamql-sq", daemon=True)
        self._thread.start()
        return self

    def _read(self, page: int, staging: int, seq: int) -> None:
        try:
            buf = np.asarray(self.staging)[staging : staging + 1]
            self.store.read_pages(np.array([page]), buf)
            self.cq_done[staging] = seq  # after the data: x86 keeps stores in order
        except BaseException as e:  # surfaced to the caller; the GPU side times out
            self.error = e

    def _dispatch(self) -> None:
        turn_of = np.asarray(self.sq_turn)
        while not self._stop.is_set():
            batch = []
            while len(batch) < self.qsize:
                h = self._head
                slot, turn = h % self.qsize, h // self.qsize
                if turn_of[slot] != 2 * turn + 1:
                    break
                batch.append((int(self.sq_page[slot]), int(self.sq_staging[slot]),
                              int(self.sq_seq[slot])))
                turn_of[slot] = 2 * turn + 2  # free for the next turn
                self._head = h + 1
            if not batch:
                time.sleep(20e-6)
                continue
            self.max_in_flight = max(self.max_in_flight, len(batch))
            self.served += len(batch)
            for cmd in batch:
                self._pool.submit(self._read, *cmd)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._pool.shutdown(wait=True)

    def __enter__(self) -> HostQueue:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def _zeros(alloc, shape, dtype):
    a = alloc(shape, dtype=dtype)
    np.asarray(a)[...] = 0
    return a
