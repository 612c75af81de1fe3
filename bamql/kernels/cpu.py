"""CPU templates: generated filter and aggregate loops, compiled with numba (parallel).

Both take column values already gathered for the rows in play (aligned arrays), so the
work is proportional to matching rows, and the I/O was only for the pages that hold them.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from bamql.kernels import diskcache
from bamql.kernels.codegen import PARAM_ARGS, ExprCompiler, Params, safe_name
from bamql.lru import LRU
from bamql.parallel import PARALLEL_LOCK
from bamql.planner import ir
from bamql.planner.domains import Domain

#: Compiled kernels by source. Constants are arguments (``codegen.Params``), so a source
#: stands for a query shape, not a query; the least recently used go past the bound.
_cache: LRU = LRU(512)
_cache_lock = threading.Lock()
#: numba's default threading layer runs one parallel region at a time per process.
KERNEL_LOCK = PARALLEL_LOCK
_PARAMS = ", ".join(PARAM_ARGS)


def _compile(src: str, name: str):
    with _cache_lock:
        fn = _cache.get(src)
        if fn is None:
            # under a module file's name where possible: numba then keeps the machine code
            # on disk, signed, and the next process loads it instead of compiling
            # (``kernels.diskcache``, which checks every file before it is loaded)
            py, on_disk = diskcache.load(src, name)
            fn = diskcache.jit(py, on_disk, parallel=True, nogil=True, error_model="numpy")
            _cache.put(src, fn)
        return fn


def disk_cache_hits() -> int:
    """Compilations this process loaded from numba's on-disk cache instead of compiling."""
    with _cache_lock:
        return sum(sum(f.stats.cache_hits.values()) for f in _cache.values())


def kernel_cache_size() -> int:
    """Number of compiled kernels held by this process."""
    return len(_cache)


def filter_source(pred: ir.Expr, columns: Sequence[str], sentinels: dict,
                  scales: dict | None = None) -> tuple[str, Params]:
    """Source of ``kern(n, <columns>, PI, PF, LI, LF, out, err)`` and its constants:
    out[i] = predicate TRUE for row i; ``err[code]`` is set where an error ``code`` happens
    (``codegen.check_errors``)."""
    ec = ExprCompiler(lambda c: f"{safe_name(c)}[i]", sentinels, indent="        ",
                      scales=scales, flag=lambda code: f"err[{code}] = 1")
    v, ok = ec.compile(pred)
    # a constant predicate has no columns
    args = ", ".join(["n", *(safe_name(c) for c in columns), _PARAMS, "out", "err"])
    return "\n".join([
        f"def kern({args}):",
        *[f"    {line}" for line in ec.prologue],
        "    for i in numba.prange(n):",
        *ec.lines,
        f"        out[i] = {ok} and {v}",
        "",
    ]), ec.params


def filter_kernel(pred: ir.Expr, columns: Sequence[str], sentinels: dict,
                  scales: dict | None = None):
    """``(compiled filter, its constants' arrays)`` for ``pred`` over aligned arrays of
    ``columns``: call it as ``kern(n, *columns, *params, out, err)``."""
    src, params = filter_source(pred, columns, sentinels, scales)
    return _compile(src, "kern"), params.arrays()


ACC_ARRAYS = ("C", "SF", "SI", "MNF", "MXF", "MNI", "MXI", "VS", "VF")


def agg_source(keys: Sequence[ir.Expr], domains: Sequence[Domain], aggs: Sequence[ir.Agg],
               columns: Sequence[str], sentinels: dict,
               scales: dict | None = None) -> tuple[str, Params]:
    """Source of ``kern(n, nch, <columns>, PI, PF, LI, LF, R, C, SF, SI, MNF, MXF, MNI, MXI,
    VS, VF, E)`` and its constants.

    Rows are split into ``nch`` chunks, each with its own accumulator row: no atomics, and
    the caller merges chunks. ``R[ch, g]`` counts rows of group ``g``; per aggregate ``j``,
    ``C`` counts non-null inputs, ``SF``/``SI`` sum floats/ints, ``MN*``/``MX*`` min/max,
    ``VS``/``VF`` a variance's shift and shifted sums (``accumulate.variance_states``); an
    aggregate with a FILTER counts only rows where its condition is TRUE.
    An integer sum is exact: ``SI[.., j]`` sums each value's high 32 bits and
    ``SI[.., len(aggs) + j]`` its low 32 bits less 2**31 (``accumulate.int_sums``).
    ``E[ch, code]`` counts errors (``codegen.check_errors``).
    """
    ec = ExprCompiler(lambda c: f"{safe_name(c)}[i]", sentinels, indent="            ",
                      scales=scales, flag=lambda code: f"E[ch, {code}] += 1")
    ec.group_slot(keys, domains)
    ec.emit("R[ch, g] += 1")
    base = ec.indent
    for j, a in enumerate(aggs):
        ec.indent = base
        # the condition and the argument are computed outside any branch: a column's value
        # is loaded once per row, where the first expression that reads it is compiled
        fv, fok = ec.compile(a.filter) if a.filter is not None else (None, None)
        v, ok = ec.compile(a.arg) if a.arg is not None else (None, None)
        if a.filter is not None:  # FILTER (WHERE ...): only rows where it is TRUE
            ec.emit(f"if {fok} and {fv}:")
            ec.indent = base + "    "
        if a.arg is None:
            ec.emit(f"C[ch, g, {j}] += 1")
            continue
        ec.emit(f"if {ok}:")
        ec.emit(f"    C[ch, g, {j}] += 1")
        f = "F" if a.arg.kind == "float" else "I"
        if a.func in ("sum", "avg") and f == "I":  # two halves that cannot overflow
            ec.emit(f"    SI[ch, g, {j}] += int({v}) >> 32")
            ec.emit(f"    SI[ch, g, {len(aggs) + j}] += (int({v}) & 4294967295) - 2147483648")
        elif a.func in ("sum", "avg"):
            ec.emit(f"    S{f}[ch, g, {j}] += {v}")
        elif a.func == "min":
            # NaN is the largest: it starts MNF (accumulate.alloc) and any other value wins
            nan = f" or MNF[ch, g, {j}] != MNF[ch, g, {j}]" if f == "F" else ""
            ec.emit(f"    if {v} < MN{f}[ch, g, {j}]{nan}:")
            ec.emit(f"        MN{f}[ch, g, {j}] = {v}")
        elif a.func == "max":
            nan = f" or {v} != {v}" if f == "F" else ""  # NaN is the largest, as in DuckDB
            ec.emit(f"    if {v} > MX{f}[ch, g, {j}]{nan}:")
            ec.emit(f"        MX{f}[ch, g, {j}] = {v}")
        elif a.func in ir.VARIANCES:  # the chunk's first value is its shift (accumulate.VS)
            ec.emit(f"    vx{j} = float({v})")
            ec.emit(f"    if C[ch, g, {j}] == 1:")
            ec.emit(f"        VS[ch, g, {j}] = np.float64(vx{j}).view(np.int64)")
            ec.emit(f"    vd{j} = vx{j} - np.int64(VS[ch, g, {j}]).view(np.float64)")
            ec.emit(f"    VF[ch, g, {j}] += vd{j}")
            ec.emit(f"    VF[ch, g, {len(aggs) + j}] += vd{j} * vd{j}")
    ec.indent = base
    args = ", ".join(safe_name(c) for c in columns)
    return "\n".join([
        f"def kern(n, nch, {args}{', ' if args else ''}{_PARAMS}, R, C, SF, SI, MNF, MXF, MNI, MXI, "
        "VS, VF, E):",
        *[f"    {line}" for line in ec.prologue],
        "    for ch in numba.prange(nch):",
        "        lo = ch * n // nch",
        "        hi = (ch + 1) * n // nch",
        "        for i in range(lo, hi):",
        *ec.lines,
        "",
    ]), ec.params


def agg_kernel(keys, domains, aggs, columns, sentinels, scales=None):
    """``(compiled grouped aggregation, its constants' arrays)`` over aligned arrays of
    ``columns``: call it as ``kern(n, nch, *columns, *params, *accumulators)``."""
    src, params = agg_source(keys, domains, aggs, columns, sentinels, scales)
    return _compile(src, "kern"), params.arrays()
