"""The directories whose files the queries of ``bamql serve --allow-files`` may read."""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Sequence
from pathlib import Path

from bamql.errors import PlanError, UsageError

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_GLOB = re.compile(r"[*?\[]")
#: directories no root may be or lie in
_SYSTEM = (Path("/proc"), Path("/sys"), Path("/dev"))


class FileRoots:
    """The directories whose files queries may name in FROM, by real path: a file is read
    only where its path, symlinks resolved, lies in one of them.

    Parameters
    ----------
    roots
        Existing directories (``~`` expanded; relative to the working directory).

    Raises
    ------
    UsageError
        None given, or one that is no directory, or the whole file system or a system one.
    """

    def __init__(self, roots: Sequence[str | os.PathLike]) -> None:
        if isinstance(roots, str | bytes | os.PathLike) or not isinstance(roots, Sequence) \
                or not roots:
            raise UsageError(f"allow_files takes the directories whose files queries may read, "
                             f"not {roots!r} (bamql serve DIR --allow-files . for the current one)")
        out = []
        for r in roots:
            p = Path(os.path.expanduser(os.fspath(r)))
            real = Path(os.path.realpath(p))
            if not real.is_dir():
                raise UsageError(f"--allow-files: {r} is no directory")
            if real == Path("/") or any(real == d or d in real.parents for d in _SYSTEM):
                raise UsageError(f"--allow-files: {r} is a system directory; name the "
                                 "directories that hold the files")
            out.append(real)
        self.roots = tuple(dict.fromkeys(out))

    def __repr__(self) -> str:
        return f"FileRoots({[str(r) for r in self.roots]})"

    def holds(self, path: str | os.PathLike) -> bool:
        """Whether ``path``, symlinks resolved, lies in a root."""
        real = Path(os.path.realpath(path))
        return any(real == r or r in real.parents for r in self.roots)

    def check(self, spec: str | os.PathLike) -> None:
        """Refuse (PlanError) a path, directory or glob of FROM that reaches beyond the
        roots: its fixed part before any walk, then each file it names."""
        from bamql.storage.files import expand

        text = os.fspath(spec)
        refused = PlanError(f"this server reads files only under the directories it serves "
                            f"(bamql serve --allow-files DIR), not {text!r}")
        if not isinstance(text, str) or _SCHEME.match(text):
            raise refused
        path = os.path.expanduser(text)
        parts = path.split("/")
        fixed = list(itertools.takewhile(lambda part: not _GLOB.search(part), parts))
        base = "/".join(fixed) or ("/" if path.startswith("/") else ".")
        if not self.holds(base):
            raise refused
        if any(not self.holds(f) for f in expand(text)):
            raise refused
