"""Streaming readers over the formats ingest accepts: ORC (main path), Parquet and CSV, from
local paths or from files named by URI (``storage.remote``: read through their pyarrow
filesystem, the same readers for both)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.orc as paorc
import pyarrow.parquet as pq

from bamql.errors import IngestError
from bamql.storage.csvsniff import BOOLEAN_WORDS, SAMPLE_BYTES, Dialect, sniff
from bamql.storage.fileoptions import CsvOptions, FileOptions
from bamql.storage.remote import RemotePath, is_uri
from bamql.storage.remote import error as remote_error
from bamql.storage.remote import stat as remote_stat


class Source:
    """One input file: its schema, row count, batches, and integer statistics if known."""

    def __init__(self, path: Path | RemotePath) -> None:
        self.path = path
        self.schema: pa.Schema
        self.num_rows: int

    def batches(self, columns: list[str] | None = None) -> Iterator[pa.RecordBatch]:
        raise NotImplementedError

    def int_stats(self) -> dict[str, tuple[int, int] | None]:
        """Per integer column ``(min, max)`` from the file's own statistics, when it has them."""
        return {}

    @property
    def nbytes(self) -> int:
        """The source's size in bytes (of its file)."""
        if isinstance(self.path, RemotePath):
            return (self.path if self.path.size >= 0 else remote_stat(self.path)).size
        return self.path.stat().st_size

    def describe(self) -> str:
        return f"{self.path.name} ({type(self).__name__[:-6].upper()}, {self.num_rows:,} rows)"

    def _check_names(self) -> None:
        """A column name given twice (a CSV header ``a,b,a``) is a one-line error: which of
        the two a query means cannot be told."""
        seen: set[str] = set()
        for name in self.schema.names:
            if name in seen:
                n = self.schema.names.count(name)
                raise IngestError(f"{self.path}: column {name!r} appears {n} times; "
                                  f"column names must be unique (rename one)")
            seen.add(name)


class OrcSource(Source):
    """An ORC file, read stripe by stripe; integer ranges come from its footer statistics."""

    def __init__(self, path: Path | RemotePath) -> None:
        super().__init__(path)
        handle = _random_access(path)
        try:
            self._f = paorc.ORCFile(handle)
            self.schema = self._f.schema
            self.num_rows = self._f.nrows
        except (pa.ArrowException, OSError) as e:
            raise _unreadable(path, "ORC", e) from None
        self._check_names()

    def batches(self, columns=None):
        with _reading(self.path):
            for i in range(self._f.nstripes):
                yield self._f.read_stripe(i, columns=columns)

    def int_stats(self):
        try:
            import pyorc
        except ImportError:  # pragma: no cover - pyorc is a core dependency
            return {}
        out: dict[str, tuple[int, int] | None] = {}
        try:
            with (self.path.open_input_file() if isinstance(self.path, RemotePath)
                  else open(self.path, "rb")) as fh:
                r = pyorc.Reader(fh)
                for i, field in enumerate(self.schema):
                    if pa.types.is_integer(field.type):
                        st = r[i + 1].statistics
                        mn, mx = st.get("minimum"), st.get("maximum")
                        out[field.name] = None if mn is None else (int(mn), int(mx))
        except Exception:  # statistics are an optimization; fall back to a scan
            return {}
        return out


class ParquetSource(Source):
    """A Parquet file, read by row group; integer ranges come from row-group statistics.
    ``binary_as_string``: its BINARY columns read as VARCHAR (``read_parquet``'s option)."""

    def __init__(self, path: Path | RemotePath, binary_as_string: bool = False) -> None:
        super().__init__(path)
        handle = _random_access(path)
        try:
            self._f = pq.ParquetFile(handle)
            self.schema = self._f.schema_arrow
            self.num_rows = self._f.metadata.num_rows
        except (pa.ArrowException, OSError) as e:
            raise _unreadable(path, "Parquet", e) from None
        if binary_as_string:
            self.schema = pa.schema([f.with_type(_AS_STRING.get(f.type, f.type))
                                     for f in self.schema], metadata=self.schema.metadata)
        self._check_names()

    def batches(self, columns=None):
        with _reading(self.path):
            for b in self._f.iter_batches(batch_size=1 << 20, columns=columns):
                yield conformed(b, self.schema)

    def int_stats(self):
        md = self._f.metadata
        out: dict[str, tuple[int, int] | None] = {}
        for i, field in enumerate(self.schema):
            if not pa.types.is_integer(field.type):
                continue
            lo = hi = None
            for g in range(md.num_row_groups):
                st = md.row_group(g).column(i).statistics
                if st is None or not st.has_min_max:
                    lo = None
                    break
                lo = st.min if lo is None else min(lo, st.min)
                hi = st.max if hi is None else max(hi, st.max)
            out[field.name] = None if lo is None else (int(lo), int(hi))
        return out


class CsvSource(Source):
    """A CSV file, its delimiter and header sniffed as DuckDB does (``storage.csvsniff``)
    unless ``read_csv``'s options name them (``storage.fileoptions.CsvOptions``, applied as
    pyarrow's read, parse and convert options); read in blocks, with a counting pass for
    the row count."""

    def __init__(self, path: Path | RemotePath, count: bool = True,
                 options: CsvOptions | None = None) -> None:
        """``count`` False: the schema only (from the first block), ``num_rows`` -1."""
        super().__init__(path)
        self.options = o = options or CsvOptions()
        try:
            if o.auto_detect:
                with (path.open_input_stream() if isinstance(path, RemotePath)
                      else open(path, "rb")) as f:
                    self.dialect = sniff(f.read(SAMPLE_BYTES), o.delimiter, o.header,
                                         _quote(o), o.escape or None, o.skip)
            else:  # DuckDB's defaults, nothing sniffed: the columns option names them all
                self.dialect = Dialect(o.delimiter or ",", bool(o.header),
                                       len(o.columns or ()))
            self._types = self._column_types()
            r = self._open()
            late = self._late_timestamps(r.schema)
            if late:
                self._types.update(late)
                r = self._open()
            self.schema = r.schema
            self._check_infinities()
            self._check_names()  # before the counting pass, which a repeated name breaks
            self.num_rows = sum(b.num_rows for b in r) if count else -1
        except (pa.ArrowException, OSError) as e:
            raise _unreadable(path, "CSV", e) from None

    def _late_timestamps(self, schema: pa.Schema) -> dict[str, pa.DataType]:
        """The columns pyarrow read as text whose sampled values are all timestamps (ones
        of fractional seconds outside the nanosecond range, 1677..2262), as microsecond
        timestamps, and those it read as DOUBLE whose values are all integers, one beyond
        BIGINT, as DECIMAL(38, 0): as DuckDB reads them (TIMESTAMP, HUGEINT)."""
        names = self._names()
        out = {}
        for i, tz in self.dialect.timestamps:
            if i < len(names) and names[i] not in self._types and \
                    schema.get_field_index(names[i]) >= 0 and \
                    pa.types.is_string(schema.field(names[i]).type):
                out[names[i]] = pa.timestamp("us", tz="UTC" if tz else None)
        for i in self.dialect.hugeints:  # DuckDB's HUGEINT, where pyarrow infers DOUBLE
            if i < len(names) and names[i] not in self._types and \
                    schema.get_field_index(names[i]) >= 0 and \
                    pa.types.is_floating(schema.field(names[i]).type):
                out[names[i]] = pa.decimal128(38, 0)
        return out

    def _check_infinities(self) -> None:
        """A DOUBLE column read from a sniffed file whose first value is an infinity is
        refused: DuckDB's sniffer reads ``inf`` first as a DATE and the column as VARCHAR
        (or DATE), so the two would answer differently; a type given for it is taken."""
        for name in self.dialect.infinity_first:
            i = self.schema.get_field_index(name)
            if i >= 0 and pa.types.is_floating(self.schema.field(i).type) and name not in self._types:
                raise IngestError(
                    f"{self.path.name}: column {name!r} starts with an infinity, which DuckDB's "
                    "CSV sniffer reads as a DATE (and the column as VARCHAR); name its type: "
                    f"read_csv('{self.path.name}', types={{'{name}': 'DOUBLE'}})")

    def _names(self) -> list[str]:
        """The columns' names: the ``columns`` option's, the header's, or DuckDB's
        ``column0``, ``column1``, ... of a file without one."""
        if self.options.columns is not None:
            return [n for n, _ in self.options.columns]
        d = self.dialect
        return list(d.names) if d.header else d.column_names()

    def _column_types(self) -> dict[str, pa.DataType]:
        """The types the options set (``columns``, ``types``/``dtypes``, ``all_varchar``);
        the other columns' are inferred. A type of a column the file lacks is a one-line
        error, as DuckDB's."""
        o, names = self.options, self._names()
        out = dict(o.columns or ())
        if len(o.positional) > len(names):
            raise IngestError(f"read_csv: {len(o.positional)} types were provided, but CSV "
                              f"file {self.path.name} only has {len(names)} columns")
        out.update(zip(names, o.positional, strict=False))
        missing = [n for n, _ in o.types if n not in names]
        if missing:
            raise IngestError(f"read_csv: types of columns that {self.path.name} does not "
                              f"have: {', '.join(missing)} (it has: {', '.join(names)})")
        out.update(o.types)
        if o.all_varchar:
            for n in names:
                out.setdefault(n, pa.string())
        return out

    def _open(self, columns=None):
        o, d = self.options, self.dialect
        # NULL is an empty field only, as in DuckDB: "nan" is a NaN and "NA" a string (Arrow's
        # default would read both, and a dozen other words, as NULL)
        conv = pacsv.ConvertOptions(
            include_columns=columns or [], null_values=list(o.nulls if o.nulls is not None
                                                            else [""]),
            strings_can_be_null=True, column_types=self._types,
            true_values=BOOLEAN_WORDS[True], false_values=BOOLEAN_WORDS[False],
            timestamp_parsers=[o.timestamp_format] if o.timestamp_format else None)
        src = self.path.open_input_stream() if isinstance(self.path, RemotePath) \
            else str(self.path)
        names = self._names()
        read = pacsv.ReadOptions(block_size=16 << 20, column_names=names or None,
                                 skip_rows=o.skip + (1 if d.header and d.fields else 0))
        quote = _quote(o)
        doubled = not o.escape or o.escape == quote  # a quote escaped by doubling it
        parse = pacsv.ParseOptions(delimiter=d.delimiter, quote_char=quote or False,
                                   escape_char=False if doubled else o.escape,
                                   double_quote=doubled)
        return pacsv.open_csv(src, convert_options=conv, read_options=read,
                              parse_options=parse)

    def batches(self, columns=None):
        with _reading(self.path):
            r = self._open(columns)
            for b in r:
                # block-wise type inference can differ from the first block's; keep the schema
                if columns is None:
                    yield b.cast(self.schema) if b.schema != self.schema else b
                else:
                    yield b


def _quote(o: CsvOptions) -> str:
    """The quote character of ``o`` ("" for none; DuckDB's default, a double quote)."""
    return '"' if o.quote is None else o.quote


class TableSource(Source):
    """Rows already in memory (an Arrow table), under a name that errors and the manifest
    give it: the existing rows of a table that ``ingest --append`` rewrites."""

    def __init__(self, table: pa.Table, name: str) -> None:
        super().__init__(Path(name))
        self._t = table
        self.schema = table.schema
        self.num_rows = table.num_rows

    @property
    def nbytes(self) -> int:
        return self._t.nbytes

    def batches(self, columns=None):
        t = self._t.select(columns) if columns is not None else self._t
        yield from t.to_batches(max_chunksize=1 << 20)


class _View(Source):
    """A source seen through another's columns: its file, size, rows and description."""

    def __init__(self, inner: Source) -> None:
        super().__init__(inner.path)
        self._inner = inner
        self.num_rows = inner.num_rows

    @property
    def nbytes(self) -> int:
        return self._inner.nbytes

    def describe(self) -> str:
        return self._inner.describe()

    def int_stats(self):
        return self._inner.int_stats()


class ProjectedSource(_View):
    """A source seen through the columns ``names`` (in that order); a column it lacks is a
    one-line error naming the file and the column."""

    def __init__(self, inner: Source, names: Sequence[str], table: str) -> None:
        super().__init__(inner)
        missing = [n for n in names if n not in inner.schema.names]
        if missing:
            raise IngestError(f"{inner.path.name} has no column {missing[0]!r}, which table "
                              f"{table!r} has; nothing was appended")
        self.schema = pa.schema([inner.schema.field(n) for n in names])

    def batches(self, columns=None):
        yield from self._inner.batches(columns=list(columns or self.schema.names))

    def int_stats(self):
        return {k: v for k, v in self._inner.int_stats().items() if k in self.schema.names}


class FilledSource(_View):
    """A source seen through the unified columns ``types`` (name -> Arrow type): a column
    it lacks reads as NULLs of that type, as DuckDB's ``union_by_name`` gives."""

    def __init__(self, inner: Source, types: dict[str, pa.DataType]) -> None:
        super().__init__(inner)
        self._have = set(inner.schema.names)
        self.schema = pa.schema([inner.schema.field(n) if n in self._have else pa.field(n, t)
                                 for n, t in types.items()])

    def batches(self, columns=None):
        names = list(columns or self.schema.names)
        read = [n for n in names if n in self._have]
        if self.num_rows == 0:
            return
        if not read:  # none of these columns is in the file: only its row count matters
            yield from _null_batches(self.schema, names, self.num_rows)
            return
        for b in self._inner.batches(columns=read):
            yield pa.RecordBatch.from_arrays(
                [b.column(n) if n in self._have else pa.nulls(b.num_rows, self.schema.field(n).type)
                 for n in names], names=names)


class HiveSource(_View):
    """A source with its partition columns (``year=2019/`` in its path) appended: each
    holds one value (``None``: NULL) in every row, of type int64 or string."""

    def __init__(self, inner: Source, columns: dict[str, tuple[pa.DataType, object]]) -> None:
        from bamql.storage.hive import check_columns

        check_columns(list(columns), inner.schema.names, str(inner.path))
        super().__init__(inner)
        self._consts = columns
        self.schema = pa.schema([*inner.schema,
                                 *(pa.field(n, t) for n, (t, _) in columns.items())])

    def batches(self, columns=None):
        names = list(columns or self.schema.names)
        read = [n for n in names if n not in self._consts]
        if self.num_rows == 0:
            return
        inner = self._inner.batches(columns=read) if read else \
            _null_batches(self.schema, names[:1], self.num_rows)
        for b in inner:
            yield pa.RecordBatch.from_arrays(
                [self._const(n, b.num_rows) if n in self._consts else b.column(n)
                 for n in names], names=names)

    def _const(self, name: str, rows: int) -> pa.Array:
        t, v = self._consts[name]
        return pa.nulls(rows, t) if v is None else pa.repeat(pa.scalar(v, t), rows)

    def int_stats(self):
        out = dict(self._inner.int_stats())
        for n, (t, v) in self._consts.items():
            if pa.types.is_integer(t) and v is not None:
                out[n] = (int(v), int(v))
        return out


def _null_batches(schema: pa.Schema, names: list[str], rows: int) -> Iterator[pa.RecordBatch]:
    step = 1 << 20
    for lo in range(0, rows, step):
        n = min(step, rows - lo)
        yield pa.RecordBatch.from_arrays([pa.nulls(n, schema.field(c).type) for c in names],
                                         names=names)


#: BINARY types read as VARCHAR by ``binary_as_string``
_AS_STRING = {pa.binary(): pa.string(), pa.large_binary(): pa.large_string()}


def conformed(b: pa.RecordBatch | pa.Table, schema: pa.Schema):
    """Batch (or table) ``b`` with each column cast to its type in ``schema`` where they
    differ (a BINARY read as VARCHAR); ``b`` itself where none does."""
    types = {f.name: f.type for f in schema}
    if all(types.get(f.name, f.type) == f.type for f in b.schema):
        return b
    return b.cast(pa.schema([f.with_type(types.get(f.name, f.type)) for f in b.schema]))


def open_source(path: str | Path | RemotePath | Source, count: bool = True,
                options: FileOptions | None = None) -> Source:
    """Open one input file (a path, a URI or a :class:`RemotePath`) by its extension
    (.orc, .parquet/.pq, .csv); a Source is returned as it is. ``count`` False: a CSV
    file's rows are not counted (``num_rows`` -1; its schema is read from its first block).
    ``options``: ``read_csv``'s and ``read_parquet``'s (``storage.fileoptions``)."""
    if isinstance(path, Source):
        return path
    if isinstance(path, str) and is_uri(path):
        path = RemotePath(path)
    if isinstance(path, RemotePath):
        return _open_remote(path, count, options)
    p = Path(path)
    if not p.exists():
        raise IngestError(f"source {p} does not exist")
    if p.is_dir():
        raise IngestError(f"source {p} is a directory; name the files to ingest")
    suffix = p.suffix.lower()
    if suffix == ".orc":
        return OrcSource(p)
    if suffix in (".parquet", ".pq"):
        return ParquetSource(p, options is not None and options.binary_as_string)
    if suffix == ".csv":
        return CsvSource(p, count, options.csv if options is not None else None)
    raise IngestError(f"source {p}: unknown format {suffix!r} (expected .orc, .parquet or .csv)")


def _open_remote(p: RemotePath, count: bool = True, options: FileOptions | None = None) -> Source:
    suffix = p.suffix.lower()
    kinds = {".orc": OrcSource, ".parquet": ParquetSource, ".pq": ParquetSource,
             ".csv": CsvSource}
    if suffix not in kinds:
        raise IngestError(f"source {p}: unknown format {suffix!r} (expected .orc, .parquet "
                          "or .csv)")
    if kinds[suffix] is CsvSource:
        return CsvSource(p, count, options.csv if options is not None else None)
    if kinds[suffix] is ParquetSource:
        return ParquetSource(p, options is not None and options.binary_as_string)
    return kinds[suffix](p)


def _unreadable(path: Path | RemotePath, fmt: str, e: BaseException) -> IngestError:
    """A file that does not open as ``fmt``: one line naming it; for a remote file whose
    failure is I/O (not its contents), what failed in reaching it."""
    if isinstance(path, RemotePath) and isinstance(e, OSError) \
            and not isinstance(e, pa.ArrowInvalid):
        return remote_error(str(path), e)
    return IngestError(f"{path} is not a readable {fmt} file ({_first_line(e)})")


def _random_access(path: Path | RemotePath):
    """What a Parquet or ORC reader opens: a local path as text, a remote file as an open
    ``NativeFile`` (a failure to reach it is a one-line error naming its URL)."""
    return path.open_input_file() if isinstance(path, RemotePath) else str(path)


class _reading:
    """Around the reading of a remote file's batches: an I/O failure midway (a dropped
    connection, a timeout) becomes a one-line error naming its URL; a local file's errors
    pass as they are."""

    def __init__(self, path: Path | RemotePath) -> None:
        self.path = path

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind, e, tb) -> bool:
        if isinstance(self.path, RemotePath) and isinstance(e, OSError):
            raise remote_error(str(self.path), e) from None
        return False


def select_columns(have: Sequence[str], wanted: Sequence[str], where: str) -> list[str]:
    """The names of ``have`` that ``wanted`` lists, in ``have``'s order; a name ``have``
    lacks, or no name at all, is a one-line error."""
    missing = [c for c in wanted if c not in have]
    if missing:
        raise IngestError(f"no column {missing[0]!r} in {where}; it has: {', '.join(have)}")
    if not wanted:
        raise IngestError("--columns names no column")
    return [c for c in have if c in wanted]


def _first_line(e: BaseException) -> str:
    return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
