"""The IR on a dask-cudf DataFrame: what a RAPIDS user with several GPUs writes for each
benchmark query (the baseline of ``bamql bench-scaleout``).

Each partition's column expressions are the single-GPU baseline's (``bench.rapids``),
applied with ``map_partitions``; GROUP BY is dask's ``groupby(...).agg`` (a tree reduction
across the workers), an ungrouped aggregate dask's reductions, and ``ORDER BY ... LIMIT k``
each partition's first ``k`` rows, sorted again on the client.
"""

from __future__ import annotations

from bamql.bench import rapids
from bamql.fused import ir

#: dask's reduction of each aggregate an ungrouped query computes
_REDUCE = {"count": "count", "sum": "sum", "avg": "mean", "min": "min", "max": "max"}


def read_resident(parquet: str, columns: list[str]):
    """The Parquet copy's ``columns`` read onto the workers' GPUs and kept there
    (``persist``): dask-cudf's best case, a table already in GPU memory."""
    import dask_cudf
    from distributed import wait

    ddf = dask_cudf.read_parquet(parquet, columns=columns).persist()
    wait(ddf)
    return ddf


def run_query(ddf, q: ir.Query | ir.RowQuery) -> list[tuple]:
    """One query on the workers; rows as tuples of Python values."""
    if isinstance(q, ir.RowQuery):
        if q.limit is None:
            raise NotImplementedError("the dask-cudf baseline sorts only with a LIMIT")
        cands = ddf.map_partitions(lambda df: rapids.first_rows(rapids.rows_frame(df, q), q,
                                                                with_offset=False))
        return rapids.finish_rows(rapids.first_rows(cands.compute().reset_index(drop=True), q),
                                  q)
    if q.keys:
        frame = ddf.map_partitions(rapids.grouped_frame, q)
        out = frame.groupby([f"k{i}" for i in range(len(q.keys))], dropna=False,
                            sort=False).agg(rapids.agg_spec(q)).compute().reset_index()
        return rapids.finish_grouped(out, q)
    if q.having is not None or q.order or q.limit is not None:
        raise NotImplementedError("the dask-cudf baseline runs no HAVING, ORDER BY or LIMIT "
                                  "without GROUP BY")
    import dask

    frame = ddf.map_partitions(rapids.grouped_frame, q)
    parts = [getattr(frame[f"a{j}"], _REDUCE[a.func])() if a.arg is not None
             else frame[f"a{j}"].count() for j, a in enumerate(q.aggs)]
    counts = [frame[f"a{j}"].count() for j in range(len(q.aggs))]
    got = dask.compute(*parts, *counts)
    vals, ns = got[:len(parts)], got[len(parts):]
    out = []
    for a, v, n in zip(q.aggs, vals, ns, strict=True):
        v = v.item() if hasattr(v, "item") else v
        out.append(v if a.func == "count" or a.arg is None or int(n) > 0 else None)
    return rapids.scalar_row(q, out)
