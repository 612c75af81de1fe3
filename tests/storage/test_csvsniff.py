"""CSV dialect sniffing (``storage.csvsniff``): the delimiter and the header as DuckDB's
``read_csv`` finds them, and files read in place that answer as DuckDB does over them."""

from __future__ import annotations

import duckdb
import pytest

from bamql.storage.csvsniff import Dialect, sniff

FILES = {
    "no_header.csv": "1,2\n3,4\n",  # a first row of numbers is data: no row is lost
    "semicolons.csv": "a;b\n1;2\n3;4\n",
    "pipes.csv": "x|y\n1|hello\n2|world\n",
    "quoted.csv": '"name","v"\n"a,b",1\n"c",2\n',
    "header.csv": "a,b\n1,x\n2,y\n",
    "all_text.csv": "a,b\nx,y\n",
    "one_row.csv": "1,2\n",
    "header_only.csv": "a,b\n",
    "empty_fields.csv": "id,v\n1,2.5\n2,\n",
    "semicolons_no_header.csv": "1;2.5\n3;4.5\n",
    # found by an attack on the sniffer: values of other types than numbers, names that
    # Python's float() reads, spaces around names
    "timestamps_no_header.csv": "2024-01-01 00:00:00,abc\n2024-01-02 00:00:00,def\n",
    "booleans_no_header.csv": "true,abc\nfalse,def\n",
    "nan_inf_names.csv": "nan,inf\n1,2\n3,4\n",
    "underscore_name.csv": "1_0,2\n3,4\n5,6\n",
    # an infinity over doubles is a value (its row was lost as a header), over integers a name
    "infinity_no_header.csv": "inf\n1.5\n2.5\n",
    "infinities_no_header.csv": "-Infinity,a\n1.5,b\nINF,c\n",
    "infinity_over_integers.csv": "inf\n1\n2\n",
    # one row: a header only where every field is text ('t' is a BOOLEAN, '' a NULL)
    "one_row_boolean_word.csv": "e,k,t\n",
    "one_row_empty_field.csv": "a,,b\n",
    "one_row_names.csv": "e,k,s\n",
    # DuckDB's BOOLEAN words: t/f, yes/no in any of the usual cases
    "boolean_words.csv": "x,y\nf,yes\nT,No\n",
    # columns of text only: the first row is a header whatever it looks like
    "text_under_a_boolean_word.csv": "t\na\nb\n",
    "text_under_a_number.csv": "1\na\nb\n",
    # an empty field of a first row is a NULL, not a name (a header-less file whose first
    # row had one lost that row as a header of two '' names); an empty name is column<i>
    "empty_field_first_row_no_header.csv": "x,,1\ny,5,2\nz,6,3\n",
    "empty_names.csv": ",a\n0,1\n1,2\n",
    "empty_header_row.csv": ",,\n1,2,3\n4,5,6\n",
    "spaced_names.csv": "a, b\n1,2\n",
    # DuckDB pads the names of eleven columns or more: column00 .. column10
    "eleven_no_header.csv": ",".join(map(str, range(11))) + "\n" + ",".join("1" * 11) + "\n",
}


def test_the_dialect_of_each_layout():
    assert sniff(FILES["no_header.csv"].encode()) == Dialect(",", False, 2)
    assert sniff(FILES["semicolons.csv"].encode()) == Dialect(";", True, 2, ("a", "b"))
    assert sniff(FILES["pipes.csv"].encode()).delimiter == "|"
    assert sniff(FILES["quoted.csv"].encode()) == Dialect(",", True, 2, ("name", "v"))
    assert sniff(FILES["all_text.csv"].encode()).header
    assert not sniff(FILES["one_row.csv"].encode()).header
    assert sniff(b"") == Dialect()
    assert Dialect(",", False, 3).column_names() == ["column0", "column1", "column2"]


@pytest.mark.parametrize("name", sorted(FILES))
def test_files_in_place_answer_as_duckdb(session, tmp_path, name):
    path = tmp_path / name
    path.write_text(FILES[name])
    sql = f"SELECT * FROM '{path}'"
    ours = session.sql(sql)
    ref = duckdb.sql(sql)
    assert ours.to_arrow().column_names == ref.columns
    assert ours.rows() == ref.fetchall()
