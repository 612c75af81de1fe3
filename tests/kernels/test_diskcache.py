"""Generated CPU kernels kept on disk: a second process loads them instead of compiling."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.reference import assert_same_rows

SCRIPT = """
import json, sys
import bamql
from bamql.kernels import cpu, diskcache
with bamql.connect(sys.argv[1], device="cpu") as con:
    rows = con.sql(sys.argv[2]).rows()
print(json.dumps({"rows": rows, "hits": cpu.disk_cache_hits(),
                  "dir": str(diskcache.kernel_dir())}))
"""
SQL = "SELECT payment_type, COUNT(*), AVG(fare_amount) FROM trips WHERE trip_distance > 3 GROUP BY 1"


def _run(store, cache_dir) -> dict:
    env = dict(os.environ, BAMQL_CACHE_DIR=str(cache_dir))
    r = subprocess.run([sys.executable, "-c", SCRIPT, str(store), SQL], env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_a_second_process_loads_the_kernels(taxi_store, tmp_path):
    first = _run(taxi_store, tmp_path / "cache")
    second = _run(taxi_store, tmp_path / "cache")
    assert first["hits"] == 0 and second["hits"] > 0  # compiled once, then loaded
    assert first["dir"] == str(tmp_path / "cache" / "kernels")
    assert sorted((tmp_path / "cache" / "kernels").glob("k_*.py"))
    assert_same_rows(second["rows"], first["rows"], ordered=False)


def test_an_unwritable_cache_directory_falls_back_to_compiling(taxi_store, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    out = _run(taxi_store, blocker / "cache")  # cannot be made under a file
    assert out["dir"] == "None" and out["hits"] == 0
    ref = _run(taxi_store, tmp_path / "ok")
    assert_same_rows(out["rows"], ref["rows"], ordered=False)


def test_the_kernel_directory_stays_bounded(tmp_path, monkeypatch):
    from bamql.kernels import diskcache

    monkeypatch.setattr(diskcache, "_dir", tmp_path)
    monkeypatch.setattr(diskcache, "_checked", True)
    monkeypatch.setattr(diskcache, "MAX_KERNELS", 10)
    (tmp_path / "__pycache__").mkdir()
    for i in range(12):
        fn, on_disk = diskcache.load(f"def kern():\n    return {i}\n", "kern")
        assert on_disk and fn() == i
        key = next(iter(sorted(tmp_path.glob("k_*.py"), key=lambda p: p.stat().st_mtime)))
        (tmp_path / "__pycache__" / f"{key.stem}.kern-1.nbi").touch()
    mods = list(tmp_path.glob("k_*.py"))
    assert len(mods) <= 10  # pruned down to 9 when the 11th came, then one more
    assert {p.stem.split(".")[0] for p in (tmp_path / "__pycache__").iterdir()} <= {m.stem for m in mods}
