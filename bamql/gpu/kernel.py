"""The GPU template: one generated CUDA kernel per query (numba.cuda).

Warps walk the candidate rows 32 at a time (grid-stride, so every lane of a warp runs the
same iterations and warp intrinsics stay converged). Stage-1 predicate columns are read
directly (coalesced); every later column — later predicates, then dependent columns — is
read only by lanes whose row is still live, through the page cache (``warp_read``). Matching
rows fold into per-thread accumulators, reduced per warp with shuffles and merged with one
atomic per warp and accumulator. Grouped queries add into per-group accumulators: each
block's own copy in shared memory where every group's fits, merged into global memory once
per block (with the fewest groups, each thread's own first: ``gpu.groupacc``), else
straight into global memory with atomics. The accumulator layout is the CPU template's
(``kernels.accumulate``).
"""

from __future__ import annotations

import threading

import numpy as np

from bamql.fused import ir
from bamql.fused.domains import HashSlots
from bamql.fused.domains import n_slots as group_slots
from bamql.gpu import groupacc, hashgroup
from bamql.gpu.device import SIMULATOR
from bamql.kernels import diskcache, wide
from bamql.kernels.accumulate import NO_SHIFT
from bamql.kernels.codegen import PARAM_ARGS, ExprCompiler, Params, safe_name
from bamql.lru import LRU

if SIMULATOR:  # the generated kernels' shared arrays and atomics, as on a GPU
    from bamql.gpu.device import fix_simulator

    fix_simulator()

#: Compiled kernels by source; constants are arguments, so a source is a query shape.
_cache: LRU = LRU(256)
_lock = threading.Lock()
BLOCK = 32 if SIMULATOR else 256


def _zero(dtype: np.dtype) -> str:
    return f"np.{np.dtype(dtype).name}(0)"


#: ``accumulate.order_keys`` of NaN and of -inf: the local starts of a float MIN and MAX.
_NAN_KEY = 0x7FF8_0000_0000_0000
_NEG_INF_KEY = -0x7FF0_0000_0000_0001


def _float_key(ec: ExprCompiler, v: str) -> str:
    """Emit the int64 key of float ``v`` in DuckDB's order (``accumulate.order_keys``; NaN
    made the canonical NaN, the largest); return its variable. Float MIN and MAX are kept
    as keys (``MNF``/``MXF`` are int64 here), so that integer atomics and shuffles order
    NaN above everything, which the float atomics and ``min``/``max`` do not."""
    k = f"k{v}"
    ec.emit(f"{k} = {_NAN_KEY} if {v} != {v} else np.float64({v}).view(np.int64)")
    ec.emit(f"{k} ^= ({k} >> 63) & 0x7FFFFFFFFFFFFFFF")
    return k


def _groups(stages) -> list[list[ir.Expr]]:
    """The stages' predicates in groups: a stage that reads no new column joins the group
    of the stage before it (a conjunct on columns already read)."""
    groups: list[list[ir.Expr]] = []
    for s in stages:
        if groups and not s.columns:
            groups[-1].append(s.predicate)
        else:
            groups.append([s.predicate])
    return groups


def _shape(pred: ir.Expr, sentinels: dict, scales: dict | None) -> str:
    """The code of ``pred`` alone, constants read from the arguments: equal for predicates
    that differ only in their constants. Within a group the kernel tests predicates in
    this order, not in the planner's (which follows estimates that constants move), so
    that queries differing only in constants share one kernel. The group's columns are
    read before any of its predicates is tested, as the planner ordered them."""
    ec = ExprCompiler(lambda c: f"x_{safe_name(c)}", sentinels, scales=scales,
                      flag=lambda code: f"E[{code}]", guard="live")
    ec.compile(pred)
    return "\n".join((*ec.prologue, *ec.lines))


def column_layout(c, page_size: int) -> tuple:
    """``kernel_source``'s description of how column ``c`` (a ``ColumnMeta``) lies in pages
    of ``page_size`` bytes: ``(first_page, rows_per_page, dtype, bits, page_words)``."""
    return c.first_page, c.rows_per_page, c.dtype, c.bits, page_size // 8


def kernel_source(q: ir.Query, stages, domains, columns: dict, sentinels: dict, scan: set,
                  cached_index: dict, queue: bool = False,
                  scales: dict | None = None) -> tuple[str, Params]:
    """Source of the query kernel and its constants (arguments ``PI, PF, LI, LF``, before
    ``counters``: ``codegen.Params``).

    ``columns[name] = (first_page, rows_per_page, dtype, bits, page_words)``; ``scan`` names
    the columns read directly (argument ``d_<col>``, row-indexed; when ``f_<col>`` is set each
    value read is also stored into ``r_<col>``, a device copy); the others are read through
    the cache, ``cached_index[name]`` being their slot in the hit/miss counters, and their
    first page is argument ``fp_<col>`` (after the scanned columns' arguments, in
    ``cached_index`` order). A bit-packed column (``bits > 0``, ``storage.packing``) decodes
    its code with its page's reference: ``REF`` (per global page) for a cached column; a
    scanned one's ``d_<col>`` holds its pages as uint64 words and ``r_<col>`` the references
    of its pages (it is never written through). Cache misses are
    copied from ``src_words`` (the store in GPU or mapped host memory), or with ``queue``
    read by the host I/O workers through the submission queue (the ``file`` backend).
    ``scales`` gives the decimals of floats stored as scaled integers. ``MNF`` and ``MXF``
    are int64 arrays of ``accumulate.order_keys`` (the caller converts them both ways).
    """
    # errors (an int64 overflow, a group key outside its domain) count in ``E[0, code]``,
    # only for rows still live (``codegen.check_errors``)
    ec = ExprCompiler(lambda c: f"x_{safe_name(c)}", sentinels, indent=" " * 8, scales=scales,
                      flag=lambda code: f"cuda.atomic.add(E, (0, {code}), 1)", guard="live")
    body = ec.lines
    loaded: set[str] = set()
    reader = "warp_read_file" if queue else "warp_read"
    io_args = ("staging_words, sq_page, sq_staging, sq_seq, sq_turn, sq_tail, cq_done, warp_seq, qsize, "
               "staged, g_first, g_pages, stage_wpp, vol_pages" if queue else "src_words")

    def load(name: str) -> None:
        if name in loaded:
            return
        loaded.add(name)
        _, rpp, dt, bits, wpp = columns[name]
        sn = safe_name(name)
        x = f"x_{sn}"
        if bits:  # a code; the all-ones one is NULL (``storage.packing``)
            typ, mask = f"np.{np.dtype(dt).name}", (1 << bits) - 1
            null = f"{typ}({int(sentinels[name])})"
            if name in scan:
                ec.emit(f"c_{sn} = unpack_code(d_{sn}, (row // {rpp}) * {wpp}, row % {rpp}, "
                        f"{bits}) if live else 0")
                ref = f"r_{sn}[row // {rpp}]"
            else:
                ec.emit(f"c_{sn} = {reader}_packed(live, fp_{sn} + row // {rpp}, row % {rpp}, "
                        f"slot_words, state, page_slot, slot_page, slot_lock, clock, n_slots, "
                        f"slot_words, io, {wpp}, {rpp}, st_{sn}, 0, {bits})")
                ref = f"REF[fp_{sn} + row // {rpp}]"
            ec.emit(f"{x} = ({null} if c_{sn} == {mask} else {typ}({ref} + c_{sn})) "
                    f"if live else {_zero(dt)}")
        elif name in scan:
            ec.emit(f"{x} = d_{sn}[row] if live else {_zero(dt)}")
            # write-through: a scan over host memory leaves the column resident on the GPU
            ec.emit(f"if live and f_{sn}:")
            ec.emit(f"    r_{sn}[row] = {x}")
        else:
            # the first page is an argument, not a constant: partitions of one table (and
            # stores of one layout) share the kernel, compiled once
            ec.emit(f"{x} = {reader}(live, fp_{sn} + row // {rpp}, row % {rpp}, "
                    f"s_{np.dtype(dt).name}, "
                    f"state, page_slot, slot_page, slot_lock, clock, n_slots, slot_words, io, "
                    f"{wpp}, {rpp}, st_{sn}, {_zero(dt)}, 0)")

    n_slots = 0  # wide predicates' column slots (``kernels.wide``)
    for group in _groups(stages):
        for pred in group:  # the group's columns first, as the planner orders them
            for name in ir.columns_of(pred):
                load(name)
        for pred in sorted(group, key=lambda p: _shape(p, sentinels, scales)):
            names = ir.columns_of(pred)
            slots = {n: i for i, n in enumerate(names)}
            prog = None
            if ir.size(pred) > wide.WIDE_NODES:
                # the program's offset and length go first, so that their place in ``PI`` (in
                # the source) does not depend on the program's length
                pos = ec.params.scalar(0), ec.params.scalar(0)
                at = len(ec.params.ints) - 2
                prog = wide.encode(pred, slots, ec.params)
                if prog is not None:
                    ec.params.ints[at : at + 2] = prog
            if prog is None:
                v, ok = ec.compile(pred)
            else:  # one interpreter call: its offset and length are arguments too
                kinds = {x.name: x.kind for x in ir.walk(pred) if isinstance(x, ir.Col)}
                for name, i in slots.items():
                    x, okx = ec.compile(ir.Col(name, kinds[name]))
                    ec.emit(f"{'wf' if kinds[name] == 'float' else 'wi'}[{i}] = {x}")
                    ec.emit(f"wo[{i}] = {okx}")
                n_slots = max(n_slots, len(slots))
                v, ok = f"wv{len(ec.lines)}", f"wk{len(ec.lines)}"
                ec.emit(f"{v}, {ok} = wide_run(PI, {pos[0]}, {pos[1]}, PF, LI, LF, wf, wi, wo, ws, wso)")
            ec.emit(f"live = live and {ok} and {v}")
    for e in (*q.keys, *q.aggs):
        for name in ir.columns_of(e):
            load(name)
    grouped = bool(q.keys)
    hashed = isinstance(domains, HashSlots)
    n_groups = group_slots(domains) if grouped else 1
    # a hashed GROUP BY: each block's own table of one key's groups first (gpu.hashgroup)
    hshared = hashgroup.shared_slots(domains, q.aggs) if hashed else 0
    private = (grouped and not hashed and groupacc.fits_shared(n_groups, q.aggs)) or hshared > 0
    n_private = domains.dense_slots * (hshared + 2) if hshared else n_groups
    # the fewest groups: each thread's own accumulators first (no atomics per row)
    own = private and not hashed and groupacc.fits_threads(n_groups, q.aggs)
    ec.emit("if live:")
    ec.indent = " " * 12
    ec.emit("matched += 1")
    decls, flush = [], []
    shared: dict[str, tuple[str, str, str, str]] = {}  # local name -> (array, index, op, init)
    if hashed:
        hashgroup.emit_slot(ec, q.keys, domains, hshared)
        if hshared:  # the block's table, or the global one where it had no room (gl)
            ec.emit("if gl < 0:")
            ec.emit("    cuda.atomic.add(sh_R, g, 1)")
            ec.emit("else:")
            ec.emit("    cuda.atomic.add(R, (0, gl), 1)")
            for j, a in enumerate(q.aggs):  # COUNT(*) counts in sh_R in the block's table
                if groupacc.counts_rows(a):
                    ec.emit(f"    cuda.atomic.add(C, (0, gl, {j}), 1)")
        else:
            ec.emit("cuda.atomic.add(R, (0, g), 1)")
    elif grouped:
        ec.group_slot(q.keys, domains)
        ec.emit("tl_R[g] += 1" if own else "cuda.atomic.add(sh_R, g, 1)" if private
                else "cuda.atomic.add(R, (0, g), 1)")
    else:
        decls.append("nrows = 0")
        ec.emit("nrows += 1")
        flush.append(("R", "(0, 0)", "nrows", "add"))
    for j, a in enumerate(q.aggs):
        f = "F" if a.arg is not None and a.arg.kind == "float" else "I"
        # the condition and the argument outside any branch (kernels.cpu_loops.agg_source)
        fv, fok = ec.compile(a.filter) if a.filter is not None else (None, None)
        v, ok = ec.compile(a.arg) if a.arg is not None else (None, None)
        inner = " " * 12
        if a.filter is not None:  # FILTER (WHERE ...): only rows where it is TRUE
            ec.emit(f"if {fok} and {fv}:")
            inner = ec.indent = " " * 16
        if a.arg is not None:
            ec.emit(f"if {ok}:")
            ec.indent = inner + "    "
        # (array, atomic op, local initial value, local update)
        updates = [("C", "add", "0", "{l} += 1", "1")]
        if private and groupacc.counts_rows(a):  # COUNT(*): the block's row counts, merged as C too
            updates = []
            shared[f"sh_R{j}"] = ("C", f"{j}", "add", "0")
        if a.func in ("sum", "avg") and f == "I":  # exact: two halves (kernels.cpu_loops.agg_source)
            updates.append(("SI", "add", "0", "{l} += int({v}) >> 32", "int({v}) >> 32"))
            lo = "(int({v}) & 4294967295) - 2147483648"
            updates.append(("SI", "add", "0", "{l} += " + lo, lo, len(q.aggs) + j))
        elif a.func in ("sum", "avg"):
            updates.append((f"S{f}", "add", "0.0" if f == "F" else "0", "{l} += {v}", "{v}"))
        elif a.func == "min":
            init = str(_NAN_KEY) if f == "F" else str(np.iinfo(np.int64).max)
            x = _float_key(ec, v) if f == "F" else "{v}"
            updates.append((f"MN{f}", "min", init, "{l} = min({l}, " + x + ")", x))
        elif a.func == "max":
            init = str(_NEG_INF_KEY) if f == "F" else str(np.iinfo(np.int64).min)
            x = _float_key(ec, v) if f == "F" else "{v}"
            updates.append((f"MX{f}", "max", init, "{l} = max({l}, " + x + ")", x))
        elif a.func in ir.VARIANCES:
            # a group's first value is its shift, set once by compare-and-swap; every
            # (group, aggregate) has one, so the sums go straight to memory, grouped or not
            gi, nv = ("g" if grouped else "0"), len(q.aggs)
            ec.emit(f"vx{j} = float({v})")
            ec.emit(f"vo{j} = cuda.atomic.cas(VS, (0, {gi}, {j}), {NO_SHIFT}, "
                    f"np.float64(vx{j}).view(np.int64))")
            ec.emit(f"vd{j} = vx{j} - (vx{j} if vo{j} == {NO_SHIFT} else np.int64(vo{j}).view(np.float64))")
            ec.emit(f"cuda.atomic.add(VF, (0, {gi}, {j}), vd{j})")
            ec.emit(f"cuda.atomic.add(VF, (0, {gi}, {nv + j}), vd{j} * vd{j})")
        for arr, op, init, upd, val, *at in updates:
            vv = v if a.arg is not None else "0"
            jj = at[0] if at else j  # the aggregate's slot, or the one an update names
            if private:  # the block's own accumulators, merged once at its end
                local = f"sh_{arr}_{jj}"
                shared[local] = (arr, str(jj), op, init)
                if own:
                    ec.emit(upd.format(l=f"tl_{arr}_{jj}[g]", v=vv))
                elif hshared:
                    ec.emit("if gl < 0:")
                    ec.emit(f"    cuda.atomic.{op}({local}, g, {val.format(v=vv)})")
                    ec.emit("else:")
                    ec.emit(f"    cuda.atomic.{op}({arr}, (0, gl, {jj}), {val.format(v=vv)})")
                else:
                    ec.emit(f"cuda.atomic.{op}({local}, g, {val.format(v=vv)})")
            elif grouped:
                ec.emit(f"cuda.atomic.{op}({arr}, (0, g, {jj}), {val.format(v=vv)})")
            else:
                local = f"a_{arr}_{jj}"
                decls.append(f"{local} = {init}")
                ec.emit(upd.format(l=local, v=vv))
                flush.append((arr, f"(0, 0, {jj})", local, op))
        ec.indent = " " * 12
    cached = sorted(cached_index, key=cached_index.get)
    head = [
        "def kern(total, cand_off, range_lo, nranges, chunk_row, nchunks, "
        + "".join(f"d_{safe_name(c)}, r_{safe_name(c)}, f_{safe_name(c)}, " for c in sorted(scan))
        + "".join(f"fp_{safe_name(c)}, " for c in cached)
        + "REF, s_int8, s_int16, s_int32, s_int64, s_float32, s_float64, state, page_slot, slot_page, "
        f"slot_lock, clock, n_slots, slot_words, {io_args}, {', '.join(PARAM_ARGS)}, "
        "counters, R, C, SF, SI, MNF, MXF, MNI, MXI, VS, VF, E"
        + (", HK, HM, HS, HN):" if hashed else "):"),
        "    lane = cuda.laneid",
        f"    io = ({io_args},)",
        "    nw = (cuda.gridDim.x * cuda.blockDim.x) // 32",
        "    base = ((cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x) // 32) * 32",
        "    matched = 0",
        *[f"    st_{safe_name(c)} = cuda.local.array(2, np.int64)" for c in cached],
        *[f"    st_{safe_name(c)}[0] = 0\n    st_{safe_name(c)}[1] = 0" for c in cached],
        *[f"    {d}" for d in decls],
        *(hashgroup.shared_init(hshared) if hshared else []),
        *(groupacc.shared_init(n_private, shared) if private else []),
        *(groupacc.thread_init(n_groups, shared) if own else []),
        *[f"    {line}" for line in ec.prologue],
        *([f"    wf = cuda.local.array({n_slots}, np.float64)",
           f"    wi = cuda.local.array({n_slots}, np.int64)",
           f"    wo = cuda.local.array({n_slots}, np.bool_)",
           f"    ws = cuda.local.array({wide.STACK}, np.bool_)",
           f"    wso = cuda.local.array({wide.STACK}, np.bool_)"] if n_slots else []),
        "    while base < total:",
        "        t = base + lane",
        "        live = t < total",
        "        row = 0",
        "        if live and nchunks > 0:",  # 32 candidates never straddle two ranges
        "            row = chunk_row[t >> 5] + (t & 31)",
        "        elif live:",
        "            lo = 0",
        "            hi = nranges - 1",
        "            while lo < hi:",
        "                mid = (lo + hi + 1) // 2",
        "                if cand_off[mid] <= t:",
        "                    lo = mid",
        "                else:",
        "                    hi = mid - 1",
        "            row = range_lo[lo] + (t - cand_off[lo])",
    ]
    tail = ["        base += nw * 32"]
    red: list[str] = []
    ind = "    "
    if not SIMULATOR:  # warp-reduce the per-thread accumulators, then one atomic per warp
        red.append("    for off in (16, 8, 4, 2, 1):")
        for _arr, _idx, local, op in flush:
            if op == "add":
                red.append(f"        {local} += cuda.shfl_down_sync(0xFFFFFFFF, {local}, off)")
            else:
                red.append(f"        {local} = {op}({local}, "
                           f"cuda.shfl_down_sync(0xFFFFFFFF, {local}, off))")
        red.append("        matched += cuda.shfl_down_sync(0xFFFFFFFF, matched, off)")
        red.append("    if lane == 0:")
        ind = "        "
    # (numba's CUDA simulator has no shuffles: there every lane merges its own accumulators)
    for arr, idx, local, op in flush:
        red.append(f"{ind}cuda.atomic.{op}({arr}, {idx}, {local})")
    red.append(f"{ind}cuda.atomic.add(counters, 0, matched)")
    for c in cached:
        i = cached_index[c]
        red.append(f"{ind}cuda.atomic.add(counters, {1 + 2 * i}, st_{safe_name(c)}[0])")
        red.append(f"{ind}cuda.atomic.add(counters, {2 + 2 * i}, st_{safe_name(c)}[1])")
    if own:
        red += groupacc.thread_merge(n_groups, shared)
    if hshared:
        red += hashgroup.shared_merge(hshared, shared, domains)
    elif private:
        red += groupacc.shared_merge(n_groups, shared)
    return "\n".join(head + body + tail + red) + "\n", ec.params


def _header() -> tuple[str, bool]:
    """The header of a GPU kernel's module text: its imports, and the digest of the device
    code it calls (``kernel_globals.digest``); and whether the kernel may be kept on disk
    (not without a digest, nor in numba's CUDA simulator, which compiles nothing)."""
    from bamql.gpu import kernel_globals

    d = kernel_globals.digest()
    return (f"# generated by bamql: a GPU query kernel (gpu.kernel); device code {d}\n"
            "import math\n\nimport numpy as np\nfrom numba import cuda\n\n"
            "from bamql.gpu.kernel_globals import (unpack_code, warp_read, warp_read_file,\n"
            "    warp_read_file_packed, warp_read_packed, wide_run)\n\n"
            + ("from bamql.gpu.device import SimFloat as float\n\n" if SIMULATOR else ""),
            d is not None and not SIMULATOR)


def kernel_cache_size() -> int:
    """Number of compiled GPU kernels held by this process."""
    return len(_cache)


def disk_cache_hits() -> int:
    """Compilations this process loaded from the on-disk cache instead of compiling."""
    with _lock:
        return sum(sum(k.stats.cache_hits.values()) for k in _cache.values()
                   if hasattr(k, "stats"))


def compile_kernel(src: str):
    """Compile (once per source) a generated kernel: from its module file in the kernel
    directory, so that numba-cuda keeps its machine code there, signed (``kernels.diskcache``),
    and the next process loads it instead of compiling. numba's CUDA simulator runs the
    same text from memory."""
    with _lock:
        k = _cache.get(src)
        if k is None:
            header, keep = _header()
            py, on_disk = diskcache.load(src, "kern", header=header, on_disk=keep)
            k = diskcache.cuda_jit(py, on_disk)
            _cache.put(src, k)
        return k
