"""What a bamql server and its clients say to each other over Arrow Flight.

A query travels as a *command*: JSON ``{"sql": text, "params": ...}``, the bytes of a
Flight descriptor's command or of a ticket. Parameters are JSON values, with the types JSON
lacks as one-key objects (``{"$decimal": "2.5"}``, ``{"$timestamp": iso}``, ``{"$date":
iso}``), so that a value reaches ``Session.sql`` as the type it was sent as.

An answer is an Arrow table whose schema metadata carries the rest of a ``Result``: the
plan's text, whether it is an EXPLAIN, and the I/O statistics (JSON). A bamql error is a
Flight error whose message is ``Class: message`` and whose ``extra_info`` is JSON naming
the class, so that a client raises the same class with the same one-line message.
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from bamql import errors
from bamql.config import AccessPath, Role
from bamql.errors import BamqlError, UsageError
from bamql.exec.resultset import Result
from bamql.storage.iostats import ColumnIO, QueryStats

if TYPE_CHECKING:  # a client imports no planner (sqlglot)
    from bamql.sql.params import Params

#: schema metadata keys of an answer
PLAN, EXPLAIN, STATS = b"bamql.plan", b"bamql.explain", b"bamql.stats"
#: the Flight actions a bamql server takes, with their descriptions
ACTIONS = {
    "health": "the server's state: JSON {status, path, device, backend, tables, version}",
    "tables": "the tables: JSON [{name, rows, page_size}]",
    "schema": "a table's Arrow schema (IPC bytes); the body is the table's name",
    "explain": "a query's EXPLAIN text; the body is a command (JSON {sql, params})",
}
_TYPES = "int, float, Decimal, str, bool, None, datetime, date (and a list for IN ?)"


# -- commands --------------------------------------------------------------------------------
def _value(v: object, label: str) -> object:
    """One parameter value as JSON."""
    if isinstance(v, np.generic):
        v = v.item()
    if v is None or isinstance(v, bool | int | float | str):
        return v
    if isinstance(v, decimal.Decimal):
        return {"$decimal": str(v)}
    if isinstance(v, datetime.datetime):
        return {"$timestamp": v.isoformat()}
    if isinstance(v, datetime.date):
        return {"$date": v.isoformat()}
    if isinstance(v, list | tuple):
        return [_value(x, label) for x in v]
    raise UsageError(f"parameter {label} is a {type(v).__name__}; bamql binds {_TYPES}")


def _unvalue(v: object) -> object:
    """A parameter value from JSON."""
    if isinstance(v, list):
        return [_unvalue(x) for x in v]
    if isinstance(v, dict):
        if len(v) == 1:
            (tag, text), = v.items()
            conv = {"$decimal": decimal.Decimal, "$timestamp": datetime.datetime.fromisoformat,
                    "$date": datetime.date.fromisoformat}.get(tag)
            if conv is not None and isinstance(text, str):
                try:
                    return conv(text)
                except (ValueError, decimal.InvalidOperation):
                    pass
        raise UsageError(f"a parameter value {json.dumps(v)} is no value bamql binds ({_TYPES})")
    return v


def encode_command(text: str, params: Params = None) -> bytes:
    """A query and its parameters as a command (JSON bytes)."""
    if not isinstance(text, str):
        raise UsageError(f"a query is SQL text (str), not {type(text).__name__}")
    if params is None:
        p = None
    elif isinstance(params, Mapping):
        p = {str(k): _value(v, f"${k}") for k, v in params.items()}
    elif isinstance(params, Sequence) and not isinstance(params, str | bytes):
        p = [_value(v, f"${i}") for i, v in enumerate(params, 1)]
    else:
        raise UsageError(f"query parameters are a list or tuple (for ? and $1) or a dict (for "
                         f"$name), not {type(params).__name__}")
    return json.dumps({"sql": text, "params": p}).encode()


def decode_command(data: bytes) -> tuple[str, Params]:
    """A command's query text and parameters."""
    try:
        cmd = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        raise UsageError("a command is JSON {\"sql\": text, \"params\": [...] or {...}}") from None
    if not isinstance(cmd, dict) or not isinstance(cmd.get("sql"), str):
        raise UsageError("a command is JSON {\"sql\": text, \"params\": [...] or {...}}")
    p = cmd.get("params")
    if isinstance(p, list):
        p = [_unvalue(v) for v in p]
    elif isinstance(p, dict):
        p = {k: _unvalue(v) for k, v in p.items()}
    elif p is not None:
        raise UsageError("a command's params are a JSON list (for ? and $1) or object (for $name)")
    return cmd["sql"], p


# -- answers ---------------------------------------------------------------------------------
def _stats_json(st: QueryStats) -> bytes:
    d = {f.name: getattr(st, f.name) for f in dataclasses.fields(st)
         if f.name not in ("_lock", "columns")}
    d["columns"] = [{**dataclasses.asdict(c), "role": c.role.value, "path": c.path.value}
                    for c in st.columns.values()]
    return json.dumps(d).encode()


def _stats(data: bytes) -> QueryStats | None:
    try:
        d = json.loads(data)
        cols = [ColumnIO(**{**c, "role": Role(c["role"]), "path": AccessPath(c["path"])})
                for c in d.pop("columns")]
        return QueryStats(**d, columns={c.column: c for c in cols})
    except (ValueError, TypeError, KeyError):  # statistics are optional: a newer server's
        return None


def result_table(res: Result) -> pa.Table:
    """A Result as one Arrow table (its plan and statistics in the schema's metadata)."""
    meta = dict(res.table.schema.metadata or {})
    meta[PLAN] = res.plan_text.encode()
    meta[EXPLAIN] = b"1" if res.is_explain else b"0"
    if res.stats is not None:
        meta[STATS] = _stats_json(res.stats)
    return res.table.replace_schema_metadata(meta)


def table_result(t: pa.Table) -> Result:
    """The Result an answer's table holds (statistics None where it carries none)."""
    meta = dict(t.schema.metadata or {})
    plan = meta.pop(PLAN, b"").decode()
    is_explain = meta.pop(EXPLAIN, b"0") == b"1"
    stats = meta.pop(STATS, None)
    return Result(t.replace_schema_metadata(meta or None), _stats(stats) if stats else None, plan,
                  is_explain=is_explain)


# -- errors ----------------------------------------------------------------------------------
def error_info(e: BamqlError) -> tuple[str, bytes]:
    """A bamql error as a Flight error's message and ``extra_info``."""
    name = type(e).__name__ if hasattr(errors, type(e).__name__) else "BamqlError"
    return f"{name}: {e}", json.dumps({"class": name, "message": str(e)}).encode()


def bamql_error(extra_info: bytes | None) -> BamqlError | None:
    """The bamql error a Flight error's ``extra_info`` names, or None."""
    try:
        d = json.loads(extra_info or b"")
        cls = getattr(errors, d["class"])
        msg = d["message"]
    except (ValueError, TypeError, KeyError, AttributeError):
        return None
    if isinstance(cls, type) and issubclass(cls, BamqlError) and isinstance(msg, str):
        return cls(msg)
    return None
