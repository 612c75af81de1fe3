"""The page-granular minimum of a query's I/O, computed from the ORC files, not the engine.

A page-granular reader must read, of every column the query uses, each page that holds a
matching row's value, and needs nothing else: a page of the predicate column without a match
can be skipped by an index that knows it (page value sets do, storage.valuesets); an engine
without one reads every page of its predicate columns and shows it as amplification. The rows
come from the NumPy interpreter (``fused.evaluate``) over the ORC the store was made
from, so a claim of "within 1.2x of the page-granular minimum" is checked against an
answer the engine did not compute.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.orc as paorc

from bamql.fused import ir
from bamql.fused.evaluate import predicate_mask
from bamql.storage.format import ColumnMeta


def _env_column(a: pa.ChunkedArray | pa.Array, c: ColumnMeta) -> tuple[np.ndarray, np.ndarray]:
    """(values, valid) of an ORC column in the units the IR compares in."""
    if isinstance(a, pa.ChunkedArray):
        a = a.combine_chunks()
    valid = ~np.asarray(a.is_null())
    if c.kind == "timestamp":
        a = a.cast(pa.timestamp("us")).cast(pa.int64())
    elif c.kind == "float":
        a = a.cast(pa.float64())
    else:
        a = a.cast(pa.int64())
    return a.fill_null(0).to_numpy(zero_copy_only=False), valid


def matching_rows(q: ir.Query, orc: Sequence[Path], columns: dict[str, ColumnMeta]) -> np.ndarray | None:
    """Row numbers (in the store's order) where ``q``'s predicate is TRUE; every row when
    there is none. None when a predicate column is a string (compared as dictionary codes
    in the IR, which the ORC does not have)."""
    if q.predicate is None:
        return None
    names = ir.columns_of(q.predicate)
    if any(columns[n].kind == "string" for n in names):
        return None
    out, base = [], 0
    for path in orc:
        f = paorc.ORCFile(str(path))
        for i in range(f.nstripes):
            b = f.read_stripe(i, columns=list(names))
            env = {n: _env_column(b.column(n), columns[n]) for n in names}
            out.append(np.nonzero(predicate_mask(q.predicate, env, b.num_rows))[0] + base)
            base += b.num_rows
    return np.concatenate(out) if out else np.zeros(0, np.int64)


def page_minimum(q: ir.Query, rows: np.ndarray | None, n_rows: int,
                 columns: dict[str, ColumnMeta], page_size: int) -> int | None:
    """Bytes the page-granular minimum reads: of every column the query uses, the distinct
    pages holding ``rows`` (all pages when there is no predicate)."""
    if rows is None and q.predicate is not None:
        return None
    used: set[str] = set(ir.columns_of(q.predicate)) if q.predicate is not None else set()
    for e in (*q.keys, *q.aggs):
        used |= set(ir.columns_of(e))
    total = 0
    for n in used:
        c = columns[n]
        if rows is None:
            total += -(-n_rows // c.rows_per_page) * page_size
        else:
            total += len(np.unique(rows // c.rows_per_page)) * page_size
    return total
