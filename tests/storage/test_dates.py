"""DATE columns in the page store (issue 41): a date32 or date64 source column is kind
``timestamp`` of SQL type DATE, its midnights' microseconds; files' DATE and TIMESTAMP
columns unite as TIMESTAMP (DuckDB's ``union_by_name``); a manifest whose DATE column's
range is no midnights is inconsistent; a stored DATE reads back as date32."""

from __future__ import annotations

import datetime as dt
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bamql.storage.arrownp import micros
from bamql.storage.columnplans import unify_schemas
from bamql.storage.format import ColumnMeta, _column_inconsistency
from bamql.storage.ingest import ingest
from bamql.storage.partitioned import open_table
from bamql.storage.sources import open_source
from bamql.storage.sqltypes import DAY_US


def _unify(tmp_path, *tables):
    srcs = []
    for i, t in enumerate(tables):
        pq.write_table(t, tmp_path / f"f{i}.parquet")
        srcs.append(open_source(tmp_path / f"f{i}.parquet"))
    return {n: (k, t) for n, k, t in unify_schemas(srcs)}


@pytest.mark.parametrize("a, b, want", [
    (pa.date32(), pa.date32(), pa.date32()),
    (pa.date32(), pa.timestamp("us"), pa.timestamp("us")),
    (pa.timestamp("ms"), pa.date32(), pa.timestamp("us")),
    (pa.null(), pa.date32(), pa.date32()),
])
def test_dates_unite_with_dates_and_timestamps(tmp_path, a, b, want):
    got = _unify(tmp_path, pa.table({"x": pa.nulls(1, a)}), pa.table({"x": pa.nulls(1, b)}))
    assert got["x"] == ("timestamp", want)


def test_a_date_and_a_string_do_not_unite(tmp_path):
    from bamql.errors import IngestError

    with pytest.raises(IngestError, match="schemas disagree"):
        _unify(tmp_path, pa.table({"x": pa.nulls(1, pa.date32())}), pa.table({"x": ["a"]}))


def test_micros_of_dates_are_their_midnights():
    days = pa.array([dt.date(1969, 12, 31), None, dt.date(2019, 1, 5)], pa.date32())
    assert micros(days).to_pylist() == [-DAY_US, None, 17901 * DAY_US]
    ms = pa.array([3 * 86_400_000 + 5, -2 * 86_400_000 + 1], pa.date64())  # truncated, as DuckDB
    assert micros(ms).to_pylist() == [3 * DAY_US, -DAY_US]


def test_a_stored_date_is_kind_timestamp_of_sql_type_date(tmp_path):
    vals = [dt.date(2019, 1, 5), None, dt.date(1900, 1, 1), dt.date(2100, 12, 31)]
    pq.write_table(pa.table({"d": pa.array(vals, pa.date32()), "x": [1, 2, 3, 4]}), tmp_path / "d.parquet")
    ingest([str(tmp_path / "d.parquet")], tmp_path / "t")
    cols = {c["name"]: c for c in json.loads((tmp_path / "t" / "manifest.json").read_text())["columns"]}
    assert (cols["d"]["kind"], cols["d"]["sql_type"]) == ("timestamp", "DATE")
    assert cols["d"]["min"] % DAY_US == 0 and cols["d"]["max"] % DAY_US == 0
    with open_table(tmp_path / "t") as t:
        got = t.parts[0].to_table(["d"])
    assert got.column("d").type == pa.date32() and got.column("d").to_pylist() == vals


def test_a_date_range_of_no_midnights_is_an_inconsistency():
    class M:  # the fields _column_inconsistency reads
        rows, page_size = 10, 4096

    def meta(lo, hi):
        return ColumnMeta("d", "timestamp", "int64", 0, 1, 512, min=lo, max=hi, sql_type="DATE")

    assert _column_inconsistency(M, meta(-DAY_US, 3 * DAY_US)) is None
    assert _column_inconsistency(M, meta(None, None)) is None
    assert "SQL type" in _column_inconsistency(M, meta(-DAY_US, 3 * DAY_US + 1))
    assert "SQL type" in _column_inconsistency(
        M, ColumnMeta("d", "int", "int64", 0, 1, 512, min=0, max=1, sql_type="DATE"))
