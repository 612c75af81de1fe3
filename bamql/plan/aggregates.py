"""The hash-aggregate operator on the CPU: GROUP BY (and grouping sets) over a relation,
through Arrow's grouped aggregation; exact quantiles and string_agg per group."""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal, localcontext

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from bamql.errors import PlanError
from bamql.plan import nodes as n
from bamql.plan.expr import Evaluator, Rel, canonical, is_number_type
from bamql.plan.interpolate import decimal_between_one

D = "duckdb"


@dataclass
class Spec:
    """One aggregate as Arrow computes it: an input column, a grouped function and its
    options, and a step after (``post``) for the ones Arrow lists per group."""

    values: pa.Array
    fn: str
    options: object = None
    post: object = None
    distinct: bool = False  # over each group's distinct values: repeats are NULL first


def _filtered(v: pa.Array, cond: pa.Array | None) -> pa.Array:
    if cond is None:
        return v
    return pc.if_else(cond, v, pa.scalar(None, v.type))


def _numeric(v: pa.Array, what: str) -> pa.Array:
    t = v.type
    if pa.types.is_boolean(t) or pa.types.is_null(t):
        return v.cast(pa.int64()) if pa.types.is_boolean(t) else v.cast(pa.float64())
    if not is_number_type(t):
        raise PlanError(f"{what}() needs numbers, got {t}")
    return v


#: Aggregates that take DISTINCT over the set of their argument's values (MIN and MAX are
#: the same with or without it)
_OVER_SETS = (exp.Sum, exp.Avg, exp.Stddev, exp.StddevSamp, exp.StddevPop, exp.Variance,
              exp.VariancePop)


def spec(a: exp.Expression, ev: Evaluator) -> Spec:
    """How Arrow computes the aggregate call ``a`` over ``ev``'s relation."""
    whole = a
    cond = None
    if isinstance(a, exp.Filter):
        cond = ev.condition(a.expression.this)
        a = a.this
    if isinstance(a, exp.IgnoreNulls):
        a = a.this
    if isinstance(a, exp.WithinGroup):
        return _within_group(a, ev, cond)
    rows = ev.rel.rows
    distinct = isinstance(a.this, exp.Distinct)
    arg = a.this.expressions[0] if distinct else a.this
    if distinct and len(a.this.expressions) != 1:
        raise PlanError("COUNT(DISTINCT ...) of several columns is not supported")
    if isinstance(a, exp.Count):
        if arg is None or isinstance(arg, exp.Star):
            ones = pa.array(np.ones(rows, np.int8))
            if cond is None:
                return Spec(ones, "count", pc.CountOptions("all"))
            return Spec(_filtered(ones, cond), "count", pc.CountOptions("only_valid"))
        v = _filtered(ev.array(arg), cond)
        if distinct:
            v = canonical(v)
        return Spec(v, "count_distinct" if distinct else "count", pc.CountOptions("only_valid"))
    if distinct and not isinstance(a, exp.GroupConcat):
        if not isinstance(a, (*_OVER_SETS, exp.Min, exp.Max)):
            raise PlanError(f"{a.sql_name().upper()}(DISTINCT ...) is not supported")
        plain = whole.copy()  # the same call over every value, FILTER kept
        for d in plain.find_all(exp.Distinct):
            if d.parent is not None and type(d.parent) is type(a):
                d.replace(d.expressions[0])
                break
        out = spec(plain, ev)
        out.distinct = isinstance(a, _OVER_SETS)
        return out
    if isinstance(a, exp.CountIf):
        c = ev.condition(arg)
        ones = pc.if_else(c, pa.scalar(1, pa.int8()), pa.scalar(None, pa.int8()))
        return Spec(_filtered(ones, cond), "count", pc.CountOptions("only_valid"))
    if isinstance(a, exp.GroupConcat):
        return _string_agg(a, ev, cond)
    v = _filtered(ev.array(arg), cond) if arg is not None else None
    if v is None:
        raise PlanError(f"{a.sql(dialect=D)} needs an argument")
    simple = {exp.Sum: "sum", exp.Avg: "mean", exp.Min: "min", exp.Max: "max",
              exp.First: "first", exp.AnyValue: "first", exp.LogicalAnd: "all",
              exp.LogicalOr: "any"}
    if isinstance(a, exp.Avg) and (pa.types.is_timestamp(v.type) or pa.types.is_date(v.type)):
        # DuckDB: the exact mean of the instants in whole ticks (``_instant_mean``); a DATE's
        # as a TIMESTAMP of its midnight
        t = v.type if pa.types.is_timestamp(v.type) else pa.timestamp("us")
        ticks = v.cast(t).cast(pa.int64()).cast(pa.decimal256(40, 0))
        return Spec(ticks, "sum", pc.ScalarAggregateOptions(skip_nulls=True, min_count=1),
                    ("instant", t, pa.types.is_timestamp(v.type)))
    if pa.types.is_duration(v.type) and isinstance(a, exp.Min | exp.Max | exp.Sum):
        fn = {exp.Min: "min", exp.Max: "max", exp.Sum: "sum"}[type(a)]
        return Spec(v.cast(pa.int64()), fn, None, ("cast", v.type))
    if pa.types.is_floating(v.type) and isinstance(a, exp.Min | exp.Max):
        return Spec(v, "min" if isinstance(a, exp.Min) else "max", None,
                    ("nan", isinstance(a, exp.Max), pc.is_nan(v)))
    for kind, fn in simple.items():
        if isinstance(a, kind):
            if fn in ("sum", "mean"):
                v = _numeric(v, fn)
            if fn == "sum" and pa.types.is_integer(v.type):  # exact past int64, as HUGEINT
                v = v.cast(pa.decimal128(38, 0))
            if fn in ("sum", "mean") and pa.types.is_decimal(v.type):
                # summed exactly in 256 bits: DECIMAL(38, s), AVG a DOUBLE of it
                t = v.type
                return Spec(v.cast(pa.decimal256(t.precision, t.scale)), "sum",
                            pc.ScalarAggregateOptions(skip_nulls=True, min_count=1),
                            ("decimal", fn, t.scale))
            if fn in ("all", "any"):
                return Spec(v, fn, pc.ScalarAggregateOptions(skip_nulls=True, min_count=1))
            return Spec(v, fn, pc.ScalarAggregateOptions(skip_nulls=True, min_count=1)
                        if fn in ("sum", "mean") else None)
    if isinstance(a, exp.Anonymous):  # arbitrary / any_value
        return Spec(v, "first")
    dev = {exp.Stddev: ("stddev", 1), exp.StddevSamp: ("stddev", 1), exp.StddevPop: ("stddev", 0),
           exp.Variance: ("variance", 1), exp.VariancePop: ("variance", 0)}
    for kind, (fn, ddof) in dev.items():
        if type(a) is kind:
            # as DuckDB: the values as doubles first (int64 past 2**53 rounds, never fails)
            return Spec(_numeric(v, fn).cast(pa.float64(), safe=False), fn,
                        pc.VarianceOptions(ddof=ddof))
    if isinstance(a, exp.Median):
        return Spec(_numeric(v, "median"), "list", None, ("cont", 0.5, False))
    if isinstance(a, exp.PercentileCont | exp.PercentileDisc):
        q = a.expression
        qs = q.expressions if isinstance(q, exp.Array) else [q]
        fr = []
        for x in qs:
            if not (isinstance(x, exp.Literal) and not x.is_string):
                raise PlanError("a quantile's fraction must be a number constant")
            f = float(x.this)
            if not 0 <= f <= 1:
                raise PlanError(f"a quantile's fraction must be between 0 and 1, not {f}")
            fr.append(f)
        kind = "cont" if isinstance(a, exp.PercentileCont) else "disc"
        return Spec(_numeric(v, "quantile"), "list", None,
                    (kind, fr if isinstance(q, exp.Array) else fr[0], False))
    if isinstance(a, exp.ArrayAgg):
        return Spec(v, "list")
    raise PlanError(f"aggregate {a.sql_name().upper()}() is not supported")


def _within_group(a: exp.WithinGroup, ev: Evaluator, cond) -> Spec:
    """``percentile_cont(q) WITHIN GROUP (ORDER BY x [DESC])``: the quantile of x in that
    order (DuckDB interpolates from the first of the two neighbours in it)."""
    f, order = a.this, a.expression
    items = order.expressions if isinstance(order, exp.Order) else []
    if not isinstance(f, exp.PercentileCont | exp.PercentileDisc) or len(items) != 1:
        raise PlanError(f"{a.sql(dialect=D)[:60]} is not supported")
    q = f.this
    if not (isinstance(q, exp.Literal) and not q.is_string) or not 0 <= float(q.this) <= 1:
        raise PlanError("a quantile's fraction must be a number constant between 0 and 1")
    frac = float(q.this)
    desc = bool(items[0].args.get("desc"))
    kind = "cont" if isinstance(f, exp.PercentileCont) else "disc"
    if desc and kind == "disc":
        raise PlanError("percentile_disc ... WITHIN GROUP (ORDER BY ... DESC) is not supported")
    v = _filtered(ev.array(items[0].this), cond)
    return Spec(_numeric(v, "quantile"), "list", None, (kind, frac, desc))


def _string_agg(a: exp.GroupConcat, ev: Evaluator, cond) -> Spec:
    this = a.this
    order = None
    if isinstance(this, exp.Order):
        order = this.expressions
        this = this.this
    distinct = isinstance(this, exp.Distinct)
    arg = this.expressions[0] if distinct else this
    sep = a.args.get("separator")
    sep_s = ev.eval(sep).as_py() if sep is not None else ","
    v = _filtered(ev.array(arg), cond)
    if not pa.types.is_string(v.type):
        v = v.cast(pa.string())
    desc = False
    if order:
        if len(order) != 1 or order[0].this != arg:
            raise PlanError("string_agg(... ORDER BY) orders by the aggregated value only")
        desc = bool(order[0].args.get("desc"))
    return Spec(v, "list", None, ("string", sep_s, distinct, order is not None, desc))


def _quantile(vals: list, kind: str, q: float, desc: bool = False,
              decimal: pa.Decimal128Type | None = None):
    """DuckDB's quantile ``q`` of ``vals`` in ascending or ``desc`` order (``kind`` "disc":
    one of them; "cont": interpolated, a DECIMAL's as that ``decimal`` type, see
    ``plan.interpolate``)."""
    xs = sorted((x for x in vals if x is not None), key=lambda x: (isinstance(x, float) and math.isnan(x), x),
                reverse=desc)
    if not xs:
        return None
    if kind == "disc":
        return xs[max(0, math.ceil(q * len(xs)) - 1)]
    pos = q * (len(xs) - 1)
    lo, hi = math.floor(pos), math.ceil(pos)
    if decimal is not None:
        with localcontext() as exact:  # 38 digits and more: past the default context's 28
            exact.prec = 80
            lo_i, hi_i = (int(xs[i].scaleb(decimal.scale)) for i in (lo, hi))
        got = decimal_between_one(lo_i, hi_i, pos - lo, decimal.precision)
        return Decimal(f"{got}E-{decimal.scale}")
    a, b = float(xs[lo]), float(xs[hi])
    return a if lo == hi or a == b else a + (b - a) * (pos - lo)


def _post(lists: pa.Array, post, in_type: pa.DataType) -> pa.Array:
    if post is None:
        return lists
    if post[0] == "cast":
        return lists.cast(post[1])
    if post[0] == "nan":
        return lists  # applied by _group, which has the groups' NaN flags
    if post[0] in ("decimal", "instant"):
        return lists  # applied by _group, which has the groups' counts
    rows = lists.to_pylist()
    if post[0] == "string":
        _, sep, distinct, ordered, desc = post
        out = []
        for r in rows:
            xs = [x for x in (r or []) if x is not None]
            if distinct:
                xs = list(dict.fromkeys(xs))
            if ordered:
                xs.sort(reverse=desc)
            out.append(sep.join(xs) if xs else None)
        return pa.array(out, pa.string())
    kind, q, desc = post
    many = isinstance(q, list)
    dec = in_type if pa.types.is_decimal(in_type) else None
    disc_type = in_type if kind == "disc" or dec is not None else pa.float64()
    if many:
        return pa.array([None if not r or all(x is None for x in r) else
                         [_quantile(r, kind, f, desc, dec) for f in q] for r in rows],
                        pa.list_(disc_type))
    return pa.array([_quantile(r or [], kind, q, desc, dec) for r in rows], disc_type)


def _decimal_result(sums: pa.Array, counts: pa.Array, fn: str, scale: int) -> pa.Array:
    """SUM (``fn`` "sum") or AVG ("mean") of a DECIMAL of ``scale`` from each group's exact
    sum (256 bits) and count of values, as DuckDB gives them: the sum a DECIMAL(38, scale),
    the average its DOUBLE (the nearest double to the exact sum) divided by the count's; a
    sum past 38 digits is DuckDB's error."""
    top = pc.max(pc.abs(sums)).as_py()
    if top is not None and top >= Decimal(f"1E{38 - scale}"):  # compared exactly
        from bamql.errors import OutOfRangeError

        raise OutOfRangeError("Overflow in SUM of DECIMAL: the result does not fit in "
                              "DECIMAL(38)")
    if fn == "sum":
        return sums.cast(pa.decimal128(38, scale))
    from fractions import Fraction

    return pa.array([None if x is None else float(Fraction(x)) / n
                     for x, n in zip(sums.to_pylist(), counts.to_pylist(), strict=True)],
                    pa.float64())


def _instant_mean(sums: pa.Array, counts: pa.Array, t: pa.DataType, rounded: bool) -> pa.Array:
    """AVG of timestamps (or DATEs, ``rounded`` False) from each group's exact sum of
    ticks and count of values, as DuckDB gives it: the quotient truncated toward zero; of
    timestamps one tick more where the remainder (of the sum's sign) exceeds half the
    count."""
    out = []
    for x, k in zip(sums.to_pylist(), counts.to_pylist(), strict=True):
        if x is None:
            out.append(None)
            continue
        x = int(x)
        q = abs(x) // k if x >= 0 else -(abs(x) // k)
        out.append(q + (rounded and x - q * k > k // 2))
    return pa.array(out, pa.int64()).cast(t)


def aggregate_rel(rel: Rel, node: n.Aggregate, ev: Evaluator) -> Rel:
    """The Aggregate node's relation: keys ``__k<i>`` then aggregates ``__a<j>``."""
    keys = [ev.array(k) for k in node.keys]
    specs = [spec(a, ev) for a in node.aggs]
    sets = node.sets if node.sets is not None else (tuple(range(len(keys))),)
    parts = []
    for s in sets:
        parts.append(_group(keys, specs, s, rel.rows))
    if len(parts) == 1:
        cols = parts[0]
    else:
        cols = []
        for i in range(len(parts[0])):
            arrs = [p[i] for p in parts]
            t = next((a.type for a in arrs if not pa.types.is_null(a.type)), arrs[0].type)
            cols.append(pa.concat_arrays([a.cast(t) if a.type != t else a for a in arrs]))
    return Rel.of(cols, node.cols)


def _first_of_each(v: pa.Array, keys: list[pa.Array], names: list[str]) -> pa.Array:
    """``v`` with every value NULL but the first of each (group, value): an aggregate over
    it takes each group's distinct values once (-0.0 as 0.0, NaN one value)."""
    rows = len(v)
    t = pa.Table.from_arrays([*keys, canonical(v), pa.array(np.arange(rows, dtype=np.int64))],
                             names=[*names, "__v", "__i"])
    first = t.group_by([*names, "__v"], use_threads=False).aggregate([("__i", "min")])
    keep = np.zeros(rows, bool)
    keep[first.column("__i_min").to_numpy()] = True
    return pc.if_else(pa.array(keep), v, pa.scalar(None, v.type))


def _group(keys: list[pa.Array], specs: list[Spec], keep: tuple[int, ...], rows: int) -> list[pa.Array]:
    names = [f"k{i}" for i in keep]
    arrays = [canonical(keys[i]) for i in keep]
    agg_in = [f"v{j}" for j in range(len(specs))]
    values = [_first_of_each(s.values, arrays, names) if s.distinct else s.values for s in specs]
    t = pa.Table.from_arrays([*arrays, *values] or [pa.array(np.zeros(rows, np.int8))],
                             names=[*names, *agg_in] or ["__one"])
    lists = {j for j, s in enumerate(specs) if s.fn == "list" and not names}
    aggs = [(f"v{j}", s.fn, s.options) if s.options is not None else (f"v{j}", s.fn)
            for j, s in enumerate(specs) if j not in lists]
    nan_flags = {j: s.post[2] for j, s in enumerate(specs) if s.post is not None and s.post[0] == "nan"}
    decimals = {j for j, s in enumerate(specs) if s.post is not None and s.post[0] == "decimal"}
    instants = {j for j, s in enumerate(specs) if s.post is not None and s.post[0] == "instant"}
    for j in decimals | instants:  # AVG divides the exact sum by the count of values
        aggs.append((f"v{j}", "count", pc.CountOptions("only_valid")))
    for j, flag in nan_flags.items():  # whether each group holds a NaN
        t = t.append_column(f"n{j}", flag)
        aggs.append((f"n{j}", "any"))
        aggs.append((f"n{j}", "all"))
    if not names and not aggs:
        g = pa.table({"__one": pa.array([0])})
    else:
        g = t.group_by(names, use_threads=False).aggregate(aggs)
    for j in lists:  # Arrow lists per group only: the whole input is one list here
        v = specs[j].values
        g = g.append_column(f"v{j}_list", pa.array([v.to_pylist()], pa.list_(v.type)))
    out = []
    for i in range(len(keys)):
        if i in keep:
            out.append(g.column(f"k{i}").combine_chunks())
        else:
            out.append(pa.nulls(g.num_rows, keys[i].type))
    for j, s in enumerate(specs):
        c = g.column(f"v{j}_{s.fn}").combine_chunks()
        if s.post is not None:
            c = _post(c, s.post, s.values.type)
        if j in decimals:
            c = _decimal_result(c, g.column(f"v{j}_count").combine_chunks(), *s.post[1:])
        if j in instants:
            c = _instant_mean(c, g.column(f"v{j}_count").combine_chunks(), *s.post[1:])
        if j in nan_flags:  # NaN is above every number: MAX is NaN where a NaN is; MIN where
            nan = pa.scalar(float("nan"), c.type)  # every non-NULL value is NaN
            flag = g.column(f"n{j}_any" if s.post[1] else f"n{j}_all").combine_chunks()
            some = g.column(f"n{j}_any").combine_chunks()
            c = pc.if_else(pc.and_(flag.fill_null(False), some.fill_null(False)), nan, c)
        out.append(c)
    return out
