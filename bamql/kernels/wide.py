"""Wide predicates as programs: an AND/OR/NOT tree over many comparisons of columns with
constants, run by one small interpreter instead of being compiled term by term.

numba's compile time grows faster than linearly with a kernel's length, and a predicate of
hundreds of terms makes a long kernel. Such a predicate is encoded as a postfix program of
four-word instructions in the int64 constants ``PI`` (``codegen.Params``); the kernel
stores each of its columns' values in a slot (``fv`` for floats, ``iv`` for the others,
``okv`` their validity) and calls ``run``, which is compiled once and is the same for every
such query. Semantics are the compiled expressions' (``codegen``): SQL's three-valued logic,
DuckDB's NaN order (NaN equals NaN and is above every number), ``IN`` lists searched as
sorted arrays.

The GPU template uses it (``gpu.kernel``); the CPU engine evaluates wide filters with the
NumPy interpreter instead (``exec.cpu``).
"""

from __future__ import annotations

from functools import singledispatch

import numpy as np

from bamql.fused import ir
from bamql.kernels.codegen import Params, in_values

#: A predicate of more nodes than this runs as a program (where it can be encoded).
WIDE_NODES = 48
#: The interpreter's stack: programs nest at most this deep.
STACK = 64

CONST, NOT, AND, OR, CMP_F, CMP_IF, CMP_I, IS_NULL, IN_LIST = range(9)
_OPS = {"=": 0, "<>": 1, "<": 2, "<=": 3, ">": 4, ">=": 5}
# IN_LIST flags
IN_FLOAT, IN_NULL, IN_NAN, IN_NOT = 1, 2, 4, 8


def encode(e: ir.Expr, slots: dict[str, int], params: Params) -> tuple[int, int] | None:
    """Append ``e``'s program to ``params.ints``; return ``(offset, instructions)`` in ``PI``,
    or None where ``e`` holds a term the interpreter does not run (arithmetic, EXTRACT, a
    comparison of two columns) or nests deeper than ``STACK``. ``slots`` maps each column
    to its slot."""
    prog: list[tuple[int, int, int, int]] = []
    depth = [0, 0]  # now, most

    def push(ins) -> None:
        prog.append(ins)
        grow = {CONST: 1, CMP_F: 1, CMP_IF: 1, CMP_I: 1, IS_NULL: 1, IN_LIST: 1,
                AND: -1, OR: -1, NOT: 0}[ins[0]]
        depth[0] += grow
        depth[1] = max(depth[1], depth[0])

    # iterative post-order; an AND/OR folds each arg into the first as it comes, so the
    # stack holds at most one value per level of nesting
    todo: list[tuple[ir.Expr | None, tuple | None]] = [(e, None)]
    while todo:
        x, ins = todo.pop()
        if x is None:
            push(ins)
        elif isinstance(x, ir.Not):
            todo += [(None, (NOT, 0, 0, 0)), (x.arg, None)]
        elif isinstance(x, ir.And | ir.Or):
            fold = (AND if isinstance(x, ir.And) else OR, 0, 0, 0)
            seq = [(x.args[0], None)]
            for a in x.args[1:]:
                seq += [(a, None), (None, fold)]
            todo += reversed(seq)
        else:
            leaf = _leaf(x, slots, params)
            if leaf is None:
                return None
            push(leaf)
    if depth[1] > STACK:
        return None
    off = len(params.ints)
    for ins in prog:
        params.ints.extend(ins)
    return off, len(prog)


@singledispatch
def _leaf(x: ir.Expr, slots: dict[str, int], params: Params):
    """The instruction of one leaf of a condition (one rule per node class); None where
    the program has none for it."""
    return None


@_leaf.register
def _(x: ir.Lit, slots: dict[str, int], params: Params):
    return (CONST, int(bool(x.value)), int(x.value is not None), 0)


@_leaf.register
def _(x: ir.IsNull, slots: dict[str, int], params: Params):
    return (IS_NULL, slots[x.arg.name], 0, int(x.negated)) if isinstance(x.arg, ir.Col) else None


@_leaf.register
def _(x: ir.InList, slots: dict[str, int], params: Params):
    if not isinstance(x.arg, ir.Col):
        return None
    nums = in_values(x)
    flags = (IN_FLOAT * (nums.dtype.kind == "f")
             | IN_NULL * any(v.value is None for v in x.values)
             | IN_NAN * any(v.value is not None and v.value != v.value for v in x.values)
             | IN_NOT * x.negated)
    return (IN_LIST, slots[x.arg.name], params.add_list(nums), flags)


@_leaf.register
def _(x: ir.Cmp, slots: dict[str, int], params: Params):
    if not (isinstance(x.left, ir.Col) and isinstance(x.right, ir.Lit)):
        return None
    v, s, op = x.right.value, slots[x.left.name], _OPS[x.op]
    if v is None:  # a comparison with NULL is NULL
        return (CONST, 0, 0, 0)
    if isinstance(v, bool | np.bool_):
        return None
    if x.left.kind == "float":  # a float against any number: as doubles, as numba does
        params.floats.append(float(v))
        return (CMP_F, s, len(params.floats) - 1, op)
    if isinstance(v, int | np.integer):
        if not -(1 << 63) <= v < (1 << 63):
            return None
        params.ints.append(int(v))
        return (CMP_I, s, len(params.ints) - 1, op)
    params.floats.append(float(v))
    return (CMP_IF, s, len(params.floats) - 1, op)


def run(PI, off, n, PF, LI, LF, fv, iv, okv, sv, sok):  # noqa: N803 - the kernels' names
    """Run the program of ``n`` instructions at ``PI[off:]`` over one row's slots; return
    ``(value, valid)``. ``sv``/``sok`` are the caller's stack (``STACK`` booleans each)."""
    top = 0
    for k in range(n):
        b = off + 4 * k
        code, a1, a2, a3 = PI[b], PI[b + 1], PI[b + 2], PI[b + 3]
        if code == 1:  # NOT
            sv[top - 1] = not sv[top - 1]
            continue
        if code == 2 or code == 3:  # AND, OR of the two on top
            v1, o1, v2, o2 = sv[top - 2], sok[top - 2], sv[top - 1], sok[top - 1]
            if code == 2:
                d = (o1 and not v1) or (o2 and not v2)  # a known FALSE decides an AND
                sv[top - 2] = v1 and v2 and not d
            else:
                d = (o1 and v1) or (o2 and v2)  # a known TRUE decides an OR
                sv[top - 2] = d or (v1 and v2)
            sok[top - 2] = (o1 and o2) or d
            top -= 1
            continue
        v = False
        ok = True
        if code == 0:
            v = a1 != 0
            ok = a2 != 0
        elif code == 4 or code == 5 or code == 6:
            # c: -1, 0 or 1 as the slot's value is below, equal to or above the constant, in
            # DuckDB's order (NaN equals NaN and is above every number)
            c = 0
            if code == 6:
                x, y = iv[a1], PI[a2]
                c = -1 if x < y else (1 if x > y else 0)
            else:
                f = fv[a1] if code == 4 else float(iv[a1])
                g = PF[a2]
                if f != f or g != g:
                    c = 0 if (f != f and g != g) else (1 if f != f else -1)
                else:
                    c = -1 if f < g else (1 if f > g else 0)
            if a3 == 0:
                v = c == 0
            elif a3 == 1:
                v = c != 0
            elif a3 == 2:
                v = c < 0
            elif a3 == 3:
                v = c <= 0
            elif a3 == 4:
                v = c > 0
            else:
                v = c >= 0
            ok = okv[a1]
        elif code == 7:
            v = okv[a1] if a3 != 0 else not okv[a1]
        else:  # IN_LIST: binary search of the sorted list
            lo = PI[a2]
            end = lo + PI[a2 + 1]
            hi = end
            if a3 & 1:
                kf = fv[a1]
                while lo < hi:
                    m = (lo + hi) >> 1
                    if LF[m] < kf:
                        lo = m + 1
                    else:
                        hi = m
                v = lo < end and LF[lo] == kf
                if a3 & 4 and kf != kf:
                    v = True
            else:
                ki = iv[a1]
                while lo < hi:
                    m = (lo + hi) >> 1
                    if LI[m] < ki:
                        lo = m + 1
                    else:
                        hi = m
                v = lo < end and LI[lo] == ki
            ok = okv[a1] and (v or not (a3 & 2))
            if a3 & 8:
                v = not v
        sv[top] = v
        sok[top] = ok
        top += 1
    return sv[0], sok[0]
