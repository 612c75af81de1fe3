"""Bit-packed pages (``storage.packing``): the exact layout, round trips, and widths."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bamql.storage.encoding import sentinel_for
from bamql.storage.packing import (
    MAX_BITS,
    bits_for,
    column_sizes,
    pack_pages,
    packed_bits,
    rows_per_page,
    unpack_pages,
    unpack_rows,
)

INT_TYPES = (np.int8, np.int16, np.int32, np.int64)


def reference_pack(values, bits, rpp, sentinel, page_size):
    """The format as written in the docs, one bit at a time: code ``s`` at bits
    ``[s * bits, s * bits + bits)``, bit ``k`` being bit ``k % 64`` of little-endian word
    ``k // 64``; NULL and padding the all-ones code; reference the page's smallest value."""
    n_pages = -(-len(values) // rpp)
    pages = np.zeros((n_pages, page_size), np.uint8)
    refs = np.zeros(n_pages, np.int64)
    for p in range(n_pages):
        chunk = [int(v) for v in values[p * rpp : (p + 1) * rpp]]
        vals = [v for v in chunk if v != sentinel]
        refs[p] = min(vals) if vals else 0
        words = [0] * (page_size // 8)
        for s in range(rpp):
            v = chunk[s] if s < len(chunk) else sentinel
            code = (1 << bits) - 1 if v == sentinel else v - int(refs[p])
            for b in range(bits):
                k = s * bits + b
                if code >> b & 1:
                    words[k // 64] |= 1 << (k % 64)
        pages[p] = np.array(words, np.uint64).view(np.uint8)
    return pages, refs


@st.composite
def columns(draw):
    dt = np.dtype(draw(st.sampled_from(INT_TYPES)))
    bits = draw(st.integers(1, min(MAX_BITS, 8 * dt.itemsize - 1)))
    info = np.iinfo(dt)
    lo = draw(st.integers(int(info.min) + 1, int(info.max)))
    hi = min(int(info.max), lo + (1 << bits) - 2)
    n = draw(st.integers(0, 700))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    # ends of the range, so that the widest codes (and straddling ones) occur
    vals = np.where(rng.random(n) < 0.3, rng.choice([lo, hi], n),
                    lo + (rng.random(n) * (hi - lo + 1)).astype(np.int64).clip(0, hi - lo))
    vals = vals.astype(dt)
    vals[rng.random(n) < draw(st.sampled_from([0.0, 0.1, 1.0]))] = sentinel_for(dt)
    page_size = draw(st.sampled_from([512, 1024, 4096]))
    return vals, bits, page_size


@settings(max_examples=150, deadline=None)
@given(columns())
def test_round_trip_over_widths_types_nulls_and_page_edges(col):
    vals, bits, page_size = col
    rpp = rows_per_page(page_size, bits)
    sent = sentinel_for(vals.dtype)
    pages, ref = pack_pages(vals, bits, rpp, sent, page_size)
    assert pages.shape == (-(-len(vals) // rpp), page_size)
    out = unpack_pages(pages, bits, rpp, ref, vals.dtype, len(vals))
    assert out.dtype == vals.dtype
    np.testing.assert_array_equal(out, vals)
    # the padding slots decode as NULL
    whole = unpack_pages(pages, bits, rpp, ref, vals.dtype)
    assert (whole[len(vals):] == sent).all()
    if len(vals):
        k = np.random.default_rng(len(vals)).integers(0, len(vals), 64)
        np.testing.assert_array_equal(unpack_rows(pages, k // rpp, k % rpp, bits, ref, vals.dtype),
                                      vals[k])


@settings(max_examples=40, deadline=None)
@given(columns())
def test_the_bits_are_those_of_the_written_format(col):
    vals, bits, _ = col
    vals, page_size = vals[:200], 512  # the bit-by-bit reference is slow
    rpp = rows_per_page(page_size, bits)
    sent = sentinel_for(vals.dtype)
    pages, ref = pack_pages(vals, bits, rpp, sent, page_size)
    want_pages, want_ref = reference_pack(vals, bits, rpp, sent, page_size)
    np.testing.assert_array_equal(ref, want_ref)
    np.testing.assert_array_equal(pages, want_pages)


def test_codes_straddle_words_and_tail_bits_stay_zero():
    bits, page_size = 56, 512
    rpp = rows_per_page(page_size, bits)  # 73 codes: 4088 bits of 4096
    assert rpp == 73
    vals = np.full(rpp, (1 << 56) - 2, np.int64)
    vals[0] = 0  # the reference: every other code is all ones but the lowest bit
    pages, ref = pack_pages(vals, bits, rpp, sentinel_for(np.int64), page_size)
    assert ref.tolist() == [0]
    words = pages.view(np.uint64)[0]
    assert words[-1] >> np.uint64(56) == 0  # the 8 unused tail bits
    np.testing.assert_array_equal(unpack_pages(pages, bits, rpp, ref, np.int64), vals)


def test_a_page_of_nulls_has_reference_zero_and_all_ones_codes():
    vals = np.full(10, sentinel_for(np.int16), np.int16)
    pages, ref = pack_pages(vals, 9, rows_per_page(512, 9), sentinel_for(np.int16), 512)
    assert ref.tolist() == [0]
    bits = np.unpackbits(pages[0], bitorder="little")
    assert bits[: 455 * 9].all() and not bits[455 * 9 :].any()


def test_a_code_that_does_not_fit_is_refused():
    vals = np.array([0, 511], np.int16)  # 511 is the NULL code of 9 bits
    with pytest.raises(ValueError, match="does not fit 9 bits"):
        pack_pages(vals, 9, rows_per_page(512, 9), sentinel_for(np.int16), 512)


def test_widths():
    assert bits_for(1, 265) == 9  # a zone id
    assert bits_for(0, 0) == 1 and bits_for(None, None) == 1
    assert bits_for(0, 254) == 8 and bits_for(0, 255) == 9  # the all-ones code stays free
    assert packed_bits(1, 265, np.dtype(np.int16)) == 9
    assert packed_bits(-100, 100, np.dtype(np.int8)) == 0  # 8 bits are no gain on int8
    assert packed_bits(0, 1 << 60, np.dtype(np.int64)) == 0  # wider than 56 bits
    assert packed_bits(0, 1, np.dtype(np.float64)) == 0  # plain floats never
    assert rows_per_page(4096, 9) == 3640


def test_unpacking_a_large_column_is_fast():
    import time

    n = 10_000_000
    vals = np.random.default_rng(0).integers(1, 266, n).astype(np.int16)
    rpp = rows_per_page(4096, 9)
    pages, ref = pack_pages(vals, 9, rpp, sentinel_for(np.int16), 4096)
    unpack_pages(pages[:1], 9, rpp, ref[:1], np.int16)  # compiled
    t = time.perf_counter()
    out = unpack_pages(pages, 9, rpp, ref, np.int16, n)
    assert time.perf_counter() - t < 1.0  # 100 M rows well under a second per core
    np.testing.assert_array_equal(out, vals)


def test_column_sizes_compare_plain_and_packed_pages():
    from bamql.storage.format import ColumnMeta

    class M:
        page_size, rows = 4096, 100_000
        columns = (ColumnMeta("z", "int", "int16", 0, 28, 3640, bits=9),
                   ColumnMeta("f", "float", "float64", 28, 196, 512))

    z, f = column_sizes(M)
    assert (z.plain_bytes, z.stored_bytes) == (-(-100_000 // 2048) * 4096, 28 * 4096)
    assert z.ratio == pytest.approx(49 / 28)
    assert f.ratio == 1.0 and f.bits == 0


# -- packed stores ---------------------------------------------------------------------
def hostile(n: int, seed: int = 0):
    """Columns of every packable kind with NULLs (and one all-NULL), and a plain double."""
    import datetime as dt

    import pyarrow as pa

    rng = np.random.default_rng(seed)

    def nulls(a):
        return [None if m else x for x, m in zip(a, rng.random(n) < 0.15, strict=True)]

    t0 = dt.datetime(2019, 1, 1)
    return pa.table({
        "zone": pa.array(nulls(rng.integers(1, 266, n).tolist()), pa.int32()),
        "big": pa.array(nulls((rng.integers(-(1 << 40), 1 << 40, n)).tolist()), pa.int64()),
        "flag": pa.array(nulls((rng.random(n) < 0.5).tolist()), pa.bool_()),
        "at": pa.array(nulls([t0 + dt.timedelta(seconds=int(s))
                              for s in rng.integers(0, 86400 * 60, n)]), pa.timestamp("us")),
        "kind": pa.array(nulls(rng.choice(["a", "bb", "ccc", "é"], n).tolist())),
        "fare": pa.array(nulls((rng.integers(-500, 20000, n) / 100).tolist())),
        "ratio": pa.array(nulls(rng.random(n).tolist())),
        "none": pa.nulls(n, pa.int64()),
    })


def _ingest(tmp_path, table, name="t", **kw):
    import pyarrow.parquet as pq

    from bamql.storage.ingest import ingest

    src = tmp_path / f"{name}.parquet"
    pq.write_table(table, src)
    ingest([src], tmp_path / name, **kw)
    return tmp_path / name


@pytest.mark.parametrize("page_size", [512, 4096, 65536, 1 << 20])
def test_a_packed_store_reads_back_its_rows(tmp_path, page_size):
    from bamql.storage.partitioned import open_table

    t = hostile(5000)
    out = _ingest(tmp_path, t, page_size=page_size, pack=True)
    with open_table(out) as s:
        m = s.parts[0].manifest
        bits = {c.name: c.bits for c in m.columns}
        assert m.pack
        assert bits["zone"] == 9 and bits["flag"] == 2 and bits["kind"] == 3 and bits["none"] == 1
        assert 0 < bits["at"] < 64 and 0 < bits["fare"] < 16 and bits["ratio"] == 0
        assert s.verify() == []
        back = s.parts[0].to_table()
    for name in t.column_names:
        want = t.column(name)
        got = back.column(name)
        if name == "flag":
            want = want.cast(pa_int64())
        assert got.to_pylist() == want.to_pylist(), name


def pa_int64():
    import pyarrow as pa

    return pa.int64()


@pytest.mark.parametrize("rows", [0, 1])
def test_empty_and_one_row_packed_tables(tmp_path, rows):
    from bamql.storage.store import PageStore

    t = hostile(max(rows, 1)).slice(0, rows)
    out = _ingest(tmp_path, t, pack=True)
    with PageStore(out) as s:
        assert s.verify() == []
        assert s.rows == rows
        assert s.to_table().column("zone").to_pylist() == t.column("zone").to_pylist()
        assert all(c.bits in (0, 1) or rows for c in s.manifest.columns)


def test_plain_stores_are_written_as_before(tmp_path):
    import json

    out = _ingest(tmp_path, hostile(100))
    doc = json.loads((out / "manifest.json").read_text())
    assert "pack" not in doc and all("bits" not in c for c in doc["columns"])


def test_verify_catches_a_flipped_bit_and_open_a_wrong_reference(tmp_path):
    from bamql.errors import StoreError
    from bamql.storage.store import PageStore
    from tests.conftest import edit_pages_meta

    out = _ingest(tmp_path, hostile(3000), page_size=512, pack=True)
    with PageStore(out) as s:
        c = s.column("zone")
        at = (c.first_page + 2) * 512 + 100  # one volume: page p at byte p * page_size
    with open(out / "vol-000.bin", "r+b") as fh:
        fh.seek(at)
        b = fh.read(1)[0]
        fh.seek(at)
        fh.write(bytes([b ^ 0x10]))
    with PageStore(out) as s:
        problems = s.verify()
        assert problems == [f"column 'zone' page 2 (global page {c.first_page + 2}): checksum "
                            "mismatch"]
        with pytest.raises(StoreError, match="checksum mismatch in column 'zone' page 2"):
            s.read_column_pages("zone")

    def shift(a):
        a["ref"][c.first_page + 1] += 1

    edit_pages_meta(out, shift)
    with pytest.raises(StoreError, match="page references of column 'zone' are not its pages'"):
        PageStore(out)


def test_verify_catches_packed_pages_resealed_with_a_wrong_encoding(tmp_path):
    """Pages rewritten (and their checksums sealed again) with a code that is no value's."""
    from bamql.storage.pagemath import page_checksums
    from bamql.storage.store import PageStore
    from tests.conftest import edit_pages_meta

    out = _ingest(tmp_path, hostile(3000), page_size=512, pack=True)
    with PageStore(out) as s:
        c = s.column("kind")
        p = c.first_page + c.n_pages - 1  # the last page: its padding must be NULL codes
        page = np.empty((1, 512), np.uint8)
        s.read_pages(np.array([p]), page)
    assert c.rows_per_page * 3 == 4095  # 1365 codes of 3 bits: one unused tail bit

    def reseal(edit):
        edited = page.copy()
        edit(edited)
        with open(out / "vol-000.bin", "r+b") as fh:
            fh.seek(p * 512)
            fh.write(edited.tobytes())
        edit_pages_meta(out, lambda a: a["checksum"].__setitem__(
            p, page_checksums(edited, [p])[0]))
        with PageStore(out) as s:
            return s.verify()

    # the tail bit set: the values decode as before, but the page is no packing of them
    assert reseal(lambda e: e[0].__setitem__(-1, e[0, -1] | 0x80)) == [
        f"column 'kind' page {c.n_pages - 1} (global page {p}): its packed codes or reference "
        "do not encode its values"]
    # padding codes that are no NULL: values after the last row
    assert "the last page holds values after row 3,000" in "".join(
        reseal(lambda e: e[0].__setitem__(-1, 0)))


def test_an_edited_width_is_refused_at_open(tmp_path):
    from bamql.errors import StoreError
    from bamql.storage.store import PageStore
    from tests.conftest import edit_manifest

    out = _ingest(tmp_path, hostile(300), pack=True)

    def wider(m):
        for c in m["columns"]:
            if c["name"] == "zone":
                c["bits"] = 10

    edit_manifest(out, wider)
    with pytest.raises(StoreError, match="rows of 10 bits per page do not fill"):
        PageStore(out)


def test_append_keeps_a_table_packed(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from bamql.storage.ingest import append
    from bamql.storage.partitioned import open_table

    a, b = hostile(2000, 1).drop(["flag"]), hostile(1500, 2).drop(["flag"])
    out = _ingest(tmp_path, a, page_size=1024, pack=True, partitions=2)
    pq.write_table(b, tmp_path / "b.parquet")
    append([tmp_path / "b.parquet"], out)
    with open_table(out) as t:
        assert t.rows == 3500 and t.verify() == []
        assert all(p.manifest.pack for p in t.parts)
        assert t.columns["zone"].bits == 9
        back = pa.concat_tables([p.to_table() for p in t.parts])
    for name in ("zone", "big", "at", "kind", "fare"):
        assert back.column(name).to_pylist() == (a.column(name).to_pylist()
                                                 + b.column(name).to_pylist()), name


def test_row_group_members_stay_plain_and_the_compressed_copy_holds_packed_pages(tmp_path):
    from bamql.storage.store import PageStore

    t = hostile(4000).append_column("tip", hostile(4000, 5).column("fare"))
    out = _ingest(tmp_path, t, page_size=512, pack=True, groups="fare,tip", compress="zstd")
    with PageStore(out) as s:
        assert [g.members for g in s.manifest.groups] == [("fare", "tip")]
        assert [s.column(n).bits for n in ("fare", "tip")] == [0, 0]
        assert s.column("kind").bits == 3 and s.column("at").bits > 0
        assert s.verify() == []
        c = s.column("at")
        buf = np.empty((c.n_pages, 512), np.uint8)
        s.read_stream("at", 0, c.n_pages, buf)
        ids = np.arange(c.first_page, c.first_page + c.n_pages)
        got = s.page_values(c, buf, ids).reshape(-1)[:4000]
        np.testing.assert_array_equal(got, s.read_column_pages("at")[0])
