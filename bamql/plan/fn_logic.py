"""Comparisons, logic, IN, LIKE and the conditionals (CASE, IF, COALESCE, NULLIF, GREATEST,
LEAST) of the expression evaluator.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from bamql.errors import PlanError
from bamql.likes import like_matcher
from bamql.plan.evaluator import (
    _HANDLERS,
    Evaluator,
    Value,
    _coerce,
    _is_null_type,
    _tname,
    broadcast,
    exact_literal,
    handles,
    is_number_type,
    truth,
)
from bamql.plan.fn_numbers import canonical
from bamql.plan.fn_text import _str


def _cmp(op: str):
    def fn(ev: Evaluator, e: exp.Binary) -> Value:
        return _compare(op, ev, e, ev.eval(e.left), ev.eval(e.right))
    return fn


def _compare(op: str, ev: Evaluator, e: exp.Binary, a: Value, b: Value) -> Value:
    """``a op b`` for the operands ``a`` and ``b`` of ``e``, with DuckDB's semantics."""
    if _is_null_type(a) or _is_null_type(b):
        return pa.scalar(None, pa.bool_())
    a = exact_literal(e.left, b) or a  # a DECIMAL beside a decimal constant: exactly
    b = exact_literal(e.right, a) or b
    a, b = _coerce(a, b)
    if pa.types.is_floating(a.type):  # NaN equals NaN and is above every number (DuckDB)
        return _float_cmp(op, a, b, ev.rel.rows)
    if pa.types.is_decimal(a.type) and pa.types.is_decimal(b.type):
        a, b = _comparable_decimals(a, b)
    return getattr(pc, op)(a, b)


def _comparable_decimals(a: Value, b: Value) -> tuple[Value, Value]:
    """DECIMALs ``a`` and ``b`` as Arrow compares them exactly: as they are where a type of
    at most 38 digits holds both, else in 256 bits (DECIMAL(38,10) beside a BIGINT)."""
    ta, tb = a.type, b.type
    s = max(ta.scale, tb.scale)
    if max(ta.precision - ta.scale, tb.precision - tb.scale) + s <= 38:
        return a, b
    return (a.cast(pa.decimal256(ta.precision, ta.scale)),
            b.cast(pa.decimal256(tb.precision, tb.scale)))


def _float_cmp(op: str, a: Value, b: Value, n: int) -> Value:
    an, bn = pc.is_nan(a), pc.is_nan(b)
    r = getattr(pc, op)(a, b)
    both, one_a, one_b = pc.and_(an, bn), pc.and_(an, pc.invert(bn)), pc.and_(bn, pc.invert(an))
    nan_result = {"equal": (True, False, False), "not_equal": (False, True, True),
                  "less": (False, False, True), "less_equal": (True, False, True),
                  "greater": (False, True, False), "greater_equal": (True, True, False)}[op]
    for mask, val in zip((both, one_a, one_b), nan_result, strict=True):
        r = pc.if_else(mask, pa.scalar(val), r)
    return r


_HANDLERS[exp.EQ] = _cmp("equal")
_HANDLERS[exp.NEQ] = _cmp("not_equal")
_HANDLERS[exp.GT] = _cmp("greater")
_HANDLERS[exp.GTE] = _cmp("greater_equal")
_HANDLERS[exp.LT] = _cmp("less")
_HANDLERS[exp.LTE] = _cmp("less_equal")


def _not_distinct(negate: bool):
    """``a IS [NOT] DISTINCT FROM b``: equal (NaN equals NaN) or both NULL; never NULL."""
    def fn(ev: Evaluator, e: exp.Binary) -> Value:
        n = ev.rel.rows
        x, y = ev.eval(e.left), ev.eval(e.right)  # each operand evaluated once
        a, b = broadcast(x, n), broadcast(y, n)
        eq = broadcast(_compare("equal", ev, e, x, y), n)
        an, bn = a.is_null(), b.is_null()
        same = pc.or_(pc.and_(an, bn),
                      pc.and_(pc.and_(pc.invert(an), pc.invert(bn)), eq.fill_null(False)))
        return pc.invert(same) if negate else same
    return fn


_HANDLERS[exp.NullSafeEQ] = _not_distinct(False)
_HANDLERS[exp.NullSafeNEQ] = _not_distinct(True)


def _bool_arg(v: Value, e) -> Value:
    if pa.types.is_null(v.type):
        return pa.scalar(None, pa.bool_()) if isinstance(v, pa.Scalar) else v.cast(pa.bool_())
    if is_number_type(v.type):
        return truth(v)
    if not pa.types.is_boolean(v.type):
        raise PlanError(f"AND, OR and NOT take conditions, not a {_tname(v.type)}: "
                        f"{e.sql(dialect='duckdb')[:80]}")
    return v


@handles(exp.And)
def _and(ev: Evaluator, e) -> Value:
    return pc.and_kleene(_bool_arg(ev.eval(e.left), e), _bool_arg(ev.eval(e.right), e))


@handles(exp.Or)
def _or(ev: Evaluator, e) -> Value:
    return pc.or_kleene(_bool_arg(ev.eval(e.left), e), _bool_arg(ev.eval(e.right), e))


@handles(exp.Not)
def _not(ev: Evaluator, e) -> Value:
    return pc.invert(_bool_arg(ev.eval(e.this), e))


@handles(exp.Is)
def _is(ev: Evaluator, e: exp.Is) -> Value:
    if isinstance(e.expression, exp.Boolean):  # IS TRUE / IS FALSE: NULL is neither
        v = _bool_arg(ev.eval(e.this), e)
        if not e.expression.this:
            v = pc.invert(v)
        if isinstance(v, pa.Scalar):
            return pa.scalar(bool(v.is_valid and v.as_py()))
        return pc.fill_null(v, False)
    if not isinstance(e.expression, exp.Null):
        raise PlanError("IS takes NULL (IS NULL, IS NOT NULL), TRUE or FALSE: "
                        f"{e.sql(dialect='duckdb')[:80]}")
    v = ev.eval(e.this)
    if isinstance(v, pa.Scalar):
        return pa.scalar(not v.is_valid)
    return pc.is_null(v)


@handles(exp.Between)
def _between(ev: Evaluator, e: exp.Between) -> Value:
    lo = exp.GTE(this=e.this, expression=e.args["low"])
    hi = exp.LTE(this=e.this, expression=e.args["high"])
    return _and(ev, exp.And(this=lo, expression=hi))


@handles(exp.In)
def _in(ev: Evaluator, e: exp.In) -> Value:
    if e.args.get("query") is not None or e.args.get("unnest") is not None:
        return ev.subquery(e, ev)
    if not e.expressions:
        raise PlanError("IN needs a list of values or a subquery")
    v = ev.eval(e.this)
    items = [ev.eval(x) for x in e.expressions]
    # x IN (a, b) as an OR of equalities: where an item is a column; for a DECIMAL x, whose
    # decimal constants compare exactly (``exact_literal``; as one list they were DOUBLEs);
    # for an integer x among constants not all integers (as one list of DOUBLEs, x =
    # -9223372036854775807 was IN (-9223372036854775808, 2.5): both round to -2**63)
    mixed = pa.types.is_integer(v.type) and not all(
        pa.types.is_integer(x.type) or pa.types.is_null(x.type) for x in items)
    if any(isinstance(x, pa.Array) for x in items) or pa.types.is_decimal(v.type) or mixed:
        out = None
        for x in e.expressions:
            t = _cmp("equal")(ev, exp.EQ(this=e.this, expression=x))
            out = t if out is None else pc.or_kleene(out, t)
        return out
    return in_values(v, [x for x in items], ev.rel.rows)


def in_values(v: Value, items: list[pa.Scalar], n: int) -> Value:
    """``v IN (items)``: the items as one array of their common type, then ``in_array``."""
    typed = _common(items)
    t = next((x.type for x in typed if not pa.types.is_null(x.type)), pa.null())
    return in_array(v, pa.array([x.as_py() for x in typed], t), n)


def in_array(v: Value, values: pa.Array, n_rows: int) -> Value:
    """``v IN (values)``, three-valued: NULL where ``v`` is NULL, or no value matches and
    one is NULL; false for no values at all."""
    if len(values) == 0:  # IN of no rows is false, for a NULL too; its types must still agree
        _coerce(v, values)  # (DuckDB refuses a string IN an empty list of integers)
        return pa.scalar(False) if isinstance(v, pa.Scalar) else pa.array(np.zeros(n_rows, bool))
    has_null = values.null_count > 0
    vals = values.drop_null()
    if pa.types.is_null(v.type):
        return pa.scalar(None, pa.bool_())
    if len(vals):
        vt, st = _coerce(v, vals)
        hit = pc.is_in(canonical(vt), value_set=pc.unique(canonical(st)))
    else:
        hit = pa.scalar(False) if isinstance(v, pa.Scalar) else pa.array(np.zeros(n_rows, bool))
    hit = pc.if_else(pc.is_valid(v), hit, pa.scalar(None, pa.bool_()))
    if has_null:
        hit = pc.if_else(hit, True, pa.scalar(None, pa.bool_()))
    return hit


def _like(ev: Evaluator, e, ignore_case: bool) -> Value:
    if isinstance(e.expression, exp.Any | exp.All):
        raise PlanError("LIKE ANY / LIKE ALL is not supported")
    if e.args.get("escape"):
        raise PlanError("LIKE ... ESCAPE is not supported here")
    s, p = ev.eval(e.this), ev.eval(e.expression)
    if not isinstance(p, pa.Scalar) and pa.types.is_string(p.type):
        return _like_rows(_str(s, "LIKE"), p, ignore_case)
    if not isinstance(p, pa.Scalar) or not (p.is_valid and pa.types.is_string(p.type)):
        if isinstance(p, pa.Scalar) and not p.is_valid:
            return pa.scalar(None, pa.bool_())
        raise PlanError("the pattern of LIKE must be a string")
    if not (pa.types.is_string(s.type) or pa.types.is_large_string(s.type)):
        raise PlanError(f"LIKE needs a string, got a {_tname(s.type)} value")
    pat = p.as_py()
    if "\\" in pat:
        pat = pat.replace("\\", "\\\\")
    return pc.match_like(s, pat, ignore_case=ignore_case)


def _negated(e, v: Value) -> Value:
    """``v``, the value of ``e``, negated where ``e`` is a NOT LIKE (NULL stays NULL)."""
    return pc.invert(v) if e.args.get("negate") else v


def _like_rows(s: Value, p: pa.Array, ignore_case: bool) -> pa.Array:
    """``s LIKE p`` row by row, where each row has its own pattern."""
    texts = broadcast(s, len(p)).to_pylist()
    tests: dict[str, Callable[[str], bool]] = {}
    out = []
    for x, pat in zip(texts, p.to_pylist(), strict=True):
        if x is None or pat is None:
            out.append(None)
            continue
        if pat not in tests:
            tests[pat] = like_matcher(pat, None, ignore_case)
        out.append(tests[pat](x))
    return pa.array(out, pa.bool_())


@handles(exp.Like)
def _like_h(ev, e):
    return _negated(e, _like(ev, e, False))


@handles(exp.ILike)
def _ilike_h(ev, e):
    return _negated(e, _like(ev, e, True))


# -- conditionals ------------------------------------------------------------------------
def _common(vals: list[Value]) -> list[Value]:
    """Values of one type, as CASE, COALESCE and IN lists make them (``_coerce``'s rules)."""
    typed = [v for v in vals if not pa.types.is_null(v.type)]
    if not typed:
        return vals
    target = typed[0].type
    for v in typed[1:]:
        if v.type != target:
            target = _coerce(pa.scalar(None, target), v)[0].type
    out = []
    for v in vals:
        if v.type != target:
            v = pa.scalar(None, target) if pa.types.is_null(v.type) and isinstance(v, pa.Scalar) \
                else v.cast(target, safe=not pa.types.is_floating(target))
        out.append(v)
    return out


@handles(exp.Case)
def _case(ev: Evaluator, e: exp.Case) -> Value:
    n = ev.rel.rows
    subject = e.this
    conds, vals = [], []
    for branch in e.args.get("ifs") or []:
        c = branch.this if subject is None else exp.EQ(this=subject, expression=branch.this)
        cv = ev.eval(c)
        conds.append(broadcast(cv, n).cast(pa.bool_()).fill_null(False))
        vals.append(ev.eval(branch.args["true"]))
    default = e.args.get("default")
    vals.append(ev.eval(default) if default is not None else pa.scalar(None))
    vals = [broadcast(v, n) for v in _common(vals)]
    out = vals[-1]
    for c, v in reversed(list(zip(conds, vals[:-1], strict=True))):
        out = pc.if_else(c, v, out)
    return out


@handles(exp.If)
def _if(ev: Evaluator, e: exp.If) -> Value:
    n = ev.rel.rows
    c = broadcast(ev.eval(e.this), n).cast(pa.bool_()).fill_null(False)
    t = ev.eval(e.args["true"])
    f = ev.eval(e.args["false"]) if e.args.get("false") is not None else pa.scalar(None)
    t, f = _common([t, f])
    return pc.if_else(c, broadcast(t, n), broadcast(f, n))


@handles(exp.Coalesce)
def _coalesce(ev: Evaluator, e) -> Value:
    vals = _common([ev.eval(x) for x in [e.this, *e.expressions]])
    return pc.coalesce(*vals)


@handles(exp.Nullif)
def _nullif(ev: Evaluator, e) -> Value:
    a = ev.eval(e.this)
    eq = broadcast(_cmp("equal")(ev, exp.EQ(this=e.this, expression=e.expression)), ev.rel.rows)
    a = broadcast(a, ev.rel.rows)
    return pc.if_else(eq.fill_null(False), pa.scalar(None, a.type), a)


@handles(exp.Greatest, exp.Least)
def _greatest(ev: Evaluator, e) -> Value:
    vals = _common([ev.eval(x) for x in [e.this, *e.expressions]])
    big = isinstance(e, exp.Greatest)
    if any(isinstance(v, pa.Array) for v in vals):
        vals = [broadcast(v, ev.rel.rows) for v in vals]
    else:
        vals = [pa.array([v.as_py()], v.type) for v in vals]
        one = _greatest_of(vals, big)
        return one[0]
    return _greatest_of(vals, big)


def _greatest_of(vals: list[pa.Array], big: bool) -> pa.Array:
    fn = pc.max_element_wise if big else pc.min_element_wise
    out = fn(*vals, skip_nulls=True)
    if pa.types.is_floating(out.type):  # NaN is above every number (DuckDB)
        nans = [pc.is_nan(v).fill_null(False) for v in vals]
        if big:
            hit = nans[0]
            for x in nans[1:]:
                hit = pc.or_(hit, x)
        else:
            hit = nans[0]
            for v, x in zip(vals[1:], nans[1:], strict=True):
                hit = pc.and_(hit, pc.or_(x, pc.is_null(v)))
        out = pc.if_else(hit, pa.scalar(float("nan"), out.type), out)
    return out
