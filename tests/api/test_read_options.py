"""``read_csv(...)`` and ``read_parquet(...)`` options as DuckDB names them (issue 39): each
option answers as DuckDB's over the same small files and over the real TLC sample CSVs;
an option a reader does not take, or a value of the wrong kind, is a one-line error."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bamql.api.session import Session
from bamql.config import Config
from bamql.errors import BamqlError
from tests.conftest import SAMPLES
from tests.reference import assert_same_rows

TLC = Path(SAMPLES[0]).parent

FILES = {
    "a.csv": "x,y\n1,a\n2,b\n",
    "b.csv": "y,z\nc,3\n",
    "nohdr.csv": "1,a\n2,b\n",
    "pipe.csv": "x|y\n1|a\n2|b\n",
    "semi.csv": "x;y\n1;a\n2;b\n",
    "tab.csv": "x\ty\n1\ta\n2\tb\n",
    "q.csv": "x,y\n1,'a,b'\n2,'c'\n",
    "esc.csv": 'x,y\n1,"a\\"b"\n2,"c"\n',
    "skip.csv": "junk line\nmore junk\nx,y\n1,a\n2,b\n",
    "skipnohdr.csv": "junk\n1,a\n2,b\n",
    "nulls.csv": "x,y\n1,NA\nNA,b\n3,\n",
    "stamps.csv": "t,v\n2024/01/02 03:04:05,1\n2023/12/31 23:59:59,2\n",
    "fn.csv": "filename,x\nq,1\n",
    "wide.csv": "a,b,c\n1,2,3\n4,5,6\n",
}

CASES = [
    # header
    "SELECT * FROM read_csv('{d}/a.csv', header = false)",
    "SELECT * FROM read_csv('{d}/nohdr.csv', header = true)",
    "SELECT * FROM read_csv('{d}/nohdr.csv', header = false)",
    # delim / sep / delimiter
    "SELECT * FROM read_csv('{d}/pipe.csv', delim = '|')",
    "SELECT * FROM read_csv('{d}/semi.csv', sep = ';')",
    "SELECT * FROM read_csv('{d}/tab.csv', delim = '\\t')",
    "SELECT * FROM read_csv('{d}/a.csv', delim = ';')",  # one column 'x,y'
    # quote, escape
    "SELECT * FROM read_csv('{d}/q.csv', quote = '''')",
    "SELECT * FROM read_csv('{d}/esc.csv', escape = '\\')",
    "SELECT * FROM read_csv('{d}/a.csv', quote = '')",
    # skip
    "SELECT * FROM read_csv('{d}/skip.csv', skip = 2)",
    "SELECT * FROM read_csv('{d}/skipnohdr.csv', skip = 1)",
    "SELECT * FROM read_csv('{d}/skipnohdr.csv', skip = 1, header = true)",
    # nullstr
    "SELECT * FROM read_csv('{d}/nulls.csv', nullstr = 'NA')",
    "SELECT * FROM read_csv('{d}/nulls.csv', nullstr = ['NA', ''])",
    "SELECT COUNT(x), COUNT(y) FROM read_csv('{d}/nulls.csv', nullstr = 'NA')",
    # columns
    "SELECT * FROM read_csv('{d}/a.csv', columns = {{'p': 'INTEGER', 'q': 'VARCHAR'}})",
    "SELECT * FROM read_csv('{d}/nohdr.csv', columns = {{'p': 'DOUBLE', 'q': 'VARCHAR'}})",
    "SELECT p + 1 AS p1 FROM read_csv('{d}/a.csv', header = true, columns = {{'p': 'BIGINT', "
    "'q': 'VARCHAR'}}) WHERE q = 'b'",
    # types / dtypes / column_types
    "SELECT * FROM read_csv('{d}/a.csv', types = {{'x': 'VARCHAR'}})",
    "SELECT * FROM read_csv('{d}/a.csv', dtypes = ['DOUBLE', 'VARCHAR'])",
    "SELECT * FROM read_csv('{d}/a.csv', dtypes = ['VARCHAR'])",
    "SELECT * FROM read_csv('{d}/wide.csv', column_types = {{'c': 'DOUBLE'}})",
    # auto_detect
    "SELECT * FROM read_csv('{d}/a.csv', auto_detect = false, columns = {{'x': 'VARCHAR', "
    "'y': 'VARCHAR'}})",
    "SELECT * FROM read_csv('{d}/a.csv', auto_detect = false, header = true, "
    "columns = {{'x': 'BIGINT', 'y': 'VARCHAR'}})",
    # all_varchar
    "SELECT * FROM read_csv('{d}/wide.csv', all_varchar = true)",
    "SELECT * FROM read_csv('{d}/wide.csv', all_varchar = true, types = {{'a': 'BIGINT'}})",
    # timestampformat
    "SELECT * FROM read_csv('{d}/stamps.csv', timestampformat = '%Y/%m/%d %H:%M:%S')",
    # filename
    "SELECT * FROM read_csv('{d}/a.csv', filename = true)",
    "SELECT * FROM read_csv('{d}/a.csv', filename = false)",
    "SELECT x, fn FROM read_csv('{d}/[a]*.csv', filename = 'fn') ORDER BY x",
    # union_by_name (bamql matches columns by name always)
    "SELECT * FROM read_csv(['{d}/a.csv', '{d}/b.csv'], union_by_name = true)",
    "SELECT * FROM read_csv(['{d}/a.csv', '{d}/b.csv'], union_by_name = true, filename = true)",
    "SELECT filename, COUNT(*) FROM read_csv(['{d}/a.csv', '{d}/b.csv'], union_by_name = true, "
    "filename = 1) GROUP BY filename ORDER BY filename",
    # read_csv_auto takes the same options
    "SELECT * FROM read_csv_auto('{d}/semi.csv', delim = ';', header = true)",
]


@pytest.fixture(scope="module")
def d(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("opts")
    for name, text in FILES.items():
        (root / name).write_text(text)
    pq.write_table(pa.table({"a": [1, 2], "b": [b"xy", None]}), root / "bin.parquet")
    pq.write_table(pa.table({"a": [1], "c": [2]}), root / "p1.parquet")
    pq.write_table(pa.table({"a": [5], "d": [6]}), root / "p3.parquet")
    (root / "hive" / "k=1").mkdir(parents=True)
    (root / "hive" / "k=2").mkdir(parents=True)
    pq.write_table(pa.table({"a": [1, 2]}), root / "hive" / "k=1" / "f.parquet")
    pq.write_table(pa.table({"a": [3]}), root / "hive" / "k=2" / "f.parquet")
    return root


def _same(session, sql: str) -> None:
    """``sql`` answers as in DuckDB: the same column names and rows (in order)."""
    ours = session.sql(sql).to_arrow()
    ref = duckdb.sql(sql)
    if not sql.startswith("SELECT COUNT") and "GROUP BY" not in sql:
        assert ours.column_names == ref.columns, (ours.column_names, ref.columns)
    ordered = "ORDER BY" in sql or " ORDER" not in sql  # one file: rows in file order
    assert_same_rows([tuple(r.values()) for r in ours.to_pylist()], ref.fetchall(), ordered)


@pytest.mark.parametrize("case", CASES)
def test_read_csv_options_answer_as_duckdb(session, d, case):
    _same(session, case.format(d=d))


def test_types_of_the_options_are_duckdbs(session, d):
    """The types the options give are DuckDB's (BIGINT for its INTEGER: bamql's integers
    are BIGINT), through DESCRIBE and in the Arrow answer."""
    sql = (f"SELECT * FROM read_csv('{d}/wide.csv', types = {{'a': 'VARCHAR', 'b': 'DOUBLE'}}, "
           "filename = true)")
    got = session.sql(sql).to_arrow().schema
    assert got.types == [pa.string(), pa.float64(), pa.int64(), pa.string()]
    ours = session.sql(f"DESCRIBE {sql}").to_arrow().to_pylist()
    ref = duckdb.sql(f"DESCRIBE {sql}").fetchall()
    assert [(r["column_name"], r["column_type"]) for r in ours] == [r[:2] for r in ref]


@pytest.mark.parametrize("case", [
    "SELECT * FROM read_parquet('{d}/bin.parquet', binary_as_string = true)",
    "SELECT a, filename FROM read_parquet('{d}/p1.parquet', filename = true)",
    "SELECT * FROM read_parquet(['{d}/p1.parquet', '{d}/p3.parquet'], union_by_name = true)",
    "SELECT * FROM read_parquet(['{d}/p1.parquet', '{d}/p3.parquet'], union_by_name = true, "
    "filename = 'f') ORDER BY a",
    "SELECT * FROM read_parquet('{d}/hive/*/*.parquet', filename = true, "
    "hive_partitioning = true) ORDER BY a",
    "SELECT k, COUNT(*) FROM read_parquet('{d}/hive/*/*.parquet', hive_partitioning = 1, "
    "binary_as_string = false) GROUP BY k ORDER BY k",
])
def test_read_parquet_options_answer_as_duckdb(session, d, case):
    _same(session, case.format(d=d))


# -- the real TLC sample -------------------------------------------------------------------
_TLC_COLUMNS = (
    "{'vendor_id': 'INTEGER', 'pickup_datetime': 'TIMESTAMP', 'dropoff_datetime': 'TIMESTAMP', "
    "'passenger_count': 'INTEGER', 'trip_distance': 'DOUBLE', 'rate_code_id': 'INTEGER', "
    "'store_and_fwd_flag': 'VARCHAR', 'pickup_location_id': 'INTEGER', "
    "'dropoff_location_id': 'INTEGER', 'payment_type': 'VARCHAR', 'fare_amount': 'DOUBLE', "
    "'extra': 'DOUBLE', 'mta_tax': 'DOUBLE', 'tip_amount': 'DOUBLE', 'tolls_amount': 'DOUBLE', "
    "'improvement_surcharge': 'DOUBLE', 'total_amount': 'DOUBLE', 'congestion_surcharge': 'DOUBLE'}")


@pytest.mark.parametrize("case", [
    "SELECT fn, COUNT(*), SUM(total_amount) FROM read_csv('{t}/yellow_tripdata_sample_2019-0*.csv', "
    "filename = 'fn') GROUP BY fn ORDER BY fn",
    "SELECT payment_type, COUNT(*), AVG(fare_amount) FROM read_csv("
    "'{t}/yellow_tripdata_sample_2019-01.csv', types = {{'payment_type': 'VARCHAR'}}) "
    "GROUP BY payment_type ORDER BY payment_type",
    "SELECT vendor_id, COUNT(*), SUM(fare_amount) FROM read_csv("
    "'{t}/yellow_tripdata_sample_2019-02.csv', skip = 1, header = false, columns = " + _TLC_COLUMNS
    + ") GROUP BY vendor_id ORDER BY vendor_id",
    "SELECT COUNT(*), MAX(pickup_datetime) FROM read_csv('{t}/yellow_tripdata_sample_2019-01.csv', "
    "auto_detect = false, header = true, delim = ',', quote = '\"', columns = " + _TLC_COLUMNS + ")",
    "SELECT COUNT(*), COUNT(column01), MIN(column00) FROM read_csv("
    "'{t}/yellow_tripdata_sample_2019-01.csv', header = false, all_varchar = true)",
    "SELECT borough, COUNT(*), COUNT(zone) FROM read_csv('{t}/taxi_zone_lookup.csv', "
    "nullstr = ['NA', 'Unknown'], header = true) GROUP BY borough ORDER BY borough",
    "SELECT COUNT(*), SUM(location_id) FROM read_csv('{t}/taxi_zone_lookup.csv', "
    "dtypes = ['DOUBLE'], escape = '\"', union_by_name = true)",
])
def test_options_over_the_tlc_sample(session, case):
    _same(session, case.replace("{t}", str(TLC)).replace("{{", "{").replace("}}", "}"))


def test_one_file_read_with_other_options_is_another_table(tmp_path, d):
    """The options are part of what identifies the table that serves the files: the same
    file read with and without a header, in one session, in place and through the cache."""
    for cache in (False, True):
        s = Session(config=Config(device="cpu", file_cache=tmp_path / f"c{cache}",
                                  cache_files=cache))
        try:
            for sql in (f"SELECT COUNT(*) FROM read_csv('{d}/a.csv', header = false)",
                        f"SELECT COUNT(*) FROM read_csv('{d}/a.csv')",
                        f"SELECT COUNT(*) FROM read_csv('{d}/a.csv', header = false)",
                        f"SELECT * FROM read_csv('{d}/a.csv', filename = true)",
                        f"SELECT * FROM read_csv('{d}/./a.csv', filename = true)"):
                assert s.sql(sql).rows() == duckdb.sql(sql).fetchall(), (cache, sql)
        finally:
            s.close()


@pytest.mark.parametrize("case, text", [
    ("read_csv('{d}/a.csv', bogus = 1, zap = 2)", "read_csv() does not take the options bogus, zap"),
    ("read_parquet('{d}/p1.parquet', header = true)", "read_parquet() does not take the option header"),
    ("read_csv('{d}/a.csv', header = 'maybe')", "header takes true or false"),
    ("read_csv('{d}/a.csv', skip = -1)", "skip takes a whole number"),
    ("read_csv('{d}/a.csv', delim = 'ab')", "delim takes one character"),
    ("read_csv('{d}/a.csv', delim = ',', sep = ',')", "are the same option"),
    ("read_csv('{d}/a.csv', header = true, header = false)", "given twice"),
    ("read_csv('{d}/a.csv', columns = 'x')", "columns takes a struct"),
    ("read_csv('{d}/a.csv', types = {{'x': 'NOSUCHTYPE'}})", "names a type that is not one"),
    ("read_csv('{d}/a.csv', types = {{'q': 'VARCHAR'}})", "types of columns that a.csv does not "
     "have: q"),
    ("read_csv('{d}/a.csv', dtypes = ['VARCHAR', 'VARCHAR', 'VARCHAR'])", "3 types were provided"),
    ("read_csv('{d}/a.csv', auto_detect = false)", "needs the columns option"),
    ("read_csv('{d}/a.csv', dateformat = '%d/%m/%Y')",
     "dateformat (a DATE column's format) is not supported"),
    ("read_csv('{d}/fn.csv', filename = true)", "adds column 'filename', but fn.csv has"),
    ("read_csv('{d}/a.csv', nullstr = 1)", "nullstr takes a quoted text"),
])
def test_bad_options_are_one_line_errors(session, d, case, text):
    with pytest.raises(BamqlError) as e:
        session.sql(f"SELECT * FROM {case.format(d=d)}")
    assert text in str(e.value) and "\n" not in str(e.value)


def test_a_csv_column_typed_date_is_a_date(session, tmp_path):
    """``types``/``columns`` naming DATE read the column as DuckDB does (it was refused:
    bamql stored no DATE)."""
    import duckdb

    (tmp_path / "dd.csv").write_text("a,d\n1,2019-01-05\n2,\n3,1969-12-31\n")
    for opt in ("types = {{'d': 'DATE'}}", "columns = {{'a': 'BIGINT', 'd': 'DATE'}}, header = true"):
        sql = f"SELECT a, d FROM read_csv('{tmp_path}/dd.csv', {opt.format()}) ORDER BY a"
        ours, ref = session.sql(sql).to_arrow(), duckdb.sql(sql).to_arrow_table()
        assert ours.schema.types == ref.schema.types and ours.to_pylist() == ref.to_pylist()
