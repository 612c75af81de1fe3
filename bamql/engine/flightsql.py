"""Arrow Flight SQL's messages and catalog answers, for ``bamql serve``.

Flight SQL (the protocol of ADBC and JDBC drivers) rides on plain Flight: a descriptor's
command, a ticket or an action's body is a protobuf message wrapped in
``google.protobuf.Any`` (``type_url`` ``type.googleapis.com/arrow.flight.protocol.sql.<Name>``,
``value`` the message). :func:`unpack` and :func:`pack` translate them to :class:`Message`
values through ``bamql.engine.protowire``; the ``*_table`` functions build the Arrow answers
of the catalog commands in the schemas the specification (FlightSql.proto) gives.

bamql has no catalogs or database schemas: its tables are of type ``TABLE`` and lie in one
database schema named ``""`` (the empty name, as a db_schema_name may not be NULL) of a NULL
catalog.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum

import pyarrow as pa

from bamql.engine import protowire
from bamql.engine.protowire import WireType
from bamql.errors import UsageError

PREFIX = "type.googleapis.com/arrow.flight.protocol.sql."
_ANY_TYPE_URL, _ANY_VALUE = 1, 2
TABLE_TYPE = "TABLE"
#: the name of the one database schema bamql's tables lie in
SCHEMA = ""


class Kind(Enum):
    """The Flight SQL messages bamql reads or writes (values: their protobuf names)."""

    STATEMENT_QUERY = "CommandStatementQuery"
    TICKET = "TicketStatementQuery"
    PREPARED_QUERY = "CommandPreparedStatementQuery"
    STATEMENT_UPDATE = "CommandStatementUpdate"
    PREPARED_UPDATE = "CommandPreparedStatementUpdate"
    SUBSTRAIT_PLAN = "CommandStatementSubstraitPlan"
    GET_SQL_INFO = "CommandGetSqlInfo"
    GET_CATALOGS = "CommandGetCatalogs"
    GET_DB_SCHEMAS = "CommandGetDbSchemas"
    GET_TABLES = "CommandGetTables"
    GET_TABLE_TYPES = "CommandGetTableTypes"
    GET_PRIMARY_KEYS = "CommandGetPrimaryKeys"
    GET_EXPORTED_KEYS = "CommandGetExportedKeys"
    GET_IMPORTED_KEYS = "CommandGetImportedKeys"
    GET_CROSS_REFERENCE = "CommandGetCrossReference"
    CREATE_PREPARED = "ActionCreatePreparedStatementRequest"
    CREATE_PREPARED_RESULT = "ActionCreatePreparedStatementResult"
    CLOSE_PREPARED = "ActionClosePreparedStatementRequest"
    UPDATE_RESULT = "DoPutUpdateResult"


class FieldType(Enum):
    """How a field's value is read."""

    STRING = "string"
    BYTES = "bytes"
    BOOL = "bool"
    INT = "int"
    STRINGS = "repeated string"
    UINTS = "repeated uint32"


_S, _B = FieldType.STRING, FieldType.BYTES
#: each message's fields: name -> (number, type); fields bamql ignores are left out
FIELDS: dict[Kind, dict[str, tuple[int, FieldType]]] = {
    Kind.STATEMENT_QUERY: {"query": (1, _S), "transaction_id": (2, _B)},
    Kind.TICKET: {"statement_handle": (1, _B)},
    Kind.PREPARED_QUERY: {"prepared_statement_handle": (1, _B)},
    Kind.STATEMENT_UPDATE: {"query": (1, _S), "transaction_id": (2, _B)},
    Kind.PREPARED_UPDATE: {"prepared_statement_handle": (1, _B)},
    Kind.SUBSTRAIT_PLAN: {},
    Kind.GET_SQL_INFO: {"info": (1, FieldType.UINTS)},
    Kind.GET_CATALOGS: {},
    Kind.GET_DB_SCHEMAS: {"catalog": (1, _S), "db_schema_filter_pattern": (2, _S)},
    Kind.GET_TABLES: {"catalog": (1, _S), "db_schema_filter_pattern": (2, _S),
                      "table_name_filter_pattern": (3, _S), "table_types": (4, FieldType.STRINGS),
                      "include_schema": (5, FieldType.BOOL)},
    Kind.GET_TABLE_TYPES: {},
    Kind.GET_PRIMARY_KEYS: {"catalog": (1, _S), "db_schema": (2, _S), "table": (3, _S)},
    Kind.GET_EXPORTED_KEYS: {"catalog": (1, _S), "db_schema": (2, _S), "table": (3, _S)},
    Kind.GET_IMPORTED_KEYS: {"catalog": (1, _S), "db_schema": (2, _S), "table": (3, _S)},
    Kind.GET_CROSS_REFERENCE: {},
    Kind.CREATE_PREPARED: {"query": (1, _S), "transaction_id": (2, _B)},
    Kind.CREATE_PREPARED_RESULT: {"prepared_statement_handle": (1, _B),
                                  "dataset_schema": (2, _B), "parameter_schema": (3, _B)},
    Kind.CLOSE_PREPARED: {"prepared_statement_handle": (1, _B)},
    Kind.UPDATE_RESULT: {"record_count": (1, FieldType.INT)},
}
_BY_NAME = {k.value: k for k in Kind}
_REPEATED = (FieldType.STRINGS, FieldType.UINTS)


@dataclass(frozen=True)
class Message:
    """One Flight SQL message: its kind and the values of the fields it carries (a field
    absent from the bytes is absent here, so that ``optional`` fields keep their meaning)."""

    kind: Kind
    values: Mapping[str, object] = field(default_factory=dict)

    def get(self, name: str, default: object = None) -> object:
        """A field's value, or ``default`` where the message does not carry it."""
        return self.values.get(name, default)


def encode(msg: Message) -> bytes:
    """A message's protobuf bytes (fields in number order; repeated scalars packed)."""
    spec = FIELDS[msg.kind]
    out = bytearray()
    for name, (number, ftype) in sorted(spec.items(), key=lambda kv: kv[1][0]):
        if name not in msg.values:
            continue
        value = msg.values[name]
        if ftype is FieldType.UINTS:
            out += protowire.field(number, b"".join(protowire.varint(v) for v in value))
        elif ftype is FieldType.STRINGS:
            out += b"".join(protowire.field(number, v) for v in value)
        else:
            out += protowire.field(number, value)
    return bytes(out)


def decode(kind: Kind, data: bytes) -> Message:
    """A message of ``kind`` from its protobuf bytes (unknown fields are stepped over)."""
    spec = {number: (name, ftype) for name, (number, ftype) in FIELDS[kind].items()}
    values: dict[str, object] = {}
    for number, wt, raw in protowire.fields(data):
        if number not in spec:
            continue
        name, ftype = spec[number]
        want = WireType.VARINT if ftype in (FieldType.BOOL, FieldType.INT) else WireType.BYTES
        if wt is not want and not (ftype is FieldType.UINTS and wt is WireType.VARINT):
            raise UsageError(f"a Flight SQL {kind.value} is malformed (field {name})")
        if ftype is FieldType.UINTS:
            values.setdefault(name, []).extend(protowire.packed_varints(raw))
        elif ftype is FieldType.STRINGS:
            values.setdefault(name, []).append(_text(raw, kind, name))
        elif ftype is FieldType.STRING:
            values[name] = _text(raw, kind, name)
        elif ftype is FieldType.BOOL:
            values[name] = bool(raw)
        elif ftype is FieldType.INT:
            values[name] = raw - (1 << 64) if raw >= 1 << 63 else raw
        else:
            values[name] = raw
    return Message(kind, values)


def _text(raw: bytes, kind: Kind, name: str) -> str:
    try:
        return raw.decode()
    except UnicodeDecodeError:
        raise UsageError(f"a Flight SQL {kind.value}'s {name} is not UTF-8") from None


def pack(msg: Message) -> bytes:
    """A message wrapped in ``google.protobuf.Any`` (an empty value left out, as protobuf
    leaves it)."""
    value = encode(msg)
    return (protowire.field(_ANY_TYPE_URL, PREFIX + msg.kind.value)
            + (protowire.field(_ANY_VALUE, value) if value else b""))


def unpack(data: bytes) -> Message | None:
    """The Flight SQL message an ``Any`` holds; None where ``data`` is no Flight SQL
    ``Any`` (a plain bamql command). A Flight SQL message bamql does not serve is a
    UsageError naming it."""
    try:
        parts = protowire.fields(data)
    except UsageError:
        return None
    url = [v for n, wt, v in parts if n == _ANY_TYPE_URL and wt is WireType.BYTES]
    if not url or not url[-1].startswith(PREFIX.encode()):
        return None
    name = url[-1][len(PREFIX):].decode(errors="replace")
    kind = _BY_NAME.get(name)
    if kind is None or kind in (Kind.SUBSTRAIT_PLAN, Kind.GET_CROSS_REFERENCE):
        raise UsageError(f"bamql does not serve Flight SQL's {name}")
    value = [v for n, wt, v in parts if n == _ANY_VALUE and wt is WireType.BYTES]
    return decode(kind, value[-1] if value else b"")


# -- catalog answers -------------------------------------------------------------------------
class SqlInfo(Enum):
    """The SqlInfo ids bamql answers (values: their numbers in FlightSql.proto)."""

    SERVER_NAME = 0
    SERVER_VERSION = 1
    SERVER_ARROW_VERSION = 2
    SERVER_READ_ONLY = 3
    SERVER_SQL = 4
    SERVER_SUBSTRAIT = 5
    SERVER_TRANSACTION = 8
    SERVER_CANCEL = 9
    IDENTIFIER_QUOTE_CHAR = 504


#: the dense union of a SqlInfo value: (field name, type) by type code
_INFO_VALUE = [("string_value", pa.string()), ("bool_value", pa.bool_()),
               ("bigint_value", pa.int64()), ("int32_bitmask", pa.int32()),
               ("string_list", pa.list_(pa.string())),
               ("int32_to_int32_list_map", pa.map_(pa.int32(), pa.list_(pa.int32())))]
SQL_INFO_SCHEMA = pa.schema([
    pa.field("info_name", pa.uint32(), nullable=False),
    pa.field("value", pa.dense_union([pa.field(n, t) for n, t in _INFO_VALUE]), nullable=False)])
_CODE = {str: 0, bool: 1, int: 3}  # an int SqlInfo value is an int32 ordinal


def sql_info_table(ids: Iterable[int], version: str) -> pa.Table:
    """The answer to CommandGetSqlInfo: the requested ids bamql knows (all of them when
    ``ids`` is empty), in the order asked."""
    known = {SqlInfo.SERVER_NAME: "bamql", SqlInfo.SERVER_VERSION: version,
             SqlInfo.SERVER_ARROW_VERSION: pa.__version__, SqlInfo.SERVER_READ_ONLY: True,
             SqlInfo.SERVER_SQL: True, SqlInfo.SERVER_SUBSTRAIT: False,
             SqlInfo.SERVER_TRANSACTION: 0,  # SQL_SUPPORTED_TRANSACTION_NONE
             SqlInfo.SERVER_CANCEL: False, SqlInfo.IDENTIFIER_QUOTE_CHAR: '"'}
    wanted = list(ids) or [i.value for i in SqlInfo]
    rows = [(i, known[SqlInfo(i)]) for i in wanted if i in SqlInfo._value2member_map_]
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


def db_schemas_table(msg: Message) -> pa.Table:
    """The answer to CommandGetDbSchemas: the one schema ``""`` where the filters admit it."""
    hit = _no_catalog(msg.get("catalog")) and like(msg.get("db_schema_filter_pattern"), SCHEMA)
    return pa.Table.from_pydict({"catalog_name": [None] * hit, "db_schema_name": [SCHEMA] * hit},
                                schema=DB_SCHEMAS_SCHEMA)


def table_types_table() -> pa.Table:
    """The answer to CommandGetTableTypes."""
    return pa.Table.from_pydict({"table_type": [TABLE_TYPE]}, schema=TABLE_TYPES_SCHEMA)


def tables_table(msg: Message, schemas: Mapping[str, pa.Schema]) -> pa.Table:
    """The answer to CommandGetTables over bamql's tables (name -> Arrow schema), sorted by
    name. A catalog or schema filter that asks for a non-empty name matches none of them."""
    fields = list(_TABLES_FIELDS)
    with_schema = bool(msg.get("include_schema", False))
    if with_schema:
        fields.append(_TABLE_SCHEMA_FIELD)
    types = msg.get("table_types") or [TABLE_TYPE]
    names = [n for n in sorted(schemas)
             if _no_catalog(msg.get("catalog")) and like(msg.get("db_schema_filter_pattern"), SCHEMA)
             and like(msg.get("table_name_filter_pattern"), n) and TABLE_TYPE in types]
    cols: dict[str, list[object]] = {"catalog_name": [None] * len(names),
                                     "db_schema_name": [SCHEMA] * len(names),
                                     "table_name": names, "table_type": [TABLE_TYPE] * len(names)}
    if with_schema:
        cols["table_schema"] = [schemas[n].serialize().to_pybytes() for n in names]
    return pa.Table.from_pydict(cols, schema=pa.schema(fields))


def keys_table(kind: Kind) -> pa.Table:
    """The answer to CommandGetPrimaryKeys, CommandGetExportedKeys or CommandGetImportedKeys:
    bamql's tables declare no keys."""
    return (KEYS_SCHEMA if kind is Kind.GET_PRIMARY_KEYS else FOREIGN_KEYS_SCHEMA).empty_table()
