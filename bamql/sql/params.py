"""Query parameters: the placeholders ``?``, ``$1`` and ``$name`` (or ``:name``) of a query
bound to values, as DuckDB binds them.

A value becomes a typed SQL constant node (a number, a string, NULL, a boolean, a CAST of a
timestamp) that replaces its placeholder in the parsed query; the query then goes on as SQL
text generated from that tree, which sqlglot quotes, and which must parse back into the same
tree. A value therefore never becomes SQL syntax: ``"x' OR 1=1 --"`` stays one string.

``?`` placeholders are numbered in the order they appear in the text (taken from the
tokenizer, which steps over strings and comments), so that ``?`` and ``$1`` share one path.
"""

from __future__ import annotations

import datetime
import decimal
import functools
import math
import sys
from collections.abc import Mapping, Sequence

import numpy as np
import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import TokenType

from bamql.errors import PlanError, UsageError
from bamql.sql.translate import _RECURSION_LIMIT

#: What ``Session.sql`` takes as parameters: values by position (``?``, ``$1``) or by name
#: (``$name``, ``:name``).
Params = Sequence[object] | Mapping[str, object] | None

_TYPES = "int, float, Decimal, str, bool, None, datetime, date (and a list for IN ?)"


def bind(sql: str, params: Params) -> str:
    """``sql`` with its placeholders replaced by ``params``' values as SQL constants.

    Parameters
    ----------
    sql
        One query, without a leading EXPLAIN.
    params
        A list or tuple for ``?`` or ``$1``-style placeholders, a mapping for ``$name`` or
        ``:name``, or None for a query without placeholders.

    Returns
    -------
    str
        The query to translate: ``sql`` itself when ``params`` is None, else SQL text
        generated from the bound tree. Text that does not parse is returned as it is, for
        the translator to report.

    Raises
    ------
    UsageError
        Placeholders without parameters, a count or a name that does not match, or a
        value of a type bamql does not bind.
    """
    if params is None:
        if _has_placeholders(sql):
            raise UsageError("the query has parameter placeholders (?, $1, $name): pass their "
                             "values, sql(text, params)")
        return sql
    named = isinstance(params, Mapping)
    if not named and (isinstance(params, str | bytes) or not isinstance(params, Sequence)):
        raise UsageError(f"query parameters are a list or tuple (for ? and $1) or a dict (for "
                         f"$name), not {type(params).__name__}")
    tree = _parse(sql)
    if tree is None:
        return sql
    qmark = any(h.this is None for h in tree.find_all(exp.Placeholder))
    if qmark:
        tree = _number_qmarks(sql, tree)
    holders = list(tree.find_all(exp.Placeholder))
    names = {str(h.this) for h in holders}
    numbered = {n for n in names if n.isdigit()}
    if numbered and numbered != names:
        raise UsageError("the query mixes numbered ($1 or ?) and named ($name) placeholders")
    values = _by_name(params, names, named, qmark)
    for h in holders:
        _replace(h, values[str(h.this)], str(h.this))
    text = tree.sql(dialect="duckdb")
    if _parse(text) != tree:  # a value must stay a value: refuse rather than guess
        raise UsageError("the bound parameters do not make a query bamql can read back; "
                         "write the values as SQL constants")
    return text


def _by_name(params: Params, names: set[str], named: bool, qmark: bool) -> dict[str, object]:
    """Each placeholder name's value, after checking that every parameter given is used
    and every placeholder has a value (as DuckDB checks)."""
    if named:
        if any(n.isdigit() for n in names):
            raise UsageError("a dict of parameters binds $name placeholders; pass a list for "
                             "? or $1")
        bad = [k for k in params if not isinstance(k, str)]
        if bad:
            raise UsageError(f"parameter names are strings, not {type(bad[0]).__name__}")
        missing = sorted(names - set(params))
        if missing:
            raise UsageError(f"no value for parameter ${missing[0]}")
        extra = sorted(set(params) - names)
        if extra:
            raise UsageError(f"parameter {extra[0]!r} is not in the query")
        return {n: params[n] for n in names}
    if names and not all(n.isdigit() for n in names):
        raise UsageError("$name placeholders take a dict of parameters, not a "
                         f"{type(params).__name__}")
    want = max((int(n) for n in names), default=0)
    if not want and params:
        raise UsageError(f"the query has no placeholders, got {len(params)} parameter"
                         f"{'s' * (len(params) != 1)}")
    if qmark and len(params) != want:
        raise UsageError(f"the query has {want} placeholder{'s' * (want != 1)} (?), "
                         f"got {len(params)} parameter{'s' * (len(params) != 1)}")
    missing = [i for i in range(1, want + 1) if str(i) not in names]
    if len(params) != want or missing:
        unused = missing[0] if missing else want + 1
        raise UsageError(f"the query's placeholders are $1 to ${want}, got {len(params)} "
                         f"parameter{'s' * (len(params) != 1)}"
                         + (f" (${unused} is not in the query)" if missing else ""))
    return {str(i + 1): v for i, v in enumerate(params)}


def _replace(h: exp.Placeholder, value: object, name: str) -> None:
    """Put ``value``'s constant in the place of placeholder ``h``; a list only as the whole
    list of an ``IN``."""
    label = name if name.isdigit() else f"${name}"
    parent = h.parent
    if isinstance(value, list | tuple):
        if not (isinstance(parent, exp.In) and parent.args.get("field") is h):
            raise UsageError(f"parameter {label} is a {type(value).__name__}: a list binds only "
                             "to IN ?")
        parent.set("field", None)
        parent.set("expressions", [constant(v, label) for v in value])
        return
    h.replace(constant(value, label))


def constant(value: object, label: str = "the parameter") -> exp.Expression:
    """The SQL constant of a Python value, typed as DuckDB binds it: a float is a DOUBLE
    (``2.5e0``), a Decimal a DECIMAL (``2.5``), a datetime a TIMESTAMP, a date a DATE."""
    if isinstance(value, np.generic) and not isinstance(value, np.datetime64 | np.timedelta64):
        value = value.item()
    if value is None:
        return exp.Null()
    if isinstance(value, bool):
        return exp.Boolean(this=value)
    if isinstance(value, int):
        if abs(value) >= 1 << 127:  # DuckDB binds Python integers up to HUGEINT
            raise UsageError(f"parameter {label} is an integer beyond HUGEINT (128 bits)")
        return _signed(str(abs(value)), value < 0)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise UsageError(f"parameter {label} is {value}: NaN and infinite parameters are "
                             "not supported")
        text = repr(abs(value))
        return _signed(text if "e" in text else text + "e0", math.copysign(1, value) < 0)
    if isinstance(value, decimal.Decimal):
        if not value.is_finite():
            raise UsageError(f"parameter {label} is {value}: NaN and infinite parameters are "
                             "not supported")
        return _signed(format(abs(value), "f"), value.is_signed())
    if isinstance(value, str):
        return exp.Literal.string(value)
    if isinstance(value, datetime.datetime):
        if value.tzinfo is not None:
            raise UsageError(f"parameter {label} is a datetime with a time zone: bamql's "
                             "timestamps have none")
        return exp.Cast(this=exp.Literal.string(value.isoformat(sep=" ")),
                        to=exp.DataType.build("TIMESTAMP", dialect="duckdb"))
    if isinstance(value, datetime.date):
        return exp.Cast(this=exp.Literal.string(value.isoformat()),
                        to=exp.DataType.build("DATE", dialect="duckdb"))
    raise UsageError(f"parameter {label} is a {type(value).__name__}; bamql binds {_TYPES}")


def _signed(digits: str, negative: bool) -> exp.Expression:
    lit = exp.Literal.number(digits)
    return exp.Neg(this=lit) if negative else lit


def _number_qmarks(sql: str, tree: exp.Expression) -> exp.Expression:
    """The tree of ``sql`` with its ``?`` placeholders named ``1``, ``2``, ... in text order
    (``tree`` is its tree as parsed, which must be that, names apart)."""
    if any(h.this is not None for h in tree.find_all(exp.Placeholder)):
        raise UsageError("the query mixes ? with $1 or $name placeholders; use one style")
    spans = [(t.start, t.end) for t in sqlglot.tokenize(sql, read="duckdb")
             if t.token_type == TokenType.PLACEHOLDER and t.text == "?"]
    out, pos = [], 0
    for i, (start, end) in enumerate(spans, 1):
        out += [sql[pos:start], f"${i} "]
        pos = end + 1
    numbered = _parse("".join(out + [sql[pos:]]))
    anonymous = numbered.copy() if numbered is not None else None
    for h in anonymous.find_all(exp.Placeholder) if anonymous is not None else ():
        h.set("this", None)
    if anonymous != tree:  # each ? must be the one the tokenizer saw, in its place
        raise UsageError("the query's ? placeholders could not be numbered; use $1, $2, ...")
    return numbered


def parse_statements(sql: str) -> list[exp.Expression | None]:
    """sqlglot's statements of ``sql`` (DuckDB's dialect), under the recursion limit that
    translation sets (sqlglot recurses some 16 frames per level of parentheses); a query
    nested deeper still is a one-line PlanError, not a RecursionError."""
    if sys.getrecursionlimit() < _RECURSION_LIMIT:
        sys.setrecursionlimit(_RECURSION_LIMIT)
    try:
        return sqlglot.parse(sql, read="duckdb")
    except RecursionError:
        raise PlanError("the query nests too deeply (parentheses, NOT or arithmetic some "
                        "hundreds of levels deep); write it flatter") from None


def _parse(sql: str) -> exp.Expression | None:
    """The one statement of ``sql``, or None where it does not parse into one."""
    try:
        stmts = [s for s in parse_statements(sql) if s is not None]
    except (ParseError, TokenError):
        return None
    return stmts[0] if len(stmts) == 1 else None


@functools.lru_cache(maxsize=256)
def _has_placeholders(sql: str) -> bool:
    """Whether ``sql`` has a placeholder (only text with ``?``, ``$`` or ``:`` is parsed)."""
    if not any(c in sql for c in "?$:"):
        return False
    tree = _parse(sql)
    return tree is not None and tree.find(exp.Placeholder) is not None
