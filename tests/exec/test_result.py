"""Results flow into the PyData world: Arrow's PyCapsule stream (pyarrow, DuckDB, polars),
NumPy, DuckDB-style fetch*, and an HTML table for notebooks."""

from __future__ import annotations

import sys

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pytest

import bamql
from bamql.errors import UsageError
from bamql.exec.result import Result
from tests.conftest import SAMPLES
from tests.reference import assert_same_rows, normalize

#: ordered, with NULLs (groups whose surcharges are all NULL) and several types
SQL = ("SELECT payment_type, COUNT(*) AS n, SUM(fare_amount) AS fares, "
       "MAX(pickup_datetime) AS last, MIN(store_and_fwd_flag) AS flag, "
       "MAX(congestion_surcharge) AS surcharge FROM trips "
       "WHERE congestion_surcharge IS NULL OR payment_type = 1 "
       "GROUP BY payment_type ORDER BY payment_type")


@pytest.fixture(scope="module")
def con(sample_store):
    with bamql.connect(sample_store, device="cpu") as c:
        yield c


@pytest.fixture(scope="module")
def duck():
    c = duckdb.connect()
    c.register("trips", normalize(pa.concat_tables(pacsv.read_csv(p) for p in SAMPLES)))
    return c


def _buffers(t: pa.Table) -> list[int]:
    return [b.address for c in t.columns for ch in c.chunks for b in ch.buffers() if b is not None]


def test_pyarrow_reads_the_capsule_without_a_copy(con):
    res = con.sql(SQL)
    t = pa.table(res)
    assert t.equals(res.table) and _buffers(t) == _buffers(res.table)
    assert pa.schema(res) == res.table.schema  # __arrow_c_schema__
    reader = pa.RecordBatchReader.from_stream(res)
    assert reader.read_all().equals(res.table)


def test_duckdb_queries_a_result_by_its_name(con, duck):
    res = con.sql(SQL)
    assert res.table.column("surcharge").null_count > 0  # the NULLs travel too
    assert duckdb.sql("SELECT * FROM res").fetchall() == res.rows()
    assert_same_rows(duckdb.sql("SELECT * FROM res").fetchall(), duck.sql(SQL).fetchall(),
                     ordered=True)
    again = duckdb.sql("SELECT SUM(n) FROM res WHERE flag = 'N'").fetchall()[0][0]
    assert again == sum(r[1] for r in res.rows() if r[4] == "N")


def test_polars_reads_the_capsule(con):
    pl = pytest.importorskip("polars")
    res = con.sql(SQL)
    df = pl.DataFrame(res)  # polars makes its strings large_string: compare values
    assert df.columns == res.columns and df.rows() == res.rows()
    assert df.schema["surcharge"] == pl.Float64 and df["surcharge"].null_count() > 0
    assert res.to_polars().rows() == res.rows()


def test_to_polars_without_polars_is_one_line(con, monkeypatch):
    monkeypatch.setitem(sys.modules, "polars", None)  # import polars now fails
    with pytest.raises(UsageError, match=r"^polars is not installed; pip install polars$"):
        con.sql(SQL).to_polars()


def test_fetch_moves_a_cursor_as_duckdb_does(con, duck):
    res, ref = con.sql(SQL), duck.execute(SQL)
    assert len(res) >= 4
    assert_same_rows([res.fetchone()], [ref.fetchone()], ordered=True)
    assert_same_rows(res.fetchmany(2), ref.fetchmany(2), ordered=True)
    assert_same_rows(res.fetchall(), ref.fetchall(), ordered=True)
    assert res.fetchone() is None and ref.fetchone() is None
    assert res.fetchall() == ref.fetchall() == [] and res.fetchmany(3) == []
    # iteration and rows() see every row, wherever the cursor is
    assert list(res) == res.rows() and len(res.rows()) == len(res)
    with pytest.raises(UsageError, match="row count"):
        res.fetchmany(-1)


def test_to_numpy_matches_duckdb_fetchnumpy(con, duck):
    ours, ref = con.sql(SQL).to_numpy(), duck.execute(SQL).fetchnumpy()
    assert list(ours) == list(ref)
    for name in ours:
        a, b = ours[name], ref[name]
        assert np.array_equal(np.ma.getmaskarray(a), np.ma.getmaskarray(b)), name
        ok = ~np.ma.getmaskarray(a)
        va, vb = np.ma.getdata(a)[ok], np.ma.getdata(b)[ok]
        if va.dtype.kind == "f":
            assert np.allclose(va, vb.astype(float)), name
        elif va.dtype.kind == "M":
            assert np.array_equal(va.astype("datetime64[us]"), vb.astype("datetime64[us]")), name
        else:
            assert list(va) == list(vb), name
    assert isinstance(ours["surcharge"], np.ma.MaskedArray)
    assert not isinstance(ours["n"], np.ma.MaskedArray) and ours["n"].dtype == np.int64


def test_columns_shape_len_and_an_empty_result(con):
    res = con.sql(SQL)
    assert res.columns == ["payment_type", "n", "fares", "last", "flag", "surcharge"]
    assert res.shape == (res.table.num_rows, 6)
    empty = con.sql("SELECT payment_type, COUNT(*) FROM trips WHERE fare_amount > 1e9 "
                    "GROUP BY payment_type")
    assert len(empty) == 0 and empty.shape == (0, 2) and bool(empty)
    assert empty.fetchone() is None and empty.fetchall() == [] and list(empty) == []
    assert pa.table(empty).num_rows == 0 and duckdb.sql("SELECT * FROM empty").fetchall() == []


def test_explain_results_are_results(con):
    res = con.sql("EXPLAIN " + SQL)
    assert res.is_explain and res.columns == ["explain"]
    lines = [r[0] for r in res.fetchall()]
    assert lines == res.plan_text.splitlines() and pa.table(res).num_rows == len(lines)
    assert res._repr_html_().startswith("<pre>") and "Aggregate over trips" in res._repr_html_()


def test_html_is_escaped_and_cut(con):
    res = Result(pa.table({"<b>a&b</b>": ["<script>x</script>", None, "ok"],
                           "n": [1, 2, None]}), None, "")
    page = res._repr_html_()
    assert "<script>" not in page and "&lt;script&gt;x&lt;/script&gt;" in page
    assert "<th>&lt;b&gt;a&amp;b&lt;/b&gt;</th>" in page and "<td>NULL</td>" in page
    assert "3 rows" in page
    many = con.sql("SELECT pickup_location_id, COUNT(*) FROM trips GROUP BY 1 ORDER BY 1")
    page = many._repr_html_(max_rows=10)
    assert page.count("<tr>") == 11  # the header and ten rows
    assert f"… {len(many) - 10:,} more rows ({len(many):,} in all)" in page


def test_duckdbs_names_for_the_conversions(con, duck, capsys):
    res = con.sql(SQL)
    assert res.arrow().equals(res.to_arrow())
    want = duck.sql(SQL).fetchall()
    assert_same_rows([tuple(r.values()) for r in res.arrow().to_pylist()], want, ordered=True)
    df = res.df()  # pandas, as DuckDB's .df()
    assert list(df.columns) == res.arrow().column_names and len(df) == len(want)
    assert df["n"].tolist() == [r[1] for r in want]
    res.show()  # prints the table, as DuckDB's .show()
    out = capsys.readouterr().out
    assert out.strip() == str(res).strip() and "payment_type" in out
    pl = pytest.importorskip("polars")
    frame = res.pl()
    assert isinstance(frame, pl.DataFrame) and frame.rows() == res.rows()
