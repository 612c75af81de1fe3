"""``bamql verify``: a store's pages and metadata checked against each other, page by page.

``Verification`` is mixed into ``PageStore``: the checks read through its reader and
compare with its metadata, and sit apart from it because a query of a store sealed on this
machine never runs them. A store sealed elsewhere (``storage.seal``) gets
``metadata_problems`` (no page read) and then ``verify`` at open.
"""

from __future__ import annotations

import os

import numpy as np

from bamql.errors import StoreError
from bamql.storage.encoding import null_mask
from bamql.storage.format import KEYED_VERSION, PAGES_META, ColumnMeta, column_digest, volume_name
from bamql.storage.packing import pack_pages
from bamql.storage.pagemath import column_range, int_zone_maps, page_checksums, zone_maps
from bamql.storage.valuesets import mark, new_bits
from bamql.storage.writer import SAMPLE_ROWS


def _sample_mismatch(c: ColumnMeta, vals: np.ndarray, r0: int, rows: int, sample: np.ndarray,
                     stride: int) -> int | None:
    """The first row of ``vals`` (column ``c``'s stored values from row ``r0``) whose value is
    not the one the column's ``sample`` (every ``stride``-th row's) holds, or None."""
    r1 = min(r0 + len(vals), rows)
    j0, j1 = -(-r0 // stride), -(-r1 // stride)
    if j1 <= j0:
        return None
    got, want = vals[np.arange(j0, j1) * stride - r0], sample[j0:j1]
    if c.scale:  # the sample is in the column's units, its NULLs NaN
        got = c.decode(got)
    if got.dtype != want.dtype:
        return j0 * stride
    if got.dtype.kind == "f":  # bit for bit: a float's NULL is a NaN of its own
        same = got.view(f"u{got.itemsize}") == want.view(f"u{want.itemsize}")
    else:
        same = got == want
    bad = np.nonzero(~same)[0]
    return int(j0 + bad[0]) * stride if len(bad) else None


class Verification:
    """The ``verify`` method of ``PageStore`` (which provides ``manifest``, ``pages``,
    ``value_sets``, ``shadow``, the open files and the readers it uses)."""

    def verify(self) -> list[str]:
        """Check the store's pages and metadata against each other.

        Opening the store has checked the seals of ``manifest.json`` and ``pages.npz``, the
        manifest's consistency and the files' kinds. This reads every page and checks its
        checksum; the files' sizes; each column's values against its metadata (the padding
        after the last row is NULL, every page's zone map, exact int64 zone map, NULL count
        and value-set bits as recomputed from its values, the column's NULL count, range and
        histogram); every row-group copy against the column it copies (same bytes, same zone
        maps); and the compressed copy against the pages.

        Returns
        -------
        list[str]
            One line per problem; empty if the store is sound.
        """
        m = self.manifest
        problems = self.metadata_problems()
        files = [(volume_name(v), fd, m.volume_bytes(v)) for v, fd in enumerate(self._fds)]
        files += [(g.file, fd, g.n_pages * g.block_bytes)
                  for g, fd in zip(m.groups, self._group_fds, strict=True)]
        if self._zst_fd is not None:
            files.append((m.streams.file, self._zst_fd, m.streams.file_bytes))
        for name, fd, want in files:
            size = os.fstat(fd).st_size
            if size != want:
                problems.append(f"{name}: {size:,} bytes, expected {want:,}")
        for c in m.columns:
            problems += self._verify_column(c)
        if self._zst_fd is not None:  # the compressed copy must give the same pages
            step = m.streams.chunk_pages * 64
            for c in m.columns:
                for p0 in range(0, c.n_pages, step):
                    p1 = min(p0 + step, c.n_pages)
                    buf = np.empty((p1 - p0, self.page_size), dtype=np.uint8)
                    try:
                        self.read_stream(c.name, p0, p1, buf)
                    except StoreError as e:
                        problems.append(f"column {c.name!r} (compressed copy): {e}")
                        break
        return problems

    def metadata_problems(self) -> list[str]:
        """The checks of ``verify`` that read no page: each column's description against the
        digest ``pages.npz`` holds of it (format 5: a name, type, extent, scale or dictionary
        edited in the manifest alone), its range against its pages' zone maps, and
        a scaled column's zone maps against its scale (decimals of that many digits, within
        its storage type). One line per problem; empty if none."""
        m, pg = self.manifest, self.pages
        out = []
        descs = self.descriptions
        if descs or m.format_version >= KEYED_VERSION:
            for c in m.columns:
                d = descs.get(c.name)
                if d is None:
                    out.append(f"column {c.name!r}: {PAGES_META} holds no description of it")
                elif not np.array_equal(d, column_digest(c)):
                    out.append(f"column {c.name!r}: its description differs from the one its "
                               f"pages were written with (in {PAGES_META})")
            extra = sorted(set(descs) - set(self.columns))
            if extra:
                out.append(f"{PAGES_META} describes columns the manifest lacks: {extra}")
        for c in m.columns:
            ids = slice(c.first_page, c.first_page + c.n_pages)
            exact = c.np_dtype.kind == "i" and not c.scale and pg.izmin is not None
            izm = (pg.izmin[ids], pg.izmax[ids]) if exact else ()
            have = (None, None) if c.wide else column_range(pg.zmin[ids], pg.zmax[ids], *izm)
            if (c.min, c.max) != have:
                out.append(f"column {c.name!r}: its range [{c.min}, {c.max}] is not its pages' "
                           f"{list(have)}")
            if c.scale:
                z = np.concatenate([pg.zmin[ids], pg.zmax[ids]])
                z = z[np.isfinite(z)]
                stored = np.round(z * c.divisor)
                info = np.iinfo(c.np_dtype)
                if ((stored / c.divisor != z).any() or (stored <= info.min).any()
                        or (stored > info.max).any()):
                    out.append(f"column {c.name!r}: its zone maps are not decimals of {c.scale} "
                               f"digits stored as {c.dtype} (its scale is wrong)")
        return out

    def _verify_packing(self, c: ColumnMeta, ids: np.ndarray, buf: np.ndarray, bad: np.ndarray,
                        vals: np.ndarray, out: list[str]) -> None:
        """Report packed pages of column ``c`` (global ids ``ids``, bytes ``buf``, decoded
        ``vals``; ``bad`` failed their checksum) that are not the packing of their values:
        a wrong reference, a code past the range, set tail bits or padding that is no NULL."""
        try:
            again, ref = pack_pages(vals, c.bits, c.rows_per_page, c.sentinel, self.page_size)
        except ValueError:
            again, ref = None, None
        for k in np.nonzero(~bad)[0].tolist():
            p = int(ids[k])
            if again is None or ref[k] != self.pages.ref[p] or (again[k] != buf[k]).any():
                out.append(f"column {c.name!r} page {p - c.first_page} (global page {p}): its "
                           "packed codes or reference do not encode its values")

    def _verify_column(self, c: ColumnMeta) -> list[str]:
        """``verify``'s checks of column ``c`` and of its row-group copy, if it has one."""
        m, pg = self.manifest, self.pages
        rpp, pad = c.rows_per_page, c.n_pages * c.rows_per_page - m.rows
        exact = c.np_dtype.kind == "i" and not c.scale and pg.izmin is not None
        vs = self.value_sets.get(c.name)
        bits = new_bits(vs.lo, vs.lo + len(vs.bits) - 1, c.n_pages) if vs else None
        hist: dict[str, int] = {}
        copy = self.shadow.get(c.name)
        out, nulls, damaged = [], 0, False
        # the sample pages.npz holds: the values of rows 0, stride, 2 * stride... (PageWriter)
        sample, stride = self.sample.get(c.name), max(1, m.rows // SAMPLE_ROWS)
        sample_off = None
        if sample is None or sample.shape != (-(-m.rows // stride),):
            out.append(f"column {c.name!r}: its sample in {PAGES_META} does not have one value "
                       f"every {stride:,} rows")
            sample = None

        def read(first: int, ids: np.ndarray, where: str) -> tuple[np.ndarray, np.ndarray]:
            """Pages ``ids`` and which of them fail their checksum (each reported)."""
            buf = np.empty((len(ids), self.page_size), dtype=np.uint8)
            self.read_pages(ids, buf, verify=False)
            bad = page_checksums(buf, ids) != pg.checksum[ids]
            out.extend(f"column {c.name!r}{where} page {p - first} (global page {p}): "
                       "checksum mismatch" for p in ids[bad].tolist())
            return buf, bad

        def compare(what: str, ids: np.ndarray, got: np.ndarray, want: np.ndarray) -> None:
            for k in np.nonzero(got != want)[0].tolist():
                out.append(f"column {c.name!r} page {int(ids[k]) - c.first_page}: {what} is "
                           f"{want[k]}, its values give {got[k]}")

        step = max(1, (64 << 20) // self.page_size)
        for p0 in range(0, c.n_pages, step):
            ids = np.arange(c.first_page + p0, c.first_page + min(p0 + step, c.n_pages))
            buf, bad = read(c.first_page, ids, "")
            vals = self.page_values(c, buf, ids).reshape(-1)
            if c.bits:  # packed pages: the one encoding of their values (storage.packing)
                self._verify_packing(c, ids, buf, bad, vals, out)
            last = p0 + len(ids) == c.n_pages
            if last and pad and not bad[-1] and not null_mask(vals[len(vals) - pad :]).all():
                out.append(f"column {c.name!r}: the last page holds values after row {m.rows:,} "
                           "(the row count is wrong)")
            lo, hi, nn = zone_maps(vals, rpp, c.sentinel)
            if c.scale:  # zone maps are in the column's units
                lo, hi = lo / c.divisor, hi / c.divisor
            if last:
                nn[-1] -= pad
            nulls += int(nn.sum())
            good = ~bad  # a page failing its checksum is reported once, as that
            damaged |= bool(bad.any())
            sel = ids[good]
            compare("the zone map's minimum", sel, lo[good], pg.zmin[sel])
            compare("the zone map's maximum", sel, hi[good], pg.zmax[sel])
            compare("the NULL count", sel, nn[good], pg.nulls[sel])
            if exact:
                ilo, ihi = int_zone_maps(vals, rpp, c.sentinel)
                compare("the exact zone map's minimum", sel, ilo[good], pg.izmin[sel])
                compare("the exact zone map's maximum", sel, ihi[good], pg.izmax[sel])
            if bits is not None:
                mark(bits, vals, rpp, p0, vs.lo, c.sentinel)
            if sample is not None and sample_off is None and not bad.any():
                sample_off = _sample_mismatch(c, vals, p0 * rpp, m.rows, sample, stride)
            if c.histogram is not None:
                u, n = np.unique(vals[~null_mask(vals)], return_counts=True)
                for v, k in zip(u.tolist(), n.tolist(), strict=True):
                    hist[str(v)] = hist.get(str(v), 0) + k
            if copy is not None:  # a row-group copy: the same pages, the same zone maps
                cids = ids - c.first_page + copy.first_page
                cbuf, cbad = read(copy.first_page, cids, " (row-group copy)")
                for k in np.nonzero(good & ~cbad & (cbuf != buf).any(axis=1))[0].tolist():
                    out.append(f"column {c.name!r} page {p0 + k}: its row-group copy differs")
                for what, arr in (("zone map minimum", pg.zmin), ("zone map maximum", pg.zmax),
                                  ("NULL count", pg.nulls)):
                    compare(f"the row-group copy's {what}", ids, arr[cids], arr[ids])
        if damaged:  # the column's totals would count the damage again
            return out
        if nulls != c.nulls:
            out.append(f"column {c.name!r}: {c.nulls:,} NULLs recorded, its values hold {nulls:,}")
        if sample_off is not None:
            out.append(f"column {c.name!r}: its sample in {PAGES_META} is not its values (row "
                       f"{sample_off:,} differs; a column renamed or moved?)")
        if bits is not None and not np.array_equal(bits, vs.bits):
            out.append(f"column {c.name!r}: its page value sets do not match its values")
        if c.histogram is not None and hist != c.histogram:
            out.append(f"column {c.name!r}: its histogram does not match its values")
        return out
