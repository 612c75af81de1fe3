"""LIKE patterns as DuckDB matches them: ``%`` any string, ``_`` one code point, an optional
escape character; ILIKE lowers each code point as DuckDB does. Used where strings are tested
one by one: a dictionary's entries (``sql.strings``) and rows that each have their own
pattern (``plan.expr``)."""

from __future__ import annotations

import re
from collections.abc import Callable


def fold(s: str) -> str:
    """``s`` with each code point lowered as DuckDB's ILIKE lowers it: one code point for
    one (Python's ``str.lower`` of a whole string applies context rules, such as the final
    sigma, and maps U+0130 to two code points; DuckDB does neither)."""
    return "".join(c.lower()[0] for c in s)


def like_matcher(pattern: str, escape: str | None = None,
                 case_fold: bool = False) -> Callable[[str], bool]:
    """A test of a string against a LIKE pattern; ``escape`` (one character, or None) makes
    the character after it literal. Raises ``ValueError`` for a pattern that ends with the
    escape character (DuckDB refuses it too)."""
    if case_fold:
        pattern = fold(pattern)
    parts: list[str] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if escape is not None and ch == escape:
            if i + 1 == len(pattern):
                raise ValueError("a LIKE pattern must not end with its escape character")
            parts.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        parts.append(".*" if ch == "%" else "." if ch == "_" else re.escape(ch))
        i += 1
    rx = re.compile("".join(parts), re.DOTALL)
    if case_fold:
        return lambda s: rx.fullmatch(fold(s)) is not None
    return lambda s: rx.fullmatch(s) is not None
