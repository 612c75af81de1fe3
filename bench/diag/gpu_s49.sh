#!/usr/bin/env bash
# Session 49's device runs. Runs ON the device from the project root; the code is the archive
# .devstage/src.tgz (git archive of HEAD), unpacked into /tmp/src.
#   bash bench/diag/gpu_s49.sh start N    install base + DuckDB, unpack the code, prepare N trips
#                                         in the background; then the GPU tests of the grouped
#                                         kernels and bench/diag/gpu_s49_check.py (session 48's
#                                         operators and session 49's tree aggregates on the
#                                         three backends, a 4-page cache, 8 threads)
#   bash bench/diag/gpu_s49.sh corpus S   after start: a corpus sample of the analyst, window,
#                                         join and distinct files on the three backends (S s)
#   bash bench/diag/gpu_s49.sh check      install, unpack, bench/diag/gpu_s49_check.py alone
#   bash bench/diag/gpu_s49.sh prep N     install, unpack, prepare N trips in the background
#   bash bench/diag/gpu_s49.sh keep       move a carried cuDF archive part aside
#   bash bench/diag/gpu_s49.sh rapids     join the parts and install cuDF
#   bash bench/diag/gpu_s49.sh bench N Q  after start or prep: `bamql bench` over the N trips,
#                                         queries Q, engines $ENGINES (default bamql gpu/host
#                                         and DuckDB), warm, medians of 5
set -uo pipefail
what=${1:?start, corpus, check, prep, keep, rapids or bench}; shift
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
    echo "# session 49, $gpu, $(git -C /tmp/src log -1 --format=%h 2>/dev/null || cat /tmp/src/.rev 2>/dev/null)" | tee "$out/gpu-s49.log"
    timeout 170 python -m pytest -q -m gpu tests/gpu/test_grouped.py tests/gpu/test_engine.py -x \
      -p no:cacheprovider 2>&1 | tail -5 | tee -a "$out/gpu-s49.log"
    timeout 280 python bench/diag/gpu_s49_check.py 2>&1 | grep -v '^$' | tail -400 | tee -a "$out/gpu-s49.log" | tail -40
    tail -2 /tmp/prep.log ;;
  corpus)  # after start: a corpus sample on the three backends, a 4-page and the default cache
    cd /tmp/src && export PYTHONPATH=/tmp/site:/tmp/src
    timeout $(( ${1:?seconds} + 40 )) python -m tests.sql.corpus --device gpu --backends host,gpu,file \
      --caches 4,default --queries analyst,analyst_hostile,windows_hostile,joins,joins_lookup_hostile,distinct,rows_hostile \
      --shapes base --datasets sample,hostile,gen-0.01 --spread 2 --workdir /tmp/corpus-c \
      --budget-s "$1" --log "$out/corpus-gpu-s49.jsonl" --quiet 2>&1 | tail -3 | tee "$out/corpus-gpu-s49.log"
    gzip -f "$out/corpus-gpu-s49.jsonl"; tail -2 /tmp/prep.log ;;
  check)  # install base + DuckDB, unpack the code, bench/diag/gpu_s49_check.py alone
    bash .devstage/install.sh base > /dev/null && echo "installed"
    rm -rf /tmp/src && mkdir -p /tmp/src && tar xzf .devstage/src.tgz -C /tmp/src
    cd /tmp/src && export PYTHONPATH=/tmp/site:/tmp/src
    echo "# session 49, $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" | tee "$out/gpu-s49-c.log"
    timeout 400 python bench/diag/gpu_s49_check.py 2>&1 | tail -150 | tee -a "$out/gpu-s49-c.log" ;;
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
      --out "$out/bench-s49" 2>&1 | tail -40 ;;
  *) echo "start, check, prep, keep, rapids or bench" >&2; exit 2 ;;
esac
