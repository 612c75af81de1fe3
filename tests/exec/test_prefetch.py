"""Read-ahead of a CPU query's pages (``exec.cpu.scan_spans``, ``PageStore.prefetch``):
the spans of its scans and dense gathers, advised in each volume's file, and the answers
the same whatever the OS makes of the advice."""

from __future__ import annotations

import os
from dataclasses import replace

import numpy as np
import pytest

import bamql
import bamql.exec.partition as partition
from bamql.config import AccessPath
from bamql.exec.cpu import scan_spans
from bamql.storage.ingest import ingest
from bamql.storage.store import PageStore
from tests.conftest import SAMPLES

SQL = "SELECT COUNT(*), SUM(fare_amount) FROM trips WHERE trip_distance > {}"


@pytest.fixture(scope="module")
def striped(tmp_path_factory):
    """The TLC sample over three volumes of 512 B pages, with row groups."""
    d = tmp_path_factory.mktemp("striped")
    ingest(SAMPLES, d / "trips", page_size=512, volumes=3, groups="auto")
    return d


def _advised(monkeypatch, store: PageStore, spans) -> list[tuple[int, int, int]]:
    calls = []
    monkeypatch.setattr(os, "posix_fadvise", lambda fd, off, n, how: calls.append(
        (store._fds.index(fd), off, n)) if how == os.POSIX_FADV_WILLNEED else None)
    t = store.prefetch(spans)
    if t is not None:
        t.join()
    return calls


def test_prefetch_advises_each_volume_the_positions_of_its_pages(striped, monkeypatch):
    with PageStore(striped / "trips") as s:
        ps, total = s.page_size, s.manifest.total_pages
        spans = np.array([[0, 1], [4, 11], [total - 2, total + 5]])  # the last into row groups
        want = set()
        for a, b in ((0, 1), (4, 11), (total - 2, total)):
            for p in range(a, b):
                want.add((p % 3, p // 3))
        got = set()
        for v, off, n in _advised(monkeypatch, s, spans):
            assert off % ps == 0 and n % ps == 0 and n > 0
            got.update((v, q) for q in range(off // ps, (off + n) // ps))
        assert got == want
        assert _advised(monkeypatch, s, np.array([[total, total + 3]])) == []  # row groups only
        assert _advised(monkeypatch, s, np.zeros((0, 2), np.int64)) == []


def _columns_read(spans: np.ndarray, store: PageStore) -> set[str]:
    return {n for n, c in store.columns.items()
            if ((spans[:, 0] >= c.first_page) & (spans[:, 0] < c.first_page + c.n_pages)).any()}


@pytest.mark.parametrize("cut", [30, 0.5])  # pruned by zone maps, or not
def test_scan_spans_are_the_scans_and_the_dense_gathers(sample_store, cut):
    with bamql.connect(sample_store, device="cpu") as con:
        plan = con.plan(con._translate(SQL.format(cut)))
        store = con.store("trips").parts[0]
        spans = scan_spans(plan, store)
        assert (np.diff(spans[:, 0]) >= 0).all() and (spans[:, 1] > spans[:, 0]).all()
        c = store.column("trip_distance")
        mine = spans[(spans[:, 0] >= c.first_page) & (spans[:, 0] < c.first_page + c.n_pages)]
        assert int((mine[:, 1] - mine[:, 0]).sum()) == plan.ranges.pages(c.rows_per_page)
        fare = plan.access_of("fare_amount")
        pages = plan.ranges.pages(store.column("fare_amount").rows_per_page)
        for path, est, read in ((AccessPath.STREAM, pages, True),
                                (AccessPath.GATHER, pages * 0.6, True),  # most pages
                                (AccessPath.GATHER, pages * 0.4, False)):  # known after the filter
            access = tuple(replace(a, path=path, est_pages=est) if a is fare else a
                           for a in plan.access)
            got = _columns_read(scan_spans(replace(plan, access=access), store), store)
            assert got == ({"trip_distance", "fare_amount"} if read else {"trip_distance"})
        held = dict(plan.resident) | {a.column: 1.0 for a in plan.access}
        assert len(scan_spans(replace(plan, resident=tuple(held.items())), store)) == 0


@pytest.mark.parametrize("cut", [30, 0.5])
def test_answers_do_not_depend_on_the_advice(striped, sample_store, monkeypatch, cut):
    # nothing in the page cache, as far as the plan knows: the pages are advised
    monkeypatch.setattr(partition, "cached_shares", lambda store, names, samples=8: {})
    advised = []
    real = os.posix_fadvise
    monkeypatch.setattr(os, "posix_fadvise", lambda *a: (advised.append(a), real(*a)))
    with bamql.connect(striped, device="cpu") as con:
        got = con.sql(SQL.format(cut)).fetchall()
    assert advised
    monkeypatch.setattr(os, "posix_fadvise", lambda *a: None)  # advice not taken
    with bamql.connect(striped, device="cpu") as con:
        assert con.sql(SQL.format(cut)).fetchall() == got
    with bamql.connect(sample_store, device="cpu") as con:  # one volume, no row groups
        assert con.sql(SQL.format(cut)).fetchall() == got
