from __future__ import annotations

import pyarrow.orc as paorc
import pytest

from bamql.datasets.generator import CHUNK_ROWS, GenParams
from bamql.datasets.orc import generate_orc
from bamql.errors import BamqlError


def test_generate_orc_options_and_parallel_determinism(tmp_path):
    params = GenParams(rows=CHUNK_ROWS + 5_000, seed=11)
    a = generate_orc(tmp_path / "a", params, files=2, workers=2)
    b = generate_orc(tmp_path / "b", params, files=1, workers=1)
    assert a.rows == b.rows == params.rows
    f = paorc.ORCFile(str(a.files[0]))
    assert f.compression == "ZSTD"
    assert f.row_index_stride == 10_000
    two = paorc.read_table(str(a.files[0])).num_rows + paorc.read_table(str(a.files[1])).num_rows
    assert two == params.rows
    # same rows whatever the number of files and workers
    import pyarrow as pa

    ta = pa.concat_tables([paorc.read_table(str(p)) for p in a.files])
    tb = paorc.read_table(str(b.files[0]))
    assert ta.equals(tb)
    assert not list(tmp_path.glob(".*"))  # no temporary directory left


def test_generate_orc_refuses_existing_output(tmp_path):
    with pytest.raises(BamqlError, match="already exists"):
        generate_orc(tmp_path, GenParams(rows=10))


def test_parquet_holds_the_same_rows_as_orc(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    params = GenParams(rows=CHUNK_ROWS + 3_000, seed=5)
    o = generate_orc(tmp_path / "o", params, files=2, workers=2)
    p = generate_orc(tmp_path / "p", params, files=2, workers=2, fmt="parquet")
    assert [f.name for f in p.files] == ["trips-000.parquet", "trips-001.parquet"]
    assert pq.ParquetFile(p.files[0]).metadata.row_group(0).column(0).compression == "ZSTD"
    to = pa.concat_tables([paorc.read_table(str(f)) for f in o.files])
    tp = pa.concat_tables([pq.read_table(f) for f in p.files]).cast(to.schema)
    assert tp.equals(to)
    with pytest.raises(BamqlError, match="format must be one of"):
        generate_orc(tmp_path / "x", params, fmt="csv")


@pytest.mark.parametrize("files", [pytest.param(1, marks=pytest.mark.slow), 2])
def test_a_subset_of_the_columns_holds_the_same_rows(tmp_path, files):
    import pyarrow as pa
    import pyarrow.parquet as pq

    params = GenParams(rows=CHUNK_ROWS + 3_000, seed=5)
    whole = generate_orc(tmp_path / "o", params, files=2, workers=2)
    keep = ["total_amount", "pickup_location_id"]  # kept in the table's order
    p = generate_orc(tmp_path / f"p{files}", params, files=files, workers=2, fmt="parquet", columns=keep)
    to = pa.concat_tables([paorc.read_table(str(f)) for f in whole.files])
    tp = pa.concat_tables([pq.read_table(f) for f in p.files])
    assert tp.column_names == ["pickup_location_id", "total_amount"]
    assert tp.cast(to.select(tp.column_names).schema).equals(to.select(tp.column_names))
    with pytest.raises(BamqlError, match="no column 'tip' in the trips"):
        generate_orc(tmp_path / "x", params, columns=["tip"])
    assert not (tmp_path / "x").exists()
