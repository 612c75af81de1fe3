"""Sorting and window functions on the CPU: rows ordered by partition and order keys,
then each function computed per partition with NumPy (DuckDB's semantics: NULLs last,
NaN above every number, RANGE frames over peers)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from bamql.errors import PlanError
from bamql.plan import nodes as n
from bamql.plan.expr import Evaluator, Rel, broadcast
from bamql.plan.frames import Frames, Reach, frame_aggregate
from bamql.plan.topk import candidates

D = "duckdb"


def order_indices(keys: list[tuple[pa.Array, bool, bool]], rows: int) -> np.ndarray:
    """The row order of ORDER BY ``keys`` (array, descending, nulls first): stable, NULLs
    where each key says, NaN above every number."""
    if not keys or rows == 0:
        return np.arange(rows)
    cols, sort = [], []
    for i, (a, desc, nf) in enumerate(keys):
        a = broadcast(a, rows)
        cols.append(pc.is_null(a))
        sort.append((f"n{i}", "descending" if nf else "ascending"))
        if pa.types.is_floating(a.type):
            cols.append(pc.is_nan(a).fill_null(False))
            sort.append((f"f{i}", "descending" if desc else "ascending"))
        if pa.types.is_dictionary(a.type):
            a = a.cast(a.type.value_type)
        cols.append(a)
        sort.append((f"v{i}", "descending" if desc else "ascending"))
    names = [s[0] for s in sort]
    t = pa.Table.from_arrays(cols, names=names)
    return pc.sort_indices(t, sort_keys=sort).to_numpy()


def _starts(arrays: list[pa.Array]) -> np.ndarray:
    """True where a row (in order) differs from the row before in any of ``arrays``."""
    rows = len(arrays[0]) if arrays else 0
    out = np.zeros(rows, bool)
    if rows:
        out[0] = True
    for a in arrays:
        if rows < 2:
            break
        x, y = a.slice(1), a.slice(0, rows - 1)
        nx, ny = pc.is_null(x).to_numpy(zero_copy_only=False), pc.is_null(y).to_numpy(zero_copy_only=False)
        ne = pc.not_equal(x, y).fill_null(False).to_numpy(zero_copy_only=False)
        if pa.types.is_floating(a.type):
            both_nan = (pc.is_nan(x).fill_null(False).to_numpy(zero_copy_only=False)
                        & pc.is_nan(y).fill_null(False).to_numpy(zero_copy_only=False))
            ne = ne & ~both_nan
        out[1:] |= ne | (nx != ny)
    return out


def _values(a: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """An array's values (NULLs as 0) and validity, as NumPy."""
    valid = pc.is_valid(a).to_numpy(zero_copy_only=False)
    t = a.type
    if pa.types.is_boolean(t):
        a = a.cast(pa.int64())
    elif pa.types.is_decimal(t):
        a = a.cast(pa.float64())
    filled = a.fill_null(0) if a.null_count else a
    return filled.to_numpy(zero_copy_only=False), valid


def _frame(w: exp.Window, has_order: bool) -> tuple[str, int | None, int | None]:
    """(kind, start, end) of a window's frame, offsets relative to the row (None:
    unbounded); the default is RANGE from the partition's start to the row's last peer."""
    spec = w.args.get("spec")
    if spec is None:
        return ("range", None, 0) if has_order else ("rows", None, None)
    kind = (spec.args.get("kind") or "range").lower()

    def bound(v, side) -> int | None:
        if isinstance(v, str) and v.upper() == "UNBOUNDED":
            return None
        if isinstance(v, str) and v.upper() == "CURRENT ROW":
            return 0
        if isinstance(v, exp.Literal) and not v.is_string:
            k = int(v.this)
            return -k if (side or "").lower() == "preceding" else k
        if isinstance(v, exp.Var) and v.name.upper() in ("UNBOUNDED", "CURRENT ROW", "CURRENT"):
            return None if v.name.upper() == "UNBOUNDED" else 0
        raise PlanError(f"window frame bound {v} is not supported")

    start = bound(spec.args.get("start"), spec.args.get("start_side"))
    end = bound(spec.args.get("end"), spec.args.get("end_side")) if spec.args.get("end") is not None else 0
    if kind == "range" and ((start not in (None, 0)) or (end not in (None, 0))):
        raise PlanError("RANGE frames with offsets are not supported; use ROWS")
    return kind, start, end


def window_rel(rel: Rel, node: n.Window, ev: Evaluator) -> Rel:
    """The Window node's relation: the child's columns and one column per function."""
    out = [rel.column(i) for i in range(len(rel.cols))]
    for w in node.funcs:
        out.append(_window(w, ev, rel.rows))
    return Rel.of(out, node.cols)


def top_candidates(rel: Rel, node: n.Window, ev: Evaluator) -> Rel:
    """``rel`` without rows that cannot have the one function of ``node`` at most
    ``node.keep`` (``plan.topk``): all of it where that cannot be told here."""
    (w,) = node.funcs
    order = w.args.get("order")
    if not order or not order.expressions:
        return rel
    o = order.expressions[0]
    first = (broadcast(ev.array(o.this), rel.rows), bool(o.args.get("desc")),
             bool(o.args.get("nulls_first")))
    parts = [broadcast(ev.array(p), rel.rows) for p in (w.args.get("partition_by") or [])]
    mask = candidates(parts, first, node.keep, rel.rows)
    return rel if mask is None else Rel(rel.table.filter(pa.array(mask)), rel.cols)


def _window(w: exp.Window, ev: Evaluator, rows: int) -> pa.Array:
    parts = [ev.array(p) for p in (w.args.get("partition_by") or [])]
    order = w.args.get("order")
    okeys = [(ev.array(o.this), bool(o.args.get("desc")), bool(o.args.get("nulls_first")))
             for o in (order.expressions if order else [])]
    idx = order_indices([(p, False, False) for p in parts] + okeys, rows)
    take = pa.array(idx)
    sparts = [p.take(take) for p in parts]
    sorder = [k.take(take) for k, _, _ in okeys]
    pstart = _starts(sparts) if parts else (np.eye(1, rows, 0, bool)[0] if rows else np.zeros(0, bool))
    peer = pstart | (_starts(sorder) if okeys else np.zeros(rows, bool))
    pos = np.arange(rows)
    part_id = np.cumsum(pstart) - 1
    part_begin = np.flatnonzero(pstart)
    part_end = np.append(part_begin[1:], rows) - 1
    begin, end = part_begin[part_id], part_end[part_id]
    peer_id = np.cumsum(peer) - 1
    peer_begin = np.flatnonzero(peer)
    peer_end_all = np.append(peer_begin[1:], rows) - 1
    pb, pe = peer_begin[peer_id], peer_end_all[peer_id]
    f = w.this
    if isinstance(f, exp.IgnoreNulls | exp.RespectNulls):
        f = f.this
    name = type(f).__name__
    res: pa.Array
    if name == "RowNumber":
        res = pa.array(pos - begin + 1, pa.int64())
    elif name == "Rank":
        res = pa.array(pb - begin + 1, pa.int64())
    elif name == "DenseRank":
        cum = np.cumsum(peer)
        res = pa.array(cum - cum[begin] + 1, pa.int64())
    elif name == "PercentRank":
        size = end - begin
        res = pa.array(np.where(size > 0, (pb - begin) / np.maximum(size, 1), 0.0))
    elif name == "CumeDist":
        res = pa.array((pe - begin + 1) / (end - begin + 1))
    elif name == "Ntile":
        k = int(ev.eval(f.this).as_py())
        if k <= 0:
            raise PlanError("NTILE takes a positive number of buckets")
        size = end - begin + 1
        p = pos - begin
        q, r = size // k, size % k
        big = r * (q + 1)
        res = pa.array(np.where(p < big, p // np.maximum(q + 1, 1) + 1,
                                (p - big) // np.maximum(q, 1) + r + 1), pa.int64())
    elif name in ("Lag", "Lead"):
        v = ev.array(f.this).take(take)
        off = int(ev.eval(f.args["offset"]).as_py()) if f.args.get("offset") is not None else 1
        src = pos - off if name == "Lag" else pos + off
        ok = (src >= begin) & (src <= end)
        got = v.take(pa.array(np.clip(src, 0, max(rows - 1, 0)))) if rows else v
        dflt = f.args.get("default")
        d = ev.eval(dflt) if dflt is not None else pa.scalar(None, v.type)
        if d.type != v.type:
            d = d.cast(v.type)
        res = pc.if_else(pa.array(ok), got, d)
    elif name in ("FirstValue", "LastValue", "NthValue"):
        v = ev.array(f.this).take(take)
        kind, s, e = _frame(w, bool(okeys))
        lo, hi = _bounds(kind, s, e, pos, begin, end, pb, pe)
        at = lo if name == "FirstValue" else hi
        if name == "NthValue":
            from bamql.plan.expr import const_int

            at = lo + const_int(ev, f.args.get("offset") or f.expression, "position of NTH_VALUE") - 1
        ok = (at <= hi) & (lo <= hi)
        res = pc.if_else(pa.array(ok), v.take(pa.array(np.clip(at, 0, max(rows - 1, 0)))),
                         pa.scalar(None, v.type))
    else:
        res = _frame_agg(f, w, ev, take, rows, bool(okeys), pos, begin, end, pb, pe)
    inv = np.empty(rows, np.int64)
    inv[idx] = np.arange(rows)
    return res.take(pa.array(inv))


def _bounds(kind, s, e, pos, begin, end, pb, pe):
    if kind == "range":
        lo = begin if s is None else pb
        hi = end if e is None else pe
    else:
        lo = begin if s is None else np.maximum(pos + s, begin)
        hi = end if e is None else np.minimum(pos + e, end)
    return lo, hi


def _frame_agg(f, w, ev: Evaluator, take, rows, has_order, pos, begin, end, pb, pe) -> pa.Array:
    kind, s, e = _frame(w, has_order)
    lo, hi = _bounds(kind, s, e, pos, begin, end, pb, pe)
    reach = (Reach.WHOLE if s is None and e is None else Reach.FROM_START if s is None
             else Reach.TO_END if e is None else Reach.BOUNDED)
    frames = Frames(lo, hi, begin, end, reach)
    if type(f).__name__ == "Count" and (f.this is None or isinstance(f.this, exp.Star)):
        return frame_aggregate("Count", None, frames)
    if isinstance(f.this, exp.Distinct):
        raise PlanError("DISTINCT inside a window function is not supported")
    return frame_aggregate(type(f).__name__, ev.array(f.this).take(take), frames)
