"""Files of differing schemas and of the types real files carry, queried in place: answers
equal DuckDB's over the same files (``read_parquet([...], union_by_name=true)``)."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from bamql.api.session import Session
from bamql.errors import BamqlError, IngestError
from tests.conftest import SAMPLES
from tests.reference import assert_same_rows, session_rows


def _duck(sql: str) -> list[tuple]:
    con = duckdb.connect()
    con.execute("SET TimeZone='UTC'")
    return con.sql(sql).fetchall()


def _check(s: Session, glob: str, queries: list[str]) -> None:
    """Each query's answer over ``glob`` equals DuckDB's with ``union_by_name``."""
    for q in queries:
        ours = session_rows(s, q.format(src=f"'{glob}'"))
        ref = _duck(q.format(src=f"read_parquet('{glob}', union_by_name=true)"))
        assert_same_rows(ours, ref, ordered="ORDER BY" in q)


def _tlc(rows: int = 2000) -> pa.Table:
    return pacsv.read_csv(SAMPLES[0]).slice(0, rows)


def test_tlc_years_of_differing_types_and_columns_are_widened(session, tmp_path):
    """A year whose fare_amount is whole numbers (int64), passenger_count int32 and
    timestamps in ms, beside one of doubles, int64 and µs that has a column more: the
    int64 fares widen to double, the int32 counts to int64, the ms timestamps to µs, and
    the rows of the file without the extra column read NULL there."""
    t = _tlc()
    old = t.slice(0, 900).drop_columns(["congestion_surcharge"])
    for name, typ in (("fare_amount", pa.int64()), ("passenger_count", pa.int32()),
                      ("pickup_datetime", pa.timestamp("ms"))):
        i = old.schema.get_field_index(name)
        col = pc.floor(old.column(i)) if name == "fare_amount" else old.column(i)
        old = old.set_column(i, name, col.cast(typ))
    new = t.slice(900)
    new = new.set_column(new.schema.get_field_index("congestion_surcharge"), "congestion_surcharge",
                         pc.add(new.column("fare_amount"), 0.25))
    pq.write_table(old, tmp_path / "y2018.parquet")
    pq.write_table(new, tmp_path / "y2019.parquet")
    _check(session, f"{tmp_path}/y*.parquet", [
        "SELECT COUNT(*), SUM(fare_amount), AVG(fare_amount), MIN(fare_amount), "
        "SUM(passenger_count), COUNT(congestion_surcharge), SUM(congestion_surcharge), "
        "MIN(pickup_datetime), MAX(pickup_datetime) FROM {src}",
        "SELECT passenger_count, COUNT(*), SUM(fare_amount), AVG(congestion_surcharge) FROM {src} "
        "GROUP BY passenger_count ORDER BY passenger_count",
        "SELECT COUNT(*) FROM {src} WHERE fare_amount > 10.5 AND congestion_surcharge IS NULL",
        "SELECT COUNT(*), SUM(fare_amount) FROM {src} "
        "WHERE pickup_datetime >= TIMESTAMP '2019-01-05 12:00:00'",
    ])


def test_a_column_only_some_files_have_is_null_elsewhere(session, tmp_path):
    pq.write_table(pa.table({"a": pa.array([1, 2, None], pa.int32()), "s": ["x", None, "y"]}),
                   tmp_path / "p1.parquet")
    pq.write_table(pa.table({"b": [0.5, None], "a": pa.array([7, 8], pa.int64())}),
                   tmp_path / "p2.parquet")
    pq.write_table(pa.table({"a": pa.array([], pa.int64())}), tmp_path / "p3.parquet")  # zero rows
    _check(session, f"{tmp_path}/p*.parquet", [
        "SELECT COUNT(*), SUM(a), COUNT(b), SUM(b), COUNT(s) FROM {src}",
        "SELECT s, COUNT(*), SUM(a), SUM(b) FROM {src} GROUP BY s ORDER BY s",
        "SELECT COUNT(*) FROM {src} WHERE b IS NULL AND s IS NULL",
    ])


@pytest.mark.parametrize("first, second", [
    (pa.array([1, 2]), pa.array(["x", "y"])),
    (pa.array([True, False]), pa.array([1, 2])),
    (pa.array([1.5]), pa.array(["1.5"])),
])
def test_types_no_type_holds_both_of_are_one_line(session, tmp_path, first, second):
    pq.write_table(pa.table({"k": [1] * len(first), "col_x": first}), tmp_path / "m1.parquet")
    pq.write_table(pa.table({"col_x": second}), tmp_path / "m2.parquet")
    with pytest.raises(IngestError) as e:
        session.sql(f"SELECT COUNT(*), COUNT(col_x) FROM '{tmp_path}/m*.parquet'")
    msg = str(e.value)
    assert isinstance(e.value, BamqlError) and "\n" not in msg
    assert "'col_x'" in msg and "m1.parquet" in msg and "m2.parquet" in msg
    # read in place, a query that does not read the column answers, as DuckDB does
    sql = f"SELECT COUNT(*) FROM '{tmp_path}/m*.parquet'"
    assert session.sql(sql).rows() == duckdb.sql(sql).fetchall()


def _types_table(n: int = 40_000) -> pa.Table:
    """Booleans, a decimal(10,2), instants in a time zone, a string of more than 32,767
    distinct values and a mixed-case name, each with NULLs."""
    import decimal

    d = decimal.Decimal
    return pa.table({
        "flag": pa.array([True, False, None, True] * (n // 4)),
        "amt": pa.array([d("1.25"), None, d("-3.10"), d("100.99")] * (n // 4), pa.decimal128(10, 2)),
        "ts": pa.array([0, 3_600_000_000, None, 86_400_000_000] * (n // 4),
                       pa.timestamp("us", tz="America/New_York")),
        "big": pa.array([f"s{i}" if i % 7 else None for i in range(n)]),
        "Fare_Amount": pa.array([1.5, None] * (n // 2)),
    })


TYPE_QUERIES = [
    "SELECT COUNT(flag), COUNT(*) FROM {src}",
    "SELECT COUNT(*) FROM {src} WHERE flag = 1",
    "SELECT flag, COUNT(*) FROM {src} GROUP BY flag",
    "SELECT SUM(amt), MIN(amt), MAX(amt), COUNT(amt) FROM {src}",
    "SELECT COUNT(*) FROM {src} WHERE amt > 1.25",
    "SELECT MIN(ts), MAX(ts), COUNT(ts) FROM {src}",
    "SELECT COUNT(*) FROM {src} WHERE ts >= TIMESTAMP '1970-01-01 01:00:00'",
    "SELECT COUNT(big), MIN(big), MAX(big) FROM {src}",
    "SELECT COUNT(*) FROM {src} WHERE big = 's12345' OR big IS NULL",
    "SELECT COUNT(*), SUM(amt) FROM {src} WHERE big IN ('s39999', 's7', 's1')",
]


def test_types_real_files_carry_answer_as_duckdb(session, tmp_path):
    pq.write_table(_types_table(), tmp_path / "types.parquet", row_group_size=10_000)
    src = tmp_path / "types.parquet"
    for q in TYPE_QUERIES:
        ours = session_rows(session, q.format(src=f"'{src}'"))
        ref = _duck(q.format(src=f"'{src}'"))  # TIMESTAMPTZ: instants with a zone, as bamql's
        assert_same_rows(ours, [tuple(float(x) if hasattr(x, "as_tuple") else x for x in r)
                                for r in ref], ordered=False)


def test_a_zero_row_file_answers_as_duckdb(session, tmp_path):
    pq.write_table(_types_table().slice(0, 0), tmp_path / "none.parquet")
    for q in ["SELECT COUNT(*), SUM(amt), MIN(ts), COUNT(big) FROM {src}",
              "SELECT big, COUNT(*) FROM {src} GROUP BY big"]:
        q = q.format(src=f"'{tmp_path}/none.parquet'")
        assert_same_rows(session_rows(session, q), _duck(q), ordered=False)


@pytest.mark.parametrize("typ", [pa.time64("us"), pa.list_(pa.int64()), pa.binary()])
def test_types_bamql_does_not_store_are_one_line_naming_file_and_column(session, tmp_path, typ):
    pq.write_table(pa.table({"k": [1], "odd_col": pa.nulls(1, typ)}), tmp_path / "odd.parquet")
    with pytest.raises(IngestError) as e:
        session.sql(f"SELECT COUNT(*) FROM '{tmp_path}/odd.parquet'")
    msg = str(e.value)
    assert "\n" not in msg and "odd.parquet" in msg and "'odd_col'" in msg


def test_column_names_match_without_regard_to_case(session, tmp_path):
    pq.write_table(_types_table(400), tmp_path / "case.parquet")
    src = f"'{tmp_path}/case.parquet'"
    for q in ["SELECT SUM(FARE_AMOUNT), COUNT(fare_amount), MAX(Fare_Amount) FROM {src}",
              "SELECT BIG, COUNT(*) FROM {src} WHERE FLAG = 1 AND fare_AMOUNT > 1 GROUP BY BIG"]:
        q = q.format(src=src)
        assert_same_rows(session_rows(session, q), _duck(q), ordered=False)
