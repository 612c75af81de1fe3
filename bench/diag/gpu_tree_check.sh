#!/usr/bin/env bash
# One device call for the plan tree (session 40): install the staged base wheels and DuckDB,
# run the analyst corpus (queries through the plan tree, fused leaves on the GPU) on every
# GPU backend against DuckDB, the GPU tests of the fused kernels, and Q1-Q6 and t1-t4 warm
# against DuckDB (the fused path must keep its speed).
#   bash bench/diag/gpu_tree_check.sh N TAG   (carry .devstage/install.sh, base, extra)
set -uo pipefail
rows=${1:?rows}; tag=${2:?tag}
out=${OUT:-/tmp/out}; mkdir -p "$out"
bash .devstage/install.sh base > /dev/null
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .devstage/extra/*.whl
export PYTHONPATH=/tmp/site:$PWD BAMQL_CACHE_DIR=/tmp/bamql-cache
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
bash bench/diag/gpu_checks.sh prep "$rows" > /dev/null
timeout 330 python -m tests.sql.corpus --device gpu --backends host,gpu,file --caches 4,default \
  --queries analyst --shapes base,files --datasets sample,gen-0.01,gen-0.3 --spread 1 \
  --workdir /tmp/corpus-w --budget-s 300 --log "$out/h100-corpus-gpu-analyst-$tag.jsonl" --quiet 2>&1 | tail -2
gzip -f "$out/h100-corpus-gpu-analyst-$tag.jsonl"
{ echo "# GPU tests, $tag, $gpu: pytest -m gpu tests/gpu/test_grouped.py tests/gpu/test_engine.py -k 'grouped or (every_query and 512)'"
  timeout 120 python -m pytest -q -m gpu tests/gpu/test_grouped.py tests/gpu/test_engine.py \
    -k "grouped or (every_query and 512)" -n 4 --dist load -p no:cacheprovider; } > "$out/gpu-tests-$tag.log" 2>&1
tail -2 "$out/gpu-tests-$tag.log"
for _ in $(seq 90); do grep -q "results:" /tmp/prep.log 2>/dev/null && break; sleep 2; done
timeout 100 python -m bamql.cli bench --rows "$rows" --engines bamql-gpu-gpu,bamql-gpu-host,duckdb \
  --queries q01,q02,q03,q04,q05,q06,a01,a02,t01,t02,t03,t04 --page-sizes 512 --selectivity 0.0005 --modes warm \
  --reps 5 --workdir /tmp/bench-data --no-plots --out "$out/bench-tree-$tag" 2>&1 | tail -24
