"""CSV dialect sniffing: the delimiter and whether the first row is a header, as DuckDB's
``read_csv`` decides them, from the file's first block.

The delimiter is the one of ``, ; TAB |`` that splits the sample's lines into one
consistent number of fields (stdlib ``csv.Sniffer``), a comma where none does. The first
row is a header when some column's other values have one type and the first row's value
does not cast to it (``VendorID`` or ``nan`` over integers, while ``inf`` over doubles is a
value; integers, doubles, booleans and timestamps are the value types), or when every
column holds text only (DuckDB reads ``a,b`` over ``x,y`` as a
header); a first row of values like the rest is data, and its columns are named
``column0``, ``column1``, ... as DuckDB names them.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass

#: Bytes of a file's start the dialect is read from.
SAMPLE_BYTES = 64 << 10
_DELIMITERS = ",;\t|"


@dataclass(frozen=True)
class Dialect:
    """How a CSV file is laid out: its delimiter, whether its first row is a header, and
    the number of fields of its first row (the column count of a file without a header)."""

    delimiter: str = ","
    header: bool = True
    fields: int = 0
    #: the header's names, spaces around them trimmed as DuckDB trims them (() without one)
    names: tuple[str, ...] = ()
    #: the columns (of a file with a header) whose first non-empty value is an infinity
    #: (``inf``, ``-Infinity``...): DuckDB's sniffer takes it for a DATE, and the column for
    #: VARCHAR (or DATE) where pyarrow reads DOUBLE
    infinity_first: tuple[str, ...] = ()
    #: (position, with a UTC offset) of the columns whose every value in the sample is a
    #: timestamp with a time of day: read as microseconds (pyarrow infers nanoseconds, and a
    #: fraction of a second beyond 2262 or before 1677 then makes the column text)
    timestamps: tuple[tuple[int, bool], ...] = ()
    #: positions of the columns whose every value in the sample is an integer of at most 38
    #: digits, one at least beyond BIGINT: DuckDB's HUGEINT (pyarrow infers DOUBLE)
    hugeints: tuple[int, ...] = ()

    def column_names(self) -> list[str]:
        """DuckDB's names of a header-less file's columns: ``column0``, ... padded with
        zeros to the width of the last one's number (``column00`` .. ``column17``)."""
        width = len(str(self.fields - 1))
        return [f"column{i:0{width}d}" for i in range(self.fields)]


def sniff(sample: bytes, delimiter: str | None = None, header: bool | None = None,
          quote: str | None = '"', escape: str | None = None, skip: int = 0) -> Dialect:
    """The dialect of a CSV file from its first bytes (``SAMPLE_BYTES``). A ``delimiter``
    or ``header`` given (``read_csv``'s options) is taken as it is, not sniffed; ``quote``
    (None or "": no quoting) and ``escape`` (None: a doubled quote) split the rows;
    ``skip``: lines before the header (or the first row) that are no part of the table."""
    text = sample.decode("utf-8", errors="replace")
    if len(sample) >= SAMPLE_BYTES and "\n" in text:  # the last line may be cut
        text = text[: text.rindex("\n") + 1]
    if skip:
        text = "".join(text.splitlines(keepends=True)[skip:])
    if not text.strip():
        return Dialect(delimiter or ",", bool(header) if header is not None else True)
    if delimiter is None:
        try:
            delimiter = csv.Sniffer().sniff(text, delimiters=_DELIMITERS).delimiter
        except csv.Error:
            delimiter = ","
    quoting = {"quotechar": quote} if quote else {"quoting": csv.QUOTE_NONE}
    same = escape is None or escape == quote  # a quote escaped by doubling it
    rows = [r for r in csv.reader(text.splitlines(), delimiter=delimiter, doublequote=same,
                                  escapechar=None if same else escape, **quoting) if r]
    if not rows:
        return Dialect(delimiter, bool(header) if header is not None else True)
    if header is None:
        header = _has_header(rows)
    # an empty name is DuckDB's column<i>, as a header-less file's
    default = Dialect(fields=len(rows[0])).column_names()
    names = tuple(n.strip() or default[i] for i, n in enumerate(rows[0])) if header else ()
    data = rows[1:] if header else rows
    return Dialect(delimiter, header, len(rows[0]), names, _infinity_first(names, data),
                   _timestamps(len(rows[0]), data), _hugeints(len(rows[0]), data))


_INTEGER = re.compile(r"[+-]?\d{1,38}")


def _hugeints(n: int, rows: list[list[str]]) -> tuple[int, ...]:
    """The columns of ``rows`` whose non-empty values are all integers of at most 38 digits,
    one of them at least beyond BIGINT."""
    out = []
    for i in range(n):
        vals = [r[i].strip() for r in rows if i < len(r) and r[i].strip()]
        if vals and all(_INTEGER.fullmatch(v) for v in vals) and \
                any(not -2**63 <= int(v) < 2**63 for v in vals):
            out.append(i)
    return tuple(out)


_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?([+-]\d{2}(:?\d{2})?|Z)?")


def _timestamps(n: int, rows: list[list[str]]) -> tuple[tuple[int, bool], ...]:
    """The columns of ``rows`` whose non-empty values (one at least) are all timestamps with
    a time of day, and whether those carry a UTC offset (all of them, or none)."""
    out = []
    for i in range(n):
        vals = [r[i].strip() for r in rows if i < len(r) and r[i].strip()]
        ms = [_TIME.fullmatch(v) for v in vals]
        if vals and all(ms):
            offsets = {m.group(3) is not None for m in ms}
            if len(offsets) == 1:
                out.append((i, offsets.pop()))
    return tuple(out)


_INFINITY = re.compile(r"[+-]?inf(inity)?", re.IGNORECASE)


def _infinity_first(names: tuple[str, ...], rows: list[list[str]]) -> tuple[str, ...]:
    """Of the columns ``names``, those whose first non-empty value in ``rows`` is an
    infinity."""
    out = []
    for i, name in enumerate(names):
        first = next((r[i].strip() for r in rows if i < len(r) and r[i].strip()), "")
        if _INFINITY.fullmatch(first):
            out.append(name)
    return tuple(out)


#: The words DuckDB's BOOLEAN reads (in any case; the usual spellings here)
BOOLEAN_WORDS = {v: [c for w in words for c in (w, w.capitalize(), w.upper())]
                 for v, words in ((True, ("true", "t", "yes")), (False, ("false", "f", "no")))}

#: The value types the sniffer tells apart from text, as DuckDB's sniffer casts: integers
#: (digits only: ``1_0`` is text), doubles (``nan``, ``inf`` and ``infinity`` too, as
#: DuckDB's DOUBLE reads them), booleans (``t``, ``no``...), dates and timestamps.
_TYPES = {
    "integer": re.compile(r"[+-]?\d+"),
    "double": re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|[+-]?(?i:nan|inf|infinity)"),
    "boolean": re.compile(r"(?i:true|false|t|f|yes|no)"),
    "timestamp": re.compile(r"\d{4}-\d{2}-\d{2}([ T]\d{2}:\d{2}(:\d{2}(\.\d+)?)?"
                           r"([+-]\d{2}(:?\d{2})?|Z)?)?"),
}
#: A column's type from its values' types: integers beside doubles are doubles
_WIDER = {frozenset({"integer", "double"}): "double"}
#: The value types a column's type reads (a value of another is a name over the column)
_READS = {"integer": {"integer"}, "double": {"integer", "double"}, "boolean": {"boolean"},
          "timestamp": {"timestamp"}}


def _type_of(x: str) -> str:
    """The type of one field's text: one of ``_TYPES``, else ``"text"``."""
    x = x.strip()
    return next((t for t, r in _TYPES.items() if r.fullmatch(x)), "text")


def _has_header(rows: list[list[str]]) -> bool:
    """Whether the first of ``rows`` is a header: some column's other values have one type
    (the module's text) that its first row's value does not cast to (``VendorID`` over
    integers, ``nan`` over integers; ``inf`` over doubles is a value, as in DuckDB), or
    every column holds text only."""
    first, rest = rows[0], rows[1:]
    if not rest:  # one row: a header where every field is text (one empty or typed: data)
        return all(x.strip() and _type_of(x) == "text" for x in first)
    if not any(x.strip() for x in first):  # a first row of empty fields: a header, unnamed
        return True
    all_text = True
    for i, name in enumerate(first):
        kinds = frozenset(_type_of(r[i]) for r in rest if i < len(r) and r[i] != "")
        kind = next(iter(kinds)) if len(kinds) == 1 else _WIDER.get(kinds, "text")
        typed = kind != "text"
        if typed and name.strip() and _type_of(name) not in _READS[kind]:
            return True  # a name over values of one type (an empty field is a NULL of any)
        all_text &= not typed  # text columns: a header, whatever its names look like
    return all_text
