"""The options of ``read_csv(...)``, ``read_parquet(...)`` and ``read_orc(...)`` as DuckDB
names them, bound from the SQL by ``sql.file_refs`` and applied by the readers
(``storage.sources``: pyarrow's CSV reader options; ``storage.files``: the ``filename``
column). Plain values, hashable: a file set's table is keyed by them."""

from __future__ import annotations

import typing
from dataclasses import dataclass, field

if typing.TYPE_CHECKING:
    import pyarrow as pa


@dataclass(frozen=True)
class CsvOptions:
    """How a CSV file is read; None (or empty): sniffed or DuckDB's default.

    ``columns``: every column's name and type, in the file's order (DuckDB's ``columns``);
    ``types``: types of some columns by name, ``positional``: of the first columns by
    position (``types``/``dtypes`` as a struct or as a list)."""

    header: bool | None = None
    delimiter: str | None = None
    quote: str | None = None  # "": no quoting
    escape: str | None = None  # "": none
    skip: int = 0  # lines skipped before the header (or the first row)
    nulls: tuple[str, ...] | None = None  # the texts read as NULL (default: the empty one)
    columns: tuple[tuple[str, pa.DataType], ...] | None = None
    types: tuple[tuple[str, pa.DataType], ...] = ()
    positional: tuple[pa.DataType, ...] = ()
    auto_detect: bool = True
    all_varchar: bool = False
    timestamp_format: str | None = None

    def key(self) -> list:
        """A JSON-able form, for a file set's hash."""
        out = []
        for k, v in self.__dict__.items():
            if isinstance(v, tuple):
                v = [[x[0], str(x[1])] if isinstance(x, tuple) else str(x) for x in v]
            out.append([k, v])
        return out


@dataclass(frozen=True)
class FileOptions:
    """The options of a table function that reads files. ``filename``: the name of the
    column that holds each row's file, as the query named it (None: no such column);
    ``binary_as_string``: Parquet BINARY columns read as VARCHAR; ``union_by_name`` is
    recorded only: bamql always matches the files' columns by name (DuckDB without it
    refuses files whose columns differ)."""

    csv: CsvOptions = field(default_factory=CsvOptions)
    filename: str | None = None
    union_by_name: bool = False
    binary_as_string: bool = False

    @property
    def default(self) -> bool:
        """Whether these options read files as a query without any would."""
        return self == FileOptions(union_by_name=self.union_by_name)

    def key(self) -> list:
        """A JSON-able form, for a file set's hash."""
        return [self.csv.key(), self.filename, self.binary_as_string]


#: DuckDB's type names (as sqlglot spells them) a CSV column may be read as, by Arrow type
_TYPES = {"BOOLEAN": "bool_", "TINYINT": "int8", "SMALLINT": "int16", "INT": "int32",
          "BIGINT": "int64", "UTINYINT": "uint8", "USMALLINT": "uint16", "UINT": "uint32",
          "UBIGINT": "uint64", "FLOAT": "float32", "DOUBLE": "float64", "VARCHAR": "string",
          "TEXT": "string", "CHAR": "string", "NVARCHAR": "string"}


def arrow_type(name: str, params: tuple[int, ...] = ()) -> pa.DataType | None:
    """The Arrow type of SQL type ``name`` (sqlglot's spelling: ``INT``, ``DECIMAL`` with
    ``params`` (precision, scale), ``TIMESTAMPTZ``), or None where bamql reads no column of
    it."""
    import pyarrow as pa

    if name in _TYPES:
        return getattr(pa, _TYPES[name])()
    if name in ("TIMESTAMP", "DATETIME", "TIMESTAMPNTZ"):
        return pa.timestamp("us")
    if name == "DATE":  # its text YYYY-MM-DD, as DuckDB's default dateformat reads it
        return pa.date32()
    if name == "TIMESTAMPTZ":
        from bamql.storage.sqltypes import TIME_ZONE

        return pa.timestamp("us", tz=TIME_ZONE)
    if name == "DECIMAL":
        p, sc = params[:2] if len(params) >= 2 else (params[0], 0) if params else (18, 3)
        return pa.decimal128(p, sc) if 1 <= p <= 38 and 0 <= sc <= p else None
    return None
