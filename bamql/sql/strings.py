"""String tests on dictionary-coded columns: ``LIKE``, ``ILIKE``, their ``NOT`` and
``ESCAPE`` forms, ``~~``, ``starts_with``/``prefix``, ``ends_with``/``suffix`` and
``contains``.

A string column holds codes into its sorted dictionary, so a test of its value against a
constant is decided once per dictionary entry, here at plan time; the row test becomes a
condition on the codes (a range, an ``IN`` list or its complement), which zone maps and
value sets prune like any other. Every form gives NULL on a NULL string, as in DuckDB, so
``NOT LIKE`` drops NULLs too. Matching follows DuckDB: ``_`` is one code point, ``%`` any
run of them (newlines included), no escape character unless ``ESCAPE`` names one, and
``ILIKE`` lowers each code point by its simple lowercase mapping."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from enum import Enum
from typing import Protocol

from sqlglot import exp

from bamql.errors import TREE_ONLY, PlanError
from bamql.fused import ir
from bamql.likes import like_matcher


class StringTest(Enum):
    """The tests of a string against a constant."""

    LIKE = "LIKE"
    ILIKE = "ILIKE"
    STARTS_WITH = "starts_with()"
    ENDS_WITH = "ends_with()"
    CONTAINS = "contains()"


#: Function names sqlglot leaves unparsed, and the test each one is.
ANONYMOUS = {"prefix": StringTest.STARTS_WITH, "suffix": StringTest.ENDS_WITH}
#: sqlglot's nodes for the function forms.
FUNCTIONS = {exp.StartsWith: StringTest.STARTS_WITH, exp.EndsWith: StringTest.ENDS_WITH,
             exp.Contains: StringTest.CONTAINS}


#: The longest run of codes written as an IN list rather than as a range.
MAX_LISTED = 64


class _Translator(Protocol):  # what of ``sql.expressions.ExprTranslator`` is used here
    cols: dict

    def expr(self, node) -> ir.Expr: ...

    def fail(self, what: str, node=None) -> PlanError: ...


def matching_codes(dictionary: Sequence[str], test: Callable[[str], bool]) -> list[int]:
    """The codes (indexes into ``dictionary``) of the strings that pass ``test``."""
    return [i for i, s in enumerate(dictionary) if test(s)]


def codes_condition(col: ir.Col, codes: Sequence[int], size: int) -> ir.Expr:
    """The condition that ``col`` (codes into a dictionary of ``size`` strings) holds one of
    ``codes`` (sorted, distinct): NULL where ``col`` is NULL, else whether it does. A run
    of more than ``MAX_LISTED`` codes is a range (a short run stays one IN list, which
    EXPLAIN shows as the one condition it is); a set larger than its complement is written
    as NOT IN the complement."""
    def lit(v) -> ir.Lit:
        return ir.Lit(v, "string")

    if not codes:  # no code is -0.5: false for every string, NULL for NULL
        return ir.Cmp("=", col, lit(-0.5))
    if len(codes) == size:  # every code is above -0.5 (not IS NOT NULL: NULL stays NULL)
        return ir.Cmp(">", col, lit(-0.5))
    lo, hi = codes[0], codes[-1]
    if hi - lo + 1 == len(codes) and (len(codes) > MAX_LISTED or lo == hi):
        if lo == hi:
            return ir.Cmp("=", col, lit(lo))
        if lo == 0:
            return ir.Cmp("<=", col, lit(hi))
        if hi == size - 1:
            return ir.Cmp(">=", col, lit(lo))
        return ir.And((ir.Cmp(">=", col, lit(lo)), ir.Cmp("<=", col, lit(hi))))
    inside = set(codes)
    rest = [i for i in range(size) if i not in inside]
    if rest[-1] - rest[0] + 1 == len(rest):  # the codes outside one run
        return ir.Or((ir.Cmp("<", col, lit(rest[0])), ir.Cmp(">", col, lit(rest[-1]))))
    if len(rest) < len(codes):
        return ir.InList(col, tuple(lit(i) for i in rest), negated=True)
    return ir.InList(col, tuple(lit(i) for i in codes))


def _constant(t: _Translator, node, what: str, role: str) -> str:
    if not (isinstance(node, exp.Literal) and node.is_string):
        raise t.fail(f"{what} takes a string constant {role}", node)
    return node.this


def _column(t: _Translator, node, what: str, whole) -> ir.Col:
    a = t.expr(node)
    if isinstance(a, ir.Col) and a.kind == "string":
        return a
    if a.kind == "strlit":
        raise t.fail(f"{what} of a string constant is not supported", whole)
    if a.kind == "string":
        raise t.fail(f"{what} takes a string column, not an expression", whole)
    kind = a.kind.replace("strlit", "string")
    raise t.fail(f"{what} needs a string column; {node.sql(dialect='duckdb')} is "
                 f"{'an' if kind[0] in 'aeiou' else 'a'} {kind} value", whole)


def like(t: _Translator, node: exp.Like | exp.ILike | exp.Escape) -> ir.Expr:
    """``col [NOT] [I]LIKE 'pattern' [ESCAPE 'c']`` as a condition on ``col``'s codes."""
    escape = None
    whole = node
    if isinstance(node, exp.Escape):
        if not isinstance(node.this, exp.Like | exp.ILike):
            raise t.fail("ESCAPE belongs to LIKE or ILIKE", node)
        escape = _constant(t, node.expression, "ESCAPE", "escape character")
        if len(escape) > 1:
            raise t.fail("ESCAPE takes one character (or '')", node.expression)
        node, escape = node.this, escape or None
    test = StringTest.ILIKE if isinstance(node, exp.ILike) else StringTest.LIKE
    what = test.value
    if isinstance(node.expression, exp.Any | exp.All):
        raise t.fail(f"{what} ANY/ALL is not supported", whole)
    col = _column(t, node.this, what, whole)
    if not isinstance(node.expression, exp.Literal | exp.Null):
        raise t.fail(f"{what} of a pattern that is not a constant {TREE_ONLY}", whole)
    pattern = _constant(t, node.expression, what, "pattern")
    try:
        match = like_matcher(pattern, escape, test is StringTest.ILIKE)
    except ValueError as e:
        raise t.fail(str(e), whole) from None
    return _condition(t, col, match, bool(node.args.get("negate")))


def function(t: _Translator, node: exp.Expression, test: StringTest) -> ir.Expr:
    """``starts_with(col, 'x')``, ``ends_with``, ``contains`` and the aliases ``prefix``,
    ``suffix`` as a condition on ``col``'s codes."""
    args = node.expressions if isinstance(node, exp.Anonymous) else [node.this, node.expression]
    if len(args) != 2 or any(a is None for a in args):
        raise t.fail(f"{test.value[:-2]}() takes a string column and a string constant", node)
    col = _column(t, args[0], test.value, node)
    if isinstance(args[1], exp.Null) and test is StringTest.STARTS_WITH:
        raise t.fail(f"{test.value} of NULL {TREE_ONLY}", node)
    x = _constant(t, args[1], test.value, "second argument")
    match: Callable[[str], bool] = {
        StringTest.STARTS_WITH: lambda s: s.startswith(x),
        StringTest.ENDS_WITH: lambda s: s.endswith(x),
        StringTest.CONTAINS: lambda s: x in s,
    }[test]
    return _condition(t, col, match, False)


def _condition(t: _Translator, col: ir.Col, match: Callable[[str], bool],
               negate: bool) -> ir.Expr:
    d = t.cols[col.name].dictionary or ()
    codes = matching_codes(d, match)
    if negate:  # NOT LIKE: the other strings (NULL stays NULL)
        inside = set(codes)
        codes = [i for i in range(len(d)) if i not in inside]
    return codes_condition(col, codes, len(d))
