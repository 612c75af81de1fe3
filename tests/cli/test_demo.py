"""``bamql demo`` reuses its workdir, and makes again a table an earlier bamql wrote."""

from __future__ import annotations

import json

from bamql.cli.demo import prepare
from bamql.storage.format import FORMAT_VERSION, MANIFEST


def test_a_kept_workdir_from_an_earlier_format_is_ingested_again(tmp_path):
    data = prepare(tmp_path, 3000)
    manifest = data / "trips" / MANIFEST
    m = json.loads(manifest.read_text())
    assert m["format_version"] == FORMAT_VERSION
    m["format_version"] = FORMAT_VERSION - 1  # as an earlier bamql left it
    manifest.write_text(json.dumps(m))
    prepare(tmp_path, 3000)
    assert json.loads(manifest.read_text())["format_version"] == FORMAT_VERSION
