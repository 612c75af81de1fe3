"""String tests on dictionary codes: the matcher against DuckDB's own LIKE/ILIKE/
starts_with/ends_with/contains on the same strings, and the code conditions under SQL's
three-valued logic. Whole queries are checked against DuckDB in tests/sql/strings_like.sql
and tests/sql/hostile_strings.sql."""

from __future__ import annotations

import itertools

import duckdb
import numpy as np
import pytest

from bamql.errors import PlanError
from bamql.fused import ir
from bamql.fused.evaluate import evaluate
from bamql.likes import fold, like_matcher
from bamql.sql.strings import codes_condition
from bamql.sql.translate import translate
from bamql.storage.format import ColumnMeta

STRINGS = ["", "a", "A", "ab", "aB", "a%", "a_b", "a\\b", "a\nb", "abc", "b", "é", "e\u0301",
           "É", "ß", "SS", "ẞ", "日本", "🚕", "naïve", "Ωmega", "ωMEGA", "ΣΑΣ", "σας", "İ", "i",
           "ǅ", "ǆ", "\u212a", "k", "ﬀ", "ＡＢ", "ａｂ", "%", "_", "\\"]
PATTERNS = ["", "%", "_", "__", "a%", "%b", "%a%", "a_b", "a\\%", "a\\_b", "\\\\", "%\\%",
            "A%", "É", "e_", "SS", "ß", "σασ", "i", "ǅ", "K", "ωmega", "日_", "%🚕%", "a%%b",
            "%_%", "_%_"]


@pytest.fixture(scope="module")
def db():
    con = duckdb.connect()
    yield con
    con.close()


def _duck(db, sql: str, *args) -> bool:
    return db.execute(sql, list(args)).fetchone()[0]


@pytest.mark.parametrize("op", ["LIKE", "ILIKE"])
def test_like_matches_duckdb(db, op):
    for s, p in itertools.product(STRINGS, PATTERNS):
        ours = like_matcher(p, None, op == "ILIKE")(s)
        assert ours == _duck(db, f"SELECT ? {op} ?", s, p), (s, p, op)


@pytest.mark.parametrize("escape", ["\\", "!", "a"])
def test_like_with_an_escape_matches_duckdb(db, escape):
    pats = [p.replace("\\", escape) for p in PATTERNS] + [f"a{escape}b", f"{escape}{escape}"]
    for s, p in itertools.product(STRINGS, pats):
        if p.replace(escape * 2, "").endswith(escape):
            continue
        for fold_ in (False, True):
            op = "ILIKE" if fold_ else "LIKE"
            ours = like_matcher(p, escape, fold_)(s)
            assert ours == _duck(db, f"SELECT ? {op} ? ESCAPE ?", s, p, escape), (s, p, op)


def test_a_pattern_ending_in_its_escape_is_refused_as_duckdb_refuses_it(db):
    with pytest.raises(ValueError, match="escape"):
        like_matcher("a!", "!")
    with pytest.raises(duckdb.Error):
        db.execute("SELECT 'a' LIKE 'a!' ESCAPE '!'")


@pytest.mark.parametrize("func", ["starts_with", "ends_with", "contains"])
def test_string_functions_match_duckdb(db, func):
    test = {"starts_with": str.startswith, "ends_with": str.endswith,
            "contains": lambda s, x: x in s}[func]
    for s, x in itertools.product(STRINGS, ["", "a", "b", "ab", "é", "🚕", "%"]):
        assert test(s, x) == _duck(db, f"SELECT {func}(?, ?)", s, x), (func, s, x)


def test_fold_lowers_each_code_point_alone():
    assert fold("ΣΑΣ") == "σασ"  # no final sigma
    assert fold("İ") == "i"  # one code point, not two
    assert len(fold("".join(STRINGS))) == len("".join(STRINGS))


@pytest.mark.parametrize("size", [0, 1, 2, 5, 9])
def test_code_conditions_are_membership_and_null_on_null(size):
    col = ir.Col("s", "string")
    codes = np.append(np.arange(size), [0]) if size else np.zeros(1, np.int64)
    valid = np.append(np.ones(size, bool), False)
    n = len(codes)
    for r in range(size + 1):
        for chosen in itertools.combinations(range(size), r):
            e = codes_condition(col, list(chosen), size)
            v, ok = evaluate(e, {"s": (codes, valid)}, n)
            assert not ok[-1], (chosen, e)  # NULL on NULL
            assert list(np.asarray(v, bool)[:-1]) == [i in chosen for i in range(size)], (chosen, e)
            nv, nok = evaluate(ir.Not(e), {"s": (codes, valid)}, n)
            assert not nok[-1] and list(np.asarray(nv, bool)[:-1]) == [i not in chosen for i in range(size)]


def test_a_prefix_is_a_list_or_a_range_of_codes():
    d = ("Astoria", "Bay Ridge", "Williamsburg (North Side)", "Williamsburg (South Side)", "Yorkville")
    cols = {"trips": {"zone": ColumnMeta("zone", "string", "int8", 0, 1, 512, dictionary=d)}}
    q = translate("SELECT COUNT(*) FROM trips WHERE zone LIKE 'Williamsburg%'", cols)
    z = ir.Col("zone", "string")
    assert q.predicate == ir.InList(z, (ir.Lit(2, "string"), ir.Lit(3, "string")))
    q = translate("SELECT COUNT(*) FROM trips WHERE zone NOT LIKE '%a%'", cols)
    assert q.predicate == ir.Cmp("=", z, ir.Lit(4, "string"))
    many = tuple(f"w{i:03}" for i in range(100))
    cols = {"trips": {"zone": ColumnMeta("zone", "string", "int8", 0, 1, 512,
                                         dictionary=("a", *many, "z"))}}
    q = translate("SELECT COUNT(*) FROM trips WHERE zone LIKE 'w%'", cols)
    assert q.predicate == ir.And((ir.Cmp(">=", z, ir.Lit(1, "string")),
                                  ir.Cmp("<=", z, ir.Lit(100, "string"))))


@pytest.mark.parametrize("sql, text", [
    ("SELECT COUNT(*) FROM trips WHERE zone LIKE zone", "LIKE of a pattern that is not a constant"),
    ("SELECT COUNT(*) FROM trips WHERE n LIKE '1%'", "LIKE needs a string column; n is an int value"),
    ("SELECT COUNT(*) FROM trips WHERE 'a' ILIKE 'a'", "ILIKE of a string constant"),
    ("SELECT COUNT(*) FROM trips WHERE zone LIKE 'a' ESCAPE 'ab'", "ESCAPE takes one character"),
    ("SELECT COUNT(*) FROM trips WHERE zone LIKE 'a!' ESCAPE '!'", "must not end with its escape"),
    ("SELECT COUNT(*) FROM trips WHERE zone LIKE ANY ('a', 'b')", "LIKE ANY/ALL"),
    ("SELECT COUNT(*) FROM trips WHERE contains(zone, n)", "contains() takes a string constant"),
    ("SELECT COUNT(*) FROM trips WHERE prefix(zone)", "starts_with() takes"),
    ("SELECT COUNT(*) FROM trips WHERE n IN (SELECT n FROM trips)", "registered tables only"),
])
def test_what_string_tests_refuse(sql, text):
    cols = {"trips": {"zone": ColumnMeta("zone", "string", "int8", 0, 1, 512, dictionary=("a", "b")),
                      "n": ColumnMeta("n", "int", "int64", 0, 1, 512, min=0, max=9)}}
    with pytest.raises(PlanError) as e:
        translate(sql, cols)
    assert text in str(e.value) and "\n" not in str(e.value)
