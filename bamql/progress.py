"""Progress bars for long work (rich), quiet when output is not a terminal."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)


@contextmanager
def progress_bar(
    description: str, total: int, enabled: bool | None = None
) -> Iterator[Callable[[int], None]]:
    """Yield an ``advance(n)`` callback that drives a progress bar on stderr.

    The bar shows only on a terminal (or when ``enabled`` is True).
    """
    if enabled is None:
        enabled = sys.stderr.isatty()
    if not enabled:
        yield lambda n: None
        return
    cols = (TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
            TimeElapsedColumn(), TimeRemainingColumn())
    with Progress(*cols, transient=True) as p:
        task = p.add_task(description, total=total)
        yield lambda n: p.advance(task, n)
