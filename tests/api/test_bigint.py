"""Integers beyond 2**53 and sums beyond int64, end to end against DuckDB: exact pruning,
exact 128-bit sums, overflow as one-line errors, GROUP BY keys that never index out of
bounds (the CPU engine here, the GPU kernels in numba's CUDA simulator)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import bamql
from bamql.errors import OutOfRangeError, PlanError, StoreError
from bamql.storage.ingest import ingest
from tests.conftest import edit_manifest
from tests.reference import assert_same_rows, duck

BIG = 1 << 62
ROOT = Path(__file__).resolve().parents[2]


def _table(n: int) -> pa.Table:
    """ids from 2**62 (unordered), a constant 2**62, a small key, a timestamp; some NULLs."""
    rng = np.random.default_rng(1)
    ids = pa.array(BIG + rng.permutation(n).astype(np.int64), mask=np.arange(n) % 997 == 5)
    return pa.table({"id": ids, "v": np.full(n, BIG, np.int64), "k": np.arange(n) % 3,
                     "ts": pa.array(np.arange(n) * 10**9, pa.timestamp("us"))})


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    d = tmp_path_factory.mktemp("bigint")
    orders = pa.table({"order_id": 10**17 + np.arange(200_000, dtype=np.int64)})
    big = _table(9000)
    pq.write_table(orders, d / "o.parquet")
    pq.write_table(big, d / "b.parquet")
    ingest([d / "o.parquet"], d / "orders" / "trips", page_size=4096)
    ingest([d / "b.parquet"], d / "big" / "trips", page_size=512)
    return {"orders": (d / "orders", orders), "big": (d / "big", big)}


def _same(tables, name: str, sql: str):
    d, t = tables[name]
    with bamql.connect(d, device="cpu") as con:
        ours = con.sql(sql).rows()
    assert_same_rows(ours, duck(sql, t), ordered="ORDER BY" in sql)
    return ours


@pytest.mark.parametrize("name, sql", [
    ("orders", "SELECT COUNT(*) FROM trips WHERE order_id < 100000000000159236"),
    ("orders", "SELECT COUNT(*), MIN(order_id), MAX(order_id) FROM trips "
               "WHERE order_id BETWEEN 100000000000000100.5 AND 100000000000159236"),
    ("big", "SELECT COUNT(*) FROM trips WHERE id <> 4611686018427387904"),
    ("big", "SELECT COUNT(*) FROM trips WHERE id < 4611686018427387904.5"),
    ("big", "SELECT COUNT(*) FROM trips WHERE id = 4611686018427388000e0"),
    ("big", "SELECT COUNT(*) FROM trips WHERE id IN (4611686018427387905, 4611686018427387906.5)"),
    ("big", "SELECT COUNT(*) FROM trips WHERE id NOT IN (4611686018427387905, 2.5)"),
    ("big", "SELECT COUNT(*) FROM trips WHERE id < 100000000000000000000"),
    ("big", "SELECT COUNT(*) FROM trips WHERE id - 4611686018427387904 < 500"),
    ("big", "SELECT SUM(v), AVG(v), SUM(id), AVG(id), COUNT(id) FROM trips"),
    ("big", "SELECT k, SUM(id), AVG(id), MIN(id), MAX(id) FROM trips GROUP BY k"),
    ("big", "SELECT id, COUNT(*), SUM(v) FROM trips GROUP BY id ORDER BY id DESC LIMIT 5"),
    ("big", "SELECT SUM(id) * 2, SUM(id) / COUNT(*) FROM trips WHERE k = 1"),
    ("big", "SELECT SUM(k) FROM trips WHERE id < 4611686018427387910"),
])
def test_answers_match_duckdb(tables, name, sql):
    _same(tables, name, sql)


def test_sums_beyond_int64_are_decimal128_and_small_ones_int64(tables):
    d, t = tables["big"]
    sql = "SELECT SUM(v) AS s, SUM(k) AS small FROM trips WHERE id < 4611686018427387908"
    with bamql.connect(d, device="cpu") as con:
        res = con.sql(sql)
    assert res.to_arrow().schema.types == [pa.decimal128(38, 0), pa.int64()]
    assert res.rows()[0][0] == 4 * BIG  # 2**64: DuckDB's 18446744073709551616, not 0
    assert_same_rows(res.rows(), duck(sql, t), ordered=False)


@pytest.mark.parametrize("sql, what", [
    ("SELECT SUM(v * 4) FROM trips", "multiplication"),
    ("SELECT COUNT(*) FROM trips WHERE k = 2 AND v + v > 0", "addition"),
    ("SELECT COUNT(*) FROM trips WHERE 0 - v - v - v < 0", "subtraction"),  # 0 - v - v is MIN
    ("SELECT k, MAX(v) * 2 FROM trips GROUP BY k", "multiplication"),
])
def test_overflow_is_one_error_as_in_duckdb(tables, sql, what):
    d, t = tables["big"]
    with pytest.raises(Exception, match=f"Overflow in {what} of INT64"):
        duck(sql, t)
    with bamql.connect(d, device="cpu") as con, pytest.raises(
            OutOfRangeError, match=f"^Out of Range Error: Overflow in {what} of INT64$"):
        con.sql(sql)


def test_out_of_range_constants_are_refused(tables):
    d, _ = tables["big"]
    with bamql.connect(d, device="cpu") as con:
        with pytest.raises(PlanError, match="timestamp '300000-01-01' is out of range"):
            con.sql("SELECT COUNT(*) FROM trips WHERE ts < TIMESTAMP '300000-01-01'")
        with pytest.raises(PlanError, match="out of the range of BIGINT"):
            con.sql("SELECT SUM(k * 100000000000000000000) FROM trips")


def _narrow_id(m: dict) -> None:
    """Metadata that no longer matches the data (sealed again): a small domain of ids."""
    for c in m["columns"]:
        if c["name"] == "id":
            c["max"] = c["min"] + 5


def test_group_keys_outside_the_metadata_fail_and_wide_domains_are_hashed(tables, tmp_path):
    _, t = tables["big"]
    pq.write_table(t, tmp_path / "b.parquet")
    ingest([tmp_path / "b.parquet"], tmp_path / "d" / "trips", page_size=512)
    edit_manifest(tmp_path / "d" / "trips", _narrow_id)
    with bamql.connect(tmp_path / "d", device="cpu") as con:
        with pytest.raises(StoreError, match="GROUP BY key outside the range"):
            con.sql("SELECT id, COUNT(*) FROM trips GROUP BY id")
    wide = pa.table({"id": np.array([0, BIG], np.int64)})
    pq.write_table(wide, tmp_path / "w.parquet")
    ingest([tmp_path / "w.parquet"], tmp_path / "w" / "trips")
    with bamql.connect(tmp_path / "w", device="cpu") as con:
        sql = "SELECT id, COUNT(*) FROM trips GROUP BY id ORDER BY id"
        assert con.explain(sql).startswith("Hash aggregate")  # no kernel slots for 2**62 keys
        assert con.sql(sql).rows() == [(0, 1), (BIG, 1)]


SIM_SCRIPT = textwrap.dedent("""
    import json, sys, tempfile
    from pathlib import Path
    import pyarrow.parquet as pq
    import bamql
    from bamql.storage.ingest import ingest
    from tests.conftest import edit_manifest
    from tests.api.test_bigint import _narrow_id, _table
    from tests.reference import assert_same_rows

    d = Path(tempfile.mkdtemp())
    pq.write_table(_table(300), d / "b.parquet")
    ingest([d / "b.parquet"], d / "data" / "trips", page_size=512)
    queries = [
        "SELECT id, COUNT(*) FROM trips WHERE id < 4611686018427387910.5 GROUP BY id",
        "SELECT k, SUM(v), AVG(id), COUNT(*) FROM trips GROUP BY k",
        "SELECT SUM(v), SUM(id) FROM trips WHERE id <> 4611686018427387904",
        "SELECT SUM(v * 2) FROM trips",
        "SELECT COUNT(*) FROM trips WHERE k = 1 AND v + v > 0",
    ]

    def answers(**kw):
        out = []
        with bamql.connect(d / "data", **kw) as con:
            for q in queries:
                try:
                    out.append(con.sql(q).rows())
                except bamql.errors.BamqlError as e:
                    out.append(str(e))
        return out

    want = answers(device="cpu")
    assert "Overflow in multiplication" in want[3] and "Overflow in addition" in want[4], want
    for backend in ("gpu", "host"):
        got = answers(device="gpu", backend=backend, cache="64KiB")
        for q, a, b in zip(queries, want, got):
            if isinstance(a, str):
                assert a == b, (backend, q, b)
            else:
                assert_same_rows(b, a, ordered=False)
    edit_manifest(d / "data" / "trips", _narrow_id)
    with bamql.connect(d / "data", device="gpu", backend="gpu") as con:
        try:
            con.sql("SELECT id, COUNT(*) FROM trips GROUP BY id")
            raise AssertionError("a key outside its domain was not flagged")
        except bamql.errors.StoreError as e:
            assert "GROUP BY key outside the range" in str(e), e
    print("sim ok")
""")


@pytest.mark.slow  # in CI's slow run; the default run keeps lighter simulator checks
def test_gpu_kernels_in_the_simulator():
    pytest.importorskip("numba.cuda")
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1", "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-c", SIM_SCRIPT], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and "sim ok" in r.stdout, r.stdout[-3000:] + r.stderr[-3000:]


def test_decimal_literals_beyond_38_digits_are_doubles(tmp_path):
    # DuckDB types a literal with more digits than a DECIMAL holds as a DOUBLE: 2**53 + 1
    # written with 44 digits rounds to 2**53; with 37 digits it stays exact
    t = pa.table({"x": pa.array([2**53, 2**53 + 2, 5], pa.int64())})
    pq.write_table(t, tmp_path / "t.parquet")
    ingest([tmp_path / "t.parquet"], tmp_path / "data" / "trips")
    with bamql.connect(tmp_path / "data", device="cpu") as con:
        for frac in ("0" * 28, "0" * 21, "0" * 22):
            for op in (">=", "=", "<"):
                sql = f"SELECT COUNT(*) FROM trips WHERE x {op} 9007199254740993.{frac}"
                assert_same_rows(con.sql(sql).rows(), duck(sql, t), ordered=False)
