from __future__ import annotations

import json

from bamql.bench.cpu import run, summary


def test_cpu_bench_writes_checked_json(tmp_path):
    out = tmp_path / "res" / "cpu.json"
    res = run(100_000, tmp_path / "work", out, queries=("q01", "q06"), reps=1, page_sizes=(4096,),
              share=0.005)
    data = json.loads(out.read_text())
    assert data["rows"] == 100_000 and data["machine"]["cores"]
    engines = {r["engine"] for r in data["runs"]}
    assert engines == {"bamql-cpu", "pyarrow-whole", "duckdb"}
    assert all(r["ok"] for r in data["runs"])  # every answer agreed with DuckDB
    ours = [r for r in data["runs"] if r["engine"] == "bamql-cpu"]
    assert all(r["bytes_read"] <= r["whole_column_bytes"] for r in ours)
    assert "q06" in summary(res)


def test_bench_command(tmp_path):
    import subprocess
    import sys

    out = tmp_path / "r.json"
    r = subprocess.run([sys.executable, "-m", "bamql.cli", "bench", "--rows", "50000", "--queries",
                        "q12,q15", "--reps", "1", "--page-sizes", "1KiB", "--selectivity", "0.01",
                        "--out", str(out), "--workdir", str(tmp_path / "w")],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "q15" in r.stdout and json.loads(out.read_text())["runs"]
    r = subprocess.run([sys.executable, "-m", "bamql.cli", "bench", "--queries", "q99"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "unknown queries" in r.stderr
