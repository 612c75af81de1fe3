"""``refresh``: a table records the sources it was made from and appends the files they
name later; its answers equal DuckDB's over all the files, and a refresh that cannot be
right (a file changed or vanished, a table from before the record) is a one-line error
that leaves the table as it was."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

import bamql
from bamql.errors import IngestError, StoreError
from bamql.storage.format import MANIFEST, Manifest, digest
from bamql.storage.ingest import append, ingest, refresh
from bamql.storage.partitioned import open_table
from tests.conftest import SAMPLES
from tests.reference import assert_same_rows, duck_tables

CHECK = ("SELECT COUNT(*), SUM(total_amount), AVG(trip_distance), MIN(pickup_datetime), "
         "COUNT(DISTINCT store_and_fwd_flag), SUM(passenger_count), COUNT(congestion_surcharge) "
         "FROM t")


@pytest.fixture(scope="module")
def months(tmp_path_factory) -> list[pa.Table]:
    """The real TLC sample as three "months" of rows: January, February's first half and
    its second half (with NULLs in congestion_surcharge, as the sample has)."""
    del tmp_path_factory
    jan, feb = (pacsv.read_csv(f) for f in SAMPLES)
    return [jan, feb.slice(0, 5000), feb.slice(5000)]


def _stored(path: Path) -> pa.Table:
    with open_table(path) as t:
        return pa.concat_tables([p.to_table() for p in t.parts])


def _same_as_duckdb(table: Path, files_sql: str) -> None:
    """The stored rows answer CHECK as DuckDB does over the files (``files_sql``, a FROM)."""
    ours = duck_tables(CHECK, {"t": _stored(table)})
    ref = duckdb.sql(CHECK.replace("FROM t", f"FROM {files_sql}")).fetchall()
    assert_same_rows(ours, ref, ordered=True)


def _manifest_bytes(table: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(table.rglob(MANIFEST)))


def test_refresh_adds_a_new_month_through_a_glob(months, tmp_path):
    src = tmp_path / "trips"
    src.mkdir()
    pq.write_table(months[0], src / "2019-01.parquet")
    pq.write_table(months[1], src / "2019-02.parquet")
    out = tmp_path / "data" / "trips"
    ingest([f"{src}/*.parquet"], out, page_size=512, partitions=2, floats="plain")
    with open_table(out) as t:
        origin = t.parts[0].manifest.origin
    assert origin.specs == (f"{src}/*.parquet",) and len(origin.files) == 2
    assert origin.floats == "plain"

    same = _manifest_bytes(out)
    r = refresh(out)  # nothing new: the table is not touched
    assert (r.added, r.unchanged, r.rows) == ((), 2, 15000)
    assert r.describe() == f"{out} is up to date: 2 files unchanged"
    assert _manifest_bytes(out) == same

    pq.write_table(months[2], src / "2019-03.parquet")
    r = refresh(out)
    assert r.added == (str(src / "2019-03.parquet"),) and r.added_rows == 5000
    assert r.describe().startswith("added 1 file, 5,000 rows; 2 files unchanged")
    _same_as_duckdb(out, f"'{src}/*.parquet'")
    with open_table(out) as t:  # the table's own settings are kept
        m = t.parts[0].manifest
        assert len(t.parts) == 2 and m.page_size == 512 and m.origin.floats == "plain"
        assert all(c.scale == 0 for c in m.columns)  # floats stay plain, as made
        assert len(m.origin.files) == 3
    q = ("SELECT pickup_location_id, COUNT(*), SUM(fare_amount) FROM trips "
         "WHERE passenger_count > 1 GROUP BY pickup_location_id ORDER BY pickup_location_id")
    with bamql.connect(tmp_path / "data", device="cpu") as con:
        ours = [tuple(r.values()) for r in con.sql(q).to_arrow().to_pylist()]
    ref = duckdb.sql(q.replace("FROM trips", f"FROM '{src}/*.parquet'")).fetchall()
    assert_same_rows(ours, ref, ordered=True)
    assert refresh(out).added == ()


def test_refresh_of_a_directory_keeps_hive_partition_columns(months, tmp_path):
    src = tmp_path / "trips"
    for k, t in enumerate(months[:2]):
        (src / f"month={k + 1}").mkdir(parents=True)
        pq.write_table(t, src / f"month={k + 1}" / "part-0.parquet")
    out = tmp_path / "t"
    ingest([src], out)
    assert "month" in _stored(out).column_names
    (src / "month=3").mkdir()
    pq.write_table(months[2], src / "month=3" / "part-0.parquet")
    (src / "month=3" / "_SUCCESS").write_text("")  # a marker, not a data file
    r = refresh(out)
    assert r.added == (str(src / "month=3" / "part-0.parquet"),) and r.unchanged == 2
    by_month = "SELECT month, COUNT(*), SUM(total_amount) FROM t GROUP BY month ORDER BY month"
    ours = duck_tables(by_month, {"t": _stored(out)})
    ref = duckdb.sql(by_month.replace(
        "FROM t", f"FROM read_parquet('{src}/**/*.parquet', hive_partitioning=true)")).fetchall()
    assert_same_rows(ours, ref, ordered=True)
    assert [m for m, *_ in ours] == [1, 2, 3]


@pytest.mark.parametrize("how", ["rewritten", "vanished"])
def test_a_changed_or_vanished_file_is_an_error_and_the_table_stays(months, tmp_path, how):
    src = tmp_path / "src"
    src.mkdir()
    pq.write_table(months[0], src / "a.parquet")
    pq.write_table(months[1], src / "b.parquet")
    out = tmp_path / "t"
    ingest([src], out)
    pq.write_table(months[2], src / "c.parquet")  # new, but refused with the rest
    same, rows = _manifest_bytes(out), _stored(out)
    if how == "vanished":
        os.remove(src / "a.parquet")
        text = "a.parquet, ingested into .* has vanished"
    else:
        pq.write_table(months[0].slice(0, 10), src / "a.parquet")
        text = "a.parquet, ingested into .* has changed"
    with pytest.raises(IngestError, match=text + ".*re-ingest") as e:
        refresh(out)
    assert "\n" not in str(e.value)
    assert _manifest_bytes(out) == same and _stored(out).equals(rows)


def test_a_file_touched_with_the_same_size_is_changed(months, tmp_path):
    pq.write_table(months[0], tmp_path / "a.parquet")
    ingest([tmp_path / "a.parquet"], tmp_path / "t")
    st = os.stat(tmp_path / "a.parquet")
    os.utime(tmp_path / "a.parquet", ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    with pytest.raises(IngestError, match="has changed .modified since"):
        refresh(tmp_path / "t")


def test_a_table_without_a_record_of_its_sources_is_refused(months, tmp_path):
    pq.write_table(months[0], tmp_path / "a.parquet")
    out = tmp_path / "t"
    ingest([tmp_path / "a.parquet"], out)
    # as a store made before the record: the manifest without the field, sealed again
    doc = json.loads((out / MANIFEST).read_text())
    del doc["origin"]
    doc["sha256"] = digest(doc)
    (out / MANIFEST).write_text(json.dumps(doc, indent=1))
    assert Manifest.load(out).origin is None  # such a store still opens
    with pytest.raises(IngestError, match="does not record the files .* --append") as e:
        refresh(out)
    assert "\n" not in str(e.value)
    from bamql.storage.sources import TableSource

    ingest([TableSource(months[1], "rows")], tmp_path / "mem")  # rows from memory: no record
    assert "origin" not in (tmp_path / "mem" / MANIFEST).read_text()
    with pytest.raises(IngestError, match="does not record"):
        refresh(tmp_path / "mem")
    with pytest.raises(IngestError, match="is not a bamql table"):
        refresh(tmp_path / "nothing")


def test_a_malformed_record_is_refused_at_open(months, tmp_path):
    pq.write_table(months[0], tmp_path / "a.parquet")
    out = tmp_path / "t"
    ingest([tmp_path / "a.parquet"], out)
    doc = json.loads((out / MANIFEST).read_text())
    doc["origin"]["sizes"] = ["big"]
    doc["sha256"] = digest(doc)
    (out / MANIFEST).write_text(json.dumps(doc, indent=1))
    with pytest.raises(StoreError, match="record of its source files is malformed"):
        Manifest.load(out)


def test_append_records_its_files_for_a_later_refresh(months, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    pq.write_table(months[0], a / "1.parquet")
    pq.write_table(months[1], b / "2.parquet")
    out = tmp_path / "t"
    ingest([a], out)
    append([f"{b}/*.parquet"], out)
    pq.write_table(months[2], b / "3.parquet")  # named by the appended glob
    r = refresh(out)
    assert r.added == (str(b / "3.parquet"),) and r.unchanged == 2
    _same_as_duckdb(out, f"read_parquet(['{a}/*.parquet', '{b}/*.parquet'])")
    shutil.rmtree(a)
    with pytest.raises(IngestError, match="1.parquet, ingested into .* has vanished"):
        refresh(out)


def test_refresh_keeps_clustering_row_groups_and_compressed_copies(months, tmp_path):
    pq.write_table(months[1], tmp_path / "a.parquet")
    out = tmp_path / "t"
    ingest([f"{tmp_path}/*.parquet"], out, cluster_by="pickup_location_id",
           groups="fare_amount,tip_amount", floats="plain", compress="zstd", volumes=2)
    assert Manifest.load(out).groups
    pq.write_table(months[2], tmp_path / "b.parquet")
    assert refresh(out).added_rows == 5000
    m = Manifest.load(out)
    assert m.cluster_by == ("pickup_location_id",) and m.groups and m.streams is not None
    assert m.n_volumes == 2
    keys = _stored(out).column("pickup_location_id").to_pylist()
    assert keys == sorted(keys)  # old and new rows sorted together
    _same_as_duckdb(out, f"'{tmp_path}/*.parquet'")


def test_a_table_made_with_floats_decimals_opens_and_refreshes(months, tmp_path):
    # floats="decimals" from named files: the record of its sources keeps the name, the
    # store opens, and a refresh keeps DECIMAL columns exact and doubles as they come
    def month(t: pa.Table) -> pa.Table:  # fare_amount as a DECIMAL, the other floats doubles
        i = t.schema.get_field_index("fare_amount")
        return t.set_column(i, "fare_amount", t["fare_amount"].cast(pa.decimal128(10, 2)))

    pq.write_table(month(months[1]), tmp_path / "a.parquet")
    out = tmp_path / "t"
    ingest([f"{tmp_path}/*.parquet"], out, floats="decimals")
    assert json.loads((out / MANIFEST).read_text())["origin"]["floats"] == "decimals"
    pq.write_table(month(months[2]), tmp_path / "b.parquet")
    assert refresh(out).added_rows == 5000
    m = Manifest.load(out)
    assert m.origin.floats == "decimals" and len(m.origin.files) == 2
    assert m.column("fare_amount").sql_type == "DECIMAL(10,2)"  # exactly, its integers
    assert m.column("trip_distance").scale == 0
    _same_as_duckdb(out, f"'{tmp_path}/*.parquet'")
    want = duckdb.sql(f"SELECT fare_amount FROM '{tmp_path}/*.parquet' "
                      "ORDER BY filename, file_row_number").fetchall()
    assert _stored(out)["fare_amount"].to_pylist() == [r[0] for r in want]
