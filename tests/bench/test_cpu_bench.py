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
