"""A session's plans, EXPLAIN texts and answers while the OS page cache changes under it."""

from __future__ import annotations

import itertools
import re

import pytest

import bamql.exec.partition as partition
from bamql.api.connection import connect
from bamql.api.zones import zones_table
from bamql.queries import load
from bamql.storage.residency import COPY
from tests.conftest import SAMPLES
from tests.reference import assert_same_rows, duck_tables
from tests.sql.corpus import read_back

_ROW = re.compile(r"^\s+(\w+)\s+(?:predicate|dependent)\s+(\w+)\s+est\b")


def _planned_paths(text: str) -> dict[str, str]:
    """Column -> access path as the EXPLAIN text's plan names them."""
    return {m[1]: m[2] for line in text.splitlines() if (m := _ROW.match(line))}


def _shares(pattern):
    """A stand-in for ``storage.residency.cached_shares`` whose n-th look finds the share
    ``pattern(n)`` of every column's pages, compressed copy and row-group copy in the OS
    page cache."""
    calls = itertools.count()

    def probe(store, names, samples=8):
        v = pattern(next(calls))
        return {**{n: v for n in names}, **{n + COPY: v for n in names},
                **{g.file: v for g in store.manifest.groups}}

    return probe


def _medium(text: str) -> str:
    return re.search(r"medium: (\w+)", text)[1]


@pytest.mark.parametrize("pattern", [lambda n: 1.0 if n == 1 else 0.0,
                                     lambda n: 0.0 if n == 1 else 1.0,
                                     lambda n: float(n % 2)])
def test_the_text_names_the_plan_that_ran_whatever_the_page_cache_does(
        sample_store, monkeypatch, pattern):
    """The page cache may change between two looks at it (another reader, readahead):
    a query's EXPLAIN text and the plan that ran come from one look, and a text cached for
    one residency is never shown for a run planned for another."""
    monkeypatch.setattr(partition, "cached_shares", _shares(pattern))
    q = load("q06")
    seen = set()
    # the CPU engine planning as the GPU file backend with nvCOMP plans
    with connect(sample_store, device="cpu", medium="nvcomp") as con:
        for _ in range(4):
            r = con.sql(q)
            planned = _planned_paths(r.explain())
            ran = {c: str(io.path) for c, io in r.stats.columns.items()}
            assert planned == ran, r.explain()
            medium = _medium(r.plan_text)
            seen.add(medium)
            assert ("OS page cache: 100%" in r.plan_text) == (medium == "queue")
    assert seen == {"nvcomp", "queue"}  # the cold plan and the warm one both ran


@pytest.mark.parametrize("sql", [
    "SELECT trip_distance, total_amount FROM trips WHERE pickup_location_id IN (255, 256) "
    "ORDER BY total_amount DESC, trip_distance LIMIT 5",
    "SELECT payment_type, COUNT(*), SUM(fare_amount) FROM trips "
    "WHERE pickup_location_id IN (255, 256) GROUP BY payment_type",
])
def test_row_and_hashed_explain_texts_follow_one_look(sample_store, monkeypatch, sql):
    """EXPLAIN of a row query (and of a GROUP BY) is keyed by the look its plan used."""
    monkeypatch.setattr(partition, "cached_shares", _shares(lambda n: 1.0 if n % 2 else 0.0))
    with connect(sample_store, device="cpu", medium="nvcomp") as con:
        texts = {con.explain(sql) for _ in range(4)}
    assert len(texts) == 2
    assert {_medium(t) for t in texts} == {"nvcomp", "queue"}
    assert sum("OS page cache: 100%" in t for t in texts) == 1


@pytest.mark.parametrize("share", [0.0, 0.5, 1.0])
def test_answers_do_not_follow_the_page_cache(sample_store, monkeypatch, share):
    """Aggregates, GROUP BY, row queries, quantiles, COUNT DISTINCT and a join with the
    zones, planned for a page cache that holds none, half or all of the store."""
    monkeypatch.setattr(partition, "cached_shares", _shares(lambda n: share))
    queries = [load(f"q0{i}") for i in range(1, 7)] + [
        "SELECT passenger_count, COUNT(*), AVG(tip_amount) FROM trips "
        "WHERE trip_distance > 3 GROUP BY passenger_count ORDER BY passenger_count",
        "SELECT MEDIAN(fare_amount), MAX(tip_amount) FROM trips WHERE pickup_location_id < 100",
        "SELECT COUNT(DISTINCT payment_type) FROM trips WHERE pickup_location_id < 100",
        "SELECT trip_distance, fare_amount FROM trips WHERE pickup_location_id = 132 "
        "ORDER BY fare_amount DESC, trip_distance LIMIT 7",
        "SELECT z.Borough, COUNT(*), SUM(t.total_amount) FROM trips t JOIN zones z "
        "ON t.pickup_location_id = z.LocationID WHERE t.passenger_count = 2 "
        "GROUP BY z.Borough ORDER BY z.Borough",
    ]
    tables = {"trips": read_back(SAMPLES), "zones": zones_table()}
    with connect(sample_store, device="cpu", medium="nvcomp") as con:
        for sql in queries:
            r = con.sql(sql)
            if share:
                assert "OS page cache" in r.plan_text, sql
            assert _medium(r.plan_text) == ("queue" if share == 1.0 else "nvcomp"), sql
            try:
                assert_same_rows(r.rows(), duck_tables(sql, tables), "ORDER BY" in sql)
            except AssertionError as e:
                raise AssertionError(f"{sql}: {e}") from None
