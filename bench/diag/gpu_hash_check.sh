#!/usr/bin/env bash
# One device call for the GPU kernel's hash table of groups (session 41), from a clean copy of
# the tree (the staged wheels already installed into /tmp/site, cuDF among them for the RAPIDS
# baselines): the hashed-group and grouped GPU tests, the GROUP BY part of the differential
# corpus on every GPU backend against DuckDB, then h01/h02 (float keys), the taxi benchmark
# t1-t4, g01, Q1 and Q6 warm against cuDF (resident, and reading ORC) and DuckDB.
#   bash bench/diag/gpu_hash_check.sh N TAG [ENGINES] [CORPUS_SECONDS]
set -uo pipefail
rows=${1:?rows}; tag=${2:?tag}
engines=${3:-bamql-gpu-gpu,bamql-gpu-host,rapids-resident,rapids,duckdb}; corpus_s=${4:-170}
out=${OUT:-/tmp/out}; mkdir -p "$out"
export PYTHONPATH=/tmp/site:$PWD BAMQL_CACHE_DIR=/tmp/bamql-cache
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
bash bench/diag/gpu_checks.sh prep "$rows" > /dev/null
{ echo "# GPU tests, $tag, $gpu: pytest -m gpu tests/gpu/test_hashgroup_sim.py tests/gpu/test_grouped.py"
  timeout 200 python -m pytest -q -m gpu tests/gpu/test_hashgroup_sim.py tests/gpu/test_grouped.py \
    -n 4 --dist load -p no:cacheprovider; } > "$out/gpu-tests-$tag.log" 2>&1
tail -3 "$out/gpu-tests-$tag.log"
timeout 200 python -m tests.sql.corpus --device gpu --backends host,gpu,file --caches 4,default \
  --queries group,hostile_groups,distinct,aggregates --shapes base --datasets sample,gen-0.01 \
  --spread 1 --workdir /tmp/corpus-w --budget-s "$corpus_s" --log "$out/corpus-gpu-hash-$tag.jsonl" --quiet 2>&1 | tail -2
gzip -f "$out/corpus-gpu-hash-$tag.jsonl"
for _ in $(seq 90); do grep -q "results:" /tmp/prep.log 2>/dev/null && break; sleep 2; done
timeout 200 python -m bamql.cli bench --rows "$rows" \
  --engines "$engines" \
  --queries h01,h02,t01,t02,t03,t04,g01,q01,q06 --page-sizes 512 --selectivity 0.0005 --modes warm \
  --reps 5 --workdir /tmp/bench-data --no-plots --out "$out/bench-hash-$tag" 2>&1 | tail -30
