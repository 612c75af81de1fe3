#!/usr/bin/env bash
# Session 46's device runs. Runs ON the device from the project root; the code is the archive
# .devstage/src.tgz (git archive of HEAD), unpacked into /tmp/src, so that edits made here
# meanwhile do not change the code under test.
#   bash bench/diag/gpu_s46.sh start N S  install base + DuckDB, unpack the code, prepare N trips
#                                         in the background; the plan tree's corpus files
#                                         (windows, lookups, analyst, rows) on every GPU backend
#                                         and two caches (S seconds)
#   bash bench/diag/gpu_s46.sh keep       move carried cuDF archive parts aside
#   bash bench/diag/gpu_s46.sh rapids     join and install them (cuDF)
#   bash bench/diag/gpu_s46.sh bench N Q  after start and rapids: `bamql bench` over the N trips,
#                                         queries Q, bamql gpu/host, cuDF (resident, reading ORC)
#                                         and DuckDB, warm, medians of 5, one GPU
set -uo pipefail
what=${1:?start, keep, rapids or bench}; shift
out=${OUT:-/tmp/out}; mkdir -p "$out" /tmp/devstage
pipi() { python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$@"; }
keep() { for p in .devstage/rapids/part* .devstage/rapids2/part*; do [ -e "$p" ] && mv "$p" /tmp/devstage/; done; ls /tmp/devstage | tr '\n' ' '; echo; }
unpack() { rm -rf /tmp/src && mkdir -p /tmp/src && tar xzf .devstage/src.tgz -C /tmp/src; }
export BAMQL_CACHE_DIR=/tmp/bamql-cache
case $what in
  keep) keep ;;
  rapids) keep; bash .devstage/install.sh rapids ;;
  start)  # install, unpack, prepare N rows in the background; the plan tree's files on the GPU
    bash .devstage/install.sh base > /dev/null && pipi .devstage/extra/*.whl && echo "installed"
    keep; unpack; cd /tmp/src && export PYTHONPATH=/tmp/site:/tmp/src
    (setsid nohup python -m bamql.cli bench --rows "${1:?rows}" --engines bamql-cpu --queries t01 \
      --reps 1 --page-sizes 512 --selectivity 0.0005 --modes warm --workdir /tmp/bench-data \
      --no-plots --out /tmp/prep-bench > /tmp/prep.log 2>&1 < /dev/null &)
    gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
    echo "# session 46, $gpu: the plan tree's corpus files on every GPU backend"
    timeout $(( ${2:?seconds} + 30 )) python -m tests.sql.corpus --device gpu --backends host,gpu,file \
      --caches 4,default --queries windows_hostile,joins_lookup_hostile,analyst,analyst_hostile,rows,rows_hostile \
      --shapes base --datasets sample,hostile,gen-0.01 --spread 2 --workdir /tmp/corpus-c \
      --budget-s "$2" --log "$out/corpus-gpu-s46.jsonl" --quiet 2>&1 | tail -3
    gzip -f "$out/corpus-gpu-s46.jsonl"; tail -2 /tmp/prep.log ;;
  bench)  # after start N and rapids: every engine, warm, medians of 5, one GPU
    cd /tmp/src && export PYTHONPATH=/tmp/site:/tmp/src
    for _ in $(seq 150); do grep -q "results:" /tmp/prep.log 2>/dev/null && break; sleep 2; done
    tail -2 /tmp/prep.log
    CUDA_VISIBLE_DEVICES=0 timeout 540 python -m bamql.cli bench --rows "${1:?rows}" --queries "${2:?queries}" \
      --engines bamql-gpu-gpu,bamql-gpu-host,rapids-resident,rapids,duckdb --page-sizes 512 \
      --selectivity 0.0005 --modes warm --reps 5 --workdir /tmp/bench-data --no-plots \
      --out "$out/bench-s46" 2>&1 | tail -64 ;;
  *) echo "start, keep, rapids or bench" >&2; exit 2 ;;
esac
