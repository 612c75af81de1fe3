"""IR expressions -> straight-line Python source for numba (CPU njit and CUDA device code).

Every expression compiles to a pair of local variables: its value and whether it is valid
(not NULL). ``load(column)`` gives the source text that reads the current row's stored
value; NULL is the column's sentinel (for floats one NaN bit pattern, tested bit for bit,
since any other NaN is a value; the storage type's minimum otherwise), so a load is one
read, whatever the template that supplies it. A float column stored as scaled integers
(``storage.decimals``) is decoded right after its load.

Float comparisons follow DuckDB: NaN equals NaN and is larger than any other value
(``+inf`` included), so ``NaN > 5`` is TRUE and ``NaN < 5`` FALSE.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import singledispatchmethod

import numpy as np

from bamql.fused import ir
from bamql.fused.domains import FIXED_UNITS, MONTHS

_CMP = {"=": "==", "<>": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}

#: What a kernel flags in its error counters (``flag``): a group key outside its domain,
#: an int64 overflow of +, -, * or negation, ABS of int64's minimum, a CAST out of the range
#: of BIGINT or INTEGER. ``check_errors`` turns them into one error.
ERR_KEY, ERR_ADD, ERR_SUB, ERR_MUL, ERR_NEG, ERR_ABS, ERR_CAST64, ERR_CAST32 = range(8)
N_ERRORS = 8
_ERR_OF = {"+": ERR_ADD, "-": ERR_SUB, "*": ERR_MUL}
#: The canonical NaN's bits: every NaN group key's (``ExprCompiler.key_bits``)
NAN_BITS = int(np.array([np.nan]).view(np.int64)[0])
#: A hashed GROUP BY's seed (Fibonacci hashing's multiplier, 2**64 / golden ratio)
HASH_SEED = 0x9E3779B97F4A7C15
#: MurmurHash3's 64-bit finalizer: its multipliers and shift
FMIX_M1, FMIX_M2, FMIX_SHIFT = 0xFF51AFD7ED558CCD, 0xC4CEB9FE1A85EC53, 33
#: The finalizer as kernel lines over ``hh``: a double's bits differ in their high bits
#: only, which a multiply alone never carries down to a slot's low bits
FMIX_LINES = (f"hh = hh ^ (hh >> np.uint64({FMIX_SHIFT}))", f"hh = hh * np.uint64(0x{FMIX_M1:X})",
              f"hh = hh ^ (hh >> np.uint64({FMIX_SHIFT}))", f"hh = hh * np.uint64(0x{FMIX_M2:X})",
              f"hh = hh ^ (hh >> np.uint64({FMIX_SHIFT}))")


def hash_lines(bits: list[str]) -> list[str]:
    """Kernel lines that set ``hh`` (uint64) to the hash of the keys' canonical bits, the
    same in the CPU and GPU kernels: each key's bits XORed in, then the finalizer."""
    lines = [f"hh = np.uint64({HASH_SEED})"]
    for b in bits:
        lines += [f"hh = hh ^ np.uint64({b})", *FMIX_LINES]
    return lines


_I64_MIN = -(1 << 63)
_I64_MAX = (1 << 63) - 1

#: An IN list of at most this many values compiles to compares with each (its length is then
#: part of the kernel's shape); a longer one to a binary search of the sorted list.
SHORT_IN = 8

#: The kernel arguments that carry a query's constants (``Params.arrays``), in order.
PARAM_ARGS = ("PI", "PF", "LI", "LF")


@dataclass
class Params:
    """The constants of one query, passed to its kernel as arguments, so that queries that
    differ only in their constants share one compiled kernel.

    ``PI``/``PF`` hold scalar int64/float64 constants; ``LI``/``LF`` the sorted values of
    every ``IN`` list over integers/floats, one after another, each list's offset and
    length kept in ``PI``.
    """

    ints: list[int] = field(default_factory=list)
    floats: list[float] = field(default_factory=list)
    int_lists: list[np.ndarray] = field(default_factory=list)
    float_lists: list[np.ndarray] = field(default_factory=list)

    def scalar(self, value) -> str:
        """Source text that reads constant ``value`` from the arguments."""
        if isinstance(value, int | np.integer):
            self.ints.append(int(value))
            return f"PI[{len(self.ints) - 1}]"
        self.floats.append(float(value))
        return f"PF[{len(self.floats) - 1}]"

    def add_list(self, values: np.ndarray) -> int:
        """Register a sorted list (int64 or float64); return the index in ``PI`` of its
        offset in ``LI``/``LF``, its length following."""
        lists = self.int_lists if values.dtype.kind == "i" else self.float_lists
        off = sum(len(x) for x in lists)
        lists.append(values)
        self.ints += [off, len(values)]
        return len(self.ints) - 2

    def sorted_list(self, values: np.ndarray) -> tuple[str, str]:
        """Register a sorted list; source text of its first index and end in ``LI``/``LF``."""
        i = self.add_list(values)
        return f"PI[{i}]", f"PI[{i}] + PI[{i + 1}]"

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(PI, PF, LI, LF)``: each at least one element long (a device cannot map none)."""
        def cat(parts, dtype):
            a = np.concatenate(parts).astype(dtype) if parts else np.empty(0, dtype)
            return a if len(a) else np.zeros(1, dtype)

        return (cat([np.asarray(self.ints, np.int64)], np.int64),
                cat([np.asarray(self.floats, np.float64)], np.float64),
                cat(self.int_lists, np.int64), cat(self.float_lists, np.float64))


class ExprCompiler:
    """Emits source lines for expressions; ``sentinels[column]`` is its null sentinel and
    ``scales[column]``, when given and not 0, the decimals of a scaled-integer float.

    ``flag(code)``, when given, is the statement that records error ``code`` (``ERR_*``): an
    int64 ``+``, ``-``, ``*`` or negation of valid values that overflows is flagged, never
    silently wrapped; ``guard`` names a variable that must be true for the row to count
    (the GPU template's ``live``: a row already filtered out raises nothing).

    Constants are not written into the source: they are read from the kernel's arguments
    (``params``, ``PARAM_ARGS``), so the source, and the compiled kernel, depend only on
    the query's shape. What a constant's value changes in the code is part of the shape:
    NULL or not, int or float, NaN or not, and whether an ``IN`` list holds NULL or NaN.
    """

    def __init__(self, load: Callable[[str], str], sentinels: dict[str, object],
                 indent: str = "", scales: dict[str, int] | None = None,
                 flag: Callable[[int], str] | None = None, guard: str | None = None) -> None:
        self.load, self.sentinels, self.indent = load, sentinels, indent
        self.scales = scales or {}
        self.flag, self.guard = flag, guard
        self.lines: list[str] = []
        self.params = Params()
        #: lines the template puts before its row loop: each constant read from the
        #: arguments once into a local, so that the loop keeps it in a register
        self.prologue: list[str] = []
        self._n = 0
        self._cols: dict[str, tuple[str, str]] = {}
        #: variables that must all be true for an error to count: the branch a CASE takes
        self._active: list[str] = []

    def _var(self) -> tuple[str, str]:
        self._n += 1
        return f"v{self._n}", f"ok{self._n}"

    def emit(self, text: str) -> None:
        self.lines.append(self.indent + text)

    def compile(self, e: ir.Expr) -> tuple[str, str]:
        """Emit code for ``e``; return the names of its value and validity variables."""
        return self._node(e)

    @singledispatchmethod
    def _node(self, e: ir.Expr) -> tuple[str, str]:
        raise TypeError(f"codegen: cannot compile {type(e).__name__}")

    @_node.register
    def _(self, e: ir.Col) -> tuple[str, str]:
        if e.name not in self._cols:  # load each column once per row
            v, ok = self._var()
            self.emit(f"{v} = {self.load(e.name)}")
            s = self.sentinels[e.name]
            if s != s:  # a float: NULL is one NaN's bits (numba bitcasts a scalar .view)
                bits, w = nan_bits(s)
                self.emit(f"{ok} = np.float{w}({v}).view(np.int{w}) != {bits}")
            else:
                self.emit(f"{ok} = {v} != {s}")
            if self.scales.get(e.name):  # exact: one correctly rounded division
                self.emit(f"{v} = float({v}) / {float(10 ** self.scales[e.name])!r}")
            self._cols[e.name] = (v, ok)
        return self._cols[e.name]

    @_node.register
    def _(self, e: ir.Lit) -> tuple[str, str]:
        v, ok = self._var()
        if e.value is None:
            self.emit(f"{v} = 0")
            self.emit(f"{ok} = False")
        else:
            self.emit(f"{v} = {self._constant(e.value)}")
            self.emit(f"{ok} = True")
        return v, ok

    @_node.register
    def _(self, e: ir.Neg) -> tuple[str, str]:
        v, ok = self._var()
        a, oa = self.compile(e.arg)
        if e.kind == "int":  # -MIN does not fit int64
            self._int_op(v, ERR_NEG, f"int({a}) == {_I64_MIN}", f"-int({a})", oa)
        else:
            self.emit(f"{v} = -{a}")
        self.emit(f"{ok} = {oa}")
        return v, ok

    def _arith(self, e: ir.Arith) -> tuple[str, str]:
        v, ok = self._var()
        a, oa = self.compile(e.left)
        b, ob = self.compile(e.right)
        if e.op == "/":  # always float division; x/0 is +-inf or NaN, as in IEEE
            self.emit(f"{v} = float({a}) / float({b})")
        elif e.kind == "float":
            self.emit(f"{v} = float({a}) {e.op} float({b})")
        else:
            x, y = f"int({a})", f"int({b})"
            self._int_op(v, _ERR_OF[e.op], _overflows(e.op, x, y), f"{x} {e.op} {y}",
                         f"{oa} and {ob}")
        self.emit(f"{ok} = {oa} & {ob}")
        return v, ok

    # a DECIMAL's double (``ir.Dec``) is the division of its integers, as an Arith's
    _node.register(ir.Arith, _arith)
    _node.register(ir.Dec, _arith)

    @_node.register
    def _(self, e: ir.Cmp) -> tuple[str, str]:
        v, ok = self._var()
        a, oa = self.compile(e.left)
        b, ob = self.compile(e.right)
        self.emit(f"{v} = {self._cmp(e, a, b)}")
        self.emit(f"{ok} = {oa} & {ob}")
        return v, ok

    def _junction(self, e: ir.And | ir.Or) -> tuple[str, str]:
        v, ok = self._var()
        first, *rest = e.args
        a, oa = self.compile(first)
        self.emit(f"{v} = {a}")
        self.emit(f"{ok} = {oa}")
        for arg in rest:
            b, ob = self.compile(arg)
            # bitwise on booleans, not ``and``/``or``: short-circuits are branches, and
            # numba's compile time grows far faster than linearly with their number
            if isinstance(e, ir.And):  # a known FALSE decides an AND
                self.emit(f"d{v} = ({ok} & (not {v})) | ({ob} & (not {b}))")
                self.emit(f"{ok} = ({ok} & {ob}) | d{v}")
                self.emit(f"{v} = {v} & {b} & (not d{v})")
            else:  # a known TRUE decides an OR
                self.emit(f"d{v} = ({ok} & {v}) | ({ob} & {b})")
                self.emit(f"{ok} = ({ok} & {ob}) | d{v}")
                self.emit(f"{v} = d{v} | ({v} & {b})")
        return v, ok

    _node.register(ir.And, _junction)
    _node.register(ir.Or, _junction)

    @_node.register
    def _(self, e: ir.Not) -> tuple[str, str]:
        v, ok = self._var()
        a, oa = self.compile(e.arg)
        self.emit(f"{v} = not {a}")
        self.emit(f"{ok} = {oa}")
        return v, ok

    @_node.register
    def _(self, e: ir.IsNull) -> tuple[str, str]:
        v, ok = self._var()
        _, oa = self.compile(e.arg)
        self.emit(f"{v} = {oa}" if e.negated else f"{v} = not {oa}")
        self.emit(f"{ok} = True")
        return v, ok

    @_node.register
    def _(self, e: ir.InList) -> tuple[str, str]:
        v, ok = self._var()
        a, oa = self.compile(e.arg)
        self._in_list(e, a, v)
        if any(lit.value is None for lit in e.values):
            self.emit(f"{ok} = {oa} & {v}")
        else:
            self.emit(f"{ok} = {oa}")
        if e.negated:
            self.emit(f"{v} = not {v}")
        return v, ok

    @_node.register
    def _(self, e: ir.Lookup) -> tuple[str, str]:
        """A value from a table in the arguments (``LI``/``LF``), its validity beside it in
        ``LI``: indexes checked against the table's length before any read."""
        v, ok = self._var()
        k, ok_k = self.compile(e.key)
        floats = e.kind == "float"
        vals = self.params.add_list(np.asarray(e.values, np.float64 if floats else np.int64))
        valid = self.params.add_list(np.asarray(e.valid, np.int64))
        at = f"i{v}"
        # unsigned: the key's distance from the base wraps instead of overflowing, and is
        # below the table's length exactly where the key has a slot
        base = self._constant(e.base)
        self.emit(f"{at} = np.uint64(int({k})) - np.uint64({base}) if {ok_k} else np.uint64(PI[{vals + 1}])")
        self.emit(f"{ok} = {at} < np.uint64(PI[{vals + 1}]) and LI[PI[{valid}] + np.int64({at})] != 0")
        arr, zero = ("LF", "0.0") if floats else ("LI", "0")
        self.emit(f"{v} = {arr}[PI[{vals}] + np.int64({at})] if {ok} else {zero}")
        return v, ok

    @_node.register
    def _(self, e: ir.Extract) -> tuple[str, str]:
        v, ok = self._var()
        a, oa = self.compile(e.arg)
        day = f"dy{v}"
        clock = {"hour": (3600000000, 24), "minute": (60000000, 60), "second": (1000000, 60)}
        if e.part in clock:
            unit, n = clock[e.part]
            self.emit(f"{day} = {floor_div(a, unit)}")  # whole units since the epoch
            self.emit(f"{v} = {floor_mod(day, n)}")
            self.emit(f"{ok} = {oa}")
            return v, ok
        self.emit(f"{day} = {floor_div(a, 86400000000)}")
        if e.part == "dow":
            self.emit(f"{v} = {floor_mod(f'({day} + 4)', 7)}")  # 1970-01-01 was a Thursday
        elif e.part == "isodow":
            self.emit(f"{v} = {floor_mod(f'({day} + 3)', 7)} + 1")
        elif e.part in ("week", "isoyear"):  # ISO 8601: the week of the Thursday
            th = f"th{v}"
            self.emit(f"{th} = {day} - {floor_mod(f'({day} + 3)', 7)} + 3")
            y, _, _ = self._civil(th, v)
            if e.part == "isoyear":
                self.emit(f"{v} = {y}")
            else:
                self.emit(f"{v} = ({th} - {self._days(y, '1', v + 'j')}) // 7 + 1")
        else:
            y, m, d = self._civil(day, v)
            if e.part == "year":
                self.emit(f"{v} = {y}")
            elif e.part == "month":
                self.emit(f"{v} = {m}")
            elif e.part == "quarter":
                self.emit(f"{v} = ({m} - 1) // 3 + 1")
            elif e.part == "day":
                self.emit(f"{v} = {d}")
            else:  # doy
                self.emit(f"{v} = {day} - {self._days(y, '1', v + 'j')} + 1")
        self.emit(f"{ok} = {oa}")
        return v, ok

    def _civil(self, days: str, tag: str) -> tuple[str, str, str]:
        """Emit the (year, month, day) of day number ``days`` (1970-01-01 is 0), proleptic
        Gregorian, in integer arithmetic (H. Hinnant's civil_from_days); return their names.
        The day number is moved ``CIVIL_ERAS`` 400-year eras up so that every step divides a
        non-negative number, in unsigned arithmetic: numba's signed ``//`` rounds toward
        minus infinity with a test and a branch per division, which made the whole a
        several times slower loop than the unsigned divisions by constants."""
        z, era, doe, yoe, doy, mp = (f"{x}{tag}" for x in ("z", "era", "doe", "yoe", "doy", "mp"))
        y, m, d = f"yy{tag}", f"mm{tag}", f"dd{tag}"
        u = _u64
        self.emit(f"{z} = np.uint64({days} + {719468 + 146097 * CIVIL_ERAS})")
        self.emit(f"{era} = {z} // {u(146097)}")
        self.emit(f"{doe} = {z} - {era} * {u(146097)}")
        self.emit(f"{yoe} = ({doe} - {doe} // {u(1460)} + {doe} // {u(36524)} - {doe} // "
                  f"{u(146096)}) // {u(365)}")
        self.emit(f"{doy} = {doe} - ({u(365)} * {yoe} + {yoe} // {u(4)} - {yoe} // {u(100)})")
        self.emit(f"{mp} = ({u(5)} * {doy} + {u(2)}) // {u(153)}")
        self.emit(f"{d} = np.int64({doy} - ({u(153)} * {mp} + {u(2)}) // {u(5)}) + 1")
        self.emit(f"{m} = np.int64({mp}) + 3 - 12 * np.int64({mp} // {u(10)})")
        self.emit(f"{y} = np.int64({yoe}) + np.int64({era}) * 400 - {400 * CIVIL_ERAS} "
                  f"+ int({m} <= 2)")
        return y, m, d

    def _days(self, y: str, m: str, tag: str) -> str:
        """Emit the day number of the first of month ``m`` of year ``y`` (Hinnant's
        days_from_civil); return its name."""
        yy, era, yoe, doe, out = (f"{x}{tag}" for x in ("y", "era", "yoe", "doe", "days"))
        self.emit(f"{yy} = {y} - int({m} <= 2)")
        self.emit(f"{era} = {yy} // 400")
        self.emit(f"{yoe} = {yy} - {era} * 400")
        self.emit(f"{doe} = {yoe} * 365 + {yoe} // 4 - {yoe} // 100 + "
                  f"(153 * ({m} - 3 + 12 * int({m} <= 2)) + 2) // 5")
        self.emit(f"{out} = {era} * 146097 + {doe} - 719468")
        return out

    @_node.register
    def _(self, e: ir.Trunc) -> tuple[str, str]:
        v, ok = self._var()
        a, oa = self.compile(e.arg)
        step = {"second": 1_000_000, "minute": 60_000_000, "hour": 3_600_000_000,
                "day": 86_400_000_000}.get(e.unit)
        if step is not None:
            self.emit(f"{v} = {floor_div(a, step)} * {step}")
        else:
            day = f"dy{v}"
            self.emit(f"{day} = {floor_div(a, 86400000000)}")
            if e.unit == "week":
                self.emit(f"{v} = ({day} - ({day} + 3) % 7) * 86400000000")
            else:
                y, m, _ = self._civil(day, v)
                first = {"year": "1", "quarter": f"(({m} - 1) // 3 * 3 + 1)", "month": m}[e.unit]
                self.emit(f"{v} = {self._days(y, first, v + 'j')} * 86400000000")
        self.emit(f"{ok} = {oa}")
        return v, ok

    @_node.register
    def _(self, e: ir.Case) -> tuple[str, str]:
        v, ok = self._var()
        rest = f"r{v}"  # no branch taken yet
        self.emit(f"{rest} = True")
        taken, values = [], []
        for i, (cond, _) in enumerate(e.whens):
            self._active.append(rest)
            c, oc = self.compile(cond)
            self._active.pop()
            t = f"t{v}_{i}"
            self.emit(f"{t} = {rest} & {oc} & {c}")
            self.emit(f"{rest} = {rest} & (not {t})")
            taken.append(t)
        for t, (_, val) in zip(taken, e.whens, strict=True):
            self._active.append(t)
            values.append(self.compile(val))
            self._active.pop()
        conv = {"float": "float", "bool": "bool"}.get(e.kind, "int")
        if e.default is None:
            self.emit(f"{v} = {conv}(0)")
            self.emit(f"{ok} = False")
        else:
            self._active.append(rest)
            d, od = self.compile(e.default)
            self._active.pop()
            self.emit(f"{v} = {conv}({d})")
            self.emit(f"{ok} = {od}")
        for t, (b, ob) in reversed(list(zip(taken, values, strict=True))):
            self.emit(f"{v} = {conv}({b}) if {t} else {v}")
            self.emit(f"{ok} = {ob} if {t} else {ok}")
        return v, ok

    def _round(self, x: str, v: str, how: str) -> str:
        """Emit ``x`` (a float) rounded to a whole number: ``floor``, ``ceil``, ``half_away``
        from zero (C's round) or ``half_even``, a float that keeps the sign of ``x`` (also
        for a zero); NaN and infinities stay. Plain arithmetic (a guarded int truncation),
        which numba compiles alike for the CPU and for CUDA."""
        t, d, r = f"tr{v}", f"df{v}", f"rd{v}"
        self.emit(f"{t} = float(int({x})) if abs({x}) < 4503599627370496.0 else {x}")
        self.emit(f"{d} = {x} - {t}")  # exact: |d| < 1
        if how == "floor":
            self.emit(f"{r} = {t} - 1.0 if {d} < 0.0 else {t}")
        elif how == "ceil":
            self.emit(f"{r} = {t} + 1.0 if {d} > 0.0 else {t}")
        elif how == "half_away":
            self.emit(f"{r} = {t} + 1.0 if {d} >= 0.5 else ({t} - 1.0 if {d} <= -0.5 else {t})")
        else:  # half to even: a tie (|x| < 2**52 then) goes to the even neighbour
            odd = f"int({t}) % 2 != 0"
            self.emit(f"{r} = {t} + 1.0 if ({d} > 0.5 or ({d} == 0.5 and {odd})) else "
                      f"({t} - 1.0 if ({d} < -0.5 or ({d} == -0.5 and {odd})) else {t})")
        self.emit(f"{r} = math.copysign({r}, {x})")
        return r

    @_node.register
    def _(self, e: ir.Math) -> tuple[str, str]:
        v, ok = self._var()
        a, oa = self.compile(e.arg)
        arg_int = e.arg.kind != "float"
        if e.func == ir.MathFunc.ABS:
            if arg_int:
                o = "o" + v
                self.emit(f"{o} = int({a}) == {_I64_MIN}")
                self.emit(f"{v} = 0 if {o} else abs(int({a}))")
                self._flag_if(ERR_ABS, o, oa)
            else:
                self.emit(f"{v} = abs(float({a}))")
        elif arg_int:  # FLOOR/CEIL of an integer: a DOUBLE; ROUND: the integer itself
            self.emit(f"{v} = int({a})" if e.func == ir.MathFunc.ROUND else f"{v} = float({a})")
        elif e.func == ir.MathFunc.ROUND and e.digits:
            # the exact product a * 10^d rounded, halves away from zero: y = fl(a * m) plus
            # its rounding error (Dekker's product, plain arithmetic) decides a y that looks
            # like a half (0.15 * 10 is 1.5 as a double, 1.4999... exactly: down)
            x, m = f"x{v}", self._constant(float(10 ** e.digits))
            f, ah, al, mh, ml, err = (f"{n}{v}" for n in ("f", "ah", "al", "mh", "ml", "er"))
            self.emit(f"{f} = float({a})")
            self.emit(f"{x} = {f} * {m}")
            self.emit(f"{ah} = 134217729.0 * {f}")
            self.emit(f"{ah} = {ah} - ({ah} - {f})")
            self.emit(f"{al} = {f} - {ah}")
            self.emit(f"{mh} = 134217729.0 * {m}")
            self.emit(f"{mh} = {mh} - ({mh} - {m})")
            self.emit(f"{ml} = {m} - {mh}")
            self.emit(f"{err} = (({ah} * {mh} - {x}) + {ah} * {ml} + {al} * {mh}) + {al} * {ml}")
            r = self._round(x, v, "half_away")
            self.emit(f"{r} = {r} - 1.0 if ({x} - {r} == -0.5 and {err} < 0.0) else "
                      f"({r} + 1.0 if ({x} - {r} == 0.5 and {err} > 0.0) else {r})")
            self.emit(f"{v} = {r} / {m}")
            self.emit(f"{v} = {f} if ({v} != {v} or abs({v}) == math.inf) else {v}")
        else:
            how = {"floor": "floor", "ceil": "ceil", "round": "half_away"}[e.func]
            x = f"x{v}"
            self.emit(f"{x} = float({a})")
            self.emit(f"{v} = {self._round(x, v, how)}")
        self.emit(f"{ok} = {oa}")
        return v, ok

    @_node.register
    def _(self, e: ir.Cast) -> tuple[str, str]:
        v, ok = self._var()
        a, oa = self.compile(e.arg)
        if e.to == ir.CastTo.DOUBLE:
            self.emit(f"{v} = float({a})")
        elif e.arg.kind == "float":  # half to even, then the range of the target
            x = f"x{v}"
            self.emit(f"{x} = float({a})")
            r = self._round(x, v, "half_even")
            if e.to == ir.CastTo.INTEGER:
                code, test = ERR_CAST32, f"{r} >= -2147483648.0 and {r} <= 2147483647.0"
            else:  # 2**63 is the first double past BIGINT's maximum
                code, test = ERR_CAST64, f"{r} >= -9223372036854775808.0 and {r} < 9223372036854775808.0"
            o = "o" + v
            self.emit(f"{o} = not ({test})")  # NaN fails it
            self.emit(f"{v} = 0 if {o} else int({r})")
            self._flag_if(code, o, oa)
        elif e.to == ir.CastTo.INTEGER:
            o = "o" + v
            self.emit(f"{o} = int({a}) < -2147483648 or int({a}) > 2147483647")
            self.emit(f"{v} = int({a})")
            self._flag_if(ERR_CAST32, o, oa)
        else:
            self.emit(f"{v} = int({a})")
        self.emit(f"{ok} = {oa}")
        return v, ok

    def _constant(self, value) -> str:
        """Source text of a non-NULL constant: read from the arguments, except booleans and
        integers beyond int64, which no argument array holds."""
        if isinstance(value, bool | np.bool_):
            return repr(bool(value))
        if isinstance(value, int | np.integer) and not _I64_MIN <= value <= _I64_MAX:
            return literal(value)
        ref = self.params.scalar(value)  # PI[k] or PF[k]
        name = f"c{ref[1].lower()}{ref[3:-1]}"
        self.prologue.append(f"{name} = {ref}")
        return name

    def _in_list(self, e: ir.InList, a: str, v: str) -> None:
        """Emit ``v`` = value ``a`` equals a member of ``e``'s list (NULLs aside): a binary
        search of the sorted list (``in_values``) in the arguments. NaN equals NaN, as in
        DuckDB."""
        nums = in_values(e)
        key = f"float({a})" if nums.dtype.kind == "f" else f"int({a})"
        vals = [lit.value for lit in e.values if lit.value is not None]
        if len(nums) <= SHORT_IN:  # a few compares beat a search loop; the length is shape
            hits = [f"({key} == {self._constant(x.item())})" for x in nums]
            self.emit(f"{v} = {' | '.join(hits) or 'False'}")
            if any(x != x for x in vals):
                self.emit(f"{v} = {v} | ({a} != {a})")
            return
        arr = "LF" if nums.dtype.kind == "f" else "LI"
        first, end = self.params.sorted_list(nums)
        k, lo, hi, en = f"k{v}", f"lo{v}", f"hi{v}", f"e{v}"
        self.emit(f"{k} = {key}")
        self.emit(f"{lo} = {first}")
        self.emit(f"{en} = {end}")
        self.emit(f"{hi} = {en}")
        self.emit(f"while {lo} < {hi}:")
        self.emit(f"    m{v} = ({lo} + {hi}) >> 1")
        self.emit(f"    if {arr}[m{v}] < {k}:")
        self.emit(f"        {lo} = m{v} + 1")
        self.emit("    else:")
        self.emit(f"        {hi} = m{v}")
        self.emit(f"{v} = False")
        self.emit(f"if {lo} < {en}:")
        self.emit(f"    {v} = {arr}[{lo}] == {k}")
        if any(x != x for x in vals):
            self.emit(f"{v} = {v} | ({a} != {a})")

    def _int_op(self, v: str, code: int, test: str, op: str, valid: str) -> None:
        """Emit ``v = op``, an int64 operation, unless ``test`` says it would overflow: then
        ``v = 0`` and, where the row counts and its inputs are valid (a NULL's sentinel is no
        value), flag ``code``. The test runs first because numba's integer operations
        assume no signed overflow (LLVM ``nsw``): a wrapped result cannot be inspected."""
        o = "o" + v
        self.emit(f"{o} = {test}")
        self.emit(f"{v} = 0 if {o} else {op}")
        self._flag_if(code, o, valid)

    def _flag_if(self, code: int, test: str, valid: str) -> None:
        """Emit: flag error ``code`` where ``test`` and ``valid`` hold, the row counts and the
        CASE branches around the expression are taken."""
        if self.flag is not None:
            guard = "".join(f"{g} and " for g in ([self.guard] if self.guard else []) + self._active)
            self.emit(f"if {guard}{test} and {valid}:")
            self.emit(f"    {self.flag(code)}")

    def key_bits(self, k: ir.Expr, b: str) -> str:
        """Emit ``b``, the canonical bits of group key ``k`` as the hash aggregations keep
        them (``exec.partials.canonical_keys``: NULL 0, every NaN the one quiet NaN, -0.0
        as 0.0); return the key's validity variable."""
        v, ok = self.compile(k)
        if k.kind == "float":
            self.emit(f"{b} = np.int64(0) if (not {ok}) or {v} == 0.0 else (np.int64({NAN_BITS}) "
                      f"if {v} != {v} else np.float64({v}).view(np.int64))")
        else:
            self.emit(f"{b} = np.int64({v}) if {ok} else np.int64(0)")
        return ok

    def group_slot(self, keys, domains) -> None:
        """Emit ``g``, the accumulator slot of the row's group: a key of ``domains.Domain``
        ``d`` takes its index less ``d.base``, NULL takes ``d.size``, the keys mixed in radix
        ``d.size + 1``. A value outside its domain (metadata that does not match the data) is
        flagged (``ERR_KEY``) and sent to slot 0: nothing is written out of bounds."""
        self.emit("g = 0")
        self.emit("gbad = False")
        for k, d in zip(keys, domains, strict=True):
            v, ok = self.compile(k)
            idx = self._bucket(v, d.unit) if d.unit is not None else f"int({v})"
            self.emit(f"gk = {idx} - {d.base} if {ok} else {d.size}")
            self.emit(f"gbad = gbad | ({ok} & ((gk < 0) | (gk >= {d.size})))")
            self.emit(f"g = g * {d.size + 1} + gk")
        self.emit("if gbad:")
        if self.flag is not None:
            self.emit(f"    {self.flag(ERR_KEY)}")
        self.emit("    g = 0")

    def _bucket(self, v: str, unit: ir.TruncUnit) -> str:
        """Emit the bucket index of timestamp ``v`` in ``unit`` (``domains.Domain.bucket``:
        whole units since the epoch, weeks from the Monday before it, months since year 0);
        return its source."""
        if unit in FIXED_UNITS:
            return floor_div(v, FIXED_UNITS[unit])
        day = f"bd{v}"
        self.emit(f"{day} = {floor_div(v, 86400000000)}")
        if unit == ir.TruncUnit.WEEK:
            return f"(({day} + 3) // 7)"
        y, m, _ = self._civil(day, "b" + v)
        return f"(({y} * 12 + {m} - 1) // {MONTHS[unit]})"

    def _may_be_nan(self, e: ir.Expr) -> bool:
        """Whether ``e`` can be NaN: a float that is no finite constant and no scaled-integer
        column (those hold no NaN)."""
        if e.kind != "float":
            return False
        if isinstance(e, ir.Lit):
            return e.value is not None and e.value != e.value
        return not (isinstance(e, ir.Col) and self.scales.get(e.name))

    def _cmp(self, e: ir.Cmp, a: str, b: str) -> str:
        """Source of ``a <op> b`` with DuckDB's NaN order: NaN = NaN, NaN above all else."""
        plain = f"{a} {_CMP[e.op]} {b}"
        an, bn = self._may_be_nan(e.left), self._may_be_nan(e.right)
        if not (an or bn):
            return plain
        # bitwise, not and/or: branches make numba's compile time grow with their number
        a_nan, b_nan = f"({a} != {a})", f"({b} != {b})"
        a_num = f" & ({a} == {a})" if an else ""
        b_num = f" & ({b} == {b})" if bn else ""
        if e.op == "=":
            return f"({plain}) | ({a_nan} & {b_nan})" if an and bn else plain
        if e.op == "<>":
            return f"({plain}) & (({a} == {a}) | ({b} == {b}))" if an and bn else plain
        if e.op == "<":
            return f"({plain}) | ({b_nan}{a_num})" if bn else plain
        if e.op == "<=":
            return f"({plain}) | {b_nan}" if bn else plain
        if e.op == ">":
            return f"({plain}) | ({a_nan}{b_num})" if an else plain
        return f"({plain}) | {a_nan}" if an else plain  # >=


#: 400-year eras a day number moves up before the civil calendar's divisions: 4 million
#: years, past the day numbers of every int64 of microseconds
CIVIL_ERAS = 10_000


def _u64(c: int) -> str:
    return f"np.uint64({c})"


def floor_div(x: str, c: int) -> str:
    """Source of ``floor(x / c)`` for an int64 ``x`` (a name or a parenthesized expression,
    read twice) and a constant ``c > 0``: an unsigned division of ``x`` or of ``~x`` (which is
    ``-x - 1``, so no int64 overflows), where numba's signed ``//`` tests and branches."""
    return (f"(np.int64(np.uint64({x}) // {_u64(c)}) if {x} >= 0 "
            f"else ~np.int64(np.uint64(~{x}) // {_u64(c)}))")


def floor_mod(x: str, c: int) -> str:
    """Source of ``x mod c`` (the sign of ``c > 0``, as Python's ``%``) for an int64 ``x`` of
    magnitude below 2**61: ``x`` moved up by a multiple of ``c`` to a non-negative number."""
    return f"np.int64(np.uint64({x} + {c * ((1 << 61) // c)}) % {_u64(c)})"


def in_values(e: ir.InList) -> np.ndarray:
    """The sorted values an ``IN`` list's argument is searched for: float64 where the
    argument is a float (NaN and NULL left out: they are tested apart), int64 otherwise (a
    constant that no int64 equals left out)."""
    vals = [lit.value for lit in e.values if lit.value is not None]
    if e.arg.kind == "float":
        return np.sort(np.array([float(x) for x in vals if x == x], np.float64))
    ints = {int(x) for x in vals if x == x and float(x).is_integer() and _I64_MIN <= int(x) <= _I64_MAX}
    return np.array(sorted(ints), np.int64)


def _overflows(op: str, x: str, y: str) -> str:
    """Source of: the int64 ``x op y`` would overflow, tested on the operands without
    computing anything that overflows (no float rounding; no division by 0 or of MIN by -1).
    With floor division: for ``x > 0``, ``x * y > MAX`` iff ``x > MAX // y`` (``y > 0``) and
    ``x * y < MIN`` iff ``x > MIN // y`` (``y < -1``); both negative, ``x * y > MAX`` iff
    ``y < -((MIN + 1) // x)``."""
    mx, mn = -_I64_MIN - 1, _I64_MIN
    if op == "+":
        return f"({y} > 0 and {x} > {mx} - {y}) or ({y} < 0 and {x} < {mn} - {y})"
    if op == "-":
        return f"({y} < 0 and {x} > {mx} + {y}) or ({y} > 0 and {x} < {mn} + {y})"
    return (f"({x} > 0 and (({y} > 0 and {x} > {mx} // {y}) or ({y} < -1 and {x} > {mn} // {y})))"
            f" or ({x} < 0 and (({y} > 0 and {x} != -1 and {y} > {mn} // {x}) or "
            f"({y} < 0 and {y} < -({mn + 1} // {x}))))")


def check_errors(counts) -> None:
    """Raise the error that a kernel's flags ``counts`` (indexed by ``ERR_*``) report, if any:
    an overflow as DuckDB words it, a key outside its domain as a store that does not match
    its metadata."""
    from bamql.errors import OutOfRangeError, StoreError

    counts = [int(x) for x in counts]
    for code, what in ((ERR_ADD, "addition"), (ERR_SUB, "subtraction"),
                       (ERR_MUL, "multiplication"), (ERR_NEG, "negation")):
        if counts[code]:
            raise OutOfRangeError(f"Out of Range Error: Overflow in {what} of INT64")
    if counts[ERR_ABS]:
        raise OutOfRangeError("Out of Range Error: Overflow on abs(-9223372036854775808)")
    for code, to in ((ERR_CAST64, "INT64"), (ERR_CAST32, "INT32")):
        if counts[code]:
            raise OutOfRangeError("Conversion Error: a value can't be cast because it is out of "
                                  f"range for the destination type {to}")
    if counts[ERR_KEY]:
        raise StoreError(f"{counts[ERR_KEY]:,} row(s) hold a GROUP BY key outside the range "
                         "that the table's metadata records: the store does not match its "
                         "manifest (re-ingest it)")


def literal(value) -> str:
    """Source text of a constant (non-finite floats through ``math``)."""
    if isinstance(value, float) and not math.isfinite(value):
        return "math.nan" if value != value else ("math.inf" if value > 0 else "-math.inf")
    return repr(value)


def nan_bits(sentinel) -> tuple[int, int]:
    """The bits of a NaN sentinel as an integer, and its width (32 for a ``np.float32``,
    else 64)."""
    if isinstance(sentinel, np.float32):
        return int(np.array([sentinel], np.float32).view(np.int32)[0]), 32
    return int(np.array([sentinel], np.float64).view(np.int64)[0]), 64


def safe_name(column: str) -> str:
    """A Python identifier for a column's argument."""
    return "c_" + "".join(ch if ch.isalnum() else "_" for ch in column)
