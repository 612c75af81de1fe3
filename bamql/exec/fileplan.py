"""EXPLAIN of a query over files not yet read in place, from their metadata alone.

The store a read in place makes holds only what the read keeps, and the physical plan
(stages, access paths) is made over it; before the read, EXPLAIN says what the read would
take (``storage.inplace.plan_in_place``) and the logical query, translated over a catalog
of the files' column types. A string column's dictionary is unknown before the read: the
query's own string constants stand in for it (with a gap after each, so that no two of
them read as a range of codes), and a string pattern test, decided per dictionary entry,
is shown after the read only.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from bamql.errors import PlanError
from bamql.fused import ir
from bamql.fused.show import show, show_query
from bamql.sql.distinct import split_distinct
from bamql.sql.joins import JoinQuery, translate_joins
from bamql.sql.params import parse_statements
from bamql.sql.strings import ANONYMOUS, FUNCTIONS
from bamql.storage.format import ColumnMeta
from bamql.storage.inplace import ReadPlan

#: the line that stands for the physical plan before the read
PHYSICAL_LATER = ("  physical plan: made over what the read keeps (stages, access paths, "
                  "selectivity); EXPLAIN ANALYZE runs the query and shows it")
_PATTERNS = (exp.Like, exp.ILike, *FUNCTIONS)


def explain_planned(text: str, planned: Mapping[str, tuple[ReadPlan, str]],
                    catalog: Mapping[str, Mapping[str, ColumnMeta]], dims) -> str:
    """The EXPLAIN text of ``text``, whose FROM names the tables of ``planned`` (name ->
    the read it would make and the FROM text that named its files) besides those of
    ``catalog``; no file's data is read."""
    strings, patterns = _string_constants(text)
    dictionary = tuple(sorted({*strings, *(s + "\0" for s in strings)}))
    full = dict(catalog)
    for name, (rp, _) in planned.items():
        full[name] = {c: ColumnMeta(c, kind, "float32" if str(t) == "float" else
                                    "float64" if kind == "float" else "int64", 0, 0, 1,
                                    dictionary=dictionary if kind == "string" else None)
                      for c, kind, t in rp.columns}
    labels = {name: label for name, (_, label) in planned.items()}
    try:
        q = split_distinct(translate_joins(text, full, dims), full)
    except PlanError as e:  # name the files as the query did
        raise PlanError(relabel(str(e), labels)) from None
    lines = []
    for rp, _ in planned.values():
        lines += rp.describe().splitlines()
    lines += list(q.steps) if isinstance(q, JoinQuery) else []
    fact = q.fact if isinstance(q, JoinQuery) else q
    logical = None if patterns else _decoded(fact, set(strings), dictionary)
    if logical is None:
        lines.append("  logical: made over the strings the read finds (a string pattern test "
                     "is decided per string); EXPLAIN ANALYZE shows it")
    else:
        lines.append("  logical: " + relabel(_show(logical), labels))
    lines.append(PHYSICAL_LATER)
    return "\n".join(lines)


def relabel(msg: str, labels: Mapping[str, str]) -> str:
    """``msg`` with each table name of ``labels`` replaced by its label (the FROM text that
    named the files): errors name files as the query did."""
    for name, label in labels.items():
        msg = msg.replace(f"'{name}'", label).replace(name, label)
    return msg


def _string_constants(text: str) -> tuple[set[str], bool]:
    """The string constants of ``text`` and whether it tests strings against a pattern."""
    try:
        stmts = parse_statements(text)
    except (ParseError, TokenError):
        return set(), False
    found: set[str] = set()
    patterns = False
    for s in stmts:
        if s is None:
            continue
        found |= {lit.this for lit in s.find_all(exp.Literal) if lit.is_string}
        patterns = patterns or any(True for _ in s.find_all(*_PATTERNS)) or any(
            str(a.this).lower() in ANONYMOUS for a in s.find_all(exp.Anonymous))
    return found, patterns


def _decoded(q, strings: set[str], dictionary: tuple[str, ...]):
    """``q`` with each string code shown as the constant it codes; None where a code
    stands for no constant of the query (a range between them: shown after the read)."""
    bad = False

    def walk(x):
        nonlocal bad
        if isinstance(x, ir.Lit) and x.kind == "string" and x.value is not None \
                and not isinstance(x.value, str):
            v = x.value
            if float(v).is_integer() and 0 <= int(v) < len(dictionary) \
                    and dictionary[int(v)] in strings:
                return ir.Lit(dictionary[int(v)], "string")
            bad = True
            return x
        if isinstance(x, tuple):
            return tuple(walk(y) for y in x)
        if isinstance(x, ir.Expr) and dataclasses.is_dataclass(x):
            return dataclasses.replace(x, **{f.name: walk(getattr(x, f.name))
                                             for f in dataclasses.fields(x) if f.init})
        return x

    out = dataclasses.replace(q, **{f.name: walk(getattr(q, f.name))
                                     for f in dataclasses.fields(q)
                                     if f.init and f.name != "table"})
    return None if bad else out


def _show(q) -> str:
    """The logical line of an aggregate query (``show_query``) or of a row query."""
    if isinstance(q, ir.Query):
        return show_query(q)
    parts = [f"Limit({q.limit}" + (f", offset {q.offset})" if q.offset else ")")] \
        if q.limit is not None or q.offset else []
    if q.order:
        parts.append("Sort(" + ", ".join(f"{show(e)}{' DESC' if d else ''}" for e, d, _ in q.order)
                     + ")")
    parts.append("Project(" + ", ".join(q.names) + ")")
    if q.predicate is not None:
        parts.append(f"Filter({show(q.predicate)})")
    cols = sorted({c for e in (q.predicate, *q.exprs, *(o[0] for o in q.order)) if e is not None
                   for c in ir.columns_of(e)})
    parts.append(f"Scan({q.table}: {', '.join(cols)})")
    return " <- ".join(parts)
