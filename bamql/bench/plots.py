"""Plots of benchmark results (matplotlib): time by engine, bytes moved vs needed, sweeps."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def _base(res: dict) -> tuple[int, float]:
    c = res["config"]
    return c["page_sizes"][0], c["shares"][0]


def _bars(ax, queries: list[str], series: list[tuple[str, dict[str, float], str]]) -> list[dict]:
    """Grouped bars, a group per query and a bar per series ``(label, value by query,
    colour)``; a series without a query leaves its slot empty. Returns each series' bar
    positions by query."""
    width = 0.8 / max(len(series), 1)
    at = []
    for i, (label, values, color) in enumerate(series):
        xs = {q: k + i * width for k, q in enumerate(queries) if q in values}
        ax.bar(list(xs.values()), [values[q] for q in xs], width, label=label, color=color)
        at.append(xs)
    ax.set_xticks([k + width * (len(series) - 1) / 2 for k in range(len(queries))], queries)
    return at


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_times(res: dict, path: Path) -> Path:
    """Per-query time by engine, one panel per mode (like BaM's Figure 10)."""
    ps, share = _base(res)
    runs = [r for r in res["runs"] if r["share"] == share and r["page_size"] == ps]
    modes = [m for m in res["config"]["modes"] if any(r["mode"] == m for r in runs)]
    queries = res["config"]["queries"]
    engines = [e for e in res["config"]["engines"] if any(r["engine"] == e for r in runs)]
    fig, axes = plt.subplots(1, max(len(modes), 1), figsize=(6 * max(len(modes), 1), 4), squeeze=False)
    color = {e: f"C{i}" for i, e in enumerate(engines)}  # one color per engine in every panel
    for ax, mode in zip(axes[0], modes, strict=False):
        here = [e for e in engines if any(r["engine"] == e and r["mode"] == mode for r in runs)]
        _bars(ax, queries, [(e, {r["query"]: r["median_s"] * 1e3 for r in runs
                                  if r["engine"] == e and r["mode"] == mode}, color[e])
                            for e in here])
        ax.set_yscale("log")
        ax.set_ylabel("time (ms, log)")
        ax.set_title(f"{mode}: {res['config']['rows']:,} rows, {share:.3%} selectivity")
        ax.legend(fontsize=7)
    return _save(fig, path)


def plot_bytes(res: dict, path: Path) -> Path:
    """Bytes moved vs bytes a whole-column reader moves vs bytes needed (BaM's Figure 2)."""
    ps, share = _base(res)
    runs = [r for r in res["runs"] if r["share"] == share and r["page_size"] == ps
            and r.get("bytes_read") is not None and r["mode"] != "hot"]
    queries = res["config"]["queries"]
    by_q: dict = defaultdict(dict)
    for r in runs:
        by_q[r["query"]].setdefault("whole-column reader", r["whole_bytes"])
        by_q[r["query"]].setdefault("needed", r["bytes_needed"])
        by_q[r["query"]].setdefault(r["engine"], r["bytes_read"])
    series = sorted({k for d in by_q.values() for k in d}, key=lambda k: (k != "whole-column reader", k))
    fig, ax = plt.subplots(figsize=(8, 4))
    _bars(ax, queries, [(s, {q: d[s] / 2**20 for q, d in by_q.items() if s in d}, f"C{i}")
                        for i, s in enumerate(series)])
    ax.set_ylabel("MiB")
    ax.set_title(f"bytes moved vs needed ({ps} B pages, {share:.3%} selectivity)")
    if series:
        ax.legend(fontsize=7)
    else:
        ax.text(0.5, 0.5, "no engine reported bytes (bamql engines do)", ha="center",
                transform=ax.transAxes)
    return _save(fig, path)


def plot_sweep(res: dict, path: Path, key: str) -> Path:
    """Time and amplification of the first query against selectivity or page size."""
    q0 = res["config"]["queries"][0]
    mode = res["config"]["modes"][0]
    other = "page_size" if key == "share" else "share"
    fixed = _base(res)[0] if other == "page_size" else _base(res)[1]
    runs = [r for r in res["runs"] if r["query"] == q0 and r["mode"] == mode and r[other] == fixed]
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4))
    for e in sorted({r["engine"] for r in runs}):
        pts = sorted((r[key], r["median_s"] * 1e3, r.get("bytes_read"), r.get("bytes_needed"))
                     for r in runs if r["engine"] == e)
        a1.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=e)
        amp = [(p[0], p[2] / p[3]) for p in pts if p[2] is not None and p[3]]
        if amp:
            a2.plot([p[0] for p in amp], [p[1] for p in amp], marker="o", label=e)
        whole = [(r[key], r["whole_bytes"] / r["bytes_needed"]) for r in runs
                 if r["engine"] == e and r.get("whole_bytes") and r.get("bytes_needed")]
        if whole:
            a2.plot(*zip(*sorted(whole), strict=True), linestyle="--", label=f"whole-column ({e} data)")
    label = "selectivity" if key == "share" else "page size (B)"
    for ax, yl in ((a1, "time (ms)"), (a2, "I/O amplification (moved / needed)")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(label)
        ax.set_ylabel(yl)
        ax.legend(fontsize=7)
    a1.set_title(f"{q0}, {mode}")
    return _save(fig, path)


def plot_scaleout(res: dict, path: Path) -> Path:
    """Scale-out results: each query's median time by worker count (left) and the speed-up
    of each larger count over the first, beside the ideal (right). A wrong answer is marked
    ``!`` above its bar."""
    cfg = res["config"]
    counts = cfg["gpus"]
    unit = "GPU(s)" if cfg["device"] == "gpu" else "worker(s)"
    runs = [r for r in res["runs"] if r.get("engine", "bamql") == "bamql"]  # not the peers'
    queries = list(dict.fromkeys(r["query"] for r in runs))
    run = {(r["gpus"], r["query"]): r for r in runs}
    fig, axes = plt.subplots(1, 2 if len(counts) > 1 else 1, figsize=(12 if len(counts) > 1 else 6, 4),
                             squeeze=False)
    a1 = axes[0][0]
    ms = [{q: run[n, q]["median_s"] * 1e3 for q in queries if (n, q) in run} for n in counts]
    at = _bars(a1, queries, [(f"{n} {unit}", t, f"C{i}")
                             for i, (n, t) in enumerate(zip(counts, ms, strict=True))])
    for n, t, xs in zip(counts, ms, at, strict=True):
        for q, x in xs.items():
            if not run[n, q]["ok"]:
                a1.annotate("!", (x, t[q]), ha="center", va="bottom", color="red", weight="bold")
    a1.set_ylabel("time (ms, median)")
    engine = f"{cfg['backend']} backend" if cfg["device"] == "gpu" else "CPU engine"
    a1.set_title(f"{cfg['rows']:,} rows, {cfg['partitions']} partitions, {engine}, {cfg['mode']}")
    a1.legend(fontsize=7)
    if len(counts) > 1:
        a2 = axes[0][1]
        for i, n in enumerate(counts[1:], 1):
            pts = [(k, run[n, q]["speedup"]) for k, q in enumerate(queries) if (n, q) in run]
            a2.plot([k for k, _ in pts], [v for _, v in pts], marker="o", color=f"C{i}",
                    label=f"{n} {unit}")
            a2.axhline(n / counts[0], linestyle="--", linewidth=0.8, color=f"C{i}",
                       label=f"ideal, {n / counts[0]:g}x")
        a2.set_xticks(range(len(queries)), queries)
        top = max([counts[-1] / counts[0]] + [r["speedup"] for r in runs])
        a2.set_ylim(0, top * 1.1)  # the ideal line clear of the frame
        a2.set_ylabel(f"speed-up over {counts[0]} {unit}")
        a2.set_title(f"speed-up (medians of {cfg['reps']})")
        a2.legend(fontsize=7)
    return _save(fig, path)


def plot_all(res: dict, out: Path) -> list[Path]:
    """Every plot that the results support, next to ``out`` (its stem names them)."""
    out = Path(out)
    paths = [plot_times(res, out.with_name(out.name + "-time.png")),
             plot_bytes(res, out.with_name(out.name + "-bytes.png"))]
    if len(res["config"]["shares"]) > 1:
        paths.append(plot_sweep(res, out.with_name(out.name + "-selectivity.png"), "share"))
    if len(res["config"]["page_sizes"]) > 1:
        paths.append(plot_sweep(res, out.with_name(out.name + "-pagesize.png"), "page_size"))
    return paths
