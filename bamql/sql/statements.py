"""Statements about the catalog rather than rows: ``SHOW TABLES``, ``DESCRIBE <table>``
(also ``DESC``, ``SHOW <table>`` and ``SHOW COLUMNS FROM <table>``) and ``DESCRIBE
<query>``. Recognised here from the text (sqlglot parses only some of these forms);
``exec.describe`` answers them with DuckDB's columns."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

from bamql.errors import PlanError


class Statement(Enum):
    """The catalog statements bamql answers."""

    SHOW_TABLES = "SHOW TABLES"
    SHOW_ALL_TABLES = "SHOW ALL TABLES"
    DESCRIBE_TABLE = "DESCRIBE"
    DESCRIBE_QUERY = "DESCRIBE SELECT"


@dataclass(frozen=True)
class CatalogQuery:
    """One catalog statement: ``table`` for DESCRIBE of a table, ``query`` (SQL text) for
    DESCRIBE of a query."""

    what: Statement
    table: str = ""
    query: str = ""


_HEAD = re.compile(r"^\s*(describe|desc|show)\b\s*", re.IGNORECASE)
_NAME = r'(?:"((?:[^"]|"")+)"|([A-Za-z_][A-Za-z0-9_$]*))'
_TABLE = re.compile(r"^(?:columns\s+from\s+)?" + _NAME + r"\s*;?\s*$", re.IGNORECASE | re.DOTALL)
_QUERY = re.compile(r"^(select|with|from)\b", re.IGNORECASE)


def catalog_query(text: str) -> CatalogQuery | None:
    """The catalog statement ``text`` is, or None where it is none (a query, EXPLAIN, ...);
    a DESCRIBE or SHOW bamql does not answer is an error."""
    m = _HEAD.match(text)
    if m is None:
        return None
    verb, rest = m.group(1).upper(), text[m.end():].strip()
    if verb == "SHOW" and re.fullmatch(r"tables\s*;?", rest, re.IGNORECASE):
        return CatalogQuery(Statement.SHOW_TABLES)
    if verb == "SHOW" and re.fullmatch(r"all\s+tables\s*;?", rest, re.IGNORECASE):
        return CatalogQuery(Statement.SHOW_ALL_TABLES)
    if verb != "SHOW" and _QUERY.match(rest):
        return CatalogQuery(Statement.DESCRIBE_QUERY, query=rest)
    t = _TABLE.match(rest)
    if t is not None and (verb != "SHOW" or not rest.lower().startswith(("all", "tables"))):
        return CatalogQuery(Statement.DESCRIBE_TABLE, table=(t[1] or "").replace('""', '"') or t[2])
    first = rest.split(None, 1)[0] if rest else ""
    raise PlanError(f"{verb} {first}{' ...' if first else ''} is not supported (bamql answers "
                    "SHOW [ALL] TABLES, DESCRIBE <table>, SHOW COLUMNS FROM <table> and "
                    "DESCRIBE <query>)".replace("  ", " "))
