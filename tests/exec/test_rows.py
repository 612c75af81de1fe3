"""Row queries and exact quantiles (engine.rows) against DuckDB: NULLs and NaN in ORDER BY
keys, LIMIT/OFFSET at the edges, top-k across morsels, 512 B and 4 KiB pages, late
materialization's reads, joins, refusals, and the GPU session routing them to the CPU."""

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
from bamql.api.zones import zones_table
from bamql.errors import PlanError
from bamql.exec import cpu
from bamql.storage.ingest import ingest
from tests.conftest import SAMPLES
from tests.reference import assert_same_rows, duck, duck_tables


def rows_table(n: int = 5000) -> pa.Table:
    """A unique ``id``, a small ``g`` with NULLs, floats with NULL/NaN/+-inf, cents, a
    dictionary string and timestamps, all with NULLs."""
    i = np.arange(n)
    x = np.sin(i) * 100
    x[i % 97 == 0] = np.nan
    x[[5, 600]], x[[7, 4000]] = np.inf, -np.inf
    return pa.table({
        "id": pa.array(i, pa.int64()),
        "g": pa.array(i % 5, pa.int64(), mask=i % 23 == 0),
        "x": pa.array(x, mask=i % 31 == 0),
        "c": pa.array(np.round((i % 1013) * 0.37 - 100, 2), mask=i % 17 == 0),
        "s": pa.array([f"v{(k * 7) % 13:02d}" for k in i], mask=i % 19 == 0),
        "ts": pa.array(1_546_300_800_000_000 + i * 37_000_000_123 % 10**13, pa.timestamp("us"),
                       mask=i % 29 == 0),
    })


QUERIES = [
    "SELECT * FROM trips WHERE g = 3 ORDER BY id",
    "SELECT id, x FROM trips ORDER BY x, id LIMIT 20",
    "SELECT id, x FROM trips ORDER BY x DESC, id LIMIT 20",
    "SELECT id, x FROM trips ORDER BY x DESC NULLS FIRST, id LIMIT 60",
    "SELECT id, x FROM trips ORDER BY x NULLS FIRST, id DESC LIMIT 60 OFFSET 100",
    "SELECT id, s, ts FROM trips WHERE c > 200 ORDER BY s DESC, ts, id LIMIT 15",
    "SELECT id, c * 2 AS c2, x + c AS xc FROM trips WHERE s = 'v03' ORDER BY c2 DESC, id LIMIT 9",
    "SELECT id FROM trips WHERE x > 99.9 OR x <> x",
    "SELECT id, g FROM trips ORDER BY 2 DESC, 1 LIMIT 7",
    "SELECT id FROM trips ORDER BY id LIMIT 0",
    "SELECT id FROM trips ORDER BY id LIMIT 5 OFFSET 999999",
    "SELECT id FROM trips ORDER BY id DESC OFFSET 4990",
    "SELECT id, x FROM trips WHERE id > 1e9",
    "SELECT MEDIAN(x), quantile_cont(x, 0.9), quantile_disc(x, 0.1), COUNT(*) FROM trips",
    "SELECT g, MEDIAN(c), quantile_disc(s, 0.5), quantile_disc(ts, 0.3), AVG(c) FROM trips "
    "GROUP BY g ORDER BY g",
    "SELECT g, MEDIAN(x) FROM trips WHERE c < 0 GROUP BY 1 ORDER BY 1",
    "SELECT MEDIAN(x) FROM trips WHERE id < 0",
    "SELECT percentile_cont(0.3) WITHIN GROUP (ORDER BY c) FROM trips",
]


@pytest.fixture(scope="module", params=[512, 4096])
def store(request, tmp_path_factory) -> tuple[Path, pa.Table]:
    d = tmp_path_factory.mktemp(f"rows{request.param}")
    t = rows_table()
    pq.write_table(t, d / "t.parquet")
    ingest([d / "t.parquet"], d / "data" / "trips", page_size=request.param)
    return d / "data", t


@pytest.mark.parametrize("sql", QUERIES)
def test_rows_and_quantiles_match_duckdb(store, sql):
    data, t = store
    with bamql.connect(data, device="cpu") as con:
        got = con.sql(sql).rows()
    assert_same_rows(got, duck(sql, t), ordered="ORDER BY" in sql)


def test_top_k_merges_across_small_morsels(store, monkeypatch):
    data, t = store
    monkeypatch.setattr(cpu, "MORSEL_ROWS", 1024)  # five morsels of matches
    with bamql.connect(data, device="cpu") as con:
        for sql in QUERIES[1:5] + QUERIES[11:12] + QUERIES[14:15]:
            assert_same_rows(con.sql(sql).rows(), duck(sql, t), ordered=True)


@pytest.mark.parametrize("threads", [1, 4])
def test_every_row_of_many_morsels_comes_in_row_order(store, monkeypatch, threads):
    """A scan's morsels run side by side on the process's threads (``parallel.cores``) and
    come back in row order, as one morsel at a time gives them; the matches are counted."""
    from bamql import parallel

    data, t = store
    monkeypatch.setattr(cpu, "MORSEL_ROWS", 600)  # about nine morsels
    monkeypatch.setattr(parallel, "_share", threads)
    with bamql.connect(data, device="cpu") as con:
        for sql in ("SELECT * FROM trips", "SELECT id, x * 2, s FROM trips WHERE g = 3 OR x > 50",
                    "SELECT id, ROW_NUMBER() OVER (PARTITION BY g ORDER BY x DESC, id) AS r "
                    "FROM trips QUALIFY r <= 4",
                    "SELECT g, MEDIAN(x), quantile_disc(s, 0.5), quantile_cont(c, 0.9) FROM trips "
                    "WHERE c < 150 OR x > 0 GROUP BY g"):
            res = con.sql(sql)
            got = res.rows()
            assert_same_rows(got, duck(sql, t), ordered=False)
            if "OVER" not in sql and "GROUP" not in sql:
                assert got == sorted(got, key=lambda r: r[0])  # row order, as one thread
                assert res.stats.rows_matched == len(got)


def test_late_materialization_reads_only_pages_with_kept_rows(store):
    data, t = store
    with bamql.connect(data, device="cpu") as con:
        r = con.sql("SELECT id, s, ts, c FROM trips WHERE x > 99.99 ORDER BY id LIMIT 3")
        st = r.stats
        assert r.rows() == duck("SELECT id, s, ts, c FROM trips WHERE x > 99.99 ORDER BY id "
                                "LIMIT 3", t)
        assert st.rows_matched > 3
        for c in ("s", "ts", "c"):  # the select list: read at the three kept rows only
            io = st.columns[c]
            assert io.values_needed == 3 and io.pages_read >= 1
            assert io.pages_read <= 3 or io.path != "gather"
        assert st.columns["s"].bytes_read < st.columns["s"].whole_bytes or \
            con.store("trips").page_size > 512
        text = con.sql("EXPLAIN ANALYZE SELECT id FROM trips WHERE g = 1 ORDER BY id LIMIT 2")
        lines = [row[0] for row in text.rows()]
        assert lines[0].startswith("Rows of trips") and any("top-k" in x for x in lines)
        assert any(x.startswith("Analyze") for x in lines)


def test_real_sample_rows_and_medians(tmp_path):
    ingest(SAMPLES, tmp_path / "trips", page_size=512)
    import duckdb

    ref = duckdb.connect()
    files = ", ".join(f"'{p}'" for p in SAMPLES)
    ref.execute(f"CREATE VIEW trips AS SELECT * FROM read_csv([{files}])")
    queries = [
        ("SELECT fare_amount, tip_amount, trip_distance FROM trips WHERE fare_amount < 0 "
         "ORDER BY 1, 2, 3", True),
        ("SELECT tip_amount, fare_amount FROM trips ORDER BY tip_amount DESC, fare_amount "
         "LIMIT 10", True),
        ("SELECT passenger_count, total_amount FROM trips WHERE tip_amount > 40", False),
        ("SELECT MEDIAN(fare_amount), quantile_cont(tip_amount, 0.95), "
         "quantile_disc(trip_distance, 0.5) FROM trips", False),
        ("SELECT payment_type, MEDIAN(total_amount), COUNT(*) FROM trips GROUP BY 1 "
         "ORDER BY 1", True),
    ]
    with bamql.connect(tmp_path, device="cpu", cache="64KiB") as con:
        for sql, ordered in queries:
            assert_same_rows(con.sql(sql).rows(), ref.sql(sql).fetchall(), ordered)


def test_join_filters_rows_by_a_dimension(tmp_path):
    ingest(SAMPLES, tmp_path / "trips", page_size=4096)
    import pyarrow.csv as pacsv

    trips = pa.concat_tables(pacsv.read_csv(p) for p in SAMPLES)
    zones = zones_table()
    sql = ("SELECT t.fare_amount, t.pickup_location_id FROM trips t JOIN zones z "
           "ON t.pickup_location_id = z.LocationID WHERE z.Borough = 'Queens' AND "
           "t.fare_amount > 60 ORDER BY 1, 2")
    with bamql.connect(tmp_path, device="cpu") as con:
        got = con.sql(sql).rows()
        with pytest.raises(PlanError, match="joined table's columns"):
            con.sql("SELECT z.Zone FROM trips t JOIN zones z ON t.pickup_location_id = "
                    "z.LocationID LIMIT 1")
    assert got and len(got) < 200
    assert_same_rows(got, duck_tables(sql, {"trips": trips, "zones": zones}), True)


@pytest.mark.parametrize("sql", [
    "SELECT quantile_cont(x, [0.1, 0.5]) FROM trips",
    "SELECT percentile_cont(0.3) WITHIN GROUP (ORDER BY x DESC) FROM trips",
])
def test_what_the_rows_step_refuses_the_plan_tree_answers(store, sql):
    data, t = store
    with bamql.connect(data, device="cpu") as con:
        assert_same_rows(con.sql(sql).rows(), duck_tables(sql, {"trips": t}), ordered=False)


@pytest.mark.parametrize(("sql", "match"), [
    ("SELECT quantile_cont(x, 1.5) FROM trips", "between 0 and 1"),
    ("SELECT quantile_cont(x) FROM trips", "needs the fraction"),
    ("SELECT MEDIAN(s) FROM trips", "quantile_disc is"),
    ("SELECT MEDIAN(DISTINCT x) FROM trips", "DISTINCT"),
    ("SELECT id FROM trips ORDER BY 3", "ORDER BY position 3"),
    ("SELECT id FROM trips LIMIT -1", "LIMIT"),
    ("SELECT COUNT(*) FROM trips LIMIT 1 OFFSET -1", "OFFSET"),
    ("SELECT q.* FROM trips", "only trips.*"),
    ("SELECT id FROM trips ORDER BY 'a'", "constant"),
])
def test_refusals_are_one_line(store, sql, match):
    data, _ = store
    with bamql.connect(data, device="cpu") as con, pytest.raises(PlanError, match=match) as e:
        con.sql(sql)
    assert "\n" not in str(e.value)


SIM = textwrap.dedent("""
    import tempfile
    from pathlib import Path
    import pyarrow.parquet as pq
    import bamql
    from bamql.storage.ingest import ingest
    from tests.exec.test_rows import rows_table
    from tests.reference import assert_same_rows, duck

    d = Path(tempfile.mkdtemp())
    t = rows_table()
    pq.write_table(t, d / "t.parquet")
    ingest([d / "t.parquet"], d / "data" / "trips", page_size=512)
    with bamql.connect(d / "data", device="gpu", backend="host", cache="64KiB") as con:
        assert "simulator" in con.note
        for sql in ("SELECT id, x, s FROM trips WHERE g = 2 ORDER BY x DESC, id LIMIT 5",
                    "SELECT g, MEDIAN(x), COUNT(*) FROM trips GROUP BY g ORDER BY g"):
            assert_same_rows(con.sql(sql).rows(), duck(sql, t), ordered=True)
            assert "on the CPU" in con.explain(sql)
    print("gpu session ok")
""")


def test_gpu_session_runs_rows_on_the_cpu_in_the_simulator():
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    r = subprocess.run([sys.executable, "-c", SIM], env=env, capture_output=True, text=True,
                       timeout=900, cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    assert r.returncode == 0, r.stderr[-3000:]
    assert "gpu session ok" in r.stdout


def test_top_order_is_the_head_of_the_full_sort():
    """``top_order`` partitions on the first key before sorting: its rows and their order
    are the full sort's first ones, over NULLs, NaN, +-inf, -0.0, int64 extremes, booleans,
    both directions, NULLS FIRST and ties on every key."""
    from bamql.exec.rows import sort_order, top_order

    rng = np.random.default_rng(0)
    pools = [np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.5, 2.5, -3.0]),
             np.array([np.iinfo(np.int64).min, -1, 0, 5, 7, np.iinfo(np.int64).max]),
             np.array([True, False])]
    for _ in range(1500):
        n, want = int(rng.integers(1, 300)), int(rng.integers(1, 40))
        keys = [((rng.choice(pools[int(rng.integers(0, 3))], n), rng.random(n) < 0.8),
                 bool(rng.integers(0, 2)), bool(rng.integers(0, 2)))
                for _ in range(int(rng.integers(1, 4)))]
        assert list(top_order(keys, want)) == list(sort_order(keys)[:want])


def test_a_top_k_of_a_column_reads_only_the_pages_its_zone_maps_leave(taxi_orc, taxi_table, tmp_path):
    """``ORDER BY col DESC LIMIT k`` with no WHERE: the k-th largest page maximum bounds the
    answer, and the pages below it are pruned; the rows are DuckDB's."""
    ingest(taxi_orc, tmp_path / "trips", page_size=512)
    sql = ("SELECT fare_amount, tip_amount FROM trips ORDER BY fare_amount DESC, tip_amount "
           "LIMIT 5")
    with bamql.connect(tmp_path, device="cpu") as con:
        res = con.sql(sql)
    assert_same_rows(res.rows(), duck(sql, taxi_table), ordered=True)
    # the bound's filter leaves a handful of rows of 60,000 (the pages it reads depend on
    # the cost model's merging of nearby pages)
    assert res.stats.rows_matched < 100 and res.stats.bytes_read < res.stats.whole_bytes


def test_a_repeated_row_query_reuses_its_plan_until_the_table_changes(taxi_orc, taxi_table,
                                                                      tmp_path):
    # the top-k bound and the read plan come from the zone maps once per store; an append
    # makes another store (another page-metadata digest): planned anew, with the new rows
    from bamql.exec import rows
    from bamql.storage.ingest import append

    ingest(taxi_orc, tmp_path / "trips", page_size=512)
    sql = ("SELECT fare_amount, tip_amount, pickup_location_id FROM trips "
           "ORDER BY fare_amount DESC, tip_amount DESC, pickup_location_id LIMIT 3")
    calls = []
    plan_query = rows.plan_query

    def counted(*args, **kwargs):
        calls.append(1)
        return plan_query(*args, **kwargs)

    rows.plan_query = counted
    try:
        with bamql.connect(tmp_path, device="cpu") as con:
            first = con.sql(sql).rows()
            planned = len(calls)
            assert planned >= 1 and con.sql(sql).rows() == first
            assert len(calls) == planned  # the second run planned nothing
        big = taxi_table.slice(0, 1).set_column(
            taxi_table.schema.get_field_index("fare_amount"), "fare_amount",
            pa.array([1e6], taxi_table.schema.field("fare_amount").type))
        pq.write_table(big, tmp_path / "big.parquet")
        append([tmp_path / "big.parquet"], tmp_path / "trips")
        with bamql.connect(tmp_path, device="cpu") as con:
            got = con.sql(sql).rows()
        assert len(calls) > planned and got[0][0] == 1e6 and got[1:] == first[:2]
    finally:
        rows.plan_query = plan_query
