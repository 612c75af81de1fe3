"""Date and time functions of the expression evaluator: EXTRACT, date_trunc, strftime,
date_diff, epoch, names of days and months.
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from bamql.errors import PlanError
from bamql.plan.evaluator import _BY_NAME, _UNIT_US, Value, _parse_time, _tname, handles, unit_name


def _ts(v: Value, what: str) -> Value:
    if pa.types.is_date(v.type):
        return v.cast(pa.timestamp("us"))
    if pa.types.is_string(v.type) and isinstance(v, pa.Scalar):
        return _parse_time(v, pa.timestamp("us"))
    if not pa.types.is_timestamp(v.type):
        raise PlanError(f"{what} needs a timestamp or a date, got a {_tname(v.type)} value")
    return v.cast(pa.timestamp("us", v.type.tz)) if v.type.unit != "us" else v


def extract(part: str, v: Value) -> Value:
    """``EXTRACT(part FROM v)`` as DuckDB answers it (BIGINT; epoch a DOUBLE)."""
    if part == "epoch":
        if pa.types.is_duration(v.type):
            return pc.divide(v.cast(pa.int64()).cast(pa.float64()), 1e6)
        us = _ts(v, "EXTRACT").cast(pa.timestamp("us")).cast(pa.int64())
        return pc.divide(us.cast(pa.float64()), 1e6)
    v = _ts(v, "EXTRACT")
    fns = {"year": pc.year, "month": pc.month, "day": pc.day, "hour": pc.hour,
           "minute": pc.minute, "second": pc.second, "quarter": pc.quarter,
           "doy": pc.day_of_year, "week": pc.iso_week, "isoyear": pc.iso_year,
           "millisecond": None, "microsecond": None}
    if part == "dow":
        return pc.day_of_week(v, count_from_zero=True, week_start=7)
    if part == "isodow":
        return pc.day_of_week(v, count_from_zero=False, week_start=1)
    if part in ("millisecond", "microsecond"):
        us = pc.add(pc.multiply(pc.second(v), 10**6), pc.add(pc.multiply(pc.millisecond(v), 1000),
                                                              pc.microsecond(v)))
        return us if part == "microsecond" else pc.divide(us, 1000)
    fn = fns.get(part)
    if fn is None:
        raise PlanError(f"EXTRACT({part.upper()}) is not supported")
    return fn(v)


@handles(exp.Extract)
def _extract(ev, e):
    return extract(unit_name(e.this), ev.eval(e.expression))


def _date_part(ev, e):
    args = e.expressions
    return extract(unit_name(ev.eval(args[0]).as_py()), ev.eval(args[1]))


#: date_trunc's units of several years, and their years
_YEARS = {"decade": 10, "century": 100, "millennium": 1000}


def _trunc(unit: str, v: Value) -> Value:
    v = _ts(v, "date_trunc()")
    if unit == "week":
        return pc.floor_temporal(v, unit="week", week_starts_monday=True)
    if unit in _YEARS:  # DuckDB: the year rounded down to a multiple of the unit's years
        out = pc.floor_temporal(v, multiple=_YEARS[unit], unit="year", calendar_based_origin=True)
        years = pc.year(out)
        first = (years if isinstance(years, pa.Scalar) else pc.min(years)).as_py()
        if first is not None and first < 1:
            raise PlanError(f"date_trunc({unit!r}) of a year before {_YEARS[unit]} is year 0 "
                            "(1 BC), which is not supported")
        return out
    if unit not in ("microsecond", "millisecond", "second", "minute", "hour", "day", "month",
                    "quarter", "year"):
        raise PlanError(f"date_trunc({unit!r}) is not supported")
    return pc.floor_temporal(v, unit=unit)


@handles(exp.TimestampTrunc, exp.DateTrunc, exp.DatetimeTrunc)
def _date_trunc(ev, e):
    # of a DATE too: the TIMESTAMP of its midnight, truncated (DuckDB's type, whatever the unit)
    return _trunc(unit_name(e.args.get("unit")), ev.eval(e.this))


@handles(exp.TimeToStr)
def _strftime(ev, e):
    fmt = ev.eval(e.args["format"]).as_py()
    if "%-" in fmt:
        raise PlanError("strftime's unpadded fields (%-d, %-m, ...) are not supported")
    v = _ts(ev.eval(e.this), "strftime()")
    if "%S" in fmt:  # Arrow writes the seconds' fraction with %S; DuckDB whole seconds
        v = pc.floor_temporal(v, unit="second").cast(pa.timestamp("s", v.type.tz))
    return pc.strftime(v, format=fmt)


@handles(exp.Dayname)
def _dayname(ev, e):
    return pc.strftime(_ts(ev.eval(e.this), "dayname()"), format="%A")


@handles(exp.DateDiff, exp.TimestampDiff, exp.DatetimeDiff)
def _date_diff(ev, e):
    unit = unit_name(e.args.get("unit") or "day")
    end, start = _ts(ev.eval(e.this), "date_diff()"), _ts(ev.eval(e.expression), "date_diff()")
    if unit in ("year", "quarter", "month"):
        months = pc.add(pc.multiply(pc.subtract(pc.year(end), pc.year(start)), 12),
                        pc.subtract(pc.month(end), pc.month(start)))
        per = {"year": None, "quarter": 3, "month": 1}[unit]
        if per is None:
            return pc.subtract(pc.year(end), pc.year(start))
        if per == 3:
            q = pc.add(pc.multiply(pc.subtract(pc.year(end), pc.year(start)), 4),
                       pc.subtract(pc.quarter(end), pc.quarter(start)))
            return q
        return months
    if unit not in _UNIT_US:
        raise PlanError(f"date_diff({unit!r}) is not supported")
    tu = "week" if unit == "week" else unit
    a = _trunc(tu, end).cast(pa.int64()) if unit != "microsecond" else end.cast(pa.int64())
    b = _trunc(tu, start).cast(pa.int64()) if unit != "microsecond" else start.cast(pa.int64())
    return pc.divide(pc.subtract(a, b), _UNIT_US[unit])


def _epoch(ev, e):
    return extract("epoch", ev.eval(e.expressions[0] if e.expressions else e.this))


def _month_name(ev, e):
    return pc.strftime(_ts(ev.eval(e.expressions[0] if e.expressions else e.this), "monthname()"),
                       format="%B")


@handles(exp.Anonymous)
def _anonymous(ev, e: exp.Anonymous):
    fn = _ANON.get(e.name.lower())
    if fn is None:
        raise PlanError(f"function {e.name}() is not supported")
    return fn(ev, e)


def _unit_fn(part: str):
    def h(ev, e):
        arg = e.expressions[0] if isinstance(e, exp.Anonymous) else e.this
        return extract(part, ev.eval(arg))
    return h


_ANON: dict[str, Callable] = {
    "date_part": _date_part, "datepart": _date_part, "epoch": _epoch, "monthname": _month_name,
    "hour": _unit_fn("hour"), "minute": _unit_fn("minute"), "second": _unit_fn("second"),
    "dayofweek": _unit_fn("dow"), "isodow": _unit_fn("isodow"),
}
for _k, _p in (("Year", "year"), ("Month", "month"), ("Day", "day"), ("DayOfWeek", "dow"),
               ("DayOfYear", "doy"), ("WeekOfYear", "week"), ("Quarter", "quarter"),
               ("DayOfMonth", "day"), ("Hour", "hour"), ("Minute", "minute"), ("Second", "second")):
    _BY_NAME[_k] = _unit_fn(_p)
_BY_NAME["MonthName"] = _month_name
_BY_NAME["Epoch"] = _epoch
