"""A store's metadata is sealed and checked: an edit of ``manifest.json`` is refused at open
with one line, a manifest sealed again after an edit must still be consistent, every file the
store reads is a regular file inside it, and ``verify`` compares the metadata with the pages."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

import bamql
from bamql.errors import StoreError
from bamql.storage.format import MANIFEST, volume_name
from bamql.storage.ingest import ingest
from bamql.storage.partitioned import open_table
from bamql.storage.store import PageStore
from tests.conftest import edit_manifest, edit_pages_meta

ROOT = Path(__file__).resolve().parents[2]
QUERIES = [
    "SELECT COUNT(*) FROM trips",
    "SELECT SUM(fare_amount), MIN(trip_distance), MAX(pickup_location_id) FROM trips",
    "SELECT payment_type, COUNT(*), SUM(tip_amount) FROM trips GROUP BY 1 ORDER BY 1",
    "SELECT store_and_fwd_flag, COUNT(*) FROM trips WHERE vendor_id = 2 GROUP BY 1 ORDER BY 1",
]


@pytest.fixture(scope="module")
def small(tmp_path_factory, taxi_table) -> Path:
    """3,000 trips in 512 B pages over two volumes, with a row group: its data directory."""
    d = tmp_path_factory.mktemp("seal")
    pq.write_table(taxi_table.slice(0, 3000), d / "t.parquet")
    ingest([d / "t.parquet"], d / "data" / "trips", page_size=512, volumes=2, groups="auto")
    return d / "data"


@pytest.fixture(scope="module")
def answers(small) -> list:
    with bamql.connect(small, device="cpu") as con:
        return [con.sql(q).rows() for q in QUERIES]


@pytest.fixture
def copy(small, tmp_path) -> Path:
    """A copy of the small store to edit: its data directory."""
    shutil.copytree(small, tmp_path / "data")
    return tmp_path / "data"


def _column(m: dict, name: str) -> dict:
    return next(c for c in m["columns"] if c["name"] == name)


def _scale(m):
    _column(m, "fare_amount")["scale"] += 1


def _first_page(m):
    _column(m, "tip_amount")["first_page"] += 1


def _dtype(m):
    _column(m, "pickup_location_id")["dtype"] = "uint16"


def _rows_per_page(m):
    _column(m, "trip_distance")["rows_per_page"] //= 2


def _reversed_dictionary(m):
    c = _column(m, "store_and_fwd_flag")
    c["dictionary"] = c["dictionary"][::-1]


def _swapped_names(m):
    a, b = _column(m, "fare_amount"), _column(m, "tip_amount")
    a["name"], b["name"] = b["name"], a["name"]


def _rows(m):
    m["rows"] += 1


def _one_line_refusal(data: Path, match: str) -> None:
    with pytest.raises(StoreError, match=match) as e:
        open_table(data / "trips")
    assert "\n" not in str(e.value)


EDITS = [_rows, _scale, _first_page, _dtype, _rows_per_page, _reversed_dictionary,
         _swapped_names]


@pytest.mark.parametrize("change", EDITS)
def test_an_edited_manifest_is_refused_at_open(copy, change):
    man = copy / "trips" / MANIFEST
    m = json.loads(man.read_text())
    change(m)
    man.write_text(json.dumps(m, indent=1))
    _one_line_refusal(copy, f"{MANIFEST} of .* does not match its checksum: the store was "
                      "modified after ingest; re-ingest it")


@pytest.mark.parametrize("change, match", [
    (_dtype, "storage type 'uint16' is not one of a int column's"),
    (_rows_per_page, "rows of int16 per page do not fill 512 B pages"),
    (_first_page, "starts at page"),
    (_reversed_dictionary, "dictionary is not sorted, unique strings"),
    (lambda m: _column(m, "fare_amount").update(scale=7), "scale 7 does not fit"),
    (lambda m: m.update(rows=m["rows"] + 2000), "pages do not hold"),
    (lambda m: _column(m, "fare_amount").update(nulls=5), "do not add up to 5"),
    (lambda m: _column(m, "vendor_id").update(nulls=5), "histogram does not count"),
    (lambda m: m["groups"][0].update(first_page=0), "does not match its members' pages"),
])
def test_a_manifest_sealed_again_must_still_be_consistent(copy, change, match):
    edit_manifest(copy / "trips", change)
    _one_line_refusal(copy, match)


def test_single_digit_edits_are_refused_or_change_nothing(copy, answers):
    """Every digit of the manifest changed to another digit, at random: the store is refused
    at open, or (never, with the seal) answers exactly as before."""
    man = copy / "trips" / MANIFEST
    text = man.read_text()
    digits = [i for i, ch in enumerate(text) if ch.isdigit()]
    rng = random.Random(1)
    for i in rng.sample(digits, 100):
        new = rng.choice([d for d in "0123456789" if d != text[i]])
        man.write_text(text[:i] + new + text[i + 1 :])
        try:
            with bamql.connect(copy, device="cpu") as con:
                got = [con.sql(q).rows() for q in QUERIES]
        except StoreError as e:
            assert "\n" not in str(e)
            continue
        assert got == answers, f"digit {i} ({text[i]} -> {new}): {text[i - 40 : i + 10]!r}"


def _mkfifo_in_place_of(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


@pytest.mark.parametrize("what", ["volume", "group", "manifest", "pages"])
def test_a_fifo_in_the_store_is_refused_without_hanging(copy, what):
    t = copy / "trips"
    name = {"volume": volume_name(1), "group": "grp-000.bin", "manifest": MANIFEST,
            "pages": "pages.npz"}[what]
    _mkfifo_in_place_of(t / name)
    # in another process: a regression would block in open() or read(), not fail
    code = ("import sys\nfrom bamql.errors import StoreError\n"
            "from bamql.storage.partitioned import open_table\n"
            "try:\n    open_table(sys.argv[1])\nexcept StoreError as e:\n    print(e)\n"
            "else:\n    print('opened')\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-c", code, str(t)], capture_output=True, text=True,
                       timeout=60, env=env)
    assert r.returncode == 0, r.stderr
    assert f"{name} is not a regular file" in r.stdout, r.stdout


def test_a_fifo_named_by_a_group_entry_is_refused(copy):
    t = copy / "trips"
    os.mkfifo(t / "pipe")
    edit_manifest(t, lambda m: m["groups"][0].update(file="pipe"))
    _one_line_refusal(copy, "row group file pipe is not a regular file")


@pytest.mark.parametrize("target", ["/etc/passwd", "inside"])
def test_a_symlinked_volume_is_refused(copy, target):
    t = copy / "trips"
    vol = t / volume_name(0)
    if target == "inside":  # even a link to the store's own (moved) volume
        vol.rename(t / "moved.bin")
        target = "moved.bin"
    else:
        vol.unlink()
    vol.symlink_to(target)
    _one_line_refusal(copy, f"volume {volume_name(0)} cannot be opened \\(a symbolic link\\)")


@pytest.mark.parametrize("name", ["/etc/passwd", "../trips/grp-000.bin", "..", "sub/grp-000.bin"])
def test_a_group_file_outside_the_store_is_refused(copy, name):
    edit_manifest(copy / "trips", lambda m: m["groups"][0].update(file=name))
    _one_line_refusal(copy, "is not a file name inside the store")


def test_verify_passes_a_sound_store(small):
    with PageStore(small / "trips") as s:
        assert s.verify() == []


def _verify(data: Path) -> list[str]:
    with PageStore(data / "trips") as s:
        return s.verify()


def test_verify_finds_an_edited_zone_map_sealed_again(copy):
    def lower(a):
        a["zmin"][3] -= 1  # page 3 of the first column
    edit_pages_meta(copy / "trips", lower)
    problems = _verify(copy)
    assert len(problems) == 1 and "page 3: the zone map's minimum" in problems[0], problems


def test_verify_finds_moved_null_counts_sealed_again(copy):
    with PageStore(copy / "trips") as s:
        c = s.column("passenger_count")
        assert c.nulls == 0
        p = c.first_page

    def move(a):  # the column's total stays right, so only the pages can tell
        a["nulls"][p] += 1
        a["nulls"][p + 1] -= 1
    edit_pages_meta(copy / "trips", move)
    problems = _verify(copy)
    assert [x.split(":")[0] for x in problems] == ["column 'passenger_count' page 0",
                                                   "column 'passenger_count' page 1"], problems


def test_verify_finds_a_wrong_row_count_sealed_again(small, tmp_path):
    # floats only: no histogram, whose count would give the row count away at open
    ingest([small.parent / "t.parquet"], tmp_path / "trips", page_size=512,
           columns=["fare_amount", "tip_amount"])
    edit_manifest(tmp_path / "trips", _rows)  # a padding row read as a NULL
    problems = "\n".join(_verify(tmp_path))
    assert "column 'fare_amount' page 11: the NULL count is 0, its values give 1" in problems
    edit_manifest(tmp_path / "trips", lambda m: m.update(rows=m["rows"] - 2))  # a row dropped
    problems = "\n".join(_verify(tmp_path))
    assert "holds values after row 2,999 (the row count is wrong)" in problems


def test_verify_finds_a_wrong_range_sealed_again(copy):
    with PageStore(copy / "trips") as s:
        lo, hi = s.column("vendor_id").min, s.column("vendor_id").max
    edit_manifest(copy / "trips", lambda m: _column(m, "vendor_id").update(max=hi + 1))
    assert _verify(copy) == [f"column 'vendor_id': its range [{lo}, {hi + 1}] is not its "
                             f"pages' [{lo}, {hi}]"]


def test_verify_finds_a_row_group_copy_that_differs(copy):
    t = copy / "trips"
    with PageStore(t) as s:
        g = s.manifest.groups[0]
    with open(t / g.file, "r+b") as f:  # a byte of the first member's page 0...
        b = f.read(1)
        f.seek(0)
        f.write(bytes([b[0] ^ 1]))

    def rehash(a):  # ... with its checksum made to match: only the comparison can tell
        from bamql.storage.pagemath import page_checksums

        page = np.frombuffer((t / g.file).read_bytes()[: 512], np.uint8).reshape(1, -1)
        a["checksum"][g.first_page] = page_checksums(page, np.array([g.first_page]))[0]
    edit_pages_meta(t, rehash)
    problems = _verify(copy)
    assert problems == [f"column {g.members[0]!r} page 0: its row-group copy differs"], problems


def test_cli_verify_reports_each_problem_and_fails(copy):
    edit_pages_meta(copy / "trips", lambda a: a["zmax"].__setitem__(2, a["zmax"][2] + 1))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-m", "bamql.cli", "verify", str(copy / "trips")],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 1 and "zone map's maximum" in r.stderr and "1 problem(s)" in r.stderr
    assert "Traceback" not in r.stderr
    h = subprocess.run([sys.executable, "-m", "bamql.cli", "verify", "--help"], capture_output=True,
                       text=True, env=env, timeout=300)
    assert "zone maps" in h.stdout and "seals" in h.stdout


# -- the keyed seal (issue 41): an edit sealed again without this machine's key ---------------


@pytest.fixture(scope="module")
def plain(tmp_path_factory, taxi_table) -> Path:
    """3,000 trips in a plain store (no row group, no compressed copy): its data directory."""
    d = tmp_path_factory.mktemp("plain")
    pq.write_table(taxi_table.slice(0, 3000), d / "t.parquet")
    ingest([d / "t.parquet"], d / "data" / "trips", page_size=512)
    return d / "data"


@pytest.fixture
def plain_copy(plain, tmp_path) -> Path:
    shutil.copytree(plain, tmp_path / "data")
    return tmp_path / "data"


KEYED = ["SELECT SUM(tip_amount), MAX(tip_amount) FROM trips",
         "SELECT store_and_fwd_flag, COUNT(*) FROM trips GROUP BY 1 ORDER BY 1",
         "SELECT SUM(fare_amount), SUM(tip_amount) FROM trips WHERE tip_amount > 5"]


@pytest.fixture(scope="module")
def plain_answers(plain) -> list:
    with bamql.connect(plain, device="cpu") as con:
        return [con.sql(q).rows() for q in KEYED]


def _tip_scale_down(m):  # 2 decimals read as 1: every tip 10x too large
    c = _column(m, "tip_amount")
    assert c["scale"] == 2
    c.update(scale=1, min=c["min"] * 10, max=c["max"] * 10)


def _renamed_code(m):  # Y read as Z: sorted, unique, and no page says otherwise
    c = _column(m, "store_and_fwd_flag")
    assert c["dictionary"] == ["N", "Y"]
    c["dictionary"] = ["N", "Z"]


def _as_format_4(store: Path) -> None:
    """The store as bamql wrote it at format 4: no column digests in pages.npz, no keyed
    seal, and the version (its unkeyed seal made again, as format 4 had it)."""
    import bamql.storage.seal as seal_mod

    edit_pages_meta(store, lambda a: [a.pop(k) for k in list(a) if k.startswith("desc:")],
                    keyed=False)
    edit_manifest(store, lambda m: (m.update(format_version=4), m.pop(seal_mod.FIELD)),
                  keyed=False)


def _answers(data: Path) -> list:
    with bamql.connect(data, device="cpu") as con:
        return [con.sql(q).rows() for q in KEYED]


@pytest.mark.parametrize("fmt", [5, 4])
@pytest.mark.parametrize("change", [_tip_scale_down, _renamed_code, _swapped_names])
def test_an_edit_sealed_again_without_the_key_answers_no_query(plain_copy, change, fmt):
    """Issue 41: a manifest edited and sealed again (its sha256 made anew) answered wrong:
    tips 10x too large, Y read as Z, two columns' values swapped. Now the keyed seal fails,
    and the store is refused in one line at open by the consistency checks or its verify."""
    t = plain_copy / "trips"
    if fmt == 4:
        if change is _renamed_code:
            pytest.skip("a format-4 store holds its dictionaries in its manifest only: an "
                        "edit sealed again cannot be told from the store as written")
        _as_format_4(t)
    edit_manifest(t, change, keyed=False)
    with pytest.raises(StoreError) as e:
        _answers(plain_copy)
    msg = str(e.value)
    assert "\n" not in msg and "re-ingest it" in msg, msg
    assert ("older bamql" in msg) if fmt == 4 else ("not sealed with this machine's key" in msg)


def test_verify_finds_columns_renamed_by_their_samples(plain_copy):
    """A format-4 store has no column digests: two columns' names swapped are found by the
    samples pages.npz holds of each (by name), which are no longer the columns' values."""
    t = plain_copy / "trips"
    _as_format_4(t)
    edit_manifest(t, _swapped_names, keyed=True)
    with PageStore(t, verify_unsealed=False) as s:
        problems = s.verify()
    assert "column 'fare_amount': its sample in pages.npz is not its values" in "\n".join(
        problems), problems


def test_a_store_sealed_here_opens_without_a_verify(plain, monkeypatch):
    from bamql.storage.verify import Verification

    def refuse(self):
        raise AssertionError("a store sealed here was verified at open")

    monkeypatch.setattr(Verification, "verify", refuse)
    with PageStore(plain / "trips") as s:
        assert s.seal.trusted and s.seal.keyed and s.seal.version == 5


def _made_elsewhere(data: Path, tmp_path, taxi_table) -> Path:
    """A store ingested under another machine's key."""
    import bamql.storage.seal as seal_mod

    pq.write_table(taxi_table.slice(0, 3000), tmp_path / "t.parquet")
    real = seal_mod.store_key
    seal_mod.store_key = lambda: b"another machine's key".ljust(32, b"\0")
    try:
        ingest([tmp_path / "t.parquet"], data / "trips", page_size=512)
    finally:
        seal_mod.store_key = real
    return data / "trips"


@pytest.mark.parametrize("fmt", [5, 4])
def test_a_sound_store_sealed_elsewhere_opens_once_verified_with_one_note(
        tmp_path, taxi_table, plain_answers, fmt):
    from bamql.errors import StoreWarning

    t = _made_elsewhere(tmp_path / "data", tmp_path, taxi_table)
    if fmt == 4:
        _as_format_4(t)
    with pytest.warns(StoreWarning) as notes:
        got = _answers(tmp_path / "data")
    assert got == plain_answers
    assert len(notes) == 1 and "\n" not in str(notes[0].message)
    assert "verified in full" in str(notes[0].message)
    assert "trusted here from now on" in str(notes[0].message)
    import warnings

    with warnings.catch_warnings():  # trusted here now: no verify, no note
        warnings.simplefilter("error")
        assert _answers(tmp_path / "data") == plain_answers
        with PageStore(t) as s:
            assert s.seal.trusted


def test_a_store_sealed_elsewhere_that_fails_verify_is_refused(tmp_path, taxi_table):
    t = _made_elsewhere(tmp_path / "data", tmp_path, taxi_table)
    # pages.npz and the manifest made anew around a zone map that is not its page's: only a
    # read of the pages can tell, which a query of a store sealed elsewhere now waits for
    edit_pages_meta(t, lambda a: a["zmax"].__setitem__(3, a["zmax"][3] + 1), keyed=False)
    with pytest.raises(StoreError, match="fails its verify: column .* page 3: the zone map's "
                       "maximum .*; `bamql verify .*` lists the problems; re-ingest it") as e:
        open_table(t)
    assert "\n" not in str(e.value)
    with open_table(t, verify_unsealed=False) as s:  # as bamql verify opens it
        assert len(s.verify()) == 1


def test_cli_notes_a_store_sealed_elsewhere_in_one_line(tmp_path, taxi_table):
    t = _made_elsewhere(tmp_path / "data", tmp_path, taxi_table)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-m", "bamql.cli", "info", str(t)], capture_output=True,
                       text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    notes = [x for x in r.stderr.splitlines() if x]
    assert len(notes) == 1 and notes[0].startswith("bamql: note: store ") and \
        "verified in full" in notes[0], r.stderr
    edit_manifest(t, _tip_scale_down, keyed=False)
    for cmd in ("info", "verify"):
        r = subprocess.run([sys.executable, "-m", "bamql.cli", cmd, str(t)], capture_output=True,
                           text=True, env=env, timeout=300)
        assert r.returncode == 1 and r.stderr.startswith("bamql: error: store ")
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_without_a_key_every_store_gets_the_cheap_checks_only(plain_copy, monkeypatch):
    """Where the cache directory is unusable there is no key: nothing is trusted or recorded,
    an edit the checks catch is still refused, and a sound store opens without reading its
    pages (which every open would otherwise pay)."""
    import bamql.storage.seal as seal_mod
    from bamql.storage.verify import Verification

    monkeypatch.setattr(seal_mod, "store_key", lambda: None)

    def refuse(self):
        raise AssertionError("verified in full at open")

    monkeypatch.setattr(Verification, "verify", refuse)
    t = plain_copy / "trips"
    with PageStore(t) as s:
        assert not s.seal.trusted and s.seal.tag is None
    edit_manifest(t, _renamed_code, keyed=False)
    with pytest.raises(StoreError, match="this machine has no key .* its description differs"):
        PageStore(t)
