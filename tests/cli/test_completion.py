"""Tab completion's candidates (pure logic: no prompt_toolkit needed)."""

from __future__ import annotations

import types

import pyarrow as pa
import pytest

from bamql.cli.completion import DOT_COMMANDS, KEYWORDS, completions, word_before


class Catalog:
    """A session's catalog as completion reads it: stored tables and dimension tables."""

    def __init__(self, broken=False):
        self.broken = broken
        self.dimensions = {"zones": types.SimpleNamespace(metas={"location_id": 0, "borough": 0})}

    def tables(self):
        if self.broken:
            raise RuntimeError("catalog exploded")
        return ["trips", "trips_2020"]

    def schema(self, name):
        cols = {"trips": ["vendor_id", "passenger_count", "payment_type", "fare_amount"],
                "trips_2020": ["vendor_id", "tip_amount"]}[name]
        return pa.schema([(c, pa.int64()) for c in cols])


def test_keywords_follow_the_case_typed():
    c = Catalog()
    assert "SELECT" in completions("SEL", c)
    assert completions("sel", c) == ["select"]
    assert completions("SELECT COUNT(*) FROM trips GRO", c) == ["GROUP"]


def test_table_names_after_from_and_join():
    c = Catalog()
    assert completions("SELECT COUNT(*) FROM tr", c) == ["trips", "trips_2020"]
    assert completions("SELECT COUNT(*) FROM trips t JOIN z", c) == ["zones"]
    assert completions("SELECT COUNT(*) FROM ", c) == ["trips", "trips_2020", "zones"]


def test_columns_after_an_alias_or_a_table_name():
    c = Catalog()
    assert completions("SELECT t.pa", c, " FROM trips t") == ["passenger_count", "payment_type"]
    assert completions("SELECT AVG(x.ti", c, ") FROM trips_2020 AS x") == ["tip_amount"]
    assert completions("SELECT z.", c, " FROM trips t JOIN zones z ON t.vendor_id = z.location_id") \
        == ["borough", "location_id"]
    assert completions("SELECT trips.fa", c) == ["fare_amount"]
    assert completions("SELECT q.", c, " FROM trips t") == []  # an alias no FROM names
    assert word_before("SELECT t.pa") == "pa"


def test_bare_words_offer_the_named_tables_columns_then_tables_then_keywords():
    c = Catalog()
    got = completions("SELECT COUNT(*) FROM trips WHERE pa", c)
    assert got == ["passenger_count", "payment_type", "partition"]
    assert completions("SELECT ti", c) == ["tip_amount"]  # no FROM yet: every table's columns
    assert "tip_amount" not in completions("SELECT COUNT(*) FROM trips WHERE ", c)


def test_dot_commands_and_their_arguments(tmp_path):
    c = Catalog()
    assert completions(".ti", c) == [".timer"]
    assert set(completions(".", c)) == set(DOT_COMMANDS)
    assert completions(".timer o", c) == ["off", "on"]
    assert completions(".explain ", c) == ["off", "on"]
    assert completions(".mode c", c) == ["csv"]
    assert completions(".schema trips_", c) == ["trips_2020"]
    (tmp_path / "q1.sql").write_text("")
    (tmp_path / "sub").mkdir()
    prefix = f".read {tmp_path}/"
    assert completions(prefix + "q", c) == [f"{tmp_path}/q1.sql"]
    assert completions(prefix + "s", c) == [f"{tmp_path}/sub/"]
    assert word_before(prefix + "q") == f"{tmp_path}/q"


def test_a_broken_catalog_still_completes_keywords():
    c = Catalog(broken=True)
    assert completions("SELECT COUNT(*) FROM ", c) == ["zones"]
    assert completions("WHER", c) == ["WHERE"]


def test_every_keyword_is_upper_case_and_unique():
    assert len(set(KEYWORDS)) == len(KEYWORDS)
    assert all(k == k.upper() for k in KEYWORDS)


@pytest.fixture(scope="module")
def session(taxi_store):
    from bamql.api.connection import connect

    with connect(taxi_store, device="cpu") as s:
        yield s


def test_a_real_sessions_tables_and_dimension_tables(session):
    assert completions("SELECT COUNT(*) FROM ", session) == ["trips", "zones"]
    assert "pickup_location_id" in completions("SELECT t.pick", session, " FROM trips t")
    assert completions("SELECT z.bor", session, " FROM trips t JOIN zones z ON 1 = 1") == ["Borough"]
