#!/usr/bin/env bash
# Session 52's device runs. Runs ON the device from the project root; the code is the archive
# .devstage/src.tgz (git archive of HEAD), unpacked into /tmp/src.
#   bash bench/diag/gpu_s52.sh start N     install the base packages, unpack the code, prepare N trips
#                                          (plain pages of 512 B) in the background
#   bash bench/diag/gpu_s52.sh oneshot     after start: the one-shot `bamql sql --device gpu` over the
#                                          prepared store (bench/diag/gpu_first_query.py, file backend),
#                                          its phases timed in one process (bench/diag/gpu_one_shot.py)
#                                          and a cProfile of the CLI
#   bash bench/diag/gpu_s52.sh compare     after start: bench/diag/gpu_one_shot.py over the prepared store for
#                                          the tree .devstage/src.tgz and that tree with .devstage/before.patch applied, taking
#                                          turns, every module's bytecode compiled first (as pip installs it)
#   bash bench/diag/gpu_s52.sh final N     start N, then bench/diag/gpu_s49_check.py while the trips are prepared,
#                                          then bench/diag/gpu_one_shot.py over them (bytecode compiled first),
#                                          its profiles kept in gpu-one-shot-s52-final.log
#   bash bench/diag/gpu_s52.sh check       the GPU tests of the grouped kernels and
#                                          bench/diag/gpu_s49_check.py (the tree's operators on the three
#                                          backends, a 4-page cache, 8 threads)
set -uo pipefail
what=${1:?start, oneshot or check}; shift
out=${OUT:-/tmp/out}; mkdir -p "$out"
export BAMQL_CACHE_DIR=/tmp/bamql-cache
py=/tmp/site:/tmp/src
wait_prep() {
  for _ in $(seq 240); do grep -q "results:" /tmp/prep.log 2>/dev/null && break; sleep 2; done
  tail -2 /tmp/prep.log
}
case $what in
  start)
    bash .devstage/install.sh base > /dev/null && echo "installed"
    rm -rf /tmp/src && mkdir -p /tmp/src && tar xzf .devstage/src.tgz -C /tmp/src
    cd /tmp/src && export PYTHONPATH=$py
    (setsid nohup python -m bamql.cli bench --rows "${1:?rows}" --engines bamql-cpu --queries t01 \
      --reps 1 --modes warm --page-sizes 512 --selectivity 0.0005 --workdir /tmp/bench-data --no-plots \
      --out /tmp/prep-bench > /tmp/prep.log 2>&1 < /dev/null &)
    echo "# session 52, $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1), $(cat /tmp/src/.rev)" \
      | tee "$out/gpu-s52.log" ;;
  oneshot)
    cd /tmp/src && export PYTHONPATH=$py
    wait_prep
    d=$(ls -d /tmp/bench-data/*/data-512 | head -1)
    echo "store: $d" | tee -a "$out/gpu-s52.log"
    timeout 200 python bench/diag/gpu_one_shot.py "$d" 2>&1 | tee -a "$out/gpu-s52.log"
    timeout 200 python bench/diag/gpu_first_query.py --data "$d" --backend file --reps "${REPS:-2}" \
      --out "$out/gpu-first-query-s52.json" 2>&1 | tail -5 | tee -a "$out/gpu-s52.log"
    python -m cProfile -s cumtime -m bamql.cli sql "$d" \
      "SELECT payment_type, COUNT(*), AVG(fare_amount), SUM(tip_amount) FROM trips WHERE trip_distance > 3 AND pickup_location_id IN (236, 161) GROUP BY 1" \
      --device gpu 2>&1 | grep -v "frozen importlib" | head -90 > "$out/gpu-one-shot-cprofile-s52.log"
    head -60 "$out/gpu-one-shot-cprofile-s52.log" ;;
  compare)
    wait_prep
    d=$(ls -d /tmp/bench-data/*/data-512* | head -1)
    rm -rf /tmp/src-before && cp -r /tmp/src /tmp/src-before && echo "before ($(cat .devstage/before.rev))" > /tmp/src-before/.rev
    (cd /tmp/src-before && patch -s -p1 < "$OLDPWD/.devstage/before.patch")
    python -m compileall -q -j 16 /tmp/site /tmp/src/bamql /tmp/src-before/bamql > /dev/null 2>&1
    for rep in 1 2; do for tree in before after; do
      src=/tmp/src; [ $tree = before ] && src=/tmp/src-before
      echo "## $tree ($(cat $src/.rev)), round $rep" | tee -a "$out/gpu-s52.log"
      (cd $src && PYTHONPATH=/tmp/site:$src timeout 150 python /tmp/src/bench/diag/gpu_one_shot.py "$d" --reps 3 2>&1 \
        | grep -v "^ \{3,\}[0-9]" | tee -a "$out/gpu-s52.log" | head -14)
    done; done ;;
  final)
    bash "$0" start "${1:?rows}"
    cd /tmp/src && export PYTHONPATH=$py
    if [ -n "${QUICK:-}" ]; then  # the host queue's tests on the GPU instead of the whole check
      timeout 120 python -m pytest -q -p no:cacheprovider -m "gpu or not gpu" tests/gpu/test_host_queue.py 2>&1 \
        | tail -2 | tee -a "$out/gpu-s52.log"
    else
      timeout 240 python bench/diag/gpu_s49_check.py 2>&1 | grep -v '^$' | tail -400 \
        | tee -a "$out/gpu-s52.log" | tail -3
    fi
    wait_prep
    d=$(ls -d /tmp/bench-data/*/data-512* | head -1)
    python -m compileall -q -j 16 /tmp/site /tmp/src/bamql > /dev/null 2>&1
    echo "## one-shot at $(cat /tmp/src/.rev)" >> "$out/gpu-s52.log"
    timeout 150 python bench/diag/gpu_one_shot.py "$d" --reps 3 2>&1 | tee "$out/gpu-one-shot-s52-final.log" \
      | grep -v "^ \{3,\}[0-9]" | tee -a "$out/gpu-s52.log" | head -16 ;;
  misses)  # which numba functions a warm one-shot still compiles: numba's cache log (NUMBA_DEBUG_CACHE)
    bash .devstage/install.sh base > /dev/null
    rm -rf /tmp/src && mkdir -p /tmp/src && tar xzf .devstage/src.tgz -C /tmp/src
    cd /tmp/src && export PYTHONPATH=$py
    python -c "
from pathlib import Path
from bamql.datasets.generator import GenParams
from bamql.datasets.orc import generate_orc
from bamql.storage.ingest import ingest
r = generate_orc(Path('/tmp/m/orc'), GenParams(rows=2_000_000, seed=5), workers=8)
ingest(r.files, Path('/tmp/m/data/trips'), page_size=512)"
    q="SELECT payment_type, COUNT(*), AVG(fare_amount), SUM(tip_amount) FROM trips WHERE trip_distance > 3 AND pickup_location_id IN (236, 161) GROUP BY 1"
    python -m bamql.cli sql /tmp/m/data "$q" --device gpu > /dev/null
    NUMBA_DEBUG_CACHE=1 python -m bamql.cli sql /tmp/m/data "$q" --device gpu 2>&1 | grep -v "^|\|^+\|rows)" \
      | sed 's#/tmp/src/##' | sort | uniq -c | sort -rn | head -60 | tee "$out/numba-cache-s52.log" ;;
  check)
    cd /tmp/src && export PYTHONPATH=$py
    timeout 300 python -m pytest -q -m "gpu or not gpu" tests/gpu/test_grouped.py tests/gpu/test_engine.py \
      tests/gpu/test_kernel_diskcache.py tests/gpu/test_memory_info.py -p no:cacheprovider 2>&1 \
      | tail -5 | tee -a "$out/gpu-s52.log"
    timeout 240 python bench/diag/gpu_s49_check.py 2>&1 | grep -v '^$' | tail -400 \
      | tee -a "$out/gpu-s52.log" | tail -12 ;;
  *) echo "start, oneshot or check" >&2; exit 2 ;;
esac
