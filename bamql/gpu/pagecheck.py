"""Pages the host reads into GPU memory, checked there.

The ``file`` backend's streamed columns and the pages the GPU decompresses (``gpu.inflate``)
come from the host's reads through a per-thread pinned staging buffer (so that no buffer the
size of a query is pinned or held in host memory) and are checked in GPU memory, one thread
per page, against the store's page checksums (``storage.pagemath.page_hash``): the host
only reads and copies, and a damaged page is a one-line ``StoreError`` before any kernel
reads it.
"""

from __future__ import annotations

import threading

import numpy as np
from numba import cuda

from bamql.kernels.diskcache import cuda_fast_loads
from bamql.storage.pagemath import page_hash
from bamql.storage.store import PageStore


class Staging:
    """Each calling thread's pinned host buffer, grown as needed.

    Parameters
    ----------
    cuda
        ``numba.cuda`` (or its simulator).
    least
        The smallest buffer made, in bytes.
    """

    def __init__(self, cuda, least: int) -> None:
        self.cuda, self.least = cuda, least
        self._local = threading.local()

    def get(self, n: int) -> np.ndarray:
        """The calling thread's pinned buffer, at least ``n`` bytes."""
        buf = getattr(self._local, "buf", None)
        if buf is None or buf.size < n:
            buf = self._local.buf = self.cuda.pinned_array(max(n, self.least), np.uint8)
        return buf


_page_hash = cuda.jit(device=True)(page_hash.py_func)


@cuda_fast_loads
@cuda.jit(cache=True)
def _check(words, wpp, need, cp, n_pages, first_page, want, bad):
    """Thread ``t`` checks page ``need[t // cp] * cp + t % cp`` of a column (``words``: its
    pages as uint64, ``wpp`` words a page) against ``want``; the first bad page's index
    lands in ``bad[0]`` (an atomic min)."""
    t = cuda.grid(1)
    if t >= need.shape[0] * cp:
        return
    p = need[t // cp] * cp + t % cp
    if p >= n_pages:
        return
    if _page_hash(words[p * wpp : (p + 1) * wpp], first_page + p) != want[p]:
        cuda.atomic.min(bad, 0, p)


def verify(cuda, store: PageStore, c, words, need: np.ndarray, cp: int, sums: dict) -> None:
    """Check pages ``need[k] * cp .. need[k] * cp + cp - 1`` of column ``c`` (``words``: its
    pages in GPU memory as uint64, the column's first page first) against their checksums;
    ``sums`` keeps each column's checksums on the GPU between calls. Raises the store's
    checksum error naming the first bad page."""
    if not len(need):
        return
    want = sums.get(c.name)
    if want is None:
        want = cuda.to_device(store.pages.checksum[c.first_page : c.first_page + c.n_pages])
        sums[c.name] = want
    bad = cuda.to_device(np.array([c.n_pages], np.int64))
    n = len(need) * cp
    threads = 128
    _check[max(1, -(-n // threads)), threads](
        words, store.page_size // 8, cuda.to_device(np.asarray(need, np.int64)), cp, c.n_pages,
        c.first_page, want, bad)
    first_bad = int(bad.copy_to_host()[0])
    if first_bad < c.n_pages:
        raise store.checksum_error(c.first_page + first_bad)
