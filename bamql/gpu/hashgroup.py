"""The GPU kernel's hash table of groups: a GROUP BY whose keys have no dense range (a
float, a timestamp, a large range: ``fused.domains``) aggregated inside the fused kernel.

A row's keys become their canonical bits as the CPU's hash aggregation makes them
(``exec.partials.canonical_keys``: NULL 0 with its validity bit clear, every NaN the one
quiet NaN, -0.0 as 0.0). The global table has ``capacity`` slots (a power of two, open
addressing with linear probing) and its accumulators are the dense template's, indexed by
slot, in global memory.

- **One key**: a slot is its key's bits (``HK``, ``EMPTY`` before), claimed by one
  compare-and-swap; a slot changes once, from ``EMPTY`` to its key, so a read that finds a
  key finds the slot's true key, and an ``EMPTY`` read is settled by the swap. NULL takes
  slot ``capacity``, a key whose bits are ``EMPTY``'s slot ``capacity + 1``. Each block
  first groups in a table of its own in shared memory (its accumulators beside it, merged
  into the global table once at its end), so that rows of a hot group add into shared
  memory, not into one global word; a row whose group finds no room there goes to the
  global table directly.
- **Several keys**: a slot has a state (``HS``: 0 empty, 1 being written, 2 ready), its keys'
  bits (``HK``) and validity bits (``HM``). A row claims an empty slot by compare-and-swap,
  writes its keys, fences and publishes the slot; a row that meets a slot being written
  waits for it (bounded). Keys are compared through atomic reads, which see the writer's
  values, not a line an earlier probe left in the SM's cache.

Where more than half the global slots are taken, or a row finds none, ``HN[1]`` counts it:
the run's answer is discarded and the partition runs again with a larger table
(``exec.hashagg.gpu_kernel_partial``), so a full table never gives a wrong answer. Once
``HN[1]`` is set, later rows no longer probe the global table: a run bound to be repeated
does not walk a full table row after row.
"""

from __future__ import annotations

import numpy as np

from bamql.fused import ir
from bamql.fused.domains import HashSlots
from bamql.gpu import groupacc
from bamql.kernels import codegen

#: A one-key slot's bits before a key claims it (a signalling NaN's, which no canonical
#: float key is; an integer key with these bits has a slot of its own)
EMPTY = 0x7FF4_0000_0000_0001
#: Reads of a slot being written before a row gives up on it (and the run is retried)
SPIN = 1 << 20
#: Probes of a block's own table before a row goes to the global one
SHARED_PROBES = 16


def arrays(slots: HashSlots) -> dict[str, np.ndarray]:
    """The table's arrays with their initial values, shaped as the accumulators (a chunk
    axis of 1 first)."""
    c = slots.capacity
    if slots.keys == 1:
        return {"HK": np.full((1, c, 1), EMPTY, np.int64), "HM": np.zeros((1, 1), np.int64),
                "HS": np.zeros((1, 1), np.int64), "HN": np.zeros((1, 2), np.int64)}
    return {"HK": np.zeros((1, c, slots.keys), np.int64),
            "HM": np.full((1, c), -1, np.int64),
            "HS": np.zeros((1, c), np.int64),
            "HN": np.zeros((1, 2), np.int64)}


def shared_slots(slots: HashSlots, aggs) -> int:
    """The hashed slots of a block's own table (a power of two; 0: none, the rows go to the
    global table): one hashed key, no variance (whose shifts live in global memory), as
    many as ``groupacc.SHARED_BUDGET`` holds with their accumulators, the two slots apart,
    times the dense keys' slots."""
    if slots.keys != 1 or any(a.func in ir.VARIANCES for a in aggs):
        return 0
    per = 8 * (groupacc.private_arrays(aggs) + 1)  # the accumulators and the key
    n = groupacc.SHARED_BUDGET // (per * slots.dense_slots) - 2
    return 0 if n < 64 else 1 << (n.bit_length() - 1)


def _key_bits(ec, keys: tuple[ir.Expr, ...]) -> list[tuple[str, str]]:
    """Emit each key's canonical bits and validity; their variables."""
    return [(f"hb{i}", ec.key_bits(k, f"hb{i}")) for i, k in enumerate(keys)]


def _hash(bits: list[str], mask: int, out: str) -> list[str]:
    """Lines that set ``out`` to the keys' first probe in a table of ``mask + 1`` slots."""
    return [*codegen.hash_lines(bits), f"{out} = np.int64(hh & np.uint64({mask}))"]


def _one_key_probe(key: str, slots: HashSlots, out: str) -> list[str]:
    """Lines that set ``out`` to one key's global slot (``key`` valid and not ``EMPTY``), -1
    where the table has none, counting a slot past half the table in ``HN[1]``."""
    mask = slots.capacity - 1
    return [*_hash([key], mask, "gs"),
            f"{out} = -1",
            f"for gp in range({slots.capacity} if HN[0, 1] == 0 else 0):",
            "    hold = HK[0, gs, 0]",
            f"    if hold == {EMPTY}:",
            f"        hold = cuda.atomic.cas(HK, (0, gs, 0), {EMPTY}, {key})",
            f"        if hold == {EMPTY}:",
            f"            if cuda.atomic.add(HN, (0, 0), 1) >= {slots.capacity // 2}:",
            "                cuda.atomic.add(HN, (0, 1), 1)",
            f"            {out} = gs",
            "            break",
            f"    if hold == {key}:",
            f"        {out} = gs",
            "        break",
            f"    gs = (gs + 1) & {mask}"]


def _many_keys_probe(bits: list[str], slots: HashSlots) -> list[str]:
    """Lines that set ``g`` to the keys' global slot (-1 where the table has none)."""
    mask = slots.capacity - 1
    same = " and ".join(["hst == 2", "cuda.atomic.add(HM, (0, gs), 0) == hm",
                         *(f"cuda.atomic.add(HK, (0, gs, {i}), 0) == {b}"
                           for i, b in enumerate(bits))])
    return [*_hash(bits, mask, "gs"),
            "g = -1",
            f"for gp in range({slots.capacity} if HN[0, 1] == 0 else 0):",
            "    hst = HS[0, gs]",
            "    if hst == 0:",
            "        hst = cuda.atomic.cas(HS, (0, gs), 0, 1)",
            "        if hst == 0:",
            *(f"            HK[0, gs, {i}] = {b}" for i, b in enumerate(bits)),
            "            HM[0, gs] = hm",
            "            cuda.threadfence()",
            "            cuda.atomic.exch(HS, (0, gs), 2)",
            f"            if cuda.atomic.add(HN, (0, 0), 1) >= {slots.capacity // 2}:",
            "                cuda.atomic.add(HN, (0, 1), 1)",
            "            g = gs",
            "            break",
            "    hw = 0",
            f"    while hst == 1 and hw < {SPIN}:",
            "        hst = cuda.atomic.add(HS, (0, gs), 0)",
            "        hw += 1",
            "    if hst == 1:",
            "        break",
            f"    if {same}:",
            "        g = gs",
            "        break",
            f"    gs = (gs + 1) & {mask}"]


def emit_slot(ec, keys: tuple[ir.Expr, ...], slots: HashSlots, shared: int) -> None:
    """Emit the row's group: with a block table of ``shared`` slots (``shared_slots``), ``g``
    its slot there and ``gl`` -1, or ``gl`` its global slot where the block's table has
    no room; without, ``g`` its global slot. A row that finds no slot counts in ``HN[1]``
    (its answer is discarded) and takes slot 0. ``ec`` is the kernel's ExprCompiler."""
    c = slots.capacity
    dense = [k for i, k in enumerate(keys) if i not in slots.hashed]
    ec.emit("gd = 0")
    if dense:  # the dense keys' slot (codegen: NULL and the radix as the dense template's)
        ec.group_slot(dense, slots.dense)
        ec.emit("gd = g")
    bits = _key_bits(ec, tuple(keys[i] for i in slots.hashed))
    if len(bits) > 1:
        ec.emit("hm = 0")
        for i, (_, ok) in enumerate(bits):
            ec.emit(f"hm |= {1 << i} if {ok} else 0")
        for line in _many_keys_probe([b for b, _ in bits], slots):
            ec.emit(line)
        ec.emit("if g < 0:")
        ec.emit("    if HN[0, 1] == 0:")
        ec.emit("        cuda.atomic.add(HN, (0, 1), 1)")
        ec.emit("    g = 0")
        ec.emit(f"g = gd * {c + 2} + g")
        return
    (b, ok), = bits
    out = "gl" if shared else "g"
    ec.emit(f"{out} = -1")
    if shared:
        smask = shared - 1
        ec.emit(f"g = {shared} if not {ok} else ({shared + 1} if {b} == {EMPTY} else -1)")
        ec.emit("if g < 0:")
        for line in _hash([b], smask, "hs"):
            ec.emit("    " + line)
        ec.emit(f"    for hp in range({min(SHARED_PROBES, shared)}):")
        ec.emit("        hold = shk[hs]")
        ec.emit(f"        if hold == {EMPTY}:")
        ec.emit(f"            hold = cuda.atomic.cas(shk, hs, {EMPTY}, {b})")
        ec.emit(f"        if hold == {EMPTY} or hold == {b}:")
        ec.emit("            g = hs")
        ec.emit("            break")
        ec.emit(f"        hs = (hs + 1) & {smask}")
        ec.emit("if g < 0:")  # no room in the block's table: the global one
    else:
        ec.emit(f"if not {ok}:")
        ec.emit(f"    g = {c}")
        ec.emit(f"elif {b} == {EMPTY}:")
        ec.emit(f"    g = {c + 1}")
        ec.emit("else:")
    for line in _one_key_probe(b, slots, out):
        ec.emit("    " + line)
    ec.emit(f"    if {out} < 0:")
    ec.emit("        if HN[0, 1] == 0:")
    ec.emit("            cuda.atomic.add(HN, (0, 1), 1)")
    ec.emit(f"        {out} = 0")
    if shared:
        ec.emit("if gl < 0:")
        ec.emit(f"    g = gd * {shared + 2} + g")
        ec.emit("else:")
        ec.emit(f"    gl = gd * {c + 2} + gl")
    else:
        ec.emit(f"g = gd * {c + 2} + g")


def shared_init(shared: int) -> list[str]:
    """Kernel lines that allocate a block's table of keys (before ``groupacc.shared_init``
    of its accumulators, whose ``syncthreads`` covers both)."""
    return [f"    shk = cuda.shared.array({shared}, np.int64)",
            "    i0 = cuda.threadIdx.x",
            f"    while i0 < {shared}:",
            f"        shk[i0] = {EMPTY}",
            "        i0 += cuda.blockDim.x"]


def shared_merge(shared: int, arrays: dict, slots: HashSlots) -> list[str]:
    """Kernel lines that merge a block's table into the global one: each group the block
    saw finds (or claims) its global slot, then one atomic per accumulator.
    ``arrays``: ``groupacc``'s private accumulators (local name -> (array, index, op, init))."""
    c, w = slots.capacity, shared + 2
    lines = ["    cuda.syncthreads()",
             "    i0 = cuda.threadIdx.x",
             f"    while i0 < {slots.dense_slots * w}:",
             "        n0 = sh_R[i0]",
             "        if n0 != 0:",
             f"            h0 = i0 % {w}",
             f"            if h0 == {shared}:",
             f"                gm = {c}",
             f"            elif h0 == {shared + 1}:",
             f"                gm = {c + 1}",
             "            else:",
             "                hk0 = shk[h0]"]
    lines += ["                " + ln for ln in _one_key_probe("hk0", slots, "gm")]
    lines += ["                if gm < 0:",
              "                    cuda.atomic.add(HN, (0, 1), 1)",
              "                    gm = 0",
              f"            gm += (i0 // {w}) * {c + 2}",
              "            cuda.atomic.add(R, (0, gm), n0)"]
    for k, (arr, jj, op, _) in arrays.items():
        src = "n0" if k.startswith("sh_R") else f"{k}[i0]"
        lines.append(f"            cuda.atomic.{op}({arr}, (0, gm, {jj}), {src})")
    lines.append("        i0 += cuda.blockDim.x")
    return lines


def retry(acc: dict[str, np.ndarray]) -> bool:
    """Whether a run's table overflowed (its answer must be discarded)."""
    return bool(acc["HN"].reshape(-1)[1])


def present(acc: dict[str, np.ndarray], keys: tuple[ir.Expr, ...],
            slots: HashSlots) -> tuple[np.ndarray, np.ndarray]:
    """The groups (accumulator slots with rows) of a run's reduced accumulators, and their
    keys as ``exec.partials``' (groups, 2 * keys) matrix of (valid, canonical bits)."""
    c, w = slots.capacity, slots.capacity + 2
    at = np.flatnonzero(acc["R"].reshape(-1) > 0)
    h, gd = at % w, at // w
    out = np.zeros((len(at), 2 * len(keys)), np.int64)
    hk = acc["HK"].reshape(c, slots.keys)
    inside = np.minimum(h, c - 1)
    if slots.keys == 1:
        i = slots.hashed[0]
        out[:, 2 * i] = h != c
        out[:, 2 * i + 1] = np.where(h < c, hk[inside, 0], np.where(h == c, 0, EMPTY))
    else:
        hm = acc["HM"].reshape(-1)[inside]
        for n, i in enumerate(slots.hashed):
            out[:, 2 * i] = (hm >> n) & 1
            out[:, 2 * i + 1] = hk[inside, n]
    slots.dense_keys(gd, tuple(k.kind for k in keys), out)
    return at, out
