"""GPU kernels kept on disk (marker ``gpu``, skipped without one): a second process loads
the query's kernel from numba-cuda's signed cache files instead of compiling it, and an
edited device function is never served from a kernel compiled before the edit."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from bamql.api.session import gpu_unavailable_reason
from tests.reference import assert_same_rows

REASON = gpu_unavailable_reason()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(REASON is not None, reason=f"no GPU: {REASON}")]

SCRIPT = """
import json, sys
import bamql
from bamql.gpu import kernel as kgpu
from bamql.kernels import diskcache
with bamql.connect(sys.argv[1], device="gpu", backend=sys.argv[3]) as con:
    r = con.sql(sys.argv[2])
    rows = r.rows()
print(json.dumps({"rows": rows, "hits": kgpu.disk_cache_hits(),
                  "kernels": kgpu.kernel_cache_size(), "dir": str(diskcache.kernel_dir())}))
"""
SQL = ("SELECT payment_type, COUNT(*), AVG(fare_amount), MAX(tip_amount) FROM trips "
       "WHERE trip_distance > 3 AND pickup_location_id IN (236, 161, 237) GROUP BY 1")


def _run(store, cache_dir, backend: str = "host", sql: str = SQL) -> dict:
    env = dict(os.environ, BAMQL_CACHE_DIR=str(cache_dir))
    r = subprocess.run([sys.executable, "-c", SCRIPT, str(store), sql, backend], env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("backend", ["host", "file"])
def test_a_second_process_loads_the_gpu_kernel(taxi_store, tmp_path, backend):
    first = _run(taxi_store, tmp_path / "cache", backend)
    second = _run(taxi_store, tmp_path / "cache", backend)
    assert first["hits"] == 0 and first["kernels"] == 1
    assert second["hits"] == 1  # loaded, not compiled
    kdir = tmp_path / "cache" / "kernels"
    assert first["dir"] == str(kdir)
    mods = sorted(kdir.glob("k_*.py"))
    assert mods and all("bamql.gpu.kernel_globals" in m.read_text() for m in mods)
    assert sorted((kdir / "__pycache__").glob("k_*.nbc")) and sorted((kdir / "__pycache__").glob("k_*.nbi"))
    assert_same_rows(second["rows"], first["rows"], ordered=False)
    fresh = _run(taxi_store, tmp_path / "other", backend)  # a new cache: the same answer
    assert_same_rows(fresh["rows"], first["rows"], ordered=False)


def test_other_constants_load_the_same_kernel(taxi_store, tmp_path):
    # constants of similar selectivity, so that the cost model picks the same access paths
    # (another plan is another kernel): only the constants differ, passed as arguments
    sql = ("SELECT payment_type, COUNT(*), AVG(fare_amount), SUM(tip_amount) FROM trips "
           "WHERE trip_distance > {d} AND pickup_location_id IN ({a}, {b}) GROUP BY 1")
    first = _run(taxi_store, tmp_path / "cache", sql=sql.format(d=3, a=236, b=161))
    other = _run(taxi_store, tmp_path / "cache", sql=sql.format(d=7, a=48, b=79))
    assert first["hits"] == 0 and other["hits"] == 1


def test_a_planted_data_file_is_not_loaded(taxi_store, tmp_path):
    import pickle

    first = _run(taxi_store, tmp_path / "cache")
    marker = tmp_path / "ran"
    for f in (tmp_path / "cache" / "kernels" / "__pycache__").glob("k_*.nbc"):
        f.write_bytes(f.read_bytes()[:32] + pickle.dumps(_Evil(str(marker))))
    again = _run(taxi_store, tmp_path / "cache")
    assert not marker.exists() and again["hits"] == 0  # compiled again ...
    assert_same_rows(again["rows"], first["rows"], ordered=False)
    assert _run(taxi_store, tmp_path / "cache")["hits"] == 1  # ... and saved again


class _Evil:
    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return (exec, (f"open({self.marker!r}, 'w').write('ran')",))
