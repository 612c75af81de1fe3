#!/usr/bin/env bash
# One device call after a change to the session's fused leaves (session 40): the grouped and
# every-query GPU tests, then the plan-tree corpus files on every GPU backend, time-boxed.
#   bash bench/diag/gpu_tree_verify.sh TAG   (carry .devstage/install.sh, base, extra)
set -uo pipefail
tag=${1:?tag}; out=${OUT:-/tmp/out}; mkdir -p "$out"
bash .devstage/install.sh base > /dev/null
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .devstage/extra/*.whl
export PYTHONPATH=/tmp/site:$PWD BAMQL_CACHE_DIR=/tmp/bamql-cache
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
{ echo "# GPU tests, $tag, $gpu, $(git rev-parse --short HEAD 2>/dev/null): pytest -m gpu tests/gpu/test_grouped.py tests/gpu/test_engine.py -k 'grouped or (every_query and 512)'"
  timeout 150 python -m pytest -q -m gpu tests/gpu/test_grouped.py tests/gpu/test_engine.py \
    -k "grouped or (every_query and 512)" -n 4 --dist load -p no:cacheprovider; } > "$out/gpu-tests-$tag.log" 2>&1
tail -2 "$out/gpu-tests-$tag.log"
timeout 280 python -m tests.sql.corpus --device gpu --backends host,gpu,file --caches 4,default \
  --queries analyst,joins --shapes p4096-gnone-fauto-cnone-x1 --datasets sample,gen-0.01,hostile \
  --spread 1 --workdir /tmp/corpus-w --budget-s 250 --log "$out/corpus-gpu-tree-$tag.jsonl" --quiet 2>&1 | tail -1
gzip -f "$out/corpus-gpu-tree-$tag.jsonl"
