"""The rows a ``ROW_NUMBER()`` or ``RANK()`` at most ``k`` can come from, found without
sorting: a window filtered by its rank (``QUALIFY row_number() OVER (PARTITION BY p ORDER
BY x DESC) <= 3``, or the same through a derived table) needs each partition's first ``k``
rows only, and a row whose first order key is past the ``k``-th smallest of its partition's
is not among them. One pass finds that threshold per partition (``Window.keep``); the
window is then computed over the rows at or before it, a superset of the answer's rows
whose ranks are the ranks among all rows (every row ahead of a kept row is kept).

Codes only need to follow the order (a tie where the order has none keeps more rows, never
fewer): an order key becomes a double (NULLs, NaN and infinities at their ends), and rows
whose partition keys are equal share a partition id (-0.0 as 0.0, every NaN as one).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from bamql.lazyjit import njit
from bamql.plan.expr import canonical, is_number_type

#: The most partitions times ``k`` whose thresholds are kept (doubles): past it the window
#: runs over every row.
MAX_SLOTS = 1 << 24


@njit(cache=True)
def _thresholds(code, part, parts, k):
    """Per partition, its ``k``-th smallest code (+inf where it has fewer than ``k`` rows)."""
    best = np.full((parts, k), np.inf)
    held = np.zeros(parts, np.int64)
    for i in range(len(code)):
        p, c = part[i], code[i]
        h = held[p]
        if h == k and c >= best[p, k - 1]:
            continue
        j = h if h < k else k - 1
        while j > 0 and best[p, j - 1] > c:
            best[p, j] = best[p, j - 1]
            j -= 1
        best[p, j] = c
        if h < k:
            held[p] = h + 1
    out = np.full(parts, np.inf)
    for p in range(parts):
        if held[p] == k:
            out[p] = best[p, k - 1]
    return out


def order_code(a: pa.Array, desc: bool, nulls_first: bool) -> np.ndarray | None:
    """A double per row that never decreases along ``ORDER BY a`` (None where ``a``'s type
    has no such code here)."""
    t = a.type
    valid = pc.is_valid(a).to_numpy(zero_copy_only=False)
    if pa.types.is_dictionary(t):
        a, t = a.cast(t.value_type), t.value_type
    if pa.types.is_date32(t) or pa.types.is_time32(t):
        a = a.cast(pa.int32())
    elif pa.types.is_timestamp(t) or pa.types.is_temporal(t):
        a = a.cast(pa.int64())
    elif pa.types.is_boolean(t):
        a = a.cast(pa.int8())
    elif pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t):
        a = pc.rank(a, sort_keys="ascending", tiebreaker="dense")
    elif not is_number_type(t):
        return None
    x = pc.cast(a, pa.float64(), safe=False).fill_null(0.0).to_numpy(zero_copy_only=False)
    x = np.where(np.isnan(x), np.inf, x)  # NaN above every number: tied with +inf
    if desc:
        x = -x
    return np.where(valid, x, -np.inf if nulls_first else np.inf)


def partition_ids(arrays: list[pa.Array], rows: int) -> tuple[np.ndarray, int]:
    """A dense id per row, equal for rows whose partition keys are equal (-0.0 and 0.0,
    and every NaN, alike), and the number of ids."""
    ids = np.zeros(rows, np.int64)
    count = 1
    for a in arrays:
        enc = pc.dictionary_encode(canonical(a), null_encoding="encode")
        codes = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        size = len(enc.dictionary)
        if count * size >= 2**62:
            _, ids = np.unique(ids, return_inverse=True)
            count = int(ids.max(initial=0)) + 1
        ids = ids * size + codes
        count *= max(size, 1)
    if count > rows:
        _, ids = np.unique(ids, return_inverse=True)
        count = int(ids.max(initial=0)) + 1
    return ids.astype(np.int64), count


def candidates(parts: list[pa.Array], first: tuple[pa.Array, bool, bool], k: int,
               rows: int) -> np.ndarray | None:
    """A mask of the rows that can have a rank at most ``k`` in their partition (``first``:
    the first ORDER BY key, descending, nulls first); None where it cannot be worked out
    here (the window then runs over every row)."""
    if k <= 0:
        return np.zeros(rows, bool)
    code = order_code(*first)
    if code is None or rows == 0:
        return None
    part, count = partition_ids(parts, rows) if parts else (np.zeros(rows, np.int64), 1)
    if count * k > MAX_SLOTS:
        return None
    thr = _thresholds(code, part, count, k)
    return code <= thr[part]


def count_thresholds(part: pa.Array, order: pa.Array, rows: np.ndarray, k: int, desc: bool,
                     nulls_first: bool) -> tuple[pa.Array, pa.Array]:
    """From the rows of each distinct (partition key, first order key) pair, each partition's
    ``k``-th row's order value: the partitions whose key and whose ``k``-th value are not NULL
    (the others keep every row), as (keys, values). A row of such a partition can rank at
    most ``k`` only if its order value is at or before its partition's value."""
    empty = (part.slice(0, 0), order.slice(0, 0))
    code = order_code(order, desc, nulls_first)
    if code is None or not len(part) or k <= 0 or k > int(np.sum(rows)):
        return empty
    pid, _ = partition_ids([part], len(part))
    idx = np.lexsort((code, pid))
    pid, n = pid[idx], rows[idx].astype(np.int64)
    # distinct values of one partition with one code (a double holds an int64 past 2**53
    # inexactly) have no order here: no threshold rather than one that may be too strict
    ties = (pid[1:] == pid[:-1]) & (code[idx][1:] == code[idx][:-1])
    if ties.any():
        at = np.flatnonzero(ties)
        first, second = order.take(pa.array(idx[at])), order.take(pa.array(idx[at + 1]))
        if pc.any(pc.fill_null(pc.not_equal(first, second), True)).as_py():
            return empty
    cum = np.cumsum(n)
    starts = np.flatnonzero(np.r_[True, pid[1:] != pid[:-1]])
    ends = np.r_[starts[1:], len(pid)]
    before = np.r_[0, cum][starts]
    at = np.searchsorted(cum, before + k, side="left")  # the first row with k rows through it
    found = at < ends
    take = pa.array(idx[at[found]])
    keys, values = part.take(take), order.take(take)
    keep = pc.and_(pc.is_valid(keys), pc.is_valid(values))
    return keys.filter(keep), values.filter(keep)
