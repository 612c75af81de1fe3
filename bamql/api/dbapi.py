"""A DB-API 2.0 (PEP 249) interface to bamql, for tools that speak it.

>>> import bamql.api.dbapi
>>> with bamql.api.dbapi.connect("data/") as con:
...     cur = con.cursor()
...     cur.execute("SELECT COUNT(*) FROM trips WHERE passenger_count = ?", [2])
...     cur.fetchone()

bamql is read-only: ``commit`` and ``rollback`` do nothing. Parameters are ``?`` (the
``paramstyle``), and also ``$1`` or ``$name`` as ``Session.sql`` takes them. bamql's errors
arrive as the PEP's exception classes (a query bamql cannot run is a ``ProgrammingError``).
"""

from __future__ import annotations

import contextlib
import datetime
import os
import time
from collections.abc import Iterator, Sequence

import pyarrow as pa

from bamql.api.session import Session
from bamql.errors import (
    BamqlError,
    ConfigError,
    DeviceError,
    IngestError,
    OutOfRangeError,
    PlanError,
    StoreError,
    UsageError,
)
from bamql.exec.result import Result
from bamql.sql.params import Params

apilevel = "2.0"
#: threads may share the module, not a connection (its cursors hold their own rows)
threadsafety = 1
paramstyle = "qmark"


# -- exceptions (PEP 249's hierarchy) --------------------------------------------------------
class Warning(Exception):  # noqa: A001 - the name PEP 249 gives it
    """An important warning (PEP 249); bamql raises none."""


class Error(Exception):
    """Base class of every error this module raises."""


class InterfaceError(Error):
    """The interface was misused: a closed connection or cursor."""


class DatabaseError(Error):
    """An error of the engine."""


class DataError(DatabaseError):
    """A value out of range (an integer overflow)."""


class OperationalError(DatabaseError):
    """The tables or the device: a store missing or corrupt, a GPU out of memory."""


class IntegrityError(DatabaseError):
    """Relational integrity (PEP 249); bamql is read-only and raises none."""


class InternalError(DatabaseError):
    """An internal error of the engine (PEP 249); bamql raises none on purpose."""


class ProgrammingError(DatabaseError):
    """SQL bamql cannot run, an unknown table or column, parameters that do not match."""


class NotSupportedError(DatabaseError):
    """A method or feature bamql does not have."""


#: bamql's error classes -> PEP 249's (the first that matches, so subclasses first)
_ERRORS: tuple[tuple[type[BamqlError], type[Error]], ...] = (
    (PlanError, ProgrammingError), (UsageError, ProgrammingError),
    (ConfigError, ProgrammingError), (OutOfRangeError, DataError),
    (StoreError, OperationalError), (IngestError, OperationalError),
    (DeviceError, OperationalError), (BamqlError, DatabaseError))


@contextlib.contextmanager
def _mapped() -> Iterator[None]:
    """bamql's errors raised inside as PEP 249's, with the same one-line message."""
    try:
        yield
    except BamqlError as e:
        cls = next(pep for ours, pep in _ERRORS if isinstance(e, ours))
        raise cls(str(e)) from None


# -- types and constructors --------------------------------------------------------------
class DBAPITypeObject:
    """A PEP 249 type object: equal to every ``type_code`` of its group."""

    def __init__(self, name: str, *prefixes: str) -> None:
        self.name, self.prefixes = name, prefixes

    def __eq__(self, other: object) -> bool:
        return isinstance(other, str) and other.upper().startswith(self.prefixes)

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return self.name


STRING = DBAPITypeObject("STRING", "VARCHAR")
BINARY = DBAPITypeObject("BINARY", "BLOB")
NUMBER = DBAPITypeObject("NUMBER", "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT",
                         "FLOAT", "DOUBLE", "DECIMAL", "BOOLEAN")
DATETIME = DBAPITypeObject("DATETIME", "TIMESTAMP", "DATE", "TIME")
ROWID = DBAPITypeObject("ROWID", "ROWID")

Date = datetime.date
Time = datetime.time
Timestamp = datetime.datetime


def DateFromTicks(ticks: float) -> datetime.date:  # noqa: N802 - PEP 249's names
    return Date(*time.localtime(ticks)[:3])


def TimeFromTicks(ticks: float) -> datetime.time:  # noqa: N802
    return Time(*time.localtime(ticks)[3:6])


def TimestampFromTicks(ticks: float) -> datetime.datetime:  # noqa: N802
    return Timestamp(*time.localtime(ticks)[:6])


def Binary(data) -> bytes:  # noqa: N802
    return bytes(data)


def type_code(t: pa.DataType) -> str:
    """The ``type_code`` of a result column of Arrow type ``t``: DuckDB's name of the type."""
    if pa.types.is_decimal(t):
        return f"DECIMAL({t.precision},{t.scale})"
    if pa.types.is_timestamp(t):
        return "TIMESTAMP"
    names = {pa.int8(): "TINYINT", pa.int16(): "SMALLINT", pa.int32(): "INTEGER",
             pa.int64(): "BIGINT", pa.float32(): "FLOAT", pa.float64(): "DOUBLE",
             pa.bool_(): "BOOLEAN", pa.string(): "VARCHAR", pa.large_string(): "VARCHAR",
             pa.date32(): "DATE", pa.binary(): "BLOB"}
    return names.get(t, str(t).upper())


# -- connections and cursors ---------------------------------------------------------------
class Connection:
    """A bamql session behind PEP 249's connection interface."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self._closed = False

    def _check(self) -> None:
        if self._closed:
            raise InterfaceError("the connection is closed")

    def cursor(self) -> Cursor:
        """A new cursor on this connection."""
        self._check()
        return Cursor(self)

    def execute(self, operation: str, parameters: Params = None) -> Cursor:
        """A new cursor that has run ``operation`` (as sqlite3 and DuckDB offer)."""
        return self.cursor().execute(operation, parameters)

    def commit(self) -> None:
        """Nothing to commit: bamql only reads."""
        self._check()

    def rollback(self) -> None:
        """Nothing to roll back: bamql only reads."""
        self._check()

    def close(self) -> None:
        """Close the session; later use is an InterfaceError."""
        if not self._closed:
            self._closed = True
            self.session.close()

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class Cursor:
    """Runs queries and hands out their rows (PEP 249)."""

    #: rows ``fetchmany`` returns when not told
    arraysize: int = 1

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self._result: Result | None = None
        self._closed = False

    def _check(self) -> None:
        if self._closed:
            raise InterfaceError("the cursor is closed")
        self.connection._check()

    def _rows(self) -> Result:
        self._check()
        if self._result is None:
            raise ProgrammingError("no query has run on this cursor: call execute() first")
        return self._result

    @property
    def description(self) -> tuple[tuple, ...] | None:
        """One 7-tuple per result column: (name, type_code, None, None, None, None, None);
        None before a query has run."""
        if self._result is None:
            return None
        return tuple((f.name, type_code(f.type), None, None, None, None, None)
                     for f in self._result.table.schema)

    @property
    def rowcount(self) -> int:
        """Rows of the last query's result; -1 before one has run."""
        return -1 if self._result is None else len(self._result)

    def execute(self, operation: str, parameters: Params = None) -> Cursor:
        """Run a query, with ``parameters`` for its placeholders; returns this cursor."""
        self._check()
        with _mapped():
            self._result = self.connection.session.sql(operation, parameters)
        return self

    def executemany(self, operation: str, seq_of_parameters: Sequence[Params]) -> Cursor:
        """Run ``operation`` once per set of parameters; the last one's rows remain."""
        for params in seq_of_parameters:
            self.execute(operation, params)
        return self

    def fetchone(self) -> tuple | None:
        with _mapped():
            return self._rows().fetchone()

    def fetchmany(self, size: int | None = None) -> list[tuple]:
        with _mapped():
            return self._rows().fetchmany(self.arraysize if size is None else size)

    def fetchall(self) -> list[tuple]:
        with _mapped():
            return self._rows().fetchall()

    def fetch_arrow_table(self) -> pa.Table:
        """The last query's whole result as an Arrow table (as DuckDB's cursor offers)."""
        return self._rows().to_arrow()

    def setinputsizes(self, sizes) -> None:
        """Accepted and ignored (PEP 249)."""

    def setoutputsize(self, size, column=None) -> None:
        """Accepted and ignored (PEP 249)."""

    def close(self) -> None:
        self._closed = True
        self._result = None

    def __iter__(self) -> Iterator[tuple]:
        return self

    def __next__(self) -> tuple:
        row = self.fetchone()
        if row is None:
            raise StopIteration
        return row

    def __enter__(self) -> Cursor:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def connect(path: str | os.PathLike, **session_kwargs) -> Connection:
    """Open a directory of bamql tables (the keywords as for ``bamql.connect``)."""
    with _mapped():
        return Connection(Session(path, **session_kwargs))
