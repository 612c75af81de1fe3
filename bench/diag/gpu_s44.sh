#!/usr/bin/env bash
# Session 44's device runs. Runs ON the device from the project root; the code is the archive
# .devstage/src.tgz (git archive of HEAD), unpacked into /tmp/src, so that edits made here
# meanwhile do not change the code under test.
#   bash bench/diag/gpu_s44.sh verify S   install base + DuckDB + Dask, unpack the code; every
#                                         `-m gpu` test, the engine's tests of DATEs, hash
#                                         aggregation, rows and runners on the gpu and file
#                                         backends, then the DATE and analyst corpus files on
#                                         every GPU backend (S seconds' budget)
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
    gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
    log=$out/gpu-tests-s44.log
    { echo "# GPU tests, session 44, $gpu ($(nvidia-smi -L | wc -l) GPUs)"
      echo "## pytest -m gpu -n 4"
      timeout 420 python -m pytest -q -m gpu -n 4 -p no:cacheprovider --durations=8 2>&1 | tail -22
      for b in gpu file; do
        echo "## BAMQL_TEST_DEVICE=gpu BAMQL_TEST_BACKEND=$b pytest tests/engine/test_{dates,hashagg,rows,exact_decimals}.py"
        BAMQL_TEST_DEVICE=gpu BAMQL_TEST_BACKEND=$b timeout 240 python -m pytest -q -n 4 \
          -p no:cacheprovider tests/engine/test_dates.py tests/engine/test_hashagg.py \
          tests/engine/test_rows.py tests/engine/test_exact_decimals.py 2>&1 | tail -4
      done; } > "$log" 2>&1
    cat "$log"
    timeout $(( ${1:?seconds} + 60 )) python -m tests.sql.corpus --device gpu --backends host,gpu,file \
      --caches 4,default --queries hostile_dates,analyst,timestamps --shapes base \
      --datasets sample,hostile --spread 2 --workdir /tmp/corpus-v --budget-s "$1" \
      --log "$out/corpus-gpu-s44.jsonl" --quiet 2>&1 | tail -4
    gzip -f "$out/corpus-gpu-s44.jsonl" ;;
  keep) keep ;;
  rapids) keep; bash .devstage/install.sh rapids ;;
  bench)
    cd /tmp/src && export PYTHONPATH=/tmp/site:/tmp/src
    CUDA_VISIBLE_DEVICES=0 timeout 560 python -m bamql.cli bench --rows "${1:?rows}" --queries "${2:?queries}" \
      --page-sizes 512 --modes warm --reps 5 --workdir /dev/shm/bench-data --no-plots \
      --out "$out/bench" 2>&1 | tail -30 ;;
  *) echo "verify, keep, rapids or bench" >&2; exit 2 ;;
esac
