"""Write generated taxi tables as ORC files (zstd, 64 MiB stripes, 10,000-row index stride),
or as zstd Parquet files (``generate_orc(fmt="parquet")``: the same rows, for benchmarks
that need no ORC, since Parquet is faster to write and to ingest)."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.orc as paorc
import pyarrow.parquet as pq

from bamql.datasets.generator import CHUNK_ROWS, GenParams, generate_chunk, n_chunks
from bamql.datasets.schema import TAXI_SCHEMA
from bamql.errors import BamqlError
from bamql.storage.sources import select_columns

ORC_OPTIONS = dict(
    compression="zstd",
    stripe_size=64 * 1024 * 1024,
    row_index_stride=10_000,
    file_version="0.12",
)


@dataclass(frozen=True)
class GenReport:
    """What ``generate_orc`` wrote and how fast."""

    files: list[Path]
    rows: int
    bytes: int
    seconds: float

    @property
    def rows_per_s(self) -> float:
        return self.rows / self.seconds if self.seconds else float("inf")


def write_orc(table_parts, path: Path) -> None:
    """Write an iterable of Arrow tables to one ORC file with bamql's ORC options."""
    with paorc.ORCWriter(str(path), **ORC_OPTIONS) as w:
        for t in table_parts:
            w.write(t)


def _chunk(args: tuple[GenParams, int]) -> pa.Table:
    return generate_chunk(*args)


def write_parquet(table_parts, path: Path) -> None:
    """Write an iterable of Arrow tables to one zstd Parquet file."""
    w = None
    try:
        for t in table_parts:
            if w is None:
                w = pq.ParquetWriter(path, t.schema, compression="zstd")
            w.write_table(t)
    finally:
        if w is not None:
            w.close()


_WRITERS = {"orc": write_orc, "parquet": write_parquet}


def _write_file(params: GenParams, path: Path, first: int, last: int, fmt: str = "orc",
                columns: list[str] | None = None) -> int:
    """Generate chunks ``first..last-1`` into one file (only ``columns`` when given);
    returns its rows."""
    parts = [0]

    def gen():
        for i in range(first, last):
            t = generate_chunk(params, i)
            parts[0] += t.num_rows
            yield t if columns is None else t.select(columns)

    _WRITERS[fmt](gen(), path)
    return parts[0]


def generate_orc(
    out: str | os.PathLike,
    params: GenParams,
    files: int = 1,
    workers: int | None = None,
    progress: Callable[[int], None] | None = None,
    fmt: str = "orc",
    columns: Sequence[str] | None = None,
) -> GenReport:
    """Generate a taxi table as ``files`` ORC files named ``trips-NNN.orc`` under ``out``
    (with ``fmt="parquet"``, zstd Parquet files ``trips-NNN.parquet``).

    Chunks are generated in ``workers`` processes (all cores by default) and written in
    order, so the files are the same for any worker count. The directory is written under a
    temporary name and renamed when complete. ``progress`` is called with rows written.
    ``columns`` keeps only those columns (the rows stay the same).
    """
    if fmt not in _WRITERS:
        raise BamqlError(f"format must be one of {', '.join(_WRITERS)}, not {fmt!r}")
    out = Path(out)
    if out.exists():
        raise BamqlError(f"output {out} already exists; choose a new directory")
    if params.rows <= 0:
        raise BamqlError(f"--rows must be positive, got {params.rows}")
    if columns is not None:
        columns = select_columns(TAXI_SCHEMA.names, columns, "the trips")
    if files < 1 or files > n_chunks(params.rows):
        raise BamqlError(f"--files must be within 1..{n_chunks(params.rows)} for {params.rows} rows")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.parent / f".{out.name}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    t0 = time.perf_counter()
    chunks = n_chunks(params.rows)
    # Chunk ranges per file, as even as whole chunks allow.
    bounds = [round(i * chunks / files) for i in range(files + 1)]
    workers = workers or os.cpu_count() or 1
    paths = [tmp / f"trips-{f:03d}.{fmt}" for f in range(files)]
    try:
        if files > 1 and workers > 1:
            # one file per task: generation and ORC encoding both run in parallel
            with ProcessPoolExecutor(max_workers=min(workers, files)) as pool:
                jobs = [pool.submit(_write_file, params, p, bounds[f], bounds[f + 1], fmt, columns)
                        for f, p in enumerate(paths)]
                for job in as_completed(jobs):
                    rows = job.result()
                    if progress:
                        progress(rows)
        else:
            # one file: chunks generated in parallel, encoded in order here
            with ProcessPoolExecutor(max_workers=workers) as pool:
                for f, path in enumerate(paths):
                    jobs = [(params, i) for i in range(bounds[f], bounds[f + 1])]
                    parts = pool.map(_chunk, jobs) if workers > 1 else map(_chunk, jobs)

                    def counted(parts=parts):
                        for t in parts:
                            yield t if columns is None else t.select(columns)
                            if progress:
                                progress(t.num_rows)

                    _WRITERS[fmt](counted(), path)
        os.rename(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    paths = [out / p.name for p in paths]
    size = sum(p.stat().st_size for p in paths)
    return GenReport(paths, params.rows, size, time.perf_counter() - t0)


__all__ = ["CHUNK_ROWS", "GenParams", "GenReport", "generate_orc", "write_orc", "write_parquet"]
