"""A session's statements through the relational plan: parse, plan, optimize, run. The
first rule makes a statement the fused translator takes whole one fused leaf
(``n.FusedStatement``); any other is built node by node (``plan.build``), rewritten by the
optimizer's rules (``plan.rules``, which fuse the parts the kernel takes) and run by the
physical operators (``plan.operators``). Fused leaves and scans run through the session's
own kernels; EXPLAIN shows the tree and, under each fused leaf, its kernel's plan."""

from __future__ import annotations

from functools import singledispatch
from typing import TYPE_CHECKING

import pyarrow as pa
import sqlglot
from sqlglot import exp

from bamql.errors import TREE_ONLY, BamqlError, PlanError
from bamql.exec.result import Result
from bamql.plan import nodes as n
from bamql.sql.valuetypes import WIDE_WORDS

if TYPE_CHECKING:  # the tree's modules load where a statement is not one fused leaf
    from bamql.plan.build import Catalog

#: Words of the fused translator's refusals that the plan tree may answer instead (a
#: construct it does not take, never a name or a type that is wrong).
_STRUCTURAL = ("not supported", "only SELECT", "must name", "a CTE must", "needs FROM",
               "arithmetic needs numbers, got a timestamp", "is not unique in",
               "expression without a small domain", "small domains only", "mixes columns of",
               "must appear in GROUP BY or inside an aggregate")


#: Refusals of the fused translator that name only the construct the tree exists for: where
#: the tree fails too, its own error says more.
_TREE_WORDS = ("SUBQUERY", "WINDOW", "QUALIFY", "only SELECT", "FROM must name", "JOIN must name",
               "a CTE must", "function exists()", WIDE_WORDS, "SELECT DISTINCT ON",
               "SELECT * EXCLUDE", "SELECT * REPLACE", "SELECT * RENAME", "SELECT * ILIKE")
#: The fused translator's refusal of an aggregate over DISTINCT values (SUM, AVG, STDDEV...)
_DISTINCT_AGG = "(DISTINCT ...) is not supported"


def tree_error(fused: PlanError, tree: PlanError) -> PlanError:
    """The error to show where both paths refused a query: the fused translator's (tested
    words, naming the construct), unless it only named the construct the tree runs."""
    msg = str(fused)
    return tree if msg.startswith(_TREE_WORDS) or _DISTINCT_AGG in msg or TREE_ONLY in msg else fused


def tree_worthy(err: PlanError) -> bool:
    """Whether the fused translator refused a construct (not a name or a type)."""
    return any(w in str(err) for w in _STRUCTURAL)


def catalog(session) -> Catalog:
    """What a session's plans read, and its kernels' test of a SELECT."""
    from bamql.plan.build import Catalog

    def fusable(sql: str) -> bool:
        try:
            _fused_whole(session, sql)
        except BamqlError:
            return False
        return True

    cat = session.catalog()
    tables = {name: tuple(cols) for name, cols in cat.items()}
    decimals = {name: tuple((c, m.scale) for c, m in cols.items()
                            if m.kind == "float" and m.scale and m.decimal is not False)
                for name, cols in cat.items()}
    memory = {name: d.table for name, d in session.dimensions.items()}
    return Catalog(tables, memory, fusable, decimals)


def plan(session, text: str, refused: PlanError | None = None) -> n.Node:
    """The optimized plan of ``text`` (parameters and files bound already).

    The first rule: a statement the fused translator takes whole is one fused leaf. Where
    it refuses a construct (never a name or a type: those errors are the statement's), or
    its leaf refused at run time (``refused``), the statement is built node by node and
    rewritten by the optimizer's rules; where that fails too, the error that names the
    construct best is raised (``tree_error``)."""
    return _planned(session, text, refused)[0]


def _planned(session, text: str, refused: PlanError | None = None
             ) -> tuple[n.Node, PlanError | None]:
    """``plan``'s node, and the fused translator's refusal where the node is a tree."""
    if refused is None:
        try:
            _fused_whole(session, text)
            return n.FusedStatement(text), None
        except PlanError as e:
            if not tree_worthy(e):
                raise
            refused = e
    try:
        return _built(session, text), refused
    except PlanError as t:
        raise tree_error(refused, t) from None


def _fused_whole(session, sql: str) -> None:
    """Raises where the fused translator does not take ``sql`` whole (its refusal)."""
    session._hashed(session._translate(sql))


def _built(session, text: str) -> n.Node:
    """``text`` as a tree of nodes, rewritten by the optimizer's rules."""
    from bamql.plan.build import build
    from bamql.plan.rules import optimize, prune_scans

    try:
        tree = sqlglot.parse_one(text, read="duckdb")
    except sqlglot.errors.SqlglotError as e:
        raise PlanError(f"cannot parse the query: {str(e).splitlines()[0]}") from None
    cat = catalog(session)
    node = optimize(build(tree, cat), cat)
    return prune_scans(node, _mentioned(tree))


def _mentioned(tree: exp.Expression) -> frozenset[str] | None:
    """The lowercase names of every column the statement names; None where a ``*`` in a
    select list needs every column."""
    for s in tree.find_all(exp.Star):
        if not isinstance(s.parent, exp.Count):
            return None
    return frozenset(c.name.lower() for c in tree.find_all(exp.Column) if not isinstance(c.this, exp.Star))


def execute(session, text: str) -> Result:
    """Plan ``text`` and run its plan: a fused statement through its leaf (planned again
    as a tree where the leaf refuses at run time, e.g. a joined key that is not unique),
    any other tree through the physical operators."""
    node, refused = _planned(session, text)
    if isinstance(node, n.FusedStatement):
        try:
            return session.run(session._translate(node.sql))
        except PlanError as e:
            if not tree_worthy(e):
                raise
            node, refused = _planned(session, text, e)
    try:
        return run_nodes(session, node)
    except PlanError as t:  # where the tree fails too: the error naming the construct best
        if refused is None:
            raise
        raise tree_error(refused, t) from None


def run_nodes(session, node: n.Node) -> Result:
    """Run a plan of nodes through the physical operators."""
    from bamql.plan.operators import Context, run

    ctx = Context(lambda sql: session.run(session._translate(sql)),
                  lambda table, columns: read_wide(session, table, columns),
                  lambda sql, tables: session.run(session._translate_with(sql, tables)),
                  lambda table, column: values_bound(session, table, column))
    try:
        rel = run(node, ctx)
    except MemoryError:
        from bamql.errors import DeviceError

        raise DeviceError("out of host memory while running the query") from None
    except (pa.ArrowException, ValueError, TypeError, OverflowError) as e:
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise PlanError(f"cannot run the query: {first}") from None
    names = [c for _, c in node.cols]
    table = pa.Table.from_arrays([rel.column(i) for i in range(len(names))], names=names)
    stats = ctx.leaves[0].stats if len(ctx.leaves) == 1 else None
    return Result(table, stats, show(node, session))


def values_bound(session, table: str, column: str) -> int | None:
    """How many distinct values stored ``column`` of ``table`` can hold, where its type and
    range bound them (``quantiles.value_range``); None where they are not bounded."""
    from bamql.exec.quantiles import value_range

    try:
        meta = session.store(table).columns.get(column)
    except BamqlError:
        return None
    return None if meta is None else value_range(meta)


def read_wide(session, table: str, columns: tuple[str, ...]) -> pa.Table | None:
    """The ``columns`` of stored ``table``, every row, as Arrow (its partitions' in order),
    where one of them is a DECIMAL of more than 18 digits (``ColumnMeta.wide``), which the
    fused kernels do not read; None where none is."""
    store = session.store(table)
    if not any(store.columns[c].wide for c in columns):
        return None
    return pa.concat_tables(p.to_table(list(columns)) for p in store.parts)


def _wide(session, node: n.Scan) -> bool:
    """Whether ``node`` reads a DECIMAL of more than 18 digits (``read_wide``)."""
    try:
        cols = session.store(node.table).columns
    except BamqlError:
        return False
    return any(cols[c].wide for c in node.columns if c in cols)


def show(node: n.Node, session=None, depth: int = 0) -> str:
    """The plan as an indented tree; under a fused leaf or a scan, its kernel's plan."""
    if isinstance(node, n.FusedStatement):
        return "\n".join(pad_lines(session.explain_query(session._translate(node.sql)), depth)) \
            if session is not None else "  " * depth + f"FusedKernel: {node.sql}"
    pad = "  " * depth
    line = pad + _label(node)
    lines = [line]
    if isinstance(node, n.Scan) and session is not None and _wide(session, node):
        lines[0] = line.removesuffix(" (kernel)") + " (CPU)"
        lines.append(pad + "    every row read whole into Arrow and filtered there: a DECIMAL "
                           "of more than 18 digits, which the fused kernels do not read")
    elif isinstance(node, n.Fused | n.Scan) and session is not None:
        from bamql.plan.operators import scan_sql

        sql = node.sql if isinstance(node, n.Fused) else scan_sql(node)
        try:
            inner = session.explain_query(session._translate(sql))
        except BamqlError as e:
            inner = f"(not planned: {e})"
        lines += [pad + "    " + x for x in inner.splitlines()]
    kids = (node.child,) if isinstance(node, n.FusedJoin) else node.children
    for c in kids:
        lines.append(show(c, session, depth + 1))
    for i, s in enumerate(n.subplans_of(node)):
        lines.append(f"{pad}  subquery {i} ({s.kind.value}"
                     + (f", keyed by {', '.join(e.sql(dialect='duckdb') for e in s.outer)}"
                        if s.outer else "") + "):")
        lines.append(show(s.plan, session, depth + 2))
    return "\n".join(lines)


def pad_lines(text: str, depth: int) -> list[str]:
    """``text``'s lines indented ``depth`` levels."""
    return ["  " * depth + x for x in text.splitlines()]


def _sql(e: exp.Expression) -> str:
    return e.sql(dialect="duckdb")


@singledispatch
def _label(node: n.Node) -> str:
    """The line EXPLAIN shows for ``node`` (one rule per node class)."""
    return type(node).__name__


@_label.register
def _(node: n.Fused) -> str:
    return f"FusedKernel [GPU or CPU, as the session runs]: {node.sql}"


@_label.register
def _(node: n.FusedJoin) -> str:
    return ("FusedKernel [GPU or CPU, as the session runs], the rows below joined by key "
            f"inside it: {node.sql}")


@_label.register
def _(node: n.Scan) -> str:
    where = f" WHERE {' AND '.join(_sql(p) for p in node.predicate)}" if node.predicate else ""
    return f"Scan {node.table} AS {node.qual} [{', '.join(node.columns)}]{where} (kernel)"


@_label.register
def _(node: n.Recursive) -> str:
    how = "UNION" if node.distinct else "UNION ALL"
    return f"RecursiveCTE {node.name} ({how}: the second part round after round) (CPU)"


@_label.register
def _(node: n.WorkTable) -> str:
    return f"WorkTable {node.name} (the rows the last round added)"


@_label.register
def _(node: n.Values) -> str:
    return f"Values {node.label} ({node.table.num_rows} rows) AS {node.qual}"


@_label.register
def _(node: n.Alias) -> str:
    return f"Alias {node.qual}" + (f" ({', '.join(node.names)})" if node.names else "")


@_label.register
def _(node: n.Filter) -> str:
    return f"Filter {_sql(node.condition)} (CPU)"


@_label.register
def _(node: n.Project) -> str:
    return "Project " + ", ".join(
        f"{_sql(e)} AS {nm}" if _sql(e) != nm else nm
        for e, nm in zip(node.exprs, node.names, strict=True)) + " (CPU)"


@_label.register
def _(node: n.Aggregate) -> str:
    keys = ", ".join(_sql(k) for k in node.keys) or "()"
    sets = f" sets {list(node.sets)}" if node.sets is not None else ""
    return f"HashAggregate by {keys}{sets}: {', '.join(_sql(a) for a in node.aggs)} (CPU)"


@_label.register
def _(node: n.Window) -> str:
    keep = (f"; only the rows that can rank at most {node.keep}: where its scan's PARTITION BY "
            "and first ORDER BY columns have few values, a GROUP BY of the two counts their "
            "rows first and the scan reads only those rows") if node.keep is not None else ""
    return "Window " + ", ".join(_sql(w) for w in node.funcs) + f" (CPU{keep})"


@_label.register
def _(node: n.Join) -> str:
    on = f" ON {_sql(node.on)}" if node.on is not None else ""
    return f"HashJoin {node.kind.name}{on} (CPU)"


@_label.register
def _(node: n.Sort) -> str:
    return "Sort " + ", ".join(f"#{i + 1}{' DESC' if d else ''}{' NULLS FIRST' if nf else ''}"
                               for i, d, nf in node.keys) + " (CPU)"


@_label.register
def _(node: n.Limit) -> str:
    return f"Limit {node.limit} OFFSET {node.offset}"


@_label.register
def _(node: n.SetOp) -> str:
    return f"{node.kind.value}{'' if node.distinct else ' ALL'} (CPU)"


@_label.register
def _(node: n.Distinct) -> str:
    return "Distinct (CPU)"


@_label.register
def _(node: n.Select) -> str:
    return f"Keep the first {node.n} columns"
