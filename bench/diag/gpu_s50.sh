#!/usr/bin/env bash
# Session 50's device runs. Runs ON the device from the project root; the code is the archive
# .devstage/src.tgz (git archive of HEAD), unpacked into /tmp/src.
#   bash bench/diag/gpu_s50.sh start        install base + DuckDB, unpack the code; the GPU tests
#                                           of the grouped kernels and the simulator-free GPU
#                                           engine tests, then bench/diag/gpu_s49_check.py (the
#                                           tree's operators on the three backends, a 4-page
#                                           cache, 8 threads)
#   bash bench/diag/gpu_s50.sh corpus B S   after start: the analyst, window, rows, join and
#                                           distinct files (or those named by $Q) on backend B
#                                           (host, gpu or file), a 4-page and the default cache,
#                                           time-boxed to S s
set -uo pipefail
what=${1:?start or corpus}; shift
out=${OUT:-/tmp/out}; mkdir -p "$out"
export BAMQL_CACHE_DIR=/tmp/bamql-cache
case $what in
  start)
    bash .devstage/install.sh base > /dev/null && echo "installed"
    rm -rf /tmp/src && mkdir -p /tmp/src && tar xzf .devstage/src.tgz -C /tmp/src
    cd /tmp/src && export PYTHONPATH=/tmp/site:/tmp/src
    gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
    echo "# session 50, $gpu, $(cat /tmp/src/.rev 2>/dev/null)" | tee "$out/gpu-s50.log"
    timeout 200 python -m pytest -q -m gpu tests/gpu/test_grouped.py tests/gpu/test_engine.py \
      -p no:cacheprovider 2>&1 | tail -5 | tee -a "$out/gpu-s50.log"
    timeout 280 python bench/diag/gpu_s49_check.py 2>&1 | grep -v '^$' | tail -400 \
      | tee -a "$out/gpu-s50.log" | tail -12 ;;
  corpus)  # after start: the corpus files on one backend, a 4-page and the default cache
    b=${1:?backend}; s=${2:?seconds}
    cd /tmp/src && export PYTHONPATH=/tmp/site:/tmp/src
    timeout $(( s + 40 )) python -m tests.sql.corpus --device gpu --backends "$b" \
      --caches 4,default --queries "${Q:-analyst,analyst_hostile,windows_hostile,rows,rows_hostile,joins,distinct}" \
      --shapes base --datasets sample,hostile,gen-0.01 --spread 2 --workdir /tmp/corpus-c \
      --budget-s "$s" --log "$out/corpus-gpu-s50-$b.jsonl" --quiet 2>&1 | tail -2 \
      | tee "$out/corpus-gpu-s50-$b.log"
    gzip -f "$out/corpus-gpu-s50-$b.jsonl" ;;
  *) echo "start or corpus" >&2; exit 2 ;;
esac
