"""Long ``IN`` lists of integer constants, taken out of SQL text before it is parsed.

sqlglot's parser is written in Python and builds a node, with its position, for every
token, so a long ``IN`` list dominates planning. Such lists (of plain integers, the
common case: ids, zones, codes) are cut out of the text by one regular-expression scan that
steps over string literals, quoted names and comments, and replaced by a marker name padded
with spaces, so that every position the parser reports stays where it was. The translator
turns the marker back into the integers (``ExprTranslator.lists``, ``sql.expressions``).
"""

from __future__ import annotations

import re
import secrets

#: Lists shorter than this are left to the parser: lifting them saves nothing.
MIN_VALUES = 64

# what the scan steps over (strings, quoted names, comments) or stops at (IN followed by "(")
_SCAN = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|\$\$.*?\$\$|--[^\n]*|/\*.*?\*/"
                   r"|\bIN\s*\(", re.IGNORECASE | re.DOTALL)
_INT_LIST = re.compile(r"\s*[-+]?\d+\s*(?:,\s*[-+]?\d+\s*)*\)")


def lift(sql: str) -> tuple[str, dict[str, list[int]]]:
    """``sql`` with each ``IN (<integers>)`` list of at least ``MIN_VALUES`` values replaced
    by a marker name of the same length, and the lists by marker."""
    lists: dict[str, list[int]] = {}
    out: list[str] = []
    pos = 0
    tag = secrets.token_hex(4)
    for m in _SCAN.finditer(sql):
        if not m.group(0)[:1].upper() == "I":
            continue  # a string, a quoted name or a comment: nothing in it is a list
        body = _INT_LIST.match(sql, m.end())
        if body is None:
            continue
        text = body.group(0)[:-1]
        if text.count(",") + 1 < MIN_VALUES:
            continue
        name = f"__bamql_in_{tag}_{len(lists)}"
        lists[name] = [int(x) for x in text.split(",")]
        out.append(sql[pos : m.end()])
        out.append(name.ljust(len(text)))
        pos = body.end() - 1
    if not lists:
        return sql, lists
    out.append(sql[pos:])
    return "".join(out), lists
