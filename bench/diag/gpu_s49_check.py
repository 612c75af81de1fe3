"""Session 49's GPU check, in GPU sessions against DuckDB: session 48's operators (counted
quantiles, ranked scans, lookups of joined columns) and session 49's plan-tree aggregates
(SUM/AVG/STDDEV of DISTINCT values, DISTINCT ON) on the ``gpu``, ``host`` and ``file``
backends, each with the default page cache and with a cache of 4 pages, then every query
from eight threads at once on one session (4-page cache). Prints one line per check; run
from the project root."""

from __future__ import annotations

import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow.parquet as pq

import bamql
from bamql.storage.ingest import ingest
from tests.api.test_lookups import DERIVED, MIXED, RANKED, RATES, REGISTERED, _trips
from tests.exec.test_quantiles import COUNTED, counted_table
from tests.reference import assert_same_rows, duck_tables

#: the session-49 shapes: distinct values inside SUM/AVG/STDDEV, DISTINCT ON
TREE = [
    "SELECT k, SUM(DISTINCT x), AVG(DISTINCT y), COUNT(DISTINCT v), STDDEV(DISTINCT v) "
    "FROM trips GROUP BY 1 ORDER BY 1 NULLS FIRST",
    "SELECT SUM(DISTINCT v), AVG(DISTINCT x) FILTER (WHERE y > 10) FROM trips WHERE x > 1",
    "SELECT DISTINCT ON (k) k, x, v FROM trips ORDER BY k NULLS FIRST, x DESC NULLS LAST, v, y",
]

PAGE = 512  # bytes: 4 pages is a cache of 2 KiB
#: BAMQL_CHECK_DEVICE=cpu: a dry run of the script on the CPU engine (no backend, no cache)
DEVICE = os.environ.get("BAMQL_CHECK_DEVICE", "gpu")


def connect(path: Path, backend: str, cache: int | None):
    if DEVICE == "cpu":
        return bamql.connect(path, device="cpu")
    return bamql.connect(path, device="gpu", backend=backend, cache=cache)


def work(tmp: Path) -> list[tuple[str, Path, dict, str, dict | None]]:
    """(label, store directory, DuckDB's tables, SQL, tables to register) of every check."""
    qt = counted_table()
    pq.write_table(qt, tmp / "r.parquet")
    ingest([str(tmp / "r.parquet")], tmp / "qdb" / "r", page_size=PAGE)
    tt = _trips()
    pq.write_table(tt, tmp / "t.parquet")
    ingest([str(tmp / "t.parquet")], tmp / "tdb" / "trips", page_size=PAGE)
    out = [("counted quantile", tmp / "qdb", {"r": qt}, sql, None) for sql in COUNTED]
    out += [("ranked scan", tmp / "tdb", {"trips": tt}, sql, None) for sql in RANKED]
    out += [("lookup", tmp / "tdb", {"trips": tt, "rates": RATES}, sql, {"rates": RATES})
            for sql in REGISTERED + DERIVED + MIXED]
    out += [("tree aggregate", tmp / "tdb", {"trips": tt}, sql, None) for sql in TREE]
    return out


def check(label: str, con, tables: dict, sql: str, how: str) -> bool:
    want = duck_tables(sql, tables)
    try:
        res = con.sql(sql)
        assert_same_rows(res.rows(), want, ordered="ORDER BY" in sql)
        where = res.stats.device if res.stats else "tree"
        print(f"ok   {label} [{how}, {where}]: {sql[:90]}")
        return True
    except Exception as e:  # noqa: BLE001 - a check's failure is reported, the run goes on
        print(f"FAIL {label} [{how}]: {sql[:90]}: {type(e).__name__}: {str(e)[:300]}")
        return False


def main() -> int:
    tmp = Path(tempfile.mkdtemp())
    checks = work(tmp)
    fails = total = 0
    for backend in ("gpu", "host", "file"):
        for cache in (None, 4 * PAGE):
            how = f"{backend}, {'default cache' if cache is None else '4 pages'}"
            cons: dict[Path, object] = {}
            try:
                for label, path, tables, sql, reg in checks:
                    if path not in cons:
                        cons[path] = connect(path, backend, cache)
                    con = cons[path]
                    for name, t in (reg or {}).items():
                        if name not in con.dimensions:
                            con.register(name, t)
                    total += 1
                    fails += not check(label, con, tables, sql, how)
            finally:
                for con in cons.values():
                    con.close()
    for backend in ("host", "file", "gpu"):  # eight threads on one session per store
        t0 = time.perf_counter()
        cons = {}
        for _, path, _, _, reg in checks:
            if path not in cons:
                cons[path] = connect(path, backend, 4 * PAGE)
            for name, t in (reg or {}).items():
                if name not in cons[path].dimensions:
                    cons[path].register(name, t)
        jobs = [c for c in checks for _ in range(2)]
        how = f"{backend}, 8 threads, 4 pages"
        with ThreadPoolExecutor(8) as pool:
            oks = list(pool.map(check, [c[0] for c in jobs], [cons[c[1]] for c in jobs],
                                [c[2] for c in jobs], [c[3] for c in jobs], [how] * len(jobs)))
        for con in cons.values():
            con.close()
        total += len(oks)
        fails += oks.count(False)
        print(f"     8 threads on {backend}: {len(oks)} checks, {time.perf_counter() - t0:.1f} s")
    print(f"{total} checks, {fails} failed")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
