"""``bamql ingest``: ORC/Parquet/CSV files -> a page store, streaming and atomic.

Memory stays bounded by one source batch (an ORC stripe, a Parquet row group or a CSV
block) whatever the table size. The table is written into a hidden temporary directory
beside the target and renamed into place only when complete, so readers never see a
half-written table; an interrupted ingest leaves at most a hidden directory that the next
ingest of the same name removes.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import hashlib
import io
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from bamql.config import ClusterOrder, Compression, FloatEncoding
from bamql.errors import IngestError
from bamql.storage.cluster import NO_CLUSTERING, Clustering, check_keys, parse_cluster_by, write_clustered
from bamql.storage.columnplans import column_plans, select, to_storage, unify_schemas
from bamql.storage.files import expand_all, open_all, with_partitions
from bamql.storage.format import (
    DEFAULT_PAGE_SIZE,
    DESC_PREFIX,
    MANIFEST,
    MAX_VOLUMES,
    PAGES_META,
    ColumnMeta,
    Manifest,
    Origin,
    check_page_size,
    column_digest,
    format_version,
)
from bamql.storage.hive import HiveMode, detect
from bamql.storage.origin import changes, extended, record
from bamql.storage.pagemath import column_range
from bamql.storage.partitioned import is_table, open_table, write_partitions
from bamql.storage.scratch import (
    Lifeline,
    Scratch,
    append_lock,
    clean_stale,
    die_with_parent,
    sigterm_as_interrupt,
)
from bamql.storage.sources import (
    FilledSource,
    HiveSource,
    ProjectedSource,
    Source,
    TableSource,
    open_source,
)
from bamql.storage.sqltypes import WIDE_DTYPE
from bamql.storage.writer import PageWriter, sync


@dataclass(frozen=True)
class IngestReport:
    """What an ingest wrote and how fast."""

    path: Path
    rows: int
    source_bytes: int
    store_bytes: int
    seconds: float


#: Errors writing the output that are the user's to fix, as one line each (``ingest``).
_OUTPUT_ERRORS = {
    errno.ENOSPC: "the file system is full",
    errno.EDQUOT: "the disk quota is used up",
    errno.EFBIG: "a file would pass the size limit (ulimit -f, or the file system's largest file)",
    errno.EROFS: "the file system is read-only",
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
}


def ingest(
    sources: Sequence[str | os.PathLike],
    out: str | os.PathLike,
    page_size: int = DEFAULT_PAGE_SIZE,
    volumes: int = 1,
    table: str | None = None,
    progress: Callable[[int], None] | None = None,
    partitions: int = 1,
    groups: str | Sequence[Sequence[str]] | None = None,
    floats: FloatEncoding | str = FloatEncoding.AUTO,
    scan_progress: Callable[[int], None] | None = None,
    compress: Compression | str = Compression.NONE,
    columns: Sequence[str] | None = None,
    cluster_by: str | Sequence[str] | None = None,
    pack: bool = False,
) -> IngestReport:
    """Ingest ``sources`` (ORC, Parquet or CSV files of one schema) into a page store at ``out``.

    Parameters
    ----------
    sources
        Input files, directories (their Parquet, ORC and CSV files) or globs (``*``,
        ``**``, ``?``), concatenated in order.
    out
        The table directory to create; it must not exist.
    page_size
        Page size in bytes, a power of two from 512 B to 1 MiB.
    volumes
        Number of volume files the pages are striped over (page ``p`` in volume ``p % n``).
    table
        Table name; defaults to ``out``'s name.
    progress
        Called with the number of rows of each batch written.
    partitions
        Split the rows into this many contiguous partitions, each a page store of its own
        (``part-NNN/``) under one ``partitions.json``, dealt out to a Dask cluster's workers.
    groups
        Row groups (``storage.groups``): ``"auto"`` (float columns of one width, as many per
        group as pages fit in 4 KiB), ``"a,b,c;d,e"`` or lists of names; None for none.
        They add second copies of their columns, which cold gathers from disk read with one
        disk read per row instead of one per column.
    floats
        A :class:`bamql.config.FloatEncoding` or its name. ``"auto"``: a float64 column
        whose values are all decimals of at most 4 digits and fit is stored as scaled
        int16/int32 (``storage.decimals``; exact, and 2-4x fewer bytes to stream);
        ``"plain"``: every float as it comes; ``"decimals"``: as ``"auto"`` for the columns
        that some source holds as DECIMAL (they keep DuckDB's exact decimal rounding),
        every other float as it comes, with no pass over it (a store made for one query,
        ``storage.inplace``).
    compress
        A :class:`bamql.config.Compression` or its name. ``"zstd"``: also write a
        compressed copy of every column, which streams and scans read from disk when the
        cost model finds that quicker (``storage.streams``); ``"none"`` (the default: the
        benchmarks have not shown the copies faster; see docs/measurements.md): pages only.
    columns
        Only these columns (kept in the sources' order); None for all. The others are not
        even decoded: a table whose queries use a few of many columns is ingested and
        stored in a fraction of the time and space.
    scan_progress
        Called with the number of rows of each batch that pass over the float columns
        checked (``bamql.progress.ingest_progress`` drives both bars).
    cluster_by
        Clustering keys (``"a,b"`` or names): each store's rows (each partition's) sorted by
        them, ascending, NULLs last; ``"zorder(a,b)"``: ordered by a Z-order of their ranks,
        so that a filter on any one key prunes pages (``storage.cluster``, which says what
        memory it takes); None for the sources' order. The manifest records them.
    pack
        Bit-pack the integer-stored columns (integers, timestamps, dictionary codes, scaled
        floats) to the bits of their range, with a frame of reference per page
        (``storage.packing``); a column in a row group stays plain. Appends keep it.
    """
    t0 = time.perf_counter()
    out = Path(out)
    check_page_size(page_size)
    if volumes < 1 or volumes > MAX_VOLUMES:
        raise IngestError(f"--volumes must be within 1..{MAX_VOLUMES}, got {volumes}")
    if not sources:
        raise IngestError("no source files given")
    if out.exists():
        raise IngestError(f"output {out} already exists; remove it or choose another path")
    floats, compress = FloatEncoding(floats), Compression(compress)  # one-line errors
    given = _given_sources(sources)
    # files named by the user are recorded for a refresh; rows from memory have no origin
    origin = None if any(isinstance(x, Source) for x in given) else record(sources, given, floats)
    srcs = open_all(given)  # with hive partition columns
    unified = unify_schemas(srcs)
    cols = select(unified, columns, srcs[0].path.name)
    srcs = filled(srcs, unified)
    return _build(srcs, cols, out, page_size, volumes, table or out.name,
                  tuple(str(s.path.name) for s in srcs), progress, partitions, groups, floats,
                  scan_progress, compress, t0, replace=False, cluster=parse_cluster_by(cluster_by),
                  origin=origin, pack=pack)


def append(
    sources: Sequence[str | os.PathLike],
    out: str | os.PathLike,
    progress: Callable[[int], None] | None = None,
    scan_progress: Callable[[int], None] | None = None,
) -> IngestReport:
    """Add the rows of ``sources`` (files, directories or globs) to the table at ``out``.

    The table is rewritten whole with the same settings (page size, volumes, partitions,
    row groups, compressed copies), its dictionaries and column widths made anew for the
    old and new rows together, into a scratch directory beside it that then takes its
    place in one rename (``RENAME_EXCHANGE``): a reader sees the old table or the new one,
    and an append that fails or is killed leaves the old table as it was. Appends to one
    table run one at a time (a lock beside it).

    A clustered table (``ingest(cluster_by=...)``) stays clustered by the same keys in the
    same order (sorted or Z-order): each store's old and new rows are ordered together.

    A source that lacks one of the table's columns, or whose column has another kind
    (a string where the table has an integer), is a one-line error before anything is
    written; columns beyond the table's are left out.
    """
    t0 = time.perf_counter()
    out = Path(out)
    if not is_table(out):
        raise IngestError(f"{out} is not a bamql table; ingest without --append to create it")
    paths = expand_all(sources)
    with append_lock(out):
        st = _state(out)
        new = [ProjectedSource(open_source(p), st.columns, st.name) for p in paths]
        # the files named are recorded beside the table's own, for a later refresh
        origin = None if st.origin is None else extended(st.origin, sources, paths)
        return _rewrite(out, st, new, origin, progress, scan_progress, t0)


#: ``(description, rows)`` -> a context yielding ``ingest``'s progress keywords (the CLI's
#: ``bamql.progress.ingest_progress``)
ProgressFactory = Callable[[str, int], contextlib.AbstractContextManager[dict]]


@dataclass(frozen=True)
class RefreshReport:
    """What a refresh found and added."""

    path: Path
    added: tuple[str, ...]  # the new files, in the order appended
    added_rows: int
    unchanged: int  # files already in the table, unchanged
    rows: int  # the table's rows now
    seconds: float

    def describe(self) -> str:
        """``added 1 file, 1,234 rows; 12 files unchanged``, or ``up to date``."""
        def files(n: int) -> str:
            return f"{n:,} file{'s' if n != 1 else ''}"

        if not self.added:
            return f"{self.path} is up to date: {files(self.unchanged)} unchanged"
        return (f"added {files(len(self.added))}, {self.added_rows:,} rows; "
                f"{files(self.unchanged)} unchanged ({self.path}: {self.rows:,} rows now)")


def refresh(out: str | os.PathLike, progress: ProgressFactory | None = None) -> RefreshReport:
    """Append to the table at ``out`` the files its recorded sources name now that it lacks.

    The table records the sources it was made from as given (paths, directories, globs,
    URIs) and each file it ingested (``storage.origin``); a refresh expands the sources
    again and appends only the new files, as :func:`append` does: atomically, with the
    table's own settings, and with hive partition columns from their paths. Nothing new
    leaves the table untouched.

    Parameters
    ----------
    out
        The table directory.
    progress
        Makes the bars of the rewrite (``(description, rows)`` -> keywords); None: silent.

    Raises
    ------
    IngestError
        One line: the table records no sources (made before bamql recorded them, or from
        rows in memory: name new files with ``append``), or a file it holds has changed or
        vanished (a table cannot take rows back: re-ingest it).
    """
    t0 = time.perf_counter()
    out = Path(out)
    if not is_table(out):
        raise IngestError(f"{out} is not a bamql table; ingest its sources to create it")
    with append_lock(out):
        st = _state(out)
        if st.origin is None:
            raise IngestError(f"table {out} does not record the files it was made from (made "
                              "before bamql recorded them, or from rows in memory); name new "
                              "files with --append")
        found = changes(st.origin, out)
        if not found.new:
            return RefreshReport(out, (), 0, found.unchanged, st.rows, time.perf_counter() - t0)
        # partition values are read from the paths of every file, old and new, as at ingest
        part = detect([*st.origin.files, *map(str, found.new)], HiveMode.AUTO)
        k0 = len(st.origin.files)
        new = [ProjectedSource(with_partitions(open_source(f), part, k0 + i), st.columns, st.name)
               for i, f in enumerate(found.new)]
        origin = extended(st.origin, (), found.new)
        added = sum(s.num_rows for s in new)
        ctx = (contextlib.nullcontext({}) if progress is None
               else progress("refreshing", st.rows + added))
        with ctx as bars:
            r = _rewrite(out, st, new, origin, t0=t0, **bars)
        return RefreshReport(out, tuple(str(f) for f in found.new), added, found.unchanged,
                             r.rows, r.seconds)


@dataclass(frozen=True)
class _Stored:
    """What an append keeps of the table it rewrites: its name, columns and settings."""

    name: str
    columns: list[str]
    rows: int
    settings: dict
    sources: tuple[str, ...]
    origin: Origin | None


def _state(out: Path) -> _Stored:
    """The table at ``out``'s name, columns, settings and record of its sources."""
    with open_table(out) as t:
        m = t.parts[0].manifest
        origin = m.origin
        settings = dict(page_size=m.page_size, volumes=m.n_volumes,
                        partitions=len(t.parts) if t.partitioned else 1,
                        groups=[g.members for g in m.groups] if m.groups else None,
                        compress=Compression.NONE if m.streams is None else Compression.ZSTD,
                        cluster=Clustering(m.cluster_by, ClusterOrder(m.cluster_order)),
                        floats=FloatEncoding.AUTO if origin is None else FloatEncoding(origin.floats),
                        pack=m.pack)
        return _Stored(t.name or out.name, list(t.columns), t.rows, settings,
                       tuple(x for p in t.parts for x in p.manifest.sources), origin)


def _rewrite(out: Path, st: _Stored, new: list[Source], origin: Origin | None,
             progress=None, scan_progress=None, t0: float = 0.0) -> IngestReport:
    """Rewrite the table at ``out`` (described by ``st``) with the ``new`` sources' rows
    after its own, exchanged into place in one rename; run under its append lock."""
    t = open_table(out)
    try:
        stored = pa.concat_tables([p.to_table(st.columns) for p in t.parts])
    finally:
        t.close()
    srcs = [TableSource(stored, f"{st.name} (stored)"), *new]
    unified = unify_schemas(srcs)
    srcs = filled(srcs, unified)
    names = tuple(dict.fromkeys(st.sources + tuple(s.path.name for s in new)))
    c = st.settings
    return _build(srcs, unified, out, c["page_size"], c["volumes"], st.name, names, progress,
                  c["partitions"], c["groups"], c["floats"], scan_progress, c["compress"], t0,
                  replace=True, cluster=c["cluster"], origin=origin, pack=c["pack"])


def _given_sources(sources) -> list:
    """The files ``sources`` name (paths, directories, globs), with any ``Source`` among
    them (rows in memory) kept as it is, in order."""
    out: list = []
    for s in sources:
        out.extend([s] if isinstance(s, Source) else expand_all([s]))
    return out


def filled(srcs: list[Source], unified) -> list[Source]:
    """``srcs`` with each that lacks some of the ``unified`` columns reading NULLs there."""
    types = {n: t for n, _, t in unified}
    return [s if set(types) <= set(s.schema.names) else FilledSource(s, types) for s in srcs]


def _build(srcs, cols, out: Path, page_size: int, volumes: int, name: str,
           names: tuple[str, ...], progress, partitions: int, groups,
           floats: FloatEncoding, scan_progress, compress: Compression, t0: float, replace: bool,
           cluster: Clustering = NO_CLUSTERING, origin: Origin | None = None,
           pack: bool = False) -> IngestReport:
    """Write ``srcs`` as a table at ``out``: a new one, or (``replace``) in place of the
    table there, exchanged in one rename."""
    if cluster:  # an unknown key fails before the sources are read
        check_keys(cluster.keys, [c[0] for c in cols])
    plans = column_plans(srcs, cols, floats, scan_progress, pack)
    rows = sum(s.num_rows for s in srcs)
    if partitions < 1 or partitions > max(rows, 1):
        raise IngestError(f"--partitions must be within 1..{max(rows, 1)}, got {partitions}")
    if groups not in (None, "none"):  # bad names fail before anything is written
        from bamql.storage.groups import parse_groups

        # resolved once, on the plain layout: a row group's members stay plain (their
        # copies share one rows per page), and every partition gets the same groups
        groups = parse_groups(groups, [ColumnMeta(pl.name, pl.kind, pl.dtype.name, 0, 0,
                                                  page_size // pl.dtype.itemsize) for pl in plans],
                              page_size)
        members = {n for g in groups for n in g}
        for pl in plans:
            if pl.name in members:
                pl.bits = 0
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        clean_stale(out)
        scratch = Scratch(out)  # locked while this ingest runs
    except OSError as e:
        if e.errno in _OUTPUT_ERRORS:
            raise IngestError(f"cannot write {out}: {_OUTPUT_ERRORS[e.errno]}") from None
        raise
    tmp = scratch.path
    # row ranges of the partitions; every partition shares the plans (widths, dictionaries)
    bounds = [round(k * rows / partitions) for k in range(partitions + 1)]
    dirs = [tmp] if partitions == 1 else [tmp / f"part-{k:03d}" for k in range(partitions)]
    writers: list[PageWriter] = []
    try:
        with sigterm_as_interrupt():  # SIGTERM cleans up as Ctrl-C does
            _write(srcs, plans, bounds, dirs, rows, page_size, volumes, name, names, progress,
                   groups, compress, writers, cluster, origin, pack)
        if replace:
            scratch.finish()
            exchange(tmp, out)  # tmp now holds the old table
        else:
            if out.exists():
                raise IngestError(f"output {out} appeared while ingesting; not replacing it")
            scratch.finish()
            os.rename(tmp, out)
    except BaseException as e:
        for w in writers:
            w.abort()
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(e, OSError) and e.errno in _OUTPUT_ERRORS:  # nothing was kept
            raise IngestError(f"cannot write {out}: {_OUTPUT_ERRORS[e.errno]}; nothing was "
                              f"kept") from None
        raise
    finally:
        scratch.release()
    if replace:
        shutil.rmtree(tmp, ignore_errors=True)
    store_bytes = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    src_bytes = sum(s.nbytes for s in srcs)
    return IngestReport(out, rows, src_bytes, store_bytes, time.perf_counter() - t0)


def exchange(a: Path, b: Path) -> None:
    """Swap two directories in one rename (Linux ``renameat2(RENAME_EXCHANGE)``): no moment
    where ``b`` is missing. Where the call is missing, two renames do it."""
    fn = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)
    if fn is not None:
        at_fdcwd, rename_exchange = -100, 2
        if fn(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
            return
        err = ctypes.get_errno()
        if err not in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
            raise OSError(err, os.strerror(err), str(b))
    old = a.parent / f"{a.name}.old"
    os.rename(b, old)
    os.rename(a, b)
    os.rename(old, a)


def _write(srcs, plans, bounds: list[int], dirs: list[Path], rows: int, page_size: int,
           volumes: int, name: str, names: tuple[str, ...], progress, groups,
           compress: Compression, writers: list[PageWriter], cluster: Clustering = NO_CLUSTERING,
           origin: Origin | None = None, pack: bool = False) -> None:
    """Write the table's store (or its partitions' stores) into the scratch directory."""
    tmp = dirs[0] if len(dirs) == 1 else dirs[0].parent
    if len(dirs) == 1 and cluster:
        w = PageWriter(tmp, plans, rows, page_size, volumes)
        writers.append(w)
        write_clustered(lambda cols: _stored(srcs, plans, cols, 0, rows), plans, w, cluster, rows,
                        progress)
        _finish_store(tmp, w, plans, rows, page_size, volumes, name, names, groups, compress,
                      cluster, origin, pack)
    elif len(dirs) == 1:
        w = PageWriter(tmp, plans, rows, page_size, volumes)
        writers.append(w)
        keep = [pl.name for pl in plans]
        for s in srcs:
            for b in s.batches(columns=keep):
                try:
                    for i, pl in enumerate(plans):
                        w.append(i, to_storage(b.column(pl.name), pl))
                except IngestError as e:  # name the file whose values were refused
                    raise IngestError(f"{s.path.name}: {e}") from None
                if progress:
                    progress(b.num_rows)
        _finish_store(tmp, w, plans, rows, page_size, volumes, name, names, groups, compress,
                      origin=origin, pack=pack)
    else:
        _ingest_partitions(srcs, plans, bounds, dirs, page_size, volumes, name, names, progress,
                           groups, compress, cluster, origin, pack)
        write_partitions(tmp, name, [(d.name, bounds[k], bounds[k + 1] - bounds[k])
                                     for k, d in enumerate(dirs)])


def _ingest_partition(sources: list[str | Source], plans, bounds: list[int], k: int, d: str,
                      page_size: int, volumes: int, table: str, names: tuple[str, ...],
                      groups=None, compress: Compression = Compression.NONE,
                      cluster: Clustering = NO_CLUSTERING, origin: Origin | None = None,
                      pack: bool = False) -> int:
    """Write partition ``k`` (rows ``bounds[k]:bounds[k+1]``) as a store in ``d``, reading
    only the sources that overlap it (its rows sorted by ``cluster`` when given); runs in a
    worker process. Returns its rows."""
    lo, hi = bounds[k], bounds[k + 1]
    d = Path(d)
    d.mkdir(exist_ok=True)
    w = PageWriter(d, plans, hi - lo, page_size, volumes)
    try:
        if cluster:
            write_clustered(lambda cols: _stored(sources, plans, cols, lo, hi), plans, w, cluster,
                            hi - lo)
            _finish_store(d, w, plans, hi - lo, page_size, volumes, table, names, groups, compress,
                          cluster, origin, pack)
            return hi - lo
        pos = 0
        for path in sources:
            if pos >= hi:
                break
            s = open_source(path)
            if pos + s.num_rows <= lo:  # wholly before this partition: skipped, not decoded
                pos += s.num_rows
                continue
            for b in s.batches(columns=[pl.name for pl in plans]):
                start, end = max(pos, lo), min(pos + b.num_rows, hi)
                if start < end:
                    part = b.slice(start - pos, end - start)
                    try:
                        for i, pl in enumerate(plans):
                            w.append(i, to_storage(part.column(pl.name), pl))
                    except IngestError as e:
                        raise IngestError(f"{s.path.name}: {e}") from None
                pos += b.num_rows
                if pos >= hi:
                    break
        _finish_store(d, w, plans, hi - lo, page_size, volumes, table, names, groups, compress,
                      origin=origin, pack=pack)
    except BaseException:
        w.abort()
        raise
    return hi - lo


def _ingest_partitions(srcs, plans, bounds, dirs, page_size, volumes, table, names, progress,
                       groups=None, compress: Compression = Compression.NONE,
                       cluster: Clustering = NO_CLUSTERING, origin: Origin | None = None,
                       pack: bool = False) -> None:
    """Every partition, each in its own process when there are several cores (sources are
    decoded in parallel; a partition reads only the sources that overlap its rows)."""
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool
    from multiprocessing import active_children, get_context

    # files are reopened by path in each worker; rows in memory, and files seen through
    # other columns, keep the work in this process
    in_memory = any(isinstance(s, (TableSource, ProjectedSource, FilledSource, HiveSource))
                    for s in srcs)
    paths: list[str | Source] = list(srcs) if in_memory else [str(s.path) for s in srcs]
    args = [(paths, plans, bounds, k, str(d), page_size, volumes, table, names, groups, compress,
             cluster, origin, pack) for k, d in enumerate(dirs)]
    workers = min(len(dirs), os.cpu_count() or 1)
    if workers == 1 or in_memory or not _spawn_can_start():
        for a in args:
            n = _ingest_partition(*a)
            if progress:
                progress(n)
        return
    # workers die with this process, however it dies: at once through the watchdog, and
    # once started through their own request (PR_SET_PDEATHSIG); a killed ingest leaves
    # none behind, and one that fails or is interrupted stops them
    before = {p.pid for p in active_children()}
    with Lifeline() as lifeline, ProcessPoolExecutor(
            workers, mp_context=get_context("spawn"), initializer=die_with_parent,
            initargs=(os.getpid(),)) as ex:
        futs = []
        procs = []
        try:
            for a in args:
                futs.append(ex.submit(_ingest_partition, *a))
                # the workers are started as tasks are submitted: watched as they come
                new = [p for p in active_children() if p.pid not in before]
                lifeline.watch(p.pid for p in new)
                before |= {p.pid for p in new}
                procs += new
            for f in as_completed(futs):
                n = f.result()
                if progress:
                    progress(n)
        except BaseException as e:
            for f in futs:
                f.cancel()
            for p in procs:  # their partitions are not kept: stopped, not waited for
                with contextlib.suppress(OSError, ValueError):
                    p.kill()
            if isinstance(e, BrokenProcessPool):
                raise IngestError("a partition's ingest process died (out of memory, or "
                                  "killed); nothing was written") from None
            raise


def _stored(sources: Sequence[str | Source], plans, names: list[str], lo: int,
            hi: int) -> Iterator[dict[str, np.ndarray]]:
    """Rows ``lo:hi`` of ``sources`` (files or Sources, one after another), batch by batch,
    as the stored values of the columns ``names``; sources wholly outside are not decoded."""
    by_name = {pl.name: pl for pl in plans}
    pos = 0
    for path in sources:
        if pos >= hi:
            return
        s = open_source(path)
        if pos + s.num_rows <= lo:
            pos += s.num_rows
            continue
        for b in s.batches(columns=names):
            start, end = max(pos, lo), min(pos + b.num_rows, hi)
            if start < end:
                part = b.slice(start - pos, end - start)
                try:
                    yield {n: to_storage(part.column(n), by_name[n]) for n in names}
                except IngestError as e:  # name the file whose values were refused
                    raise IngestError(f"{s.path.name}: {e}") from None
            pos += b.num_rows
            if pos >= hi:
                return


def _spawn_can_start() -> bool:
    """Whether spawned processes can start here: they re-import the main module from its
    file, which a program read from stdin (``python - <<EOF``) does not have."""
    main = getattr(sys.modules.get("__main__"), "__file__", None)
    return main is None or os.path.exists(main)


def _finish_store(d: Path, writer: PageWriter, plans, rows: int, page_size: int, volumes: int,
                  table: str, sources: tuple[str, ...], groups=None,
                  compress: Compression = Compression.NONE, cluster: Clustering = NO_CLUSTERING,
                  origin: Origin | None = None, pack: bool = False) -> None:
    """Flush a store's last pages, write its row groups, its page metadata and its manifest
    (last)."""
    from bamql.storage.groups import parse_groups, write_groups

    res = writer.finish()
    columns = []
    for i, (pl, r) in enumerate(zip(plans, res["columns"], strict=True)):
        ids = slice(writer.first_page[i], writer.first_page[i] + -(-rows // writer.rows_per_page[i]))
        exact = (writer.izmin[ids], writer.izmax[ids]) if pl.dtype.kind == "i" and not pl.scale else ()
        lo, hi = column_range(writer.zmin[ids], writer.zmax[ids], *exact)
        dtype = pl.dtype.name
        if pl.dtype.kind == "V":  # a wide DECIMAL: 16 bytes a value, no recorded range
            dtype, lo, hi = WIDE_DTYPE, None, None
        columns.append(ColumnMeta(
            name=pl.name, kind=pl.kind, dtype=dtype,
            first_page=writer.first_page[i], n_pages=ids.stop - ids.start,
            rows_per_page=writer.rows_per_page[i], nulls=r["nulls"], min=lo, max=hi,
            dictionary=pl.dictionary, histogram=r["histogram"], scale=pl.scale, bits=pl.bits,
            decimal=pl.decimal if pl.kind == "float" else None, sql_type=pl.sql_type,
        ))
    group_metas, arrays = write_groups(
        d, parse_groups(groups, columns, page_size), columns, page_size, volumes,
        writer.total_pages, writer.checksum, writer.zmin, writer.zmax, writer.nulls)
    streams = None
    if compress == Compression.ZSTD:
        from bamql.storage.streams import write_streams

        streams, arrays["zst:off"], arrays["zst:len"], arrays["zst:sum"] = write_streams(
            d, columns, page_size, volumes, writer.total_pages)
    arrays["izmin"], arrays["izmax"] = writer.izmin, writer.izmax  # exact int64 zone maps
    # packed pages' frames of reference, over every page (row-group copies are plain)
    arrays["ref"] = np.concatenate([writer.ref, np.zeros(len(arrays["checksum"])
                                                         - writer.total_pages, np.int64)])
    for c in columns:  # what a manifest edited alone no longer matches (format.column_digest)
        arrays[f"{DESC_PREFIX}{c.name}"] = column_digest(c)
    for pl, r in zip(plans, res["columns"], strict=True):
        arrays[f"sample:{pl.name}"] = r["sample"]
        if r["value_sets"] is not None:
            arrays[f"vset:{pl.name}"] = r["value_sets"]
            arrays[f"vset_lo:{pl.name}"] = np.array([pl.lo], np.int64)
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    meta_bytes = buf.getvalue()
    (d / PAGES_META).write_bytes(meta_bytes)
    man = Manifest(
        table=table, rows=rows, page_size=page_size, n_volumes=volumes,
        total_pages=writer.total_pages, columns=tuple(columns),
        pages_meta_sha256=hashlib.sha256(meta_bytes).hexdigest(), sources=sources,
        groups=group_metas, streams=streams, cluster_by=cluster.keys, origin=origin,
        pack=pack, cluster_order=cluster.order, format_version=format_version(columns),
    )
    mpath = d / MANIFEST
    mpath.write_text(man.to_json())
    with open(mpath, "rb") as fh:
        sync(fh.fileno())
