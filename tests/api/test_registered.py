"""A registered in-memory table queried as a table (``FROM t``), through a store cached by
its content: answers equal DuckDB's over the same table; joins still use it as a dimension."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from bamql.errors import PlanError
from bamql.storage import filecache
from tests.reference import assert_same_rows, duck_tables


def _table() -> pa.Table:
    return pa.table({
        "k": pa.array([1, 2, 3, None, 5], pa.int32()),
        "name": ["a", "b", None, "a", "c"],
        "v": [1.5, None, 2.0, 3.0, float("nan")],
        "seen": pa.array([dt.datetime(2024, 1, d) for d in (1, 2, 3, 4, 5)], pa.timestamp("ms")),
    })


QUERIES = [
    "SELECT COUNT(*), SUM(k), COUNT(v), COUNT(name), MIN(seen) FROM t",
    "SELECT name, COUNT(*), SUM(k), MAX(seen) FROM t GROUP BY name ORDER BY name",
    "SELECT COUNT(*) FROM t x WHERE x.k > 1 AND x.name <> 'c'",
    "SELECT COUNT(*) FROM t WHERE k IS NULL OR name IS NULL",
    "SELECT COUNT(*) FROM t WHERE k > 100",
]


@pytest.mark.parametrize("sql", QUERIES)
def test_a_registered_table_answers_as_duckdb(session, sql):
    t = _table()
    session.register("t", t)
    ours = [tuple(r.values()) for r in session.sql(sql).to_arrow().to_pylist()]
    assert_same_rows(ours, duck_tables(sql, {"t": t}), ordered="ORDER BY" in sql)


def test_the_store_is_keyed_by_content(session, tmp_path):
    session.register("t", _table())
    before = filecache.INGESTS
    session.sql("SELECT COUNT(*) FROM t")
    assert filecache.INGESTS == before + 1
    session.register("u", _table())  # the same rows under another name: the same store
    assert session.sql("SELECT COUNT(*) FROM u").to_arrow().column(0).to_pylist() == [5]
    assert filecache.INGESTS == before + 1
    session.register("t", _table().slice(0, 2))  # other rows: a new store
    assert session.sql("SELECT COUNT(*) FROM t").to_arrow().column(0).to_pylist() == [2]
    assert filecache.INGESTS == before + 2
    assert len(list((tmp_path / "cache").glob("mem-*"))) == 2


def test_the_default_zones_table_is_queryable_and_still_joins(session, tmp_path):
    zones = session.dimensions["zones"].table
    sql = "SELECT Borough, COUNT(*) FROM zones GROUP BY Borough ORDER BY Borough"
    ours = [tuple(r.values()) for r in session.sql(sql).to_arrow().to_pylist()]
    assert_same_rows(ours, duck_tables(sql, {"zones": zones}), ordered=True)
    import pyarrow.parquet as pq

    trips = pa.table({"pickup_location_id": pa.array([1, 132, 132, 265, None], pa.int64())})
    pq.write_table(trips, tmp_path / "trips.parquet")
    sql = ("SELECT z.Borough, COUNT(*) FROM '{p}' t JOIN zones z ON t.pickup_location_id = "
           "z.LocationID GROUP BY z.Borough ORDER BY z.Borough")
    ours = [tuple(r.values()) for r in session.sql(sql.format(p=tmp_path / "trips.parquet"))
            .to_arrow().to_pylist()]
    ref = duck_tables(sql.format(p="trips"), {"trips": trips, "zones": zones})
    assert_same_rows(ours, ref, ordered=True)


def test_an_unknown_column_names_the_registered_table(session):
    session.register("t", _table())
    with pytest.raises(PlanError, match=r"unknown column 'day' in table 't'"):
        session.sql("SELECT day FROM t")


def test_every_column_is_read_or_the_table_is_refused_naming_it(session):
    """string_view, large strings, decimals and booleans are read (decimals as doubles and
    booleans as integers, as a store keeps them; dates too, tests/api/test_dates.py); a
    list refuses the table in one line naming the column, never leaving it out unseen."""
    from decimal import Decimal

    from bamql.errors import UsageError

    t = pa.table({"k": [1, 2], "name": pa.array(["card", "cash"], pa.string_view()),
                  "big": pa.array(["x", None], pa.large_string()),
                  "d": pa.array([Decimal("1.50"), None], pa.decimal128(10, 2)),
                  "flag": [True, False]})
    session.register("pmap", t)
    assert session.sql("SELECT * FROM pmap ORDER BY k").rows() == [
        (1, "card", "x", 1.5, 1), (2, "cash", None, None, 0)]
    for bad, typ in (({"l": pa.array([[1, 2]])}, "list"),):
        with pytest.raises(UsageError, match=rf"column '{next(iter(bad))}' is of type {typ}"):
            session.register("bad", pa.table({"k": [1], **bad}))
    with pytest.raises(PlanError, match="unknown table"):
        session.sql("SELECT * FROM bad")


def test_unregister_forgets_the_table(session):
    from bamql.errors import UsageError

    session.register("t", _table())
    assert session.sql("SELECT COUNT(*) FROM t").rows() == [(5,)]
    session.unregister("t")
    with pytest.raises(PlanError, match="unknown table 't'"):
        session.sql("SELECT COUNT(*) FROM t")
    with pytest.raises(UsageError, match="no table is registered as 't'"):
        session.unregister("t")
    session.register("t", _table().slice(0, 2))  # a new table under the old name
    assert session.sql("SELECT COUNT(*) FROM t").rows() == [(2,)]


def test_connect_memory_is_a_session_without_stored_tables():
    import bamql

    with bamql.connect(":memory:", device="cpu") as con:
        assert con.tables() == []
        con.register("t", _table())
        assert con.execute("SELECT COUNT(*) FROM t").rows() == [(5,)]


def test_an_unknown_table_lists_the_registered_ones_too():
    import bamql

    with bamql.connect(None, device="cpu") as con:
        con.register("pm", _table())
        for sql in ("SELECT COUNT(*) FROM nope", "SELECT COUNT(*) FROM (SELECT * FROM nope)"):
            with pytest.raises(PlanError, match=r"unknown table 'nope' \(tables: pm, zones\)"):
                con.sql(sql)


def test_a_table_registered_while_a_query_is_bound_is_not_missed(session, monkeypatch):
    # a text bound just before ``d`` is registered is not remembered as naming no
    # registered table: the same text run again reads ``d``
    from bamql.sql import file_refs
    real = file_refs.bind_files

    def registering_meanwhile(text, *args, **kwargs):
        out = real(text, *args, **kwargs)
        if "d" not in session.dimensions:
            session.register("d", _table())
        return out

    monkeypatch.setattr(file_refs, "bind_files", registering_meanwhile)
    sql = "SELECT COUNT(*) AS n FROM d"
    try:
        session.sql(sql)
    except PlanError:
        pass  # bound before the table was there
    assert session.sql(sql).rows() == [(5,)]


def test_a_ubigint_past_bigint_is_refused_in_one_line(session):
    from bamql.errors import UsageError

    with pytest.raises(UsageError, match=r"column 'u' holds a uint64 value past BIGINT's range"):
        session.register("u", pa.table({"u": pa.array([1, 2**64 - 1], pa.uint64())}))
    session.register("u", pa.table({"u": pa.array([1, 2**63 - 1], pa.uint64())}))  # fits
    assert session.sql("SELECT MAX(u) FROM u").rows() == [(2**63 - 1,)]
