"""Bit-packed pages: a frame of reference per page and a fixed bit width per column.

A column is *packed* when ``ColumnMeta.bits > 0`` (GPU-FOR, Shanbhag et al., SIGMOD 2022).
Only integer-stored columns are packed (integers, timestamps, dictionary codes and floats
stored as scaled integers). ``bits`` is ``bits_for(min, max)`` over the column's stored
values and a page holds ``rows_per_page = page_size * 8 // bits`` rows.

Page ``p`` has a reference ``ref[p]`` (int64, in ``pages.npz``): its smallest non-NULL stored
value, 0 for a page of NULLs only. Slot ``s`` of the page holds the code ``value - ref[p]``,
or ``2**bits - 1`` for NULL (values' codes stay below it). Codes are laid out LSB-first in
the page seen as little-endian uint64 words: code ``s`` occupies bits
``[s * bits, s * bits + bits)`` where bit ``k`` is bit ``k % 64`` of word ``k // 64`` (a code
may straddle two words). Unused tail bits are zero; slots past the last row are NULL codes.

A row's value is then at a computable bit offset, so a gather still reads one page and
decodes one value. Decoding gives exactly the values a plain page holds (NULL as the
dtype's sentinel), so everything after the read sees the same arrays.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bamql.lazyjit import njit
from bamql.storage.encoding import sentinel_for

#: Widest code a packed column may have.
MAX_BITS = 56
#: Storage types a packed column may decode to.
PACKABLE_TYPES = ("int8", "int16", "int32", "int64")


def bits_for(lo: int | None, hi: int | None) -> int:
    """Bits per code of stored values in ``[lo, hi]``: ``bit_length(hi - lo + 1)``, which
    leaves the all-ones code free for NULL; 1 when there is no value (None)."""
    if lo is None or hi is None:
        return 1
    return max(1, (int(hi) - int(lo) + 1).bit_length())


def packed_bits(lo: int | None, hi: int | None, dtype: np.dtype) -> int:
    """The ``bits`` a column of storage type ``dtype`` and stored range ``[lo, hi]`` gets:
    ``bits_for(lo, hi)`` when it is packable and narrower than the type, else 0 (plain)."""
    dtype = np.dtype(dtype)
    if dtype.name not in PACKABLE_TYPES:
        return 0
    b = bits_for(lo, hi)
    return b if b <= MAX_BITS and b < 8 * dtype.itemsize else 0


def rows_per_page(page_size: int, bits: int) -> int:
    """Rows a page of ``page_size`` bytes holds at ``bits`` per code."""
    return page_size * 8 // bits


@njit(nogil=True, cache=True)
def _pack(values, n_pages, rpp, bits, sentinel, words, ref):  # pragma: no cover - compiled
    nb = np.uint64(bits)
    null_code = (np.uint64(1) << nb) - np.uint64(1)
    n = values.shape[0]
    for p in range(n_pages):
        i0 = p * rpp
        i1 = min(i0 + rpp, n)
        lo = np.iinfo(np.int64).max
        seen = False
        for i in range(i0, i1):
            v = np.int64(values[i])
            if v != sentinel and v < lo:
                lo = v
                seen = True
        r = lo if seen else np.int64(0)
        ref[p] = r
        for s in range(rpp):
            i = i0 + s
            c = null_code
            if i < n:
                v = np.int64(values[i])
                if v != sentinel:
                    c = np.uint64(v - r)
                    if c >= null_code:
                        return i
            bit = np.uint64(s) * nb
            w = np.int64(bit >> np.uint64(6))
            sh = bit & np.uint64(63)
            words[p, w] |= c << sh
            if sh + nb > np.uint64(64):
                words[p, w + 1] |= c >> (np.uint64(64) - sh)
    return -1


def pack_pages(values: np.ndarray, bits: int, rpp: int, sentinel: int,
               page_size: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Pack integer ``values`` (NULLs as ``sentinel``) into pages of ``rpp`` codes of ``bits``.

    Parameters
    ----------
    values
        Stored values (any integer dtype), in row order; a last partial page is filled with
        NULL codes.
    bits, rpp
        Bits per code (1..``MAX_BITS``) and rows per page (``rpp * bits`` fits the page).
    sentinel
        The NULL of the values' storage type.
    page_size
        Bytes per page (a multiple of 8); default: the fewest whole words that hold ``rpp``
        codes.

    Returns
    -------
    tuple[np.ndarray, np.ndarray]
        The pages (uint8, shape ``(n_pages, page_size)``) and their references (int64).

    Raises
    ------
    ValueError
        A value's code does not fit ``bits`` (its page's range is too wide).
    """
    if not 1 <= bits <= MAX_BITS:
        raise ValueError(f"{bits} bits per code is outside 1..{MAX_BITS}")
    if page_size is None:
        page_size = 8 * -(-rpp * bits // 64)
    if rpp < 1 or rpp * bits > 8 * page_size or page_size % 8:
        raise ValueError(f"{rpp} codes of {bits} bits do not fit a page of {page_size} B")
    n_pages = -(-len(values) // rpp)
    words = np.zeros((n_pages, page_size // 8), np.uint64)
    ref = np.zeros(n_pages, np.int64)
    bad = _pack(np.ascontiguousarray(values), n_pages, rpp, bits, np.int64(sentinel), words, ref)
    if bad >= 0:
        raise ValueError(f"value {values[bad]} at row {bad} does not fit {bits} bits over its "
                         f"page's reference")
    return words.view(np.uint8), ref


@njit(nogil=True, cache=True)
def _unpack(words, pages, slots, bits, ref, sentinel, out):  # pragma: no cover - compiled
    nb = np.uint64(bits)
    mask = (np.uint64(1) << nb) - np.uint64(1)
    for k in range(out.shape[0]):
        p = pages[k]
        bit = np.uint64(slots[k]) * nb
        w = np.int64(bit >> np.uint64(6))
        sh = bit & np.uint64(63)
        x = words[p, w] >> sh
        if sh + nb > np.uint64(64):
            x |= words[p, w + 1] << (np.uint64(64) - sh)
        c = x & mask
        out[k] = sentinel if c == mask else ref[p] + np.int64(c)


@njit(nogil=True, cache=True)
def _unpack_all(words, rpp, bits, ref, sentinel, out):  # pragma: no cover - compiled
    nb = np.uint64(bits)
    mask = (np.uint64(1) << nb) - np.uint64(1)
    n = out.shape[0]
    for p in range(words.shape[0]):
        r = ref[p]
        i0 = p * rpp
        for s in range(min(rpp, n - i0)):
            bit = np.uint64(s) * nb
            w = np.int64(bit >> np.uint64(6))
            sh = bit & np.uint64(63)
            x = words[p, w] >> sh
            if sh + nb > np.uint64(64):
                x |= words[p, w + 1] << (np.uint64(64) - sh)
            c = x & mask
            out[i0 + s] = sentinel if c == mask else r + np.int64(c)


def _words(page_bytes: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(page_bytes).view(np.uint64)  # (n_pages, page_size / 8)


def unpack_pages(page_bytes: np.ndarray, bits: int, rpp: int, ref: np.ndarray, dtype,
                 rows: int | None = None) -> np.ndarray:
    """The values of packed pages, in row order, as ``dtype`` (NULL as its sentinel).

    Parameters
    ----------
    page_bytes
        uint8 pages, shape ``(n_pages, page_size)``.
    bits, rpp
        The column's bits per code and rows per page.
    ref
        The pages' references (int64, one per page).
    dtype
        The storage type the values decode to.
    rows
        Values wanted (the first ``rows``); default every slot of every page.
    """
    words = _words(page_bytes)
    n = words.shape[0] * rpp if rows is None else rows
    out = np.empty(n, np.dtype(dtype))
    _unpack_all(words, rpp, bits, np.ascontiguousarray(ref, np.int64),
                sentinel_for(dtype), out)
    return out


def unpack_rows(page_bytes: np.ndarray, pages: np.ndarray, slots: np.ndarray, bits: int,
                ref: np.ndarray, dtype) -> np.ndarray:
    """Values at (``pages[k]``, ``slots[k]``) of packed pages: ``pages`` index the rows of
    ``page_bytes`` (and of ``ref``); a gather decodes only the values it needs."""
    out = np.empty(len(pages), np.dtype(dtype))
    _unpack(_words(page_bytes), np.ascontiguousarray(pages, np.int64),
            np.ascontiguousarray(slots, np.int64), bits, np.ascontiguousarray(ref, np.int64),
            sentinel_for(dtype), out)
    return out


@dataclass(frozen=True)
class ColumnSize:
    """A column's bytes on disk: as plain fixed-width pages and as stored (packed or not)."""

    name: str
    dtype: str
    bits: int
    plain_bytes: int
    stored_bytes: int

    @property
    def ratio(self) -> float:
        """Plain bytes over stored bytes (1.0 for a plain column)."""
        return self.plain_bytes / self.stored_bytes if self.stored_bytes else 1.0


def column_sizes(manifest) -> list[ColumnSize]:
    """Per column of a store's ``manifest`` (``format.Manifest``), its plain and stored bytes
    (whole pages, as the volumes hold them)."""
    out = []
    ps = manifest.page_size
    for c in manifest.columns:
        plain = -(-manifest.rows // (ps // c.itemsize)) * ps
        out.append(ColumnSize(c.name, c.dtype, c.bits, plain, c.n_pages * ps))
    return out


__all__ = ["MAX_BITS", "ColumnSize", "bits_for", "column_sizes", "pack_pages", "packed_bits",
           "rows_per_page", "unpack_pages", "unpack_rows"]
