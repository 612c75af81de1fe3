#!/usr/bin/env bash
# Session 48's device runs. Runs ON the device from the project root; the code is the archive
# .devstage/src.tgz (git archive of HEAD), unpacked into /tmp/src.
#   bash bench/diag/gpu_s48.sh start N S  install base + DuckDB, unpack the code, prepare N trips
#                                         in the background; then bench/diag/gpu_s48_check.py
#                                         (counted quantiles, ranked scans, lookups, full hash
#                                         tables on the GPU against DuckDB) and a corpus
#                                         sample of the quantile and join files (S seconds)
#   bash bench/diag/gpu_s48.sh check      install, unpack, bench/diag/gpu_s48_check.py alone
#   bash bench/diag/gpu_s48.sh prep N     install, unpack, prepare N trips in the background
#   bash bench/diag/gpu_s48.sh keep       move a carried cuDF archive part aside
#   bash bench/diag/gpu_s48.sh rapids     join the parts and install cuDF
#   bash bench/diag/gpu_s48.sh bench N Q  after start or prep: `bamql bench` over the N trips,
#                                         queries Q, engines $ENGINES (default bamql gpu/host
#                                         and DuckDB), warm, medians of 5
set -uo pipefail
what=${1:?start, check, prep, keep, rapids or bench}; shift
out=${OUT:-/tmp/out}; mkdir -p "$out"
export BAMQL_CACHE_DIR=/tmp/bamql-cache
case $what in
  start)
    bash .devstage/install.sh base > /dev/null && echo "installed"
    rm -rf /tmp/src && mkdir -p /tmp/src && tar xzf .devstage/src.tgz -C /tmp/src
    cd /tmp/src && export PYTHONPATH=/tmp/site:/tmp/src
    (setsid nohup python -m bamql.cli bench --rows "${1:?rows}" --engines bamql-cpu --queries t01 \
      --reps 1 --page-sizes 512 --selectivity 0.0005 --modes warm --workdir /tmp/bench-data \
      --no-plots --out /tmp/prep-bench > /tmp/prep.log 2>&1 < /dev/null &)
    gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
    echo "# session 48, $gpu, $(git -C /tmp/src log -1 --format=%h 2>/dev/null || cat /tmp/src/.rev 2>/dev/null)" | tee "$out/gpu-s48.log"
    timeout 240 python bench/diag/gpu_s48_check.py 2>&1 | tail -80 | tee -a "$out/gpu-s48.log"
    timeout $(( ${2:?seconds} + 30 )) python -m tests.sql.corpus --device gpu --backends host,gpu \
      --caches 4,default --queries windows_hostile,joins_lookup_hostile,analyst,analyst_hostile,rows_hostile,groupby_dense,joins \
      --shapes base --datasets sample,hostile,gen-0.01 --spread 2 --workdir /tmp/corpus-c \
      --budget-s "$2" --log "$out/corpus-gpu-s48.jsonl" --quiet 2>&1 | tail -3 | tee -a "$out/gpu-s48.log"
    gzip -f "$out/corpus-gpu-s48.jsonl"; tail -2 /tmp/prep.log ;;
  check)  # install base + DuckDB, unpack the code, bench/diag/gpu_s48_check.py alone
    bash .devstage/install.sh base > /dev/null && echo "installed"
    rm -rf /tmp/src && mkdir -p /tmp/src && tar xzf .devstage/src.tgz -C /tmp/src
    cd /tmp/src && export PYTHONPATH=/tmp/site:/tmp/src
    echo "# session 48, $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" | tee "$out/gpu-s48-c.log"
    timeout 300 python bench/diag/gpu_s48_check.py 2>&1 | tail -80 | tee -a "$out/gpu-s48-c.log" ;;
  prep)  # install base + DuckDB, unpack the code, prepare N trips in the background
    bash .devstage/install.sh base > /dev/null && echo "installed"
    rm -rf /tmp/src && mkdir -p /tmp/src && tar xzf .devstage/src.tgz -C /tmp/src
    cd /tmp/src && export PYTHONPATH=/tmp/site:/tmp/src
    (setsid nohup python -m bamql.cli bench --rows "${1:?rows}" --engines bamql-cpu --queries t01 \
      --reps 1 --page-sizes 512 --selectivity 0.0005 --modes warm --workdir /tmp/bench-data \
      --no-plots --out /tmp/prep-bench > /tmp/prep.log 2>&1 < /dev/null &) ;;
  keep)  # a carried cuDF archive part, moved aside for `rapids`
    mkdir -p /tmp/devstage && for p in .devstage/rapids/part*; do [ -e "$p" ] && mv "$p" /tmp/devstage/; done
    ls /tmp/devstage | tr '\n' ' '; echo ;;
  rapids)  # join the parts and install cuDF
    mkdir -p /tmp/devstage && for p in .devstage/rapids/part*; do [ -e "$p" ] && mv "$p" /tmp/devstage/; done
    bash .devstage/install.sh rapids 2>&1 | tail -2 ;;
  bench)
    cd /tmp/src && export PYTHONPATH=/tmp/site:/tmp/src
    for _ in $(seq 150); do grep -q "results:" /tmp/prep.log 2>/dev/null && break; sleep 2; done
    tail -2 /tmp/prep.log
    CUDA_VISIBLE_DEVICES=0 timeout 560 python -m bamql.cli bench --rows "${1:?rows}" --queries "${2:?queries}" \
      --engines "${ENGINES:-bamql-gpu-gpu,bamql-gpu-host,duckdb}" --page-sizes 512 \
      --selectivity 0.0005 --modes warm --reps 5 --workdir /tmp/bench-data --no-plots \
      --out "$out/bench-s48" 2>&1 | tail -40 ;;
  *) echo "start, check, prep, keep, rapids or bench" >&2; exit 2 ;;
esac
