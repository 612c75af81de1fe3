"""Row groups: second copies of columns laid out so that one read serves a row's values.

A gather of a query's dependent columns costs one random read per column per matching row:
six columns of 100 k matching rows are 600 k random reads, seconds on a disk. A row group
keeps copies of several columns with the same rows per page, interleaved page by page: block
``i`` of the group file holds page ``i`` of every member, and with small pages a block fits
in one 4 KiB OS page. The first page read of a block brings the whole block into the OS page
cache, so the other members' pages of the same rows are served from memory: one disk read
per matching row, whatever the number of columns. The GPU queue's workers read the whole
block into the warp's staging buffer, and the warp copies the same rows' other members from
there without another command. The columns keep their ordinary extents too (scans and
streams read those); the planner gathers through a group only when the store is read from
disk.

Member ``j``'s page ``i`` has its own global page id (``GroupMeta``), checksum and zone map,
so the page cache, the queues and verification treat it like any other page.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bamql.errors import IngestError
from bamql.storage.format import OS_PAGE, ColumnMeta, GroupMeta, block_bytes, group_file_name
from bamql.storage.nativeio import DiskLayout, read_into
from bamql.storage.pagemath import page_checksums


def auto_groups(columns: Sequence[ColumnMeta], page_size: int) -> list[tuple[str, ...]]:
    """The default grouping: float columns (the measures queries aggregate) with equal rows
    per page, in schema order, as many per group as pages fit in an OS page. Empty when
    pages are an OS page or larger (a block would not share a read)."""
    per = OS_PAGE // page_size
    if per < 2:
        return []
    by_rpp: dict[int, list[str]] = {}
    for c in columns:
        if c.kind == "float":
            by_rpp.setdefault(c.rows_per_page, []).append(c.name)
    out = []
    for names in by_rpp.values():
        out += [tuple(names[i : i + per]) for i in range(0, len(names), per)]
    return [g for g in out if len(g) > 1]


def parse_groups(spec: str | Sequence[Sequence[str]] | None,
                 columns: Sequence[ColumnMeta], page_size: int) -> list[tuple[str, ...]]:
    """``"auto"``, ``"none"``/None, ``"a,b,c;d,e"`` or lists of names -> checked groups."""
    if spec is None or spec == "none":
        return []
    if spec == "auto":
        return auto_groups(columns, page_size)
    if isinstance(spec, str):
        spec = [[n.strip() for n in g.split(",") if n.strip()] for g in spec.split(";")]
    by_name = {c.name: c for c in columns}
    groups, seen = [], set()
    for g in spec:
        g = tuple(g)
        for n in g:
            if n not in by_name:
                raise IngestError(f"row group names unknown column {n!r}")
            if n in seen:
                raise IngestError(f"column {n!r} is in two row groups")
            seen.add(n)
        if len(g) < 2:
            raise IngestError(f"a row group needs two columns or more, got {list(g)}")
        if len({by_name[n].rows_per_page for n in g}) != 1:
            raise IngestError(f"row group {list(g)}: its columns must have the same width "
                              f"(rows per page: {[by_name[n].rows_per_page for n in g]})")
        groups.append(g)
    return groups


def write_groups(d: Path, groups: Sequence[tuple[str, ...]], columns: Sequence[ColumnMeta],
                 page_size: int, n_volumes: int, first_page: int, checksum: np.ndarray,
                 zmin: np.ndarray, zmax: np.ndarray, nulls: np.ndarray,
                 chunk_bytes: int = 64 << 20):
    """Write the group files of a store whose volumes are complete.

    Returns the groups' metadata and the per-page arrays extended with their pages
    (checksums over the new ids; zone maps and null counts copied from the members).
    """
    by_name = {c.name: c for c in columns}
    vol_fds = np.array([os.open(d / f"vol-{v:03d}.bin", os.O_RDONLY) for v in range(n_volumes)],
                       np.int32)
    layout = DiskLayout.volumes(vol_fds, n_volumes, first_page, page_size)
    metas: list[GroupMeta] = []
    extra = {"checksum": [], "zmin": [], "zmax": [], "nulls": []}
    nxt = first_page
    try:
        for gi, names in enumerate(groups):
            cols = [by_name[n] for n in names]
            n_pages, rpp = cols[0].n_pages, cols[0].rows_per_page
            k, bb = len(cols), block_bytes(len(cols), page_size)
            meta = GroupMeta(group_file_name(gi), tuple(names), nxt, n_pages, rpp, bb)
            ck = np.empty((k, n_pages), np.uint64)
            fd = os.open(d / meta.file, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
            try:
                step = max(1, chunk_bytes // bb)
                for i0 in range(0, n_pages, step):
                    i1 = min(i0 + step, n_pages)
                    block = np.zeros((i1 - i0, bb), np.uint8)
                    for j, c in enumerate(cols):
                        pages = np.arange(c.first_page + i0, c.first_page + i1, dtype=np.int64)
                        view = block[:, j * page_size : (j + 1) * page_size]
                        tmp = np.empty((i1 - i0, page_size), np.uint8)
                        bad = read_into(layout, pages, tmp, np.arange(i1 - i0, dtype=np.int64))
                        if bad >= 0:
                            raise IngestError(f"reading column {c.name!r} back for row group "
                                              f"{gi} failed (page {int(pages[bad])})")
                        view[:] = tmp
                        ck[j, i0:i1] = page_checksums(tmp, meta.first_page + j * n_pages
                                                      + np.arange(i0, i1, dtype=np.int64))
                    os.pwrite(fd, block.tobytes(), i0 * bb)
                os.fsync(fd)
            finally:
                os.close(fd)
            extra["checksum"].append(ck.reshape(-1))
            for key, arr in (("zmin", zmin), ("zmax", zmax), ("nulls", nulls)):
                extra[key].append(np.concatenate([arr[c.first_page : c.first_page + n_pages]
                                                  for c in cols]))
            metas.append(meta)
            nxt += meta.total_pages
    finally:
        for fd in vol_fds:
            os.close(int(fd))
    out = {key: np.concatenate([base, *extra[key]]) if extra[key] else base
           for key, base in (("checksum", checksum), ("zmin", zmin), ("zmax", zmax),
                             ("nulls", nulls))}
    return tuple(metas), out
