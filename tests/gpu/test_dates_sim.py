"""DATE columns (issue 41) in the GPU kernel, run in numba's CUDA simulator: a DATE is the
int64 microseconds of its midnight there, as a TIMESTAMP is (no kernel code of its own), and
comes back as date32, against DuckDB (values and types)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("numba.cuda")

SCRIPT = textwrap.dedent("""
    import faulthandler
    faulthandler.dump_traceback_later(240, exit=True)
    import tempfile
    from pathlib import Path
    import duckdb
    import pyarrow.parquet as pq
    import bamql
    from bamql.storage.ingest import ingest
    from tests.sql.corpus import hostile_table

    d = Path(tempfile.mkdtemp())
    t = hostile_table(97, seed=7)
    pq.write_table(t, d / "h.parquet")
    ingest([d / "h.parquet"], d / "data" / "hostile", page_size=512)
    ref = duckdb.connect()
    ref.register("hostile", t)
    queries = [
        "SELECT id, dt FROM hostile WHERE dt < DATE '1930-01-01' OR dt = '1970-01-01' ORDER BY id",
        "SELECT MIN(dt), MAX(dt), COUNT(dt) FROM hostile WHERE dt < ts OR EXTRACT(year FROM dt) > 2050",
        "SELECT dt, COUNT(*) FROM hostile WHERE dt >= DATE '2080-01-01' GROUP BY dt ORDER BY dt",
        "SELECT EXTRACT(dow FROM dt) AS wd, MAX(dt), MIN(date_trunc('month', dt)) FROM hostile "
        "GROUP BY wd ORDER BY wd NULLS LAST",
    ]
    with bamql.connect(d / "data", device="gpu", backend="host", cache="64KiB") as con:
        assert con.device == "gpu" and "simulator" in con.note
        for sql in queries:
            ours, want = con.sql(sql).to_arrow(), ref.sql(sql).to_arrow_table()
            assert ours.schema.types == want.schema.types, (sql, ours.schema, want.schema)
            assert [tuple(r.values()) for r in ours.to_pylist()] == \
                [tuple(r.values()) for r in want.to_pylist()], sql
    print("dates ok")
""")


def test_dates_in_the_simulator():
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    r = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True,
                       timeout=600, cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    assert r.returncode == 0 and "dates ok" in r.stdout, r.stdout[-3000:] + r.stderr[-12000:]
