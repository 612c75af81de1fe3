"""Every scalar function (CASE, COALESCE, NULLIF, ABS, FLOOR, CEIL, ROUND, CAST, EXTRACT,
date_trunc) in the GPU kernel, run in numba's CUDA simulator on a tiny hostile table, against
DuckDB."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("numba.cuda")

# A stall in the simulator (seen once in CI, not reproduced in 57 runs since) dumps every
# thread's stack and exits, so the failure says where it hung instead of timing out blind.
SCRIPT = textwrap.dedent("""
    import faulthandler
    faulthandler.dump_traceback_later(240, exit=True)
    import tempfile
    from pathlib import Path
    import pyarrow.parquet as pq
    import bamql
    from bamql.storage.ingest import ingest
    from tests.reference import assert_same_rows, duck_tables
    from tests.sql.corpus import hostile_table

    d = Path(tempfile.mkdtemp())
    t = hostile_table(97, seed=7)
    pq.write_table(t, d / "h.parquet")
    ingest([d / "h.parquet"], d / "data" / "hostile", page_size=512)
    queries = [
        "SELECT SUM(CASE WHEN k > 3 THEN neg WHEN k IS NULL THEN 1000 END), "
        "COUNT(COALESCE(nul_i, k)), SUM(NULLIF(k, 3)) FROM hostile",
        "SELECT SUM(CASE WHEN big > 4611686018427387903 OR big < -4611686018427387904 THEN 0 "
        "ELSE big * 2 END) FROM hostile",
        "SELECT SUM(ABS(neg)), MAX(ABS(fx)), SUM(FLOOR(fx)), SUM(CEIL(fx)), SUM(ROUND(fx)), "
        "SUM(ROUND(fx, 2)) FROM hostile WHERE fx = fx AND ABS(fx) < 1e300",
        "SELECT SUM(CAST(CASE WHEN ABS(fx) < 1e9 THEN fx END AS BIGINT)), "
        "SUM(CAST(neg AS INTEGER)), AVG(CAST(k AS DOUBLE)) FROM hostile",
        "SELECT COUNT(*) FROM hostile WHERE ROUND(CAST(m AS DOUBLE), 1) > m",
        "SELECT SUM(EXTRACT(YEAR FROM ts)), SUM(EXTRACT(MONTH FROM ts)), SUM(EXTRACT(DAY FROM ts)), "
        "SUM(EXTRACT(DOY FROM ts)), SUM(EXTRACT(WEEK FROM ts)), SUM(EXTRACT(QUARTER FROM ts)), "
        "SUM(EXTRACT(ISODOW FROM ts)), SUM(EXTRACT(SECOND FROM ts)), SUM(EXTRACT(ISOYEAR FROM ts)) "
        "FROM hostile",
        "SELECT MIN(date_trunc('month', ts)), MAX(date_trunc('year', ts)), "
        "MIN(date_trunc('week', ts)), MAX(date_trunc('quarter', ts)), "
        "MIN(date_trunc('hour', ts)) FROM hostile WHERE date_trunc('day', ts) < ts",
        "SELECT EXTRACT(MONTH FROM ts) AS mo, COUNT(*) FROM hostile GROUP BY mo ORDER BY mo",
    ]
    with bamql.connect(d / "data", device="gpu", backend="host", cache="64KiB") as con:
        assert con.device == "gpu" and "simulator" in con.note
        for sql in queries:
            ref = duck_tables(sql, {"hostile": t})
            assert_same_rows(con.sql(sql).rows(), ref, ordered="ORDER BY" in sql)
        try:
            con.sql("SELECT SUM(CAST(fx AS BIGINT)) FROM hostile")
        except bamql.errors.OutOfRangeError as e:
            assert "INT64" in str(e)
        else:
            raise AssertionError("a CAST of NaN to BIGINT was answered")
    print("scalars ok")
""")


def test_scalar_functions_in_the_simulator():
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    r = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True,
                       timeout=600, cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    assert r.returncode == 0 and "scalars ok" in r.stdout, r.stdout[-3000:] + r.stderr[-12000:]
