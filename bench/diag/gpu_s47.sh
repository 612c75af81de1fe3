#!/usr/bin/env bash
# Session 47's GPU check, in one device call (carry .devstage/install.sh and .devstage/base):
# the GPU kernel disk-cache tests (numba-cuda compiles under bamql.lazyjit.guard_compiles),
# a DECIMAL's quantiles in a GPU session against DuckDB, and a GPU corpus sample over the
# hostile and real-sample data sets on the gpu and host backends. Output under $OUT.
set -uo pipefail
bash .devstage/install.sh base > /dev/null
export PYTHONPATH=/tmp/site:$PWD
nvidia-smi -L | tee "$OUT/gpu-s47.log"
timeout 70 python -m pytest -q -n 0 -p no:cacheprovider tests/gpu/test_kernel_diskcache.py \
  tests/test_lazyjit.py 2>&1 | tail -4 | tee -a "$OUT/gpu-s47.log"
timeout 40 python - <<'P' 2>&1 | tail -6 | tee -a "$OUT/gpu-s47.log"
from decimal import Decimal
import duckdb, numpy as np, pyarrow as pa, bamql
rng = np.random.default_rng(5)
vals = [None if i % 11 == 0 else Decimal(int(rng.integers(-10**5, 10**5))) / 100 for i in range(4000)]
for p in (18, 38):
    t = pa.table({"g": np.arange(4000) % 9, "x": pa.array(vals, pa.decimal128(p, 2))})
    sql = "SELECT g, MEDIAN(x), quantile_cont(x, 0.37) FROM r WHERE x < 500 GROUP BY g ORDER BY g"
    d = duckdb.connect(); d.register("r", t)
    want = d.sql(sql).arrow().read_all()
    with bamql.connect(device="gpu") as con:
        con.register("r", t)
        res = con.sql(sql)
        got = res.arrow()
    same = [list(r.values()) for r in got.to_pylist()] == [list(r.values()) for r in want.to_pylist()]
    print(f"DECIMAL({p},2) quantiles in a GPU session: types {got.schema.types == want.schema.types}, "
          f"values {same}, ran on {res.stats.device if res.stats else '?'}")
P
timeout 90 python -m tests.sql.corpus --device gpu --shapes p4096-gnone-fauto-cnone-x1 --spread 1 \
  --datasets hostile,sample --backends gpu,host --every 9 --include arithmetic:10 \
  --workdir /tmp/cw --log "$OUT/gpu-corpus-s47.jsonl" --quiet 2>&1 | tail -4 | tee -a "$OUT/gpu-s47.log"
