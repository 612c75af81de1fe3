"""The IR on a cuDF DataFrame: what a RAPIDS user would write for each benchmark query."""

from __future__ import annotations

from functools import singledispatch

import numpy as np

from bamql.fused import ir


@singledispatch
def _series(e: ir.Expr, df):
    """A cuDF Series (or scalar) for an expression; NULLs follow cuDF's own semantics."""
    raise NotImplementedError(type(e).__name__)


@_series.register
def _(e: ir.Col, df):
    return df[e.name]


@_series.register
def _(e: ir.Lit, df):
    if e.kind == "timestamp":
        return np.datetime64(int(e.value), "us")
    return e.value


@_series.register
def _(e: ir.Arith, df):
    a, b = _series(e.left, df), _series(e.right, df)
    if e.op == "/":
        return a.astype("float64") / b if hasattr(a, "astype") else a / b
    return _arith(e.op, a, b)


@_series.register
def _(e: ir.Neg, df):
    return -_series(e.arg, df)


@_series.register
def _(e: ir.Cmp, df):
    a, b = _series(e.left, df), _series(e.right, df)
    return {"=": lambda: a == b, "<>": lambda: a != b, "<": lambda: a < b,
            "<=": lambda: a <= b, ">": lambda: a > b, ">=": lambda: a >= b}[e.op]()


@_series.register
def _(e: ir.And, df):
    out = _series(e.args[0], df)
    for a in e.args[1:]:
        out = out & _series(a, df)
    return out


@_series.register
def _(e: ir.Or, df):
    out = _series(e.args[0], df)
    for a in e.args[1:]:
        out = out | _series(a, df)
    return out


@_series.register
def _(e: ir.Not, df):
    return ~_series(e.arg, df)


@_series.register
def _(e: ir.IsNull, df):
    s = _series(e.arg, df)
    return s.notna() if e.negated else s.isna()


@_series.register
def _(e: ir.InList, df):
    s = _series(e.arg, df).isin([v.value for v in e.values if v.value is not None])
    return ~s if e.negated else s


@_series.register
def _(e: ir.Extract, df):
    s = _series(e.arg, df)
    parts = {"year": lambda: s.dt.year.astype("int64"), "month": lambda: s.dt.month,
             "day": lambda: s.dt.day, "hour": lambda: s.dt.hour, "minute": lambda: s.dt.minute,
             "dow": lambda: (s.dt.dayofweek + 1) % 7}
    if e.part not in parts:
        raise NotImplementedError(f"EXTRACT({e.part})")
    return parts[e.part]()


@_series.register
def _(e: ir.Trunc, df):
    freq = {"day": "D", "hour": "h", "minute": "min", "second": "s"}.get(e.unit)
    if freq is None:
        raise NotImplementedError(f"date_trunc('{e.unit}')")
    return _series(e.arg, df).dt.floor(freq)


@_series.register
def _(e: ir.Math, df):
    if e.func != ir.MathFunc.ROUND:
        raise NotImplementedError(f"{e.func}")
    # DuckDB rounds halves away from zero: libcudf's HALF_UP
    return _series(e.arg, df).round(e.digits, how="half_up")


@_series.register
def _(e: ir.Cast, df):
    if e.to == ir.CastTo.DOUBLE:
        raise NotImplementedError("CAST AS DOUBLE")
    return _series(e.arg, df).round(0, how="half_even").astype("int64")


def _arith(op, a, b):
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    return a * b


#: cuDF's name of each aggregate the baseline computes
_CUDF_AGG = {"count": "count", "sum": "sum", "avg": "mean", "min": "min", "max": "max",
             "median": "median"}


def _host(s) -> tuple[np.ndarray, np.ndarray]:
    """A (small) cuDF column as host values and validity."""
    import pyarrow as pa

    a = s.to_arrow()
    if pa.types.is_timestamp(a.type):  # bamql's timestamps: int64 microseconds
        a = a.cast(pa.timestamp("us")).cast(pa.int64())
    ok = a.is_valid().to_numpy(zero_copy_only=False)
    return a.fill_null(0).to_numpy(zero_copy_only=False), ok


def _column(v, n: int):
    """A cuDF Series of ``n`` rows for a Series, or for a scalar repeated."""
    import cudf
    import cupy

    if hasattr(v, "dtype") and hasattr(v, "index"):
        return v.reset_index(drop=True)
    return cudf.Series(cupy.full(n, v))


def grouped_frame(df, q: ir.Query):
    """The filtered rows' GROUP BY keys (``k0``...) and aggregate arguments (``a0``...) as
    a cuDF DataFrame (COUNT(*): a column of ones made on the GPU)."""
    import cupy

    if any(a.func not in _CUDF_AGG or a.filter is not None for a in q.aggs) or \
            any(k.kind == "string" for k in q.keys):
        raise NotImplementedError("the RAPIDS baseline groups by numbers with plain aggregates")
    import cudf

    if q.predicate is not None:
        df = df[_series(q.predicate, df).fillna(False)]
    n = len(df)
    frame = {f"k{i}": _column(_series(k, df), n) for i, k in enumerate(q.keys)}
    for j, a in enumerate(q.aggs):
        frame[f"a{j}"] = _column(_series(a.arg, df), n) if a.arg is not None else \
            cudf.Series(cupy.ones(n, np.int8))
    return cudf.DataFrame(frame)


def agg_spec(q: ir.Query) -> dict[str, str]:
    """cuDF's aggregation of each ``a{j}`` column of ``grouped_frame``."""
    return {f"a{j}": _CUDF_AGG[a.func] for j, a in enumerate(q.aggs)}


def finish_grouped(out, q: ir.Query) -> list[tuple]:
    """The groups (a cuDF frame of ``k*`` and ``a*`` columns, few rows) through the select
    list, HAVING, ORDER BY and LIMIT on the host, as bamql finishes its groups."""
    from bamql.exec.result import assemble
    from bamql.kernels.accumulate import Grouped

    keys = [_host(out[f"k{i}"]) for i in range(len(q.keys))]
    aggs = [_host(out[f"a{j}"]) for j in range(len(q.aggs))]
    return [tuple(r.values()) for r in assemble(Grouped(keys, aggs, len(out)), q, {}).to_pylist()]


def run_grouped(df, q: ir.Query) -> list[tuple]:
    """A GROUP BY as a cuDF user writes it: key and argument columns, ``groupby(...,
    dropna=False).agg``; the groups (few) come to the host for the select list, HAVING,
    ORDER BY and LIMIT (``exec.result.assemble``, as bamql finishes its groups)."""
    out = grouped_frame(df, q).groupby([f"k{i}" for i in range(len(q.keys))], dropna=False,
                                       sort=False).agg(agg_spec(q)).reset_index()
    return finish_grouped(out, q)


def rows_frame(df, q: ir.RowQuery):
    """The filtered rows' ORDER BY terms (``o0``...) and select list (``x0``...) as a cuDF
    DataFrame."""
    import cudf

    if q.predicate is not None:
        df = df[_series(q.predicate, df).fillna(False)]
    n = len(df)
    frame = {f"o{i}": _column(_series(e, df), n) for i, (e, _, _) in enumerate(q.order)}
    frame.update({f"x{j}": _column(_series(e, df), n) for j, e in enumerate(q.exprs)})
    return cudf.DataFrame(frame)


def first_rows(frame, q: ir.RowQuery, with_offset: bool = True):
    """``frame`` (of ``rows_frame``) sorted by the order terms, cut to LIMIT (after OFFSET;
    without ``with_offset``, the first OFFSET + LIMIT: a partition's candidates)."""
    firsts = {nulls_first for _, _, nulls_first in q.order}
    if not q.order or len(firsts) > 1:
        raise NotImplementedError("the RAPIDS baseline sorts by one NULLS FIRST/LAST rule")
    out = frame.sort_values([f"o{i}" for i in range(len(q.order))],
                            ascending=[not desc for _, desc, _ in q.order],
                            na_position="first" if firsts.pop() else "last")
    if q.limit is None:
        return out.iloc[q.offset:] if with_offset else out
    return out.iloc[q.offset:q.offset + q.limit] if with_offset else out.head(q.offset + q.limit)


def finish_rows(out, q: ir.RowQuery) -> list[tuple]:
    """The kept rows' select list as tuples of Python values (without the sorted frame's
    index, which ``to_arrow`` would add as a column)."""
    kept = out.reset_index(drop=True)[[f"x{j}" for j in range(len(q.exprs))]].to_arrow()
    return [tuple(r.values()) for r in kept.to_pylist()]


def run_rows(df, q: ir.RowQuery) -> list[tuple]:
    """``ORDER BY ... LIMIT k`` as a cuDF user writes it: filter, ``sort_values`` by the
    order terms, keep the first rows; the kept rows' select list comes to the host."""
    return finish_rows(first_rows(rows_frame(df, q), q), q)


def scalar_row(q: ir.Query, values: list) -> list[tuple]:
    """An ungrouped query's one row from its aggregates' values (None: NULL)."""
    from bamql.fused.evaluate import evaluate

    env = {("agg", j): (np.array([v if v is not None else 0.0]), np.array([v is not None]))
           for j, v in enumerate(values)}
    row = []
    for e in q.exprs:
        v, ok = evaluate(e, env, 1)
        row.append(v[0].item() if ok[0] else None)
    return [tuple(row)]


def run_query(df, q: ir.Query | ir.RowQuery) -> list[tuple]:
    """Filter, aggregate (grouped or not), or return the ordered rows; rows as tuples of
    Python values."""
    if isinstance(q, ir.RowQuery):
        return run_rows(df, q)
    if q.keys:
        return run_grouped(df, q)
    if q.predicate is not None:
        df = df[_series(q.predicate, df).fillna(False)]
    if q.having is not None or q.order or q.limit is not None:
        raise NotImplementedError("the RAPIDS baseline runs no HAVING, ORDER BY or LIMIT "
                                  "without GROUP BY")
    out = []
    for a in q.aggs:
        if a.arg is None:
            out.append(len(df))
            continue
        s = _series(a.arg, df)
        v = {"count": s.count, "sum": s.sum, "avg": s.mean, "min": s.min, "max": s.max,
             "median": s.median}[a.func]()
        v = v.item() if hasattr(v, "item") else v
        out.append(None if v is not None and isinstance(v, float) and np.isnan(v) and a.func != "count"
                   and s.count() == 0 else v)
    return scalar_row(q, out)


def dnf_filters(q: ir.Query) -> list | None:
    """cuDF ``filters=`` (stripe pruning by statistics) for conjunctions of simple terms."""
    terms = []
    for c in ir.conjuncts(q.predicate):
        if isinstance(c, ir.Cmp) and isinstance(c.left, ir.Col) and isinstance(c.right, ir.Lit) \
                and c.right.value is not None and c.left.kind in ("int", "float"):
            terms.append((c.left.name, {"=": "==", "<>": "!="}.get(c.op, c.op), c.right.value))
        elif isinstance(c, ir.InList) and isinstance(c.arg, ir.Col) and not c.negated:
            terms.append((c.arg.name, "in", [v.value for v in c.values if v.value is not None]))
    return [terms] if terms else None


# -- plan-tree queries, as a cuDF user writes each one ----------------------------------
def _rows(frame) -> list[tuple]:
    t = frame.reset_index(drop=True).to_arrow()
    return [tuple(r.values()) for r in t.to_pylist()]


def _w01(df) -> list[tuple]:
    """The three largest fares of each pickup zone: sort, then each group's head."""
    cols = ["pickup_location_id", "fare_amount", "trip_distance"]
    top = df[cols].sort_values(cols, ascending=[True, False, False]).groupby(
        "pickup_location_id", sort=False).head(3)
    return _rows(top.sort_values(cols, ascending=[True, False, False]))


def _r01(df) -> list[tuple]:
    """Trips per hour and their running total: a groupby on the floored hour, a cumsum."""
    import cudf

    n = df.groupby(df["pickup_datetime"].dt.floor("h"), sort=True).size()
    out = cudf.DataFrame({"hour": n.index, "n": n.values})
    out["running"] = out["n"].cumsum()
    return _rows(out)


def _j01(df) -> list[tuple]:
    """Trips above their zone's average fare: a groupby mean merged back onto the rows."""
    z = df.groupby("pickup_location_id").agg(avg_fare=("fare_amount", "mean")).reset_index()
    m = df[["pickup_location_id", "fare_amount"]].merge(z, on="pickup_location_id")
    return [(int((m["fare_amount"] > m["avg_fare"]).sum()),)]


#: The plan-tree benchmark queries that have a cuDF version: the columns each reads, and
#: the function that answers it from a cuDF DataFrame of them.
TREE = {
    "w01": (("fare_amount", "pickup_location_id", "trip_distance"), _w01),
    "r01": (("pickup_datetime",), _r01),
    "j01": (("fare_amount", "pickup_location_id"), _j01),
}


def tree_query(sql: str):
    """(columns, function) of the plan-tree benchmark query whose text is ``sql``; None
    where it has no cuDF version here."""
    from bamql.queries import load

    for name, spec in TREE.items():
        if load(name) == sql:
            return spec
    return None
