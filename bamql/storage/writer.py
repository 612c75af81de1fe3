"""Lays column values out in fixed-width (or bit-packed) pages across volume files (used by
ingest)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bamql.storage import valuesets
from bamql.storage.encoding import null_mask, sentinel_for
from bamql.storage.format import HISTOGRAM_MAX_DOMAIN, volume_name
from bamql.storage.packing import pack_pages, rows_per_page
from bamql.storage.pagemath import int_zone_maps, page_checksums, zone_maps

#: a column's sample in ``pages.npz`` holds about this many rows: every ``rows // SAMPLE_ROWS``th
#: (at least every row), from row 0
SAMPLE_ROWS = 16384

#: whether a store's files are flushed to disk as they are finished (see :func:`unsynced`)
_SYNC: ContextVar[bool] = ContextVar("bamql_store_sync", default=True)


def sync(fd: int) -> None:
    """Flush the file ``fd`` to disk, unless within :func:`unsynced`."""
    if _SYNC.get():
        os.fsync(fd)


@contextmanager
def unsynced() -> Iterator[None]:
    """Within it, stores written in this thread are not flushed to disk: for a store that
    serves one query and is removed after it (``storage.inplace``), where a crash loses
    nothing and a flush only costs time."""
    token = _SYNC.set(False)
    try:
        yield
    finally:
        _SYNC.reset(token)


@dataclass
class ColumnPlan:
    """A column to be written: its name, logical kind, storage dtype and value range."""

    name: str
    kind: str
    dtype: np.dtype
    lo: int | None = None  # integer range known before writing (for the histogram)
    hi: int | None = None
    dictionary: tuple[str, ...] | None = None
    scale: int = 0  # a float stored as round(value * 10**scale) in the integer ``dtype``
    bits: int = 0  # bits per code of a bit-packed column (storage.packing); 0: plain pages
    decimal: bool = False  # a float that some source holds as DECIMAL (ColumnMeta.decimal)
    #: the SQL type of an integer-stored DECIMAL(p,s) (its unscaled integers) or BOOLEAN
    #: (ColumnMeta.sql_type); None: the kind's own
    sql_type: str | None = None

    @property
    def decimal_scale(self) -> int | None:
        """The scale of a DECIMAL stored as its unscaled integers, else None."""
        from bamql.storage.sqltypes import parse_decimal

        d = parse_decimal(self.sql_type)
        return None if d is None else d[1]


class PageWriter:
    """Streams each column's values into pages of one global page-id space.

    Columns get consecutive extents; every full page is checksummed, zone-mapped and written
    at once, so memory holds at most one partial page per column beyond the caller's batch.
    """

    def __init__(self, root: Path, plans: list[ColumnPlan], rows: int, page_size: int,
                 n_volumes: int, sample_rows: int = SAMPLE_ROWS) -> None:
        self.root, self.plans, self.rows = root, plans, rows
        self.page_size, self.n_volumes = page_size, n_volumes
        self.rows_per_page = [rows_per_page(page_size, p.bits) if p.bits
                              else page_size // p.dtype.itemsize for p in plans]
        self.first_page, p = [], 0
        for rpp in self.rows_per_page:
            self.first_page.append(p)
            p += -(-rows // rpp)
        self.total_pages = p
        self.checksum = np.zeros(p, dtype=np.uint64)
        self.zmin = np.full(p, np.inf)
        self.zmax = np.full(p, -np.inf)
        # exact zone maps of integer-stored columns (not scaled floats), which float64 rounds
        self.izmin = np.full(p, np.iinfo(np.int64).max, dtype=np.int64)
        self.izmax = np.full(p, np.iinfo(np.int64).min, dtype=np.int64)
        self.nulls = np.zeros(p, dtype=np.int32)
        #: the frame of reference of each page of a packed column (0 elsewhere)
        self.ref = np.zeros(p, dtype=np.int64)
        self.fds = []
        for v in range(n_volumes):
            fd = os.open(root / volume_name(v), os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
            self.fds.append(fd)
        self._tail = [np.empty(0, dtype=pl.dtype) for pl in plans]
        self._written = [0] * len(plans)  # rows flushed to pages, per column
        self._appended = [0] * len(plans)
        self._null_count = [0] * len(plans)
        self._hist: list[np.ndarray | None] = []
        for pl in plans:
            dom = None
            if pl.lo is not None and pl.hi is not None and pl.hi - pl.lo < HISTOGRAM_MAX_DOMAIN:
                dom = np.zeros(pl.hi - pl.lo + 1, dtype=np.int64)
            self._hist.append(dom)
        # page value sets (storage.valuesets) for small integer and dictionary domains
        self._vsets: list[np.ndarray | None] = []
        for pl, rpp in zip(plans, self.rows_per_page, strict=True):
            self._vsets.append(valuesets.new_bits(pl.lo, pl.hi, -(-rows // rpp))
                               if valuesets.wanted(pl.lo, pl.hi, pl.scale, page_size) else None)
        self.sample_stride = max(1, rows // sample_rows)
        self._sample: list[list[np.ndarray]] = [[] for _ in plans]

    def append(self, i: int, values: np.ndarray) -> None:
        """Append the next values of column ``i`` (already in its storage dtype)."""
        pl = self.plans[i]
        sent = sentinel_for(pl.dtype)
        start = self._appended[i]
        self._appended[i] += len(values)
        off = (-start) % self.sample_stride
        sample = values[off :: self.sample_stride]
        if pl.scale:  # samples and zone maps are in the column's units, not the stored ones
            sample = np.where(sample == sent, np.nan, sample / float(10**pl.scale))
        self._sample[i].append(sample.copy())
        null = null_mask(values)  # a float's NaN is a value, its NULL a bit pattern
        self._null_count[i] += int(null.sum())
        if self._hist[i] is not None:
            v = values[~null].astype(np.int64) - pl.lo
            self._hist[i] += np.bincount(v, minlength=len(self._hist[i]))[: len(self._hist[i])]
        buf = np.concatenate([self._tail[i], values]) if len(self._tail[i]) else values
        rpp = self.rows_per_page[i]
        full = (len(buf) // rpp) * rpp
        if full:
            self._flush(i, buf[:full])
        self._tail[i] = buf[full:].copy()

    def _flush(self, i: int, values: np.ndarray, padding: int = 0) -> None:
        rpp = self.rows_per_page[i]
        n = len(values) // rpp
        p0 = self.first_page[i] + self._written[i] // rpp
        ids = np.arange(p0, p0 + n)
        lo, hi, nn = zone_maps(values, rpp, sentinel_for(values.dtype))
        if self.plans[i].scale:
            lo, hi = lo / float(10**self.plans[i].scale), hi / float(10**self.plans[i].scale)
        nn[-1] -= padding
        bits = self.plans[i].bits
        if bits:  # zone maps and value sets above are of the values, the pages hold codes
            pages, self.ref[ids] = pack_pages(values, bits, rpp, sentinel_for(values.dtype),
                                              self.page_size)
        else:
            pages = np.zeros((n, self.page_size), dtype=np.uint8)
            pages[:, : rpp * values.dtype.itemsize] = values.reshape(n, rpp).view(np.uint8)
        self.checksum[ids] = page_checksums(pages, ids)
        self.zmin[ids], self.zmax[ids], self.nulls[ids] = lo, hi, nn
        if values.dtype.kind == "i" and not self.plans[i].scale:
            self.izmin[ids], self.izmax[ids] = int_zone_maps(values, rpp, sentinel_for(values.dtype))
        if self._vsets[i] is not None:
            valuesets.mark(self._vsets[i], values, rpp, p0 - self.first_page[i], self.plans[i].lo,
                           sentinel_for(values.dtype))
        nv = self.n_volumes
        for v in range(nv):
            # Pages p with p % nv == v are consecutive within volume v: one write each.
            first = (v - p0) % nv
            sel = pages[first::nv]
            if len(sel):
                os.pwrite(self.fds[v], sel.tobytes(), ((p0 + first) // nv) * self.page_size)
        self._written[i] += n * rpp

    def finish(self) -> dict:
        """Flush partial last pages, close volumes and return per-column results."""
        out = []
        for i, pl in enumerate(self.plans):
            if self._appended[i] != self.rows:
                raise RuntimeError(f"column {pl.name}: {self._appended[i]} rows, expected {self.rows}")
            tail = self._tail[i]
            if len(tail):
                pad = self.rows_per_page[i] - len(tail)
                filler = np.full(pad, sentinel_for(pl.dtype), dtype=pl.dtype)
                self._flush(i, np.concatenate([tail, filler]), padding=pad)
            hist = None
            if self._hist[i] is not None:
                nz = np.nonzero(self._hist[i])[0]
                hist = {str(int(k) + pl.lo): int(self._hist[i][k]) for k in nz}
            out.append({"nulls": self._null_count[i], "histogram": hist,
                        "sample": (np.concatenate(self._sample[i]) if self._sample[i]
                                   else np.empty(0, pl.dtype)), "value_sets": self._vsets[i]})
        for fd in self.fds:
            sync(fd)
            os.close(fd)
        self.fds = []
        return {"columns": out}

    def abort(self) -> None:
        """Close any open volume files (the caller removes the directory)."""
        for fd in self.fds:
            os.close(fd)
        self.fds = []
