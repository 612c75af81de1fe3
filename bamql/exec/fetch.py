"""Reading column values for a set of rows: only the pages that hold them (or the range)."""

from __future__ import annotations

import numpy as np

from bamql.config import AccessPath
from bamql.physical.ranges import RowRanges
from bamql.storage.format import ColumnMeta
from bamql.storage.iostats import QueryStats
from bamql.storage.store import PageStore


def fetch(store: PageStore, c: ColumnMeta, rows: np.ndarray, window: RowRanges, path: AccessPath,
          stats: QueryStats, needed: int, compressed: bool = False) -> np.ndarray:
    """Values of column ``c`` at ``rows`` (sorted, a subset of ``window``).

    ``window`` holds the morsel's candidate ranges: what zone maps and value sets left.
    ``gather`` reads the distinct pages that hold ``rows``; ``scan`` and ``stream`` read every
    page holding a row of ``window``, from the column's compressed copy with ``compressed``
    (then the whole span from the first such page to the last). Runs of adjacent pages are
    read with one call (store.read_pages); mostly isolated pages go through the compiled
    scattered reader (store.read_scattered). Packed pages are decoded: whole where every
    row is wanted, else only the rows' values (``PageStore.row_values``).
    """
    rpp = c.rows_per_page
    if len(rows) == 0:
        return np.empty(0, dtype=c.np_dtype)
    lo, hi = int(window.starts[0]), int(window.ends[-1])
    dense = len(window) == 1  # the window is one run of rows
    if path != AccessPath.GATHER and (dense or compressed):
        pages = np.arange(lo // rpp, (hi - 1) // rpp + 1)
    elif path != AccessPath.GATHER:
        pages = window.page_list(rpp)
    else:
        pl = rows // rpp
        pages = pl[np.concatenate(([True], pl[1:] != pl[:-1]))]
    buf = np.empty((len(pages), store.page_size), dtype=np.uint8)
    if compressed:  # a span, from the zstd copy (storage.streams; never for a gather)
        nbytes = store.read_stream(c.name, int(pages[0]), int(pages[-1]) + 1, buf)
    elif 2 * (1 + np.count_nonzero(np.diff(pages) != 1)) > len(pages):
        # mostly isolated pages: one compiled pread loop, not a Python call per page
        nbytes = store.read_scattered(c.first_page + pages, buf, np.arange(len(pages)))
    else:  # long runs: one vectored read per run
        nbytes = store.read_pages(c.first_page + pages, buf)
    stats.add(c.name, len(pages), nbytes, needed)
    ids = c.first_page + pages
    if path != AccessPath.GATHER and dense and (not c.bits or 4 * len(rows) >= window.rows):
        # one run of rows, read whole (packed pages decode whole where many rows are wanted)
        first = int(pages[0]) * rpp
        run = store.page_values(c, buf, ids).reshape(-1)[lo - first : hi - first]
        # every row: a slice; some (a later stage's, a dependent column's rows after a
        # filter): one gather by offset into it, no page lookup per row
        return run if len(rows) == window.rows else run[rows - lo]
    if path != AccessPath.GATHER and len(rows) == window.rows:
        first = int(pages[0]) * rpp
        if lo == first and len(rows) == (len(pages) - 1) * rpp + hi - int(pages[-1]) * rpp:
            # the candidates fill every page they touch (value-set ranges are whole pages)
            return store.page_values(c, buf, ids).reshape(-1)[: len(rows)]
    # page -> its row in ``buf`` through a lookup over the span (a search per row is slower)
    lut = np.zeros(int(pages[-1]) - int(pages[0]) + 1, np.int64)
    lut[pages - pages[0]] = np.arange(len(pages))
    return store.row_values(c, buf, ids, lut[rows // rpp - pages[0]], rows % rpp)
