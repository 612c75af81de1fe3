#!/usr/bin/env bash
# Session 43's runs on a machine of several GPUs (issues 40 and 41). Runs ON the device from
# the project root; the code is the archive .devstage/src.tgz (git archive of HEAD), unpacked
# into /tmp/src, so that edits made here meanwhile do not change the code under test.
#   bash bench/diag/gpu_s43.sh first N P     install base + Dask wheels, unpack the code,
#                                            prepare N trips as P partitions (/dev/shm/bx)
#   bash bench/diag/gpu_s43.sh fuzz S        install DuckDB; the hostile random queries (seed
#                                            42) on the GPU engine's host, gpu and file
#                                            backends, one GPU each, S seconds' budget
#   bash bench/diag/gpu_s43.sh one S         on one GPU: install base + DuckDB, unpack the code;
#                                            the fuzz above (three processes on the one GPU)
#                                            beside the GPU hash-table tests and the BOOLEAN
#                                            and GROUP BY parts of the corpus on every backend
#   bash bench/diag/gpu_s43.sh ab N          on one GPU: install base + DuckDB; h01/h02/k01/t01
#                                            warm on the gpu backend over N rows, the code of
#                                            .devstage/src-old.tgz, then .devstage/src.tgz,
#                                            then the old again (the same data and machine)
#   bash bench/diag/gpu_s43.sh final S       on one GPU: install base + DuckDB, unpack the code;
#                                            the DATE corpus file on every GPU backend (S s)
#   bash bench/diag/gpu_s43.sh keep          move carried cuDF archive parts aside
#   bash bench/diag/gpu_s43.sh rapids        join and install them (cuDF, dask-cudf)
#   bash bench/diag/gpu_s43.sh run ARGS...   gpu_scaleout_s42.sh run ARGS (from /tmp/src)
set -uo pipefail
what=${1:?first, fuzz, keep, rapids or run}; shift
out=${OUT:-/tmp/out}; mkdir -p "$out" /tmp/devstage
pipi() { python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$@"; }
keep() { for p in .devstage/rapids/part* .devstage/rapids2/part*; do [ -e "$p" ] && mv "$p" /tmp/devstage/; done; ls /tmp/devstage | tr '\n' ' '; echo; }
case $what in
  first)
    bash .devstage/install.sh base && pipi .devstage/dask/*.whl && echo "dask installed"
    rm -rf /tmp/src && mkdir -p /tmp/src && tar xzf .devstage/src.tgz -C /tmp/src
    nvidia-smi -L; df -h /dev/shm | tail -1; nproc; free -g | head -2
    cd /tmp/src && OUT=$out bash bench/diag/gpu_scaleout_s42.sh prep "${1:?rows}" "${2:?parts}" ;;
  fuzz|one)
    if [ "$what" = one ]; then
      bash .devstage/install.sh base > /dev/null && echo "base installed"
      rm -rf /tmp/src && mkdir -p /tmp/src && tar xzf .devstage/src.tgz -C /tmp/src
    fi
    pipi .devstage/extra/*.whl && echo "duckdb installed"; keep
    cd /tmp/src && export PYTHONPATH=/tmp/site:/tmp/src BAMQL_CACHE_DIR=/tmp/bamql-cache
    i=0; n=$(nvidia-smi -L | wc -l)
    for b in host gpu file; do
      CUDA_VISIBLE_DEVICES=$((i % n)) timeout $(( ${1:?seconds} + 120 )) python -m tests.sql.fuzz --seed 42 \
        --queries 2000 --per-world 25 --device gpu --backend $b --budget-s "$1" \
        --workdir /tmp/fz-$b --log "$out/fuzz-gpu-$b.jsonl.gz" --quiet > "$out/fuzz-gpu-$b.log" 2>&1 &
      i=$((i + 1))
    done
    if [ "$what" = one ]; then
      gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
      { echo "# GPU tests, session 43, $gpu (beside the fuzz)"
        timeout 240 python -m pytest -q -m gpu tests/gpu/test_hashgroup_sim.py tests/gpu/test_grouped.py \
          -n 2 -p no:cacheprovider 2>&1 | tail -4; } > "$out/gpu-tests-s43.log" 2>&1
      timeout 150 python -m tests.sql.corpus --device gpu --backends host,gpu,file --caches 4,default \
        --queries hostile_filters,hostile_groups,group --shapes base --datasets sample,hostile \
        --spread 2 --workdir /tmp/corpus-w --budget-s 120 --log "$out/corpus-gpu-s43.jsonl" --quiet 2>&1 | tail -3
      gzip -f "$out/corpus-gpu-s43.jsonl"; cat "$out/gpu-tests-s43.log"
    fi
    wait; for b in host gpu file; do echo "== $b"; tail -8 "$out/fuzz-gpu-$b.log"; done ;;
  ab)
    bash .devstage/install.sh base > /dev/null && pipi .devstage/extra/*.whl && echo "installed"
    for v in old new; do
      f=.devstage/src-$v.tgz; [ $v = new ] && f=.devstage/src.tgz
      rm -rf /tmp/src-$v && mkdir -p /tmp/src-$v && tar xzf $f -C /tmp/src-$v
    done
    export BAMQL_CACHE_DIR=/tmp/bamql-cache
    for v in old new old2; do
      d=/tmp/src-${v%2}; cd $d
      PYTHONPATH=/tmp/site:$d timeout 150 python -m bamql.cli bench --rows "${1:?rows}" \
        --engines bamql-gpu-gpu --queries h01,h02,k01,t01 --page-sizes 512 --selectivity 0.0005 \
        --modes warm --reps 5 --workdir /tmp/bench-data --no-plots --out "$out/ab-$v" 2>&1 \
        | grep -E "h0|k01|t01|error|rror" | tail -8
    done ;;
  final)
    bash .devstage/install.sh base > /dev/null && pipi .devstage/extra/*.whl && echo "installed"
    rm -rf /tmp/src && mkdir -p /tmp/src && tar xzf .devstage/src.tgz -C /tmp/src
    cd /tmp/src && export PYTHONPATH=/tmp/site:/tmp/src BAMQL_CACHE_DIR=/tmp/bamql-cache
    nvidia-smi --query-gpu=name --format=csv,noheader | head -1
    timeout $(( ${1:?seconds} + 30 )) python -m tests.sql.corpus --device gpu --backends host,gpu,file \
      --caches default --queries hostile_dates --shapes base --datasets hostile --spread 3 \
      --workdir /tmp/corpus-d --budget-s "$1" --log "$out/corpus-gpu-dates-s43.jsonl" --quiet 2>&1 | tail -4
    gzip -f "$out/corpus-gpu-dates-s43.jsonl" ;;
  keep) keep ;;
  rapids) keep; bash .devstage/install.sh rapids ;;
  run) cd /tmp/src && OUT=$out bash bench/diag/gpu_scaleout_s42.sh run "$@" ;;
  *) echo "first, fuzz, keep, rapids or run" >&2; exit 2 ;;
esac
