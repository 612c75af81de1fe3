"""Row groups: layout, verification, damage, the planner's choice, and answers through them."""

from __future__ import annotations

import os

import numpy as np
import pytest

import bamql
from bamql.errors import IngestError, StoreError
from bamql.physical.cost import MEDIA, Medium
from bamql.physical.planning import plan_query
from bamql.queries import ROW_QUERIES, TREE_QUERIES, all_queries, load
from bamql.sql.translate import translate
from bamql.storage.format import OS_PAGE
from bamql.storage.groups import auto_groups
from bamql.storage.ingest import ingest
from bamql.storage.store import PageStore
from tests.conftest import read_orc
from tests.reference import assert_same_rows, duck

MEASURES = ("trip_distance", "fare_amount", "extra", "mta_tax", "tip_amount", "tolls_amount",
            "improvement_surcharge", "total_amount")


@pytest.fixture(scope="module")
def grouped(tmp_path_factory, taxi_orc):
    d = tmp_path_factory.mktemp("grouped")
    ingest(taxi_orc, d / "trips", page_size=512, groups="auto")
    return d


@pytest.fixture
def slow_disk(monkeypatch):
    """Disk media whose streams cost more than gathers even on these small tables (at
    200 M rows the real figures choose the same way: a column is then 1.6 GB)."""
    for name in ("file", "queue"):
        monkeypatch.setitem(MEDIA, name, Medium(name, 1e5, MEDIA[name].random_reads_per_s))


def _plan(store: PageStore, name: str, medium: str):
    q = translate(load(name), {"trips": store.columns})
    return plan_query(q, store, MEDIA[medium])


def test_auto_groups_take_float_columns_of_one_width_by_os_page(grouped):
    with PageStore(grouped / "trips") as s:
        assert [g.members for g in s.manifest.groups] == [MEASURES]  # congestion alone: no group
        g = s.manifest.groups[0]
        assert g.block_bytes == OS_PAGE and g.first_page == s.manifest.total_pages
        assert s.manifest.all_pages == s.manifest.total_pages + len(MEASURES) * g.n_pages
        assert os.path.getsize(grouped / "trips" / g.file) == g.n_pages * OS_PAGE
        assert s.verify() == []
        assert auto_groups(s.manifest.columns, 4096) == []  # a block would not share a read


def test_group_pages_hold_the_members_pages(grouped):
    with PageStore(grouped / "trips") as s:
        for name, copy in s.shadow.items():
            c = s.column(name)
            ids = np.array([0, 5, c.n_pages // 2, c.n_pages - 1])
            a = np.empty((len(ids), s.page_size), np.uint8)
            b = np.empty_like(a)
            s.read_pages(c.first_page + ids, a)
            s.read_scattered(copy.first_page + ids[::-1], b, np.arange(len(ids))[::-1])
            assert (a == b).all(), name
            assert s.owner(int(copy.first_page)).name == name


def test_bad_group_specs_fail_before_writing(tmp_path, taxi_orc):
    for spec, msg in (("trip_distance,nope", "unknown column 'nope'"),
                      ("trip_distance,vendor_id", "same width"),
                      ("trip_distance,extra;extra,mta_tax", "two row groups"),
                      ("trip_distance", "two columns or more")):
        with pytest.raises(IngestError, match=msg):
            ingest(taxi_orc, tmp_path / "t", page_size=512, groups=spec)
        assert not (tmp_path / "t").exists()


def test_damaged_group_file(tmp_path, taxi_orc):
    d = tmp_path / "trips"
    ingest(taxi_orc, d, page_size=512, groups="trip_distance,total_amount")
    with PageStore(d) as s:
        g = s.manifest.groups[0]
        p = s.shadow["total_amount"].first_page + 3
    f = d / g.file
    with open(f, "r+b") as fh:  # one byte of total_amount's copy of page 3
        fh.seek(3 * g.block_bytes + 512 + 17)
        b = fh.read(1)
        fh.seek(3 * g.block_bytes + 512 + 17)
        fh.write(bytes([b[0] ^ 0xFF]))
    with PageStore(d) as s:
        problems = s.verify()
        assert len(problems) == 1 and "row-group copy" in problems[0] and f"global page {p}" in problems[0]
        with pytest.raises(StoreError, match="checksum mismatch in column 'total_amount'"):
            s.read_pages(np.array([p]), np.empty((1, 512), np.uint8))
    os.truncate(f, f.stat().st_size - 1)
    with pytest.raises(StoreError, match="row group file grp-000.bin is missing, truncated"):
        PageStore(d)


def test_planner_gathers_through_a_group_only_from_disk(grouped, slow_disk):
    with PageStore(grouped / "trips") as s:
        q6 = _plan(s, "q06", "queue")
        dep = [a for a in q6.access if a.role == "dependent"]
        assert len(dep) == 6 and all(a.shadow and a.path == "gather" for a in dep)
        assert not any(a.shadow for a in _plan(s, "q06", "host").access)
        assert not any(a.shadow for a in _plan(s, "q01", "queue").access)  # one member: no gain
        used = sum(a.shadow for n in set(all_queries()) - set(ROW_QUERIES) - set(TREE_QUERIES)
                   for a in _plan(s, n, "file").access)
        assert used >= 10  # the answers below go through groups


@pytest.mark.parametrize("name", sorted(all_queries()))
def test_queries_through_groups_match_duckdb(grouped, taxi_orc, slow_disk, name):
    sql = load(name)
    with bamql.connect(grouped, device="cpu", medium="file") as con:
        res = con.sql(sql)
    assert_same_rows(res.rows(), duck(sql, read_orc(taxi_orc)), ordered="ORDER BY" in sql)


def test_group_gather_reads_a_block_per_row(grouped, slow_disk):
    with bamql.connect(grouped, device="cpu", medium="file") as con:
        r = con.sql("EXPLAIN ANALYZE " + load("q06"))
    assert "(row group)" in r.plan_text
    st = r.stats
    pages = {st.columns[c].pages_read for c in ("trip_distance", "total_amount", "mta_tax")}
    assert len(pages) == 1 and 0 < pages.pop() <= st.rows_matched  # one page per member per row
