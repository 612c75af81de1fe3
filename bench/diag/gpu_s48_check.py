"""Session 48's GPU check of what it changed, in GPU sessions against DuckDB: quantiles taken
from counts (the counted GROUP BY on the GPU), windows filtered by rank over columns with few
values (ranked scans), joined columns looked up in the kernel (registered and derived
tables, keys from int64's minimum), and a hash GROUP BY with more groups than its first table
(which stops probing once full). Prints one line per check; run from the project root."""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import bamql
from bamql.storage.ingest import ingest
from tests.api.test_lookups import DERIVED, MIXED, RANKED, RATES, REGISTERED, _trips
from tests.exec.test_quantiles import COUNTED, counted_table
from tests.reference import assert_same_rows, duck_tables


def check(label: str, path: Path, tables: dict, sql: str, backend: str, register=None) -> bool:
    want = duck_tables(sql, tables)
    try:
        with bamql.connect(path, device="gpu", backend=backend) as con:
            for name, t in (register or {}).items():
                con.register(name, t)
            res = con.sql(sql)
            got = res.rows()
            where = res.stats.device if res.stats else "?"
        assert_same_rows(got, want, ordered="ORDER BY" in sql)
        print(f"ok   {label} [{backend}, {where}]: {sql[:90]}")
        return True
    except Exception as e:  # noqa: BLE001 - a check's failure is reported, the run goes on
        print(f"FAIL {label} [{backend}]: {sql[:90]}: {type(e).__name__}: {str(e)[:300]}")
        return False


def main() -> int:
    tmp = Path(tempfile.mkdtemp())
    fails = 0
    qt = counted_table()
    pq.write_table(qt, tmp / "r.parquet")
    ingest([str(tmp / "r.parquet")], tmp / "qdb" / "r")
    tt = _trips()
    pq.write_table(tt, tmp / "t.parquet")
    ingest([str(tmp / "t.parquet")], tmp / "tdb" / "trips", page_size=512)
    rng = np.random.default_rng(1)
    n = 400_000
    big = pa.table({"a": rng.integers(0, 300, n), "b": rng.integers(-999, 999, n) / 10,
                    "c": rng.integers(0, 50, n) / 100})
    pq.write_table(big, tmp / "b.parquet")
    ingest([str(tmp / "b.parquet")], tmp / "bdb" / "trips", page_size=512)
    for backend in ("gpu", "host"):
        for sql in COUNTED:
            fails += not check("counted quantile", tmp / "qdb", {"r": qt}, sql, backend)
        for sql in RANKED:
            fails += not check("ranked scan", tmp / "tdb", {"trips": tt}, sql, backend)
        for sql in REGISTERED + DERIVED + MIXED:
            fails += not check("lookup", tmp / "tdb", {"trips": tt, "rates": RATES}, sql, backend,
                               {"rates": RATES})
        sql = "SELECT COUNT(*), SUM(n) FROM (SELECT a, b, c, COUNT(*) AS n FROM trips GROUP BY 1, 2, 3)"
        t0 = time.perf_counter()
        fails += not check("hash groups past the first table", tmp / "bdb", {"trips": big}, sql, backend)
        print(f"     ({time.perf_counter() - t0:.2f} s with compiles)")
    low = -(2**63)
    fact = pa.table({"k": pa.array([low + 1, low + 2, low + 3, 2**63 - 1, 0, None, low + 3] * 50,
                                   pa.int64()), "v": pa.array(list(range(7)) * 50, pa.int64())})
    pq.write_table(fact, tmp / "e.parquet")
    ingest([str(tmp / "e.parquet")], tmp / "edb" / "trips", page_size=512)
    keys = pa.table({"id": pa.array([low, low + 3, low + 9, low + 1], pa.int64()),
                     "cap": pa.array([1, 2, 30, 4], pa.int64())})
    for backend in ("gpu", "host"):
        sql = ("SELECT t.v, MAX(r.cap + t.v), COUNT(*) FROM trips t LEFT JOIN keys r ON t.k = r.id "
               "WHERE t.v < r.cap OR r.cap IS NULL GROUP BY 1 ORDER BY 1")
        fails += not check("lookup from int64's minimum", tmp / "edb", {"trips": fact, "keys": keys},
                           sql, backend, {"keys": keys})
    print(f"{fails} failed")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
