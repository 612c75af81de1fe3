"""The kernels' floor division and modulo by constants (``kernels.codegen.floor_div`` and
``floor_mod``: unsigned divisions in place of numba's signed ``//``) and the civil calendar
built on them, against Python's ``//``, ``%`` and ``datetime`` at the edges of int64."""

from __future__ import annotations

import datetime as dt

import numba
import numpy as np

from bamql.fused import ir
from bamql.kernels.codegen import ExprCompiler, floor_div, floor_mod

EDGES = np.array([-(1 << 63), -(1 << 63) + 1, -86400000001, -86400000000, -86399999999, -1, 0, 1,
                  86399999999, 86400000000, (1 << 63) - 1, -3600000000, 3599999999], np.int64)


def _compiled(body: str):
    ns: dict = {"np": np}
    exec(f"def f(x, out):\n    for i in range(x.shape[0]):\n        a = x[i]\n"
         f"        out[i] = {body}\n", ns)
    return numba.njit(ns["f"])


def test_floor_div_and_mod_match_python_at_the_edges_of_int64():
    rng = np.random.default_rng(3)
    x = np.concatenate([EDGES, rng.integers(-(1 << 63), (1 << 63) - 1, 20_000, dtype=np.int64)])
    for c in (1, 7, 24, 1000000, 3600000000, 86400000000):
        out = np.empty(len(x), np.int64)
        _compiled(floor_div("a", c))(x, out)
        assert out.tolist() == [int(v) // c for v in x], c
    small = np.concatenate([np.arange(-50, 50), rng.integers(-(1 << 40), 1 << 40, 5000)])
    for c in (7, 24, 60):
        out = np.empty(len(small), np.int64)
        _compiled(floor_mod("a", c))(small.astype(np.int64), out)
        assert out.tolist() == [int(v) % c for v in small], c


def _kernel_of(e: ir.Expr):
    """A numba loop writing ``e`` (over the timestamp column ``t``) for each row of ``x``."""
    comp = ExprCompiler(lambda name: "x[i]", {"t": -(1 << 63)}, indent="        ")
    v, _ = comp.compile(e)
    ns: dict = {"np": np}
    exec("def f(x, out):\n    for i in range(x.shape[0]):\n" + "\n".join(comp.lines)
         + f"\n        out[i] = {v}\n", ns)
    return numba.njit(ns["f"])


def _timestamps(seed: int) -> np.ndarray:
    epoch = dt.datetime(1970, 1, 1)
    lo = (dt.datetime(1, 1, 1) - epoch) // dt.timedelta(microseconds=1)
    hi = (dt.datetime(9999, 12, 31, 23) - epoch) // dt.timedelta(microseconds=1)
    rng = np.random.default_rng(seed)
    return np.concatenate([rng.integers(lo, hi, 20_000), np.array([lo, hi, 0, -1, 951782400000000])])


def _when(t_us: int) -> dt.datetime:
    return dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=t_us)


def test_extract_of_the_civil_calendar_matches_python_datetime():
    x = _timestamps(4)
    col = ir.Col("t", "timestamp")
    for part in ("year", "month", "day", "doy", "quarter", "hour", "minute", "second", "dow",
                 "isodow", "week", "isoyear"):
        out = np.empty(len(x), np.int64)
        _kernel_of(ir.Extract(part, col))(x, out)
        for t_us, got in zip(x.tolist(), out.tolist(), strict=True):
            t = _when(t_us)
            want = {"year": t.year, "month": t.month, "day": t.day, "hour": t.hour,
                    "minute": t.minute, "second": t.second,
                    "doy": t.timetuple().tm_yday, "quarter": (t.month - 1) // 3 + 1,
                    "dow": t.isoweekday() % 7, "isodow": t.isoweekday(),
                    "week": t.isocalendar()[1], "isoyear": t.isocalendar()[0]}[part]
            assert got == want, (part, t_us, got, want)


def test_date_trunc_matches_python_datetime():
    x = _timestamps(5)
    col = ir.Col("t", "timestamp")
    epoch, us = dt.datetime(1970, 1, 1), dt.timedelta(microseconds=1)
    for unit in ir.TruncUnit:
        out = np.empty(len(x), np.int64)
        _kernel_of(ir.Trunc(unit, col))(x, out)
        for t_us, got in zip(x.tolist(), out.tolist(), strict=True):
            t = _when(t_us)
            start = {"year": t.replace(month=1, day=1, hour=0, minute=0, second=0, microsecond=0),
                     "quarter": t.replace(month=(t.month - 1) // 3 * 3 + 1, day=1, hour=0,
                                          minute=0, second=0, microsecond=0),
                     "month": t.replace(day=1, hour=0, minute=0, second=0, microsecond=0),
                     "week": (t - dt.timedelta(days=t.weekday())).replace(
                         hour=0, minute=0, second=0, microsecond=0),
                     "day": t.replace(hour=0, minute=0, second=0, microsecond=0),
                     "hour": t.replace(minute=0, second=0, microsecond=0),
                     "minute": t.replace(second=0, microsecond=0),
                     "second": t.replace(microsecond=0)}[unit.value]
            if start.year < 1:
                continue
            assert got == (start - epoch) // us, (unit, t_us, got)
