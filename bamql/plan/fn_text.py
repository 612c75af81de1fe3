"""String functions of the expression evaluator.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from bamql.errors import PlanError
from bamql.plan.evaluator import Evaluator, Value, _tname, broadcast, handles


def const_int(ev: Evaluator, e: exp.Expression, what: str) -> int:
    """An integer argument that must be a constant (a position, a length, digits)."""
    v = ev.eval(e)
    if not isinstance(v, pa.Scalar) or not (pa.types.is_integer(v.type) or pa.types.is_floating(v.type)):
        raise PlanError(f"the {what} must be an integer constant")
    if not v.is_valid:
        raise PlanError(f"the {what} must not be NULL")
    return int(v.as_py())


def _str(v: Value, what: str) -> Value:
    if pa.types.is_null(v.type):
        return pa.scalar(None, pa.string()) if isinstance(v, pa.Scalar) else v.cast(pa.string())
    if not (pa.types.is_string(v.type) or pa.types.is_large_string(v.type)):
        raise PlanError(f"{what} needs a string, got a {_tname(v.type)} value")
    return v


@handles(exp.Upper)
def _upper(ev, e):
    return pc.utf8_upper(_str(ev.eval(e.this), "upper()"))


@handles(exp.Lower)
def _lower(ev, e):
    return pc.utf8_lower(_str(ev.eval(e.this), "lower()"))


@handles(exp.Length)
def _length(ev, e):
    return pc.utf8_length(_str(ev.eval(e.this), "length()")).cast(pa.int64())


@handles(exp.Substring)
def _substr(ev, e):
    s = _str(ev.eval(e.this), "substr()")
    start = const_int(ev, e.args["start"], "start of substr")
    ln = e.args.get("length")
    begin = start - 1 if start > 0 else (start if start < 0 else 0)
    if ln is None:
        return pc.utf8_slice_codeunits(s, begin)
    n = const_int(ev, ln, "length of substr")
    if n < 0:
        raise PlanError("substr with a negative length is not supported")
    if start == 0:
        n -= 1
    stop = begin + max(n, 0)
    if begin < 0 and stop >= 0:
        return pc.utf8_slice_codeunits(s, begin)
    return pc.utf8_slice_codeunits(s, begin, stop)


@handles(exp.Left)
def _left(ev, e):
    n = const_int(ev, e.expression, "length of left()")
    s = _str(ev.eval(e.this), "left()")
    return pc.utf8_slice_codeunits(s, 0, n) if n >= 0 else pc.utf8_slice_codeunits(s, 0, n)


@handles(exp.Right)
def _right(ev, e):
    n = const_int(ev, e.expression, "length of right()")
    s = _str(ev.eval(e.this), "right()")
    if n > 0:
        return pc.utf8_slice_codeunits(s, -n)
    return pc.utf8_slice_codeunits(s, -n) if n < 0 else pc.utf8_slice_codeunits(s, 0, 0)


def _as_text(v: Value) -> Value:
    if pa.types.is_string(v.type) or pa.types.is_large_string(v.type):
        return v
    if pa.types.is_null(v.type):
        return pa.scalar(None, pa.string()) if isinstance(v, pa.Scalar) else v.cast(pa.string())
    if pa.types.is_timestamp(v.type):
        return ts_text(v)
    if pa.types.is_floating(v.type):  # 7.0, -0.0, 1e+17, as DuckDB writes a DOUBLE
        if isinstance(v, pa.Scalar):
            return pa.scalar(None if not v.is_valid else repr(float(v.as_py())), pa.string())
        return pa.array([None if x is None else repr(float(x)) for x in v.to_pylist()], pa.string())
    if pa.types.is_boolean(v.type):
        return pc.if_else(v, "true", "false")
    return v.cast(pa.string())


def ts_text(v: Value) -> Value:
    """Timestamps as DuckDB writes them: seconds, then a fraction only where it is not 0;
    a TIMESTAMP WITH TIME ZONE then its offset (``+00``, ``-05:30``)."""
    def one(x) -> str | None:
        if x is None:
            return None
        s = x.strftime("%Y-%m-%d %H:%M:%S")
        s += f".{x.microsecond:06d}".rstrip("0") if x.microsecond else ""
        if x.tzinfo is not None:
            mins = int(x.utcoffset().total_seconds() // 60)
            h, m = divmod(abs(mins), 60)
            s += f"{'-' if mins < 0 else '+'}{h:02d}" + (f":{m:02d}" if m else "")
        return s
    v = v.cast(pa.timestamp("us", v.type.tz))
    if isinstance(v, pa.Scalar):
        return pa.scalar(one(v.as_py()), pa.string())
    return pa.array([one(x) for x in v.to_pylist()], pa.string())


@handles(exp.DPipe)
def _dpipe(ev, e):
    return pc.binary_join_element_wise(_as_text(ev.eval(e.left)), _as_text(ev.eval(e.right)), "")


@handles(exp.Concat)
def _concat(ev, e):
    n = ev.rel.rows
    vals = [broadcast(_as_text(ev.eval(x)), n).fill_null("") for x in e.expressions]
    return pc.binary_join_element_wise(*vals, "")  # concat reads NULL as '' (DuckDB)


@handles(exp.Trim)
def _trim(ev, e):
    s = _str(ev.eval(e.this), "trim()")
    chars = e.args.get("expression")
    pos = (e.args.get("position") or "BOTH").upper()
    if chars is not None:
        c = ev.eval(chars).as_py()
        fn = {"LEADING": pc.utf8_ltrim, "TRAILING": pc.utf8_rtrim}.get(pos, pc.utf8_trim)
        return fn(s, characters=c)
    fn = {"LEADING": pc.utf8_ltrim_whitespace, "TRAILING": pc.utf8_rtrim_whitespace}.get(
        pos, pc.utf8_trim_whitespace)
    return fn(s)


@handles(exp.RegexpLike)
def _regexp_matches(ev, e):
    pat = ev.eval(e.expression).as_py()
    return pc.match_substring_regex(_str(ev.eval(e.this), "regexp_matches()"), pat)


@handles(exp.RegexpReplace)
def _regexp_replace(ev, e):
    s = _str(ev.eval(e.this), "regexp_replace()")
    pat = ev.eval(e.expression).as_py()
    rep = ev.eval(e.args["replacement"]).as_py()
    mods = e.args.get("modifiers")
    flags = ev.eval(mods).as_py() if mods is not None else ""
    rep = rep.replace("\\", "\\\\") if "\\" in rep and not any(
        f"\\{d}" in rep for d in "0123456789") else rep
    return pc.replace_substring_regex(s, pat, rep, max_replacements=None if "g" in flags else 1)


@handles(exp.StartsWith)
def _starts(ev, e):
    s, prefix = _str(ev.eval(e.this), "starts_with()"), ev.eval(e.expression)
    if not isinstance(prefix, pa.Scalar):
        raise PlanError("starts_with() takes a string constant second argument")
    if not prefix.is_valid:  # NULL for every row
        return pa.scalar(None, pa.bool_()) if isinstance(s, pa.Scalar) else pa.nulls(len(s), pa.bool_())
    return pc.starts_with(s, _str(prefix, "starts_with()").as_py())


@handles(exp.Replace)
def _replace(ev, e):
    return pc.replace_substring(_str(ev.eval(e.this), "replace()"), ev.eval(e.expression).as_py(),
                                ev.eval(e.args["replacement"]).as_py())


@handles(exp.StrPosition)
def _strpos(ev, e):
    s = _str(ev.eval(e.this), "strpos()")
    sub = ev.eval(e.args.get("substr") or e.expression).as_py()
    if isinstance(s, pa.Scalar):
        return pa.scalar(None if not s.is_valid else s.as_py().find(sub) + 1, pa.int64())
    return pa.array([None if x is None else x.find(sub) + 1 for x in s.to_pylist()], pa.int64())
