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

from bamql.planner import ir

_CMP = {"=": "==", "<>": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}

#: What a kernel flags in its error counters (``flag``): a group key outside its domain,
#: an int64 overflow of +, -, * or negation. ``check_errors`` turns them into one error.
ERR_KEY, ERR_ADD, ERR_SUB, ERR_MUL, ERR_NEG = range(5)
N_ERRORS = 5
_ERR_OF = {"+": ERR_ADD, "-": ERR_SUB, "*": ERR_MUL}
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

    @_node.register
    def _(self, e: ir.Arith) -> tuple[str, str]:
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
    def _(self, e: ir.Extract) -> tuple[str, str]:
        v, ok = self._var()
        a, oa = self.compile(e.arg)
        if e.part == "hour":
            self.emit(f"{v} = ({a} // 3600000000) % 24")
        elif e.part == "minute":
            self.emit(f"{v} = ({a} // 60000000) % 60")
        else:
            self.emit(f"{v} = ({a} // 86400000000 + 4) % 7")
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
        if self.flag is not None:
            guard = f"{self.guard} and " if self.guard else ""
            self.emit(f"if {guard}{o} and {valid}:")
            self.emit(f"    {self.flag(code)}")

    def group_slot(self, keys, domains) -> None:
        """Emit ``g``, the accumulator slot of the row's group: key value ``v`` of domain
        ``(base, size)`` takes ``v - base``, NULL takes ``size``, the keys mixed in radix
        ``size + 1``. A value outside its domain (metadata that does not match the data) is
        flagged (``ERR_KEY``) and sent to slot 0: nothing is written out of bounds."""
        self.emit("g = 0")
        self.emit("gbad = False")
        for k, (base, size) in zip(keys, domains, strict=True):
            v, ok = self.compile(k)
            self.emit(f"gk = int({v}) - {base} if {ok} else {size}")
            self.emit(f"gbad = gbad | ({ok} & ((gk < 0) | (gk >= {size})))")
            self.emit(f"g = g * {size + 1} + gk")
        self.emit("if gbad:")
        if self.flag is not None:
            self.emit(f"    {self.flag(ERR_KEY)}")
        self.emit("    g = 0")

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
