"""The hash-join operator on the CPU: equality keys of an ON condition through Arrow's
hash join (inner, left, right, full), other conditions as a filter after an inner join;
a join without keys as a cross product."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from bamql.errors import PlanError
from bamql.plan import nodes as n
from bamql.plan.expr import Evaluator, Rel, _coerce, canonical, find
from bamql.plan.sqlast import columns_in, conjuncts

#: The most rows a join without equality keys may produce.
MAX_CROSS = 50_000_000


def _side(e: exp.Expression, cols) -> bool:
    cs = columns_in(e)
    return bool(cs) and all(len(find(cols, c.name, c.table or None)) == 1 for c in cs)


def join_rel(left: Rel, right: Rel, node: n.Join, ev_of: Callable[[Rel], Evaluator]) -> Rel:
    cols = (*left.cols, *right.cols)
    lkeys, rkeys, safe, rest = [], [], [], []
    lmatch = rmatch = None  # per row of a side: whether its ON conditions hold (None: all)
    for c in (conjuncts(node.on) if node.on is not None else ()):
        if isinstance(c, exp.EQ | exp.NullSafeEQ):
            if _side(c.left, left.cols) and _side(c.right, right.cols):
                lkeys.append(c.left)
                rkeys.append(c.right)
                safe.append(isinstance(c, exp.NullSafeEQ))
                continue
            if _side(c.right, left.cols) and _side(c.left, right.cols):
                lkeys.append(c.right)
                rkeys.append(c.left)
                safe.append(isinstance(c, exp.NullSafeEQ))
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
        elif lkeys and len(only_left) + len(only_right) == len(rest):
            # a condition on a kept side: its rows where it is not TRUE match no row and
            # stay, unmatched (a key of the condition's truth against TRUE on the other side)
            one_sided = (left, only_left), (right, only_right)
            lmatch, rmatch = (_matchable(ev_of, side, conds) for side, conds in one_sided)
            rest = []
        else:
            raise PlanError("an outer join's ON condition must be equalities between the two "
                            "sides and conditions on one side")
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
        for a, b, nullsafe in zip(lkeys, rkeys, safe, strict=True):
            x, y = _coerce(lev.array(a), rev.array(b))
            x, y = canonical(x), canonical(y)
            if nullsafe:  # IS NOT DISTINCT FROM: NULL matches NULL
                fill = _any_value(x, y)
                lk.extend(_null_safe(x, fill))
                rk.extend(_null_safe(y, fill))
                continue
            lk.append(x)
            rk.append(y)
        if lmatch is not None or rmatch is not None:
            lk.append(lmatch if lmatch is not None else pa.array(np.ones(left.rows, np.int8)))
            rk.append(rmatch if rmatch is not None else pa.array(np.ones(right.rows, np.int8)))
        kind = n.JoinType.INNER if node.kind == n.JoinType.CROSS else node.kind
        found = _lookup(lk, rk, kind)
        if found is not None:
            return _finish(_combine(left, right, *found, cols), rest, ev_of, cols)
        names = [f"k{i}" for i in range(len(lk))]
        lt = pa.Table.from_arrays([*lk, pa.array(np.arange(left.rows))], names=[*names, "__l"])
        rt = pa.Table.from_arrays([*rk, pa.array(np.arange(right.rows))], names=[*names, "__r"])
        j = lt.join(rt, names, names, join_type=kind.value, use_threads=False, coalesce_keys=False)
        j = j.sort_by([("__l", "ascending"), ("__r", "ascending")])
        out = _combine(left, right, j.column("__l").combine_chunks(),
                       j.column("__r").combine_chunks(), cols)
    return _finish(out, rest, ev_of, cols)


def _matchable(ev_of: Callable[[Rel], Evaluator], side: Rel,
               conds: list[exp.Expression]) -> pa.Array | None:
    """1 where the conditions ``conds`` on ``side``'s columns are TRUE, else NULL, which
    matches nothing (a join key matched against 1 or the other side's own); None where
    there is none."""
    if not conds:
        return None
    ok = ev_of(side).condition(exp.and_(*conds)).to_numpy(zero_copy_only=False)
    return pa.array(np.ones(len(ok), np.int8), mask=~ok.astype(bool))


def _any_value(x, y) -> pa.Scalar | None:
    """A valid value of ``x`` or ``y`` (None where both are all NULL)."""
    for v in (x, y):
        got = pc.drop_null(v)
        if len(got):
            return got[0]
    return None


def _null_safe(v, fill: pa.Scalar | None) -> list:
    """The hash-join keys of ``v`` for an IS NOT DISTINCT FROM: whether each value is NULL,
    and the value with its NULLs set to ``fill`` (one value both sides use), so that equal
    keys are two equal values or two NULLs."""
    isnull = pc.is_null(v)
    return [isnull] if fill is None else [isnull, pc.fill_null(v, fill)]


def _finish(out: Rel, rest: list[exp.Expression], ev_of: Callable[[Rel], Evaluator], cols) -> Rel:
    """The joined rows where the ON condition's other conjuncts hold (an inner join's)."""
    if rest:
        mask = ev_of(out).condition(exp.and_(*rest))
        out = Rel(out.table.filter(mask), cols)
    return out


#: The most rows of a side whose keys are looked up directly (a hash set of its keys).
LOOKUP_ROWS = 1 << 22


def _lookup(lk: list, rk: list, kind: n.JoinType) -> tuple[pa.Array | None, pa.Array | None] | None:
    """The row pairs of a join on one key whose build side (either side of an inner join,
    the smaller first; the optional side of an outer one) holds each key at most once: each
    row of the other side looks its key up in a hash set of the build side's
    (``pc.index_in``), in that side's order, with no sort. None where the join is not of
    that kind."""
    if len(lk) != 1 or kind is n.JoinType.FULL:
        return None
    if kind is n.JoinType.INNER:
        sides = (True, False) if len(lk[0]) < len(rk[0]) else (False, True)
    else:
        sides = (kind is n.JoinType.RIGHT,)
    for build_left in sides:
        build, probe = (lk[0], rk[0]) if build_left else (rk[0], lk[0])
        found = _probe(build, probe, kind is n.JoinType.INNER)
        if found is not None:
            pi, bi = found
            return (bi, pi) if build_left else (pi, bi)
    return None


def _probe(build: pa.Array, probe: pa.Array,
           inner: bool) -> tuple[pa.Array | None, pa.Array] | None:
    """(probe rows, build rows) of the matches of ``probe``'s keys in ``build``'s, where
    ``build`` holds each key at most once (every probe row where not ``inner``, a NULL build
    row where it has no match); the probe rows None where they are every row, in order.
    None where ``build`` repeats a key or is too large."""
    if len(build) > LOOKUP_ROWS:
        return None
    valid = pc.is_valid(build).to_numpy(zero_copy_only=False)
    keys = build.filter(pa.array(valid))
    try:
        if len(pc.unique(keys)) != len(keys):
            return None
        at = pc.index_in(probe, value_set=keys)
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError):
        return None  # keys Arrow's hash sets do not take: the hash join does
    rows = np.flatnonzero(valid)
    if inner:
        if at.null_count == 0:  # every probe row matches: all of them, in order
            got = at.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
            return None, pa.array(got if len(rows) == len(build) else rows[got])
        hit = pc.is_valid(at).to_numpy(zero_copy_only=False)
        b = rows[at.filter(pa.array(hit)).to_numpy(zero_copy_only=False).astype(np.int64)]
        return pa.array(np.flatnonzero(hit)), pa.array(b)
    got = at.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    return None, pa.array(
        rows[got] if len(rows) else np.zeros(len(probe), np.int64),
        mask=pc.is_null(at).to_numpy(zero_copy_only=False))


def _combine(left: Rel, right: Rel, li: pa.Array | None, ri: pa.Array | None, cols) -> Rel:
    """The joined rows: left row ``li[k]`` beside right row ``ri[k]`` (NULL: no row; None:
    every row of that side, in order, not copied)."""
    arrays = [left.column(i) if li is None else left.column(i).take(li)
              for i in range(len(left.cols))]
    arrays += [right.column(i) if ri is None else right.column(i).take(ri)
               for i in range(len(right.cols))]
    return Rel.of(arrays, cols)
