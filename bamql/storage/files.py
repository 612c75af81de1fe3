"""Source files named by the user: paths, directories, globs and URIs (``s3://``, ``gs://``,
``hdfs://``, ``file://``: ``storage.remote``) resolved to a sorted list of Parquet, ORC and
CSV files (a :class:`FileSet`), with what identifies their contents (size and modification
time per file)."""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from bamql.errors import IngestError
from bamql.storage import remote
from bamql.storage.fileoptions import FileOptions
from bamql.storage.hive import HiveMode, KeyFilter, KeyType, Partitioning, detect
from bamql.storage.remote import RemotePath

#: a source file: a local path or a file named by a URI
SourcePath = Path | RemotePath


class FileFormat(StrEnum):
    """The source formats bamql reads, by file extension."""

    PARQUET = "parquet"
    ORC = "orc"
    CSV = "csv"

    @property
    def label(self) -> str:
        return {"parquet": "Parquet", "orc": "ORC", "csv": "CSV"}[self.value]


#: file extension -> format
EXTENSIONS = {".parquet": FileFormat.PARQUET, ".pq": FileFormat.PARQUET,
              ".orc": FileFormat.ORC, ".csv": FileFormat.CSV}

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
_GLOB = re.compile(r"[*?\[]")


def format_of(path: str | os.PathLike | RemotePath) -> FileFormat | None:
    """The format a file's extension names, or None."""
    suffix = path.suffix if isinstance(path, RemotePath) else Path(path).suffix
    return EXTENSIONS.get(suffix.lower())


def looks_like_files(name: str) -> bool:
    """Whether a FROM name reads as files rather than a table: a URL, a path with a
    directory separator, a glob, or a name ending in a source format's extension."""
    return bool(_SCHEME.match(name) or "/" in name or _GLOB.search(name)
                or format_of(name) is not None)


def _visible(p: Path, root: Path) -> bool:
    """Whether ``p`` below ``root`` is a data file: no part of its path under ``root`` is
    hidden (``.x``) or a marker (``_SUCCESS``, ``_temporary``), as Spark and DuckDB skip."""
    return not any(part.startswith((".", "_")) for part in p.relative_to(root).parts)


def expand(spec: str | os.PathLike | RemotePath) -> list[SourcePath]:
    """The files that one path, directory, glob (``*``, ``**``, ``?``, ``[..]``) or URI
    names, sorted; a directory gives its Parquet, ORC and CSV files, recursively. A name
    that matches nothing is a one-line error."""
    return [f for f, _ in expand_named(spec)]


def expand_named(spec: str | os.PathLike | RemotePath) -> list[tuple[SourcePath, str]]:
    """:func:`expand`'s files, each with its name as the query gave it or the glob matched
    it (``./a.csv``, ``data/x.csv``): what DuckDB's ``filename`` column holds."""
    if isinstance(spec, RemotePath):
        return [(spec, str(spec))]
    text = os.fspath(spec)
    if isinstance(text, bytes):
        raise IngestError(f"a source is a path (str), not {type(spec).__name__}")
    if _SCHEME.match(text):
        return [(f, str(f)) for f in remote.expand(text, tuple(EXTENSIONS))]
    path = os.path.expanduser(text)
    if _GLOB.search(path):
        # hidden files match as in DuckDB (a directory, read whole, skips them)
        hits = sorted((Path(h), h) for h in _glob(path) if os.path.isfile(h))
        if not hits and os.path.isfile(path):  # a file whose name only looks like a glob
            return [(Path(path), text)]
        if not hits:
            raise IngestError(f"no files match {text}")
        return hits
    p = Path(path)
    if p.is_dir():
        _check_root(p, text)
        try:  # pathlib's walk follows no symlinked directory: a loop cannot hang it
            hits = sorted(f for f in p.rglob("*") if f.is_file() and format_of(f) is not None
                          and _visible(f, p))
        except OSError as e:
            raise IngestError(f"cannot read directory {text}: {e.strerror or e}") from None
        if not hits:
            raise IngestError(f"directory {text} holds no Parquet, ORC or CSV files")
        return [(f, os.path.join(text, str(f.relative_to(p)))) for f in hits]
    if not p.exists():
        raise IngestError(f"source {text} does not exist")
    if not p.is_file():  # a FIFO or a device would block or never end
        raise IngestError(f"source {text} is not a regular file")
    return [(p, text)]


#: Directories whose files are never a table's: the whole file system, and the kernel's
#: views of processes and devices (reading them blocks, or never ends)
_SYSTEM_DIRS = (Path("/"), Path("/proc"), Path("/sys"), Path("/dev"))


def _check_root(p: Path, text: str) -> None:
    """Refuse a directory (or a glob's fixed root) that is, or lies in, a system one."""
    r = p.resolve()
    if r == Path("/") or any(r == d or d in r.parents for d in _SYSTEM_DIRS[1:]):
        raise IngestError(f"reading the files under {text} is refused: name the directory "
                          "that holds the table's files")


def _glob(pattern: str) -> list[str]:
    """The paths a glob matches (``*``, ``?``, ``[..]`` within a name, ``**`` across
    directories, hidden names included). A ``**`` walks from the pattern's fixed root with
    pathlib, which follows no symlinked directory, so that a link loop in the tree cannot
    make it endless (``glob.glob`` follows them)."""
    parts = pattern.split("/")
    fixed = 0
    while fixed < len(parts) - 1 and not _GLOB.search(parts[fixed]):
        fixed += 1
    rest = parts[fixed:]
    if "**" not in rest:  # no recursion: the standard glob cannot loop
        return glob.glob(pattern, include_hidden=True)
    root = "/".join(parts[:fixed]) or ("/" if pattern.startswith("/") else ".")
    _check_root(Path(root), root)
    if rest[-1] == "**":  # every file below, as glob's recursive ``**`` matches them
        rest.append("*")
    return [str(h) for h in Path(root).glob("/".join(rest))]


def expand_all(specs: Sequence[str | os.PathLike | RemotePath]) -> list[SourcePath]:
    """:func:`expand` of every spec, in order, each file once."""
    out: list[SourcePath] = []
    seen: set[SourcePath] = set()
    for s in specs:
        for f in expand(s):
            key = f.resolve()
            if key not in seen:
                seen.add(key)
                out.append(f)
    return out


@dataclass(frozen=True)
class FileSet:
    """Resolved source files with their sizes, modification times and status-change marks,
    what a cached store of them is keyed by.

    A local file (a path or a ``file://`` URI) is marked by its inode and ctime as well: a
    rewrite that keeps the size and restores the mtime still changes them. A file on an
    object store or HDFS is marked by its size and last-modified time alone (what a
    listing gives; its mark is ``(0, 0)``): a rewrite changes the time, but one of the same
    size within the store's time resolution (a second on S3) is not seen."""

    files: tuple[SourcePath, ...]
    sizes: tuple[int, ...]
    mtimes: tuple[int, ...]
    changes: tuple[tuple[int, int], ...] = ()
    partitioning: Partitioning | None = None
    considered: int = 0  # the files named before partition pruning (0: none was pruned)
    #: the table function's options (``read_csv(..., header = true)``); None: none given
    options: FileOptions | None = None
    #: each file's name as the query gave it or its glob matched it (the ``filename``
    #: column's values)
    shown: tuple[str, ...] = ()

    @classmethod
    def resolve(cls, specs: Sequence[str | os.PathLike], fmt: FileFormat | None = None,
                hive: HiveMode = HiveMode.AUTO, filters: Sequence[KeyFilter] = (),
                options: FileOptions | None = None) -> FileSet:
        """The files ``specs`` name (see :func:`expand`), as absolute paths, statted now;
        each must be of format ``fmt`` when it is given, else of a format bamql reads.

        ``hive``: whether ``key=value`` directories are partition columns (see
        ``storage.hive``); ``filters``: conjuncts of the query's WHERE, which keep only the
        files whose partition values can pass them (at least one file stays, so that the
        table keeps its columns; the WHERE passes none of its rows); ``options``: how the
        files are read (``storage.fileoptions``)."""
        named = [(f.resolve(), shown) for s in specs for f, shown in expand_named(s)]
        files = tuple(f for f, _ in named)
        shown = tuple(x for _, x in named)
        if len(set(files)) != len(files):  # DuckDB reads a file as often as it is named
            raise IngestError("a file is named more than once (by two names or globs that "
                              "overlap); name each file once")
        part = detect([str(f) for f in files], hive)
        considered = 0
        if part is not None and filters:
            keep = part.keep(filters)
            if not all(keep):
                considered = len(files)
                keep = keep if any(keep) else [True] + [False] * (len(files) - 1)
                files = tuple(f for f, k in zip(files, keep, strict=True) if k)
                shown = tuple(x for x, k in zip(shown, keep, strict=True) if k)
                part = Partitioning(part.keys, part.types, tuple(
                    v for v, k in zip(part.values, keep, strict=True) if k))
        stats = []
        for f in files:
            have = format_of(f)
            if have is None or (fmt is not None and have != fmt):
                want = ("an ORC" if fmt == FileFormat.ORC else f"a {fmt.label}") if fmt \
                    else "a Parquet, ORC or CSV"
                raise IngestError(f"{f} is not {want} file by its extension (.parquet, .pq, "
                                  ".orc or .csv)")
            stats.append(_stat(f))
        return cls(files, tuple(s[0] for s in stats), tuple(s[1] for s in stats),
                   tuple(s[2] for s in stats), part, considered,
                   None if options is None or options.default else options, shown)

    def open(self, i: int, count: bool = True):
        """File ``i`` opened as the options say (``storage.sources.open_source``), without
        its added columns (see :meth:`decorate`)."""
        from bamql.storage.sources import open_source

        return open_source(self.files[i], count, self.options)

    def decorate_all(self, srcs: Sequence) -> list:
        """``srcs``, the rows read of each file, with the columns the set adds to them: the
        ``filename`` option's, then the partition columns, after every file's columns
        (DuckDB's order: files whose columns differ are first seen through them all)."""
        name = self.options.filename if self.options is not None else None
        if name is None and self.partitioning is None:
            return list(srcs)
        srcs = aligned(srcs)
        if name is not None:
            srcs = [with_filename(s, name, self.shown[i] if self.shown else str(self.files[i]))
                    for i, s in enumerate(srcs)]
        return [with_partitions(s, self.partitioning, i) for i, s in enumerate(srcs)]

    def sources(self) -> list:
        """The files opened for ingest (``storage.sources``), each with its partition
        columns where the set is partitioned (and its name, where the options ask)."""
        return self.decorate_all([self.open(i) for i in range(len(self.files))])

    @property
    def names_key(self) -> str:
        """A hash of the file list alone (which files, their partition columns, and the
        options they are read with)."""
        part = self.partitioning
        extra = [] if part is None else [list(part.keys), [str(t) for t in part.types]]
        if self.options is not None:  # none: the key of stores made before options were
            extra.append(self.options.key())
            if self.options.filename is not None:
                extra.append(list(self.shown))
        return _hash([str(f) for f in self.files] + extra)

    @property
    def version_key(self) -> str:
        """A hash of the files' sizes, modification times and status changes (which
        contents)."""
        return _hash([list(self.sizes), list(self.mtimes), [list(c) for c in self.changes]])

    @property
    def table_name(self) -> str:
        """The name of the table that serves these files in this version."""
        return f"files_{self.names_key}_{self.version_key}"

    @property
    def nbytes(self) -> int:
        return sum(self.sizes)

    def describe(self) -> str:
        """E.g. ``3 Parquet files, 1.2 MB``."""
        kinds = sorted({format_of(f).label for f in self.files if format_of(f) is not None})
        n = len(self.files)
        what = f"{n} {'/'.join(kinds) or 'source'} file{'s' if n != 1 else ''}"
        if self.considered:
            what = f"{n} of {self.considered} {'/'.join(kinds) or 'source'} files after " \
                   f"partition pruning"
        if self.partitioning is not None:
            what += f" (partitioned by {', '.join(self.partitioning.keys)})"
        return f"{what}, {_size(self.nbytes)}"


def _stat(f: SourcePath) -> tuple[int, int, tuple[int, int]]:
    """``f``'s size, modification time (ns) and status-change mark (see :class:`FileSet`)."""
    if isinstance(f, RemotePath):
        if f.size < 0:
            f = remote.stat(f)
        if not f.is_local:
            return f.size, f.mtime_ns, (0, 0)
        local: str | Path = f.fs_path
    else:
        local = f
    try:
        st = os.stat(local)
    except OSError as e:
        raise IngestError(f"cannot read {f}: {e.strerror}") from None
    if not os.access(local, os.R_OK):
        raise IngestError(f"cannot read {f}: permission denied")
    return st.st_size, st.st_mtime_ns, (st.st_ino, st.st_ctime_ns)


def with_partitions(src, part: Partitioning | None, i: int):
    """``src`` (a ``storage.sources.Source``) with the partition columns of file ``i`` of
    ``part`` appended; ``src`` itself where ``part`` is None."""
    if part is None:
        return src
    import pyarrow as pa

    from bamql.storage.sources import HiveSource

    return HiveSource(src, {k: (pa.int64() if t == KeyType.BIGINT else pa.string(), v)
                            for k, t, v in zip(part.keys, part.types, part.values[i],
                                               strict=True)})


def aligned(srcs: Sequence) -> list:
    """``srcs`` (``storage.sources.Source``) each seen through the columns of all of them,
    in the order they first appear (a column a file lacks reads as NULL), where their
    columns differ; ``srcs`` as they are where they do not."""
    names = [n for n in srcs[0].schema.names] if srcs else []
    if all(s.schema.names == names for s in srcs):
        return list(srcs)
    from bamql.storage.columnplans import unify_schemas
    from bamql.storage.sources import FilledSource

    types = {n: t for n, _, t in unify_schemas(srcs)}
    return [s if s.schema.names == list(types) else FilledSource(s, types) for s in srcs]


def with_filename(src, column: str, name: str):
    """``src`` with the column ``column`` holding ``name`` (its file's) in every row, as
    DuckDB's ``filename`` option adds it; a file that has such a column already is a
    one-line error, as DuckDB's."""
    if column in src.schema.names:
        raise IngestError(f"option filename adds column {column!r}, but {src.path.name} has "
                          f"a column of that name; name another: filename = '<name>'")
    import pyarrow as pa

    from bamql.storage.sources import HiveSource

    return HiveSource(src, {column: (pa.string(), name)})


def open_all(items: Sequence) -> list:
    """``items`` (file paths and ``Source`` objects) opened as sources; the paths carry the
    partition columns of their ``key=value`` directories where every path has the same
    keys (DuckDB's automatic ``hive_partitioning``)."""
    from bamql.storage.sources import Source, open_source

    paths = [str(x) if isinstance(x, RemotePath) else os.fspath(x) for x in items
             if not isinstance(x, Source)]
    part = detect(paths, HiveMode.AUTO)
    out, k = [], 0
    for x in items:
        if isinstance(x, Source):
            out.append(x)
        else:
            out.append(with_partitions(open_source(x), part, k))
            k += 1
    return out


def _hash(obj) -> str:
    return hashlib.sha256(json.dumps(obj).encode()).hexdigest()[:16]


def _size(n: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:,.1f} {unit}"
    return f"{n} B"
