#!/usr/bin/env bash
# One device call for the grouped kernels (session 39): install the staged base wheels and
# DuckDB, prepare N generated trips in the background, run the grouped GPU tests and every
# query on the GPU backends meanwhile, then bench the GROUP BY shapes against DuckDB.
#   bash bench/diag/gpu_groups_check.sh N TAG [QUERIES] [TESTS]
#       (carry .devstage/install.sh, base, extra; QUERIES: bench query names, comma-separated;
#       TESTS: a pytest -k expression over the grouped and engine GPU tests)
set -uo pipefail
rows=${1:?rows}; tag=${2:?tag}
queries=${3:-u01,t01,t02,t03,t04,d01,k01,g01}; tests=${4:-grouped or (every_query and 512)}
out=${OUT:-/tmp/out}; mkdir -p "$out"
bash .devstage/install.sh base > /dev/null
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .devstage/extra/*.whl
export PYTHONPATH=/tmp/site:$PWD BAMQL_CACHE_DIR=/tmp/bamql-cache
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
bash bench/diag/gpu_checks.sh prep "$rows" > /dev/null
{ echo "# GPU tests, $tag, $gpu, no nvCOMP: pytest -m gpu tests/gpu/test_grouped.py tests/gpu/test_engine.py -k '$tests'"
  timeout 200 python -m pytest -q -m gpu tests/gpu/test_grouped.py tests/gpu/test_engine.py \
    -k "$tests" -n 4 --dist load -p no:cacheprovider; } > "$out/gpu-tests-$tag.log" 2>&1
tail -3 "$out/gpu-tests-$tag.log"
for _ in $(seq 60); do grep -q "results:" /tmp/prep.log 2>/dev/null && break; sleep 2; done
timeout 120 python -m bamql.cli bench --rows "$rows" --engines bamql-gpu-gpu,bamql-gpu-host,duckdb \
  --queries "$queries" --page-sizes 512 --selectivity 0.0005 --modes warm \
  --reps 5 --workdir /tmp/bench-data --no-plots --out "$out/bench-groups-$tag" 2>&1 | tail -26
