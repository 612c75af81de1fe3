"""Per-page checksums and zone maps, computed in bulk with numba."""

from __future__ import annotations

import numba
import numpy as np

from bamql.parallel import PARALLEL_LOCK


@numba.njit(nogil=True, cache=True, inline="always")
def page_hash(words: np.ndarray, page_id) -> np.uint64:
    """The checksum of one page (its uint64 words) with id ``page_id``; callable from
    compiled code (the GPU file backend's host I/O workers check pages with it)."""
    prime = np.uint64(0x9E3779B97F4A7C15)
    h = np.uint64(0xCBF29CE484222325) ^ np.uint64(page_id)
    for j in range(words.shape[0]):
        # (h ^ w) * odd and h ^ (h >> 29) are both bijective: any single changed word
        # changes the result, so one flipped byte is always caught.
        h = (h ^ words[j]) * prime
        h ^= h >> np.uint64(29)
    return h


def _checksums_py(words: np.ndarray, ids: np.ndarray, out: np.ndarray) -> None:
    for i in numba.prange(words.shape[0]):
        out[i] = page_hash(words[i], ids[i])


# Two builds of one loop. The parallel one runs only under the process-wide parallel lock
# (numba's default threading layer must not run two parallel regions at once); a reader
# that finds the lock taken uses the serial, nogil build instead of waiting.
_checksums_parallel = numba.njit(parallel=True, cache=True, nogil=True)(_checksums_py)
_checksums_serial = numba.njit(nogil=True)(_checksums_py)


def page_checksums(pages: np.ndarray, page_ids: np.ndarray) -> np.ndarray:
    """Checksums of ``pages`` (shape ``(n, page_size)`` uint8), page ``i`` being ``page_ids[i]``.

    The page id is mixed into the checksum, so a page read from the wrong place fails too.
    """
    words = np.ascontiguousarray(pages).view(np.uint64)
    out = np.empty(words.shape[0], dtype=np.uint64)
    ids = np.ascontiguousarray(page_ids, dtype=np.int64)
    if len(words) >= 64 and PARALLEL_LOCK.acquire(blocking=False):
        try:
            _checksums_parallel(words, ids, out)
        finally:
            PARALLEL_LOCK.release()
    else:
        _checksums_serial(words, ids, out)
    return out


def zone_maps(values: np.ndarray, rows_per_page: int, sentinel) -> tuple[np.ndarray, ...]:
    """Min, max (float64) and null count of each page of ``values`` (whole pages only).

    A page with no non-null value has min ``+inf`` and max ``-inf``.
    """
    v = values.reshape(-1, rows_per_page)
    if v.dtype.kind == "f":
        null = np.isnan(v)
        lo = np.where(null, np.inf, v).min(axis=1)
        hi = np.where(null, -np.inf, v).max(axis=1)
    else:
        null = v == sentinel
        big = np.iinfo(v.dtype).max
        lo = np.where(null, big, v).min(axis=1).astype(np.float64)
        hi = np.where(null, sentinel, v).max(axis=1).astype(np.float64)
        all_null = null.all(axis=1)
        lo[all_null] = np.inf
        hi[all_null] = -np.inf
    return lo.astype(np.float64), hi.astype(np.float64), null.sum(axis=1).astype(np.int32)


__all__ = ["page_checksums", "page_hash", "zone_maps"]
