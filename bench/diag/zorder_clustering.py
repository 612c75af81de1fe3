"""Clustering orders compared: ingest seconds and pages pruned, unclustered, sorted and Z-ordered.

Generates ``--rows`` trips (seed 1, 0.05% in Williamsburg) as one Parquet file, ingests it
three times (4 KiB pages, one store): in the file's order, ``--cluster-by
pickup_location_id,pickup_datetime`` and ``--cluster-by zorder(pickup_location_id,
pickup_datetime)``, timing each ingest (best of ``--reps``). Then, on each store, with the
``file`` medium's plan, three filters: on the zone alone (Q6's ``IN (255, 256)``), on the
pickup time alone (a window of 1% of the rows, from the 40th percentile) and on both (the
zone and a window of 20% of the rows): per predicate column, the share of its pages not
read; every column's pages and bytes read; the warm median of ``--reps`` runs; and the
answer checked against DuckDB over the Parquet file. It also times the permutation alone
(the part of ingest that the order changes) on the two key columns as stored.

Usage: ``python bench/diag/zorder_clustering.py --rows 3000000
--out bench/results/vm/zorder-clustering-vm.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

import duckdb
import numpy as np
import pyarrow.parquet as pq

import bamql
from bamql.config import ClusterOrder
from bamql.datasets.generator import GenParams, generate_chunk
from bamql.storage.cluster import permutation
from bamql.storage.ingest import ingest

ORDERS = {"none": None, "sort": "pickup_location_id,pickup_datetime",
          "zorder": "zorder(pickup_location_id,pickup_datetime)"}


def _ts(us: int) -> str:
    return str(np.datetime64(int(us), "us")).replace("T", " ")


def _queries(parquet: Path) -> dict[str, str]:
    t = pq.read_table(parquet, columns=["pickup_datetime"]).column(0)
    us = np.sort(t.cast("int64").to_numpy())
    q = {p: _ts(us[int(p * (len(us) - 1))]) for p in (0.40, 0.41, 0.60)}
    agg = "SELECT COUNT(*), SUM(fare_amount), AVG(trip_distance) FROM trips WHERE "
    return {
        "zone": agg + "pickup_location_id IN (255, 256)",
        "time": agg + f"pickup_datetime BETWEEN TIMESTAMP '{q[0.40]}' AND TIMESTAMP '{q[0.41]}'",
        "both": agg + f"pickup_location_id IN (255, 256) AND pickup_datetime BETWEEN "
                      f"TIMESTAMP '{q[0.40]}' AND TIMESTAMP '{q[0.60]}'",
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=3_000_000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="zorder-"))
    parquet = work / "trips.parquet"
    t = generate_chunk(GenParams(rows=a.rows, seed=1, williamsburg_share=0.0005), 0)
    pq.write_table(t, parquet, row_group_size=1 << 20)
    del t
    queries = _queries(parquet)
    keys = pq.read_table(parquet, columns=["pickup_location_id", "pickup_datetime"])
    stored = [keys.column(0).to_numpy().astype(np.int16),
              keys.column(1).cast("int64").to_numpy()]  # as the store keeps them
    perm_s = {}
    for order in ClusterOrder:  # the permutation alone, the part of ingest the order changes
        ts = []
        for _ in range(a.reps):
            t0 = time.perf_counter()
            permutation(stored, order)
            ts.append(time.perf_counter() - t0)
        perm_s[str(order)] = min(ts)
    del keys, stored
    duck = duckdb.connect()
    duck.execute(f"CREATE VIEW trips AS SELECT * FROM read_parquet('{parquet}')")
    res: dict = {"machine": {"host": platform.node(), "cpus": os.cpu_count(),
                             "load_before": os.getloadavg()},
                 "rows": a.rows, "page_size": 4096, "queries": queries, "permutation_best_s": perm_s,
                 "orders": {}}
    for name, spec in ORDERS.items():
        secs = []
        for r in range(a.reps):
            d = work / f"{name}-{r}"
            t0 = time.perf_counter()
            ingest([parquet], d / "trips", cluster_by=spec)
            secs.append(time.perf_counter() - t0)
        entry: dict = {"cluster_by": spec, "ingest_s": secs, "ingest_best_s": min(secs),
                       "queries": {}}
        with bamql.connect(work / f"{name}-0", device="cpu") as con:
            con.medium = "file"
            for qn, sql in queries.items():
                first = con.sql(sql)
                times = []
                for _ in range(a.reps):
                    t0 = time.perf_counter()
                    con.sql(sql)
                    times.append(time.perf_counter() - t0)
                want = duck.execute(sql).fetchall()
                got = first.rows()
                ok = len(got) == len(want) == 1 and got[0][0] == want[0][0] and all(
                    (x is None and y is None) or abs(x - y) <= 1e-6 * max(1.0, abs(y))
                    for x, y in zip(got[0][1:], want[0][1:], strict=True))
                s = first.stats
                cols = {c: {"role": str(v.role), "pages_read": v.pages_read,
                            "whole_pages": v.whole_pages, "bytes_read": v.bytes_read,
                            "pruned": 1 - v.pages_read / v.whole_pages if v.whole_pages else None}
                        for c, v in s.columns.items()}
                entry["queries"][qn] = {
                    "ok": ok, "rows_matched": s.rows_matched, "pages_skipped": s.pages_skipped,
                    "bytes_read": s.bytes_read, "whole_bytes": s.whole_bytes,
                    "warm_median_s": statistics.median(times), "columns": cols}
        res["orders"][name] = entry
        print(name, f"ingest {min(secs):.2f} s", {q: (round(v["pages_skipped"], 3), v["ok"])
                                                  for q, v in entry["queries"].items()},
              flush=True)
    res["machine"]["load_after"] = os.getloadavg()
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
