"""File sources against DuckDB's reading of the same files (``storage.sources``)."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

import bamql
from bamql.errors import BamqlError


@pytest.mark.parametrize("text", ["f,g\ninf,1\n1.5,2\n", "f,g\n,1\n-Infinity,2\n1.5,3\n"])
def test_a_csv_column_that_starts_with_an_infinity_is_refused_unless_typed(tmp_path: Path, text: str):
    """DuckDB's sniffer reads a first ``inf`` as a DATE and the column then as VARCHAR (an
    ``inf`` after a number is a DOUBLE); pyarrow reads DOUBLE, so bamql answered with
    numbers where DuckDB compares strings (``MAX(f)``, ``ORDER BY f``; found by
    ``tests.sql.fuzz``). Such a column is refused in one line, and read as the DOUBLE it
    is where ``types`` names it, as DuckDB then reads it."""
    path = tmp_path / "f.csv"
    path.write_text(text)
    assert duckdb.sql(f"DESCRIBE SELECT * FROM '{path}'").fetchall()[0][1] == "VARCHAR"
    with bamql.connect(None, device="cpu") as con:
        with pytest.raises(BamqlError, match="starts with an infinity") as e:
            con.sql(f"SELECT MAX(f) FROM '{path}'")
        assert "\n" not in str(e.value)
        typed = f"SELECT f, g FROM read_csv('{path}', types={{'f': 'DOUBLE'}}) ORDER BY g"
        assert con.sql(typed).rows() == duckdb.sql(typed).fetchall()
        later = tmp_path / "later.csv"  # an infinity after a number: DOUBLE for both
        later.write_text("f\n1.5\ninf\n")
        sql = f"SELECT MAX(f) FROM '{later}'"
        assert con.sql(sql).rows() == duckdb.sql(sql).fetchall() == [(float("inf"),)]


@pytest.mark.parametrize("text", [
    "t,k\n9193-04-22 23:15:50.127893,1\n1112-04-02 23:11:16.332297,2\n",
    "t,k\n9193-04-22 23:15:50.5+00:00,1\n,2\n",
    "9193-04-22 23:15:50.1,1\n2020-01-01 00:00:00,2\n",
])
def test_csv_timestamps_with_fractions_beyond_the_nanosecond_range(tmp_path: Path, text: str):
    """pyarrow infers a timestamp with a fraction of a second as nanoseconds, so one of
    year 9193 or 1112 made the column text where DuckDB reads a TIMESTAMP (found by
    ``tests.sql.fuzz``): such columns are read as microseconds."""
    path = tmp_path / "t.csv"
    path.write_text(text)
    with bamql.connect(None, device="cpu") as con:
        t = "t" if text.startswith("t,") else "column0"
        for sql in (f"SELECT * FROM '{path}'", f"SELECT MAX({t}), MIN({t}) FROM '{path}'"):
            assert con.sql(sql).rows() == duckdb.sql(sql).fetchall()


def test_csv_integers_beyond_bigint_are_exact_as_duckdb_hugeint(tmp_path: Path):
    """A CSV column of integers one of which is beyond BIGINT is DuckDB's HUGEINT; pyarrow
    read it as DOUBLE, so 3741256311443541856879194210 came back rounded (found by
    ``tests.sql.fuzz``). It is read as DECIMAL(38, 0), exact (Arrow's HUGEINT as DuckDB
    writes it too)."""
    path = tmp_path / "h.csv"
    path.write_text("d,k\n3741256311443541856879194210,1\n-95796942014094137,2\n,3\n9223372036854775808,4\n")
    with bamql.connect(None, device="cpu") as con:
        for sql in (f"SELECT d, k FROM '{path}' ORDER BY k", f"SELECT MAX(d), MIN(d), COUNT(d) FROM '{path}'",
                    f"SELECT k FROM '{path}' WHERE d > 9223372036854775807 ORDER BY k"):
            ours = con.sql(sql).rows()
            assert [tuple(int(v) if v is not None else None for v in r) for r in ours] \
                == duckdb.sql(sql).fetchall(), sql
        typ = con.sql(f"SELECT d FROM '{path}'").to_arrow().schema.field("d").type
        assert str(typ) == "decimal128(38, 0)"
