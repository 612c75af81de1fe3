"""The hash-join operator on the CPU: equality keys of an ON condition through Arrow's
hash join (inner, left, right, full), other conditions as a filter after an inner join;
a join without keys as a cross product."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa
from sqlglot import exp

from bamql.errors import PlanError
from bamql.plan import nodes as n
from bamql.plan.build import columns_in, conjuncts
from bamql.plan.expr import Evaluator, Rel, _coerce, canonical, find

#: The most rows a join without equality keys may produce.
MAX_CROSS = 50_000_000


def _side(e: exp.Expression, cols) -> bool:
    cs = columns_in(e)
    return bool(cs) and all(len(find(cols, c.name, c.table or None)) == 1 for c in cs)


def join_rel(left: Rel, right: Rel, node: n.Join, ev_of: Callable[[Rel], Evaluator]) -> Rel:
    cols = (*left.cols, *right.cols)
    lkeys, rkeys, rest = [], [], []
    for c in (conjuncts(node.on) if node.on is not None else ()):
        if isinstance(c, exp.EQ):
            if _side(c.left, left.cols) and _side(c.right, right.cols):
                lkeys.append(c.left)
                rkeys.append(c.right)
                continue
            if _side(c.right, left.cols) and _side(c.left, right.cols):
                lkeys.append(c.right)
                rkeys.append(c.left)
                continue
        rest.append(c)
    if rest and node.kind not in (n.JoinType.INNER, n.JoinType.CROSS):
        only_right = [c for c in rest if _side(c, right.cols)]
        only_left = [c for c in rest if _side(c, left.cols)]
        if node.kind == n.JoinType.LEFT and len(only_right) == len(rest):
            mask = ev_of(right).condition(exp.and_(*rest))
            right, rest = Rel(right.table.filter(mask), right.cols), []
        elif node.kind == n.JoinType.RIGHT and len(only_left) == len(rest):
            mask = ev_of(left).condition(exp.and_(*rest))
            left, rest = Rel(left.table.filter(mask), left.cols), []
        else:
            raise PlanError("an outer join's ON condition must be equalities between the two "
                            "sides (and conditions on the optional side)")
    if not lkeys:
        if node.kind not in (n.JoinType.INNER, n.JoinType.CROSS):
            raise PlanError("an outer join needs an equality between the two sides in ON")
        total = left.rows * right.rows
        if total > MAX_CROSS:
            raise PlanError(f"a join without an equality condition would make {total:,} rows")
        li = np.repeat(np.arange(left.rows), right.rows)
        ri = np.tile(np.arange(right.rows), left.rows)
        out = _combine(left, right, pa.array(li), pa.array(ri), cols)
    else:
        lev, rev = ev_of(left), ev_of(right)
        lk, rk = [], []
        for a, b in zip(lkeys, rkeys, strict=True):
            x, y = _coerce(lev.array(a), rev.array(b))
            lk.append(canonical(x))
            rk.append(canonical(y))
        names = [f"k{i}" for i in range(len(lk))]
        lt = pa.Table.from_arrays([*lk, pa.array(np.arange(left.rows))], names=[*names, "__l"])
        rt = pa.Table.from_arrays([*rk, pa.array(np.arange(right.rows))], names=[*names, "__r"])
        kind = n.JoinType.INNER if node.kind == n.JoinType.CROSS else node.kind
        j = lt.join(rt, names, names, join_type=kind.value, use_threads=False, coalesce_keys=False)
        j = j.sort_by([("__l", "ascending"), ("__r", "ascending")])
        out = _combine(left, right, j.column("__l").combine_chunks(),
                       j.column("__r").combine_chunks(), cols)
    if rest:
        mask = ev_of(out).condition(exp.and_(*rest))
        out = Rel(out.table.filter(mask), cols)
    return out


def _combine(left: Rel, right: Rel, li: pa.Array, ri: pa.Array, cols) -> Rel:
    """The joined rows: left row ``li[k]`` beside right row ``ri[k]`` (NULL: no row)."""
    arrays = [left.column(i).take(li) for i in range(len(left.cols))]
    arrays += [right.column(i).take(ri) for i in range(len(right.cols))]
    return Rel.of(arrays, cols)
