"""``partitions.json`` names only partition directories inside its table, each once, and is
sealed by a hash: an edited or hostile list is refused at open, never read."""

from __future__ import annotations

import json

import pytest

from bamql.errors import StoreError
from bamql.storage.format import digest
from bamql.storage.partitioned import PARTITIONS, PartitionedTable


@pytest.fixture(scope="module")
def parted(tmp_path_factory, taxi_orc):
    from bamql.storage.ingest import ingest

    d = tmp_path_factory.mktemp("parted")
    ingest(taxi_orc[1:], d / "trips", page_size=4096, partitions=3)
    return d / "trips"


def _edit(table, tmp_path, change, reseal=True):
    """A copy of the partitioned table whose list ``change`` edits (sealed again unless not)."""
    import shutil

    t = tmp_path / "t"
    shutil.copytree(table, t)
    doc = json.loads((t / PARTITIONS).read_text())
    change(doc, t)
    if reseal:
        doc["sha256"] = digest(doc)
    (t / PARTITIONS).write_text(json.dumps(doc))
    return t


def test_a_sealed_list_opens(parted):
    with PartitionedTable(parted) as t:
        assert len(t.parts) == 3 and t.rows == sum(p.rows for p in t.parts)


@pytest.mark.parametrize("case", ["absolute", "parent", "twice", "nested", "symlink"])
def test_paths_outside_the_table_or_twice_are_refused(parted, tmp_path, case):
    def change(doc, t):
        ps = doc["partitions"]
        if case == "absolute":
            ps[1]["path"] = str(parted / ps[1]["path"])
        elif case == "parent":
            ps[1]["path"] = "../" + t.name + "/" + ps[1]["path"]
        elif case == "twice":
            ps[2]["path"] = ps[1]["path"]
        elif case == "nested":
            ps[1]["path"] = ps[1]["path"] + "/."
        else:
            (t / "elsewhere").symlink_to(parted / ps[1]["path"])
            ps[1]["path"] = "elsewhere"

    with pytest.raises(StoreError, match="partition"):
        PartitionedTable(_edit(parted, tmp_path, change))


def test_an_edit_without_the_seal_is_refused(parted, tmp_path):
    def change(doc, t):
        doc["rows"] += 1

    with pytest.raises(StoreError, match="hash does not match"):
        PartitionedTable(_edit(parted, tmp_path, change, reseal=False))


def test_row_ranges_must_agree_with_the_stores(parted, tmp_path):
    def change(doc, t):
        doc["partitions"][1]["first_row"] += 1

    with pytest.raises(StoreError, match="row ranges differ"):
        PartitionedTable(_edit(parted, tmp_path, change))


def test_an_unsealed_version_1_list_is_refused(parted, tmp_path):
    def change(doc, t):
        doc["format_version"] = 1
        del doc["sha256"]

    with pytest.raises(StoreError, match="not sealed against edits; re-ingest"):
        PartitionedTable(_edit(parted, tmp_path, change, reseal=False))
