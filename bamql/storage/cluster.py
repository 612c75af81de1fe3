"""Clustered tables (``bamql ingest --cluster-by a,b``): each store's rows ordered by keys.

Rows whose key values are alike then sit in few pages, so zone maps and page value sets
prune nearly every page of a predicate on the keys, and the gathers of the dependent
columns become a few dense pages instead of one page per matching row.

Two orders (:class:`~bamql.config.ClusterOrder`), spelled ``a,b`` and ``zorder(a,b)``:

- ``sort``: lexicographic over the keys, each ascending with NULLs last, and stable (rows
  of equal keys keep their source order). A filter on the first key prunes best; one on
  a later key alone prunes little.
- ``zorder``: each key's values mapped to a rank code of ``64 // keys`` bits (at most 32):
  its distinct values, NULL last, in order, spread evenly over the code range
  (:func:`rank_codes`); the codes' bits interleaved, the first key's bit first in each
  round, into one 64-bit Z key, then a stable sort on it. A filter on any one key prunes
  a share of the pages, at some cost to a filter on the first key. The order is a
  function of the store's key values alone, so it is deterministic; of one key it is
  ``sort``'s.

Keys are compared as stored: integers and timestamps by value, strings by their
dictionary codes (the dictionary is sorted, so code order is string order), scaled
decimals by their scaled integers, floats by value with NaN and NULL last.

Writing is two passes over the rows of one store: pass 1 reads the key columns and makes
the permutation (``argsort``); pass 2 reads the other columns a few at a time, permutes
them and hands them to the page writer. Memory is the permutation (8 bytes a row) plus the
stored values of one pass's columns (at least one column, at most ``budget`` bytes when
columns are narrower), beside one source batch.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from bamql.config import ClusterOrder
from bamql.errors import IngestError, UsageError
from bamql.storage.encoding import null_mask
from bamql.storage.writer import ColumnPlan, PageWriter

#: Stored bytes of column values pass 2 holds at once (columns grouped up to it).
PASS_BUDGET = 1 << 30

#: Rows handed to the page writer at a time.
CHUNK_ROWS = 1 << 20


#: Most keys a Z-order interleaves (each gets ``64 // keys`` bits of the Z key).
MAX_ZORDER_KEYS = 8

#: Bits of one key's rank code at most (a key alone, or two).
MAX_CODE_BITS = 32

_CALL = re.compile(r"^\s*([A-Za-z_]\w*)\s*\((.*)\)\s*$", re.S)


@dataclass(frozen=True)
class Clustering:
    """A table's clustering: its keys and their order; no keys for the sources' order."""

    keys: tuple[str, ...] = ()
    order: ClusterOrder = ClusterOrder.SORT

    def __bool__(self) -> bool:
        return bool(self.keys)


#: No clustering: the sources' order.
NO_CLUSTERING = Clustering()


def describe(keys: Sequence[str], order: ClusterOrder | str) -> str:
    """``a, b`` (sort) or ``zorder(a, b)``: clustering keys as a user spells them."""
    text = ", ".join(keys)
    return text if ClusterOrder(order) is ClusterOrder.SORT else f"{order}({text})"


def clustered_by(keys: Sequence[str], order: ClusterOrder | str) -> str:
    """``", clustered by a, b"`` as EXPLAIN, verify and info show a table's clustering;
    ``""`` when it has no keys."""
    return f", clustered by {describe(keys, order)}" if keys else ""


def parse_cluster_by(spec: str | Sequence[str] | Clustering | None) -> Clustering:
    """``"a,b"`` or ``["a", "b"]`` (lexicographic), ``"zorder(a,b)"`` (Z-order) -> the
    table's clustering; None or empty -> none.

    A name given twice, an empty name, an unknown order (``hilbert(a,b)``) or more than
    :data:`MAX_ZORDER_KEYS` Z-order keys is a one-line UsageError.
    """
    if spec is None:
        return Clustering()
    if isinstance(spec, Clustering):
        return spec
    order = ClusterOrder.SORT
    text = spec
    if isinstance(spec, str):
        m = _CALL.match(spec)
        if m is not None:
            try:
                order = ClusterOrder(m.group(1).lower())
            except UsageError:
                raise UsageError(f"--cluster-by {spec!r}: no cluster order {m.group(1)!r}; write "
                                 "a,b (sorted) or zorder(a,b)") from None
            text = m.group(2)
        elif "(" in spec or ")" in spec:
            raise UsageError(f"--cluster-by {spec!r} is not a,b or zorder(a,b)")
    names = [s.strip() for s in (text.split(",") if isinstance(text, str) else text)]
    if any(not n for n in names):
        raise UsageError(f"--cluster-by {spec!r} has an empty column name")
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup is not None:
        raise UsageError(f"--cluster-by names column {dup!r} twice")
    if order is ClusterOrder.ZORDER and len(names) > MAX_ZORDER_KEYS:
        raise UsageError(f"--cluster-by {spec!r}: a Z-order takes at most {MAX_ZORDER_KEYS} keys")
    return Clustering(tuple(names), order)


def check_keys(keys: Sequence[str], have: Sequence[str]) -> None:
    """Every key is one of the columns ``have``; else a one-line error naming it."""
    for k in keys:
        if k not in have:
            raise IngestError(f"--cluster-by: no column {k!r} in the table; it has: "
                              f"{', '.join(have)}")


def permutation(keys: Sequence[np.ndarray],
                order: ClusterOrder = ClusterOrder.SORT) -> np.ndarray:
    """The stable order of rows that sorts stored key columns ``keys`` (first key first):
    lexicographic ascending with NULLs last, or by their Z key (:func:`zorder_key`)."""
    if not keys:
        raise ValueError("no key to sort by")
    if order is ClusterOrder.ZORDER and len(keys) > 1:
        return zorder_permutation([(v, null_mask(v)) for v in keys])
    cols: list[np.ndarray] = []
    for v in reversed(keys):  # np.lexsort: its last key is the primary one
        # the NULL flag ranks before the value; NULLs share one stored value, so they tie
        cols.extend((v, null_mask(v)))
    return np.lexsort(cols)


def zorder_permutation(keys: Sequence[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """The stable order of rows by the Z key of ``keys``, each ``(values, nulls)`` as
    :func:`rank_codes` takes them: stored columns at ingest, or Arrow columns
    (:func:`arrow_values`) for a copy in the same order."""
    bits = code_bits(len(keys))
    return np.argsort(zorder_key([rank_codes(v, n, bits) for v, n in keys], bits), kind="stable")


def arrow_values(col: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """An Arrow column as ``(values, nulls)`` that :func:`rank_codes` orders as the column
    is ordered (timestamps as integers, strings as Python strings; NULLs filled in, and
    flagged in ``nulls``)."""
    import pyarrow.compute as pc  # the bench's copy only: not on the planner's import

    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    if pa.types.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    if pa.types.is_temporal(col.type):
        col = col.cast(pa.int64())
    nulls = col.is_null().to_numpy(zero_copy_only=False)
    fill = "" if pa.types.is_string(col.type) or pa.types.is_large_string(col.type) else 0
    values = pc.fill_null(col, pa.scalar(fill, col.type)).to_numpy(zero_copy_only=False)
    return values, nulls


def code_bits(n_keys: int) -> int:
    """Bits of each key's rank code in a Z key of ``n_keys`` keys: 64 bits shared, at most
    :data:`MAX_CODE_BITS` each."""
    return min(MAX_CODE_BITS, 64 // n_keys)


def rank_codes(values: np.ndarray, nulls: np.ndarray, bits: int) -> np.ndarray:
    """``values``' rank codes of ``bits`` bits (uint64): the dense rank of each value among
    the distinct non-NULL values (NaN after the numbers, all NaNs one value), NULLs
    (``nulls`` true) after them all, scaled to span ``0 .. 2**bits``: ``rank * 2**bits //
    distinct``. Equal values get equal codes and the order of values is kept (codes may
    merge neighbours when there are more than ``2**bits`` distinct values); scaling makes
    the first bit of every key's code split its values in halves, so no key's bits sit
    idle at the top of the Z key.

    ``values`` may be any array ``np.unique`` orders as the column is ordered: stored
    values (strings as their sorted dictionary's codes), or an Arrow column's values
    (strings as Python strings).
    """
    if not 1 <= bits <= MAX_CODE_BITS:
        raise ValueError(f"rank codes take 1..{MAX_CODE_BITS} bits, not {bits}")
    nulls = np.asarray(nulls, dtype=bool)
    rank = np.empty(len(values), dtype=np.uint64)
    _, inv = np.unique(values[~nulls], return_inverse=True)  # NaNs sort last, as one
    inv = inv.reshape(-1)
    rank[~nulls] = inv
    distinct = (int(inv.max()) + 1 if len(inv) else 0) + bool(nulls.any())
    if distinct:
        rank[nulls] = distinct - 1
    if distinct > 1 << (64 - bits):
        raise IngestError(f"a clustering key has {distinct:,} distinct values, more than a "
                          "Z-order of these keys ranks; partition the table")
    # rank < distinct <= rows < 2**32, so rank << 32 stays within 64 bits
    return (rank << np.uint64(bits)) // np.uint64(max(distinct, 1))


#: ``_SPREAD[k][b]``: the 8 bits of byte ``b`` placed ``k`` bits apart (bit i at bit i*k).
_SPREAD = {k: np.array([sum(((b >> i) & 1) << (i * k) for i in range(8)) for b in range(256)],
                       dtype=np.uint64) for k in range(1, MAX_ZORDER_KEYS + 1)}


def zorder_key(codes: Sequence[np.ndarray], bits: int) -> np.ndarray:
    """The Z key (uint64) of rank codes ``codes`` of ``bits`` bits each: from the top, bit
    ``bits - 1`` of every key (the first key's the highest), then bit ``bits - 2``..."""
    k = len(codes)
    if not 1 <= k <= MAX_ZORDER_KEYS or k * bits > 64:
        raise ValueError(f"{k} keys of {bits} bits do not fit a 64-bit Z key")
    spread = _SPREAD[k]
    z = np.zeros(len(codes[0]), dtype=np.uint64)
    for j, c in enumerate(codes):
        c = np.asarray(c, dtype=np.uint64)
        for byte in range(-(-bits // 8)):
            part = spread[((c >> np.uint64(8 * byte)) & np.uint64(0xFF)).astype(np.intp)]
            z |= part << np.uint64(8 * byte * k + (k - 1 - j))
    return z


def _passes(plans: Sequence[ColumnPlan], rows: int, budget: int) -> list[list[int]]:
    """Column indexes grouped so that each group's stored values fit ``budget`` bytes (a
    column wider than it alone)."""
    out: list[list[int]] = []
    size = 0
    for i, pl in enumerate(plans):
        b = rows * pl.dtype.itemsize
        if out and size + b <= budget:
            out[-1].append(i)
            size += b
        else:
            out.append([i])
            size = b
    return out


def write_clustered(read: Callable[[list[str]], Iterator[dict[str, np.ndarray]]],
                    plans: Sequence[ColumnPlan], writer: PageWriter, clustering: Clustering,
                    rows: int, progress: Callable[[int], None] | None = None,
                    budget: int = PASS_BUDGET) -> None:
    """Write a store's ``rows`` rows, in the order of ``clustering``, through ``writer``.

    Parameters
    ----------
    read
        ``read(names)`` yields the store's rows in source order, batch by batch, as stored
        values (``columnplans.to_storage``) of the columns ``names``.
    plans, writer
        The columns, and the page writer of the store they go to.
    clustering
        The clustering keys (names of ``plans``' columns) and their order.
    rows
        The store's row count.
    progress
        Called with rows as pass 2 writes them (once over all columns).
    budget
        Stored bytes pass 2 holds at once.
    """
    by_name = {pl.name: i for i, pl in enumerate(plans)}
    keys = list(clustering.keys)
    perm = permutation(_whole(read, keys, rows, plans, by_name), clustering.order)
    groups = _passes(plans, rows, budget)
    done = cols = 0
    for g in groups:
        names = [plans[i].name for i in g]
        for i, v in zip(g, _whole(read, names, rows, plans, by_name), strict=True):
            for lo in range(0, rows, CHUNK_ROWS):
                writer.append(i, v[perm[lo:lo + CHUNK_ROWS]])
        cols += len(g)
        if progress:  # rows in proportion to the columns written so far
            step = rows * cols // len(plans)
            progress(step - done)
            done = step


def _whole(read, names: list[str], rows: int, plans, by_name) -> list[np.ndarray]:
    """The store's columns ``names`` whole, as stored."""
    out = [np.empty(rows, dtype=plans[by_name[n]].dtype) for n in names]
    pos = 0
    for b in read(names):
        n = len(b[names[0]]) if names else 0
        for a, name in zip(out, names, strict=True):
            a[pos:pos + n] = b[name]
        pos += n
    if pos != rows:
        raise IngestError(f"the sources gave {pos} rows where {rows} were counted")
    return out
