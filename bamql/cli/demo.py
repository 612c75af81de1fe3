"""``bamql demo``: the main job on an embedded default taxi table."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from bamql.api.connection import connect
from bamql.datasets.generator import GenParams
from bamql.datasets.orc import generate_orc
from bamql.progress import ingest_progress, progress_bar
from bamql.queries import TAXI_QUERIES, load
from bamql.storage.format import FORMAT_VERSION, MANIFEST
from bamql.storage.ingest import ingest
from bamql.storage.iostats import format_bytes

#: Williamsburg share of the demo table: the 0.05% of the BaM taxi queries.
DEMO_SHARE = 0.0005
#: The benchmark's page size: with 2-byte values a 4 KiB page holds 2,048 rows, and at
#: 0.05% most such pages would hold a match; a 512 B page (256 rows) mostly does not.
DEMO_PAGE_SIZE = 512


def _older_format(store: Path) -> bool:
    try:
        m = json.loads((store / MANIFEST).read_text())
    except (OSError, ValueError):
        return True
    return m.get("format_version") != FORMAT_VERSION


def prepare(workdir: Path, rows: int) -> Path:
    """Generate and ingest the demo table under ``workdir`` (reused if already there)."""
    orc_dir, store = workdir / "orc", workdir / "data" / "trips"
    if not orc_dir.exists():
        with progress_bar("generating", rows) as adv:
            r = generate_orc(orc_dir, GenParams(rows=rows, seed=42, williamsburg_share=DEMO_SHARE),
                             progress=adv)
        print(f"generated {r.rows:,} trips as ORC ({r.bytes / 1e6:.1f} MB) at {r.rows_per_s:,.0f} rows/s")
    if store.exists() and _older_format(store):  # written by an earlier bamql: made again
        shutil.rmtree(store)
    if not store.exists():
        srcs = sorted(orc_dir.glob("*.orc"))
        with ingest_progress("ingesting", rows) as bars:
            r = ingest(srcs, store, page_size=DEMO_PAGE_SIZE, **bars)
        print(f"ingested into {store} ({r.store_bytes / 1e6:.1f} MB) at {r.rows / r.seconds:,.0f} rows/s")
    return store.parent


def run_demo(rows: int, workdir: str | None, device: str) -> int:
    """Generate, ingest and query a small taxi table; print answers and bytes moved."""
    if workdir is None:
        with tempfile.TemporaryDirectory(prefix="bamql-demo-") as d:
            return _run(rows, Path(d), device)
    return _run(rows, Path(workdir), device)


def _run(rows: int, workdir: Path, device: str) -> int:
    data = prepare(workdir, rows)
    # the table was just written, so its files are in the OS page cache: plan for that
    with connect(data, device=device, medium="cached") as con:
        print(f"engine: {con.device} (backend {con.backend})" + (f"; {con.note}" if con.note else ""))
        print(f"{'query':<6} {'answer (first value)':>22} {'matched':>9} {'read':>11} "
              f"{'whole-column':>13} {'needed':>11} {'ampl.':>7} {'vs whole':>9} {'ms':>8}")
        for name in TAXI_QUERIES:
            res = con.sql(load(name))
            st = res.stats
            first = res.rows()[0][0]
            print(f"{name:<6} {first:>22.6f} {st.rows_matched:>9,} {format_bytes(st.bytes_read):>11} "
                  f"{format_bytes(st.whole_bytes):>13} {format_bytes(st.bytes_needed):>11} "
                  f"{st.amplification:>6.2f}x {st.whole_bytes / max(st.bytes_read, 1):>8.1f}x "
                  f"{st.seconds * 1e3:>8.1f}")
        print("\nEXPLAIN ANALYZE of q06:")
        print(con.sql(load("q06")).explain())
    return 0
