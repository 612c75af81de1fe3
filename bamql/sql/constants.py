"""SQL constants that need care to stay exact: timestamp text as int64 microseconds, and an
integer compared with a constant that is no int64 (``2.5``, ``1e19``) as comparisons with
int64 thresholds."""

from __future__ import annotations

import re
from fractions import Fraction

import numpy as np

from bamql.errors import PlanError
from bamql.fused import ir
from bamql.intmath import I64_MAX, I64_MIN, first_above, first_at_least

#: A UTC offset at the end of a timestamp's text (``Z``, ``+02``, ``-05:30``, ``+0530``)
_OFFSET = re.compile(r"(?<=\d)\s*(Z|[+-]\d{2}(?::?\d{2})?)$", re.IGNORECASE)


def timestamp_us(text: str, zoned: bool = False) -> int:
    """A timestamp constant as int64 microseconds since 1970, exactly: NumPy wraps silently
    beyond the int64 range (``'300000-01-01'``), so the seconds are parsed apart from the
    fraction and the microseconds computed with Python integers, then checked.

    A UTC offset after the time (``'2024-06-01 05:30:00+02'``) is applied where ``zoned``
    (a TIMESTAMP WITH TIME ZONE: the instant, in UTC microseconds) and dropped where not
    (a TIMESTAMP: its wall-clock time), as DuckDB casts the text."""
    s = text.strip()
    shift = 0
    m = _OFFSET.search(s) if re.search(r"\d[ T]\d", s) else None
    if m is not None:
        s = s[: m.start()]
        off = m.group(1).upper().replace(":", "")
        if off != "Z" and zoned:
            shift = (int(off[1:3]) * 60 + int(off[3:5] or 0)) * 60_000_000
            shift = -shift if off[0] == "+" else shift
    s = s.replace(" ", "T")
    base, dot, frac = s.partition(".")
    out_of_range = PlanError(f"timestamp {text!r} is out of range: timestamps are int64 "
                             "microseconds, from -290308-12-21 to 294247-01-10")
    year = re.match(r"-?(\d+)", base)
    if year is not None and len(year.group(1)) > 6:  # too far for NumPy's days to be exact
        raise out_of_range
    try:
        if year is None or (dot and not frac.isdigit()):
            raise ValueError
        t = np.datetime64(base)
        unit = np.datetime_data(t.dtype)[0]
        if unit not in ("Y", "M", "W", "D", "h", "m", "s") or (dot and unit != "s"):
            raise ValueError
        day = t.astype("datetime64[D]")
        secs = int(day.astype(np.int64)) * 86400 + int((t - day) // np.timedelta64(1, "s"))
    except ValueError:
        raise PlanError(f"not a timestamp: {text!r} (use 'YYYY-MM-DD[ HH:MM:SS]')") from None
    us = secs * 1_000_000 + (int(frac[:6].ljust(6, "0")) if dot else 0) + shift  # below 1 us: cut
    if not I64_MIN < us <= I64_MAX:  # the minimum is the null sentinel
        raise out_of_range
    return us


def _below(a: ir.Expr, t: int, negate: bool = False) -> ir.Cmp:
    """``a < t`` (``a >= t`` with ``negate``) for an int64 expression ``a``: a threshold
    beyond int64 becomes a comparison that is always TRUE or always FALSE (NULL for NULL)."""
    if t > I64_MAX:  # a < t always: a <= MAX
        return ir.Cmp(">" if negate else "<=", a, ir.Lit(I64_MAX, "int"))
    if t <= I64_MIN:  # a < t never: a < MIN
        return ir.Cmp(">=" if negate else "<", a, ir.Lit(I64_MIN, "int"))
    return ir.Cmp(">=" if negate else "<", a, ir.Lit(t, "int"))


def int_compare(op: str, a: ir.Expr, c: int | float | Fraction) -> ir.Expr:
    """``a op c`` for an integer expression ``a`` and a constant that is no int64 (a decimal
    compared exactly, a double as SQL compares a BIGINT with a DOUBLE, an integer beyond
    int64) as comparisons with int64 constants, which kernels and zone maps compare exactly
    where a float comparison would round (``intmath``)."""
    ge, gt = first_at_least(c), first_above(c)  # x >= c from ge on, x > c from gt on
    if op == "=":
        return ir.And((_below(a, ge, negate=True), _below(a, gt)))
    if op == "<>":
        return ir.Or((_below(a, ge), _below(a, gt, negate=True)))
    return _below(a, ge if op in ("<", ">=") else gt, negate=op in (">", ">="))
