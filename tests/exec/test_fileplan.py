"""EXPLAIN over files not yet read in place (``exec.fileplan``): it reads their metadata
only, counts what the read would take as the read does, and EXPLAIN ANALYZE still runs."""

from __future__ import annotations

import re

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.orc as orc
import pyarrow.parquet as pq
import pytest

import bamql.storage.inplace as inplace
from bamql.errors import IngestError, PlanError
from bamql.storage.ingest import ingest
from tests.reference import assert_same_rows, session_rows


def _write(tmp_path, files: int = 3, rows: int = 1000, group: int = 100) -> str:
    rng = np.random.default_rng(3)
    for i in range(files):
        pq.write_table(pa.table({
            "id": pa.array(np.arange(i * rows, (i + 1) * rows), pa.int64()),
            "x": pa.array(np.where(rng.random(rows) < 0.1, np.nan, rng.normal(size=rows))),
            "s": pa.array([None if k % 7 == 0 else f"v{k % 4}" for k in range(rows)]),
        }), tmp_path / f"f{i}.parquet", row_group_size=group)
    return f"{tmp_path}/*.parquet"


def _kept(tmp_path, lo: int) -> tuple[int, int, int]:
    """(row groups, those whose id statistics reach ``lo``, their rows) per pyarrow."""
    total = kept = rows = 0
    for p in sorted(tmp_path.glob("*.parquet")):
        md = pq.ParquetFile(p).metadata
        for g in range(md.num_row_groups):
            total += 1
            st = md.row_group(g).column(0).statistics
            if st.max >= lo:
                kept += 1
                rows += md.row_group(g).num_rows
    return total, kept, rows


@pytest.fixture
def no_read(monkeypatch):
    """Any read of the files' data fails the test."""
    def boom(*a, **k):
        raise AssertionError("EXPLAIN read the files' data")

    # the session imports read_in_place where it reads files (at the call): this one
    monkeypatch.setattr(inplace, "read_in_place", boom)
    monkeypatch.setattr(inplace, "_read", boom)
    monkeypatch.setattr(inplace, "_read_parquet", boom)


def _store_dir(session):
    root = session.config.file_cache_dir / ".inplace"
    return list(root.iterdir()) if root.exists() else []


def test_explain_over_parquet_reads_metadata_only(session, tmp_path, no_read):
    glob = _write(tmp_path)
    sql = f"SELECT s, COUNT(*), SUM(x) FROM '{glob}' WHERE id >= 2450 AND s = 'v1' GROUP BY s"
    total, kept, rows = _kept(tmp_path, 2450)
    assert 0 < kept < total
    lines = session.explain(sql).splitlines()
    assert lines[0].startswith("files: 3 Parquet files")
    assert f"row groups {kept} of {total} kept by the pushed filter's statistics" in lines[1]
    assert f"holding {rows:,} of 3,000 rows" in lines[1]
    assert "columns id, x, s" in lines[1] and "pushed filter" in lines[1]
    assert lines[2] == (f"  logical: Project(s, COUNT(*), SUM(x)) <- Aggregate(1 keys, 2 aggs)"
                        f" <- Filter((id >= 2450 AND s = 'v1')) <- Scan('{glob}': id, s, x)")
    assert "EXPLAIN ANALYZE" in lines[3]
    res = session.sql("EXPLAIN " + sql)
    assert res.to_arrow().column_names == ["explain"]
    assert res.to_arrow().column("explain").to_pylist() == lines
    assert _store_dir(session) == []


def test_the_byte_counts_are_pyarrows_column_chunk_sizes(session, tmp_path, no_read):
    glob = _write(tmp_path, files=2)
    line = session.explain(f"SELECT SUM(x) FROM '{glob}' WHERE id < 150").splitlines()[1]
    want = all_ = 0
    for p in sorted(tmp_path.glob("*.parquet")):
        md = pq.ParquetFile(p).metadata
        for g in range(md.num_row_groups):
            size = sum(md.row_group(g).column(i).total_compressed_size for i in (0, 1))
            all_ += size
            want += size if md.row_group(g).column(0).statistics.min < 150 else 0
    assert f"{inplace._size(want)} of {inplace._size(all_)} column bytes" in line


def test_explain_over_orc_and_csv(session, tmp_path, no_read):
    t = pa.table({"id": pa.array(range(500), pa.int64()), "v": pa.array([1.5] * 500)})
    orc.write_table(t, tmp_path / "a.orc", stripe_size=4096)
    pacsv.write_csv(t, tmp_path / "a.csv")
    stripes = orc.ORCFile(tmp_path / "a.orc").nstripes
    o = session.explain(f"SELECT SUM(v) FROM '{tmp_path}/a.orc' WHERE id > 3").splitlines()
    assert o[0].startswith("files: 1 ORC file")
    assert f"all {stripes:,} stripes, rows 500" in o[1]
    assert o[2].endswith("<- Filter(id > 3) <- Scan('" + f"{tmp_path}/a.orc" + "': id, v)")
    c = session.explain(f"SELECT COUNT(*) FROM '{tmp_path}/a.csv' WHERE id > 3").splitlines()
    assert "all rows (CSV" in c[1]
    assert _store_dir(session) == []


def test_errors_stay_one_line(session, tmp_path, no_read):
    glob = _write(tmp_path, files=1)
    with pytest.raises(PlanError, match=re.escape(f"unknown column 'nope' in table '{glob}'")):
        session.explain(f"SELECT SUM(nope) FROM '{glob}'")
    with pytest.raises(IngestError, match="does not exist"):
        session.explain(f"SELECT COUNT(*) FROM '{tmp_path}/none.parquet'")


def test_a_pattern_test_shows_its_logical_line_after_the_read(session, tmp_path, no_read):
    glob = _write(tmp_path, files=1)
    lines = session.explain(f"SELECT COUNT(*) FROM '{glob}' WHERE s LIKE 'v%'").splitlines()
    assert "a string pattern test" in lines[2]


def test_analyze_runs_and_a_read_query_shows_its_store_plan(session, tmp_path):
    glob = _write(tmp_path)
    sql = f"SELECT s, COUNT(*), SUM(x) FROM '{glob}' WHERE id >= 2450 GROUP BY s"
    before = session.explain(sql)
    assert "would read in place" in before and _store_dir(session) == []
    res = session.sql("EXPLAIN ANALYZE " + sql)
    text = "\n".join(res.to_arrow().column("explain").to_pylist())
    assert "read in place: row groups" in text and "stage 1:" in text and "Analyze:" in text
    assert len(_store_dir(session)) == 1
    # read now: the plain EXPLAIN shows the store's plan (it costs nothing)
    assert "stage 1:" in session.explain(sql)
    assert_same_rows(session_rows(session, sql), duckdb.sql(sql).fetchall(), ordered=False)


def test_explain_over_a_stored_table_is_unchanged(session, tmp_path):
    pq.write_table(pa.table({"id": pa.array(range(100), pa.int64())}), tmp_path / "t.parquet")
    ingest([tmp_path / "t.parquet"], tmp_path / "tables" / "t")
    from bamql.api.session import Session

    with Session(tmp_path / "tables", device="cpu") as s:
        assert "stage 1:" in s.explain("SELECT COUNT(*) FROM t WHERE id > 5")
