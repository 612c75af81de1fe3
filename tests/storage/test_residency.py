"""What the OS page cache holds of a store, and what the planner makes of it."""

from __future__ import annotations

import os
import shutil
from dataclasses import replace
from pathlib import Path

import duckdb
import numpy as np
import pytest

from bamql.api.connection import connect
from bamql.config import AccessPath, Medium
from bamql.exec.partition import page_cache
from bamql.physical import cost
from bamql.physical.planning import explain_text, plan_query, read_key
from bamql.queries import load
from bamql.sql.translate import translate
from bamql.storage import residency
from bamql.storage.ingest import ingest
from bamql.storage.store import PageStore
from tests.conftest import read_orc

COLS = ("pickup_location_id", "trip_distance", "total_amount", "extra")
LIBC = residency._libc()


@pytest.fixture(autouse=True)
def _page_cache(monkeypatch):
    """The page cache as the product sees it (tests/conftest.py turns it off elsewhere)."""
    monkeypatch.setattr(residency, "_LIBC", LIBC)


def _evict(path: Path) -> None:
    """Ask the OS to drop every file of the store at ``path`` from its page cache."""
    os.sync()
    for f in path.iterdir():
        fd = os.open(f, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


@pytest.fixture(scope="module")
def grouped(tmp_path_factory, taxi_orc) -> Path:
    """The generated trips in 512 B pages, two volumes, a row group of two columns and a
    compressed copy of every column."""
    d = tmp_path_factory.mktemp("resident")
    ingest(taxi_orc, d / "trips", page_size=512, volumes=2, groups="total_amount,extra",
           compress="zstd")
    return d


def _shares(store_dir: Path) -> dict[str, float]:
    with PageStore(store_dir / "trips") as s:
        return residency.cached_shares(s, COLS)


def _evictable(store_dir: Path) -> None:
    if not _shares(store_dir):
        pytest.skip("this system cannot tell what its page cache holds (no mincore)")
    _evict(store_dir / "trips")
    if any(_shares(store_dir).values()):
        pytest.skip("this file system keeps its pages cached (e.g. tmpfs)")


def test_a_store_just_read_is_cached_and_an_evicted_one_is_not(grouped):
    store = grouped / "trips"
    with PageStore(store) as s:
        for c in COLS:
            s.read_column_pages(c)
            s.read_stream(c, 0, s.column(c).n_pages, _pages(s, s.column(c).n_pages))
        got = residency.cached_shares(s, COLS)
    if not got:
        pytest.skip("this system cannot tell what its page cache holds (no mincore)")
    # each column, the row group's copy, each column's compressed copy
    assert set(got) == {*COLS, "grp-000.bin", *(c + residency.COPY for c in COLS)}
    assert all(v == 1.0 for v in got.values()), got
    _evictable(grouped)
    assert _shares(grouped) == dict.fromkeys(got, 0.0)
    with PageStore(store) as s:  # half of one column's pages back in memory
        c = s.column("trip_distance")
        half = c.n_pages // 2
        s.read_pages(np.arange(c.first_page, c.first_page + half), _pages(s, half), verify=False)
        shares = residency.cached_shares(s, ("trip_distance",))
    assert 0.25 <= shares["trip_distance"] <= 0.75
    assert shares["trip_distance" + residency.COPY] == 0.0  # the copy was not read


def _pages(s: PageStore, n: int) -> np.ndarray:
    return np.empty((n, s.page_size), np.uint8)


def test_without_mincore_nothing_is_known(grouped, monkeypatch):
    monkeypatch.setattr(residency, "_LIBC", None)
    assert _shares(grouped) == {}
    with PageStore(grouped / "trips") as s:
        assert page_cache(s, COLS, Medium.NVCOMP) == ()  # the planner assumes the disk
    residency.set_enabled(False)
    assert _shares(grouped) == {}


def test_only_media_whose_plans_change_look_at_the_page_cache(grouped):
    with PageStore(grouped / "trips") as s:
        if not page_cache(s, COLS, Medium.NVCOMP):
            pytest.skip("this system cannot tell what its page cache holds (no mincore)")
        for m in (Medium.FILE, Medium.QUEUE, Medium.CACHED, Medium.HOST, Medium.GPU):
            assert page_cache(s, COLS, m) == ()
    assert [m for m in Medium if cost.reads_page_cache(m)] == [Medium.NVCOMP]


def test_plans_follow_the_page_cache_and_answers_do_not(grouped, taxi_orc):
    q = load("q06")
    t = read_orc(taxi_orc)  # noqa: F841 (DuckDB reads it by name)
    want = duckdb.sql(q.replace("FROM trips", "FROM t")).fetchall()[0]
    # the CPU engine runs the nvCOMP medium's plans as the GPU file backend would plan them
    with connect(grouped, device="cpu", medium="nvcomp") as con:
        part = con.store("trips").parts[0]
        for c in part.columns:
            part.read_column_pages(c)
            part.read_stream(c, 0, part.column(c).n_pages, _pages(part, part.column(c).n_pages))
        warm = con.sql(q)
        head = warm.explain().splitlines()[0]
        if "OS page cache" not in head:
            pytest.skip("this system cannot tell what its page cache holds")
        assert "medium: queue, OS page cache: 100% of the pages read" in head
        _evictable(grouped)
        cold = con.sql(q)
        head = cold.explain().splitlines()[0]
        assert "medium: nvcomp" in head and "OS page cache" not in head
    for r in (warm, cold):
        assert r.rows()[0] == pytest.approx(want, rel=1e-9)


def test_nvcomp_plans_as_the_queue_where_nearly_all_is_cached(grouped):
    with PageStore(grouped / "trips") as part:
        for sql in (load("q02"), load("q06"), "SELECT AVG(fare_amount), MAX(mta_tax) FROM trips "
                    "WHERE pickup_location_id = 255 AND passenger_count = 6"):
            q = translate(sql, {"trips": part.columns})
            every = {c: 1.0 for c in (*part.columns, *(g.file for g in part.manifest.groups),
                                      *(c + residency.COPY for c in part.columns))}
            for medium in (cost.FILE, cost.QUEUE, cost.NVCOMP):
                assert plan_query(q, part, medium, resident={}) == plan_query(q, part, medium)
            for medium in (cost.FILE, cost.QUEUE):  # their plans do not depend on it
                assert plan_query(q, part, medium, resident=every).access == \
                    plan_query(q, part, medium).access
            nv = plan_query(q, part, cost.NVCOMP, resident=every)
            assert nv.medium == Medium.QUEUE
            assert nv.access == plan_query(q, part, cost.QUEUE).access
            reads = [read_key(a, part) for a in nv.access]  # what the queue's plan reads
            edge = {**every, reads[-1]: cost.WHOLLY}
            assert plan_query(q, part, cost.NVCOMP, resident=edge).medium == Medium.QUEUE
            for k in reads:
                some = {**every, k: 0.5}
                assert plan_query(q, part, cost.NVCOMP, resident=some).medium == Medium.NVCOMP
            unread = {**every, **{c: 0.0 for c in part.columns if c not in q.columns}}
            assert plan_query(q, part, cost.NVCOMP, resident=unread).medium == Medium.QUEUE


def test_explain_counts_the_copies_a_plan_reads(grouped):
    """A column streamed from its compressed copy, or gathered through its row group, reads
    that copy: the plan's (and EXPLAIN's) share is the copy's, not its own pages'."""
    seen = set()
    with PageStore(grouped / "trips") as part:
        shares = {**dict.fromkeys(part.columns, 0.25),
                  **{c + residency.COPY: 0.5 for c in part.columns},
                  **{g.file: 0.75 for g in part.manifest.groups}}
        for sql in (load("q02"), load("q06"), "SELECT SUM(trip_distance), MAX(extra) FROM trips",
                    "SELECT AVG(fare_amount), MAX(mta_tax), "
                    "SUM(total_amount), SUM(extra) FROM trips WHERE pickup_location_id = 255 "
                    "AND passenger_count = 6"):
            q = translate(sql, {"trips": part.columns})
            for medium in (cost.FILE, cost.QUEUE, cost.NVCOMP):
                p = plan_query(q, part, medium, resident=shares)
                got = dict(p.resident)
                for a in p.access:
                    kind = "shadow" if a.shadow else "compressed" if a.compressed else "pages"
                    seen.add(kind)
                    assert got[a.column] == {"shadow": 0.75, "compressed": 0.5, "pages": 0.25}[kind]
                assert "OS page cache" in explain_text(p, part)
        # a stream of the compressed copy (chosen on larger tables than this one's)
        a = replace(p.access[-1], path=AccessPath.STREAM, compressed=True, shadow=False)
        assert read_key(a, part) == a.column + residency.COPY
    assert seen >= {"shadow", "pages"}


def test_a_store_closed_or_cut_short_is_probed_without_a_crash(grouped, tmp_path):
    """mincore never touches the mapping, so a file truncated after the store opened is
    probed safely (no SIGBUS); a closed store's probe knows nothing rather than raising."""
    s = PageStore(grouped / "trips")
    s.close()
    assert residency.cached_shares(s, COLS) == {}
    shutil.copytree(grouped / "trips", tmp_path / "trips")
    with PageStore(tmp_path / "trips") as s:
        whole = residency.cached_shares(s, COLS)
        for f in sorted((tmp_path / "trips").glob("*.bin")):
            os.truncate(f, f.stat().st_size // 3)
        cut = residency.cached_shares(s, COLS)
        assert set(cut) == set(whole) or cut == {}
        for f in sorted((tmp_path / "trips").glob("*.bin")):
            os.truncate(f, 0)
        assert residency.cached_shares(s, COLS) == {}
