"""Reading a page store: pages by id into a caller's buffer, columns (its checks: ``storage.verify``).

A store sealed with this machine's key (``storage.seal``) opens after the checks every store
gets (the manifest consistent in itself, ``pages.npz`` of the manifest's shape). Any other
(sealed elsewhere, by an older bamql, or edited and sealed again without the key) must also
pass the cheap checks of its metadata against ``pages.npz`` (``metadata_problems``: each
column's description, range and scaled zone maps) and then its full ``verify``; it is refused
in one line at the first problem, else opened with a one-line note and trusted here from then
on. ``bamql verify`` opens with ``verify_unsealed=False`` and lists the problems itself.
Where this machine has no key (its cache directory is not usable, which the kernel cache
notes), no store can be trusted or remembered: every store gets the cheap checks at every
open, and only ``bamql verify`` reads its pages.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path

import numpy as np
import pyarrow as pa

from bamql.errors import StoreError
from bamql.storage import seal
from bamql.storage.encoding import null_mask
from bamql.storage.format import (
    DESC_PREFIX,
    MANIFEST,
    PAGES_META,
    ColumnMeta,
    Manifest,
    open_member,
    volume_name,
)
from bamql.storage.npzview import DigestMismatch, read_npz
from bamql.storage.packing import unpack_pages, unpack_rows
from bamql.storage.pagemath import page_checksums
from bamql.storage.valuesets import ValueSets
from bamql.storage.verify import Verification

#: Most buffers one vectored read may take (Linux's IOV_MAX).
_IOV_MAX = 1024


@dataclass(frozen=True)
class PageMeta:
    """Per-page metadata over the global page-id space."""

    checksum: np.ndarray
    zmin: np.ndarray
    zmax: np.ndarray
    nulls: np.ndarray
    #: exact int64 zone maps of integer-stored columns (min > max: a page of NULLs only);
    #: None in stores written before them, whose float64 ones round beyond 2**53
    izmin: np.ndarray | None = None
    izmax: np.ndarray | None = None
    #: the frame of reference of each page of a packed column (``storage.packing``; 0 for
    #: other pages); None in stores written before packing, which have no packed column
    ref: np.ndarray | None = None


class PageStore(Verification):
    """An open table: its manifest, page metadata and volume files.

    Reads are positional (``os.preadv``), so one store serves many threads at once.

    A store not sealed with this machine's key is checked at open (the module's docstring);
    ``verify_unsealed=False`` leaves out its full verify (for a caller that runs ``verify``
    itself: ``bamql verify``).
    """

    def __init__(self, path: str | os.PathLike, verify_unsealed: bool = True) -> None:
        self.path = Path(path)
        self.manifest, self.seal = Manifest.load_sealed(self.path)
        m = self.manifest
        self.columns: dict[str, ColumnMeta] = {c.name: c for c in m.columns}
        self._fds: list[int] = []
        self._group_fds: list[int] = []
        self._zst_fd: int | None = None
        fd = open_member(self.path, PAGES_META, "page metadata")
        try:  # one read, hashed as it comes in; the arrays are views of it (storage.npzview)
            z = read_npz(fd, m.pages_meta_sha256)
        except DigestMismatch:
            raise StoreError(f"store {self.path}: {PAGES_META} is corrupt (checksum mismatch)") \
                from None
        except ValueError as e:
            raise StoreError(f"store {self.path}: {PAGES_META} is malformed ({e}); the store "
                             "is corrupt") from None
        try:  # pickled arrays are refused (by read_npz); anything missing is malformed
            exact = "izmin" in z and "izmax" in z
            self.pages = PageMeta(z["checksum"], z["zmin"], z["zmax"], z["nulls"],
                                  z["izmin"] if exact else None, z["izmax"] if exact else None,
                                  z["ref"] if "ref" in z else None)
            self.sample = {c: z[f"sample:{c}"] for c in self.columns}
            #: each column's description digest (``format.column_digest``), by name; none
            #: in stores of format 4
            self.descriptions: dict[str, np.ndarray] = {
                k[len(DESC_PREFIX):]: z[k] for k in z if k.startswith(DESC_PREFIX)}
            #: page value sets of small-domain columns (storage.valuesets); none in older
            #: stores
            self.value_sets: dict[str, ValueSets] = {
                c: ValueSets(int(z[f"vset_lo:{c}"][0]), z[f"vset:{c}"], meta.n_pages)
                for c, meta in self.columns.items() if f"vset:{c}" in z}
            zst = (z["zst:off"], z["zst:len"]) if m.streams is not None else None
            #: each compressed chunk's ``streams.chunk_hash`` (none in older stores)
            self.zst_sums: np.ndarray | None = (
                z["zst:sum"] if zst is not None and "zst:sum" in z else None)
        except (ValueError, KeyError, IndexError) as e:
            raise StoreError(f"store {self.path}: {PAGES_META} is malformed ({e}); the store "
                             "is corrupt") from None
        problem = self._meta_inconsistency(zst)
        if problem:
            raise StoreError(f"store {self.path}: {PAGES_META} does not match {MANIFEST}: "
                             f"{problem}; the store is corrupt")
        if not self.seal.trusted:  # what can be checked without reading a page
            problems = self.metadata_problems()
            if problems:
                raise StoreError(f"store {self.path} {self.seal.why()}, and its metadata is "
                                 f"inconsistent: {problems[0]}; re-ingest it")
        self._lock = threading.Lock()
        try:
            self._open_files(zst)
            # without a key (its cache directory unusable) nothing can be trusted or
            # remembered here: the cheap checks above are all, at every open
            if not self.seal.trusted and verify_unsealed and self.seal.tag is not None:
                self._verify_unsealed()
        except BaseException:
            self.close()
            raise

    def _verify_unsealed(self) -> None:
        """Verify in full a store this machine has not sealed: refused in one line at its
        first problem, else opened with a one-line note and trusted here from now on."""
        t0 = time.perf_counter()
        problems = self.verify()
        if problems:
            more = f" (and {len(problems) - 1:,} more)" if len(problems) > 1 else ""
            raise StoreError(f"store {self.path} {self.seal.why()}, and fails its verify: "
                             f"{problems[0]}{more}; `bamql verify {self.path}` lists the "
                             "problems; re-ingest it")
        took = time.perf_counter() - t0
        if self.remember_verified():
            then = "trusted here from now on"
        else:
            then = "verified again at every open (its record cannot be written here)"
        seal.note(f"store {self.path} {self.seal.why()}: verified in full ({self.rows:,} rows "
                  f"in {took:.1f} s) and {then}")

    def remember_verified(self) -> bool:
        """Record that this store's manifest passed its full verify here (``storage.seal``),
        so that later opens trust it; False where it cannot be recorded."""
        if self.seal.trusted:
            return True
        ok = seal.remember(self.seal.tag)
        if ok:
            self.seal = replace(self.seal, trusted=True)
        return ok

    def _meta_inconsistency(self, zst: tuple[np.ndarray, np.ndarray] | None) -> str | None:
        """What makes the page metadata disagree with the manifest's shape, or None."""
        m, pg = self.manifest, self.pages
        per_page = (("checksum", pg.checksum, np.uint64), ("zmin", pg.zmin, np.float64),
                    ("zmax", pg.zmax, np.float64), ("nulls", pg.nulls, np.int32))
        for key, arr, dt in per_page:
            if arr.shape != (m.all_pages,) or arr.dtype != dt:
                return f"{key} is not one {np.dtype(dt)} per page of {m.all_pages:,}"
        for key, arr in (("izmin", pg.izmin), ("izmax", pg.izmax)):
            if arr is not None and (arr.shape != (m.total_pages,) or arr.dtype != np.int64):
                return f"{key} is not one int64 per page of {m.total_pages:,}"
        for c in m.columns:  # the pages' NULLs add up to the column's
            if int(pg.nulls[c.first_page : c.first_page + c.n_pages].sum()) != c.nulls:
                return f"the NULLs of column {c.name!r}'s pages do not add up to {c.nulls:,}"
        problem = self._ref_inconsistency()
        if problem:
            return problem
        for c, vs in self.value_sets.items():  # written by another tool or version: refuse
            if vs.bits.ndim != 2 or vs.bits.dtype != np.uint8 or vs.bits.shape[1] != -(-vs.n_pages // 8):
                return f"the page value sets of column {c} do not match its {vs.n_pages:,} pages"
        if zst is not None:  # each column's chunks follow the last, filling the file
            sm, (off, ln) = m.streams, zst
            first = np.cumsum([0, *(-(-c.n_pages // sm.chunk_pages) for c in m.columns)])
            ends = (np.concatenate([[0], off + ln]) if off.ndim == 1 and off.shape == ln.shape
                    else None)
            if (off.dtype != np.int64 or ln.dtype != np.int64 or off.shape != (first[-1],)
                    or ends is None or (ln < 0).any() or (off != ends[:-1]).any()
                    or ends[-1] != sm.file_bytes
                    or [sm.first_chunk[c.name] for c in m.columns] != first[:-1].tolist()):
                return f"the chunks of the compressed copy {sm.file} do not fit it"
            sums = self.zst_sums
            if sums is not None and (sums.dtype != np.uint64 or sums.shape != off.shape):
                return f"the chunk checksums of the compressed copy {sm.file} do not match its chunks"
        return None

    def _ref_inconsistency(self) -> str | None:
        """What makes the packed pages' references disagree with the manifest, or None: one
        int64 per page, 0 outside packed columns, and a packed integer page's its smallest
        value (its exact zone map's minimum)."""
        m, pg = self.manifest, self.pages
        packed = [c for c in m.columns if c.bits]
        if pg.ref is None:
            return f"ref is missing for the packed column {packed[0].name!r}" if packed else None
        if pg.ref.shape != (m.all_pages,) or pg.ref.dtype != np.int64:
            return f"ref is not one int64 per page of {m.all_pages:,}"
        for c in packed:
            ids = slice(c.first_page, c.first_page + c.n_pages)
            if not c.scale and pg.izmin is not None:
                lo, hi = pg.izmin[ids], pg.izmax[ids]
                if (pg.ref[ids] != np.where(lo <= hi, lo, 0)).any():
                    return f"the page references of column {c.name!r} are not its pages' minima"
        at = 0  # the pages between packed extents, as slices (no mask over every page)
        for lo, hi in sorted((c.first_page, c.first_page + c.n_pages) for c in packed):
            if pg.ref[at:lo].any():
                return "a page that is not packed has a reference"
            at = max(at, hi)
        if pg.ref[at:].any():
            return "a page that is not packed has a reference"
        return None

    def _open_files(self, zst: tuple[np.ndarray, np.ndarray] | None) -> None:
        """Open the volume, row-group and compressed-copy files, checking their sizes."""
        m = self.manifest
        for v in range(m.n_volumes):
            self._fds.append(open_member(self.path, volume_name(v), "volume"))
            size, want = os.fstat(self._fds[-1]).st_size, m.volume_bytes(v)
            if size != want:
                raise StoreError(
                    f"store {self.path}: volume {volume_name(v)} is truncated or damaged "
                    f"({size:,} bytes, expected {want:,})"
                )
        #: columns with a copy in a row group -> that copy (its first page in the group)
        self.shadow: dict[str, ColumnMeta] = {}
        for g in m.groups:
            self._group_fds.append(open_member(self.path, g.file, "row group file"))
            want = g.n_pages * g.block_bytes
            if os.fstat(self._group_fds[-1]).st_size != want:
                raise StoreError(f"store {self.path}: row group file {g.file} is missing, "
                                 f"truncated or damaged (expected {want:,} bytes)")
            for j, name in enumerate(g.members):
                c = self.columns[name]
                self.shadow[name] = replace(c, first_page=g.first_page + j * g.n_pages)
        self._layout_fds = (tuple(self._fds), tuple(self._group_fds))  # ``layout``'s
        #: compressed bytes of each column's copy (what a stream of it reads), if there is one
        self.stream_bytes: dict[str, int] = {}
        if m.streams is not None:
            sm = m.streams
            #: the compressed copy (``storage.streams``): its file and per-chunk offsets, lengths
            self._zst_fd = open_member(self.path, sm.file, "compressed copy")
            if os.fstat(self._zst_fd).st_size != sm.file_bytes:
                raise StoreError(f"store {self.path}: compressed copy {sm.file} is missing, "
                                 f"truncated or damaged (expected {sm.file_bytes:,} bytes)")
            self._zst = zst
            for c in m.columns:
                k0 = sm.first_chunk[c.name]
                k1 = k0 + -(-c.n_pages // sm.chunk_pages)
                self.stream_bytes[c.name] = int(zst[1][k0:k1].sum())

    # -- metadata ------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.manifest.table

    @cached_property
    def layout(self):
        """Where each page lies in the open files (``nativeio.DiskLayout``), for the
        compiled readers; made on first use, as ``nativeio`` brings numba in."""
        from bamql.storage.nativeio import DiskLayout

        return DiskLayout.of(self.manifest, *self._layout_fds)

    @property
    def rows(self) -> int:
        return self.manifest.rows

    @property
    def page_size(self) -> int:
        return self.manifest.page_size

    def column(self, name: str) -> ColumnMeta:
        """Metadata of column ``name`` (StoreError naming the table if unknown)."""
        try:
            return self.columns[name]
        except KeyError:
            raise StoreError(f"table {self.name!r} has no column {name!r}") from None

    def owner(self, page: int) -> ColumnMeta:
        """The column whose extent holds global page ``page``."""
        for c in (*self.manifest.columns, *self.shadow.values()):
            if c.first_page <= page < c.first_page + c.n_pages:
                return c
        raise StoreError(f"page {page} is outside store {self.path}")

    # -- reading -------------------------------------------------------------------------
    def read_pages(self, page_ids: np.ndarray, out: np.ndarray, verify: bool = True) -> int:
        """Read pages ``page_ids`` (sorted, unique) into rows of ``out``; return bytes read.

        Pages consecutive within a volume are read with one call. With ``verify``, every page
        is checked against its checksum, and a mismatch raises StoreError naming the column
        and page.
        """
        ids = np.asarray(page_ids, dtype=np.int64)
        n = len(ids)
        if n == 0:
            return 0
        ps, nv = self.page_size, self.manifest.n_volumes
        if out.shape[0] < n or out.shape[1] != ps or out.dtype != np.uint8:
            raise ValueError("out must be a uint8 array of shape (>= len(page_ids), page_size)")
        if ids[0] < 0 or ids[-1] >= self.manifest.all_pages:
            raise StoreError(f"page ids outside store {self.path}")
        if ids[-1] >= self.manifest.total_pages:  # row-group pages: not contiguous on disk
            return self.read_scattered(ids, out, np.arange(n), verify)
        total = 0
        for v in range(nv):
            idx = np.nonzero(ids % nv == v)[0] if nv > 1 else np.arange(n)
            if not len(idx):
                continue
            pos = ids[idx] // nv
            # split into runs of consecutive positions: one preadv per run
            breaks = np.nonzero(np.diff(pos) != 1)[0] + 1
            starts = np.concatenate([[0], breaks])
            ends = np.concatenate([breaks, [len(pos)]])
            for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
                rows = idx[s:e]
                if rows[-1] - rows[0] == e - s - 1:  # one contiguous span of out: one buffer
                    spans = [(int(pos[s]), [memoryview(out[rows[0] : rows[-1] + 1]).cast("B")])]
                else:  # scattered rows of out: vectored reads, at most IOV_MAX buffers each
                    spans = [(int(pos[s + k]), [memoryview(out[i]) for i in rows[k : k + _IOV_MAX]])
                             for k in range(0, e - s, _IOV_MAX)]
                for p, bufs in spans:
                    want = sum(b.nbytes for b in bufs)
                    got = os.preadv(self._fds[v], bufs, p * ps)
                    if got != want:
                        raise StoreError(f"store {self.path}: short read in {volume_name(v)}")
                    total += got
        if verify:
            self.check(ids, out[:n])
        return total

    def prefetch(self, spans: np.ndarray, limit: int = 1024) -> threading.Thread | None:
        """Have the OS start reading global pages ``[a, b)`` of each row ``(a, b)`` of
        ``spans`` (sorted; the first ``limit`` of them) into its page cache, on a thread of
        its own, and return at once (that thread, or None where there is nothing to read).

        A one-shot query knows the pages its scans read once it is planned, well before it
        reads them: numba's import and the kernels' loads come between. ``posix_fadvise``
        (``WILLNEED``) lets the disk work meanwhile. It is advice only: the pages are still
        read, and checked against their checksums, when the query reads them. Row-group
        pages (not contiguous on disk) are left out.
        """
        spans = np.asarray(spans, np.int64).reshape(-1, 2)[:limit]
        spans = spans[spans[:, 0] < self.manifest.total_pages]
        if not len(spans) or not hasattr(os, "posix_fadvise"):
            return None
        spans[:, 1] = np.minimum(spans[:, 1], self.manifest.total_pages)
        ps, nv, fds = self.page_size, self.manifest.n_volumes, tuple(self._fds)

        def advise() -> None:
            # page p lies in volume p % nv at position p // nv
            for a, b in spans.tolist():
                for v, fd in enumerate(fds):
                    first, last = -(-(a - v) // nv), (b - 1 - v) // nv
                    if last >= first:
                        try:
                            os.posix_fadvise(fd, first * ps, (last - first + 1) * ps,
                                             os.POSIX_FADV_WILLNEED)
                        except OSError:  # closed meanwhile, or advice not taken: no matter
                            return

        t = threading.Thread(target=advise, name="bamql-prefetch", daemon=True)
        t.start()
        return t

    def _decompressors(self):
        """Threads that decompress a stream's chunks (made on first use, shared)."""
        with self._lock:
            if getattr(self, "_zpool", None) is None:
                from concurrent.futures import ThreadPoolExecutor

                self._zpool = ThreadPoolExecutor(min(8, os.cpu_count() or 1),
                                                 thread_name_prefix="bamql-zstd")
            return self._zpool

    def read_stream(self, name: str, p0: int, p1: int, out: np.ndarray, verify: bool = True) -> int:
        """Pages ``p0 .. p1 - 1`` of column ``name`` (relative to its first page) into
        ``out``, from the compressed copy when the store has one (else the pages); checksums
        checked as ``read_pages``. Returns the bytes read from disk."""
        c = self.column(name)
        if self._zst_fd is None:
            return self.read_pages(np.arange(c.first_page + p0, c.first_page + p1), out, verify)
        from bamql.storage.streams import CorruptChunk, read_chunks

        try:
            n = read_chunks(self._zst_fd, self.manifest.streams, *self._zst, c, p0, p1,
                            self.page_size, out, self._decompressors())
        except CorruptChunk as e:
            raise StoreError(f"store {self.path}: compressed copy of column {name!r}: {e}; "
                             "the store is corrupt") from None
        if verify:
            ids = np.arange(c.first_page + p0, c.first_page + p1)
            bad = np.nonzero(page_checksums(out[: p1 - p0], ids) != self.pages.checksum[ids])[0]
            if len(bad):
                raise self.checksum_error(int(ids[bad[0]]))
        return n

    @property
    def copy_fd(self) -> int | None:
        """The descriptor of the compressed copy's file (None: the store has no copy)."""
        return self._zst_fd

    def stream_chunks(self, name: str) -> tuple[int, np.ndarray, np.ndarray]:
        """The compressed copy's chunks of column ``name``: ``(index of its first chunk,
        their byte offsets in the copy, their lengths)``."""
        sm, (off, ln) = self.manifest.streams, self._zst
        k0 = sm.first_chunk[name]
        k1 = k0 + -(-self.column(name).n_pages // sm.chunk_pages)
        return k0, off[k0:k1], ln[k0:k1]

    def read_compressed(self, offset: int, out: np.ndarray) -> None:
        """``len(out)`` bytes of the compressed copy from byte ``offset`` into ``out``
        (one ``pread``, outside the GIL)."""
        n = os.preadv(self._zst_fd, [memoryview(out).cast("B")], offset)
        if n != out.nbytes:
            raise StoreError(f"store {self.path}: compressed copy {self.manifest.streams.file} "
                             "is truncated; the store is corrupt")

    def read_scattered(self, page_ids: np.ndarray, out: np.ndarray, rows: np.ndarray,
                       verify: bool = True) -> int:
        """Read page ``page_ids[k]`` into ``out[rows[k]]`` (any order, repeats allowed) in
        compiled code without the GIL (``nativeio``); checksums checked as ``read_pages``.
        Returns the bytes read."""
        from bamql.storage.nativeio import read_into

        ids = np.asarray(page_ids, dtype=np.int64)
        if len(ids) == 0:
            return 0
        if ids.min() < 0 or ids.max() >= self.manifest.all_pages:
            raise StoreError(f"page ids outside store {self.path}")
        bad = read_into(self.layout, ids, out, rows)
        if bad >= 0:
            raise StoreError(f"store {self.path}: short read of global page {int(ids[bad])}")
        if verify:
            self.check(ids, out[np.asarray(rows, np.int64)])
        return len(ids) * self.page_size

    def check(self, ids: np.ndarray, pages: np.ndarray) -> None:
        """Raise StoreError if any page's checksum does not match the manifest's."""
        bad = np.nonzero(page_checksums(pages, ids) != self.pages.checksum[ids])[0]
        if len(bad):
            raise self.checksum_error(int(ids[bad[0]]))

    def checksum_error(self, p: int) -> StoreError:
        """The error for global page ``p`` failing its checksum."""
        c = self.owner(p)
        return StoreError(f"store {self.path}: checksum mismatch in column {c.name!r} page "
                          f"{p - c.first_page} (global page {p}); the store is corrupt")

    def page_values(self, c: ColumnMeta, pages: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """The values (storage dtype, shape ``(n, rows_per_page)``) of the column ``c``'s
        pages ``pages`` (uint8, ``(n, page_size)``) of global ids ``ids``: a view of plain
        pages, packed ones decoded (``storage.packing``)."""
        if not c.bits:
            return pages[:, : c.rows_per_page * c.itemsize].view(c.np_dtype)
        vals = unpack_pages(pages, c.bits, c.rows_per_page, self.pages.ref[ids], c.np_dtype)
        return vals.reshape(-1, c.rows_per_page)

    def row_values(self, c: ColumnMeta, pages: np.ndarray, ids: np.ndarray, k: np.ndarray,
                   slots: np.ndarray) -> np.ndarray:
        """Values of column ``c`` at slot ``slots[j]`` of page ``pages[k[j]]`` (global id
        ``ids[k[j]]``): a packed page decodes only those values."""
        if not c.bits:
            return pages[:, : c.rows_per_page * c.itemsize].view(c.np_dtype)[k, slots]
        return unpack_rows(pages, k, slots, c.bits, self.pages.ref[ids], c.np_dtype)

    def read_column_pages(self, name: str, verify: bool = True) -> tuple[np.ndarray, int]:
        """All values of column ``name`` in storage dtype (padding dropped), and bytes read."""
        c = self.column(name)
        buf = np.empty((c.n_pages, self.page_size), dtype=np.uint8)
        ids = np.arange(c.first_page, c.first_page + c.n_pages)
        nbytes = self.read_pages(ids, buf, verify)
        return self.page_values(c, buf, ids).reshape(-1)[: self.rows], nbytes

    def to_arrow(self, name: str) -> pa.Array:
        """Column ``name`` decoded to its logical Arrow type, nulls restored."""
        c = self.column(name)
        vals, _ = self.read_column_pages(name)
        return decode(c, vals)

    def to_table(self, columns: list[str] | None = None) -> pa.Table:
        """The table (or some columns) as Arrow, decoded."""
        names = columns or list(self.columns)
        return pa.table({n: self.to_arrow(n) for n in names})

    def close(self) -> None:
        """Close the volume and row-group files."""
        zst = getattr(self, "_zst_fd", None)
        for fd in self._fds + getattr(self, "_group_fds", []) + ([zst] if zst is not None else []):
            os.close(fd)
        self._fds, self._group_fds, self._zst_fd = [], [], None
        pool = getattr(self, "_zpool", None)
        if pool is not None:
            pool.shutdown(wait=False)
            self._zpool = None

    def __enter__(self) -> PageStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


def decode(c: ColumnMeta, vals: np.ndarray) -> pa.Array:
    """Storage values of column ``c`` -> Arrow array of its logical type, with nulls."""
    if c.kind == "float":
        null = null_mask(vals)  # a NaN that is no NULL stays a NaN value
        if c.scale:
            vals = c.decode(vals)
        return pa.array(vals, mask=null, type=pa.from_numpy_dtype(vals.dtype))
    mask = vals == c.sentinel
    if c.kind == "int" and c.sql_type is not None:  # a DECIMAL or BOOLEAN, exactly
        from bamql.storage.decimals import sql_typed

        if c.wide:  # 16-byte values, their NULLs the stored sentinel
            return sql_typed(c.sql_type, vals, mask)
        return sql_typed(c.sql_type, np.where(mask, 0, vals), mask)
    if c.kind == "int":
        return pa.array(vals.astype(np.int64), mask=mask, type=pa.int64())
    if c.kind == "timestamp":  # a TIMESTAMP WITH TIME ZONE keeps its zone
        from bamql.storage.sqltypes import DATE, DAY_US, TIME_ZONE, TIMESTAMPTZ

        if c.sql_type == DATE:  # its midnights' microseconds: the days, as Arrow's date32
            days = np.where(mask, 0, vals) // DAY_US
            return pa.array(days.astype(np.int32), mask=mask, type=pa.date32())
        tz = TIME_ZONE if c.sql_type == TIMESTAMPTZ else None
        return pa.array(vals, mask=mask, type=pa.timestamp("us", tz=tz))
    codes = pa.array(np.where(mask, 0, vals).astype(np.int32), mask=mask)
    return pa.DictionaryArray.from_arrays(codes, pa.array(c.dictionary or (), pa.string())).cast(
        pa.string()
    )
