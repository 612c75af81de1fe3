#!/usr/bin/env bash
# Session 44's device runs. Runs ON the device from the project root; the code is the archive
# .devstage/src.tgz (git archive of HEAD), unpacked into /tmp/src, so that edits made here
# meanwhile do not change the code under test.
#   bash bench/diag/gpu_s44.sh verify S   install base + DuckDB + Dask, unpack the code; side by
#                                         side for about S seconds: the grouped, hash-table,
#                                         decimal and Dask GPU tests; the DATE and hash
#                                         aggregation engine tests on the gpu backend; the DATE,
#                                         analyst and timestamp corpus files on every GPU backend
#   bash bench/diag/gpu_s44.sh keep       move carried cuDF archive parts aside
#   bash bench/diag/gpu_s44.sh rapids     join and install them (cuDF, dask-cudf)
#   bash bench/diag/gpu_s44.sh bench N Q  `bamql bench` over N rows, queries Q, every engine,
#                                         warm, medians of 5, one GPU
set -uo pipefail
what=${1:?verify, keep, rapids or bench}; shift
out=${OUT:-/tmp/out}; mkdir -p "$out" /tmp/devstage
pipi() { python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$@"; }
keep() { for p in .devstage/rapids/part* .devstage/rapids2/part*; do [ -e "$p" ] && mv "$p" /tmp/devstage/; done; ls /tmp/devstage | tr '\n' ' '; echo; }
unpack() { rm -rf /tmp/src && mkdir -p /tmp/src && tar xzf .devstage/src.tgz -C /tmp/src; }
export BAMQL_CACHE_DIR=/tmp/bamql-cache
case $what in
  verify)
    bash .devstage/install.sh base > /dev/null && pipi .devstage/extra/*.whl .devstage/dask/*.whl \
      && echo "installed"; keep; unpack
    cd /tmp/src && export PYTHONPATH=/tmp/site:/tmp/src
    t=${1:?seconds}; gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
    echo "# session 44, $gpu ($(nvidia-smi -L | wc -l) GPUs), at $(cat .git-head 2>/dev/null)"
    # three groups side by side, each writing as it goes (a time-out still shows how far it got)
    timeout $((t + 30)) python -m pytest -v -p no:cacheprovider -m gpu tests/gpu/test_grouped.py \
      tests/gpu/test_hashgroup_sim.py tests/engine/test_exact_decimals.py \
      tests/engine/test_distributed.py > "$out/gpu-tests-s44.log" 2>&1 &
    BAMQL_TEST_DEVICE=gpu BAMQL_TEST_BACKEND=gpu timeout $((t + 30)) python -m pytest -v \
      -p no:cacheprovider -n 3 tests/engine/test_dates.py tests/engine/test_hashagg.py \
      > "$out/gpu-engine-tests-s44.log" 2>&1 &
    timeout $((t + 30)) python -m tests.sql.corpus --device gpu --backends host,gpu,file \
      --caches 4,default --queries hostile_dates,analyst,timestamps --shapes base \
      --datasets sample,hostile --spread 2 --workdir /tmp/corpus-v --budget-s "$t" \
      --log "$out/corpus-gpu-s44.jsonl" > "$out/corpus-gpu-s44.txt" 2>&1 &
    wait; gzip -f "$out/corpus-gpu-s44.jsonl"
    for f in gpu-tests-s44.log gpu-engine-tests-s44.log corpus-gpu-s44.txt; do
      echo "== $f"; grep -E "passed|failed|FAILED|Error|mismatch|wrong" "$out/$f" | tail -6; done ;;
  hashgroup)  # the GPU hash-table test's script alone, each query timed, a traceback on a hang
    cd /tmp/src && export PYTHONPATH=/tmp/site:/tmp/src
    python - > /tmp/hg.py <<'PY'
from tests.gpu.test_hashgroup_sim import SCRIPT
print(SCRIPT.replace("got = con.sql(q).rows()",
      "import time; t0 = time.perf_counter(); got = con.sql(q).rows(); "
      "print(store, backend, f'{time.perf_counter() - t0:.2f}s', q[:50], flush=True)"))
PY
    PYTHONFAULTHANDLER=1 timeout -s ABRT "${1:?seconds}" python -c "$(cat /tmp/hg.py)" 200000 1024 \
      host,gpu,file,parts,blocks > "$out/hashgroup-s44.log" 2>&1 &
    timeout $(( $1 + 20 )) python -m pytest -v -p no:cacheprovider -n 1 -m gpu \
      tests/engine/test_exact_decimals.py tests/engine/test_distributed.py > "$out/gpu-tests-s44-b.log" 2>&1
    wait; tail -40 "$out/hashgroup-s44.log"; grep -E "PASSED|FAILED|passed|failed" "$out/gpu-tests-s44-b.log" | tail -8 ;;
  keep) keep ;;
  rapids) keep; bash .devstage/install.sh rapids ;;
  bench)
    cd /tmp/src && export PYTHONPATH=/tmp/site:/tmp/src
    CUDA_VISIBLE_DEVICES=0 timeout 560 python -m bamql.cli bench --rows "${1:?rows}" --queries "${2:?queries}" \
      --page-sizes 512 --modes warm --reps 5 --workdir /dev/shm/bench-data --no-plots \
      --out "$out/bench" 2>&1 | tail -30 ;;
  *) echo "verify, keep, rapids or bench" >&2; exit 2 ;;
esac
