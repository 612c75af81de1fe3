#!/usr/bin/env bash
# The GPU checks of session 42, from a clean copy of the tree with the staged wheels installed
# into /tmp/site (cuDF among them for the RAPIDS baselines), in two device calls:
#   bash bench/diag/gpu_s42_check.sh verify N TAG   start ingesting N rows in the background;
#       the hashed-group, grouped and exact-DECIMAL GPU tests; the TIMESTAMP WITH TIME ZONE and
#       DECIMAL test modules on the GPU engine's three backends (BAMQL_TEST_DEVICE); the
#       GROUP BY and analyst parts of the differential corpus on every GPU backend
#   bash bench/diag/gpu_s42_check.sh bench N TAG    h01/h02, t1-t4, k01, d01, Q1, Q6 warm against
#       cuDF (resident, and reading ORC) and DuckDB; the one-shot `bamql sql --device gpu` over
#       the N-row store (wall time and peak RSS, file and host backends)
set -uo pipefail
what=${1:?verify or bench}; rows=${2:?rows}; tag=${3:?tag}
out=${OUT:-/tmp/out}; mkdir -p "$out"
export PYTHONPATH=/tmp/site:$PWD BAMQL_CACHE_DIR=/tmp/bamql-cache
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case $what in
  verify)
    bash bench/diag/gpu_checks.sh prep "$rows" > /dev/null
    { echo "# GPU tests, $tag, $gpu"
      echo "## pytest -m gpu tests/gpu/test_hashgroup_sim.py tests/gpu/test_grouped.py tests/api/test_exact_decimals.py"
      timeout 200 python -m pytest -q -m gpu tests/gpu/test_hashgroup_sim.py tests/gpu/test_grouped.py \
        tests/api/test_exact_decimals.py -n 4 --dist load -p no:cacheprovider
      for b in host gpu file; do
        echo "## BAMQL_TEST_DEVICE=gpu BAMQL_TEST_BACKEND=$b pytest tests/api/test_timestamptz.py tests/api/test_exact_decimals.py"
        BAMQL_TEST_DEVICE=gpu BAMQL_TEST_BACKEND=$b timeout 120 python -m pytest -q \
          tests/api/test_timestamptz.py tests/api/test_exact_decimals.py -n 4 -p no:cacheprovider 2>&1 | tail -4
      done; } > "$out/gpu-tests-$tag.log" 2>&1
    grep -E "^##|passed|failed|error" "$out/gpu-tests-$tag.log" | tail -12
    timeout 230 python -m tests.sql.corpus --device gpu --backends host,gpu,file --caches 4,default \
      --queries group,hostile_groups,distinct,aggregates,analyst --shapes base --datasets sample,gen-0.01,hostile \
      --spread 2 --workdir /tmp/corpus-w --budget-s 200 --log "$out/corpus-gpu-$tag.jsonl" --quiet 2>&1 | tail -2
    gzip -f "$out/corpus-gpu-$tag.jsonl"
    tail -2 /tmp/prep.log ;;
  bench)
    for _ in $(seq 120); do grep -q "results:" /tmp/prep.log 2>/dev/null && break; sleep 2; done
    timeout 330 python -m bamql.cli bench --rows "$rows" \
      --engines bamql-gpu-gpu,bamql-gpu-host,rapids-resident,rapids,duckdb \
      --queries h01,h02,t01,t02,t03,t04,k01,d01,q01,q06 --page-sizes 512 --selectivity 0.0005 \
      --modes warm --reps 5 --workdir /tmp/bench-data --no-plots --out "$out/bench-$tag" 2>&1 | tail -45
    store=$(ls -d /tmp/bench-data/r"$rows"-*/data-512* | head -1)
    for b in file host; do
      timeout 120 python bench/diag/gpu_first_query.py --data "$store" --backend "$b" --reps 3 \
        --out "$out/first-query-$b-$tag.json" 2>&1 | tail -4
    done ;;
  *) echo "verify or bench" >&2; exit 2 ;;
esac
