"""IR expressions -> straight-line Python source for numba (CPU njit and CUDA device code).

Every expression compiles to a pair of local variables: its value and whether it is valid
(not NULL). ``load(column)`` gives the source text that reads the current row's stored
value; NULL is the column's sentinel (NaN for floats, the storage type's minimum
otherwise), so a load is one read, whatever the template that supplies it. A float column
stored as scaled integers (``storage.decimals``) is decoded right after its load.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from bamql.planner import ir

_CMP = {"=": "==", "<>": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


class ExprCompiler:
    """Emits source lines for expressions; ``sentinels[column]`` is its null sentinel and
    ``scales[column]``, when given and not 0, the decimals of a scaled-integer float."""

    def __init__(self, load: Callable[[str], str], sentinels: dict[str, object],
                 indent: str = "", scales: dict[str, int] | None = None) -> None:
        self.load, self.sentinels, self.indent = load, sentinels, indent
        self.scales = scales or {}
        self.lines: list[str] = []
        self._n = 0
        self._cols: dict[str, tuple[str, str]] = {}

    def _var(self) -> tuple[str, str]:
        self._n += 1
        return f"v{self._n}", f"ok{self._n}"

    def emit(self, text: str) -> None:
        self.lines.append(self.indent + text)

    def compile(self, e: ir.Expr) -> tuple[str, str]:  # noqa: C901 - one dispatch over nodes
        """Emit code for ``e``; return the names of its value and validity variables."""
        if isinstance(e, ir.Col):
            if e.name not in self._cols:  # load each column once per row
                v, ok = self._var()
                self.emit(f"{v} = {self.load(e.name)}")
                s = self.sentinels[e.name]
                self.emit(f"{ok} = {v} == {v}" if s != s else f"{ok} = {v} != {s}")
                if self.scales.get(e.name):  # exact: one correctly rounded division
                    self.emit(f"{v} = float({v}) / {float(10 ** self.scales[e.name])!r}")
                self._cols[e.name] = (v, ok)
            return self._cols[e.name]
        v, ok = self._var()
        if isinstance(e, ir.Lit):
            if e.value is None:
                self.emit(f"{v} = 0")
                self.emit(f"{ok} = False")
            else:
                self.emit(f"{v} = {literal(e.value)}")
                self.emit(f"{ok} = True")
        elif isinstance(e, ir.Neg):
            a, oa = self.compile(e.arg)
            self.emit(f"{v} = -{a}")
            self.emit(f"{ok} = {oa}")
        elif isinstance(e, ir.Arith):
            a, oa = self.compile(e.left)
            b, ob = self.compile(e.right)
            if e.op == "/":  # always float division; x/0 is +-inf or NaN, as in IEEE
                self.emit(f"{v} = float({a}) / float({b})")
            elif e.kind == "float":
                self.emit(f"{v} = float({a}) {e.op} float({b})")
            else:
                self.emit(f"{v} = int({a}) {e.op} int({b})")
            self.emit(f"{ok} = {oa} and {ob}")
        elif isinstance(e, ir.Cmp):
            a, oa = self.compile(e.left)
            b, ob = self.compile(e.right)
            self.emit(f"{v} = {a} {_CMP[e.op]} {b}")
            self.emit(f"{ok} = {oa} and {ob}")
        elif isinstance(e, ir.And | ir.Or):
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
        elif isinstance(e, ir.Not):
            a, oa = self.compile(e.arg)
            self.emit(f"{v} = not {a}")
            self.emit(f"{ok} = {oa}")
        elif isinstance(e, ir.IsNull):
            _, oa = self.compile(e.arg)
            self.emit(f"{v} = {oa}" if e.negated else f"{v} = not {oa}")
            self.emit(f"{ok} = True")
        elif isinstance(e, ir.InList):
            a, oa = self.compile(e.arg)
            vals = [lit.value for lit in e.values if lit.value is not None]
            hit = " | ".join(f"({a} == {literal(x)})" for x in vals) or "False"
            self.emit(f"{v} = {hit}")
            if any(lit.value is None for lit in e.values):
                self.emit(f"{ok} = {oa} and {v}")
            else:
                self.emit(f"{ok} = {oa}")
            if e.negated:
                self.emit(f"{v} = not {v}")
        elif isinstance(e, ir.Extract):
            a, oa = self.compile(e.arg)
            if e.part == "hour":
                self.emit(f"{v} = ({a} // 3600000000) % 24")
            elif e.part == "minute":
                self.emit(f"{v} = ({a} // 60000000) % 60")
            else:
                self.emit(f"{v} = ({a} // 86400000000 + 4) % 7")
            self.emit(f"{ok} = {oa}")
        else:
            raise TypeError(f"cannot compile {type(e).__name__}")
        return v, ok


def literal(value) -> str:
    """Source text of a constant (non-finite floats through ``math``)."""
    if isinstance(value, float) and not math.isfinite(value):
        return "math.nan" if value != value else ("math.inf" if value > 0 else "-math.inf")
    return repr(value)


def safe_name(column: str) -> str:
    """A Python identifier for a column's argument."""
    return "c_" + "".join(ch if ch.isalnum() else "_" for ch in column)
