"""Candidate row ranges: what zone maps and page value sets leave of a table, as arrays.

Value sets can leave tens of thousands of short ranges (one per surviving 512 B page), so a
plan carries them as two int64 arrays, not Python tuples, and the executors read them as
arrays: the GPU kernel's prefix sum, the CPU engine's morsels, the file backend's page runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from bamql.lazyjit import njit


@njit(nogil=True, cache=True)
def _fill_rows(starts, ends, out):  # pragma: no cover - compiled
    k = 0
    for i in range(starts.shape[0]):
        for r in range(starts[i], ends[i]):
            out[k] = r
            k += 1


def _join(starts: np.ndarray, ends: np.ndarray, apart: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted intervals with each one joined to the one before unless ``apart[i - 1]``."""
    first = np.nonzero(np.concatenate([[True], apart]))[0]
    last = np.concatenate([first[1:] - 1, [len(starts) - 1]])
    return starts[first], ends[last]


def _frozen(a) -> np.ndarray:
    a = np.ascontiguousarray(a, dtype=np.int64)
    a.setflags(write=False)
    return a


@dataclass(frozen=True, eq=False)
class RowRanges:
    """Sorted, disjoint half-open row ranges ``[starts[i], ends[i])``."""

    starts: np.ndarray
    ends: np.ndarray

    def __post_init__(self) -> None:
        object.__setattr__(self, "starts", _frozen(self.starts))
        object.__setattr__(self, "ends", _frozen(self.ends))

    @classmethod
    def whole(cls, rows: int) -> RowRanges:
        """Every row of a table of ``rows`` rows (no range when it is empty)."""
        return cls([0], [rows]) if rows else cls([], [])

    @classmethod
    def of(cls, pairs) -> RowRanges:
        """From ``(start, end)`` pairs."""
        pairs = list(pairs)
        return cls([a for a, _ in pairs], [b for _, b in pairs])

    @classmethod
    def from_blocks(cls, keep: np.ndarray, block: int, rows: int) -> RowRanges:
        """The rows of the kept blocks of ``block`` rows (runs of kept blocks merged)."""
        edges = np.diff(np.concatenate([[0], keep.astype(np.int8), [0]]))
        starts = np.nonzero(edges == 1)[0].astype(np.int64) * block
        ends = np.minimum(np.nonzero(edges == -1)[0].astype(np.int64) * block, rows)
        return cls(starts, ends)

    def __len__(self) -> int:
        return len(self.starts)

    def __iter__(self) -> Iterator[tuple[int, int]]:
        return zip(self.starts.tolist(), self.ends.tolist(), strict=True)

    def __eq__(self, other) -> bool:
        if not isinstance(other, RowRanges):
            try:
                other = RowRanges.of(other)
            except (TypeError, ValueError):
                return NotImplemented
        return bool(np.array_equal(self.starts, other.starts) and np.array_equal(self.ends, other.ends))

    def __hash__(self) -> int:
        return hash((self.starts.tobytes(), self.ends.tobytes()))

    def __repr__(self) -> str:
        head = ", ".join(f"({a}, {b})" for a, b in zip(self.starts[:3], self.ends[:3], strict=True))
        return f"RowRanges({len(self)} ranges, {self.rows:,} rows: {head}{', ...' if len(self) > 3 else ''})"

    @cached_property
    def rows(self) -> int:
        """Rows in all ranges."""
        return int((self.ends - self.starts).sum())

    @cached_property
    def offsets(self) -> np.ndarray:
        """Each range's first row's number among the candidates (a prefix sum)."""
        n = self.ends - self.starts
        return _frozen(np.concatenate([[0], np.cumsum(n)[:-1]]) if len(n) else n)

    def chunk_rows(self, width: int = 32) -> np.ndarray | None:
        """The row of every ``width``-th candidate, when no ``width`` consecutive candidates
        (from a multiple of ``width`` on) straddle two ranges: then candidate ``t`` is row
        ``chunk_rows[t // width] + t % width``, one load where a search of the ranges takes
        ~17. None when the ranges are not so aligned (every start a multiple of ``width``,
        every length but the last too)."""
        n = self.ends - self.starts
        if not len(n) or np.any(self.starts % width) or np.any(n[:-1] % width):
            return None
        counts = -(-n // width)
        base = np.repeat(self.starts - self.offsets, counts)
        return base + width * np.arange(len(base), dtype=np.int64)

    def is_whole(self, rows: int) -> bool:
        """Whether these are all ``rows`` rows of the table."""
        return len(self) == 1 and self.starts[0] == 0 and self.ends[0] == rows

    def merged(self, max_gap: int) -> RowRanges:
        """Ranges whose gaps are at most ``max_gap`` rows joined (reading a short gap costs
        less than starting another read)."""
        if len(self) < 2:
            return self
        return RowRanges(*_join(self.starts, self.ends, self.starts[1:] - self.ends[:-1] > max_gap))

    def page_runs(self, rows_per_page: int) -> tuple[np.ndarray, np.ndarray]:
        """``(first, end)`` page numbers of the runs of pages holding the ranges' rows."""
        if not len(self):
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        p0 = self.starts // rows_per_page
        p1 = (self.ends - 1) // rows_per_page + 1
        return _join(p0, p1, p0[1:] > p1[:-1])  # ranges sharing or touching a page: one run

    @cached_property
    def _pages(self) -> dict[int, int]:
        return {}

    def pages(self, rows_per_page: int) -> int:
        """How many pages of ``rows_per_page`` rows hold the ranges' rows (remembered)."""
        n = self._pages.get(rows_per_page)
        if n is None:
            p0, p1 = self.page_runs(rows_per_page)
            n = self._pages[rows_per_page] = int((p1 - p0).sum())
        return n

    def clip(self, lo: int, hi: int) -> RowRanges:
        """The parts of the ranges within ``[lo, hi)``."""
        i0 = int(np.searchsorted(self.ends, lo, side="right"))
        i1 = int(np.searchsorted(self.starts, hi, side="left"))
        return RowRanges(np.maximum(self.starts[i0:i1], lo), np.minimum(self.ends[i0:i1], hi))

    def row_numbers(self) -> np.ndarray:
        """Every row of the ranges, in order (one compiled pass)."""
        if len(self) == 1:
            return np.arange(self.starts[0], self.ends[0], dtype=np.int64)
        out = np.empty(self.rows, np.int64)
        _fill_rows(self.starts, self.ends, out)
        return out

    def page_list(self, rows_per_page: int) -> np.ndarray:
        """The pages holding the ranges' rows, sorted, each once."""
        p0, p1 = self.page_runs(rows_per_page)
        n = p1 - p0
        heads = np.concatenate([[0], np.cumsum(n)[:-1]]) if len(n) else n
        return np.arange(int(n.sum()), dtype=np.int64) + np.repeat(p0 - heads, n)
