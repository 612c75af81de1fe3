"""Hive-partitioned file layouts (``trips/year=2019/month=03/part-0.parquet``): the
partition keys in each file's directories become columns of the table, typed as DuckDB
types them, and a filter on them keeps only the files that can match (partition pruning).
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from urllib.parse import unquote

from bamql.errors import IngestError

#: the directory value that stands for NULL (Hive's, Spark's and DuckDB's)
DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"

_INT64 = (-(1 << 63), (1 << 63) - 1)
_INT = re.compile(r"-?(0|[1-9][0-9]*)")
# values DuckDB certainly keeps as VARCHAR: digits with a leading zero, decimals,
# an empty value, or a word (not one of the words a DATE or TIMESTAMP cast reads)
_TEXT = re.compile(r"0[0-9]+|-?[0-9]*\.[0-9]*|")
_DATE_WORDS = {"inf", "infinity", "epoch", "today", "now", "tomorrow", "yesterday", "allballs"}


class HiveMode(StrEnum):
    """The ``hive_partitioning`` option: detected from the paths (DuckDB's default),
    forced on, or off."""

    AUTO = "auto"
    ON = "on"
    OFF = "off"


class KeyType(StrEnum):
    """The type of a partition column: BIGINT when every value is an integer, else
    VARCHAR."""

    BIGINT = "bigint"
    VARCHAR = "varchar"


def path_values(path: str) -> dict[str, str | None]:
    """The ``key=value`` directories of ``path`` (its file name excluded), URL-decoded;
    ``__HIVE_DEFAULT_PARTITION__`` is None (NULL). A key given twice is a one-line error."""
    out: dict[str, str | None] = {}
    for part in re.split(r"[/\\]", path)[:-1]:
        key, eq, value = part.partition("=")
        if not eq or not key:
            continue
        key, value = unquote(key), unquote(value)
        if key in out:
            raise IngestError(f"{path}: partition key {key!r} appears twice in the path")
        out[key] = None if value == DEFAULT_PARTITION else value
    return out


@dataclass(frozen=True)
class Partitioning:
    """The partition columns of a list of files: their names (sorted, as DuckDB orders
    them), types, and each file's values (None: NULL)."""

    keys: tuple[str, ...]
    types: tuple[KeyType, ...]
    values: tuple[tuple[int | str | None, ...], ...]

    def keep(self, filters: Sequence[KeyFilter]) -> list[bool]:
        """Per file, whether a row of it can pass every filter (filters on other columns,
        or whose literal is of another type than the key's, prune nothing)."""
        tests = []
        for f in filters:
            i = self._index(f.column)
            if i is not None and f.matches_type(self.types[i]):
                tests.append((i, f))
        return [all(f.passes(vals[i]) for i, f in tests) for vals in self.values]

    def _index(self, column: str) -> int | None:
        # unquoted SQL names match regardless of case, as in DuckDB
        if column in self.keys:
            return self.keys.index(column)
        hits = [i for i, k in enumerate(self.keys) if k.casefold() == column.casefold()]
        return hits[0] if len(hits) == 1 else None


def detect(paths: Sequence[str], mode: HiveMode) -> Partitioning | None:
    """The partitioning of ``paths``, or None where it is off: with AUTO, on when every
    file has the same non-empty set of keys (DuckDB's rule); with ON, files whose keys
    differ are a one-line error, as in DuckDB."""
    if mode == HiveMode.OFF or not paths:
        return None
    per_file = [path_values(p) for p in paths]
    keys = set(per_file[0])
    for p, vals in zip(paths, per_file, strict=True):
        if set(vals) != keys:
            if mode == HiveMode.AUTO:
                return None
            missing = sorted(keys ^ set(vals))[0]
            raise IngestError(f"hive partitions differ: key {missing!r} is in the path of "
                              f"{paths[0]} or of {p} but not both")
    if not keys:
        return None
    names = tuple(sorted(keys))
    types = tuple(_key_type(k, [v[k] for v in per_file]) for k in names)
    values = tuple(tuple(_typed(v[k], t) for k, t in zip(names, types, strict=True))
                   for v in per_file)
    return Partitioning(names, types, values)


def _key_type(key: str, values: list[str | None]) -> KeyType:
    """BIGINT when every value is an integer, VARCHAR when one is certainly text; values
    DuckDB reads as dates, timestamps or integers of other spellings (``0x10``, `` 5``)
    are a one-line error rather than a column of another type than DuckDB's."""
    present = [v for v in values if v is not None]
    if present and all(_INT.fullmatch(v) and _INT64[0] <= int(v) <= _INT64[1]
                       for v in present):
        return KeyType.BIGINT
    if not present or any(_is_text(v) for v in present):
        return KeyType.VARCHAR
    odd = next(v for v in present if not _INT.fullmatch(v))
    raise IngestError(f"partition key {key!r} has the value {odd!r}, which DuckDB reads as a "
                      "date, timestamp or number; bamql reads integer and text partition "
                      "values only")


def _is_text(v: str) -> bool:
    if _TEXT.fullmatch(v):
        return True
    if _INT.fullmatch(v):  # an integer beyond BIGINT
        return not _INT64[0] <= int(v) <= _INT64[1]
    return v[0].isascii() and v[0].isalpha() and v.strip().lower() not in _DATE_WORDS


def _typed(v: str | None, t: KeyType) -> int | str | None:
    if v is None or t == KeyType.VARCHAR:
        return v
    return int(v)


class Cmp(StrEnum):
    """A comparison a partition filter makes."""

    EQ = "="
    NE = "<>"
    LT = "<"
    LE = "<="
    GT = ">"
    GE = ">="
    IN = "in"
    IS_NULL = "is null"
    NOT_NULL = "is not null"


_OPS: dict[Cmp, Callable[[object, object], bool]] = {
    Cmp.EQ: operator.eq, Cmp.NE: operator.ne, Cmp.LT: operator.lt, Cmp.LE: operator.le,
    Cmp.GT: operator.gt, Cmp.GE: operator.ge}


@dataclass(frozen=True)
class KeyFilter:
    """One conjunct of a WHERE clause on one column against literals: ``column op
    values`` (one value, several for IN, none for IS [NOT] NULL). A NULL literal is None."""

    column: str
    op: Cmp
    values: tuple[int | str | None, ...] = ()

    def matches_type(self, t: KeyType) -> bool:
        """Whether the literals are of the key's type (an integer key against integers, a
        text key against strings), so that comparing them in Python is SQL's comparison."""
        want = int if t == KeyType.BIGINT else str
        return all(v is None or (type(v) is want) for v in self.values)

    def passes(self, value: int | str | None) -> bool:
        """Whether a row whose column holds ``value`` can satisfy the filter."""
        if self.op == Cmp.IS_NULL:
            return value is None
        if self.op == Cmp.NOT_NULL:
            return value is not None
        if value is None:
            return False  # a comparison with NULL is never true
        if self.op == Cmp.IN:
            return any(v is not None and v == value for v in self.values)
        (v,) = self.values
        return v is not None and _OPS[self.op](value, v)


def check_columns(keys: Sequence[str], names: Sequence[str], where: str) -> None:
    """A partition key that is also a column of the file is a one-line error: which of
    the two a query means cannot be told."""
    both = [k for k in keys if k in names]
    if both:
        raise IngestError(f"{where}: column {both[0]!r} is both in the file and a partition "
                          "key in its path; rename one or turn hive_partitioning off")
