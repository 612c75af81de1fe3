"""``bamql demo``: the main job on an embedded default taxi table."""

from __future__ import annotations

import tempfile
from pathlib import Path

from bamql.datasets.generator import GenParams
from bamql.datasets.orc import generate_orc
from bamql.progress import progress_bar
from bamql.storage.ingest import ingest

#: Williamsburg share of the demo table: the 0.05% of the BaM taxi queries.
DEMO_SHARE = 0.0005


def prepare(workdir: Path, rows: int) -> Path:
    """Generate and ingest the demo table under ``workdir`` (reused if already there)."""
    orc_dir, store = workdir / "orc", workdir / "data" / "trips"
    if not orc_dir.exists():
        with progress_bar("generating", rows) as adv:
            r = generate_orc(orc_dir, GenParams(rows=rows, seed=42, williamsburg_share=DEMO_SHARE),
                             progress=adv)
        print(f"generated {r.rows:,} trips as ORC ({r.bytes / 1e6:.1f} MB) at {r.rows_per_s:,.0f} rows/s")
    if not store.exists():
        srcs = sorted(orc_dir.glob("*.orc"))
        with progress_bar("ingesting", rows) as adv:
            r = ingest(srcs, store, progress=adv)
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
    print(f"table ready in {data}")
    return 0
