"""Ingest's inputs (directories, globs, file URIs) and ``append``: the whole table equals
DuckDB over all its files, and a failed append leaves the old table answering."""

from __future__ import annotations

import importlib
import os
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from bamql.errors import IngestError
from bamql.storage.files import expand
from bamql.storage.ingest import append, ingest
from bamql.storage.partitioned import open_table
from tests.conftest import SAMPLES
from tests.reference import assert_same_rows, duck_tables

ingest_mod = importlib.import_module("bamql.storage.ingest")

CHECK = ("SELECT COUNT(*), SUM(total_amount), AVG(trip_distance), MIN(pickup_datetime), "
         "COUNT(DISTINCT store_and_fwd_flag), SUM(passenger_count) FROM t")


@pytest.fixture(scope="module")
def parts(tmp_path_factory) -> Path:
    """Three Parquet files of 700 rows of the TLC sample each (the last with a flag value
    the others lack), and one CSV of the same columns."""
    d = tmp_path_factory.mktemp("parts")
    t = pacsv.read_csv(SAMPLES[1]).slice(0, 2100)
    for k in range(3):
        pq.write_table(t.slice(700 * k, 700), d / f"p{k}.parquet")
    flags = t.column("store_and_fwd_flag").to_pylist()
    flags[2099] = "Z"  # a new dictionary value arrives with an appended file
    t2 = t.set_column(t.schema.get_field_index("store_and_fwd_flag"), "store_and_fwd_flag",
                      pa.array(flags))
    pq.write_table(t2.slice(1400), d / "p2.parquet")
    pacsv.write_csv(t.slice(0, 300), d / "c.csv")
    return d


def _table(path: Path) -> pa.Table:
    with open_table(path) as t:
        return pa.concat_tables([p.to_table() for p in t.parts])


def _check(path: Path, files: list[Path]) -> None:
    """The stored rows answer CHECK as DuckDB does over ``files`` read by pyarrow."""
    ref = pa.concat_tables([pq.read_table(f) if f.suffix == ".parquet" else pacsv.read_csv(f)
                            for f in files], promote_options="permissive")
    ours = duck_tables(CHECK, {"t": _table(path)})
    assert_same_rows(ours, duck_tables(CHECK, {"t": ref}), ordered=True)


def test_directories_globs_and_file_uris_expand_in_order(parts, tmp_path):
    (parts / "_SUCCESS").write_text("")
    by_glob = [p.name for p in expand(f"{parts}/p?.parquet")]
    assert by_glob == ["p0.parquet", "p1.parquet", "p2.parquet"]
    assert [p.name for p in expand(str(parts))] == ["c.csv", *by_glob]
    assert [p.fs_path for p in expand(f"file://{parts}/p1.parquet")] == [str(parts / "p1.parquet")]
    r = ingest([f"{parts}/p*.parquet"], tmp_path / "t")
    assert r.rows == 2100
    _check(tmp_path / "t", [parts / n for n in by_glob])


@pytest.mark.parametrize("spec, text", [
    ("{d}/nothing*.parquet", "no files match"),
    ("{d}/absent.parquet", "does not exist"),
    ("ftp://host/x.parquet", "ftp:// is not supported"),
    ("https://host/x.parquet", "https:// is not supported"),
])
def test_inputs_that_name_nothing_are_one_line_errors(parts, tmp_path, spec, text):
    with pytest.raises(IngestError, match=text) as e:
        ingest([spec.format(d=parts)], tmp_path / "t")
    assert "\n" not in str(e.value) and not (tmp_path / "t").exists()


def test_append_adds_files_and_new_dictionary_values(parts, tmp_path):
    out = tmp_path / "t"
    ingest([parts / "p0.parquet"], out, partitions=2)
    r = append([f"{parts}/p[12].parquet"], out)
    assert r.rows == 2100
    files = [parts / f"p{k}.parquet" for k in range(3)]
    _check(out, files)
    with open_table(out) as t:
        assert t.partitioned and len(t.parts) == 2  # the table's own settings are kept
        assert "Z" in t.columns["store_and_fwd_flag"].dictionary
        assert t.parts[0].manifest.sources == ("p0.parquet", "p1.parquet", "p2.parquet")
    append([parts / "c.csv"], out)  # CSV onto Parquet: one schema by kinds
    _check(out, [*files, parts / "c.csv"])
    assert not [p for p in tmp_path.iterdir() if ".ingest-" in p.name]


def test_append_of_a_file_that_does_not_fit_leaves_the_table(parts, tmp_path):
    out = tmp_path / "t"
    ingest([parts / "p0.parquet"], out)
    before = _table(out)
    pq.write_table(pa.table({"vendor_id": [1]}), tmp_path / "narrow.parquet")
    row = before.slice(0, 1)
    typed = row.set_column(row.schema.get_field_index("trip_distance"), "trip_distance",
                           pa.array(["x"]))
    pq.write_table(typed, tmp_path / "typed.parquet")
    with pytest.raises(IngestError, match="narrow.parquet has no column 'pickup_datetime'"):
        append([tmp_path / "narrow.parquet"], out)
    with pytest.raises(IngestError, match="column 'trip_distance' is double in t .stored. but "
                       "string in typed.parquet"):
        append([tmp_path / "typed.parquet"], out)
    with pytest.raises(IngestError, match="is not a bamql table"):
        append([parts / "p1.parquet"], tmp_path / "nothing")
    assert _table(out).equals(before)


@pytest.mark.parametrize("where", ["write", "finish"])
def test_a_failed_append_leaves_the_old_table_answering(parts, tmp_path, monkeypatch, where):
    out = tmp_path / "t"
    ingest([parts / "p0.parquet"], out)
    before = _table(out)
    inode = out.stat().st_ino
    # "write": the new pages are on disk, its manifest not yet; "finish": the new table is
    # whole, the swap not done
    target = "_finish_store" if where == "write" else "exchange"

    def boom(*args, **kwargs):
        raise KeyboardInterrupt  # as a Ctrl-C or a SIGTERM arrives

    monkeypatch.setattr(ingest_mod, target, boom)
    with pytest.raises(KeyboardInterrupt):
        append([parts / "p1.parquet"], out)
    monkeypatch.undo()
    assert out.stat().st_ino == inode and _table(out).equals(before)
    assert not [p for p in tmp_path.iterdir() if ".ingest-" in p.name]
    append([parts / "p1.parquet"], out)  # and the next append works
    _check(out, [parts / "p0.parquet", parts / "p1.parquet"])


def test_a_reader_open_during_an_append_keeps_its_table(parts, tmp_path):
    out = tmp_path / "t"
    ingest([parts / "p0.parquet"], out)
    with open_table(out) as old:
        append([parts / "p1.parquet"], out)
        assert old.rows == 700 and old.parts[0].to_table().num_rows == 700
    with open_table(out) as new:
        assert new.rows == 1400


def test_a_zero_row_parquet_file_ingests_as_an_empty_table(parts, tmp_path):
    pq.write_table(pq.read_table(parts / "p0.parquet").slice(0, 0), tmp_path / "e.parquet")
    ingest([tmp_path / "e.parquet"], tmp_path / "t")
    assert _table(tmp_path / "t").num_rows == 0
    assert duckdb.sql(f"SELECT COUNT(*) FROM '{tmp_path}/e.parquet'").fetchall() == [(0,)]
    append([parts / "p0.parquet"], tmp_path / "t")
    _check(tmp_path / "t", [parts / "p0.parquet"])
    assert os.listdir(tmp_path / "t")
