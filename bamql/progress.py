"""Progress bars for long work (rich), quiet when output is not a terminal.

rich loads when a bar is shown, not when a command that might show one imports this."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager


@contextmanager
def progress_bars(
    tasks: Sequence[tuple[str, int]], enabled: bool | None = None
) -> Iterator[list[Callable[[int], None]]]:
    """Yield one ``advance(n)`` callback per ``(description, total)``, their bars shown
    together on stderr (callable from any thread).

    The bars show only on a terminal (or when ``enabled`` is True).
    """
    if enabled is None:
        enabled = sys.stderr.isatty()
    if not enabled:
        yield [lambda n: None for _ in tasks]
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    cols = (TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
            TimeElapsedColumn(), TimeRemainingColumn())
    with Progress(*cols, transient=True) as p:
        ids = [p.add_task(d, total=t) for d, t in tasks]
        yield [lambda n, i=i: p.advance(i, n) for i in ids]


@contextmanager
def progress_bar(
    description: str, total: int, enabled: bool | None = None
) -> Iterator[Callable[[int], None]]:
    """Yield an ``advance(n)`` callback that drives a progress bar on stderr.

    The bar shows only on a terminal (or when ``enabled`` is True).
    """
    with progress_bars([(description, total)], enabled) as (advance,):
        yield advance


@contextmanager
def ingest_progress(description: str, rows: int) -> Iterator[dict[str, Callable[[int], None]]]:
    """Bars for an ingest: its pass over the float columns (checking them for decimals)
    and its writing; yields the ``ingest`` keyword arguments that drive them."""
    with progress_bars([("checking floats", rows), (description, rows)]) as (scan, write):
        yield {"progress": write, "scan_progress": scan}
