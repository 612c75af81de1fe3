"""CPU templates: generated filter and aggregate loops, compiled with numba (parallel).

Both take column values already gathered for the rows in play (aligned arrays), so the
work is proportional to matching rows, and the I/O was only for the pages that hold them.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence

import numpy as np

from bamql.fused import ir
from bamql.fused.domains import Domain, HashSlots
from bamql.kernels import codegen, diskcache
from bamql.kernels.codegen import PARAM_ARGS, ExprCompiler, Params, safe_name
from bamql.lru import LRU
from bamql.parallel import PARALLEL_LOCK

#: Compiled kernels by source. Constants are arguments (``codegen.Params``), so a source
#: stands for a query shape, not a query; the least recently used go past the bound.
_cache: LRU = LRU(512)
_cache_lock = threading.Lock()
#: numba's default threading layer runs one parallel region at a time per process.
KERNEL_LOCK = PARALLEL_LOCK
_PARAMS = ", ".join(PARAM_ARGS)
#: A filter over fewer rows runs on the calling thread, not in parallel
SERIAL_ROWS = 1 << 14
#: A store of fewer rows runs its kernels on one thread, compiled without numba's parallel
#: loops: they compile several times faster, and a few hundred thousand rows take
#: milliseconds on one core. The chunks (and so every answer) are the same either way.
PARALLEL_ROWS = 1 << 20
#: Kernels already called once on empty input (``warm``)
_warm: weakref.WeakSet = weakref.WeakSet()


def _compile(src: str, name: str, parallel: bool = True):
    """The compiled kernel of ``src``: with numba's parallel loops, or (``parallel`` False)
    the same loops on one thread (``PARALLEL_ROWS``)."""
    if not parallel:
        src = src.replace("numba.prange(", "range(")
    with _cache_lock:
        fn = _cache.get(src)
        if fn is None:
            # under a module file's name where possible: numba then keeps the machine code
            # on disk, signed, and the next process loads it instead of compiling
            # (``kernels.diskcache``, which checks every file before it is loaded)
            py, on_disk = diskcache.load(src, name)
            fn = diskcache.jit(py, on_disk, parallel=parallel, nogil=True, error_model="numpy")
            _cache.put(src, fn)
        return fn


def parallel_for(rows: int) -> bool:
    """Whether kernels over a store of ``rows`` rows use numba's parallel loops."""
    return rows >= PARALLEL_ROWS


def warm(kern, *args) -> None:
    """Call ``kern`` on ``args`` (empty input) once per kernel, so that numba compiles or
    loads it apart from a query's time. Later calls return at once: a parallel kernel's
    call on empty input still starts its threads, which costs more than many small
    partitions' work where several processes share the cores."""
    if kern in _warm:
        return
    with KERNEL_LOCK:
        kern(*args)
    _warm.add(kern)


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
    body = [*ec.lines, f"        out[i] = {ok} and {v}"]
    return "\n".join([
        f"def kern({args}):",
        *[f"    {line}" for line in ec.prologue],
        # a few rows (pages left by zone maps, a top-k's candidates) on this thread: a
        # parallel loop's start costs more than their work
        f"    if n < {SERIAL_ROWS}:",
        "        for i in range(n):",
        *[f"    {line}" for line in body],
        "        return",
        "    for i in numba.prange(n):",
        *body,
        "",
    ]), ec.params


def filter_kernel(pred: ir.Expr, columns: Sequence[str], sentinels: dict,
                  scales: dict | None = None, parallel: bool = True):
    """``(compiled filter, its constants' arrays)`` for ``pred`` over aligned arrays of
    ``columns``: call it as ``kern(n, *columns, *params, out, err)``."""
    src, params = filter_source(pred, columns, sentinels, scales)
    return _compile(src, "kern", parallel), params.arrays()


ACC_ARRAYS = ("C", "SF", "SI", "MNF", "MXF", "MNI", "MXI", "VS", "VF")


def agg_source(keys: Sequence[ir.Expr], domains: Sequence[Domain], aggs: Sequence[ir.Agg],
               columns: Sequence[str], sentinels: dict,
               scales: dict | None = None) -> tuple[str, Params]:
    """Source of ``kern(n, nch, <columns>, M, PI, PF, LI, LF, R, C, SF, SI, MNF, MXF, MNI,
    MXI, VS, VF, E)`` and its constants. A non-empty boolean ``M`` (one per row) leaves out
    the rows where it is false, before anything of them is read (so that they raise no
    error); an empty one takes every row: one kernel either way, whatever the filter's
    constants make of its selectivity.

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
    hashed = isinstance(domains, HashSlots)
    if hashed:
        _hash_slot(ec, keys, domains)
    else:
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
    args = ", ".join([*(safe_name(c) for c in columns), "M"])
    return "\n".join([
        f"def kern(n, nch, {args}{', ' if args else ''}{_PARAMS}, R, C, SF, SI, MNF, MXF, MNI, MXI, "
        + ("VS, VF, E, HK, HM, HN):" if hashed else "VS, VF, E):"),
        *[f"    {line}" for line in ec.prologue],
        "    masked = M.shape[0] > 0",
        "    for ch in numba.prange(nch):",
        "        lo = ch * n // nch",
        "        hi = (ch + 1) * n // nch",
        "        for i in range(lo, hi):",
        "            if masked and not M[i]:",
        "                continue",
        *ec.lines,
        "",
    ]), ec.params


def hash_arrays(nch: int, slots: HashSlots) -> dict[str, np.ndarray]:
    """A hashed GROUP BY's tables, one per chunk: the keys' bits (``HK``), their validity
    bits (``HM``, -1 for an empty slot), the slots taken and the rows that found none
    (``HN``)."""
    c = slots.capacity
    return {"HK": np.zeros((nch, c, slots.keys), np.int64),
            "HM": np.full((nch, c), -1, np.int64),
            "HN": np.zeros((nch, 2), np.int64)}


def _hash_slot(ec: ExprCompiler, keys: Sequence[ir.Expr], slots: HashSlots) -> None:
    """Emit ``g``, the row's group in its chunk's table (``fused.domains.HashSlots``):
    the dense keys' slot times the table's width plus the hashed keys' slot, found by
    linear probing on their canonical bits (``exec.partials.canonical_keys``); a table
    more than half full, or full, counts in ``HN[ch, 1]`` (the caller runs again with a
    larger one), and the chunk's later rows are skipped, so that a run bound to be
    repeated does not probe a full table row after row."""
    dense = [k for i, k in enumerate(keys) if i not in slots.hashed]
    ec.emit("if HN[ch, 1] > 0:")  # the chunk's table is full: it runs again, larger
    ec.emit("    continue")
    ec.emit("hc = HM.shape[1]")  # the table's slots (a power of two): one kernel for any
    ec.emit("gd = 0")
    if dense:
        ec.group_slot(dense, slots.dense)
        ec.emit("gd = g")
    ec.emit("hm = 0")
    ec.emit(f"hh = np.uint64({codegen.HASH_SEED})")
    bits = []
    for n, i in enumerate(slots.hashed):
        b = f"hb{n}"
        ok = ec.key_bits(keys[i], b)
        ec.emit(f"hm |= {1 << n} if {ok} else 0")
        ec.emit(f"hh = hh ^ np.uint64({b})")
        for step in codegen.FMIX_LINES:
            ec.emit(step)
        bits.append(b)
    same = " and ".join(["hq == hm", *(f"HK[ch, hs, {n}] == {b}" for n, b in enumerate(bits))])
    ec.emit("hs = np.int64(hh & np.uint64(hc - 1))")
    ec.emit("g = -1")
    ec.emit("for hp in range(hc):")
    ec.emit("    hq = HM[ch, hs]")
    ec.emit("    if hq == -1:")
    ec.emit("        HM[ch, hs] = hm")
    for n, b in enumerate(bits):
        ec.emit(f"        HK[ch, hs, {n}] = {b}")
    ec.emit("        HN[ch, 0] += 1")
    ec.emit("        if HN[ch, 0] > hc // 2:")
    ec.emit("            HN[ch, 1] += 1")
    ec.emit("        g = hs")
    ec.emit("        break")
    ec.emit(f"    if {same}:")
    ec.emit("        g = hs")
    ec.emit("        break")
    ec.emit("    hs = (hs + 1) & (hc - 1)")
    ec.emit("if g < 0:")
    ec.emit("    HN[ch, 1] += 1")
    ec.emit("    g = 0")
    ec.emit("g = gd * (hc + 2) + g")


#: The mask of a kernel call that takes every row (``agg_source``)
EVERY_ROW = np.empty(0, bool)


def agg_kernel(keys, domains, aggs, columns, sentinels, scales=None, parallel: bool = True):
    """``(compiled grouped aggregation, its constants' arrays)`` over aligned arrays of
    ``columns``: call it as ``kern(n, nch, *columns, mask, *params, *accumulators)``, the
    mask ``EVERY_ROW`` or one boolean per row (``agg_source``)."""
    src, params = agg_source(keys, domains, aggs, columns, sentinels, scales)
    return _compile(src, "kern", parallel), params.arrays()
