#!/usr/bin/env bash
# Session 42's scale-out run (issue 40) on a machine of several GPUs, from a clean copy of
# the tree with the staged wheels (base, Dask/dask-cuda/dask-cudf, cuDF) installed into
# /tmp/site:
#   bash bench/diag/gpu_scaleout_s42.sh tests            the Dask GPU tests (one worker per GPU)
#   bash bench/diag/gpu_scaleout_s42.sh prep N P         N generated trips as P partitions in
#                                                        /dev/shm/bx (the queries' columns)
#   bash bench/diag/gpu_scaleout_s42.sh run N P GPUS TAG [BASELINES]
#       bamql on GPUS (e.g. 1,2,4), host backend, warm (GPU caches emptied before each run),
#       beside BASELINES (default dask-cudf,duckdb: dask-cudf on the same workers, DuckDB on
#       the machine's cores); Q1-Q6, t1-t4 and the top-k k01
set -uo pipefail
what=${1:?tests, prep or run}
out=${OUT:-/tmp/out}; mkdir -p "$out"
export PYTHONPATH=/tmp/site:$PWD BAMQL_CACHE_DIR=/tmp/bamql-cache
queries=q01,q02,q03,q04,q05,q06,t01,t02,t03,t04,k01
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); n=$(nvidia-smi -L | wc -l)
case $what in
  tests)
    { echo "# Dask GPU tests, $n x $gpu: pytest -m gpu tests/exec/test_distributed.py tests/exec/test_runner.py"
      timeout 400 python -m pytest -q -m gpu tests/exec/test_distributed.py tests/exec/test_runner.py \
        -p no:cacheprovider -W ignore --durations=5 2>&1 | grep -v PytestBenchmarkWarning; } \
      > "$out/gpu-tests-dask.log" 2>&1
    tail -12 "$out/gpu-tests-dask.log" ;;
  prep)
    timeout 580 python -m bamql.cli bench-scaleout --rows "${2:?rows}" --partitions "${3:?parts}" \
      --queries "$queries" --workdir /dev/shm/bx --prepare-only --out "$out/prep" 2>&1 | tail -6 ;;
  run)
    timeout 590 python -m bamql.cli bench-scaleout --rows "${2:?rows}" --partitions "${3:?parts}" \
      --gpus "${4:?gpus}" --queries "$queries" --backend host --reps 3 --workdir /dev/shm/bx \
      --baselines "${6:-dask-cudf,duckdb}" --out "$out/scaleout-${5:?tag}" 2>&1 | grep -v "^ *$" | tail -80 ;;
  *) echo "tests, prep or run" >&2; exit 2 ;;
esac
