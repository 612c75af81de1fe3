"""Per-page checksums and zone maps, computed in bulk with numba."""

from __future__ import annotations

import numpy as np

from bamql.lazyjit import njit, prange
from bamql.parallel import PARALLEL_LOCK
from bamql.storage.encoding import null_mask


@njit(nogil=True, cache=True, inline="always")
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


#: Pages the bulk checksums hash side by side (``_hash_lanes``).
_LANES = 8
#: Bytes from which a batch is hashed by every core (``_checksums_parallel``). One core
#: hashes a few GB/s, so a smaller batch takes a few ms at most, less than what starting a
#: parallel region can cost (waking the other threads, and on a busy machine waiting for a
#: core to run each of them).
PARALLEL_BYTES = 16 << 20


@njit(nogil=True, cache=True, inline="always")
def _hash_lanes(words: np.ndarray, ids: np.ndarray, i: int, out: np.ndarray) -> None:
    """``page_hash`` of pages ``i .. i + 7`` into ``out[i .. i + 7]``, the same values.

    A page's hash is one chain of dependent multiplies, so hashing a page at a time waits
    on the multiplier's latency at every word. Eight pages' chains advanced word by word
    side by side are independent, and the core overlaps them.
    """
    prime = np.uint64(0x9E3779B97F4A7C15)
    basis = np.uint64(0xCBF29CE484222325)
    s = np.uint64(29)
    h0 = basis ^ np.uint64(ids[i])
    h1 = basis ^ np.uint64(ids[i + 1])
    h2 = basis ^ np.uint64(ids[i + 2])
    h3 = basis ^ np.uint64(ids[i + 3])
    h4 = basis ^ np.uint64(ids[i + 4])
    h5 = basis ^ np.uint64(ids[i + 5])
    h6 = basis ^ np.uint64(ids[i + 6])
    h7 = basis ^ np.uint64(ids[i + 7])
    for j in range(words.shape[1]):
        h0 = (h0 ^ words[i, j]) * prime
        h0 ^= h0 >> s
        h1 = (h1 ^ words[i + 1, j]) * prime
        h1 ^= h1 >> s
        h2 = (h2 ^ words[i + 2, j]) * prime
        h2 ^= h2 >> s
        h3 = (h3 ^ words[i + 3, j]) * prime
        h3 ^= h3 >> s
        h4 = (h4 ^ words[i + 4, j]) * prime
        h4 ^= h4 >> s
        h5 = (h5 ^ words[i + 5, j]) * prime
        h5 ^= h5 >> s
        h6 = (h6 ^ words[i + 6, j]) * prime
        h6 ^= h6 >> s
        h7 = (h7 ^ words[i + 7, j]) * prime
        h7 ^= h7 >> s
    out[i] = h0
    out[i + 1] = h1
    out[i + 2] = h2
    out[i + 3] = h3
    out[i + 4] = h4
    out[i + 5] = h5
    out[i + 6] = h6
    out[i + 7] = h7


def _checksums_py(words: np.ndarray, ids: np.ndarray, out: np.ndarray) -> None:
    full = words.shape[0] // _LANES
    for b in prange(full):
        _hash_lanes(words, ids, b * _LANES, out)
    for i in range(full * _LANES, words.shape[0]):
        out[i] = page_hash(words[i], ids[i])


# Two builds of the loop. The parallel one runs only under the process-wide parallel lock
# (numba's default threading layer must not run two parallel regions at once); a reader
# that finds the lock taken uses the serial, nogil build instead of waiting. The serial one
# is its own function: numba's disk cache keys a build by its function, not by its flags,
# so two cached builds of one function could load each other.
_checksums_parallel = njit(parallel=True, cache=True, nogil=True)(_checksums_py)


@njit(nogil=True, cache=True)
def _checksums_serial(words: np.ndarray, ids: np.ndarray, out: np.ndarray) -> None:
    full = words.shape[0] // _LANES
    for b in range(full):
        _hash_lanes(words, ids, b * _LANES, out)
    for i in range(full * _LANES, words.shape[0]):
        out[i] = page_hash(words[i], ids[i])


def page_checksums(pages: np.ndarray, page_ids: np.ndarray) -> np.ndarray:
    """Checksums of ``pages`` (shape ``(n, page_size)`` uint8), page ``i`` being ``page_ids[i]``.

    The page id is mixed into the checksum, so a page read from the wrong place fails too.
    """
    words = np.ascontiguousarray(pages).view(np.uint64)
    out = np.empty(words.shape[0], dtype=np.uint64)
    ids = np.ascontiguousarray(page_ids, dtype=np.int64)
    if words.nbytes >= PARALLEL_BYTES and PARALLEL_LOCK.acquire(blocking=False):
        try:
            _checksums_parallel(words, ids, out)
        finally:
            PARALLEL_LOCK.release()
    else:
        _checksums_serial(words, ids, out)
    return out


def zone_maps(values: np.ndarray, rows_per_page: int, sentinel) -> tuple[np.ndarray, ...]:
    """Min, max (float64) and null count of each page of ``values`` (whole pages only).

    A page with no non-null value has min ``+inf`` and max ``-inf``. A float NULL is the
    NULL bit pattern (``encoding.null_mask``); a NaN is a value larger than any other, as in
    DuckDB: it leaves the min alone and makes the max ``+inf`` (so that a page holding one is
    never pruned for ``x > c``). A wide DECIMAL's pages (``sqltypes.WIDE_DTYPE``) get
    ``-inf`` and ``+inf``: never pruned.
    """
    v = values.reshape(-1, rows_per_page)
    if v.dtype.kind == "V":  # a wide DECIMAL's 16 bytes: no zone maps, any value may be in
        null = v == sentinel
        return (np.full(len(v), -np.inf), np.full(len(v), np.inf),
                null.sum(axis=1).astype(np.int32))
    if v.dtype.kind == "f":
        null = null_mask(v)
        nan = np.isnan(v) & ~null
        lo = np.where(null | nan, np.inf, v).min(axis=1)
        hi = np.where(null, -np.inf, np.where(nan, np.inf, v)).max(axis=1)
    else:
        null = v == sentinel
        big = np.iinfo(v.dtype).max
        lo = np.where(null, big, v).min(axis=1).astype(np.float64)
        hi = np.where(null, sentinel, v).max(axis=1).astype(np.float64)
        all_null = null.all(axis=1)
        lo[all_null] = np.inf
        hi[all_null] = -np.inf
    return lo.astype(np.float64), hi.astype(np.float64), null.sum(axis=1).astype(np.int32)


def int_zone_maps(values: np.ndarray, rows_per_page: int, sentinel: int) -> tuple[np.ndarray, ...]:
    """Exact min and max (int64) of each page of integer ``values`` (whole pages only): float64
    zone maps round from 2**53 on, so pruning an int64 column compares these instead.

    A page with no non-null value has min ``INT64_MAX`` and max ``INT64_MIN`` (min > max).
    """
    v = values.reshape(-1, rows_per_page)
    null = v == sentinel
    info = np.iinfo(np.int64)
    lo = np.where(null, info.max, v.astype(np.int64)).min(axis=1)
    hi = np.where(null, info.min, v.astype(np.int64)).max(axis=1)
    return lo, hi


def column_range(zmin: np.ndarray, zmax: np.ndarray, izmin: np.ndarray | None = None,
                 izmax: np.ndarray | None = None) -> tuple:
    """A column's smallest and largest value from its pages' zone maps: exact integers from
    the int64 ones when given (float64 rounds from 2**53 on), else floats; ``(None, None)``
    when no page holds a value (and None for a float bound that is not finite)."""
    if not len(zmin):
        return None, None
    if izmin is not None and izmax is not None:
        lo, hi = int(izmin.min()), int(izmax.max())
        return (lo, hi) if lo <= hi else (None, None)
    lo, hi = float(zmin.min()), float(zmax.max())
    return (lo if np.isfinite(lo) else None), (hi if np.isfinite(hi) else None)


__all__ = ["column_range", "int_zone_maps", "page_checksums", "page_hash", "zone_maps"]
