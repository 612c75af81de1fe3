#!/usr/bin/env bash
# The GPU checks of a session, run on the GPU machine from the project root (device tool),
# with the staged wheels installed (../shared/device/README.md). Logs go to $OUT.
#   bash bench/diag/gpu_checks.sh tests     the GPU tests (pytest -m gpu)
#   bash bench/diag/gpu_checks.sh corpus S [Q] [TAG]
#                                           the differential corpus on host/gpu/file with 4-slot
#                                           and default caches, time-boxed to S seconds (only the
#                                           query ids starting with one of Q, comma-separated;
#                                           logs named corpus-gpu-TAG)
#   bash bench/diag/gpu_checks.sh shapes    bench/diag/query_shapes.py on the host backend
#   bash bench/diag/gpu_checks.sh bench N   bamql bench: Q1-Q6, warm, host backend and DuckDB, N rows
#   bash bench/diag/gpu_checks.sh run-bench N ENGINES MODES [old]
#                                           bamql bench on data shared between calls (512 B pages,
#                                           zstd copies) in /tmp/bench-data; with ``old``, the
#                                           build copied into old_bamql/ runs it (an A/B)
#   bash bench/diag/gpu_checks.sh prep N    generate and ingest N rows for bench-groups in the
#                                           background (setsid: it outlives the call), from a copy
#                                           of the tree in /tmp/prep-src; log in /tmp/prep.log
#   bash bench/diag/gpu_checks.sh bench-groups N ENGINES QUERIES [TAG]
#                                           bamql bench over the prepared data (512 B pages, no
#                                           copies), warm, medians of 5
set -uo pipefail
export PYTHONPATH=/tmp/site:$PWD
export BAMQL_CACHE_DIR=/tmp/bamql-cache
out=${OUT:-/tmp/out}
mkdir -p "$out"
rev=${BAMQL_REV:-$(git rev-parse --short HEAD 2>/dev/null || echo worktree)}
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case ${1:?tests, corpus, shapes, bench, run-bench, prep or bench-groups} in
  tests)
    { echo "# GPU tests, build $rev (+ working tree), $gpu: python -m pytest -m gpu tests"
      timeout "${2:-560}" python -m pytest -q -m gpu tests --durations=5 -p no:cacheprovider; } \
      > "$out/gpu-tests.log" 2>&1
    tail -15 "$out/gpu-tests.log" ;;
  corpus)
    log="$out/corpus-gpu${4:+-$4}"
    timeout $(( ${2:-400} + 60 )) python -m tests.sql.corpus --device gpu --backends host,gpu,file \
      --caches 4,default --shapes ci --budget-s "${2:-400}" --log "$log.jsonl" --quiet \
      ${3:+--queries "$3"} > "$log.txt" 2>&1
    tail -5 "$log.txt"; tail -1 "$log.jsonl"; gzip -f "$log.jsonl" ;;
  shapes)
    timeout "${2:-150}" python bench/diag/query_shapes.py --device gpu --backend host --rows 2000000 \
      --queries 2000 --in-sizes 1000,100000 --or-sizes 100,1000 --depth 1000 \
      --out "$out/query-shapes-gpu.json" 2>&1 | tail -12 ;;
  prep)
    rm -rf /tmp/prep-src && mkdir -p /tmp/prep-src && cp -r bamql /tmp/prep-src/
    (cd /tmp/prep-src && PYTHONPATH=/tmp/site:/tmp/prep-src setsid nohup python -m bamql.cli bench \
      --rows "$2" --engines bamql-cpu --queries t01 --reps 1 --page-sizes 512 --selectivity 0.0005 \
      --modes warm --workdir /tmp/bench-data --no-plots --out /tmp/prep-bench \
      > /tmp/prep.log 2>&1 < /dev/null &)
    sleep 2; tail -3 /tmp/prep.log ;;
  bench-groups)
    timeout 580 python -m bamql.cli bench --rows "$2" --engines "$3" --queries "$4" \
      --page-sizes 512 --selectivity 0.0005 --modes warm --reps 5 --workdir /tmp/bench-data \
      --out "$out/bench-groups${5:+-$5}" 2>&1 | tail -60 ;;
  bench)
    timeout 560 python -m bamql.cli bench --rows "${2:-50000000}" --engines bamql-gpu-host,duckdb \
      --page-sizes 512 --selectivity 0.0005 --modes warm --reps 5 --workdir /tmp/bench-data \
      --no-plots --out "$out/bench" 2>&1 | tail -30 ;;
esac
if [[ ${1} == run-bench ]]; then
  dir=$PWD; [[ ${5:-new} == old ]] && dir=$PWD/old_bamql  # python -m imports from the cwd first
  (cd "$dir" && PYTHONPATH=/tmp/site:$dir timeout 580 python -m bamql.cli bench --rows "$2" \
    --engines "$3" --modes "$4" --page-sizes 512 --compress zstd --selectivity 0.0005 \
    --reps ${BAMQL_AB_REPS:-3} --workdir /tmp/bench-data --no-plots \
    --out "$out/bench-${5:-new}${BAMQL_AB_TAG:-}" 2>&1 | tail -25)
fi
