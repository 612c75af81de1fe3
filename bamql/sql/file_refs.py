"""Files named in FROM (``'trips/*.parquet'``, ``read_parquet([...])``, ``read_csv(...)``,
``read_orc(...)``): found in the SQL and replaced by the names of the tables that serve
them, before the query is translated."""

from __future__ import annotations

import re
import typing
from collections.abc import Callable, Collection
from dataclasses import dataclass
from decimal import Decimal

from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from bamql.errors import PlanError
from bamql.sql.params import parse_statements
from bamql.storage.fileoptions import CsvOptions, FileOptions, arrow_type
from bamql.storage.files import FileFormat, looks_like_files
from bamql.storage.hive import Cmp, HiveMode, KeyFilter

if typing.TYPE_CHECKING:
    import pyarrow as pa

#: table function -> the format it reads
READERS = {"read_parquet": FileFormat.PARQUET, "parquet_scan": FileFormat.PARQUET,
           "read_csv": FileFormat.CSV, "read_csv_auto": FileFormat.CSV,
           "read_orc": FileFormat.ORC}


@dataclass(frozen=True)
class FileRef:
    """Files named in FROM: the paths, directories or globs given, the format a table
    function asks for (None: by each file's extension), its ``hive_partitioning`` option,
    the conjuncts of the query's WHERE that may prune partitions and row groups, the
    names the statement mentions, in lower case (a superset of the columns it reads of
    the files; None: every column, for ``SELECT *``), and its other options (None:
    none given)."""

    specs: tuple[str, ...]
    format: FileFormat | None = None
    hive: HiveMode = HiveMode.AUTO
    filters: tuple[KeyFilter, ...] = ()
    names: frozenset[str] | None = None
    options: FileOptions | None = None


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
                alias = t.args.get("alias")
                if alias is not None and alias.columns:
                    raise PlanError(f"column names after the alias {alias.name} of files are "
                                    "not supported; alias the columns in SELECT")
                ref = FileRef(ref.specs, ref.format, ref.hive, partition_filters(t),
                              mentioned(s), ref.options)
                t.set("this", exp.to_identifier(table_for(ref)))
                for part in ("db", "catalog"):
                    t.set(part, None)
                found = True
    if not found:
        return text
    for s in stmts:
        for wg in list(s.find_all(exp.WithinGroup)) if s is not None else ():
            _as_quantile(wg)
    return ";\n".join(s.sql(dialect="duckdb") for s in stmts if s is not None)


def _as_quantile(node: exp.WithinGroup) -> None:
    """``percentile_cont(q) WITHIN GROUP (ORDER BY x)`` (or ``_disc``) replaced by its
    ``quantile_cont(x, q)``: sqlglot writes the former back as a text it does not read the
    same way. Other shapes (several keys, other functions) stay for the translator to refuse."""
    inner, order = node.this, node.expression
    if isinstance(inner, exp.PercentileCont | exp.PercentileDisc) and isinstance(order, exp.Order) \
            and len(order.expressions) == 1:
        if order.expressions[0].args.get("desc"):
            raise PlanError("WITHIN GROUP (ORDER BY ... DESC) is not supported: use 1 - q")
        node.replace(type(inner)(this=order.expressions[0].this, expression=inner.this))


def mentioned(stmt: exp.Expression) -> frozenset[str] | None:
    """Every name ``stmt`` mentions (columns, aliases, tables, ``USING`` keys), in lower
    case: a superset of the columns it reads of any table; None where a star (``SELECT *``,
    ``t.*``, ``COLUMNS(...)``) or a NATURAL join reads columns it does not name."""
    for node in stmt.walk():
        if isinstance(node, exp.Star) and not isinstance(node.parent, exp.Count):
            return None
        if isinstance(node, exp.Columns) or (isinstance(node, exp.Anonymous)
                                             and str(node.this).lower() == "columns"):
            return None
        if isinstance(node, exp.Join) and "natural" in (node.method or "").lower():
            return None
    return frozenset(i.name.casefold() for i in stmt.find_all(exp.Identifier, exp.Var))


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
    hive, opts = bind_options(fn, options)
    items = first.expressions if isinstance(first, exp.Array) else [first]
    if not items or not all(isinstance(i, exp.Literal) and i.is_string for i in items):
        raise PlanError(f"{fn}() takes a quoted path or a list of quoted paths")
    return FileRef(tuple(i.this for i in items), READERS[fn], hive, options=opts)


#: The options each reader takes, as DuckDB names them (aliases: the same option)
_COMMON = ("filename", "union_by_name", "hive_partitioning")
OPTIONS = {
    FileFormat.CSV: ("header", "delim", "sep", "delimiter", "quote", "escape", "skip",
                     "nullstr", "null", "columns", "types", "dtypes", "column_types",
                     "auto_detect", "all_varchar", "dateformat", "timestampformat",
                     *_COMMON),
    FileFormat.PARQUET: ("binary_as_string", *_COMMON),
    FileFormat.ORC: _COMMON,
}


def bind_options(fn: str, options: list[exp.Expression]) -> tuple[HiveMode, FileOptions | None]:
    """The ``hive_partitioning`` mode and the other options of table function ``fn``'s
    ``name = value`` arguments (``storage.fileoptions``); options it does not take, a value
    of the wrong kind or an option given twice are one-line errors naming them."""
    takes = OPTIONS[READERS[fn]]
    given: dict[str, exp.Expression] = {}
    unknown = []
    for o in options:
        if not (isinstance(o, exp.EQ | exp.PropertyEQ)
                and isinstance(o.this, exp.Column | exp.Identifier | exp.Var)):
            raise PlanError(f"{fn}() takes its options as name = value (got "
                            f"{o.sql(dialect='duckdb')})")
        name = o.this.name.lower()
        if name not in takes:
            unknown.append(o.this.name)
        elif name in given:
            raise PlanError(f"{fn}(): option {name} is given twice")
        given[name] = o.expression
    if unknown:
        raise PlanError(f"{fn}() does not take the option{'s' if len(unknown) > 1 else ''} "
                        f"{', '.join(unknown)} (it takes: {', '.join(takes)})")
    b = _Binder(fn, given)
    hive = HiveMode.AUTO
    if "hive_partitioning" in given:
        hive = HiveMode.ON if b.flag("hive_partitioning") else HiveMode.OFF
    name = None
    if "filename" in given:
        v = given["filename"]
        name = b.text("filename") if isinstance(v, exp.Literal) and v.is_string else \
            ("filename" if b.flag("filename") else None)
    if "dateformat" in given:
        raise PlanError(f"{fn}(): dateformat (a DATE column's format) is not supported: bamql "
                        "reads DATEs written YYYY-MM-DD; read the column as text (or as a "
                        "timestamp with timestampformat)")
    csv = CsvOptions()
    if READERS[fn] == FileFormat.CSV:
        csv = _csv_options(fn, b)
    opts = FileOptions(csv, name, b.flag("union_by_name", False),
                       b.flag("binary_as_string", False))
    return hive, None if opts == FileOptions() else opts


def _csv_options(fn: str, b: _Binder) -> CsvOptions:
    """``read_csv``'s options other than those every reader takes."""
    delim = b.char("delim", "sep", "delimiter")
    quote, escape = b.char("quote", empty=True), b.char("escape", empty=True)
    skip = b.integer("skip")
    nulls = b.texts("nullstr", "null")
    columns = b.typed("columns")
    auto = b.flag("auto_detect", True)
    if not auto and columns is None:
        raise PlanError(f"{fn}(): auto_detect = false needs the columns option (every "
                        "column's name and type, as DuckDB)")
    types, positional = (), ()
    key = b.first("types", "dtypes", "column_types")
    if key is not None:
        v = b.given[key]
        if isinstance(v, exp.Array):
            positional = tuple(_arrow_type(fn, key, x) for x in v.expressions)
        else:
            types = b.typed(key) or ()
    return CsvOptions(b.flag("header", None), delim, quote, escape, skip or 0, nulls, columns,
                      types, positional, auto, b.flag("all_varchar", False),
                      b.text("timestampformat"))


class _Binder:
    """The values of one table function's options, each checked for its kind."""

    def __init__(self, fn: str, given: dict[str, exp.Expression]) -> None:
        self.fn, self.given = fn, given

    def first(self, *names: str) -> str | None:
        """The one of ``names`` (aliases of one option) that was given; two is an error."""
        hit = [n for n in names if n in self.given]
        if len(hit) > 1:
            raise PlanError(f"{self.fn}(): options {' and '.join(hit)} are the same option; "
                            "give one")
        return hit[0] if hit else None

    def _bad(self, name: str, what: str) -> PlanError:
        return PlanError(f"{self.fn}(): {name} takes {what} (got "
                         f"{self.given[name].sql(dialect='duckdb')})")

    def flag(self, name: str, default: bool | None = None) -> bool | None:
        if name not in self.given:
            return default
        v = self.given[name]
        if isinstance(v, exp.Boolean):
            return bool(v.this)
        if isinstance(v, exp.Literal) and not v.is_string and v.this in ("0", "1"):
            return v.this == "1"
        raise self._bad(name, "true or false")

    def text(self, name: str) -> str | None:
        if name not in self.given:
            return None
        v = self.given[name]
        if not (isinstance(v, exp.Literal) and v.is_string):
            raise self._bad(name, "a quoted text")
        return v.this

    def char(self, *names: str, empty: bool = False) -> str | None:
        """A one-character option (``'\\t'`` is a tab, as in DuckDB; ``''``: none, where
        ``empty``)."""
        name = self.first(*names)
        if name is None:
            return None
        v = self.text(name)
        v = {"\\t": "\t", "\\n": "\n", "\\r": "\r"}.get(v, v)
        if len(v) > 1 or (not v and not empty) or v in ("\n", "\r"):
            raise PlanError(f"{self.fn}(): {name} takes one character in bamql (got "
                            f"{self.given[name].sql(dialect='duckdb')})")
        return v

    def integer(self, name: str) -> int | None:
        if name not in self.given:
            return None
        v = self.given[name]
        if not (isinstance(v, exp.Literal) and not v.is_string and v.this.isdigit()):
            raise self._bad(name, "a whole number of 0 or more")
        return int(v.this)

    def texts(self, *names: str) -> tuple[str, ...] | None:
        """A quoted text or a list of them."""
        name = self.first(*names)
        if name is None:
            return None
        v = self.given[name]
        items = v.expressions if isinstance(v, exp.Array) else [v]
        if not all(isinstance(x, exp.Literal) and x.is_string for x in items):
            raise self._bad(name, "a quoted text or a list of them")
        return tuple(x.this for x in items)

    def typed(self, name: str) -> tuple[tuple[str, pa.DataType], ...] | None:
        """A struct of column name: SQL type (``{'a': 'INTEGER', 'b': 'VARCHAR'}``)."""
        if name not in self.given:
            return None
        v = self.given[name]
        if not isinstance(v, exp.Struct) or not v.expressions:
            raise self._bad(name, "a struct of column names and types ({'a': 'INTEGER'})")
        out = []
        for x in v.expressions:
            if not isinstance(x, exp.PropertyEQ | exp.EQ | exp.Slice):
                raise self._bad(name, "a struct of column names and types ({'a': 'INTEGER'})")
            col = x.this.name if isinstance(x.this, exp.Identifier | exp.Column) \
                else x.this.this if isinstance(x.this, exp.Literal) else None
            if not isinstance(col, str) or any(col == c for c, _ in out):
                raise self._bad(name, "a struct of distinct column names and types")
            out.append((col, _arrow_type(self.fn, name, x.expression)))
        return tuple(out)


def _arrow_type(fn: str, option: str, v: exp.Expression) -> pa.DataType:
    """The Arrow type of a SQL type named in an option (``'INTEGER'``, ``'DECIMAL(9,2)'``)."""
    text = v.this if isinstance(v, exp.Literal) and v.is_string else None
    try:
        dt = exp.DataType.build(text, dialect="duckdb") if text else None
    except (ParseError, TokenError, ValueError):
        dt = None
    if dt is None:
        raise PlanError(f"{fn}(): {option} names a type that is not one "
                        f"({v.sql(dialect='duckdb')})")
    params = []
    for p in dt.expressions:
        n = p.this.this if isinstance(p, exp.DataTypeParam) and isinstance(p.this, exp.Literal) \
            else None
        if not (isinstance(n, str) and n.isdigit()):
            raise PlanError(f"{fn}(): {option}: {text} is no type bamql reads")
        params.append(int(n))
    t = arrow_type(dt.this.name, tuple(params))
    if t is None:
        raise PlanError(f"{fn}(): {option}: bamql does not read columns of type {text}")
    return t


_CMPS = {exp.EQ: Cmp.EQ, exp.NEQ: Cmp.NE, exp.LT: Cmp.LT, exp.LTE: Cmp.LE, exp.GT: Cmp.GT,
         exp.GTE: Cmp.GE}
_FLIP = {Cmp.EQ: Cmp.EQ, Cmp.NE: Cmp.NE, Cmp.LT: Cmp.GT, Cmp.LE: Cmp.GE, Cmp.GT: Cmp.LT,
         Cmp.GE: Cmp.LE}


def partition_filters(t: exp.Table) -> tuple[KeyFilter, ...]:
    """The conjuncts of the WHERE of the SELECT whose only FROM item is ``t`` that compare
    one of its columns with literals (``year = 2019``, ``month IN ('03', '04')``,
    ``k IS NULL``, ``x BETWEEN 1 AND 3``): what can prune its partitions. Anything else
    prunes nothing; the WHERE itself still filters every row read."""
    sel = t.parent.parent if isinstance(t.parent, exp.From) else None
    if not isinstance(sel, exp.Select) or sel.args.get("joins") or sel.args.get("where") is None:
        return ()
    aliases = {e.alias.lower() for e in sel.expressions if isinstance(e, exp.Alias)}
    names = {t.alias_or_name.lower(), t.name.lower()} if isinstance(t.this, exp.Identifier) \
        else {t.alias.lower()} if t.alias else set()
    out: list[KeyFilter] = []
    for c in sel.args["where"].this.flatten() if isinstance(sel.args["where"].this, exp.And) \
            else [sel.args["where"].this]:
        col = _column(c)
        if col is None or col.name.lower() in aliases:
            continue  # a select alias of the same name would make the column ambiguous
        if col.table and col.table.lower() not in names:
            continue
        out.extend(_key_filters(c))
    return tuple(out)


def _column(c: exp.Expression) -> exp.Column | None:
    cols = list(c.find_all(exp.Column))
    return cols[0] if len(cols) == 1 else None


def _key_filters(c: exp.Expression) -> list[KeyFilter]:
    """``c`` as filters of one column against literals (none where it is not one)."""
    while isinstance(c, exp.Paren):
        c = c.this
    if type(c) in _CMPS:
        op = _CMPS[type(c)]
        left, right = c.this, c.expression
        if isinstance(right, exp.Column) and not isinstance(left, exp.Column):
            left, right, op = right, left, _FLIP[op]
        v = _literal(right)
        if isinstance(left, exp.Column) and v is not _NOT:
            return [KeyFilter(left.name, op, (v,))]
    elif isinstance(c, exp.In) and isinstance(c.this, exp.Column) and not c.args.get("query") \
            and not c.args.get("unnest") and c.expressions:
        vals = [_literal(e) for e in c.expressions]
        if all(v is not _NOT for v in vals):
            return [KeyFilter(c.this.name, Cmp.IN, tuple(vals))]
    elif isinstance(c, exp.Between) and isinstance(c.this, exp.Column):
        lo, hi = _literal(c.args.get("low")), _literal(c.args.get("high"))
        if lo is not _NOT and hi is not _NOT and not c.args.get("symmetric"):
            return [KeyFilter(c.this.name, Cmp.GE, (lo,)), KeyFilter(c.this.name, Cmp.LE, (hi,))]
    elif isinstance(c, exp.Is) and isinstance(c.this, exp.Column) \
            and isinstance(c.expression, exp.Null):
        return [KeyFilter(c.this.name, Cmp.IS_NULL)]
    elif isinstance(c, exp.Not) and isinstance(c.this, exp.Is) \
            and isinstance(c.this.this, exp.Column) and isinstance(c.this.expression, exp.Null):
        return [KeyFilter(c.this.this.name, Cmp.NOT_NULL)]
    return []


_NOT = object()  # not a literal that a filter can use
_DECIMAL_DIGITS = 38  # the most digits (leading zeros included) of a DECIMAL literal


def _literal(e: exp.Expression | None) -> int | str | Decimal | None | object:
    """A string, integer or decimal (``2.5``: a ``Decimal``) literal's value (None for
    NULL); ``_NOT`` for anything else (exponents, decimals of more than 38 digits, typed
    literals, expressions)."""
    neg = False
    while isinstance(e, exp.Paren):
        e = e.this
    if isinstance(e, exp.Neg):
        neg, e = True, e.this
    if isinstance(e, exp.Null) and not neg:
        return None
    if not isinstance(e, exp.Literal):
        return _NOT
    if e.is_string:
        return _NOT if neg else e.this
    text = e.this
    if re.fullmatch(r"[0-9]+\.[0-9]*|\.[0-9]+", text):
        if sum(c.isdigit() for c in text) > _DECIMAL_DIGITS:
            return _NOT  # DuckDB reads it as a DOUBLE, which compares in floating point
        return Decimal(text).copy_negate() if neg else Decimal(text)  # -x rounds to 28 digits
    if not re.fullmatch(r"[0-9]+", text):
        return _NOT
    return -int(text) if neg else int(text)
