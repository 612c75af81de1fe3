"""Page value sets: for a column with a small integer domain, which values each page holds.

Zone maps (min/max per page) rule nothing out when every page holds a spread of values, as
pickup zones 1-265 do. A value set is exact: for each value ``v`` of the domain, one bit per
page saying whether the page holds ``v``, packed along the pages (``bits[v - lo]``), so an
``IN (255, 256)`` ORs two bit rows of ``n_pages / 8`` bytes. At 512 B pages of an int16 zone
id (256 rows), a zone with 0.05% of the rows is on ~12% of the pages: the other 88% of the
predicate column need not be read at all.

Kept in ``pages.npz`` (``vset:<column>`` and ``vset_lo:<column>``) for integer and dictionary
columns whose domain has at most ``max_domain(page_size)`` values, which bounds the bits to an
eighth of the column's own bytes. Stores without them read the same and prune by zone maps.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bamql.intmath import int_interval
from bamql.lazyjit import njit

#: Largest domain that gets value sets, whatever the page size.
MAX_DOMAIN = 1024


def max_domain(page_size: int) -> int:
    """Largest domain given value sets at ``page_size``: its bits per page stay within an
    eighth of the page's bits."""
    return min(MAX_DOMAIN, page_size)


def wanted(lo, hi, scale: int, page_size: int) -> bool:
    """Whether an integer or dictionary column of values ``[lo, hi]`` gets value sets (not a
    scaled float, and a domain small for the page size)."""
    return lo is not None and hi is not None and not scale and hi - lo < max_domain(page_size)


@njit(nogil=True, cache=True)
def _mark(values, rows_per_page, page0, lo, sentinel, bits):  # pragma: no cover - compiled
    dom = bits.shape[0]
    for j in range(values.shape[0]):
        v = values[j]
        if v == sentinel:
            continue
        k = np.int64(v) - lo
        if 0 <= k < dom:
            p = page0 + j // rows_per_page
            bits[k, p >> 3] |= np.uint8(1 << (p & 7))


def new_bits(lo: int, hi: int, n_pages: int) -> np.ndarray:
    """Empty value-set bits for domain ``[lo, hi]`` over ``n_pages`` pages."""
    return np.zeros((hi - lo + 1, -(-n_pages // 8)), np.uint8)


def mark(bits: np.ndarray, values: np.ndarray, rows_per_page: int, page0: int, lo: int,
         sentinel: int) -> None:
    """Record in ``bits`` the values of whole pages ``values`` (starting at column page
    ``page0``); nulls (``sentinel``) and values outside the domain are not recorded."""
    _mark(values, rows_per_page, page0, lo, sentinel, bits)


@dataclass(frozen=True)
class ValueSets:
    """One column's value sets: ``bits[v - lo]`` has bit ``p`` (little-endian within bytes)
    set when page ``p`` holds ``v``."""

    lo: int
    bits: np.ndarray
    n_pages: int

    def pages_holding(self, values) -> np.ndarray:
        """Boolean mask of the pages holding any of ``values`` (non-integers and values
        outside the domain match no page; None, SQL NULL, matches none)."""
        acc = np.zeros(self.bits.shape[1], np.uint8)
        ints = np.array([v for v in values if type(v) is int and self.lo <= v < self.lo
                         + self.bits.shape[0]], np.int64)
        if len(ints):  # plain integers (the common case, and long IN lists) at once
            acc |= np.bitwise_or.reduce(self.bits[np.unique(ints) - self.lo], axis=0)
        for v in values:
            if type(v) is int or not isinstance(v, int | float | np.number):
                continue
            v = v.item() if isinstance(v, np.number) else v
            # the integers equal to v, exactly: no float rounding of a big int; a float from
            # 2**53 on equals every integer that rounds to it, as the kernels compare
            start, stop = int_interval("=", v)
            for k in range(max(start, self.lo), min(stop, self.lo + self.bits.shape[0])):
                acc |= self.bits[k - self.lo]
        return np.unpackbits(acc, count=self.n_pages, bitorder="little").astype(bool)


__all__ = ["MAX_DOMAIN", "ValueSets", "mark", "max_domain", "new_bits", "wanted"]
