"""Clustered tables (``bamql ingest --cluster-by a,b``): each store's rows sorted by keys.

Rows whose key values are alike then sit in few pages, so zone maps and page value sets
prune nearly every page of a predicate on the keys, and the gathers of the dependent
columns become a few dense pages instead of one page per matching row.

The order is lexicographic over the keys, each ascending with NULLs last, and stable (rows
of equal keys keep their source order). Keys are compared as stored: integers and
timestamps by value, strings by their dictionary codes (the dictionary is sorted, so code
order is string order), scaled decimals by their scaled integers, floats by value with NaN
and NULL last.

Writing is two passes over the rows of one store: pass 1 reads the key columns and makes
the permutation (``argsort``); pass 2 reads the other columns a few at a time, permutes
them and hands them to the page writer. Memory is the permutation (8 bytes a row) plus the
stored values of one pass's columns (at least one column, at most ``budget`` bytes when
columns are narrower), beside one source batch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import numpy as np

from bamql.errors import IngestError
from bamql.storage.encoding import null_mask
from bamql.storage.writer import ColumnPlan, PageWriter

#: Stored bytes of column values pass 2 holds at once (columns grouped up to it).
PASS_BUDGET = 1 << 30

#: Rows handed to the page writer at a time.
CHUNK_ROWS = 1 << 20


def parse_cluster_by(spec: str | Sequence[str] | None) -> tuple[str, ...]:
    """``"a,b"`` or ``["a", "b"]`` -> the key names; None or empty -> no clustering.

    A name given twice is a one-line error.
    """
    if spec is None:
        return ()
    names = [s.strip() for s in (spec.split(",") if isinstance(spec, str) else spec)]
    if any(not n for n in names):
        raise IngestError(f"--cluster-by {spec!r} has an empty column name")
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup is not None:
        raise IngestError(f"--cluster-by names column {dup!r} twice")
    return tuple(names)


def check_keys(keys: Sequence[str], have: Sequence[str]) -> None:
    """Every key is one of the columns ``have``; else a one-line error naming it."""
    for k in keys:
        if k not in have:
            raise IngestError(f"--cluster-by: no column {k!r} in the table; it has: "
                              f"{', '.join(have)}")


def permutation(keys: Sequence[np.ndarray]) -> np.ndarray:
    """The stable order of rows that sorts stored key columns ``keys`` (first key first)
    ascending, NULLs last."""
    if not keys:
        raise ValueError("no key to sort by")
    cols: list[np.ndarray] = []
    for v in reversed(keys):  # np.lexsort: its last key is the primary one
        # the NULL flag ranks before the value; NULLs share one stored value, so they tie
        cols.extend((v, null_mask(v)))
    return np.lexsort(cols)


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
                    plans: Sequence[ColumnPlan], writer: PageWriter, keys: Sequence[str],
                    rows: int, progress: Callable[[int], None] | None = None,
                    budget: int = PASS_BUDGET) -> None:
    """Write a store's ``rows`` rows, sorted by ``keys``, through ``writer``.

    Parameters
    ----------
    read
        ``read(names)`` yields the store's rows in source order, batch by batch, as stored
        values (``columnplans.to_storage``) of the columns ``names``.
    plans, writer
        The columns, and the page writer of the store they go to.
    keys
        The clustering keys, names of ``plans``' columns.
    rows
        The store's row count.
    progress
        Called with rows as pass 2 writes them (once over all columns).
    budget
        Stored bytes pass 2 holds at once.
    """
    by_name = {pl.name: i for i, pl in enumerate(plans)}
    perm = permutation(_whole(read, list(keys), rows, plans, by_name))
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
