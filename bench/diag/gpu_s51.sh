#!/usr/bin/env bash
# Session 51's device runs. Runs ON the device from the project root; the code is the archive
# .devstage/src.tgz (git archive of HEAD), unpacked into /tmp/src.
#   bash bench/diag/gpu_s51.sh start N      install base + DuckDB + nvCOMP, unpack the code, prepare N trips
#                                           (zstd copies, 512 B pages) in the background; then the
#                                           GPU tests of the grouped kernels and
#                                           bench/diag/gpu_s49_check.py (the tree's operators on the
#                                           three backends, a 4-page cache, 8 threads)
#   bash bench/diag/gpu_s51.sh cold N Q     after start: `bamql bench` cold (the OS page cache
#                                           dropped before every run) over the N trips, queries Q,
#                                           engines $ENGINES (default the file backend and DuckDB)
#   bash bench/diag/gpu_s51.sh profile Q     after start: bench/diag/cold_profile.py (cProfile of cold
#                                           runs on the file backend) over queries Q
#   bash bench/diag/gpu_s51.sh corpus B S   after start: the corpus files ($Q, default the analyst,
#                                           window, rows, join and distinct files) on backend(s) B,
#                                           a 4-page and the default cache, time-boxed to S s
set -uo pipefail
what=${1:?start, cold, profile or corpus}; shift
out=${OUT:-/tmp/out}; mkdir -p "$out"
export BAMQL_CACHE_DIR=/tmp/bamql-cache
# nvCOMP (the gpu extra's GPU zstd decompression) beside the base packages: .devstage/install.sh nv
export LD_LIBRARY_PATH=/tmp/site-nv/nvidia/libnvcomp/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
py=/tmp/site:/tmp/site-nv:/tmp/src
bench_args=(--page-sizes 512 --selectivity 0.0005 --compress zstd --workdir /tmp/bench-data --no-plots)
case $what in
  start)
    bash .devstage/install.sh base > /dev/null && echo "installed"
    # nvCOMP: from a call of its own (the wheels and the base ones exceed one call's carry)
    if [ -d .devstage/nv ]; then bash .devstage/install.sh nv 2>&1 | tail -1
    else ls -d /tmp/site-nv/nvidia/nvcomp > /dev/null 2>&1 && echo "nvcomp installed before" \
      || echo "no nvCOMP: compressed copies decompress on host threads"; fi
    rm -rf /tmp/src && mkdir -p /tmp/src && tar xzf .devstage/src.tgz -C /tmp/src
    cd /tmp/src && export PYTHONPATH=$py
    (setsid nohup python -m bamql.cli bench --rows "${1:?rows}" --engines bamql-cpu --queries t01 \
      --reps 1 --modes warm "${bench_args[@]}" --out /tmp/prep-bench > /tmp/prep.log 2>&1 < /dev/null &)
    gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
    echo "# session 51, $gpu, $(cat /tmp/src/.rev 2>/dev/null)" | tee "$out/gpu-s51.log"
    timeout 200 python -m pytest -q -m gpu tests/gpu/test_grouped.py -p no:cacheprovider 2>&1 \
      | tail -5 | tee -a "$out/gpu-s51.log"
    timeout 240 python bench/diag/gpu_s49_check.py 2>&1 | grep -v '^$' | tail -400 \
      | tee -a "$out/gpu-s51.log" | tail -12
    tail -2 /tmp/prep.log ;;
  cold)
    cd /tmp/src && export PYTHONPATH=$py
    for _ in $(seq 200); do grep -q "results:" /tmp/prep.log 2>/dev/null && break; sleep 2; done
    tail -2 /tmp/prep.log
    CUDA_VISIBLE_DEVICES=0 timeout 540 python -m bamql.cli bench --rows "${1:?rows}" --queries "${2:?queries}" \
      --engines "${ENGINES:-bamql-gpu-file,duckdb}" --modes cold --reps "${REPS:-3}" "${bench_args[@]}" \
      --out "$out/bench-cold-s51" 2>&1 | tail -40 ;;
  profile)  # after start: bench/diag/cold_profile.py over the prepared store, queries $1 (comma-separated)
    cd /tmp/src && export PYTHONPATH=$py
    for _ in $(seq 200); do grep -q "results:" /tmp/prep.log 2>/dev/null && break; sleep 2; done
    d=$(ls -d /tmp/bench-data/*/data-512*zstd | head -1)
    timeout 300 python bench/diag/cold_profile.py "$d" ${1//,/ } 2>&1 | tee "$out/cold-profile-s51.log" | tail -150 ;;
  corpus)
    b=${1:?backend}; s=${2:?seconds}
    cd /tmp/src && export PYTHONPATH=$py
    timeout $(( s + 40 )) python -m tests.sql.corpus --device gpu --backends "$b" \
      --caches 4,default --queries "${Q:-analyst,analyst_hostile,windows_hostile,rows,rows_hostile,joins,distinct}" \
      --shapes base --datasets sample,hostile,gen-0.01 --spread 2 --workdir /tmp/corpus-c \
      --budget-s "$s" --log "$out/corpus-gpu-s51-${b//,/-}.jsonl" --quiet 2>&1 | tail -2 \
      | tee "$out/corpus-gpu-s51-${b//,/-}.log"
    gzip -f "$out/corpus-gpu-s51-${b//,/-}.jsonl" ;;
  *) echo "start, cold or corpus" >&2; exit 2 ;;
esac
