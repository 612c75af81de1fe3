"""The host side of GPU-initiated I/O: workers that drain the submission queue.

The queue lives in pinned, mapped host memory (``numba.cuda.mapped_array``), so GPU
threads write commands with ordinary stores and the host reads them without a copy.

The workers are compiled (numba, no GIL) and run one loop each until stopped: worker ``t``
of ``T`` serves tickets ``t, t + T, t + 2T, ...`` in order (``T`` divides the queue size, so
it owns the same entries every turn). For each it waits for the entry's turn counter to
say "filled", takes the command, frees the entry for its next turn, reads the page with
``pread`` straight into the warp's pinned staging buffer (a row group's page: its whole
block, every member's page of those rows), checks the checksums, and posts the sequence
number as the completion (x86 keeps the stores in order, so the data is there
before its completion). Every request thus costs a system call and a hash, not interpreter
time, so the disk, not Python, bounds the request rate (``docs/measurements.md``). ``T``
reads are in flight at the disk at most. A read that fails still posts its completion, so no GPU thread waits
forever; the first failure is kept and raised by the caller after the kernel.

``max_in_flight`` is the most commands seen waiting (filled, not yet served) summed over
the workers' own peaks: an upper bound on the queue depth.
"""

from __future__ import annotations

import ctypes
import math
import platform
import sys
import threading

import numpy as np

from bamql.errors import StoreError
from bamql.gpu.device import host_view
from bamql.lazyjit import compiled, njit
from bamql.storage import pagemath
from bamql.storage.nativeio import (
    futex_wait,
    load_acquire,
    page_location,
    pread_into,
    sleep_us,
    store_release,
)
from bamql.storage.store import PageStore

#: the page checksum as numba's dispatcher, which the workers' compiled loop calls
#: (``pagemath`` compiles its helpers on first use: ``bamql.lazyjit``)
page_hash = compiled(pagemath.page_hash)

_libc = ctypes.CDLL(None)
# Between kernels the workers sleep on a futex on the "active" word (Linux), so an idle
# session costs nothing and ``begin`` wakes them at once; a 100 ms timeout re-checks anyway.
# Elsewhere (no known futex number) they poll every 2 ms instead.
_syscall = _libc.syscall
_syscall.restype = ctypes.c_long
_syscall.argtypes = (ctypes.c_long, ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_void_p,
                     ctypes.c_void_p, ctypes.c_int)
_SYS_FUTEX = {"x86_64": 202, "aarch64": 98}.get(platform.machine(), -1) if sys.platform == "linux" else -1
_FUTEX_WAIT_PRIVATE, _FUTEX_WAKE_PRIVATE = 128, 129
_PARK_TIMEOUT = np.array([0, 100_000_000], np.int64)  # struct timespec: 100 ms

# ctl words shared by the workers and the host
_STOP, _BAD_PAGE, _BAD_KIND, _ACTIVE = 0, 1, 2, 3


@njit(nogil=True, cache=True)  # libc by name (nativeio): cacheable; loaded on first call
def _serve(t, n_workers, qsize, turn, sq_page, sq_staging, sq_seq, done, staging, words,
           fds, n_volumes, total_pages, page_size, g_first, g_pages, g_block,
           checksum, verify, ctl, served, peak, park):
    k = t
    idle = 0
    while True:
        slot = k % qsize
        want = 2 * (k // qsize) + 1
        if load_acquire(turn, slot) != want:
            if load_acquire(ctl, _STOP) != 0:
                return
            # nothing filled: poll every few microseconds while a kernel runs; between
            # kernels sleep until ``begin`` (the futex returns at once if it already came)
            if load_acquire(ctl, _ACTIVE) != 0:
                sleep_us(5 if idle < 256 else 50)
            elif _SYS_FUTEX < 0:
                sleep_us(2000)
            else:
                futex_wait(_SYS_FUTEX, ctl, _ACTIVE, park)
            idle += 1
            continue
        idle = 0
        p = sq_page[slot]
        s = sq_staging[slot]
        seq = sq_seq[slot]
        store_release(turn, slot, want + 1)  # free the entry for its next turn
        if served[t] % 64 == 0:  # now and then: how many more of this worker's are filled
            ahead = 1
            while ahead * n_workers < qsize:
                kk = k + ahead * n_workers
                if load_acquire(turn, kk % qsize) != 2 * (kk // qsize) + 1:
                    break
                ahead += 1
            if ahead > peak[t]:
                peak[t] = ahead
        got, want, g, i = -1, page_size, -1, 0
        if 0 <= p < checksum.shape[0]:
            f, off = page_location(p, n_volumes, total_pages, page_size, g_first, g_pages,
                                   g_block)
            if p >= total_pages:  # a row group's page: read its whole block (one OS page),
                g = f - n_volumes  # which holds the row's other members too
                i = (p - g_first[g]) % g_pages[g]
                want, off = g_block[g], i * g_block[g]
            got = pread_into(fds[f], staging[s], want, off)
        if got != want:
            if ctl[_BAD_PAGE] == 0:
                ctl[_BAD_PAGE], ctl[_BAD_KIND] = p + 1, 1
        elif verify:
            wpp = page_size // 8
            # every member's page of the block is checked; the block's padding (it is
            # rounded up to an OS page) belongs to no member and has no checksum
            n = 1
            if g >= 0:
                end = g_first[g + 1] if g + 1 < g_first.shape[0] else checksum.shape[0]
                n = (end - g_first[g]) // g_pages[g]
            for j in range(n):
                q = p if g < 0 else g_first[g] + j * g_pages[g] + i
                if page_hash(words[s, j * wpp : (j + 1) * wpp], q) != checksum[q]:
                    if ctl[_BAD_PAGE] == 0:
                        ctl[_BAD_PAGE], ctl[_BAD_KIND] = q + 1, 2
        store_release(done, s, seq)  # after the data
        served[t] += 1
        k += n_workers


def staging_bytes(store: PageStore) -> int:
    """Bytes of one staging buffer: a page, or a row group's block where that is larger."""
    return max([store.page_size, *(g.block_bytes for g in store.manifest.groups)])


class HostQueue:
    """A submission queue of ``qsize`` entries and ``n_staging`` staging pages for ``store``,
    served by ``io_threads`` compiled workers (at most; a divisor of ``qsize``).

    ``alloc(shape, dtype)`` allocates the shared arrays (``cuda.mapped_array`` by default).
    """

    def __init__(self, store: PageStore, qsize: int, n_staging: int, alloc=None,
                 io_threads: int = 64, verify: bool = True) -> None:
        if alloc is None:
            from numba import cuda

            alloc = cuda.mapped_array
        self.store, self.qsize, self.verify = store, qsize, verify
        z = lambda shape, dt: _zeros(alloc, shape, dt)  # noqa: E731
        self.sq_page = z(qsize, np.int64)
        self.sq_staging = z(qsize, np.int64)
        self.sq_seq = z(qsize, np.int64)
        self.sq_turn = z(qsize, np.int64)
        self.sq_tail = z(1, np.int64)
        self.cq_done = z(n_staging, np.int64)
        # a staging page per warp, as large as a row group's block: a read of a group's page
        # brings the block, whose other members the warp then copies without another read
        self.stage_bytes = staging_bytes(store)
        self.staging = z((n_staging, self.stage_bytes), np.uint8)
        self.io_threads = math.gcd(qsize, io_threads)
        self._served = np.zeros(self.io_threads, np.int64)
        self._peak = np.zeros(self.io_threads, np.int64)
        self._ctl = np.zeros(4, np.int64)
        self._threads: list[threading.Thread] = []

    def _args(self, t: int) -> tuple:
        stg = host_view(self.staging)
        return (t, self.io_threads, self.qsize, host_view(self.sq_turn), host_view(self.sq_page),
                host_view(self.sq_staging), host_view(self.sq_seq), host_view(self.cq_done),
                stg, stg.view(np.uint64), *self.store.layout, self.store.pages.checksum,
                self.verify, self._ctl, self._served, self._peak, _PARK_TIMEOUT)

    def start(self, active: bool = True) -> HostQueue:
        """Start the workers (polling fast when ``active``, see ``begin``)."""
        self._ctl[:] = 0
        self._ctl[_ACTIVE] = int(active)
        for t in range(self.io_threads):
            th = threading.Thread(target=_serve, args=self._args(t), name=f"bamql-io-{t}",
                                  daemon=True)
            th.start()
            self._threads.append(th)
        return self

    @property
    def served(self) -> int:
        """Requests served since the last ``reset_stats``."""
        return int(self._served.sum())

    @property
    def max_in_flight(self) -> int:
        return int(self._peak.sum())

    @property
    def error(self) -> StoreError | None:
        """The first failed read or checksum since the queue started, or None."""
        p, kind = int(self._ctl[_BAD_PAGE]) - 1, int(self._ctl[_BAD_KIND])
        if p < 0:
            return None
        if kind == 1:
            return StoreError(f"store {self.store.path}: short or failed read of global page {p}")
        return self.store.checksum_error(p)

    def begin(self) -> None:
        """A kernel is about to submit: wake the workers; they poll every few microseconds."""
        self._ctl[_ACTIVE] = 1
        if _SYS_FUTEX >= 0:
            _syscall(_SYS_FUTEX, self._ctl.ctypes.data + 8 * _ACTIVE, _FUTEX_WAKE_PRIVATE,
                     2**31 - 1, None, None, 0)

    def end(self) -> None:
        """The kernel is done: the workers sleep until the next ``begin``."""
        self._ctl[_ACTIVE] = 0

    def reset_stats(self) -> None:
        """Zero the counters (between kernels: the workers are idle then)."""
        self._served[:] = 0
        self._peak[:] = 0

    def stop(self) -> None:
        self._ctl[_STOP] = 1
        self.begin()  # wake the sleepers: they see the stop
        for th in self._threads:
            th.join()
        self._threads = []

    def __enter__(self) -> HostQueue:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def _zeros(alloc, shape, dtype):
    a = alloc(shape, dtype=dtype)
    host_view(a)[...] = 0
    return a
