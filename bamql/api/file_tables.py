"""The tables that serve what a query names in FROM besides the stored tables: files (page
stores made on demand and cached, or read in place) and registered tables queried as tables;
the part of :class:`bamql.api.session.Session` that keeps them."""

from __future__ import annotations

import itertools
import os
import re
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from bamql.errors import StoreError
from bamql.storage.partitioned import PartitionedTable, open_table

if TYPE_CHECKING:
    from bamql.storage.files import FileSet

#: stores of files read in place that a session keeps (the most recently used), so that a
#: query repeated over unchanged files reads them once
IN_PLACE_KEPT = 4
_in_place_ids = itertools.count()
#: the name of a directory of files read in place: ``<pid>-<n>``, made by process ``pid``
_IN_PLACE_DIR = re.compile(r"([0-9]+)-[0-9]+")


def _alive(pid: int) -> bool:
    """Whether process ``pid`` may exist: only a ``ProcessLookupError`` says it does not
    (another user's process cannot be signalled, yet is alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True  # alive, or a pid this system cannot name: left alone either way
    return True


def _remove_dead_in_place(root: Path) -> None:
    """Remove the directories of files read in place under ``root`` (``<pid>-<n>``) whose
    process no longer exists: a process killed mid-query leaves its own behind. Another
    live process's directories, this process's, and names of any other form stay."""
    try:
        entries = list(os.scandir(root))
    except OSError:
        return
    for e in entries:
        m = _IN_PLACE_DIR.fullmatch(e.name)
        if m is None or not e.is_dir(follow_symlinks=False):
            continue
        pid = int(m.group(1))
        if pid > 0 and pid != os.getpid() and not _alive(pid):
            shutil.rmtree(e.path, ignore_errors=True)


class FileTables:
    """The session's file and registered tables (its ``_files``, ``_file_notes``,
    ``_file_labels``, ``_in_place``, ``stores``, ``dimensions``, ``config``, ``gpu`` and lock
    are the session's)."""

    def _bind_files(self, text: str) -> str:
        """``text`` with the files it names in FROM replaced by the tables that serve them
        (page stores made on demand and cached: ``storage.filecache``)."""
        from bamql.sql.file_refs import bind_files

        key = (text, frozenset(self.stores))
        if self._plain.get(key) is not None:
            return text
        registered = self._registered_gen
        out = bind_files(text, self.stores, self._file_table, self._registered_table)
        with self._lock:  # not if a table was registered or dropped meanwhile
            if out is text and registered == self._registered_gen:
                self._plain.put(key, True)
        return out

    def _registered_table(self, name: str) -> str | None:
        """The name of the table that serves the registered table ``name`` queried as a
        table (its rows ingested into a store in the file cache, keyed by their content),
        or None where ``name`` is not registered."""
        dim = self.dimensions.get(name)
        if dim is None:
            return None
        from bamql.storage.filecache import cached_table

        key = (name, self._registered_gen)
        if key in self._unstorable:
            return None
        try:
            store = cached_table(dim.table.select(list(dim.metas)), self.config.file_cache_dir)
        except StoreError:  # values a store cannot hold (the smallest BIGINT, its NULL mark):
            self._unstorable.add(key)  # the plan tree reads the registered table as it is
            return None

        table = f"mem_{store.name.removeprefix('mem-')}"
        with self._lock:
            if table not in self._files:
                self._files[table] = open_table(store)
                self._file_notes[table] = f"registered table {name!r}, read through a store " \
                                          f"cached at {store}"
                self._file_labels[table] = repr(name)
        return table

    def _file_table(self, ref) -> str:
        """The name of the table that serves the files of ``ref`` (a ``FileRef``), opened
        in this session; the versions of the same files made stale by a change are dropped
        (their stores close once no query holds them)."""
        from bamql.storage.filecache import cached_store
        from bamql.storage.files import FileSet

        files = FileSet.resolve(ref.specs, ref.format, ref.hive, ref.filters, ref.options)
        if not self.config.cache_files:
            return self._in_place_table(files, ref)
        cached = cached_store(files, self.config.file_cache_dir, self.file_progress)
        name = files.table_name
        with self._lock:
            if name not in self._files:
                table = open_table(cached.store)
                stale = [n for n in self._files if n.startswith(f"files_{files.names_key}_")]
                for n in stale:
                    self._off_gpu(self._files.pop(n))
                    del self._file_notes[n], self._file_labels[n]
                self._files[name] = table
                self._file_notes[name] = cached.describe()
                self._file_labels[name] = ", ".join(f"'{x}'" for x in ref.specs)
        return name

    def _in_place_table(self, files: FileSet, ref) -> str:
        """The name of a table of what the query of ``ref`` reads of ``files`` (its columns,
        the row groups and rows its pushed filter keeps: ``storage.inplace``), made in a
        hidden directory of the file cache; the session keeps the last ``IN_PLACE_KEPT``
        and removes the others' directories (and all of them when it closes)."""
        from bamql.storage.inplace import ReadSpec, read_in_place

        spec = ReadSpec(ref.names, ref.filters)
        key = (files.names_key, files.version_key, spec.key)
        hit = self._in_place_hit(files, ref)
        if hit is not None:
            return hit
        root = self.config.file_cache_dir / ".inplace"
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise StoreError(f"cannot make the file cache {root}: {e.strerror} (set "
                             f"BAMQL_FILE_CACHE to a writable directory)") from None
        if not self._in_place_swept:
            self._in_place_swept = True
            _remove_dead_in_place(root)
        out = root / f"{os.getpid()}-{next(_in_place_ids)}"
        shutil.rmtree(out, ignore_errors=True)  # a dead process's of the same pid
        made = read_in_place(files, spec, out)
        name = f"inplace_{out.name.replace('-', '_')}"
        with self._lock:
            self._files[name] = open_table(out)
            self._file_notes[name] = made.describe()
            self._file_labels[name] = ", ".join(f"'{x}'" for x in ref.specs)
            self._in_place[key] = (name, out)
            while len(self._in_place) > IN_PLACE_KEPT:
                self._drop_in_place(next(iter(self._in_place)))
        return name

    def _in_place_hit(self, files: FileSet, ref) -> str | None:
        """The name of the table of what the query of ``ref`` reads of ``files`` where this
        session read it already (now its most recent), else None."""
        from bamql.storage.inplace import ReadSpec

        key = (files.names_key, files.version_key, ReadSpec(ref.names, ref.filters).key)
        with self._lock:
            hit = self._in_place.pop(key, None)
            if hit is None:
                return None
            self._in_place[key] = hit
            return hit[0]

    def _drop_in_place(self, key: tuple) -> None:
        """Forget a table read in place and remove its directory (a query still reading it
        keeps its open files)."""
        name, out = self._in_place.pop(key)
        table = self._files.pop(name, None)
        self._file_notes.pop(name, None)
        self._file_labels.pop(name, None)
        if table is not None:
            self._off_gpu(table)
        shutil.rmtree(out, ignore_errors=True)

    def _off_gpu(self, table: PartitionedTable) -> None:
        """Release a table this session no longer serves from the GPU (its page caches)."""
        if self.gpu is not None:
            for part in table.parts:
                self.gpu.drop(part)
