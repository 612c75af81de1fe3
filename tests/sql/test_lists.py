"""Long integer IN lists are cut out of the SQL text before parsing, and only those."""

from __future__ import annotations

from bamql.sql.lists import MIN_VALUES, lift


def _ids(n: int, start: int = 0) -> str:
    return ", ".join(str(v) for v in range(start, start + n))


def test_a_long_integer_list_is_lifted_and_positions_stay():
    sql = f"SELECT COUNT(*) FROM t WHERE a IN ({_ids(MIN_VALUES)}) AND b IN (-3, +4)"
    text, lists = lift(sql)
    assert len(text) == len(sql)
    assert text.endswith("AND b IN (-3, +4)")
    (name, vals), = lists.items()
    assert vals == list(range(MIN_VALUES)) and name in text


def test_short_lists_strings_comments_and_decimals_are_left_alone():
    long_ids = _ids(MIN_VALUES)
    for sql in (f"SELECT 1 FROM t WHERE a IN ({_ids(MIN_VALUES - 1)})",
                f"SELECT 1 FROM t WHERE s = ' IN ({long_ids})'",
                f'SELECT 1 FROM t WHERE "x IN ({long_ids})" = 1',
                f"SELECT 1 FROM t -- a IN ({long_ids})\nWHERE a = 1",
                f"SELECT 1 FROM t /* a IN ({long_ids}) */ WHERE a = 1",
                f"SELECT 1 FROM t WHERE a IN ({long_ids}, 2.5)",
                f"SELECT 1 FROM t WHERE a IN ({long_ids}, b)",
                f"SELECT 1 FROM t WHERE aIN ({long_ids})"):
        assert lift(sql) == (sql, {}), sql


def test_two_lists_and_a_quote_inside_a_string():
    sql = (f"SELECT 1 FROM t WHERE s <> 'it''s IN (' AND a NOT IN ({_ids(70)}) "
           f"OR b in\n(  {_ids(80, -40)}  )")
    text, lists = lift(sql)
    assert len(text) == len(sql) and len(lists) == 2
    assert [len(v) for v in lists.values()] == [70, 80]
    assert "'it''s IN ('" in text
