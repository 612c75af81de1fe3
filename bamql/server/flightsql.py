"""Arrow Flight SQL's messages and catalog answers, for ``bamql serve``.

Flight SQL (the protocol of ADBC and JDBC drivers) rides on plain Flight: a descriptor's
command, a ticket or a Flight SQL action's body is a protobuf message wrapped in
``google.protobuf.Any`` (``type_url`` ``type.googleapis.com/arrow.flight.protocol.sql.<Name>``).
The messages are the ``protobuf`` runtime's, from the code protoc generates from Arrow's
``FlightSql.proto`` and ``Flight.proto`` (``bamql.server.proto``); :func:`unpack` and
:func:`pack` unwrap and wrap them. The session actions of ``Flight.proto`` (GetSessionOptions,
SetSessionOptions, CloseSession) carry their messages bare.

The ``*_table`` functions build the Arrow answers of the catalog commands in the schemas
FlightSql.proto gives, and :func:`with_column_metadata` the ``ARROW:FLIGHT:SQL:*`` metadata
of a result's or a table's columns (type name, precision, scale, ...).

bamql has no catalogs or database schemas: its tables are of type ``TABLE`` and lie in one
database schema named ``""`` (the empty name, as a db_schema_name may not be NULL) of a NULL
catalog; a session's current catalog and schema are both ``""`` (as ADBC names a missing
catalog).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

import pyarrow as pa
from google.protobuf import any_pb2
from google.protobuf.message import DecodeError, Message

from bamql.errors import UsageError
from bamql.server.proto import Flight_pb2 as flight_pb2
from bamql.server.proto import FlightSql_pb2 as pb

PREFIX = "type.googleapis.com/arrow.flight.protocol.sql."
TABLE_TYPE = "TABLE"
#: the name of the one database schema bamql's tables lie in
SCHEMA = ""
#: a session's options: the current catalog and database schema (ADBC's names)
SESSION_OPTIONS = {"catalog": "", "schema": SCHEMA}

#: the Flight SQL messages a bamql server reads (others are refused by name)
SERVED = frozenset({
    "CommandStatementQuery", "TicketStatementQuery", "CommandPreparedStatementQuery",
    "CommandStatementUpdate", "CommandPreparedStatementUpdate", "CommandGetSqlInfo",
    "CommandGetCatalogs", "CommandGetDbSchemas", "CommandGetTables", "CommandGetTableTypes",
    "CommandGetPrimaryKeys", "CommandGetExportedKeys", "CommandGetImportedKeys",
    "CommandGetCrossReference", "CommandGetXdbcTypeInfo", "ActionCreatePreparedStatementRequest",
    "ActionClosePreparedStatementRequest"})


# -- messages --------------------------------------------------------------------------------
def name(msg: Message) -> str:
    """A message's protobuf name (``CommandStatementQuery``)."""
    return msg.DESCRIPTOR.name


def pack(msg: Message) -> bytes:
    """A Flight SQL message wrapped in ``google.protobuf.Any``."""
    wrapped = any_pb2.Any()
    wrapped.Pack(msg)
    return wrapped.SerializeToString(deterministic=True)


def unpack(data: bytes) -> Message | None:
    """The Flight SQL message an ``Any`` holds; None where ``data`` is no Flight SQL
    ``Any`` (a plain bamql command). A Flight SQL message bamql does not serve, or one
    that is malformed, is a UsageError naming it."""
    wrapped = any_pb2.Any()
    try:
        wrapped.ParseFromString(data)
    except (DecodeError, ValueError, TypeError):
        return None
    if not wrapped.type_url.startswith(PREFIX):
        return None
    kind = wrapped.type_url[len(PREFIX):]
    if kind not in SERVED:
        raise UsageError(f"bamql does not serve Flight SQL's {kind}")
    return parse(getattr(pb, kind), wrapped.value)


def unpack_as(cls: type[Message], data: bytes) -> Message:
    """The message of ``cls`` an ``Any`` holds (as a client reads the server's answers);
    anything else is a UsageError."""
    wrapped = any_pb2.Any()
    msg = cls()
    try:
        wrapped.ParseFromString(data)
        if wrapped.Unpack(msg):
            return msg
    except (DecodeError, ValueError, TypeError):
        pass
    raise UsageError(f"this is no Flight SQL {cls.DESCRIPTOR.name}")


def parse(cls: type[Message], data: bytes) -> Message:
    """A message of ``cls`` from its bytes (malformed ones are a UsageError)."""
    msg = cls()
    try:
        msg.ParseFromString(data)
    except (DecodeError, ValueError, TypeError):
        raise UsageError(f"a Flight SQL {cls.DESCRIPTOR.name} is malformed") from None
    return msg


def optional(msg: Message, field: str) -> object:
    """An ``optional`` field's value, or None where the message does not carry it."""
    return getattr(msg, field) if msg.HasField(field) else None


# -- sessions --------------------------------------------------------------------------------
def session_options_result() -> bytes:
    """The answer to GetSessionOptions: the current catalog and schema."""
    res = flight_pb2.GetSessionOptionsResult()
    for key, value in SESSION_OPTIONS.items():
        res.session_options[key].string_value = value
    return res.SerializeToString(deterministic=True)


def set_session_options(body: bytes) -> bytes:
    """The answer to SetSessionOptions: each option that is not a current one bamql has,
    with the value it has, as an error (INVALID_NAME, INVALID_VALUE)."""
    req = parse(flight_pb2.SetSessionOptionsRequest, body)
    res = flight_pb2.SetSessionOptionsResult()
    for key, value in req.session_options.items():
        if key not in SESSION_OPTIONS:
            res.errors[key].value = flight_pb2.SetSessionOptionsResult.INVALID_NAME
        elif value.WhichOneof("option_value") != "string_value" \
                or value.string_value != SESSION_OPTIONS[key]:
            res.errors[key].value = flight_pb2.SetSessionOptionsResult.INVALID_VALUE
    return res.SerializeToString(deterministic=True)


def close_session(body: bytes) -> bytes:
    """The answer to CloseSession: closed (a bamql session keeps no state per client)."""
    parse(flight_pb2.CloseSessionRequest, body)
    return flight_pb2.CloseSessionResult(
        status=flight_pb2.CloseSessionResult.CLOSED).SerializeToString()


# -- column metadata -------------------------------------------------------------------------
_META = "ARROW:FLIGHT:SQL:"
#: the precision of integer types in decimal digits, of floating types in bits
_INT_DIGITS = {8: 3, 16: 5, 32: 10, 64: 19}
_FLOAT_BITS = {16: 11, 32: 24, 64: 53}
_TS_DIGITS = {"s": 0, "ms": 3, "us": 6, "ns": 9}


def type_name(t: pa.DataType) -> str:
    """The SQL name of an Arrow type, as DESCRIBE gives it (DuckDB's names)."""
    from bamql.exec.describe import duckdb_type

    return duckdb_type(t)


def _precision_scale(t: pa.DataType) -> tuple[int | None, int | None]:
    """A column's precision (column size) and scale, as XDBC's COLUMN_SIZE and
    DECIMAL_DIGITS give them (None where they do not apply)."""
    if pa.types.is_decimal(t):
        return t.precision, t.scale
    if pa.types.is_integer(t):
        return _INT_DIGITS[t.bit_width], 0
    if pa.types.is_floating(t):
        return _FLOAT_BITS[t.bit_width], None
    if pa.types.is_boolean(t):
        return 1, None
    if pa.types.is_date(t):
        return 10, None  # YYYY-MM-DD
    if pa.types.is_timestamp(t):
        digits = _TS_DIGITS[t.unit]
        return 19 + (digits + 1 if digits else 0) + (6 if t.tz else 0), digits
    return None, None


def column_metadata(t: pa.DataType, table: str | None = None) -> dict[bytes, bytes]:
    """The ``ARROW:FLIGHT:SQL:*`` metadata of a column of type ``t`` (of ``table``, where
    the column is one of a table's)."""
    meta = {"TYPE_NAME": type_name(t), "IS_AUTO_INCREMENT": "0",
            "IS_CASE_SENSITIVE": "1" if pa.types.is_string(t) or pa.types.is_large_string(t)
            else "0", "IS_READ_ONLY": "1", "IS_SEARCHABLE": "1"}
    precision, scale = _precision_scale(t)
    if precision is not None:
        meta["PRECISION"] = str(precision)
    if scale is not None:
        meta["SCALE"] = str(scale)
    if table is not None:
        meta.update(DB_SCHEMA_NAME=SCHEMA, TABLE_NAME=table)
    return {(_META + k).encode(): v.encode() for k, v in meta.items()}


def with_column_metadata(schema: pa.Schema, table: str | None = None) -> pa.Schema:
    """``schema`` with each field's ``ARROW:FLIGHT:SQL:*`` metadata added to what it has."""
    return pa.schema([f.with_metadata({**(f.metadata or {}), **column_metadata(f.type, table)})
                      for f in schema], metadata=schema.metadata)


def with_column_metadata_table(t: pa.Table) -> pa.Table:
    """A query's answer with its columns' ``ARROW:FLIGHT:SQL:*`` metadata (no copy)."""
    return pa.Table.from_arrays(t.columns, schema=with_column_metadata(t.schema))


# -- catalog answers -------------------------------------------------------------------------
#: the dense union of a SqlInfo value: (field name, type) by type code
_INFO_VALUE = [("string_value", pa.string()), ("bool_value", pa.bool_()),
               ("bigint_value", pa.int64()), ("int32_bitmask", pa.int32()),
               ("string_list", pa.list_(pa.string())),
               ("int32_to_int32_list_map", pa.map_(pa.int32(), pa.list_(pa.int32())))]
SQL_INFO_SCHEMA = pa.schema([
    pa.field("info_name", pa.uint32(), nullable=False),
    pa.field("value", pa.dense_union([pa.field(n, t) for n, t in _INFO_VALUE]), nullable=False)])
_CODE = {str: 0, bool: 1, int: 3}  # an int SqlInfo value is an int32 ordinal or bitmask


def sql_info(version: str) -> dict[int, object]:
    """The SqlInfo values bamql answers, by id."""
    return {pb.FLIGHT_SQL_SERVER_NAME: "bamql", pb.FLIGHT_SQL_SERVER_VERSION: version,
            pb.FLIGHT_SQL_SERVER_ARROW_VERSION: pa.__version__,
            pb.FLIGHT_SQL_SERVER_READ_ONLY: True, pb.FLIGHT_SQL_SERVER_SQL: True,
            pb.FLIGHT_SQL_SERVER_SUBSTRAIT: False,
            pb.FLIGHT_SQL_SERVER_TRANSACTION: pb.SQL_SUPPORTED_TRANSACTION_NONE,
            pb.FLIGHT_SQL_SERVER_CANCEL: False, pb.FLIGHT_SQL_SERVER_BULK_INGESTION: False,
            pb.SQL_DDL_CATALOG: False, pb.SQL_DDL_SCHEMA: False, pb.SQL_DDL_TABLE: False,
            pb.SQL_IDENTIFIER_QUOTE_CHAR: '"', pb.SQL_ALL_TABLES_ARE_SELECTABLE: True}


def sql_info_table(ids: Iterable[int], version: str) -> pa.Table:
    """The answer to CommandGetSqlInfo: the requested ids bamql knows (all of them when
    ``ids`` is empty), in the order asked."""
    known = sql_info(version)
    rows = [(i, known[i]) for i in (list(ids) or list(known)) if i in known]
    children: list[list[object]] = [[] for _ in _INFO_VALUE]
    codes, offsets = [], []
    for _, v in rows:
        code = _CODE[type(v)]
        codes.append(code)
        offsets.append(len(children[code]))
        children[code].append(v)
    value = pa.UnionArray.from_dense(
        pa.array(codes, pa.int8()), pa.array(offsets, pa.int32()),
        [pa.array(c, t) for c, (_, t) in zip(children, _INFO_VALUE, strict=True)],
        [n for n, _ in _INFO_VALUE], list(range(len(_INFO_VALUE))))
    return pa.Table.from_arrays([pa.array([i for i, _ in rows], pa.uint32()), value],
                                schema=SQL_INFO_SCHEMA)


CATALOGS_SCHEMA = pa.schema([pa.field("catalog_name", pa.string(), nullable=False)])
DB_SCHEMAS_SCHEMA = pa.schema([pa.field("catalog_name", pa.string()),
                               pa.field("db_schema_name", pa.string(), nullable=False)])
TABLE_TYPES_SCHEMA = pa.schema([pa.field("table_type", pa.string(), nullable=False)])
_TABLES_FIELDS = [pa.field("catalog_name", pa.string()), pa.field("db_schema_name", pa.string()),
                  pa.field("table_name", pa.string(), nullable=False),
                  pa.field("table_type", pa.string(), nullable=False)]
_TABLE_SCHEMA_FIELD = pa.field("table_schema", pa.binary(), nullable=False)
KEYS_SCHEMA = pa.schema([pa.field("catalog_name", pa.string()),
                         pa.field("db_schema_name", pa.string()),
                         pa.field("table_name", pa.string(), nullable=False),
                         pa.field("column_name", pa.string(), nullable=False),
                         pa.field("key_name", pa.string()),
                         pa.field("key_sequence", pa.int32(), nullable=False)])
_REF = [("pk_catalog_name", pa.string(), True), ("pk_db_schema_name", pa.string(), True),
        ("pk_table_name", pa.string(), False), ("pk_column_name", pa.string(), False),
        ("fk_catalog_name", pa.string(), True), ("fk_db_schema_name", pa.string(), True),
        ("fk_table_name", pa.string(), False), ("fk_column_name", pa.string(), False),
        ("key_sequence", pa.int32(), False), ("fk_key_name", pa.string(), True),
        ("pk_key_name", pa.string(), True), ("update_rule", pa.uint8(), False),
        ("delete_rule", pa.uint8(), False)]
FOREIGN_KEYS_SCHEMA = pa.schema([pa.field(n, t, nullable=b) for n, t, b in _REF])
_I32, _S = pa.int32(), pa.string()
_XDBC = [("type_name", _S, False), ("data_type", _I32, False), ("column_size", _I32, True),
         ("literal_prefix", _S, True), ("literal_suffix", _S, True),
         ("create_params", pa.list_(pa.field("item", _S, nullable=False)), True),
         ("nullable", _I32, False), ("case_sensitive", pa.bool_(), False),
         ("searchable", _I32, False), ("unsigned_attribute", pa.bool_(), True),
         ("fixed_prec_scale", pa.bool_(), False), ("auto_increment", pa.bool_(), True),
         ("local_type_name", _S, True), ("minimum_scale", _I32, True),
         ("maximum_scale", _I32, True), ("sql_data_type", _I32, False),
         ("datetime_subcode", _I32, True), ("num_prec_radix", _I32, True),
         ("interval_precision", _I32, True)]
XDBC_TYPE_INFO_SCHEMA = pa.schema([pa.field(n, t, nullable=b) for n, t, b in _XDBC])


def _type_row(name: str, data_type: int, size: int | None, *, prefix: str | None = None,
              params: list[str] | None = None, text: bool = False, numeric: bool = False,
              fixed: bool = False, scale: tuple[int, int] | None = None,
              subcode: int | None = None, radix: int | None = None) -> dict[str, object]:
    return {"type_name": name, "data_type": data_type, "column_size": size,
            "literal_prefix": prefix, "literal_suffix": "'" if prefix else None,
            "create_params": params, "nullable": pb.NULLABILITY_NULLABLE,
            "case_sensitive": text,
            "searchable": pb.SEARCHABLE_FULL if text else pb.SEARCHABLE_BASIC,
            "unsigned_attribute": False if numeric else None, "fixed_prec_scale": fixed,
            "auto_increment": False if numeric else None, "local_type_name": name,
            "minimum_scale": scale[0] if scale else None,
            "maximum_scale": scale[1] if scale else None,
            "sql_data_type": pb.XDBC_DATETIME if subcode is not None else data_type,
            "datetime_subcode": subcode, "num_prec_radix": radix, "interval_precision": None}


#: the SQL types of bamql's tables and answers
XDBC_TYPES = [
    _type_row("BOOLEAN", pb.XDBC_BIT, 1),
    _type_row("BIGINT", pb.XDBC_BIGINT, 19, numeric=True, fixed=True, scale=(0, 0), radix=10),
    _type_row("DECIMAL", pb.XDBC_DECIMAL, 38, params=["precision", "scale"], numeric=True,
              fixed=True, scale=(0, 38), radix=10),
    _type_row("INTEGER", pb.XDBC_INTEGER, 10, numeric=True, fixed=True, scale=(0, 0), radix=10),
    _type_row("FLOAT", pb.XDBC_FLOAT, 24, numeric=True, radix=2),
    _type_row("DOUBLE", pb.XDBC_DOUBLE, 53, numeric=True, radix=2),
    _type_row("VARCHAR", pb.XDBC_VARCHAR, None, prefix="'", text=True),
    _type_row("DATE", pb.XDBC_DATE, 10, prefix="DATE '", subcode=pb.XDBC_SUBCODE_DATE),
    _type_row("TIMESTAMP", pb.XDBC_TIMESTAMP, 26, prefix="TIMESTAMP '", scale=(6, 6),
              subcode=pb.XDBC_SUBCODE_TIMESTAMP),
    _type_row("TIMESTAMP WITH TIME ZONE", pb.XDBC_TIMESTAMP, 32, prefix="TIMESTAMPTZ '",
              scale=(6, 6), subcode=pb.XDBC_SUBCODE_TIMESTAMP_WITH_TIMEZONE),
]


def xdbc_type_info_table(msg: pb.CommandGetXdbcTypeInfo) -> pa.Table:
    """The answer to CommandGetXdbcTypeInfo: bamql's SQL types (those of ``data_type``
    where the command names one), by data type and name."""
    want = optional(msg, "data_type")
    rows = sorted((r for r in XDBC_TYPES if want is None or r["data_type"] == want),
                  key=lambda r: (r["data_type"], r["type_name"]))
    return pa.Table.from_pylist(rows, schema=XDBC_TYPE_INFO_SCHEMA)


def like(pattern: str | None, value: str) -> bool:
    """Whether ``value`` matches a Flight SQL filter pattern (``%``: any run, ``_``: one
    character; case-sensitive); a missing pattern matches everything."""
    if pattern is None:
        return True
    rx = "".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in pattern)
    return re.fullmatch(rx, value, re.DOTALL) is not None


def _no_catalog(catalog: str | None) -> bool:
    """Whether a catalog filter admits bamql's tables (which have none)."""
    return catalog is None or catalog == ""


def catalogs_table() -> pa.Table:
    """The answer to CommandGetCatalogs: none."""
    return CATALOGS_SCHEMA.empty_table()


def db_schemas_table(msg: pb.CommandGetDbSchemas) -> pa.Table:
    """The answer to CommandGetDbSchemas: the one schema ``""`` where the filters admit it."""
    hit = _no_catalog(optional(msg, "catalog")) and like(
        optional(msg, "db_schema_filter_pattern"), SCHEMA)
    return pa.Table.from_pydict({"catalog_name": [None] * hit, "db_schema_name": [SCHEMA] * hit},
                                schema=DB_SCHEMAS_SCHEMA)


def table_types_table() -> pa.Table:
    """The answer to CommandGetTableTypes."""
    return pa.Table.from_pydict({"table_type": [TABLE_TYPE]}, schema=TABLE_TYPES_SCHEMA)


def tables_table(msg: pb.CommandGetTables, schemas: Mapping[str, pa.Schema]) -> pa.Table:
    """The answer to CommandGetTables over bamql's tables (name -> Arrow schema), sorted by
    name; a table's schema, where asked for, carries its columns' ``ARROW:FLIGHT:SQL:*``
    metadata. A catalog or schema filter that asks for a non-empty name matches none."""
    fields = list(_TABLES_FIELDS)
    if msg.include_schema:
        fields.append(_TABLE_SCHEMA_FIELD)
    types = list(msg.table_types) or [TABLE_TYPE]
    names = [n for n in sorted(schemas)
             if _no_catalog(optional(msg, "catalog"))
             and like(optional(msg, "db_schema_filter_pattern"), SCHEMA)
             and like(optional(msg, "table_name_filter_pattern"), n) and TABLE_TYPE in types]
    cols: dict[str, list[object]] = {"catalog_name": [None] * len(names),
                                     "db_schema_name": [SCHEMA] * len(names),
                                     "table_name": names, "table_type": [TABLE_TYPE] * len(names)}
    if msg.include_schema:
        cols["table_schema"] = [with_column_metadata(schemas[n], n).serialize().to_pybytes()
                                for n in names]
    return pa.Table.from_pydict(cols, schema=pa.schema(fields))


def keys_table(msg: Message) -> pa.Table:
    """The answer to CommandGetPrimaryKeys, CommandGetExportedKeys, CommandGetImportedKeys
    or CommandGetCrossReference: bamql's tables declare no keys."""
    primary = isinstance(msg, pb.CommandGetPrimaryKeys)
    return (KEYS_SCHEMA if primary else FOREIGN_KEYS_SCHEMA).empty_table()
