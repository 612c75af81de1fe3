"""Reading column values for a set of rows: only the pages that hold them (or the range)."""

from __future__ import annotations

import numpy as np

from bamql.engine.stats import QueryStats
from bamql.storage.format import ColumnMeta
from bamql.storage.store import PageStore


def fetch(store: PageStore, c: ColumnMeta, rows: np.ndarray, lo: int, hi: int, path: str,
          stats: QueryStats, needed: int, compressed: bool = False) -> np.ndarray:
    """Values of column ``c`` at ``rows`` (sorted, within ``[lo, hi)``).

    ``gather`` reads the distinct pages that hold ``rows``; ``scan`` and ``stream`` read every
    page of ``[lo, hi)``, from the column's compressed copy with ``compressed``. Gathered runs of
    adjacent pages are read with one call (store.read_pages); gathers of mostly isolated
    pages go through the compiled scattered reader (store.read_scattered).
    """
    rpp = c.rows_per_page
    if len(rows) == 0:
        return np.empty(0, dtype=c.np_dtype)
    if path == "gather":
        pl = rows // rpp
        pages = pl[np.concatenate(([True], pl[1:] != pl[:-1]))]
    else:
        pages = np.arange(lo // rpp, (hi - 1) // rpp + 1)
    buf = np.empty((len(pages), store.page_size), dtype=np.uint8)
    if compressed:  # a range, from the zstd copy (storage.streams; never for a gather)
        nbytes = store.read_stream(c.name, int(pages[0]), int(pages[-1]) + 1, buf)
    elif path == "gather" and 2 * (1 + np.count_nonzero(np.diff(pages) != 1)) > len(pages):
        # mostly isolated pages: one compiled pread loop, not a Python call per page
        nbytes = store.read_scattered(c.first_page + pages, buf, np.arange(len(pages)))
    else:  # long runs: one vectored read per run
        nbytes = store.read_pages(c.first_page + pages, buf)
    stats.add(c.name, len(pages), nbytes, needed)
    table = buf.view(c.np_dtype)[:, :rpp]
    if path != "gather" and len(rows) == hi - lo:  # contiguous: a slice, no gather
        start = lo - int(pages[0]) * rpp
        return table.reshape(-1)[start : start + len(rows)]
    idx = np.searchsorted(pages, rows // rpp)
    return table[idx, rows % rpp]
