"""Files queried in place, through page stores made on demand and kept in a cache directory.

The first query over a set of files ingests them (default settings) into
``<cache>/<names>-<version>``: ``names`` hashes the resolved file list, ``version`` each
file's size and modification time. Later queries find that store while the files are
unchanged; once one changes, the next query makes a new store (ingest is atomic: it
appears whole or not at all) and removes the stale versions of the same list.

A local file's version also holds its inode and ctime, so that a rewrite which keeps the
size and restores the mtime is seen. A file on an object store (``s3://``, ``gs://``) or
HDFS is versioned by the size and last-modified time its listing gives: any new upload
changes the time, but a rewrite of the same size within the store's time resolution (one
second on S3) is not seen, nor is a bucket's object version or ETag consulted.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from bamql.errors import IngestError
from bamql.storage.files import FileSet
from bamql.storage.partitioned import is_table

#: ``(description, rows)`` -> a context yielding ``ingest``'s progress keywords
ProgressFactory = Callable[[str, int], AbstractContextManager[dict]]

#: Stores made by this process (tests check reuse with it).
INGESTS = 0
_lock = threading.Lock()


@dataclass(frozen=True)
class CachedFiles:
    """A file set and the page store that serves it."""

    files: FileSet
    store: Path
    made: bool  # whether this call ingested it

    def describe(self) -> str:
        """The EXPLAIN line: ``files: 3 Parquet files, 1.2 MB, read through a store cached
        at ...``."""
        return f"files: {self.files.describe()}, read through a store cached at {self.store}"


def cached_store(files: FileSet, root: Path, progress: ProgressFactory | None = None) -> CachedFiles:
    """The page store of ``files`` under ``root``, made now if the files are new or changed.

    Parameters
    ----------
    files
        The resolved files (their list, sizes and modification times are the key).
    root
        The cache directory (``Config.file_cache_dir``).
    progress
        Makes the bars of an ingest (the CLI's, on stderr); None: silent.
    """
    global INGESTS
    out = root / f"{files.names_key}-{files.version_key}"
    if is_table(out):
        return CachedFiles(files, out, False)
    from bamql.storage.ingest import ingest

    with _lock:  # one ingest per process at a time; other processes race benignly
        if is_table(out):
            return CachedFiles(files, out, False)
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise IngestError(f"cannot make the file cache {root}: {e.strerror} (set "
                              f"BAMQL_FILE_CACHE to a writable directory)") from None
        ctx = nullcontext({}) if progress is None else progress(
            f"reading {files.describe()}", _rows(files))
        try:
            with ctx as bars:
                ingest(files.sources(), out, table=files.table_name, **bars)
        except IngestError:
            if is_table(out):  # another process made it first
                return CachedFiles(files, out, False)
            raise
        INGESTS += 1
        _drop_stale(root, files.names_key, out)
    return CachedFiles(files, out, True)


def cached_table(table: pa.Table, root: Path) -> Path:
    """The page store of the in-memory ``table`` under ``root`` (``<root>/mem-<key>``), made
    now if no store of the same content is there. ``key`` hashes the table's Arrow IPC
    bytes: registered tables are small (dimensions), and a content key serves the same
    rows registered again, in any session, without a second ingest."""
    global INGESTS
    from bamql.storage.ingest import ingest
    from bamql.storage.sources import TableSource

    table = pa.table({n: c.cast(c.type.value_type) if pa.types.is_dictionary(c.type) else c
                      for n, c in zip(table.column_names, table.columns, strict=True)})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    key = hashlib.sha256(sink.getvalue()).hexdigest()[:16]
    out = root / f"mem-{key}"
    with _lock:
        if is_table(out):
            return out
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise IngestError(f"cannot make the file cache {root}: {e.strerror} (set "
                              f"BAMQL_FILE_CACHE to a writable directory)") from None
        try:
            ingest([TableSource(table, "registered table")], out, table=f"mem_{key}")
        except IngestError:
            if is_table(out):  # another process made it first
                return out
            raise
        INGESTS += 1
    return out


def _rows(files: FileSet) -> int:
    """The rows of ``files`` for a progress bar (footers only: no data is read for it
    except a CSV's counting pass, which ingest repeats)."""
    return sum(s.num_rows for s in files.sources())


def _drop_stale(root: Path, names_key: str, keep: Path) -> None:
    """Remove the other versions of the same file list: each is first renamed to a hidden
    name (at once invisible) and then deleted; sessions that have it open keep reading
    their open files."""
    for d in _versions(root, names_key):
        if d != keep:
            hidden = root / f".stale-{d.name}-{os.getpid()}"
            try:
                os.rename(d, hidden)
            except OSError:
                continue
            shutil.rmtree(hidden, ignore_errors=True)


def _versions(root: Path, names_key: str) -> Iterator[Path]:
    return (d for d in root.glob(f"{names_key}-*") if d.is_dir())
