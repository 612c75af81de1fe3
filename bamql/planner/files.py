"""Files named in FROM (``'trips/*.parquet'``, ``read_parquet([...])``, ``read_csv(...)``,
``read_orc(...)``): found in the SQL and replaced by the names of the tables that serve
them, before the query is translated."""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass

from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from bamql.errors import PlanError
from bamql.planner.params import parse_statements
from bamql.storage.files import FileFormat, looks_like_files

#: table function -> the format it reads
READERS = {"read_parquet": FileFormat.PARQUET, "parquet_scan": FileFormat.PARQUET,
           "read_csv": FileFormat.CSV, "read_csv_auto": FileFormat.CSV,
           "read_orc": FileFormat.ORC}


@dataclass(frozen=True)
class FileRef:
    """Files named in FROM: the paths, directories or globs given, and the format a table
    function asks for (None: by each file's extension)."""

    specs: tuple[str, ...]
    format: FileFormat | None = None


def bind_files(text: str, tables: Collection[str], table_for: Callable[[FileRef], str],
               registered: Callable[[str], str | None] | None = None) -> str:
    """``text`` with each FROM item that names files replaced by ``table_for(ref)``, the
    name of a table that serves them; ``text`` itself when it names no files (or does not
    parse: translation then reports the syntax error).

    ``registered(name)``: the table that serves the in-memory table registered as ``name``
    (None where none is), put in place of that name where it is the query's FROM table (a
    JOIN's table stays a dimension); it keeps the name as its alias."""
    try:
        stmts = parse_statements(text)
    except (ParseError, TokenError):
        return text
    found = False
    for s in stmts:
        for t in list(s.find_all(exp.Table)) if s is not None else ():
            if isinstance(t.this, exp.Identifier) and not t.args.get("db") \
                    and t.name in _ctes_in_scope(t):
                continue  # a CTE's name shadows the registered table or file of that name
            if registered is not None and isinstance(t.parent, exp.From) and not t.args.get("db") \
                    and isinstance(t.this, exp.Identifier) and t.name not in tables \
                    and t.find_ancestor(exp.Subquery) is None:  # IN (SELECT ... FROM dim)
                served = registered(t.name)
                if served is not None:
                    if not t.alias:
                        t.set("alias", exp.TableAlias(this=exp.to_identifier(t.name)))
                    t.set("this", exp.to_identifier(served))
                    found = True
                    continue
            ref = file_ref(t, tables)
            if ref is not None:
                t.set("this", exp.to_identifier(table_for(ref)))
                for part in ("db", "catalog"):
                    t.set(part, None)
                found = True
    if not found:
        return text
    return ";\n".join(s.sql(dialect="duckdb") for s in stmts if s is not None)


def _ctes_in_scope(t: exp.Table) -> set[str]:
    """The names of the CTEs that ``t`` may read: in a CTE's body those defined before it,
    in the query that follows WITH all of them."""
    names: set[str] = set()
    node, child = t.parent, t
    while node is not None:
        if isinstance(node, exp.With):
            ctes = list(node.expressions)
            before = ctes.index(child) if child in ctes else len(ctes)
            names.update(c.alias_or_name for c in ctes[:before])
        elif isinstance(node, exp.Select | exp.Union) and node.args.get("with_") is not None \
                and child is not node.args["with_"]:
            names.update(c.alias_or_name for c in node.args["with_"].expressions)
        node, child = node.parent, node
    return names


def file_ref(t: exp.Table, tables: Collection[str]) -> FileRef | None:
    """The files a FROM item names, or None where it names a table."""
    node = t.this
    if isinstance(node, exp.Identifier):
        # DuckDB reads 'x.parquet' and "x.parquet" alike: a name that is no table and reads
        # as a path is files
        if t.args.get("db") or node.name in tables or not looks_like_files(node.name):
            return None
        return FileRef((node.name,))
    if isinstance(node, exp.Anonymous):
        fn = str(node.this).lower()
        args = list(node.expressions)
    elif isinstance(node, exp.ReadParquet):
        fn, args = "read_parquet", list(node.expressions)
    elif isinstance(node, exp.ReadCSV):
        fn, args = "read_csv", [node.this, *node.expressions]
    else:
        return None
    if fn not in READERS:
        raise PlanError(f"table function {fn}() is not supported (files: read_parquet, "
                        "read_csv, read_orc, or a quoted path)")
    if not args or any(a is None for a in args):
        raise PlanError(f"{fn}() needs a file, a directory, a glob or a list of them")
    first, options = args[0], args[1:]
    if options:
        raise PlanError(f"{fn}() takes no options in bamql (got "
                        f"{options[0].sql(dialect='duckdb')}); give the files alone")
    items = first.expressions if isinstance(first, exp.Array) else [first]
    if not items or not all(isinstance(i, exp.Literal) and i.is_string for i in items):
        raise PlanError(f"{fn}() takes a quoted path or a list of quoted paths")
    return FileRef(tuple(i.this for i in items), READERS[fn])
