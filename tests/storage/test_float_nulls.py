"""Float NULLs survive ingest, NaNs are stored as NaN (not NULL), and stores of older
versions whose float NULLs or NaNs are ambiguous are refused."""

from __future__ import annotations

import json

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.orc as paorc
import pyarrow.parquet as pq
import pytest

import bamql
from bamql.errors import StoreError
from bamql.exactfloat import to_float64
from bamql.storage.decimals import DecimalScan, real_nans
from bamql.storage.encoding import NULL_F32_BITS, NULL_F64_BITS, null_mask, sentinel_for
from bamql.storage.ingest import ingest
from bamql.storage.store import PageStore
from tests.conftest import SAMPLES, edit_manifest
from tests.reference import assert_same_rows, duck

JAN = next(p for p in SAMPLES if p.name.endswith("2019-01.csv"))


def _rows(data, sql: str) -> list[tuple]:
    with bamql.connect(data, device="cpu") as con:
        return con.sql(sql).rows()


def test_csv_float_nulls_of_the_real_sample_survive_ingest(tmp_path):
    ingest([JAN], tmp_path / "jan" / "trips")
    with PageStore(tmp_path / "jan" / "trips") as s:
        c = s.column("congestion_surcharge")
        assert c.nulls == 6327 and c.scale >= 1  # 0.0 and 2.5: one decimal, int16
        assert s.to_arrow("congestion_surcharge").null_count == 6327
    for sql in [
        "SELECT COUNT(congestion_surcharge), COUNT(*) FROM trips WHERE congestion_surcharge IS NULL",
        "SELECT COUNT(congestion_surcharge), SUM(congestion_surcharge), AVG(congestion_surcharge), "
        "MIN(congestion_surcharge), MAX(congestion_surcharge) FROM trips",
        "SELECT payment_type, COUNT(congestion_surcharge), AVG(congestion_surcharge) FROM trips "
        "GROUP BY payment_type",
        "SELECT COUNT(*) FROM trips WHERE congestion_surcharge > 0 OR congestion_surcharge IS NULL",
    ]:
        ref = duckdb.sql(sql.replace("FROM trips", f"FROM read_csv('{JAN}')")).fetchall()
        assert_same_rows(_rows(tmp_path / "jan", sql), ref, ordered=False)


def _write(t: pa.Table, path, fmt: str) -> None:
    if fmt == "csv":  # by hand: Arrow's writer drops the ".0" of whole numbers
        lines = [",".join(t.column_names)]
        for row in t.to_pylist():
            lines.append(",".join("" if v is None else repr(v) for v in row.values()))
        path.write_text("\n".join(lines) + "\n")
    elif fmt == "parquet":
        pq.write_table(t, path)
    else:
        paorc.write_table(t, path)


@pytest.mark.parametrize("fmt", ["csv", "parquet", "orc"])
def test_whole_number_floats_keep_their_nulls(tmp_path, fmt):
    t = pa.table({"id": [1, 2, 3], "x": pa.array([1.0, None, 3.0], pa.float64())})
    _write(t, tmp_path / f"t.{fmt}", fmt)
    ingest([tmp_path / f"t.{fmt}"], tmp_path / "d" / "trips")
    with PageStore(tmp_path / "d" / "trips") as s:
        c = s.column("x")
        assert (c.dtype, c.scale, c.nulls) == ("int16", 1, 1)
    sql = "SELECT COUNT(x), AVG(x), SUM(x), MIN(x), MAX(x), COUNT(*) FROM trips WHERE id > 0"
    got = _rows(tmp_path / "d", sql)
    assert_same_rows(got, duck(sql, t), ordered=False)
    assert got == [(2, 2.0, 4.0, 1.0, 3.0, 3)]


@pytest.mark.parametrize("fmt", ["csv", "parquet", "orc"])
def test_nan_in_whole_number_floats_is_stored_as_nan(tmp_path, fmt):
    x = pa.array([1.0, float("nan"), None, 3.0, float("inf")], pa.float64())
    t = pa.table({"id": [1, 2, 3, 4, 5], "x": x, "h": pa.array(x.to_pylist(), pa.float32())})
    _write(t, tmp_path / f"t.{fmt}", fmt)
    ingest([tmp_path / f"t.{fmt}"], tmp_path / "d" / "trips")  # was: ArrowInvalid ... int16
    with PageStore(tmp_path / "d" / "trips") as s:
        for name in ("x", "h"):
            c = s.column(name)
            assert c.kind == "float" and c.scale == 0 and c.nulls == 1
            got = s.to_arrow(name).to_pylist()
            assert got[2] is None and got[1] != got[1] and got[4] == float("inf"), got
    ref = pa.table({"id": t["id"], "x": x, "h": t["h"]})  # what DuckDB reads from any of them
    for sql in ["SELECT COUNT(x), SUM(x), MIN(x), MAX(x), COUNT(h), MAX(h) FROM trips",
                "SELECT COUNT(*) FROM trips WHERE x > 5",
                "SELECT COUNT(*) FROM trips WHERE x IS NULL",
                "SELECT COUNT(*) FROM trips WHERE h IS NOT NULL AND h < 5"]:
        assert_same_rows(_rows(tmp_path / "d", sql), duck(sql, ref), ordered=False)


def test_csv_nulls_are_empty_fields_as_in_duckdb(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("id,x,s\n1,nan,NA\n2,,\n3,NaN,null\n4,2.5,b\n")
    ingest([p], tmp_path / "d" / "trips")
    with PageStore(tmp_path / "d" / "trips") as s:
        assert s.column("x").nulls == 1 and s.column("s").nulls == 1
    for sql in ["SELECT COUNT(x), COUNT(s), COUNT(*) FROM trips",
                "SELECT COUNT(*) FROM trips WHERE x > 3",
                "SELECT s, COUNT(*) FROM trips GROUP BY s"]:
        ref = duckdb.sql(sql.replace("FROM trips", f"FROM read_csv('{p}')")).fetchall()
        assert_same_rows(_rows(tmp_path / "d", sql), ref, ordered=False)


def test_float_null_is_one_nan_bit_pattern_and_other_nans_are_values():
    for dt, bits, it in ((np.float64, NULL_F64_BITS, np.int64), (np.float32, NULL_F32_BITS, np.int32)):
        s = sentinel_for(dt)
        assert s != s and np.array([s], dt).view(it)[0] == bits
        v = np.array([1.0, np.nan, -np.nan, s, np.inf], dt)
        assert null_mask(v).tolist() == [False, False, False, True, False]


def test_a_scan_with_real_nans_keeps_the_column_float():
    a = pa.array([1.0, None, 2.0])
    v = to_float64(a)
    assert not real_nans(a, v)
    b = pa.array([1.0, None, float("nan")])
    assert real_nans(b, to_float64(b))
    s = DecimalScan()
    s.update(v, real_nans=False)
    assert s.encoding() == (1, np.dtype(np.int16))
    s.update(to_float64(b), real_nans=True)
    assert s.encoding() is None


def test_older_stores_are_refused_and_ambiguous_float_columns_too(tmp_path):
    t = pa.table({"id": [1, 2, 3], "x": pa.array([1.0, None, 3.0]), "y": [0.5, 1.0, 2.0]})
    pq.write_table(t, tmp_path / "t.parquet")
    ingest([tmp_path / "t.parquet"], tmp_path / "a", floats="plain")
    man = tmp_path / "a" / "manifest.json"
    d = json.loads(man.read_text())
    man.write_text(json.dumps({**d, "format_version": 2}))  # NULL and NaN stored alike
    with pytest.raises(StoreError, match="format version 2 .* re-ingest the table"):
        PageStore(tmp_path / "a")
    ingest([tmp_path / "t.parquet"], tmp_path / "b")

    def old(m):  # what version 2 made of x: int16, scale 0, its NULL written as 0
        next(c for c in m["columns"] if c["name"] == "x").update(scale=0, nulls=0)

    edit_manifest(tmp_path / "b", old)
    with pytest.raises(StoreError, match="column 'x': scale 0 does not fit a float column"):
        PageStore(tmp_path / "b")
