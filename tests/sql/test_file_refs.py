"""Files named in FROM are found in the SQL and bound to table names; tables are left alone."""

from __future__ import annotations

import dataclasses
from decimal import Decimal

import pytest

from bamql.errors import PlanError
from bamql.sql.file_refs import FileRef, bind_files
from bamql.storage.files import FileFormat


def _bind(sql: str, tables=("trips",)) -> tuple[str, list[FileRef]]:
    refs: list[FileRef] = []

    def name(ref: FileRef) -> str:
        refs.append(ref)
        return f"t{len(refs)}"

    return bind_files(sql, tables, name), refs


@pytest.mark.parametrize("sql, ref", [
    ("SELECT COUNT(*) FROM 'x/*.parquet'", FileRef(("x/*.parquet",))),
    ("SELECT COUNT(*) FROM \"data/\" AS d", FileRef(("data/",))),
    ("SELECT COUNT(*) FROM 'a.csv'", FileRef(("a.csv",))),
    ("SELECT COUNT(*) FROM read_parquet('a.pq')", FileRef(("a.pq",), FileFormat.PARQUET)),
    ("SELECT COUNT(*) FROM read_parquet(['a.parquet', 'b.parquet'])",
     FileRef(("a.parquet", "b.parquet"), FileFormat.PARQUET)),
    ("SELECT COUNT(*) FROM read_csv('a.csv')", FileRef(("a.csv",), FileFormat.CSV)),
    ("SELECT COUNT(*) FROM read_orc('a.orc')", FileRef(("a.orc",), FileFormat.ORC)),
    ("SELECT COUNT(*) FROM 's3://b/x.parquet'", FileRef(("s3://b/x.parquet",))),
])
def test_files_in_from_are_bound(sql, ref):
    text, refs = _bind(sql)
    # the names the statement mentions (what is read of the files) are tested with them
    assert [dataclasses.replace(r, names=None) for r in refs] == [ref]
    assert isinstance(refs[0].names, frozenset)
    assert "FROM t1" in text and "'" not in text.split("FROM")[1]


@pytest.mark.parametrize("sql", ["SELECT COUNT(*) FROM trips", "SELECT COUNT(*) FROM \"trips\"",
                                 "SELECT COUNT(*) FROM other", "SELEC nonsense"])
def test_tables_and_unparsable_text_are_left_as_they_are(sql):
    assert _bind(sql) == (sql, [])


def test_a_table_named_like_a_file_stays_a_table():
    assert _bind("SELECT COUNT(*) FROM \"x.csv\"", tables=("x.csv",)) == (
        "SELECT COUNT(*) FROM \"x.csv\"", [])


@pytest.mark.parametrize("sql, text", [
    ("SELECT COUNT(*) FROM read_json('x.json')", "read_json() is not supported"),
    ("SELECT COUNT(*) FROM read_parquet('x.parquet', header=true, bogus=1)",
     "read_parquet() does not take the options header, bogus"),
    ("SELECT COUNT(*) FROM read_csv(x)", "quoted path"),
    ("SELECT COUNT(*) FROM read_parquet([])", "quoted path"),
])
def test_what_bamql_cannot_read_is_one_line(sql, text):
    with pytest.raises(PlanError, match=text.replace("(", r"\(").replace(")", r"\)")):
        _bind(sql)


@pytest.mark.parametrize("where, want", [
    ("yr = 2019 AND zone IN ('03', 'x')", [("yr", "=", (2019,)), ("zone", "in", ("03", "x"))]),
    ("2019 < yr AND f.k IS NULL AND NOT m IS NULL",
     [("yr", ">", (2019,)), ("k", "is null", ()), ("m", "is not null", ())]),
    # a decimal literal is a Decimal (partition keys, BIGINT or VARCHAR, ignore it)
    ("yr BETWEEN -1 AND 3 AND v > 1.5 AND z = 'a' || 'b'",
     [("yr", ">=", (-1,)), ("yr", "<=", (3,)), ("v", ">", (Decimal("1.5"),))]),
    ("yr = 2019 OR zone = 'x'", []),  # not a conjunct of one column
    ("g.yr = 1", []),  # another table's column
])
def test_partition_filters_are_where_conjuncts_on_one_column(where, want):
    from sqlglot import exp, parse_one

    from bamql.sql.file_refs import partition_filters

    t = parse_one(f"SELECT COUNT(*) FROM 'd/*.parquet' AS f WHERE {where}",
                  dialect="duckdb").find(exp.Table)
    assert [(f.column, str(f.op), f.values) for f in partition_filters(t)] == want


def test_no_partition_filters_through_joins_or_aliases():
    from sqlglot import exp, parse_one

    from bamql.sql.file_refs import partition_filters

    for q in ("SELECT COUNT(*) FROM 'd/*.parquet' JOIN z ON a = b WHERE yr = 1",
              "SELECT v AS yr FROM 'd/*.parquet' WHERE yr = 1"):
        assert partition_filters(parse_one(q, dialect="duckdb").find(exp.Table)) == ()
