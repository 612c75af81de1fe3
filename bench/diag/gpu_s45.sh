#!/usr/bin/env bash
# Session 45's runs on a machine of several GPUs (issue 40: the actor dispatch). Runs ON the
# device from the project root; the code is the archive .devstage/src.tgz (git archive of
# HEAD), unpacked into /tmp/src, so that edits made here meanwhile do not change the code
# under test.
#   bash bench/diag/gpu_s45.sh first N P      install base + Dask wheels, unpack the code, and
#                                             prepare N trips as P partitions in /dev/shm/bx in
#                                             the background (log /tmp/prep.log)
#   bash bench/diag/gpu_s45.sh extra          install DuckDB; move carried cuDF archive parts aside
#   bash bench/diag/gpu_s45.sh keep           move carried cuDF archive parts aside
#   bash bench/diag/gpu_s45.sh rapids         join and install them (cuDF, dask-cudf)
#   bash bench/diag/gpu_s45.sh run N P GPUS TAG BASELINES DISPATCH [QUERIES] [REPS]
#                                             after the preparation: bench-scaleout, host backend,
#                                             warm, every answer checked against DuckDB's
#   bash bench/diag/gpu_s45.sh tests          the Dask GPU tests (one worker per GPU)
# WORKDIR (default /dev/shm/bx), MODE (warm) and BACKEND (host) change where the table is and
# how it is timed: WORKDIR=/tmp/bxc MODE=cold BACKEND=file for the disk, cold
set -uo pipefail
what=${1:?first, extra, keep, rapids, run or tests}; shift
out=${OUT:-/tmp/out}; mkdir -p "$out" /tmp/devstage
pipi() { python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$@"; }
keep() { for p in .devstage/rapids/part* .devstage/rapids2/part*; do [ -e "$p" ] && mv "$p" /tmp/devstage/; done; ls /tmp/devstage | tr '\n' ' '; echo; }
export BAMQL_CACHE_DIR=/tmp/bamql-cache
wd=${WORKDIR:-/dev/shm/bx}
all=q01,q02,q03,q04,q05,q06,t01,t02,t03,t04,k01
case $what in
  first)
    bash .devstage/install.sh base > /dev/null && pipi .devstage/dask/*.whl && echo "base and dask installed"
    rm -rf /tmp/src && mkdir -p /tmp/src && tar xzf .devstage/src.tgz -C /tmp/src
    nvidia-smi -L; df -h /dev/shm | tail -1; nproc; free -g | head -2
    cd /tmp/src && export PYTHONPATH=/tmp/site:/tmp/src
    (setsid nohup python -m bamql.cli bench-scaleout --rows "${1:?rows}" --partitions "${2:?parts}" \
      --queries "$all" --workdir "$wd" --prepare-only --out /tmp/prep > /tmp/prep.log 2>&1 < /dev/null &)
    sleep 5; tail -c 400 /tmp/prep.log; echo ;;
  extra) pipi .devstage/extra/*.whl && echo "duckdb installed"; keep; tail -c 300 /tmp/prep.log; echo ;;
  keep) keep; tail -c 200 /tmp/prep.log; echo ;;
  rapids) keep; bash .devstage/install.sh rapids; tail -c 300 /tmp/prep.log; echo ;;
  run)
    cd /tmp/src && export PYTHONPATH=/tmp/site:/tmp/src
    for _ in $(seq 200); do grep -q "prepared:" /tmp/prep.log 2>/dev/null && break; sleep 2; done
    grep -E "generated|ingested|ready|prepared" /tmp/prep.log | tr '\r' '\n' | tail -4
    timeout 580 python -m bamql.cli bench-scaleout --rows "${1:?rows}" --partitions "${2:?parts}" \
      --gpus "${3:?gpus}" --queries "${7:-$all}" --backend "${BACKEND:-host}" --mode "${MODE:-warm}" \
      --reps "${8:-3}" --workdir "$wd" \
      --baselines "${5:?baselines}" --dispatch "${6:?dispatch}" --out "$out/scaleout-${4:?tag}" 2>&1 \
      | grep -v "^ *$" | tail -90 ;;
  tests)
    cd /tmp/src && export PYTHONPATH=/tmp/site:/tmp/src
    gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); n=$(nvidia-smi -L | wc -l)
    { echo "# Dask GPU tests, session 45, $n x $gpu: pytest -m gpu tests/exec/test_distributed.py tests/exec/test_runner.py"
      timeout 300 python -m pytest -q -m gpu tests/exec/test_distributed.py tests/exec/test_runner.py \
        -p no:cacheprovider -W ignore --durations=5 2>&1; } > "$out/gpu-tests-dask-s45.log" 2>&1
    tail -12 "$out/gpu-tests-dask-s45.log" ;;
  *) echo "first, extra, keep, rapids, run or tests" >&2; exit 2 ;;
esac
