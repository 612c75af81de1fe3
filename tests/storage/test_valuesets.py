"""Page value sets: exact per-page presence bits of small integer domains."""

from __future__ import annotations

import numpy as np
import pytest

from bamql.fused import ir
from bamql.physical.planning import prune
from bamql.queries import load
from bamql.sql.translate import translate
from bamql.storage.ingest import ingest
from bamql.storage.store import PageStore
from bamql.storage.valuesets import ValueSets, max_domain
from tests.conftest import read_orc


@pytest.fixture(scope="module")
def small_pages(tmp_path_factory, taxi_orc):
    d = tmp_path_factory.mktemp("vs") / "trips"
    ingest(taxi_orc, d, page_size=512)
    with PageStore(d) as s:
        yield s


def test_bits_say_exactly_which_pages_hold_each_value(small_pages, taxi_orc):
    s = small_pages
    t = read_orc(taxi_orc)
    for name in ("pickup_location_id", "payment_type", "vendor_id"):
        c, vs = s.column(name), s.value_sets[name]
        v = t[name].to_numpy(zero_copy_only=False)
        page = np.arange(len(v)) // c.rows_per_page
        for value in np.unique(v)[:40]:
            want = np.zeros(c.n_pages, bool)
            want[page[v == value]] = True
            assert np.array_equal(vs.pages_holding([int(value)]), want), (name, value)
    # the float columns are scaled integers with wide domains: no value sets
    assert "fare_amount" not in s.value_sets and "pickup_datetime" not in s.value_sets


def test_values_outside_the_domain_or_not_integers_match_no_page(small_pages):
    vs = small_pages.value_sets["pickup_location_id"]
    for values in ([0], [10_000], [255.5], [None], [float("nan")], [float("inf")], ["x"]):
        assert not vs.pages_holding(values).any(), values
    assert vs.pages_holding([255.0]).sum() == vs.pages_holding([255]).sum() > 0


def test_only_domains_small_for_the_page_size_get_value_sets():
    assert max_domain(512) == 512 and max_domain(4096) == 1024 and max_domain(1 << 20) == 1024
    bits = np.zeros((3, 1), np.uint8)
    bits[1, 0] = 0b101
    vs = ValueSets(10, bits, 3)
    assert vs.pages_holding([11]).tolist() == [True, False, True]
    assert vs.pages_holding([10, 12]).tolist() == [False, False, False]


def test_pruning_keeps_the_pages_holding_a_match_and_no_other(small_pages, taxi_orc):
    s = small_pages
    q = translate(load("q01"), {"trips": s.columns})
    r = prune(ir.conjuncts(q.predicate), s)
    v = read_orc(taxi_orc)["pickup_location_id"].to_numpy(zero_copy_only=False)
    rpp = s.column("pickup_location_id").rows_per_page
    want = np.unique(np.nonzero(np.isin(v, [255, 256]))[0] // rpp)
    got = np.concatenate([np.arange(a // rpp, -(-b // rpp)) for a, b in r])
    assert np.array_equal(got, want) and len(got) < s.column("pickup_location_id").n_pages


def test_value_sets_that_do_not_fit_the_pages_are_refused(tmp_path, taxi_orc):
    from bamql.errors import StoreError
    from tests.conftest import edit_pages_meta

    d = tmp_path / "trips"
    ingest(taxi_orc, d, page_size=512)

    def short(arrays):  # one byte of pages short
        arrays["vset:vendor_id"] = arrays["vset:vendor_id"][:, :-1]

    edit_pages_meta(d, short)
    with pytest.raises(StoreError, match="value sets of column vendor_id") as e:
        PageStore(d)
    assert "\n" not in str(e.value)
