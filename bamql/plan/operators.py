"""Physical operators on the CPU: one per logical node kind, each taking its children's
relations (Arrow tables) to its own. Fused leaves and scans run through the session's
fused kernels (CPU or GPU); the operators above them run on Arrow compute.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import singledispatch

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from bamql.errors import BamqlError, PlanError
from bamql.plan import nodes as n
from bamql.plan.aggregates import aggregate_rel
from bamql.plan.expr import _HANDLERS as HANDLERS
from bamql.plan.expr import Evaluator, Rel, Value, _coerce, _common, broadcast, canonical, in_array, resolve
from bamql.plan.topk import count_thresholds
from bamql.plan.windows import order_indices, top_candidates, window_rel

D = "duckdb"


class Context:
    """What operators need from the session: ``run_sql`` runs a SELECT through the fused
    kernel and returns its Result (``run_joined`` one that joins tables given by name, as
    dimension tables); ``values_bound(table, column)`` how many distinct values a stored
    column can hold, where its type and range bound them (None: not bounded); ``leaves``
    collects each run's Result;
    ``read_wide(table, columns)`` reads the columns of a stored table whole, as Arrow, where
    one of them is a DECIMAL of more than 18 digits that the fused kernels do not take (None
    where none is)."""

    def __init__(self, run_sql: Callable[[str], object],
                 read_wide: Callable[[str, tuple[str, ...]], pa.Table | None] | None = None,
                 run_joined: Callable[[str, dict[str, pa.Table]], object] | None = None,
                 values_bound: Callable[[str, str], int | None] | None = None,
                 ) -> None:
        self.run_sql = run_sql
        self.read_wide = read_wide or (lambda table, columns: None)
        self.run_joined = run_joined
        self.values_bound = values_bound
        self.leaves: list = []
        #: per recursive CTE being run, the rows its last round added (``WorkTable``)
        self.work: dict[str, pa.Table] = {}

    def fused(self, sql: str, tables: dict[str, pa.Table] | None = None) -> pa.Table:
        """The Arrow table of a SELECT through the fused kernel; ``tables``: dimension
        tables it joins, by name (``run_joined``)."""
        if tables:
            if self.run_joined is None:
                raise PlanError("internal: no kernel takes this plan's derived dimension tables")
            res = self.run_joined(sql, tables)
        else:
            res = self.run_sql(sql)
        self.leaves.append(res)
        return res.table


def run(node: n.Node, ctx: Context) -> Rel:
    """The relation ``node`` computes."""
    return execute(node, ctx)


@singledispatch
def execute(node: n.Node, ctx: Context) -> Rel:
    raise PlanError(f"no operator runs {type(node).__name__}")


def _positional(t: pa.Table) -> pa.Table:
    return t.rename_columns([f"c{i}" for i in range(t.num_columns)])


@execute.register
def _fused(node: n.Fused, ctx: Context) -> Rel:
    t = ctx.fused(node.sql)
    if t.num_columns != len(node.names):
        raise PlanError(f"internal: a fused kernel returned {t.num_columns} columns, "
                        f"expected {len(node.names)}")
    return Rel(_positional(t), node.cols)


@execute.register
def _fused_join(node: n.FusedJoin, ctx: Context) -> Rel:
    side = execute(node.child, ctx)
    rows = pa.Table.from_arrays([side.column(i) for i in range(len(node.dim_cols))],
                                names=list(node.dim_cols))
    try:
        t = ctx.fused(node.sql, {node.dim: rows})
    except BamqlError:  # the kernel does not take these rows: the plan it replaced
        return execute(node.fallback, ctx)
    return Rel(_positional(t), node.cols)


def scan_sql(node: n.Scan) -> str:
    """The SELECT a scan runs through the kernel: its columns, its pushed-down WHERE."""
    cols = ", ".join(exp.to_identifier(c, quoted=True).sql(dialect=D) for c in node.columns)
    sql = f"SELECT {cols} FROM {exp.to_identifier(node.table, quoted=True).sql(dialect=D)}"
    if node.predicate:
        from bamql.plan.rules import _unqualified

        sql += " WHERE " + exp.and_(*[_unqualified(p) for p in node.predicate]).sql(dialect=D)
    return sql


@execute.register
def _scan(node: n.Scan, ctx: Context) -> Rel:
    whole = ctx.read_wide(node.table, node.columns)
    if whole is not None:  # a wide DECIMAL among them: read whole, filtered by Arrow compute
        t = _positional(whole)
        if node.predicate:
            mask = Evaluator(Rel(t, node.cols), None).condition(exp.and_(*node.predicate))
            t = t.filter(mask)
    else:
        t = _positional(ctx.fused(scan_sql(node)))
    return _scanned(node, t)


def _scanned(node: n.Scan, t: pa.Table) -> Rel:
    """A scan's rows (positional columns) as its relation, DECIMAL columns exact."""
    scales = dict(node.decimals)
    for i, c in enumerate(node.columns):  # a DECIMAL column's values as exact decimals
        if c in scales and pa.types.is_floating(t.column(i).type):
            s = scales[c]
            exact = pc.round(t.column(i), s).cast(pa.decimal128(38, s))
            t = t.set_column(i, f"c{i}", exact)
    return Rel(t, node.cols)


@execute.register
def _values(node: n.Values, ctx: Context) -> Rel:
    t = node.table
    cols = []
    for c in t.columns:
        c = c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c
        if pa.types.is_dictionary(c.type):
            c = c.cast(c.type.value_type)
        if getattr(pa.types, "is_string_view", lambda _: False)(c.type):
            c = c.cast(pa.string())
        cols.append(c)
    return Rel.of(cols, node.cols)


@execute.register
def _alias(node: n.Alias, ctx: Context) -> Rel:
    rel = execute(node.child, ctx)
    if node.names and len(node.names) > len(rel.cols):
        raise PlanError(f"table {node.qual!r} has {len(rel.cols)} columns, but "
                        f"{len(node.names)} names were given")
    return Rel(rel.table, node.cols + tuple((node.qual, c) for _, c in rel.cols[len(node.cols):]))


def evaluator(rel: Rel, subplans: tuple[n.SubPlan, ...], ctx: Context) -> Evaluator:
    cache: dict[int, object] = {}

    def sub(ref: exp.Expression, ev: Evaluator) -> Value:
        return _subquery(ref, ev, subplans, ctx, cache)

    return Evaluator(rel, sub)


@execute.register
def _filter(node: n.Filter, ctx: Context) -> Rel:
    rel = execute(node.child, ctx)
    mask = evaluator(rel, node.subplans, ctx).condition(node.condition)
    return Rel(rel.table.filter(mask), rel.cols)


@execute.register
def _project(node: n.Project, ctx: Context) -> Rel:
    rel = execute(node.child, ctx)
    ev = evaluator(rel, node.subplans, ctx)
    arrays = []
    for e in node.exprs:
        a = ev.array(e)
        if pa.types.is_null(a.type):
            a = a.cast(pa.int32())
        arrays.append(a)
    return Rel.of(arrays, node.cols)


@execute.register
def _aggregate(node: n.Aggregate, ctx: Context) -> Rel:
    rel = execute(node.child, ctx)
    return aggregate_rel(rel, node, evaluator(rel, (), ctx))


#: The name a ranked scan gives its table of thresholds (registered for that one query)
RANKS = "__bamql_ranks"
#: Most (partition, order value) pairs a ranked scan counts (the product of their columns'
#: bounds, ``Context.values_bound``)
RANKED_PAIRS = 1 << 24


def ranked_scan(node: n.Window, ctx: Context) -> Rel | None:
    """The rows of ``node``'s Scan that can rank at most ``node.keep`` in their partition,
    where the kernels can find them: one PARTITION BY column and a first ORDER BY column of
    the table whose values are few (``Context.values_bound``). A GROUP BY of the two counts
    each pair's rows (in the kernel); each partition's ``keep``-th value follows
    (``topk.count_thresholds``); the scan then reads only the rows at or before their
    partition's value, looked up by its key in the kernel. None where this does not apply
    or the kernel refuses it (the scan then reads every row)."""
    scan, (w,) = node.child, node.funcs
    order, parts = w.args.get("order"), w.args.get("partition_by") or []
    if not isinstance(scan, n.Scan) or not order or not order.expressions or len(parts) != 1 \
            or ctx.values_bound is None or not node.keep:
        return None
    o = order.expressions[0]
    cols = []
    for c in (parts[0], o.this):
        if not isinstance(c, exp.Column):
            return None
        try:
            i = resolve(scan.cols, c)
        except PlanError:
            return None
        if i is None:
            return None
        cols.append(scan.columns[i])
    bounds = [ctx.values_bound(scan.table, c) for c in cols]
    if None in bounds or bounds[0] * bounds[1] > RANKED_PAIRS:
        return None
    desc, nulls_first = bool(o.args.get("desc")), bool(o.args.get("nulls_first"))
    p, v = (exp.to_identifier(c, quoted=True).sql(dialect=D) for c in cols)
    table = exp.to_identifier(scan.table, quoted=True).sql(dialect=D)
    from bamql.plan.rules import _unqualified

    where = [_unqualified(x).sql(dialect=D) for x in scan.predicate]
    counts = f"SELECT {p}, {v}, COUNT(*) FROM {table}" + \
        (f" WHERE {' AND '.join(where)}" if where else "") + " GROUP BY 1, 2"
    try:
        t = ctx.fused(counts)
        keys, values = count_thresholds(t.column(0).combine_chunks(), t.column(1).combine_chunks(),
                                        t.column(2).to_numpy(), node.keep, desc, nulls_first)
        if not len(keys):
            return None
        ranks = pa.table({"p": keys, "v": values})
        test = f"s.{v} {'>=' if desc else '<='} h.v" + (f" OR s.{v} IS NULL" if nulls_first else "")
        sel = ", ".join(f"s.{exp.to_identifier(c, quoted=True).sql(dialect=D)}" for c in scan.columns)
        sql = (f"SELECT {sel} FROM {table} AS s LEFT JOIN {RANKS} AS h ON s.{p} = h.p WHERE "
               + " AND ".join([*(f"({x})" for x in where), f"(h.v IS NULL OR {test})"]))
        return _scanned(scan, _positional(ctx.fused(sql, {RANKS: ranks})))
    except BamqlError:
        return None


@execute.register
def _window(node: n.Window, ctx: Context) -> Rel:
    rel = ranked_scan(node, ctx) if node.keep is not None else None
    if rel is None:
        rel = execute(node.child, ctx)
    if node.keep is not None:
        rel = top_candidates(rel, node, evaluator(rel, (), ctx))
    return window_rel(rel, node, evaluator(rel, (), ctx))


@execute.register
def _sort(node: n.Sort, ctx: Context) -> Rel:
    rel = execute(node.child, ctx)
    keys = [(rel.column(i), desc, nf) for i, desc, nf in node.keys]
    return rel.take(order_indices(keys, rel.rows))


@execute.register
def _limit(node: n.Limit, ctx: Context) -> Rel:
    rel = execute(node.child, ctx)
    stop = rel.rows if node.limit is None else min(rel.rows, node.offset + node.limit)
    start = min(node.offset, stop)
    return Rel(rel.table.slice(start, stop - start), rel.cols)


@execute.register
def _select(node: n.Select, ctx: Context) -> Rel:
    rel = execute(node.child, ctx)
    return Rel(rel.table.select(list(range(node.n))), rel.cols[:node.n])


def distinct_table(t: pa.Table) -> pa.Table:
    """The distinct rows of ``t`` (NULLs equal, first appearance kept)."""
    if t.num_rows == 0 or t.num_columns == 0:
        return t.slice(0, min(t.num_rows, 1)) if t.num_columns == 0 else t
    idx = pa.array(np.arange(t.num_rows))
    keyed = pa.Table.from_arrays([canonical(c.combine_chunks()) for c in t.columns], names=t.column_names)
    g = keyed.append_column("__i", idx).group_by(t.column_names, use_threads=False).aggregate(
        [("__i", "min")])
    return t.take(np.sort(g.column("__i_min").to_numpy()))


@execute.register
def _distinct(node: n.Distinct, ctx: Context) -> Rel:
    rel = execute(node.child, ctx)
    return Rel(distinct_table(rel.table), rel.cols)


def _unify(a: Rel, b: Rel) -> tuple[list[pa.Array], list[pa.Array]]:
    left, right = [], []
    for i in range(len(a.cols)):
        x, y = a.column(i), b.column(i)
        if x.type != y.type:
            x, y = _common([x, y])
        left.append(x)
        right.append(y)
    return left, right


@execute.register
def _setop(node: n.SetOp, ctx: Context) -> Rel:
    a, b = execute(node.left, ctx), execute(node.right, ctx)
    left, right = _unify(a, b)
    names = [f"c{i}" for i in range(len(left))]
    ta = pa.Table.from_arrays(left, names=names)
    tb = pa.Table.from_arrays(right, names=names)
    if node.kind == n.SetKind.UNION:
        t = pa.concat_tables([ta, tb])
        return Rel(distinct_table(t) if node.distinct else t, node.cols)
    if not node.distinct:
        raise PlanError(f"{node.kind.value} ALL is not supported")
    other = _row_set(tb)
    ta = distinct_table(ta)
    keep = [r in other for r in _row_keys(ta)]
    if node.kind == n.SetKind.EXCEPT:
        keep = [not k for k in keep]
    return Rel(ta.filter(pa.array(keep, pa.bool_())), node.cols)


#: Rounds a recursive CTE may run before it is taken for one that never ends
MAX_ROUNDS = 100_000


@execute.register
def _work_table(node: n.WorkTable, ctx: Context) -> Rel:
    return Rel(ctx.work[node.name], node.cols)


@execute.register
def _recursive(node: n.Recursive, ctx: Context) -> Rel:
    first = execute(node.left, ctx)
    names = [f"c{i}" for i in range(len(node.names))]
    parts = [pa.Table.from_arrays([first.column(i) for i in range(len(names))], names=names)]
    if node.distinct:
        parts[0] = distinct_table(parts[0])
    seen = _row_set(parts[0]) if node.distinct else None
    work = parts[0]
    outer = ctx.work.get(node.name)
    try:
        for _ in range(MAX_ROUNDS):
            ctx.work[node.name] = work
            step = execute(node.right, ctx)
            if len(step.cols) != len(names):
                raise PlanError(f"WITH RECURSIVE {node.name}: the recursive part returns "
                                f"{len(step.cols)} columns, the first part {len(names)}")
            try:  # each round in the first part's types, as DuckDB casts it
                new = pa.Table.from_arrays(
                    [_fitted(step.column(i), parts[0].schema.field(i).type)
                     for i in range(len(names))], names=names)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
                raise PlanError(f"WITH RECURSIVE {node.name}: a value of its recursive part does "
                                f"not fit the type of its first part ({str(e).splitlines()[0]})"
                                ) from None
            if seen is not None:  # UNION: rows not met before, once each
                new = distinct_table(new)
                keep = [r not in seen for r in _row_keys(new)]
                new = new.filter(pa.array(keep, pa.bool_()))
                seen.update(_row_keys(new))
            if not new.num_rows:
                break
            parts.append(new)
            work = new
        else:
            raise PlanError(f"WITH RECURSIVE {node.name} ran {MAX_ROUNDS:,} rounds without "
                            "ending; give its recursive part a condition that stops it")
    finally:
        if outer is None:
            ctx.work.pop(node.name, None)
        else:
            ctx.work[node.name] = outer
    table = pa.concat_tables(parts)
    return Rel(table, node.cols)


def _fitted(a: pa.Array, t: pa.DataType) -> pa.Array:
    """``a`` cast to ``t``; a DECIMAL whose digits ``t`` cannot hold is an error (Arrow's
    cast keeps them)."""
    out = a.cast(t)
    if pa.types.is_decimal(t) and out.null_count < len(out):
        bound = pa.scalar(10 ** (t.precision - t.scale), pa.decimal128(38, 0))
        if pc.any(pc.greater_equal(pc.abs(out.cast(pa.decimal128(38, t.scale))), bound)).as_py():
            raise pa.ArrowInvalid(f"a value has more digits than DECIMAL({t.precision},{t.scale})")
    return out


def _row_keys(t: pa.Table) -> list[tuple]:
    """The rows of ``t`` as tuples that compare as SQL sets do (NaN equal to NaN, -0.0 to
    0.0)."""
    t = pa.Table.from_arrays([canonical(c.combine_chunks()) for c in t.columns], names=t.column_names)
    return [tuple("NaN" if isinstance(x, float) and x != x else x for x in r.values())
            for r in t.to_pylist()]


def _row_set(t: pa.Table) -> set[tuple]:
    return set(_row_keys(t))


@execute.register
def _join(node: n.Join, ctx: Context) -> Rel:
    from bamql.plan.hashjoin import join_rel

    return join_rel(execute(node.left, ctx), execute(node.right, ctx), node,
                    lambda rel: evaluator(rel, (), ctx))


# -- subqueries ---------------------------------------------------------------------------
def _subquery(ref: exp.Expression, ev: Evaluator, subplans, ctx: Context, cache: dict) -> Value:
    i = int(ref.this.this)
    sp = subplans[i]
    if i not in cache:
        cache[i] = execute(sp.plan, ctx)
    rel: Rel = cache[i]
    negated = bool(ref.args.get("negated"))
    if sp.outer:
        return _lookup(sp, rel, ev, negated)
    if sp.kind == n.SubKind.EXISTS:
        return pa.scalar((rel.rows > 0) != negated)
    if sp.kind == n.SubKind.SCALAR:
        if len(rel.cols) != 1:
            raise PlanError("a subquery used as a value must return one column")
        if rel.rows > 1:
            raise PlanError("more than one row returned by a subquery used as an expression")
        c = rel.column(0)
        return c[0] if rel.rows else pa.scalar(None, c.type)
    if len(rel.cols) != 1:
        raise PlanError("IN (subquery) needs a subquery of one column")
    left = ev.eval(ref.expression)
    return in_array(left, rel.column(0), ev.rel.rows)


def _lookup(sp: n.SubPlan, rel: Rel, ev: Evaluator, negated: bool) -> Value:
    """A correlated subquery's value per outer row: its keyed plan joined to the outer
    row's keys (an equality lookup)."""
    k = len(sp.outer)
    rows = ev.rel.rows
    outer = [ev.array(e) for e in sp.outer]
    inner = [rel.column(i) for i in range(k)]
    oks, iks = [], []
    for a, b in zip(outer, inner, strict=True):
        a, b = _coerce(a, b)
        oks.append(canonical(a))
        iks.append(canonical(b))
    lt = pa.Table.from_arrays([*oks, pa.array(np.arange(rows))],
                              names=[*(f"k{i}" for i in range(k)), "__row"])
    if sp.kind == n.SubKind.EXISTS:
        rt = pa.Table.from_arrays([*iks, pa.array(np.ones(rel.rows, np.int8))],
                                  names=[*(f"k{i}" for i in range(k)), "__v"])
    else:
        rt = pa.Table.from_arrays([*iks, rel.column(k)], names=[*(f"k{i}" for i in range(k)), "__v"])
    keys = [f"k{i}" for i in range(k)]
    j = lt.join(rt, keys, keys, join_type="left outer", use_threads=False)
    if j.num_rows != rows:
        raise PlanError("more than one row returned by a subquery used as an expression")
    j = j.sort_by("__row")
    v = j.column("__v").combine_chunks()
    if sp.kind == n.SubKind.EXISTS:
        hit = pc.is_valid(v)
        return pc.invert(hit) if negated else hit
    if sp.count:
        v = v.fill_null(0)
    return v


HANDLERS[n.SubRef] = lambda ev, e: ev.subquery(e, ev)
__all__ = ["Context", "run", "execute", "broadcast", "scan_sql"]
