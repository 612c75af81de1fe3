"""Tab completion for ``bamql shell``: the candidates for the word before the cursor.

Pure logic over a session's catalog (no prompt_toolkit here), so it is testable without
the optional line editor: the shell wraps :func:`completions` in a prompt_toolkit
``Completer`` when that package is installed.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

#: SQL words offered for completion: clauses, operators and the functions a query may call
KEYWORDS = (
    "ALL", "AND", "AS", "ASC", "BETWEEN", "BY", "CASE", "CAST", "DESC", "DISTINCT", "ELSE",
    "END", "EXPLAIN", "ANALYZE", "FALSE", "FROM", "FULL", "GROUP", "HAVING", "IN", "INNER",
    "INTERVAL", "IS", "JOIN", "LEFT", "LIKE", "LIMIT", "NOT", "NULL", "NULLS", "OFFSET", "ON",
    "OR", "ORDER", "OUTER", "OVER", "PARTITION", "RIGHT", "SELECT", "THEN", "TRUE", "UNION",
    "USING", "WHEN", "WHERE", "WITH", "FIRST", "LAST",
    # functions
    "AVG", "COUNT", "MAX", "MIN", "SUM", "STDDEV", "VARIANCE", "MEDIAN", "EXTRACT", "DATE_TRUNC",
    "COALESCE", "ABS", "ROUND", "FLOOR", "CEIL", "ROW_NUMBER", "RANK",
    "READ_PARQUET", "READ_CSV", "READ_ORC",
)
#: the shell's dot-commands, as ``.help`` lists them
DOT_COMMANDS = (".explain", ".help", ".maxrows", ".mode", ".output", ".quit", ".read", ".schema",
                ".tables", ".timer", ".exit")
#: each dot-command's fixed arguments
DOT_ARGS = {".timer": ("on", "off"), ".explain": ("on", "off"), ".mode": ("table", "csv", "json")}
#: dot-commands that take a file name
DOT_FILES = (".read", ".output")

_WORD = re.compile(r"(?:([A-Za-z_][A-Za-z0-9_]*)\.)?([A-Za-z_][A-Za-z0-9_]*)?$")
_NAMED = re.compile(r"\b(?:FROM|JOIN)\s+([A-Za-z_][A-Za-z0-9_]*)(?:\s+(?:AS\s+)?([A-Za-z_][A-Za-z0-9_]*))?",
                    re.IGNORECASE)
_BEFORE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*$")
_KEYWORD_SET = frozenset(KEYWORDS)


def word_before(text: str) -> str:
    """The part of ``text`` that a completion replaces: the word at its end (for
    ``t.fa`` the ``fa``; for a dot-command's file argument, the path typed so far)."""
    if _dot_line(text) is not None:
        return text.split(" ")[-1] if " " in text.lstrip() else text.lstrip()
    m = _WORD.search(text)
    return (m.group(2) or "") if m else ""


def _dot_line(text: str) -> str | None:
    """``text`` stripped when it is a dot-command (on one line), else None."""
    s = text.lstrip()
    return s if s.startswith(".") and "\n" not in s else None


def _tables(session) -> dict[str, list[str]]:
    """Each table's name -> its column names: stored tables, then registered dimension
    tables (a stored table's name wins). A catalog that fails to answer offers nothing."""
    out: dict[str, list[str]] = {}
    try:
        names = list(session.tables())
    except Exception:  # completion never raises: a broken catalog completes nothing
        names = []
    for n in names:
        try:
            out[n] = list(session.schema(n).names)
        except Exception:
            out[n] = []
    for n, dim in (getattr(session, "dimensions", None) or {}).items():
        out.setdefault(n, list(getattr(dim, "metas", {})))
    return out


def _match(prefix: str, words: Iterable[str]) -> list[str]:
    low = prefix.lower()
    return sorted({w for w in words if w.lower().startswith(low)})


def _keywords(prefix: str) -> list[str]:
    """Keywords matching ``prefix``, in lower case when the prefix is typed in lower case."""
    found = _match(prefix, KEYWORDS)
    return [k.lower() for k in found] if prefix and prefix.islower() else found


def _files(prefix: str) -> list[str]:
    """Paths that start with ``prefix`` (directories end in ``/``)."""
    head, tail = os.path.split(prefix)
    try:
        entries = sorted(os.listdir(os.path.expanduser(head) or "."))
    except OSError:
        return []
    out = []
    for e in entries:
        if e.startswith(tail) and (tail.startswith(".") or not e.startswith(".")):
            p = os.path.join(head, e)
            out.append(p + "/" if os.path.isdir(os.path.expanduser(p)) else p)
    return out


def completions(text_before_cursor: str, session, text_after_cursor: str = "") -> list[str]:
    """The words that may replace :func:`word_before` of ``text_before_cursor``.

    Parameters
    ----------
    text_before_cursor
        What is typed so far in this statement (it may span lines).
    session
        The shell's session: ``tables()``, ``schema(name)`` and ``dimensions`` name what
        may be completed.
    text_after_cursor
        The rest of the statement: its FROM may name the alias that the text before the
        cursor qualifies a column with (``SELECT t.| FROM trips t``).

    Returns
    -------
    list[str]
        After ``alias.`` or ``table.``: that table's columns. After FROM or JOIN: table
        names. At the start of a dot-command: the commands; after one: its arguments
        (``on``/``off``, a mode, a table, a file). Elsewhere: the columns of the tables the
        statement names (of every table while it names none), table names and keywords.
    """
    dot = _dot_line(text_before_cursor)
    if dot is not None:
        if " " not in dot:
            return _match(dot, DOT_COMMANDS)
        cmd = dot.split()[0].lower()
        arg = word_before(text_before_cursor)
        if cmd in DOT_ARGS:
            return _match(arg, DOT_ARGS[cmd])
        if cmd == ".schema":
            return _match(arg, _tables(session))
        if cmd in DOT_FILES:
            return _files(arg)
        return []
    m = _WORD.search(text_before_cursor)
    qualifier, prefix = (m.group(1), m.group(2) or "") if m else (None, "")
    tables = _tables(session)
    named: dict[str, str] = {}  # alias or table name -> table, for the tables this statement names
    for t, alias in _NAMED.findall(text_before_cursor + text_after_cursor):
        if t in tables:
            named[t] = t
            if alias and alias.upper() not in _KEYWORD_SET:
                named[alias] = t
    if qualifier is not None:
        table = named.get(qualifier, qualifier if qualifier in tables else None)
        return _match(prefix, tables[table]) if table is not None else []
    before = _BEFORE.search(text_before_cursor[:len(text_before_cursor) - len(prefix)])
    if before is not None and before.group(1).upper() in ("FROM", "JOIN"):
        return _match(prefix, tables)
    in_use = set(named.values()) or set(tables)
    columns = [c for t in sorted(in_use) for c in tables[t]]
    found = _match(prefix, columns) + _match(prefix, tables) + _keywords(prefix)
    return list(dict.fromkeys(found))  # a column called like a keyword is offered once
