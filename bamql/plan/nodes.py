"""The logical plan: immutable relational nodes. Every node has ``children`` and rebuilds
itself with new ones (``with_children``), so that a rule is a function from a tree to a
tree; a node's ``cols`` are the qualified names of its output columns.

Expressions are sqlglot nodes over the child's columns; a subquery inside one is a
:class:`SubRef` that names an entry of the node's ``subplans``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import Enum

import pyarrow as pa
from sqlglot import exp
from sqlglot import generator as _generator
from sqlglot.dialects.duckdb import DuckDB

ColName = tuple[str | None, str]


class JoinType(Enum):
    INNER = "inner"
    LEFT = "left outer"
    RIGHT = "right outer"
    FULL = "full outer"
    CROSS = "cross"


class SetKind(Enum):
    UNION = "UNION"
    INTERSECT = "INTERSECT"
    EXCEPT = "EXCEPT"


class SubKind(Enum):
    """What a subquery in an expression is: a value, a test, or a set."""

    SCALAR = "scalar"
    EXISTS = "exists"
    IN = "in"


@dataclass(frozen=True, eq=False)
class SubPlan:
    """A subquery of an expression. Correlated ones were decorrelated at translation:
    ``outer`` are the outer row's key expressions and the plan's first ``len(outer)``
    columns the keys they meet (an equality lookup: a semi join for EXISTS, a left join
    for a scalar); ``count`` marks a scalar COUNT (0 where no row matches, not NULL)."""

    kind: SubKind
    plan: Node
    outer: tuple[exp.Expression, ...] = ()
    count: bool = False


class SubRef(exp.Expression):
    """A subquery's place in an expression: ``this`` is its index in the node's
    ``subplans``; ``negated`` for NOT IN / NOT EXISTS; ``expression`` the left side of
    an IN."""

    arg_types = {"this": True, "expression": False, "negated": False}


def _subref_sql(gen, e: SubRef) -> str:
    left = f"{gen.sql(e, 'expression')} IN " if e.args.get("expression") else ""
    return f"{'NOT ' if e.args.get('negated') else ''}{left}$subquery{e.this.this}"


DuckDB.Generator.TRANSFORMS[SubRef] = _subref_sql
# sqlglot builds a generator class's dispatch table once, at its first instance: one made
# before this module was imported (a query's SQL written out) would not know SubRef
_made = getattr(_generator, "_DISPATCH_CACHE", None)
if isinstance(_made, dict):
    _made.pop(DuckDB.Generator, None)


@dataclass(frozen=True, eq=False)
class Node:
    """A relational operator."""

    @property
    def children(self) -> tuple[Node, ...]:
        return tuple(getattr(self, f.name) for f in dataclasses.fields(self)
                     if f.name in ("child", "left", "right"))

    def with_children(self, *children: Node) -> Node:
        names = [f.name for f in dataclasses.fields(self) if f.name in ("child", "left", "right")]
        return dataclasses.replace(self, **dict(zip(names, children, strict=True)))

    @property
    def cols(self) -> tuple[ColName, ...]:
        return self.child.cols  # type: ignore[attr-defined]


@dataclass(frozen=True, eq=False)
class Fused(Node):
    """A SELECT the fused scan-filter-aggregate kernel runs whole (its SQL over stored
    tables), the product's core; its output is renamed to ``names``."""

    sql: str
    names: tuple[str, ...]
    qual: str | None = None

    @property
    def cols(self) -> tuple[ColName, ...]:
        return tuple((self.qual, n) for n in self.names)


@dataclass(frozen=True, eq=False)
class FusedStatement(Node):
    """A whole statement that the fused translator takes (``sql``: the statement, its
    parameters and files bound): one fused leaf, whose result (rows, names, statistics,
    plan text) is the statement's. The optimizer's first rule; any other statement is
    built node by node."""

    sql: str

    @property
    def cols(self) -> tuple[ColName, ...]:
        return ()  # the leaf's own names, known when it runs


@dataclass(frozen=True, eq=False)
class FusedJoin(Node):
    """A GROUP BY over a stored table joined to a small relation (a derived GROUP BY, a
    registered table) on one key, run as one fused kernel: ``child``'s rows first, as the
    dimension table ``dim`` (columns ``dim_cols``), each of its columns then looked up by the
    fact table's key inside the kernel, which runs ``sql``. ``fallback`` is the plan it
    replaces, run instead where the kernel refuses the rows (a key that is not unique, a
    type it does not look up)."""

    child: Node
    sql: str
    names: tuple[str, ...]
    dim: str
    dim_cols: tuple[str, ...]
    fallback: Node

    @property
    def children(self) -> tuple[Node, ...]:
        return (self.child, self.fallback)

    def with_children(self, *children: Node) -> Node:
        child, fallback = children
        return dataclasses.replace(self, child=child, fallback=fallback)

    @property
    def cols(self) -> tuple[ColName, ...]:
        return tuple((None, n) for n in self.names)


@dataclass(frozen=True, eq=False)
class Scan(Node):
    """The rows of a stored table: the columns the plan reads, and the conjuncts of a
    WHERE the kernel evaluates while it scans (pushed down by a rule)."""

    table: str
    columns: tuple[str, ...]
    qual: str
    predicate: tuple[exp.Expression, ...] = ()
    #: the scale of each column whose source type is DECIMAL (its values come back exact)
    decimals: tuple[tuple[str, int], ...] = ()

    @property
    def cols(self) -> tuple[ColName, ...]:
        return tuple((self.qual, c) for c in self.columns)


@dataclass(frozen=True, eq=False)
class Values(Node):
    """Rows held in memory: a registered table, or a VALUES list."""

    table: pa.Table = field(repr=False)
    names: tuple[str, ...]
    qual: str | None = None
    label: str = "values"

    @property
    def cols(self) -> tuple[ColName, ...]:
        return tuple((self.qual, n) for n in self.names)


@dataclass(frozen=True, eq=False)
class Alias(Node):
    """The child's columns under a new qualifier (and, if given, new names)."""

    child: Node
    qual: str
    names: tuple[str, ...] = ()

    @property
    def cols(self) -> tuple[ColName, ...]:
        # t(a, b) renames the first columns by position; the others keep their names, but
        # a name met again (any case) becomes name_1, name_2, ... as in DuckDB
        names = self.names + tuple(n for _, n in self.child.cols[len(self.names):])
        if self.names:
            seen: set[str] = set()
            out = []
            for name in names:
                new, k = name, 0
                while new.lower() in seen:
                    k += 1
                    new = f"{name}_{k}"
                seen.add(new.lower())
                out.append(new)
            names = tuple(out)
        return tuple((self.qual, n) for n in names)


@dataclass(frozen=True, eq=False)
class Filter(Node):
    child: Node
    condition: exp.Expression
    subplans: tuple[SubPlan, ...] = ()


@dataclass(frozen=True, eq=False)
class Project(Node):
    child: Node
    exprs: tuple[exp.Expression, ...]
    names: tuple[str, ...]
    subplans: tuple[SubPlan, ...] = ()

    @property
    def cols(self) -> tuple[ColName, ...]:
        return tuple((None, n) for n in self.names)


@dataclass(frozen=True, eq=False)
class Aggregate(Node):
    """GROUP BY ``keys`` computing ``aggs`` (aggregate calls over the child); output: the
    keys as ``__k<i>``, then the aggregates as ``__a<j>``. ``sets``: the grouping sets
    (indices into ``keys``), None for one plain GROUP BY."""

    child: Node
    keys: tuple[exp.Expression, ...]
    aggs: tuple[exp.Expression, ...]
    sets: tuple[tuple[int, ...], ...] | None = None

    @property
    def cols(self) -> tuple[ColName, ...]:
        return (*((None, f"__k{i}") for i in range(len(self.keys))),
                *((None, f"__a{j}") for j in range(len(self.aggs))))


@dataclass(frozen=True, eq=False)
class Window(Node):
    """The child's columns, then one ``__w<i>`` per window function. ``keep``: the node
    above reads only rows whose one function (``ROW_NUMBER`` or ``RANK``) is at most
    ``keep``, so the operator may drop rows that cannot be among them (``plan.topk``)."""

    child: Node
    funcs: tuple[exp.Window, ...]
    keep: int | None = None

    @property
    def cols(self) -> tuple[ColName, ...]:
        return (*self.child.cols, *((None, f"__w{i}") for i in range(len(self.funcs))))


@dataclass(frozen=True, eq=False)
class Join(Node):
    left: Node
    right: Node
    kind: JoinType
    on: exp.Expression | None = None

    @property
    def cols(self) -> tuple[ColName, ...]:
        return (*self.left.cols, *self.right.cols)


@dataclass(frozen=True, eq=False)
class Sort(Node):
    """ORDER BY the child's columns: (index, descending, nulls first)."""

    child: Node
    keys: tuple[tuple[int, bool, bool], ...]


@dataclass(frozen=True, eq=False)
class Limit(Node):
    child: Node
    limit: int | None
    offset: int = 0


@dataclass(frozen=True, eq=False)
class Distinct(Node):
    child: Node


@dataclass(frozen=True, eq=False)
class SetOp(Node):
    left: Node
    right: Node
    kind: SetKind
    distinct: bool

    @property
    def cols(self) -> tuple[ColName, ...]:
        return tuple((None, n) for _, n in self.left.cols)


@dataclass(frozen=True, eq=False)
class WorkTable(Node):
    """What a recursive CTE's step reads of the CTE itself: the rows its last round added."""

    name: str
    names: tuple[str, ...]

    @property
    def cols(self) -> tuple[ColName, ...]:
        return tuple((None, n) for n in self.names)


@dataclass(frozen=True, eq=False)
class Recursive(Node):
    """``WITH RECURSIVE name AS (left UNION [ALL] right)``: ``left`` once, then ``right``
    round after round over the rows the last round added (its ``WorkTable`` ``name``),
    until a round adds none; ``distinct`` (UNION) keeps only rows not seen before."""

    left: Node
    right: Node
    name: str
    names: tuple[str, ...]
    distinct: bool

    @property
    def cols(self) -> tuple[ColName, ...]:
        return tuple((None, n) for n in self.names)


@dataclass(frozen=True, eq=False)
class Select(Node):
    """Keeps the first ``n`` columns of the child (drops ORDER BY's hidden columns)."""

    child: Node
    n: int

    @property
    def cols(self) -> tuple[ColName, ...]:
        return self.child.cols[:self.n]


def subplans_of(node: Node) -> tuple[SubPlan, ...]:
    return getattr(node, "subplans", ())


def walk(node: Node):
    """Every node of the tree, parents before children (subquery plans included)."""
    yield node
    for c in node.children:
        yield from walk(c)
    for s in subplans_of(node):
        yield from walk(s.plan)
