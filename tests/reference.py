"""The reference every query result is checked against: DuckDB over the same rows."""

from __future__ import annotations

import duckdb
import pyarrow as pa

from bamql.bench.harness import same_value


def normalize(t: pa.Table) -> pa.Table:
    """Timestamps as microseconds (what the store keeps), everything else as is."""
    cols = [c.cast(pa.timestamp("us")) if pa.types.is_timestamp(c.type) else c for c in t.columns]
    return pa.Table.from_arrays(cols, names=t.column_names)


def duck(sql: str, table: pa.Table) -> list[tuple]:
    con = duckdb.connect()
    con.execute("SET error_on_division_by_zero=false")  # x/0 is inf, as in bamql
    con.register("trips", normalize(table))
    return con.sql(sql).fetchall()


def duck_tables(sql: str, tables: dict[str, pa.Table]) -> list[tuple]:
    """DuckDB's answer over several Arrow tables, each registered under its name."""
    con = duckdb.connect()
    con.execute("SET error_on_division_by_zero=false")  # x/0 is inf, as in bamql
    for name, t in tables.items():
        con.register(name, normalize(t))
    return con.sql(sql).fetchall()


def _key(row):
    return tuple((x is None, str(type(x)), x if x is not None else 0) for x in row)


def assert_same_rows(ours: list[tuple], ref: list[tuple], ordered: bool) -> None:
    assert len(ours) == len(ref), (ours[:5], ref[:5])
    if not ordered:
        ours, ref = sorted(ours, key=_key), sorted(ref, key=_key)
    for r1, r2 in zip(ours, ref, strict=True):
        assert len(r1) == len(r2)
        assert all(same_value(a, b) for a, b in zip(r1, r2, strict=True)), (r1, r2)


def session_rows(session, sql: str, params=None) -> list[tuple]:
    """A session's answer to ``sql`` as tuples, through Arrow (the types a user gets)."""
    return [tuple(r.values()) for r in session.sql(sql, params).to_arrow().to_pylist()]
