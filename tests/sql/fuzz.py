"""A seeded random-query generator for hostile inputs, checked against DuckDB.

Each *world* is a pair of random tables (``r`` and a small ``u`` for subqueries) reached in
one way: ingested into page stores, registered (``con.register``: Arrow tables with
``string_view``, ``large_string``, ``decimal128``, dictionary, list and struct columns, or
pandas frames), or files read in place (Parquet, a glob of Parquet files, CSV with a
header, without one, ``;``-separated, a glob of CSVs). ``r`` holds DECIMAL(p, s) of any
precision 1..38 (values that fit an int64 at their scale, or in some worlds values that do
not), NULLs, NaN/+-inf/-0.0 doubles, int64 extremes, timestamps of years 1..9999,
TIMESTAMP WITH TIME ZONE, booleans and dates. The queries filter, aggregate, group, order
and pass columns through; they use empty and non-empty subqueries (``IN``, ``NOT IN``,
``EXISTS``, scalar subqueries that return no row), some naming unknown columns or
comparing mismatched types (which DuckDB refuses, so bamql must).

Every query runs on bamql (CPU, or the GPU engine with ``--device gpu --backend ...``) and
on DuckDB over the same rows or files. Outcomes:

``ok``           the same rows (order-insensitive unless ORDER BY; NULL, NaN, -0.0 aware;
                 DECIMALs exact, doubles to 1e-9)
``typed``        the same values, but a column of another kind (DOUBLE for DECIMAL, BIGINT
                 for BOOLEAN)
``refused``      bamql raised a one-line ``bamql.errors`` error; DuckDB answered
``both-refused`` both raised
``wrong``        another answer, or an answer where DuckDB raised
``ref-range``    DuckDB raised an out-of-range/conversion error (DECIMAL(38) overflow) where
                 bamql answered: listed, checked by hand
``float-order``  a SUM or AVG of doubles that overflows differs only in which of NaN, +inf
                 or -inf it is (the order of the additions, which SQL leaves open)
``by-name``      DuckDB read the files of a glob with the first one's columns and dialect
                 (refusing files whose columns differ; keeping quotes where the first file
                 has none) and answers as bamql with ``union_by_name = true, quote = '"'``
                 (bamql reads each file by its own header and dialect, by name:
                 ``storage.fileoptions``)
``ref-file-bug`` DuckDB reading a Parquet file answered otherwise than DuckDB over the same
                 rows in memory, which bamql matches (DuckDB prunes row groups by statistics
                 that leave NaN out: ``f > 1e308`` misses NaN)
``error``        a traceback (an exception that is not a one-line ``BamqlError``)
``hang``         a query ran past ``--query-timeout`` (the run stops)

Command line (one JSON line per query and a summary line)::

    python -m tests.sql.fuzz --seed 42 --queries 2000 --device cpu --log fuzz.jsonl
    python -m tests.sql.fuzz --seed 42 --queries 500 --device gpu --backend host --log g.jsonl

``tests/sql/test_fuzz.py`` runs a few dozen of them in the default test suite.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import json
import math
import os
import shutil
import sys
import tempfile
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from decimal import Decimal
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from tests.sql.corpus import one_line

I64_MAX = 2**63 - 1
I64_MIN = -(2**63)
WORDS = ["", "a", "b", "Z", "é", "日本", "🚕", "a b", "O'k"]
FLOAT_SPECIALS = [math.nan, math.inf, -math.inf, -0.0, 0.0, 5e-324, 1.7976931348623157e308,
                  -1.7976931348623157e308, 2.0**53 + 2, 2.0**63]
#: timestamp spans in microseconds: around 1970, or years 1..9999
TIME_SPANS = [(-3 * 10**15, 3 * 10**15), (-62135596800 * 10**6, 253402300799 * 10**6)]
#: how a world's tables reach bamql, and how often
MODES = {"store": 30, "register": 25, "parquet": 15, "parquet-glob": 8, "csv": 10,
         "csv-noheader": 4, "csv-semicolon": 4, "csv-glob": 4}
#: the kinds of SQL value a column holds (``Col.kind``)
ORDERED = ("int", "float", "dec", "str", "ts", "tstz", "date", "bool")
NUMERIC = ("int", "float", "dec")


# -- tables ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Col:
    name: str
    kind: str  # int | float | dec | str | ts | tstz | date | bool | list | struct


@dataclass
class World:
    """Two tables and how bamql reaches them; ``cols`` are ``r``'s columns as queries name
    them (``column0``... for a headerless CSV)."""

    seed: int
    mode: str
    r: pa.Table
    u: pa.Table
    cols: list[Col]
    decimal: str = ""  # "DECIMAL(p,s) fit|big": d's type and whether its values fit an int64
    frame: str = ""  # "pandas" | "polars": r registered as such a frame
    page_size: int = 4096
    r_from: str = "r"  # what FROM names: the table, or a file / glob with alias r
    u_from: str = "u"
    dir: Path | None = None

    def describe(self) -> str:
        return (f"world {self.seed}: {self.mode}{f' ({self.frame})' if self.frame else ''}, "
                f"{self.r.num_rows} rows, {self.decimal}, columns "
                + ", ".join(f"{c.name}:{c.kind}" for c in self.cols))


#: The days since 1970 of 0001-01-01 and 9999-12-31: the DATEs Python's ``datetime.date`` holds
DAY_MIN, DAY_MAX = -719_162, 2_932_896


def _nulls(rng: np.random.Generator, n: int, share: float) -> np.ndarray | None:
    return rng.random(n) < share if share else None


def big_ints(rng: np.random.Generator, n: int, digits: int) -> list[int]:
    """``n`` signed integers of up to ``digits`` digits (Python ints: beyond int64 too), the
    widest ones frequent."""
    out = []
    for _ in range(n):
        k = int(rng.integers(1, digits + 1)) if rng.random() < 0.6 else digits
        v = int("".join(str(x) for x in rng.integers(0, 10, k)))
        out.append(-v if rng.random() < 0.4 else v)
    return out


def decimal_column(rng: np.random.Generator, n: int, p: int, s: int, big: bool,
                   mask: np.ndarray | None) -> pa.Array:
    """DECIMAL(p, s) values: of at most 18 digits (they fit an int64 at scale ``s``), or,
    where ``big``, of up to all ``p`` digits."""
    digits = p if big else min(p, 18)
    vals = [Decimal(f"{u}E-{s}") for u in big_ints(rng, n, digits)]  # exact: scaleb rounds
    return pa.array(vals, pa.decimal128(p, s), mask=mask)


def make_tables(rng: np.random.Generator, mode: str) -> tuple[pa.Table, pa.Table, str]:
    n = int(rng.choice([0, 1, 3, 7, 40, 200, 1000], p=[.06, .08, .08, .12, .3, .26, .1]))
    null = float(rng.choice([0.0, 0.1, 0.3, 1.0], p=[.3, .4, .25, .05]))
    span = int(rng.choice([10, 2**31, 2**60, I64_MAX]))
    i = rng.integers(-span, span, n, dtype=np.int64)
    if n and rng.random() < 0.5:
        i[rng.random(n) < 0.2] = I64_MAX
        i[rng.random(n) < 0.2] = -I64_MAX
        if rng.random() < 0.15:  # the least int64: the store's NULL sentinel, refused at ingest
            i[rng.random(n) < 0.1] = I64_MIN
    f = np.round(rng.normal(0, 100, n), 2)
    if rng.random() < 0.7:
        for v in rng.choice(FLOAT_SPECIALS, 3):
            f[rng.random(n) < 0.12] = v
    lo, hi = TIME_SPANS[int(rng.integers(0, 2))]
    t = rng.integers(lo, hi, n)
    # whole seconds most often (a CSV round trip then keeps them exactly)
    if rng.random() < 0.6:
        t = t // 10**6 * 10**6
    tz = rng.integers(-10**15, 3 * 10**15, n) // 10**6 * 10**6
    p = int(rng.integers(1, 39))
    s = int(rng.integers(0, p + 1)) if rng.random() < 0.8 else 0
    big = p > 18 and rng.random() < 0.35
    cols = {
        "k": pa.array(rng.integers(0, 5, n), pa.int64(), mask=_nulls(rng, n, null)),
        "i": pa.array(i, pa.int64(), mask=_nulls(rng, n, null)),
        "f": pa.array(f, pa.float64(), mask=_nulls(rng, n, null)),
        "d": decimal_column(rng, n, p, s, big, _nulls(rng, n, null)),
        "e": decimal_column(rng, n, 9, 2, False, _nulls(rng, n, null)),
        "s": pa.array([WORDS[j] for j in rng.integers(0, len(WORDS), n)], pa.string(),
                      mask=_nulls(rng, n, null)),
        "t": pa.array(t, pa.timestamp("us"), mask=_nulls(rng, n, null)),
        "tz": pa.array(tz, pa.timestamp("us", tz="UTC"), mask=_nulls(rng, n, null)),
        "b": pa.array(rng.random(n) < 0.5, pa.bool_(), mask=_nulls(rng, n, null)),
        # years 1..9999, the dates Python's (and so the comparison's) hold
        "dt": pa.array(np.clip(rng.integers(-800_000, 2_900_000, n), DAY_MIN, DAY_MAX)
                       .astype(np.int32), pa.date32(), mask=_nulls(rng, n, null)),
    }
    if mode == "register":  # Arrow's other types, some worlds each
        if rng.random() < 0.5:
            cols["sv"] = cols["s"].cast(pa.string_view())
        if rng.random() < 0.5:
            cols["ls"] = cols["s"].cast(pa.large_string())
        if rng.random() < 0.5:
            cols["dic"] = cols["s"].dictionary_encode()
        if rng.random() < 0.12:
            cols["l"] = pa.array([None if v is None else [v, v] for v in cols["k"].to_pylist()],
                                 pa.list_(pa.int64()))
        if rng.random() < 0.12:
            cols["st"] = pa.array([None if v is None else {"a": v} for v in cols["k"].to_pylist()],
                                  pa.struct([("a", pa.int64())]))
    # a random subset of the columns (k, i and f always), in a random order
    names = [c for c in cols if c in ("k", "i", "f") or rng.random() < (0.15 if c == "dt" else 0.75)]
    rng.shuffle(names)
    if "dt" not in names:  # a DATE in most other worlds too, drawn apart from the world's own
        side = np.random.default_rng([n, len(names), 41])  # draws: the rest stays as it was
        if side.random() < 0.7:
            names.insert(int(side.integers(0, len(names) + 1)), "dt")
    r = pa.table({c: cols[c] for c in names})
    m = int(rng.choice([0, 0, 1, 4, 12]))
    u = pa.table({
        "k": pa.array(rng.integers(0, 7, m), pa.int64(), mask=_nulls(rng, m, 0.2)),
        "v": pa.array(np.round(rng.normal(0, 10, m), 1), pa.float64(), mask=_nulls(rng, m, 0.2)),
        "w": pa.array([WORDS[j] for j in rng.integers(0, len(WORDS), m)], pa.string()),
    })
    return r, u, f"DECIMAL({p},{s}) {'big' if big else 'fit'}" if "d" in names else "no d"


def kind_of(t: pa.DataType) -> str:
    if pa.types.is_dictionary(t):
        return kind_of(t.value_type)
    if pa.types.is_boolean(t):
        return "bool"
    if pa.types.is_integer(t):
        return "int"
    if pa.types.is_floating(t):
        return "float"
    if pa.types.is_decimal(t):
        return "dec"
    if pa.types.is_timestamp(t):
        return "tstz" if t.tz else "ts"
    if pa.types.is_date(t):
        return "date"
    if pa.types.is_list(t):
        return "list"
    if pa.types.is_struct(t):
        return "struct"
    return "str"


def _csv_text(v, kind: str) -> str:
    if v is None:
        return ""
    if kind == "float":
        return "nan" if math.isnan(v) else "inf" if v == math.inf else "-inf" if v == -math.inf else repr(v)
    if kind in ("ts", "tstz", "date"):
        return v.isoformat(sep=" ") if kind != "date" else v.isoformat()
    if kind == "bool":
        return "true" if v else "false"
    if kind == "str":
        return '"' + v.replace('"', '""') + '"' if any(ch in v for ch in ',;"\n ') else v
    return str(v)


def write_csv(t: pa.Table, path: Path, header: bool, sep: str) -> None:
    kinds = [kind_of(c.type) for c in t.columns]
    lines = [sep.join(t.column_names)] if header else []
    for row in zip(*(c.to_pylist() for c in t.columns), strict=True):
        lines.append(sep.join(_csv_text(v, k) for v, k in zip(row, kinds, strict=True)))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def frame(w: World, decoded: bool = False):
    """``r`` as the object registered: an Arrow table, or a pandas or polars frame;
    ``decoded``: its dictionary columns as their values' type."""
    r = pa.table({n: _decoded(w.r[n]) for n in w.r.column_names}) if decoded else w.r
    if w.frame == "pandas":
        return r.to_pandas()
    if w.frame == "polars":
        import polars as pl

        return pl.from_arrow(r)
    return r


def build_world(seed: int, workdir: Path, mode: str | None = None) -> World:
    """World ``seed``: its tables, written where its mode needs them under ``workdir``."""
    rng = np.random.default_rng(seed)
    modes = list(MODES)
    weights = np.array([MODES[m] for m in modes], float)
    mode = mode or str(rng.choice(modes, p=weights / weights.sum()))
    r, u, decimal = make_tables(rng, mode)
    wdir = workdir / f"w{seed}"
    if wdir.exists():
        shutil.rmtree(wdir)
    wdir.mkdir(parents=True)
    w = World(seed, mode, r, u, [Col(n, kind_of(r.schema.field(n).type)) for n in r.column_names],
              decimal, dir=wdir, page_size=int(rng.choice([512, 4096])))
    if mode == "register":
        x = rng.random()
        w.frame = "pandas" if x < 0.15 else "polars" if x < 0.3 and _has("polars") else ""
        if w.frame:  # a frame of the plain columns
            keep = [c.name for c in w.cols if c.kind in ("int", "float", "str", "ts", "bool")]
            w.r = r.select(keep)
            w.cols = [c for c in w.cols if c.name in keep]
        return w
    if mode == "store":
        return w
    upath = wdir / "u.parquet"
    pq.write_table(u, upath)
    w.u_from = f"'{upath}' AS u"
    if mode.startswith("parquet"):
        if mode == "parquet":
            path = wdir / "r.parquet"
            pq.write_table(r, path, row_group_size=int(rng.choice([7, 64, 100_000])))
            w.r_from = f"'{path}' AS r"
        else:
            (wdir / "r").mkdir()
            cut = sorted(int(x) for x in rng.integers(0, r.num_rows + 1, 2))
            for j, (a, b) in enumerate(zip([0, *cut], [*cut, r.num_rows], strict=True)):
                pq.write_table(r.slice(a, b - a), wdir / "r" / f"part-{j}.parquet")
            w.r_from = f"'{wdir}/r/*.parquet' AS r"
        return w
    # CSV: the columns a CSV holds as text DuckDB sniffs back (no dates of years < 1000)
    keep = [c.name for c in w.cols if c.kind in ("int", "float", "dec", "str", "bool", "ts", "tstz")
            or (c.kind == "date" and all(v.year >= 1000 for v in r[c.name].to_pylist() if v is not None))]
    if any(c.kind in ("ts", "tstz") for c in w.cols):
        years = [v.year for c in w.cols if c.kind in ("ts", "tstz")
                 for v in r[c.name].to_pylist() if v is not None]
        if years and min(years) < 1000:
            keep = [c for c in keep if kind_of(r.schema.field(c).type) not in ("ts", "tstz")]
    r = r.select(keep)
    w.cols = [c for c in w.cols if c.name in keep]
    header = mode != "csv-noheader"
    sep = ";" if mode == "csv-semicolon" else ","
    if not header:
        w.cols = [Col(f"column{j}", c.kind) for j, c in enumerate(w.cols)]
    if mode == "csv-glob":
        (wdir / "r").mkdir()
        half = r.num_rows // 2
        write_csv(r.slice(0, half), wdir / "r" / "a.csv", header, sep)
        write_csv(r.slice(half), wdir / "r" / "b.csv", header, sep)
        w.r_from = f"'{wdir}/r/*.csv' AS r"
    else:
        path = wdir / "r.csv"
        write_csv(r, path, header, sep)
        w.r_from = f"'{path}' AS r"
    w.r = r
    return w


# -- queries ------------------------------------------------------------------------------
class Gen:
    """Random SQL over a world's columns (text with ``{r}`` and ``{u}`` for the tables)."""

    def __init__(self, w: World, rng: np.random.Generator) -> None:
        self.w, self.rng = w, rng
        self.by_kind: dict[str, list[str]] = {}
        for c in w.cols:
            self.by_kind.setdefault(c.kind, []).append(c.name)

    def pick(self, seq):
        return seq[int(self.rng.integers(0, len(seq)))]

    def chance(self, p: float) -> bool:
        return bool(self.rng.random() < p)

    def col(self, kinds: Sequence[str] = ORDERED) -> tuple[str, str] | None:
        opts = [(n, k) for k in kinds for n in self.by_kind.get(k, [])]
        return self.pick(opts) if opts else None

    # constants
    def dec_literal(self, name: str) -> str:
        r = self.w.r
        vals = [v for v in r[name].to_pylist() if v is not None] if name in r.column_names else []
        how = self.pick(["value", "beside", "digits", "int", "double"])
        if how in ("value", "beside") and vals and isinstance(vals[0], Decimal):
            v = self.pick(vals)
            if how == "beside":
                step = Decimal(1).scaleb(v.as_tuple().exponent - int(self.rng.integers(0, 6)))
                v = v + self.pick([1, -1]) * step
            return format(v, "f")
        if how == "int":
            return str(self.pick([0, 1, -1, 10**14, 10**17, -(10**18), 10**20]))
        if how == "double":
            return self.pick(["1.5e0", "-2e14", "1e17"])
        whole = int(self.rng.integers(0, 21))
        frac = int(self.rng.integers(0, 39 - whole))
        text = "".join(str(x) for x in self.rng.integers(0, 10, whole)) or "0"
        if frac:
            text += "." + "".join(str(x) for x in self.rng.integers(0, 10, frac))
        return ("-" if self.chance(0.4) else "") + text

    def literal(self, kind: str, name: str = "") -> str:
        if kind == "int":
            return self.pick(["0", "1", "-1", "3", "2.5", "9223372036854775807",
                              "-9223372036854775807", "-9223372036854775808", "1e18", "NULL"])
        if kind == "float":
            return self.pick(["0", "-0.0", "1.5", "-100.25", "'NaN'::DOUBLE", "'inf'::DOUBLE",
                              "'-inf'::DOUBLE", "1e308", "5e-324", "NULL"])
        if kind == "dec":
            return self.dec_literal(name)
        if kind == "str":
            return "'" + self.pick([*WORDS, "m"]).replace("'", "''") + "'"
        if kind == "ts":
            y = self.pick([1, 1900, 1969, 1970, 2000, 2050, 9999])
            return f"TIMESTAMP '{y:04d}-06-15 12:00:00'"
        if kind == "tstz":
            y = self.pick([1969, 1970, 2000, 2050])
            return f"TIMESTAMPTZ '{y}-06-15 12:00:00+00'"
        if kind == "date":
            day = self.pick(["0001-01-01", "1969-12-31", "1970-01-01", "2000-02-29", "9999-12-31"])
            return f"DATE '{day}'"
        if kind == "bool":
            return self.pick(["true", "false"])
        return "NULL"

    # predicates
    def subquery_pred(self) -> str:
        """An IN / NOT IN / EXISTS / scalar subquery, mostly empty, sometimes ill-formed."""
        empty = self.pick(["false", "k > 100", "1 = 0", "w = 'no such word'", "k IS NULL AND k IS NOT NULL"])
        where = f" WHERE {empty}" if self.chance(0.75) else self.pick(["", " WHERE k < 3"])
        c = self.col(("int", "float", "dec")) or ("k", "int")
        col = c[0]
        inner = self.pick(["k", "k", "v", "CAST(k AS DOUBLE)", "MAX(k)"])
        bad = self.chance(0.25)
        if bad:  # DuckDB refuses each of these, whatever the subquery returns
            s = self.col(("str", "ts", "tstz", "date")) or ("nosuch", "")
            col, inner = self.pick([("nosuch", inner), (col, "nosuch"), (f"({col} + nosuch)", inner),
                                    (s[0], "k"), (col, "w"), (col, "k, v")])
            if inner.startswith("MAX"):
                inner = "k"
        elif inner.startswith("MAX"):  # an aggregate over no rows is one NULL row
            where = where if self.chance(0.5) else " WHERE false"
        shape = self.pick(["in", "not in", "exists", "not exists", "scalar", "scalar-agg"])
        if shape == "in":
            return f"{col} IN (SELECT {inner} FROM {{u}}{where})"
        if shape == "not in":
            return f"{col} NOT IN (SELECT {inner} FROM {{u}}{where})"
        if shape in ("exists", "not exists"):
            sel = "nosuch" if bad and self.chance(0.5) else self.pick(["1", "*", "k"])
            return f"{'NOT ' if shape == 'not exists' else ''}EXISTS (SELECT {sel} FROM {{u}}{where})"
        op = self.pick(["=", "<>", "<", ">="])
        if shape == "scalar":  # a scalar subquery of no row is NULL
            return f"{col} {op} (SELECT {inner if ',' not in inner else 'k'} FROM {{u}} WHERE false)"
        agg = self.pick(["MAX(k)", "MIN(v)", "COUNT(*)", "SUM(k)"])
        return f"{col} {op} (SELECT {agg} FROM {{u}}{where})"

    def leaf(self) -> str:
        how = self.pick(["cmp", "cmp", "cmp", "cols", "between", "in", "null", "sub", "sub",
                         "bool", "extract"])
        if how == "sub":
            return self.subquery_pred()
        if how == "bool" and "bool" in self.by_kind:
            b = self.pick(self.by_kind["bool"])
            return self.pick([b, f"NOT {b}", f"{b} = true", f"{b} IS NOT TRUE"])
        if how == "extract" and (c := self.col(("ts", "tstz", "date"))):
            part = self.pick(["year", "month", "hour", "dow"] if c[1] != "date" else ["year", "month", "dow"])
            op, v = self.pick(["<", ">=", "="]), self.pick([1, 3, 1970, 2000])
            return f"EXTRACT({part} FROM {c[0]}) {op} {v}"
        c = self.col()
        if c is None:
            return "true"
        name, kind = c
        if how == "null":
            return f"{name} IS {'NOT ' if self.chance(0.5) else ''}NULL"
        if how == "cols":
            other = self.col(NUMERIC if kind in NUMERIC else (kind,))
            if other:
                return f"{name} {self.pick(['=', '<>', '<', '>='])} {other[0]}"
        if how == "between":
            a, b = self.literal(kind, name), self.literal(kind, name)
            return f"{name} {'NOT ' if self.chance(0.3) else ''}BETWEEN {a} AND {b}"
        if how == "in":
            vals = ", ".join(self.literal(kind, name) for _ in range(int(self.rng.integers(1, 4))))
            return f"{name} {'NOT ' if self.chance(0.3) else ''}IN ({vals})"
        if kind == "dec" and self.chance(0.3):
            expr = self.pick([f"{name} + e" if "e" in self.by_kind.get("dec", []) else f"{name} + 1",
                              f"{name} * 2", f"-{name}", f"ABS({name})", f"{name} - 1.5"])
            return f"{expr} {self.pick(['=', '<>', '<', '<=', '>', '>='])} {self.dec_literal(name)}"
        return f"{name} {self.pick(['=', '<>', '<', '<=', '>', '>='])} {self.literal(kind, name)}"

    def predicate(self, depth: int = 2) -> str:
        if depth == 0 or self.chance(0.5):
            return self.leaf()
        a, b = self.predicate(depth - 1), self.predicate(depth - 1)
        return self.pick([f"({a} AND {b})", f"({a} OR {b})", f"NOT ({a})"])

    # select lists
    def agg(self) -> str:
        c = self.col(("int", "float", "dec", "str", "ts", "tstz", "date", "bool"))
        if c is None:
            return "COUNT(*)"
        name, kind = c
        opts = ["COUNT(*)", f"COUNT({name})", f"MIN({name})", f"MAX({name})", f"COUNT(DISTINCT {name})"]
        if kind in NUMERIC:
            opts += [f"SUM({name})", f"AVG({name})", f"SUM({name})"]
        if kind == "dec":
            opts += [f"SUM({name} + 1)", f"MAX({name} * 2)", f"MIN(-{name})"]
        if kind == "bool":
            opts = ["COUNT(*)", f"COUNT({name})", f"BOOL_AND({name})", f"BOOL_OR({name})",
                    f"COUNT(*) FILTER (WHERE {name})"]
        return self.pick(opts)

    def item(self) -> str:
        c = self.col(tuple(self.by_kind))
        if c is None:
            return "1"
        name, kind = c
        if kind == "dec" and self.chance(0.4):
            plus_e = f"{name} + e" if "e" in self.by_kind.get("dec", []) else name
            return self.pick([f"{name} + 1", f"{name} * 2", f"-{name}", f"ABS({name})",
                              f"CAST({name} AS DOUBLE)", plus_e])
        if kind == "float" and self.chance(0.3):
            return self.pick([f"{name} + 1", f"-{name}", f"ABS({name})"])
        return name

    def key(self) -> str:
        c = self.col(("int", "str", "bool", "dec", "date", "ts", "tstz", "float"))
        if c is None:
            return "k"
        if c[1] in ("ts", "tstz") and self.chance(0.6):
            return f"EXTRACT(year FROM {c[0]})"
        return c[0]

    def query(self) -> str:
        where = f" WHERE {self.predicate()}" if self.chance(0.8) else ""
        shape = self.pick(["count", "count", "aggs", "group", "group", "rows", "rows", "distinct",
                           "scalar-sub", "pass"])
        if shape == "count":
            return f"SELECT COUNT(*) FROM {{r}}{where}"
        if shape == "aggs":
            aggs = ", ".join(self.agg() for _ in range(int(self.rng.integers(1, 4))))
            return f"SELECT {aggs} FROM {{r}}{where}"
        if shape == "group":
            key = self.key()
            aggs = ", ".join(self.agg() for _ in range(int(self.rng.integers(1, 3))))
            return f"SELECT {key}, {aggs} FROM {{r}}{where} GROUP BY 1 ORDER BY 1"
        if shape == "distinct":
            return f"SELECT DISTINCT {self.key()} FROM {{r}}{where}"
        if shape == "scalar-sub":
            c = self.col(("int", "float", "dec")) or ("k", "int")
            sub = self.pick(["(SELECT MAX(k) FROM {u} WHERE false)", "(SELECT k FROM {u} WHERE false)",
                             "(SELECT COUNT(*) FROM {u} WHERE false)"])
            return f"SELECT {c[0]}, {sub} AS x FROM {{r}}{where}"
        if shape == "pass":
            names = [c.name for c in self.w.cols]
            chosen = [n for n in names if self.chance(0.5)] or names[:1]
            return f"SELECT {', '.join(chosen)} FROM {{r}}{where}"
        items = list(dict.fromkeys(self.item() for _ in range(int(self.rng.integers(1, 4)))))
        sql = f"SELECT {', '.join(items)} FROM {{r}}{where}"
        if self.chance(0.4):
            sql += " ORDER BY " + ", ".join(str(j + 1) for j in range(len(items)))
            if self.chance(0.5):
                sql += f" LIMIT {self.pick([0, 1, 5, 50])}"
        return sql


def queries(w: World, n: int, seed: int) -> list[str]:
    gen = Gen(w, np.random.default_rng(seed))
    return [gen.query() for _ in range(n)]


def text(w: World, sql: str) -> str:
    return sql.replace("{r}", w.r_from).replace("{u}", w.u_from)


# -- the two engines --------------------------------------------------------------------
def duck_connection(w: World) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.execute("SET error_on_division_by_zero = false")  # x/0 is inf, as in bamql
    if w.mode in ("store", "register"):
        # a dictionary column is an ENUM to DuckDB, ordered by its codes; to bamql it is the
        # VARCHAR of its values, ordered as text: DuckDB is given the values
        con.register("r", frame(w, decoded=True))
        con.register("u", w.u)
    return con


def _decoded(col: pa.ChunkedArray) -> pa.ChunkedArray:
    return col.cast(col.type.value_type) if pa.types.is_dictionary(col.type) else col


def bamql_connection(w: World, device: str, backend: str | None, cache: str | None):
    import bamql
    from bamql.storage.ingest import ingest

    kw = {"device": device}
    if device == "gpu":
        kw.update(backend=backend, cache=cache)
    if w.mode == "store":
        data = w.dir / "data"
        for name, t in (("r", w.r), ("u", w.u)):
            src = w.dir / f"{name}.parquet"
            pq.write_table(t, src)
            ingest([src], data / name, page_size=w.page_size)
        return bamql.connect(data, **kw)
    con = bamql.connect(None, **kw)
    if w.mode == "register":
        con.register("u", w.u)
        con.register("r", frame(w))
    return con


# -- comparison ---------------------------------------------------------------------------
def value_kind(v) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return "float"
    if isinstance(v, Decimal):
        return "dec"
    if isinstance(v, dt.datetime):
        return "tstz" if v.tzinfo else "ts"
    if isinstance(v, dt.date):
        return "date"
    return type(v).__name__


def same_value(a, b, loose_overflow: bool = False) -> bool:
    """Equal as SQL values: NULL = NULL, NaN = NaN, -0.0 = 0.0, doubles to 1e-9 relative,
    integers and DECIMALs exactly (a DECIMAL against a double: to 1e-9, counted ``typed``)."""
    ka, kb = value_kind(a), value_kind(b)
    if "null" in (ka, kb):
        return ka == kb
    if ka in ("int", "dec", "bool") and kb in ("int", "dec", "bool"):
        return Decimal(int(a) if isinstance(a, bool) else a) == Decimal(int(b) if isinstance(b, bool) else b)
    if {ka, kb} <= {"int", "float", "dec", "bool"}:
        x, y = float(a), float(b)
        if loose_overflow and not math.isfinite(x) and not math.isfinite(y):
            return True
        if math.isnan(x) or math.isnan(y):
            return math.isnan(x) and math.isnan(y)
        return math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_value(x, y, loose_overflow)
                                        for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k], loose_overflow) for k in a)
    if ka != kb:
        return False
    return a == b


def _whole_decimal(a, b) -> bool:
    """An integer beside a DECIMAL of scale 0: DuckDB's HUGEINT (a SUM of BIGINTs) is
    Arrow's decimal128(38, 0), as bamql answers it."""
    return any(isinstance(x, int) and not isinstance(x, bool) for x in (a, b)) and \
        any(isinstance(x, Decimal) and x.as_tuple().exponent == 0 for x in (a, b))


def _sort_key(v):
    k = value_kind(v)
    if k == "null":
        return (9, "")
    if k in ("int", "float", "dec", "bool"):
        x = float(v)
        return (8, "") if math.isnan(x) else (1, x + 0.0)
    if isinstance(v, dt.datetime):
        return (2, (v.astimezone(dt.UTC).replace(tzinfo=None) if v.tzinfo else v).isoformat())
    if isinstance(v, dt.date):
        return (2, v.isoformat())
    return (3, repr(v))


def compare(ours: list[tuple], ref: list[tuple], ordered: bool, loose_overflow: bool = False) -> str:
    """``ok``, ``typed`` (equal values, another kind of value in some column) or ``wrong``;
    ``loose_overflow``: any two non-finite doubles (NaN, +-inf) are equal."""
    if len(ours) != len(ref) or any(len(a) != len(b) for a, b in zip(ours, ref, strict=False)):
        return "wrong"
    if not ordered:
        key = lambda row: tuple(_sort_key(v) for v in row)  # noqa: E731
        ours, ref = sorted(ours, key=key), sorted(ref, key=key)
    typed = False
    for r1, r2 in zip(ours, ref, strict=True):
        for a, b in zip(r1, r2, strict=True):
            if not same_value(a, b, loose_overflow):
                return "wrong"
            ka, kb = value_kind(a), value_kind(b)
            if "null" not in (ka, kb) and ka != kb and not _whole_decimal(a, b):
                typed = True
    return "typed" if typed else "ok"


def _plain(v):
    if isinstance(v, float) and not math.isfinite(v):
        return repr(v)
    if isinstance(v, dt.date | Decimal):
        return f"{type(v).__name__}({v})"
    if isinstance(v, int) and not isinstance(v, bool) and abs(v) > 2**53:
        return str(v)
    if isinstance(v, list | dict | tuple):
        return repr(v)
    return v


def _rows(rows: list[tuple] | None, limit: int = 6) -> list | None:
    return None if rows is None else [[_plain(v) for v in r] for r in rows[:limit]]


@dataclass
class Outcome:
    world: int
    mode: str
    status: str
    sql: str
    ours: list | None = None
    ref: list | None = None
    error: str = ""
    ref_error: str = ""
    seconds: float | None = None
    extra: dict = field(default_factory=dict)

    def line(self) -> str:
        return json.dumps({k: v for k, v in asdict(self).items() if v not in (None, "", {})},
                          ensure_ascii=False, default=str)


def classify_error(e: BaseException) -> tuple[str, str]:
    """("refused", line) for a one-line bamql error; ("error", traceback) otherwise."""
    from bamql.errors import BamqlError

    msg = str(e).strip()
    if isinstance(e, BamqlError) and "\n" not in msg and "Traceback" not in msg and msg:
        return "refused", one_line(e)
    return "error", one_line(e) + " | " + traceback.format_exc()[-2000:]


def check(con, duck: duckdb.DuckDBPyConnection, w: World, sql: str) -> Outcome:
    """One query on both engines."""
    q = text(w, sql)
    ordered = "ORDER BY" in sql
    o = Outcome(w.seed, w.mode, "ok", q)
    try:
        ref = duck.sql(q).fetchall()
        ref_err = None
    except Exception as e:  # noqa: BLE001 - DuckDB's refusal is part of the check
        ref, ref_err = None, e
    t0 = time.perf_counter()
    try:
        ours = con.sql(q).rows()
        err = None
    except Exception as e:  # noqa: BLE001
        ours, err = None, e
        kind, msg = classify_error(e)
    o.seconds = round(time.perf_counter() - t0, 3)
    if err is not None:
        o.error = msg
        if ref_err is not None:
            o.ref_error = one_line(ref_err)
        o.status = kind if kind == "error" else "both-refused" if ref_err is not None else "refused"
        o.ref = _rows(ref)
        return o
    if ref_err is not None:
        o.ref_error, o.ours = one_line(ref_err), _rows(ours)
        range_err = isinstance(ref_err, duckdb.OutOfRangeException | duckdb.ConversionException)
        o.status = "ref-range" if range_err else "wrong"
        if o.status == "wrong":
            _by_name(o, duck, w, sql, ours, ordered)
        return o
    o.status = compare(ours, ref, ordered)
    sums = "SUM(" in sql or "AVG(" in sql
    if o.status == "wrong" and sums and compare(ours, ref, ordered, True) != "wrong":
        # a sum of doubles that overflows is -inf, +inf or NaN by the order it adds them in
        # (+-1.8e308 both present), which SQL leaves open: DuckDB adds in row order, bamql
        # in parallel parts
        o.status = "float-order"
    if o.status == "wrong":
        _by_name(o, duck, w, sql, ours, ordered)
    if o.status == "wrong" and w.mode.startswith("parquet"):
        mem = duck_over_rows(w, sql)
        if mem is not None and compare(ours, mem, ordered) != "wrong":
            # DuckDB's Parquet reader differs from DuckDB over the same rows (it prunes row
            # groups by statistics that leave NaN out): DuckDB's bug, not bamql's
            o.status, o.extra = "ref-file-bug", {"duckdb_over_rows": _rows(mem)}
    if o.status != "ok":
        o.ours, o.ref = _rows(ours), _rows(ref)
    return o


def by_name_from(w: World) -> str:
    """A glob world's FROM as DuckDB's reader with ``union_by_name = true`` (and, of CSVs,
    the standard quote)."""
    if w.mode.startswith("parquet"):
        return f"read_parquet('{w.dir}/r/*.parquet', union_by_name = true) AS r"
    return f"read_csv('{w.dir}/r/*.csv', union_by_name = true, quote = '\"') AS r"


def _by_name(o: Outcome, duck, w: World, sql: str, ours: list[tuple], ordered: bool) -> None:
    """A glob world's wrong answer ``o`` made ``by-name`` where DuckDB, asked to read the
    files by name (``by_name_from``), answers as bamql. DuckDB reads every file of a glob
    with the first one's columns and sniffed dialect: it refuses files whose columns
    differ, and where the first file has no quoted field it keeps the quotes of the others
    (``"a b"`` for ``a b``); bamql reads each file by its own header and dialect, by name
    (``storage.fileoptions``)."""
    if not w.mode.endswith("glob"):
        return
    try:
        by_name = duck.sql(text(w, sql).replace(w.r_from, by_name_from(w))).fetchall()
    except Exception:  # noqa: BLE001
        return
    if compare(ours, by_name, ordered) != "wrong":
        o.status, o.extra = "by-name", {"duckdb_union_by_name": _rows(by_name)}


def duck_over_rows(w: World, sql: str) -> list[tuple] | None:
    """DuckDB's answer over the rows of a Parquet world's files, read back by pyarrow and
    registered (not read by DuckDB's Parquet reader); None where it raises."""
    files = [w.dir / "r.parquet"] if w.mode == "parquet" else sorted((w.dir / "r").glob("*.parquet"))
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.execute("SET error_on_division_by_zero = false")
    con.register("r_rows", pa.concat_tables([pq.read_table(f) for f in files]))
    con.register("u_rows", pq.read_table(w.dir / "u.parquet"))
    try:
        return con.sql(sql.replace("{r}", "r_rows AS r").replace("{u}", "u_rows AS u")).fetchall()
    except Exception:  # noqa: BLE001
        return None
    finally:
        con.close()


# -- the run -----------------------------------------------------------------------------
#: the check in flight and when it started (the watchdog's view)
IN_FLIGHT: list = [None, 0.0]


def run_world(seed: int, n_queries: int, workdir: Path, device: str = "cpu",
              backend: str | None = None, cache: str | None = None, mode: str | None = None,
              on_outcome: Callable[[Outcome], None] | None = None,
              on_world: Callable[[World], None] | None = None) -> list[Outcome]:
    """World ``seed`` and ``n_queries`` queries over it; every outcome, never an exception
    (a world bamql refuses to ingest or register refuses each of its queries)."""
    w = build_world(seed, workdir, mode)
    if on_world:
        on_world(w)
    sqls = queries(w, n_queries, seed + 1_000_003)
    out: list[Outcome] = []

    def emit(o: Outcome) -> None:
        out.append(o)
        if on_outcome:
            on_outcome(o)

    duck = duck_connection(w)
    try:
        con = bamql_connection(w, device, backend, cache)
    except Exception as e:  # noqa: BLE001
        kind, msg = classify_error(e)
        for sql in sqls:
            o = Outcome(w.seed, w.mode, "", text(w, sql), error="setup: " + msg)
            try:
                duck.sql(text(w, sql)).fetchall()
                o.status = kind if kind == "error" else "refused"
            except Exception as de:  # noqa: BLE001
                o.status, o.ref_error = (kind if kind == "error" else "both-refused"), one_line(de)
            emit(o)
        shutil.rmtree(w.dir, ignore_errors=True)
        return out
    try:
        for sql in sqls:
            IN_FLIGHT[:] = [(w, text(w, sql)), time.monotonic()]
            emit(check(con, duck, w, sql))
            IN_FLIGHT[:] = [None, 0.0]
    finally:
        con.close()
        duck.close()
        shutil.rmtree(w.dir, ignore_errors=True)
    return out


def _git_rev() -> str:
    import subprocess

    repo = Path(__file__).resolve().parents[2]
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                             cwd=repo, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "bamql"],
                               capture_output=True, text=True, cwd=repo, timeout=10).stdout.strip()
        return rev + ("+uncommitted bamql/ changes" if dirty else "")
    except Exception:  # noqa: BLE001
        return "?"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.sql.fuzz", description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=42, help="the run's seed (world j's seed is seed*100000+j)")
    ap.add_argument("--queries", type=int, default=2000, help="stop after this many queries")
    ap.add_argument("--per-world", type=int, default=25, help="queries per world")
    ap.add_argument("--device", default="cpu", choices=["cpu", "gpu"])
    ap.add_argument("--backend", default=None, choices=[None, "host", "gpu", "file"])
    ap.add_argument("--cache", default=None, help="GPU page-cache size (e.g. 64KiB)")
    ap.add_argument("--mode", default=None, choices=[None, *MODES], help="only worlds of this mode")
    ap.add_argument("--budget-s", type=float, default=None, help="start no world after this many seconds")
    ap.add_argument("--query-timeout", type=float, default=300, help="a query running longer is a hang")
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--log", type=Path, default=None, help="JSON lines (.gz: gzipped)")
    ap.add_argument("--quiet", action="store_true", help="print only the findings and the summary")
    a = ap.parse_args(argv)
    if a.device == "gpu" and a.backend is None:
        a.backend = "host"
    workdir = a.workdir or Path(tempfile.mkdtemp(prefix="bamql-fuzz-"))
    workdir.mkdir(parents=True, exist_ok=True)
    log = (gzip.open(a.log, "wt", encoding="utf-8") if a.log and a.log.suffix == ".gz"
           else a.log.open("w", encoding="utf-8") if a.log else None)
    counts: Counter = Counter()
    modes: Counter = Counter()
    lock = threading.Lock()
    t_start = time.monotonic()
    header = {"run": "tests.sql.fuzz", "seed": a.seed, "device": a.device, "backend": a.backend,
              "cache": a.cache, "rev": _git_rev(), "argv": sys.argv[1:] if argv is None else list(argv),
              "started": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")}
    if log:
        log.write(json.dumps(header) + "\n")

    def summary() -> dict:
        return {"summary": dict(counts), "total": sum(counts.values()), "modes": dict(modes),
                "seconds": round(time.monotonic() - t_start, 1), **header}

    def record(o: Outcome) -> None:
        with lock:
            counts[o.status] += 1
            modes[o.mode] += 1
            if log:
                log.write(o.line() + "\n")
                log.flush()
        if not a.quiet or o.status in ("wrong", "error", "hang", "ref-range", "ref-file-bug"):
            print(f"{o.status}: [w{o.world} {o.mode}] {o.sql} -> "
                  f"{o.error or ''} ours={o.ours} duckdb={o.ref} {o.ref_error}", flush=True)

    def world(w: World) -> None:
        with lock:
            if log:
                log.write(json.dumps({"world": w.seed, "describe": w.describe()}, ensure_ascii=False) + "\n")

    def watchdog() -> None:
        while True:
            time.sleep(2)
            o, t0 = IN_FLIGHT
            if o is not None and time.monotonic() - t0 > a.query_timeout:
                w, q = o
                why = f"still running after {a.query_timeout:.0f} s"
                record(Outcome(w.seed, w.mode, "hang", q, error=why))
                with lock:
                    if log:
                        log.write(json.dumps(summary()) + "\n")
                        log.close()
                print(json.dumps(summary()), flush=True)
                os._exit(3)

    threading.Thread(target=watchdog, daemon=True).start()
    j = 0
    try:
        while sum(counts.values()) < a.queries:
            if a.budget_s is not None and time.monotonic() - t_start > a.budget_s:
                break
            n = min(a.per_world, a.queries - sum(counts.values()))
            run_world(a.seed * 100_000 + j, n, workdir, a.device, a.backend, a.cache, a.mode, record,
                      world)
            j += 1
    finally:
        s = summary()
        s["worlds"] = j
        if log:
            log.write(json.dumps(s) + "\n")
            log.close()
        print(json.dumps(s), flush=True)
        if a.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    return 1 if counts["wrong"] or counts["error"] or counts["hang"] else 0


if __name__ == "__main__":
    sys.exit(main())
