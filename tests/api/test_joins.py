"""Joins of the trips with dimension tables (the zone lookup, registered tables), against
DuckDB on the same rows: generated trips with location ids outside the zones and NULL,
partitioned and not, the real TLC sample, and the GPU engine in numba's CUDA simulator."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path as _Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import bamql
from bamql.api.zones import zones_table
from bamql.datasets.generator import GenParams, generate_chunk
from bamql.errors import PlanError, UsageError
from bamql.storage.ingest import ingest
from tests.reference import assert_same_rows, duck_tables

ZONES_CSV = _Path(bamql.__file__).parent / "datasets" / "taxi_zone_lookup.csv"
SAMPLE_CSV = _Path(__file__).resolve().parents[1] / "data" / "tlc-sample" / \
    "yellow_tripdata_sample_2019-01.csv"

QUERIES = [
    # a condition mixing a zone's string with the trip's columns: the plan tree's join
    "SELECT COUNT(*) FROM trips t JOIN zones z ON t.pickup_location_id = z.LocationID "
    "WHERE z.Borough = 'Queens' OR t.fare_amount > 5",
    # the three of issue 24
    "SELECT z.Borough, COUNT(*) AS trips, AVG(t.fare_amount) FROM trips t JOIN zones z "
    "ON t.pickup_location_id = z.LocationID GROUP BY z.Borough ORDER BY z.Borough",
    "SELECT COUNT(*), SUM(t.total_amount) FROM trips t JOIN zones z "
    "ON t.pickup_location_id = z.LocationID WHERE z.Zone LIKE 'Williamsburg%'",
    "SELECT pu.Borough, dz.Borough, COUNT(*) FROM trips t JOIN zones pu "
    "ON t.pickup_location_id = pu.LocationID LEFT JOIN zones dz "
    "ON t.dropoff_location_id = dz.LocationID GROUP BY 1, 2 ORDER BY 1, 2",
    # inner joins drop unmatched and NULL keys; left joins keep them as NULL groups
    "SELECT COUNT(*) FROM trips t JOIN zones z ON t.pickup_location_id = z.LocationID",
    "SELECT COUNT(*), SUM(fare_amount) FROM trips t LEFT JOIN zones z ON t.pickup_location_id = z.LocationID",
    "SELECT z.Borough, COUNT(*), MIN(t.fare_amount), MAX(t.trip_distance) FROM trips t LEFT JOIN zones z "
    "ON t.pickup_location_id = z.LocationID GROUP BY 1 ORDER BY 1",
    "SELECT COUNT(*) FROM trips t LEFT JOIN zones z ON t.pickup_location_id = z.LocationID "
    "WHERE z.Borough IS NULL",
    "SELECT COUNT(*) FROM trips t LEFT JOIN zones z ON t.pickup_location_id = z.LocationID "
    "WHERE z.Borough IS NOT NULL",
    "SELECT COUNT(*) FROM trips t LEFT JOIN zones z ON t.pickup_location_id = z.LocationID "
    "WHERE z.Borough <> 'Manhattan'",
    "SELECT COUNT(*) FROM trips t LEFT JOIN zones z ON t.pickup_location_id = z.LocationID "
    "WHERE NOT (z.Borough = 'Manhattan') OR z.Borough IS NULL",
    "SELECT z.service_zone, COUNT(*) FROM trips t LEFT JOIN zones z ON t.pickup_location_id = z.LocationID "
    "WHERE z.Borough IS NULL OR z.Borough IN ('Queens', 'Bronx') GROUP BY 1 ORDER BY 1",
    # dimension conditions: =, IN, LIKE, NOT LIKE, ILIKE, AND/OR/NOT, ranges, empty key sets
    "SELECT COUNT(*), AVG(tip_amount) FROM trips t JOIN zones z ON t.pickup_location_id = z.LocationID "
    "WHERE z.Borough = 'Brooklyn'",
    "SELECT COUNT(*) FROM trips t JOIN zones z ON t.pickup_location_id = z.LocationID "
    "WHERE z.Borough IN ('Queens', 'Bronx') AND t.fare_amount > 10",
    "SELECT COUNT(*) FROM trips t JOIN zones z ON t.pickup_location_id = z.LocationID "
    "WHERE z.Zone NOT LIKE '%a%' AND NOT z.Borough = 'EWR'",
    "SELECT COUNT(*) FROM trips t JOIN zones z ON t.pickup_location_id = z.LocationID "
    "WHERE z.zone ILIKE 'WILLIAMSBURG%' OR z.LocationID < 5",
    "SELECT COUNT(*) FROM trips t JOIN zones z ON t.pickup_location_id = z.LocationID "
    "WHERE z.Zone LIKE 'No such zone%'",
    "SELECT COUNT(*), SUM(fare_amount) FROM trips t LEFT JOIN zones z ON t.pickup_location_id = z.LocationID "
    "WHERE z.Zone LIKE 'No such zone%'",
    "SELECT COUNT(*) FROM trips t JOIN zones z ON t.pickup_location_id = z.LocationID "
    "WHERE z.LocationID BETWEEN 100 AND 120 AND z.Zone LIKE '_a%'",
    "SELECT z.Zone, COUNT(*) FROM trips t JOIN zones z ON z.LocationID = t.pickup_location_id "
    "WHERE z.Borough = 'Staten Island' GROUP BY z.Zone ORDER BY 2 DESC, 1 LIMIT 3",
    # group by a dimension column and a fact column; HAVING; the same dimension twice
    "SELECT z.Borough, t.vendor_id, COUNT(*), SUM(t.passenger_count) FROM trips t JOIN zones z "
    "ON t.pickup_location_id = z.LocationID GROUP BY 1, 2 HAVING COUNT(*) > 3 ORDER BY 1, 2",
    "SELECT t.payment_type, dz.Borough, AVG(t.total_amount) FROM trips t JOIN zones pu "
    "ON t.pickup_location_id = pu.LocationID JOIN zones dz ON t.dropoff_location_id = dz.LocationID "
    "WHERE pu.Zone LIKE 'Williamsburg%' AND dz.Borough <> 'Manhattan' GROUP BY 1, 2 ORDER BY 1, 2",
    "SELECT z.LocationID, COUNT(*) FROM trips t JOIN zones z ON t.pickup_location_id = z.LocationID "
    "WHERE z.Borough = 'EWR' OR z.Borough = 'Unknown' GROUP BY 1 ORDER BY 1",
    "SELECT Borough, COUNT(*) FROM trips JOIN zones ON pickup_location_id = LocationID "
    "GROUP BY Borough ORDER BY COUNT(*) DESC, Borough",
]


def _trips(rows: int, seed: int) -> pa.Table:
    """Generated trips whose location ids include 0, 300, -4 and NULL (no zone row)."""
    t = generate_chunk(GenParams(rows=rows, seed=seed, williamsburg_share=0.02), 0)
    rng = np.random.default_rng(seed)
    for name in ("pickup_location_id", "dropoff_location_id"):
        v = t[name].to_numpy().copy()
        odd = rng.random(rows) < 0.05
        v[odd] = rng.choice([0, 300, -4], int(odd.sum()))
        arr = pa.array(v, pa.int64(), mask=rng.random(rows) < 0.03)
        t = t.set_column(t.column_names.index(name), name, arr)
    return t


@pytest.fixture(scope="module")
def joined(tmp_path_factory):
    d = tmp_path_factory.mktemp("joins")
    t = _trips(6000, 3)
    pq.write_table(t, d / "t.parquet", row_group_size=2000)
    ingest([d / "t.parquet"], d / "one" / "trips", page_size=512)
    ingest([d / "t.parquet"], d / "three" / "trips", page_size=512, partitions=3)
    return d, t


@pytest.mark.parametrize("layout", ["one", "three"])
@pytest.mark.parametrize("sql", QUERIES)
def test_joins_match_duckdb_with_unmatched_and_null_keys(joined, layout, sql):
    d, t = joined
    with bamql.connect(d / layout, device="cpu") as con:
        ours = con.sql(sql).rows()
    ref = duck_tables(sql, {"trips": t, "zones": zones_table()})
    assert_same_rows(ours, ref, ordered="ORDER BY" in sql)


@pytest.fixture(scope="module")
def sample_reference() -> pa.Table:
    from tests.conftest import SAMPLES
    from tests.sql.corpus import read_back

    return read_back(SAMPLES)


@pytest.mark.parametrize("sql", QUERIES)
def test_joins_match_duckdb_on_the_real_sample(sample_store, sample_reference, sql):
    with bamql.connect(sample_store, device="cpu") as con:
        ours = con.sql(sql).rows()
    ref = duck_tables(sql, {"trips": sample_reference, "zones": zones_table()})
    assert ours, sql
    assert_same_rows(ours, ref, ordered="ORDER BY" in sql)


def test_a_dimension_predicate_prunes_pages_as_an_in_list(joined):
    d, _ = joined
    sql = ("SELECT COUNT(*) FROM trips t JOIN zones z ON t.pickup_location_id = z.LocationID "
           "WHERE z.Zone LIKE 'Williamsburg%'")
    with bamql.connect(d / "one", device="cpu") as con:
        text = con.explain(sql)
        assert "Zone LIKE 'Williamsburg%' -> pickup_location_id IN (255, 256)" in text
        joined_stats = con.sql(sql).stats
        plain = con.sql("SELECT COUNT(*) FROM trips WHERE pickup_location_id IN (255, 256)")
    assert joined_stats.bytes_read == plain.stats.bytes_read


def test_register_pandas_and_arrow_tables(joined):
    pd = pytest.importorskip("pandas")
    d, t = joined
    vendors = pd.DataFrame({"id": [1, 2, 7], "name": ["Creative", "VeriFone", None]})
    rates = pa.table({"code": pa.array([1, 2, 3, 4, 5, 6], pa.int32()),
                      "label": ["std", "JFK", "Newark", "Nassau", "nego", "group"]})
    sql = ("SELECT v.name, r.label, COUNT(*), AVG(t.fare_amount) FROM trips t "
           "LEFT JOIN vendors v ON t.vendor_id = v.id JOIN rates r ON t.rate_code_id = r.code "
           "WHERE r.label <> 'group' GROUP BY 1, 2 ORDER BY 1, 2")
    with bamql.connect(d / "one", device="cpu") as con:
        con.register("vendors", vendors)
        con.register("rates", rates)
        ours = con.sql(sql).rows()
    ref = duck_tables(sql, {"trips": t, "vendors": pa.table(vendors), "rates": rates})
    assert_same_rows(ours, ref, ordered=True)


def test_register_replaces_a_table_and_forgets_parsed_joins(joined):
    d, t = joined
    sql = "SELECT COUNT(*) FROM trips t JOIN zones z ON t.pickup_location_id = z.LocationID"
    with bamql.connect(d / "one", device="cpu") as con:
        before = con.sql(sql).rows()
        con.register("zones", zones_table().slice(0, 10))
        after = con.sql(sql).rows()
    assert before == duck_tables(sql, {"trips": t, "zones": zones_table()})
    assert after == duck_tables(sql, {"trips": t, "zones": zones_table().slice(0, 10)})
    assert after != before


def test_a_stored_table_named_zones_wins(tmp_path, joined):
    d, t = joined
    ingest([d / "t.parquet"], tmp_path / "zones", page_size=512)
    with bamql.connect(tmp_path, device="cpu") as con:
        assert "zones" not in con.dimensions
        n = con.sql("SELECT COUNT(*) FROM zones").rows()[0][0]
        assert n == t.num_rows
        with pytest.raises(UsageError, match="stored table"):
            con.register("zones", zones_table())


@pytest.mark.parametrize("sql, text", [
    ("SELECT COUNT(*) FROM trips t, zones z", "needs ON"),
    ("SELECT COUNT(*) FROM trips t JOIN zones z ON t.pickup_location_id = z.Zone", "integer key"),
    ("SELECT COUNT(*) FROM trips t JOIN zones z USING (LocationID)", "USING"),
    ("SELECT z.Borough, COUNT(*) FROM trips t JOIN zones z ON t.pickup_location_id = z.LocationID",
     "must appear in GROUP BY"),
    ("SELECT COUNT(*) FROM trips t JOIN zones z ON t.pickup_location_id = z.LocationID "
     "JOIN zones z ON t.dropoff_location_id = z.LocationID", "used twice"),
    ("SELECT COUNT(*) FROM trips t JOIN nothing n ON t.pickup_location_id = n.id", "unknown dimension"),
    ("SELECT COUNT(*) FROM trips t JOIN zones z ON t.pickup_location_id = z.LocationID "
     "WHERE z.Nope = 1", "unknown column 'Nope'"),
    ("SELECT COUNT(*) FROM trips t JOIN zones a ON t.pickup_location_id = a.LocationID "
     "JOIN zones b ON t.dropoff_location_id = b.LocationID WHERE Borough = 'Queens'", "ambiguous"),
])
def test_unsupported_joins_fail_with_one_line(joined, sql, text):
    d, _ = joined
    with bamql.connect(d / "one", device="cpu") as con, pytest.raises(PlanError) as e:
        con.sql(sql)
    assert text in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("sql", [
    "SELECT COUNT(*) FROM trips t JOIN zones z ON t.pickup_location_id < z.LocationID",
    "SELECT COUNT(*) FROM trips t JOIN zones z ON t.pickup_location_id = z.LocationID "
    "OR t.dropoff_location_id = z.LocationID",
    "SELECT z.Borough, COUNT(*) FROM trips t LEFT JOIN zones z ON t.fare_amount = z.LocationID "
    "GROUP BY 1 ORDER BY 1 NULLS FIRST",
])
def test_joins_the_kernels_do_not_take_run_in_the_plan_tree(joined, sql):
    """ON other than one equality of a fact column and a unique integer key, or on a DOUBLE
    key: the plan tree's join, as DuckDB."""
    d, t = joined
    with bamql.connect(d / "one", device="cpu") as con:
        assert "HashJoin" in "\n".join(str(r[-1]) for r in con.sql("EXPLAIN " + sql).rows())
        ours = con.sql(sql).rows()
    assert_same_rows(ours, duck_tables(sql, {"trips": t, "zones": zones_table()}),
                     "ORDER BY" in sql)


def test_a_key_that_is_not_unique_joins_through_the_plan_tree(joined):
    """The fused join takes unique keys only; a duplicated key joins through the plan
    tree's hash join, every match a row, as DuckDB."""
    d, _ = joined
    with bamql.connect(d / "one", device="cpu") as con:
        dup = pa.table({"k": [1, 2, 2], "name": ["a", "b", "c"]})
        con.register("dup", dup)
        sql = "SELECT d.name, COUNT(*) FROM trips t JOIN dup d ON t.vendor_id = d.k GROUP BY 1"
        trips = con.sql("SELECT vendor_id FROM trips").table
        assert_same_rows(con.sql(sql).rows(), duck_tables(sql, {"trips": trips, "dup": dup}), False)
        with pytest.raises(UsageError, match="identifier"):
            con.register("no name", pa.table({"k": [1]}))
        with pytest.raises(UsageError, match="cannot register"):
            con.register("bad", 42)


SIM_SCRIPT = textwrap.dedent("""
    import sys, tempfile
    from pathlib import Path
    import bamql
    from bamql.api.zones import zones_table
    from bamql.storage.ingest import ingest
    import pyarrow.parquet as pq
    from tests.api.test_joins import QUERIES, _trips
    from tests.reference import assert_same_rows, duck_tables

    d = Path(tempfile.mkdtemp())
    t = _trips(1500, 5)
    pq.write_table(t, d / "t.parquet")
    ingest([d / "t.parquet"], d / "data" / "trips", page_size=512)
    with bamql.connect(d / "data", device="gpu", backend="host", cache="64KiB") as con:
        assert "simulator" in con.note
        for sql in (QUERIES[0], QUERIES[1], QUERIES[2]):
            ref = duck_tables(sql, {"trips": t, "zones": zones_table()})
            assert_same_rows(con.sql(sql).rows(), ref, ordered="ORDER BY" in sql)
    print("gpu-sim joins ok")
""")


def test_joins_on_the_gpu_engine_in_the_simulator():
    pytest.importorskip("numba.cuda")
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    r = subprocess.run([sys.executable, "-c", SIM_SCRIPT], env=env, capture_output=True, text=True,
                       timeout=900, cwd=root)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "gpu-sim joins ok" in r.stdout


def test_regroup_combines_groups_as_merge_does():
    from bamql.fused import ir
    from bamql.kernels.accumulate import alloc, merge, regroup
    aggs = (ir.Agg("sum", ir.Col("f", "float"), "float"), ir.Agg("min", ir.Col("f", "float"), "float"),
            ir.Agg("max", ir.Col("f", "float"), "float"), ir.Agg("max", ir.Col("i", "int"), "int"),
            ir.Agg("sum", ir.Col("i", "int"), "int"))
    acc = alloc(1, 4, aggs)
    acc["R"][0] = [2, 0, 1, 3]
    acc["C"][0, :, :] = [[2] * 5, [0] * 5, [1] * 5, [3] * 5]
    acc["SF"][0, :, 0] = [1.5, 0.0, 2.0, -1.0]
    acc["MNF"][0, :, 1] = [np.nan, np.nan, 4.0, np.nan]  # a group of NaNs only: MIN is NaN
    acc["MXF"][0, :, 2] = [1.0, -np.inf, np.nan, 3.0]  # NaN is the largest float
    acc["MXI"][0, :, 3] = [5, np.iinfo(np.int64).min, 9, -2]
    acc["SI"][0, :, 4] = [1, 0, 2, 3]
    red = merge(acc, None)
    out = regroup(red, np.array([1, 0, 1, 0]), 2)
    assert list(out["R"]) == [3, 3] and list(out["C"][:, 0]) == [3, 3]
    assert list(out["SF"][:, 0]) == [-1.0, 3.5]
    assert out["MNF"][1, 1] == 4.0 and np.isnan(out["MNF"][0, 1])
    assert np.isnan(out["MXF"][1, 2]) and out["MXF"][0, 2] == 3.0
    assert list(out["MXI"][:, 3]) == [-2, 9] and list(out["SI"][:, 4]) == [3, 3]
    assert out["E"] is red["E"]


def test_an_empty_dimension_table(joined):
    d, t = joined
    empty = pa.table({"id": pa.array([], pa.int64()), "name": pa.array([], pa.string())})
    with bamql.connect(d / "three", device="cpu") as con:
        con.register("nobody", empty)
        for sql in ("SELECT n.name, COUNT(*) FROM trips t LEFT JOIN nobody n ON t.vendor_id = n.id "
                    "GROUP BY 1",
                    "SELECT n.name, COUNT(*) FROM trips t JOIN nobody n ON t.vendor_id = n.id GROUP BY 1",
                    "SELECT COUNT(*), SUM(t.fare_amount) FROM trips t JOIN nobody n ON t.vendor_id = n.id"):
            ref = duck_tables(sql, {"trips": t, "nobody": empty})
            assert_same_rows(con.sql(sql).rows(), ref, ordered=False)


def test_a_small_stored_table_joins_inside_the_fused_kernel(tmp_path):
    """A stored zone table (ingested, as a user would) joins as a dimension table: the join
    runs in the fact table's kernel, and answers as DuckDB."""
    import duckdb
    import pyarrow.csv as pacsv

    from bamql.storage.ingest import ingest
    from tests.reference import assert_same_rows

    zones = pacsv.read_csv(ZONES_CSV).rename_columns(["location_id", "borough", "zone", "service_zone"])
    pq.write_table(zones, tmp_path / "z.parquet")
    ingest([tmp_path / "z.parquet"], tmp_path / "data" / "zones2", page_size=4096)
    ingest([SAMPLE_CSV], tmp_path / "data" / "trips", page_size=4096)
    with bamql.connect(tmp_path / "data", device="cpu") as con:
        trips = con.sql("SELECT * FROM trips").table
        for sql in ("SELECT z.borough, COUNT(*), AVG(t.fare_amount) FROM trips t JOIN zones2 z "
                    "ON t.pickup_location_id = z.location_id GROUP BY 1 ORDER BY 1",
                    "SELECT COUNT(*) FROM trips t LEFT JOIN zones2 z ON t.dropoff_location_id = "
                    "z.location_id WHERE z.zone LIKE '%Park%'"):
            assert "join zones2 z" in con.explain(sql)
            ref = duckdb.connect()
            ref.register("t_", trips)
            ref.register("z_", zones)
            want = ref.sql(sql.replace("trips t", "t_ t").replace("zones2 z", "z_ z")).fetchall()
            assert_same_rows(con.sql(sql).rows(), want, ordered="ORDER BY" in sql)
