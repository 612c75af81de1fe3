"""The RAPIDS baselines' programs (``bench.rapids`` on one GPU, ``bench.daskcudf`` on a
Dask cluster) answer every benchmark query as DuckDB does. cuDF is pandas-like: here pandas
stands in for it (and NumPy for CuPy), so the programs' logic is checked on any machine;
the device runs them on cuDF itself (``bamql bench``, ``bamql bench-scaleout``)."""

from __future__ import annotations

import sys
import types

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.orc as po
import pytest

from bamql.bench.harness import same_rows
from bamql.datasets.generator import GenParams
from bamql.datasets.orc import generate_orc
from bamql.queries import load
from bamql.sql.translate import translate
from bamql.storage.ingest import ingest
from bamql.storage.store import PageStore

QUERIES = ["q01", "q02", "q03", "q04", "q05", "q06", "t01", "t02", "t03", "t04", "h01", "h02",
           "k01", "d01", "g01", "u01"]


class _Series(pd.Series):
    @property
    def _constructor(self):
        return _Series

    @property
    def _constructor_expanddim(self):
        return _Frame

    def to_arrow(self):
        return pa.array(pd.Series(self))

    def round(self, decimals=0, how=None):  # cuDF's HALF_UP: halves away from zero
        v, m = np.asarray(self, dtype=float), 10.0 ** decimals
        return _Series(np.sign(v) * np.floor(np.abs(v) * m + 0.5) / m, index=self.index)


class _Frame(pd.DataFrame):
    _constructor_sliced = _Series

    @property
    def _constructor(self):
        return _Frame

    def to_arrow(self):
        return pa.Table.from_pandas(pd.DataFrame(self), preserve_index=False)


class _NoArray:  # dask registers cupy.ndarray as a chunk type
    pass


@pytest.fixture
def fake_cudf(monkeypatch):
    monkeypatch.setitem(sys.modules, "cudf", types.SimpleNamespace(DataFrame=_Frame, Series=_Series))
    monkeypatch.setitem(sys.modules, "cupy",
                        types.SimpleNamespace(ones=np.ones, full=np.full, ndarray=_NoArray))


@pytest.fixture(scope="module")
def trips(tmp_path_factory):
    d = tmp_path_factory.mktemp("trips")
    r = generate_orc(d / "orc", GenParams(rows=20_000, seed=3), workers=1)
    ingest(r.files, d / "s" / "trips")
    table = pa.concat_tables([po.read_table(str(f)) for f in r.files])
    with PageStore(d / "s" / "trips") as s:
        cat = {"trips": s.columns}
    return table, cat


def _reference(table: pa.Table, sql: str) -> list[tuple]:
    con = duckdb.connect()
    con.register("trips", table)
    return con.sql(sql).fetchall()


@pytest.mark.parametrize("qn", QUERIES)
def test_the_cudf_program_answers_as_duckdb(fake_cudf, trips, qn):
    from bamql.bench.rapids import run_query

    table, cat = trips
    sql = load(qn)
    got = run_query(_Frame(table.to_pandas()), translate(sql, cat))
    assert same_rows(got, _reference(table, sql)), qn


@pytest.mark.parametrize("qn", [q for q in QUERIES if q != "t04"])  # t04: cuDF's round(how=)
def test_the_dask_cudf_program_answers_as_duckdb(fake_cudf, trips, qn):
    dd = pytest.importorskip("dask.dataframe")
    import dask

    from bamql.bench.daskcudf import run_query

    table, cat = trips
    sql = load(qn)
    with dask.config.set({"dataframe.convert-string": False, "scheduler": "sync"}):
        ddf = dd.from_pandas(table.to_pandas(), npartitions=4).map_partitions(_Frame)
        got = run_query(ddf, translate(sql, cat))
    assert same_rows(got, _reference(table, sql)), qn
