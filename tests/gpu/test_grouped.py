"""Grouped queries on a real GPU (marker ``gpu``): the taxi benchmark's GROUP BYs and dense
expression keys (calendar fields, rounded decimals, date_trunc, conditions) over 3 M trips,
on every backend, with a small page cache and with eight threads on one session, against
DuckDB over the same rows. Three groups over 3 M rows make every block merge its
shared-memory copy into the same few words."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import duckdb
import pyarrow.parquet as pq
import pytest

import bamql
from bamql.api.session import gpu_unavailable_reason
from bamql.queries import load
from tests.reference import assert_same_rows

REASON = gpu_unavailable_reason()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(REASON is not None, reason=f"no GPU: {REASON}")]

QUERIES = [load(n) for n in ("t01", "t02", "t03", "t04", "g01")] + [
    "SELECT vendor_id, COUNT(*), COUNT(tip_amount), SUM(passenger_count), AVG(fare_amount), "
    "MIN(trip_distance), MAX(total_amount), MIN(pickup_location_id), MAX(tip_amount), "
    "STDDEV(fare_amount) FROM trips GROUP BY vendor_id",
    "SELECT payment_type, extract(month FROM pickup_datetime) AS m, CAST(fare_amount AS INTEGER) AS f, "
    "COUNT(*), SUM(tip_amount) FROM trips WHERE trip_distance > 2 GROUP BY 1, 2, 3",
    "SELECT pickup_location_id, COUNT(*) FILTER (WHERE tip_amount > 0), AVG(trip_distance) "
    "FROM trips GROUP BY pickup_location_id",
    load("d01"),
    "SELECT date_trunc('week', pickup_datetime) AS w, date_trunc('month', dropoff_datetime) AS mo, "
    "tip_amount > 0 AS tipped, COUNT(*), MAX(fare_amount) FROM trips GROUP BY 1, 2, 3",
    "SELECT date_trunc('day', pickup_datetime) AS d, date_trunc('quarter', pickup_datetime) AS q, "
    "date_trunc('year', pickup_datetime) AS y, COUNT(*), SUM(total_amount) FROM trips GROUP BY ALL",
]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    from bamql.datasets.generator import GenParams, generate_chunk
    from bamql.storage.ingest import ingest

    d = tmp_path_factory.mktemp("grouped")
    t = generate_chunk(GenParams(rows=3_000_000, seed=3, williamsburg_share=0.001), 0)
    pq.write_table(t, d / "t.parquet")
    ingest([d / "t.parquet"], d / "data" / "trips", page_size=512)
    con = duckdb.connect()
    con.execute(f"CREATE VIEW trips AS SELECT * FROM '{d / 't.parquet'}'")
    return d / "data", {q: con.sql(q).fetchall() for q in QUERIES}


@pytest.mark.parametrize("backend,cache", [("gpu", None), ("host", "256KiB"), ("file", "256KiB")])
def test_grouped_queries_answer_as_duckdb(data, backend, cache):
    store, want = data
    kw = {"cache": cache} if cache else {}
    with bamql.connect(store, device="gpu", backend=backend, **kw) as con:
        for q in QUERIES:
            assert_same_rows(con.sql(q).rows(), want[q], ordered="ORDER BY" in q)


def test_grouped_queries_from_eight_threads_on_one_session(data):
    store, want = data
    with bamql.connect(store, device="gpu", backend="host", cache="1MiB") as con:
        def one(i: int) -> None:
            for q in QUERIES[i % len(QUERIES):] + QUERIES[: i % len(QUERIES)]:
                assert_same_rows(con.sql(q).rows(), want[q], ordered="ORDER BY" in q)

        with ThreadPoolExecutor(8) as ex:
            list(ex.map(one, range(8)))
