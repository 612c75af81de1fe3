"""SQL types as the user sees them, whatever the storage encoding."""

from __future__ import annotations

from enum import Enum

import pyarrow as pa

from bamql.errors import PlanError


class SqlType(Enum):
    """The SQL type of a value (DuckDB's names)."""

    BOOLEAN = "BOOLEAN"
    INTEGER = "INTEGER"
    BIGINT = "BIGINT"
    DOUBLE = "DOUBLE"
    DECIMAL = "DECIMAL"
    VARCHAR = "VARCHAR"
    DATE = "DATE"
    TIMESTAMP = "TIMESTAMP"
    TIMESTAMPTZ = "TIMESTAMP WITH TIME ZONE"
    INTERVAL = "INTERVAL"
    LIST = "LIST"
    NULL = "NULL"

    @classmethod
    def of_arrow(cls, t: pa.DataType) -> SqlType:
        """The SQL type of an Arrow type."""
        if pa.types.is_null(t):
            return cls.NULL
        if pa.types.is_boolean(t):
            return cls.BOOLEAN
        if pa.types.is_integer(t):
            return cls.BIGINT if t.bit_width == 64 else cls.INTEGER
        if pa.types.is_floating(t):
            return cls.DOUBLE
        if pa.types.is_decimal(t):
            return cls.DECIMAL
        if pa.types.is_string(t) or pa.types.is_large_string(t):
            return cls.VARCHAR
        if pa.types.is_date(t):
            return cls.DATE
        if pa.types.is_timestamp(t):
            return cls.TIMESTAMPTZ if t.tz else cls.TIMESTAMP
        if pa.types.is_duration(t) or pa.types.is_interval(t):
            return cls.INTERVAL
        if pa.types.is_list(t) or pa.types.is_large_list(t):
            return cls.LIST
        if pa.types.is_dictionary(t):
            return cls.of_arrow(t.value_type)
        raise PlanError(f"values of Arrow type {t} are not supported in SQL expressions")

    @property
    def numeric(self) -> bool:
        return self in (SqlType.INTEGER, SqlType.BIGINT, SqlType.DOUBLE, SqlType.DECIMAL)


#: Arrow types of the SQL types a CAST names (sqlglot's type names).
CAST_TYPES: dict[str, pa.DataType] = {
    "BOOLEAN": pa.bool_(), "TINYINT": pa.int8(), "SMALLINT": pa.int16(), "INT": pa.int32(),
    "BIGINT": pa.int64(), "UTINYINT": pa.uint8(), "USMALLINT": pa.uint16(), "UINT": pa.uint32(),
    "UBIGINT": pa.uint64(), "FLOAT": pa.float32(), "DOUBLE": pa.float64(),
    "VARCHAR": pa.string(), "TEXT": pa.string(), "CHAR": pa.string(), "DATE": pa.date32(),
    "TIMESTAMP": pa.timestamp("us"), "DATETIME": pa.timestamp("us"),
    "TIMESTAMPNTZ": pa.timestamp("us"),
    "TIMESTAMPTZ": pa.timestamp("us", tz="UTC"),
}
