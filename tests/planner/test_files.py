"""Files named in FROM are found in the SQL and bound to table names; tables are left alone."""

from __future__ import annotations

import pytest

from bamql.errors import PlanError
from bamql.planner.files import FileRef, bind_files
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
    assert refs == [ref]
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
    ("SELECT COUNT(*) FROM read_parquet('x.parquet', union_by_name=true)", "takes no options"),
    ("SELECT COUNT(*) FROM read_csv(x)", "quoted path"),
    ("SELECT COUNT(*) FROM read_parquet([])", "quoted path"),
])
def test_what_bamql_cannot_read_is_one_line(sql, text):
    with pytest.raises(PlanError, match=text.replace("(", r"\(").replace(")", r"\)")):
        _bind(sql)
