"""A table's record of where its rows came from (``format.Origin``), made at ingest and
checked by a refresh: which files the recorded specs name now, which of them are new, and
whether a file already ingested has changed or vanished (a table cannot take rows back, so
either is an error, never a partial refresh).

A local file is identified by its resolved path, size and modification time (ns); a file
named by a URI by its URI and the size and last-modified time its listing gives, as
``storage.filecache`` keys files.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bamql.config import FloatEncoding
from bamql.errors import IngestError
from bamql.storage import remote
from bamql.storage.files import SourcePath, expand
from bamql.storage.format import Origin
from bamql.storage.remote import RemotePath


def spec_text(spec: str | os.PathLike | RemotePath) -> str:
    """A source spec as recorded: a URI as given, a local path, directory or glob made
    absolute (so that a refresh from another directory names the same files)."""
    if isinstance(spec, RemotePath):
        return spec.uri
    text = os.fspath(spec)
    if isinstance(text, bytes):
        raise IngestError(f"a source is a path (str), not {type(spec).__name__}")
    return text if remote.is_uri(text) else os.path.abspath(os.path.expanduser(text))


def identity(f: SourcePath) -> tuple[str, int, int]:
    """``f``'s key, size and modification time (ns), read now (a URI's from its listing
    when it has one)."""
    if isinstance(f, RemotePath):
        if f.size < 0:
            f = remote.stat(f)
        return f.uri, f.size, f.mtime_ns
    try:
        st = os.stat(f)
    except OSError as e:
        raise IngestError(f"cannot read {f}: {e.strerror}") from None
    return _key(f), st.st_size, st.st_mtime_ns


def _key(f: SourcePath) -> str:
    """What identifies file ``f`` in an origin: its URI, or its resolved local path."""
    return f.uri if isinstance(f, RemotePath) else str(Path(f).resolve())


def record(specs: Sequence[str | os.PathLike | RemotePath], files: Sequence[SourcePath],
           floats: FloatEncoding) -> Origin:
    """The origin of a table made from ``files``, which ``specs`` named, ingested with
    ``floats``."""
    ids = [identity(f) for f in files]
    return Origin(specs=tuple(dict.fromkeys(spec_text(s) for s in specs)),
                  files=tuple(i[0] for i in ids), sizes=tuple(i[1] for i in ids),
                  mtimes=tuple(i[2] for i in ids), floats=floats)


def extended(origin: Origin, specs: Sequence[str | os.PathLike | RemotePath],
             files: Sequence[SourcePath]) -> Origin:
    """``origin`` with ``files`` (named by ``specs``) added after its own files."""
    more = record(specs, files, origin.floats)
    return Origin(specs=tuple(dict.fromkeys(origin.specs + more.specs)),
                  files=origin.files + more.files, sizes=origin.sizes + more.sizes,
                  mtimes=origin.mtimes + more.mtimes, floats=origin.floats)


@dataclass(frozen=True)
class Changes:
    """What a refresh finds: the files the specs name now that the table lacks (in the
    specs' order), and how many of its recorded files are unchanged."""

    new: tuple[SourcePath, ...]
    unchanged: int


def changes(origin: Origin, table: Path) -> Changes:
    """The new files that ``origin``'s specs name now; IngestError (one line, naming the
    file) if a recorded file changed or vanished."""
    recorded = dict(zip(origin.files, zip(origin.sizes, origin.mtimes, strict=True),
                        strict=False))
    for key, (size, mtime) in recorded.items():  # local files: statted directly
        if not remote.is_uri(key):
            _check(table, key, _local_now(key), size, mtime)
    found: dict[str, SourcePath] = {}
    for spec in origin.specs:
        for f in expand(spec):
            found.setdefault(_key(f), f)
    for key, (size, mtime) in recorded.items():  # files named by URIs: as listed now
        if remote.is_uri(key):
            now = identity(found[key])[1:] if key in found else None
            _check(table, key, now, size, mtime)
    return Changes(tuple(f for k, f in found.items() if k not in recorded), len(recorded))


def _local_now(path: str) -> tuple[int, int] | None:
    """The size and modification time of local file ``path``, or None if it is gone."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise IngestError(f"cannot read {path}: {e.strerror}") from None
    return st.st_size, st.st_mtime_ns


def _check(table: Path, key: str, now: tuple[int, int] | None, size: int, mtime: int) -> None:
    """Refuse a recorded file that vanished or changed since it was ingested."""
    if now is None:
        what = "has vanished"
    elif now[0] != size:
        what = f"has changed (size {size:,} B then, {now[0]:,} B now)"
    elif now[1] != mtime:
        what = "has changed (modified since)"
    else:
        return
    raise IngestError(f"{key}, ingested into {table}, {what}; a table cannot take rows back: "
                      f"re-ingest it (bamql ingest without --refresh, to a new directory)")
