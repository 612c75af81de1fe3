"""Answers to the catalog statements of ``sql.statements``, shaped as DuckDB's:
SHOW TABLES gives ``name``; SHOW ALL TABLES ``database``, ``schema``, ``name``,
``column_names``, ``column_types`` and ``temporary`` (a registered table is a temporary one
of database ``temp``, as in DuckDB; a stored one is of the database named as the session's
directory); DESCRIBE gives ``column_name``, ``column_type`` (DuckDB's
type names), ``null``, ``key``, ``default`` and ``extra``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

import pyarrow as pa

from bamql.errors import PlanError
from bamql.exec.result import Result
from bamql.sql.statements import CatalogQuery, Statement


class Session(Protocol):
    """What of ``api.session.Session`` the answers read."""

    dimensions: Mapping
    path: object

    def tables(self) -> list[str]: ...

    def schema(self, table: str) -> pa.Schema: ...

    def sql(self, text: str, params=None) -> Result: ...

#: Arrow types and DuckDB's names for them.
_NAMES = {pa.int8(): "TINYINT", pa.int16(): "SMALLINT", pa.int32(): "INTEGER",
          pa.int64(): "BIGINT", pa.uint8(): "UTINYINT", pa.uint16(): "USMALLINT",
          pa.uint32(): "UINTEGER", pa.uint64(): "UBIGINT", pa.float32(): "FLOAT",
          pa.float64(): "DOUBLE", pa.string(): "VARCHAR", pa.large_string(): "VARCHAR",
          pa.bool_(): "BOOLEAN", pa.date32(): "DATE", pa.null(): '"NULL"'}


def duckdb_type(t: pa.DataType) -> str:
    """DuckDB's name for the Arrow type ``t``."""
    if t in _NAMES:
        return _NAMES[t]
    if pa.types.is_timestamp(t):
        return "TIMESTAMP WITH TIME ZONE" if t.tz else \
            {"s": "TIMESTAMP_S", "ms": "TIMESTAMP_MS", "us": "TIMESTAMP", "ns": "TIMESTAMP_NS"}[t.unit]
    if pa.types.is_decimal(t):
        return f"DECIMAL({t.precision},{t.scale})"
    return str(t).upper()


def describe(s: Session, cq: CatalogQuery, params=None) -> Result:
    """The result of catalog statement ``cq`` in session ``s``."""
    if cq.what is Statement.SHOW_TABLES:
        names = sorted(set(s.tables()) | set(s.dimensions))
        return _result(pa.table({"name": pa.array(names, pa.string())}), cq.what.value)
    if cq.what is Statement.SHOW_ALL_TABLES:
        return _result(_all_tables(s), cq.what.value)
    if cq.what is Statement.DESCRIBE_QUERY:
        schema = s.sql(cq.query, params).to_arrow().schema
    else:
        schema = _table_schema(s, cq.table)
    n = len(schema)
    none = pa.nulls(n, pa.string())
    return _result(pa.table({
        "column_name": pa.array(schema.names, pa.string()),
        "column_type": pa.array([duckdb_type(f.type) for f in schema], pa.string()),
        "null": pa.array(["YES"] * n, pa.string()),
        "key": none, "default": none, "extra": none}), cq.what.value)


def _all_tables(s: Session) -> pa.Table:
    """SHOW ALL TABLES: each table's database, schema, name, columns and their types."""
    rows = []
    stored = sorted(s.tables())
    db = getattr(s.path, "name", None) or "memory"
    for name in sorted(set(stored) | set(s.dimensions)):
        schema = _table_schema(s, name)
        temporary = name not in stored
        rows.append(("temp" if temporary else db, "main", name, schema.names,
                     [duckdb_type(f.type) for f in schema], temporary))
    cols = list(zip(*rows, strict=True)) if rows else [[]] * 6
    strings = pa.list_(pa.string())
    return pa.table({"database": pa.array(cols[0], pa.string()),
                     "schema": pa.array(cols[1], pa.string()),
                     "name": pa.array(cols[2], pa.string()),
                     "column_names": pa.array(cols[3], strings),
                     "column_types": pa.array(cols[4], strings),
                     "temporary": pa.array(cols[5], pa.bool_())})


def _table_schema(s: Session, name: str) -> pa.Schema:
    """The columns a query of table ``name`` reads, with the types it returns them as."""
    stored = [t for t in s.tables() if t == name] or [t for t in s.tables()
                                                      if t.lower() == name.lower()]
    if stored:
        return s.schema(stored[0])
    dims = [d for n, d in s.dimensions.items() if n == name] or \
        [d for n, d in s.dimensions.items() if n.lower() == name.lower()]
    if not dims:
        known = ", ".join(sorted(set(s.tables()) | set(s.dimensions))) or "none"
        raise PlanError(f"unknown table {name!r} (tables: {known})")
    types = {"int": pa.int64(), "float": pa.float64(), "timestamp": pa.timestamp("us"),
             "string": pa.string()}
    src = dims[0].table.schema

    def typ(c: str, m) -> pa.DataType:  # a DECIMAL and a BOOLEAN come back as themselves
        t = src.field(c).type if c in src.names else None
        if t is not None and pa.types.is_timestamp(t) and t.tz is not None:
            from bamql.storage.sqltypes import TIME_ZONE

            return pa.timestamp("us", tz=TIME_ZONE)  # a TIMESTAMP WITH TIME ZONE
        if t is not None and pa.types.is_date(t):  # a DATE comes back as date32
            return pa.date32()
        return t if t is not None and (pa.types.is_decimal(t) or pa.types.is_boolean(t)) \
            else types[m.kind]

    return pa.schema([pa.field(c, typ(c, m)) for c, m in dims[0].metas.items()])


def _result(table: pa.Table, what: str) -> Result:
    return Result(table, None, what)
