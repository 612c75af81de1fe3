"""CSV dialect sniffing: the delimiter and whether the first row is a header, as DuckDB's
``read_csv`` decides them, from the file's first block.

The delimiter is the one of ``, ; TAB |`` that splits the sample's lines into one
consistent number of fields (stdlib ``csv.Sniffer``), a comma where none does. The first
row is a header when some column's other values are all numbers and the first row's value
is not one (``VendorID`` over integers), or when every column holds text only (DuckDB reads
``a,b`` over ``x,y`` as a header); a first row of numbers like the rest is data, and its
columns are named ``column0``, ``column1``, ... as DuckDB names them.
"""

from __future__ import annotations

import csv
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

    def column_names(self) -> list[str]:
        """DuckDB's names of a header-less file's columns."""
        return [f"column{i}" for i in range(self.fields)]


def sniff(sample: bytes) -> Dialect:
    """The dialect of a CSV file from its first bytes (``SAMPLE_BYTES``)."""
    text = sample.decode("utf-8", errors="replace")
    if len(sample) >= SAMPLE_BYTES and "\n" in text:  # the last line may be cut
        text = text[: text.rindex("\n") + 1]
    if not text.strip():
        return Dialect()
    try:
        delimiter = csv.Sniffer().sniff(text, delimiters=_DELIMITERS).delimiter
    except csv.Error:
        delimiter = ","
    rows = [r for r in csv.reader(text.splitlines(), delimiter=delimiter) if r]
    if not rows:
        return Dialect(delimiter)
    return Dialect(delimiter, _has_header(rows), len(rows[0]))


def _is_number(x: str) -> bool:
    try:
        float(x)
    except ValueError:
        return False
    return True


def _has_header(rows: list[list[str]]) -> bool:
    """Whether the first of ``rows`` is a header (the module's text)."""
    first, rest = rows[0], rows[1:]
    if not rest:  # one row: a header unless it is all numbers
        return not all(_is_number(x) for x in first if x)
    all_text = True
    for i, name in enumerate(first):
        values = [r[i] for r in rest if i < len(r) and r[i] != ""]
        numeric = bool(values) and all(_is_number(v) for v in values)
        if numeric and not _is_number(name):
            return True  # a name over numbers
        all_text &= not numeric and not _is_number(name)
    return all_text
