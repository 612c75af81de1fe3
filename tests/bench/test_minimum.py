"""The page-granular minimum: matching rows from the ORC, distinct pages per column."""

from __future__ import annotations

import numpy as np

from bamql.bench.minimum import matching_rows, page_minimum
from bamql.queries import load
from bamql.sql.translate import translate
from bamql.storage.store import PageStore
from tests.conftest import read_orc
from tests.reference import duck


def test_matching_rows_agree_with_duckdb(taxi_store, taxi_orc):
    with PageStore(taxi_store / "trips") as s:
        cols = s.columns
    sql = "SELECT COUNT(*) FROM trips WHERE trip_distance > 3.5 AND passenger_count IS NOT NULL"
    rows = matching_rows(translate(sql, {"trips": cols}), taxi_orc, cols)
    assert len(rows) == duck(sql, read_orc(taxi_orc))[0][0] > 0
    assert np.all(np.diff(rows) > 0)  # row numbers in store order, each once


def test_page_minimum_counts_distinct_pages(taxi_store, taxi_orc):
    with PageStore(taxi_store / "trips") as s:
        cols, n, ps = s.columns, s.rows, s.page_size
    q = translate(load("q02"), {"trips": cols})
    rows = matching_rows(q, taxi_orc, cols)
    t = read_orc(taxi_orc)
    hit = np.nonzero(np.isin(t["pickup_location_id"].to_numpy(), [255, 256]))[0]
    assert np.array_equal(rows, hit)
    want = 0  # the predicate column's pages without a match need not be read either
    for c in ("pickup_location_id", "trip_distance", "total_amount"):
        want += len(set((hit // cols[c].rows_per_page).tolist())) * ps
    assert page_minimum(q, rows, n, cols, ps) == want
    whole = translate("SELECT AVG(fare_amount) FROM trips", {"trips": cols})
    got = page_minimum(whole, matching_rows(whole, taxi_orc, cols), n, cols, ps)
    assert got == cols["fare_amount"].n_pages * ps
