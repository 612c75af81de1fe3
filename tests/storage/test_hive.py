"""Hive partition keys in paths: their values, types (as DuckDB types them), detection and
the filters that prune files; each type checked against DuckDB over the same files."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bamql.errors import IngestError
from bamql.storage.files import FileSet
from bamql.storage.hive import Cmp, HiveMode, KeyFilter, KeyType, detect, path_values


def _layout(root, dirs: list[str]) -> None:
    for d in dirs:
        (root / d).mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"v": [1]}), root / d / "p.parquet")


def _duck_type(root) -> str:
    rows = duckdb.sql(f"DESCRIBE SELECT * FROM read_parquet('{root}/**/*.parquet', "
                      "hive_partitioning = true)").fetchall()
    return rows[-1][1]


def test_path_values_decode_and_null():
    assert path_values("/d/y=2019/m=a%20b/__HIVE_DEFAULT_PARTITION__/k=__HIVE_DEFAULT_PARTITION__"
                       "/f=1.parquet") == {"y": "2019", "m": "a b", "k": None}
    with pytest.raises(IngestError, match="appears twice"):
        path_values("/d/k=1/k=2/x.parquet")


@pytest.mark.parametrize("values", [["2019", "2020"], ["0", "-0", "-5"], ["03", "10"], ["1", "01"],
                                    ["x1", "10"], ["1.5", "2"], ["", "1"], ["nan"],
                                    ["9223372036854775808", "1"], ["-9223372036854775808"],
                                    ["__HIVE_DEFAULT_PARTITION__"],
                                    ["__HIVE_DEFAULT_PARTITION__", "7"]])
def test_types_are_duckdbs(tmp_path, values):
    _layout(tmp_path, [f"k={v}" for v in values])
    part = detect([str(p) for p in sorted(tmp_path.rglob("*.parquet"))], HiveMode.AUTO)
    assert part is not None and part.keys == ("k",)
    assert part.types[0].upper() == _duck_type(tmp_path)


@pytest.mark.parametrize("values", [["2019-01-01"], ["2019-01-01 10:00:00"], ["0x10"], [" 5"],
                                    ["-05"], ["+7", "1"], ["inf"]])
def test_values_duckdb_reads_otherwise_are_refused(tmp_path, values):
    _layout(tmp_path, [f"k={v}" for v in values])
    assert _duck_type(tmp_path) != "VARCHAR" or values == ["+7", "1"]
    with pytest.raises(IngestError, match="partition key 'k' has the value"):
        detect([str(p) for p in sorted(tmp_path.rglob("*.parquet"))], HiveMode.AUTO)


def test_detection_as_duckdb(tmp_path):
    # keys sorted by name; a key missing in some directories turns AUTO off, ON refuses
    _layout(tmp_path / "a", ["z=1/b=x"])
    part = detect([str(p) for p in (tmp_path / "a").rglob("*.parquet")], HiveMode.AUTO)
    assert part.keys == ("b", "z") and part.types == (KeyType.VARCHAR, KeyType.BIGINT)
    assert part.values == (("x", 1),)
    _layout(tmp_path / "m", ["y=1/m=2", "y=2"])
    paths = [str(p) for p in sorted((tmp_path / "m").rglob("*.parquet"))]
    assert detect(paths, HiveMode.AUTO) is None
    assert duckdb.sql(f"SELECT * FROM '{tmp_path}/m/**/*.parquet'").columns == ["v"]
    with pytest.raises(IngestError, match="hive partitions differ: key 'm'"):
        detect(paths, HiveMode.ON)
    with pytest.raises(duckdb.BinderException, match="mismatch"):
        duckdb.sql(f"SELECT * FROM read_parquet('{tmp_path}/m/**/*.parquet', "
                   "hive_partitioning = true)").fetchall()
    assert detect(paths, HiveMode.OFF) is None


def test_filters_keep_files_whose_values_can_pass():
    assert KeyFilter("k", Cmp.EQ, (3,)).passes(3) and not KeyFilter("k", Cmp.EQ, (3,)).passes(4)
    assert not KeyFilter("k", Cmp.NE, (3,)).passes(None)  # NULL compares to nothing
    assert KeyFilter("k", Cmp.IS_NULL).passes(None) and not KeyFilter("k", Cmp.NOT_NULL).passes(None)
    assert KeyFilter("k", Cmp.IN, ("a", None)).passes("a")
    assert not KeyFilter("k", Cmp.IN, ("a", None)).passes("b")
    assert KeyFilter("k", Cmp.LT, ("b",)).passes("a") and not KeyFilter("k", Cmp.GE, (5,)).passes(4)
    assert not KeyFilter("k", Cmp.EQ, (None,)).passes(1)
    # a literal of another type than the key's prunes nothing
    assert not KeyFilter("k", Cmp.EQ, ("3",)).matches_type(KeyType.BIGINT)
    assert not KeyFilter("k", Cmp.EQ, (3,)).matches_type(KeyType.VARCHAR)


def test_resolve_prunes_and_counts(tmp_path):
    _layout(tmp_path, [f"y={y}/m={m}" for y in (2019, 2020) for m in ("a", "b", "c")])
    all_ = FileSet.resolve([str(tmp_path)])
    assert len(all_.files) == 6 and all_.considered == 0 and all_.partitioning.keys == ("m", "y")
    some = FileSet.resolve([str(tmp_path)], filters=[KeyFilter("Y", Cmp.EQ, (2019,)),
                                                     KeyFilter("m", Cmp.IN, ("a", "c")),
                                                     KeyFilter("v", Cmp.EQ, (1,))])
    assert [f.parent.name for f in some.files] == ["m=a", "m=c"] and some.considered == 6
    assert all("y=2019" in str(f) for f in some.files)
    assert "2 of 6 Parquet files after partition pruning" in some.describe()
    assert some.names_key != all_.names_key
    none = FileSet.resolve([str(tmp_path)], filters=[KeyFilter("y", Cmp.GT, (2020,))])
    assert len(none.files) == 1 and none.considered == 6  # one file keeps the columns
    off = FileSet.resolve([str(tmp_path)], hive=HiveMode.OFF)
    assert off.partitioning is None and off.names_key != all_.names_key
