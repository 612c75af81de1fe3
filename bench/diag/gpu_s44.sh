#!/usr/bin/env bash
# Session 44's device runs. Runs ON the device from the project root; the code is the archive
# .devstage/src.tgz (git archive of HEAD), unpacked into /tmp/src, so that edits made here
# meanwhile do not change the code under test.
#   bash bench/diag/gpu_s44.sh verify S   install base + DuckDB + Dask, unpack the code; side by
#                                         side for about S seconds: the grouped, hash-table,
#                                         decimal and Dask GPU tests; the DATE and hash
#                                         aggregation engine tests on the gpu backend; the DATE,
#                                         analyst and timestamp corpus files on every GPU backend
#   bash bench/diag/gpu_s44.sh keep       move carried cuDF archive parts aside
#   bash bench/diag/gpu_s44.sh rapids     join and install them (cuDF, dask-cudf)
#   bash bench/diag/gpu_s44.sh start N S  install base + DuckDB, unpack the code, prepare N trips
#                                         in the background; the DATE, TIMESTAMPTZ and fetch tests
#                                         on the gpu backend and the date and GROUP BY expression
#                                         corpus files on every GPU backend (S seconds)
#   bash bench/diag/gpu_s44.sh bench N Q  after start and rapids: `bamql bench` over the N trips,
#                                         queries Q, bamql gpu/host, cuDF (resident, reading ORC)
#                                         and DuckDB, warm, medians of 5, one GPU
set -uo pipefail
what=${1:?verify, keep, rapids or bench}; shift
out=${OUT:-/tmp/out}; mkdir -p "$out" /tmp/devstage
pipi() { python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$@"; }
keep() { for p in .devstage/rapids/part* .devstage/rapids2/part*; do [ -e "$p" ] && mv "$p" /tmp/devstage/; done; ls /tmp/devstage | tr '\n' ' '; echo; }
unpack() { rm -rf /tmp/src && mkdir -p /tmp/src && tar xzf .devstage/src.tgz -C /tmp/src; }
export BAMQL_CACHE_DIR=/tmp/bamql-cache
case $what in
  verify)
    bash .devstage/install.sh base > /dev/null && pipi .devstage/extra/*.whl .devstage/dask/*.whl \
      && echo "installed"; keep; unpack
    cd /tmp/src && export PYTHONPATH=/tmp/site:/tmp/src
    t=${1:?seconds}; gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
    echo "# session 44, $gpu ($(nvidia-smi -L | wc -l) GPUs), at $(cat .git-head 2>/dev/null)"
    # three groups side by side, each writing as it goes (a time-out still shows how far it got)
    timeout $((t + 30)) python -m pytest -v -p no:cacheprovider -m gpu tests/gpu/test_grouped.py \
      tests/gpu/test_hashgroup_sim.py tests/api/test_exact_decimals.py \
      tests/exec/test_distributed.py > "$out/gpu-tests-s44.log" 2>&1 &
    BAMQL_TEST_DEVICE=gpu BAMQL_TEST_BACKEND=gpu timeout $((t + 30)) python -m pytest -v \
      -p no:cacheprovider -n 3 tests/api/test_dates.py tests/exec/test_hashagg.py \
      > "$out/gpu-engine-tests-s44.log" 2>&1 &
    timeout $((t + 30)) python -m tests.sql.corpus --device gpu --backends host,gpu,file \
      --caches 4,default --queries hostile_dates,analyst,timestamps --shapes base \
      --datasets sample,hostile --spread 2 --workdir /tmp/corpus-v --budget-s "$t" \
      --log "$out/corpus-gpu-s44.jsonl" > "$out/corpus-gpu-s44.txt" 2>&1 &
    wait; gzip -f "$out/corpus-gpu-s44.jsonl"
    for f in gpu-tests-s44.log gpu-engine-tests-s44.log corpus-gpu-s44.txt; do
      echo "== $f"; grep -E "passed|failed|FAILED|Error|mismatch|wrong" "$out/$f" | tail -6; done ;;
  hashgroup)  # the GPU hash-table test's script alone, each query timed, a traceback on a hang
    cd /tmp/src && export PYTHONPATH=/tmp/site:/tmp/src
    python - > /tmp/hg.py <<'PY'
from tests.gpu.test_hashgroup_sim import SCRIPT
print(SCRIPT.replace("got = con.sql(q).rows()",
      "import time; t0 = time.perf_counter(); got = con.sql(q).rows(); "
      "print(store, backend, f'{time.perf_counter() - t0:.2f}s', q[:50], flush=True)"))
PY
    PYTHONFAULTHANDLER=1 timeout -s ABRT "${1:?seconds}" python -c "$(cat /tmp/hg.py)" 200000 1024 \
      host,gpu,file,parts,blocks > "$out/hashgroup-s44.log" 2>&1 &
    timeout $(( $1 + 20 )) python -m pytest -v -p no:cacheprovider -n 1 -m gpu \
      tests/api/test_exact_decimals.py tests/exec/test_distributed.py > "$out/gpu-tests-s44-b.log" 2>&1
    wait; tail -40 "$out/hashgroup-s44.log"; grep -E "PASSED|FAILED|passed|failed" "$out/gpu-tests-s44-b.log" | tail -8 ;;
  keep) keep ;;
  rapids) keep; bash .devstage/install.sh rapids ;;
  start)  # install, unpack, prepare N rows in the background; this session's codegen on the GPU
    bash .devstage/install.sh base > /dev/null && pipi .devstage/extra/*.whl && echo "installed"
    keep; unpack; cd /tmp/src && export PYTHONPATH=/tmp/site:/tmp/src
    (setsid nohup python -m bamql.cli bench --rows "${1:?rows}" --engines bamql-cpu --queries t01 \
      --reps 1 --page-sizes 512 --selectivity 0.0005 --modes warm --workdir /tmp/bench-data \
      --no-plots --out /tmp/prep-bench > /tmp/prep.log 2>&1 < /dev/null &)
    gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
    { echo "# session 44, $gpu: the engine's DATE, TIMESTAMP WITH TIME ZONE and fetch tests on the gpu backend"
      BAMQL_TEST_DEVICE=gpu BAMQL_TEST_BACKEND=gpu timeout "${2:?seconds}" python -m pytest -q \
        -p no:cacheprovider -n 3 tests/api/test_dates.py tests/api/test_timestamptz.py \
        tests/exec/test_fetch.py 2>&1 | tail -4; } > "$out/gpu-tests-s44-c.log" 2>&1 &
    timeout $(( $2 + 30 )) python -m tests.sql.corpus --device gpu --backends host,gpu,file \
      --caches 4,default --queries hostile_dates,timestamps,groupby_expr,groupby_expr_hostile \
      --shapes base --datasets sample,hostile,gen-0.01 --spread 2 --workdir /tmp/corpus-c \
      --budget-s "$2" --log "$out/corpus-gpu-s44-c.jsonl" --quiet 2>&1 | tail -2
    wait; gzip -f "$out/corpus-gpu-s44-c.jsonl"; cat "$out/gpu-tests-s44-c.log"; tail -2 /tmp/prep.log ;;
  bench)  # after start N and rapids: every engine, warm, medians of 5, one GPU
    cd /tmp/src && export PYTHONPATH=/tmp/site:/tmp/src
    for _ in $(seq 150); do grep -q "results:" /tmp/prep.log 2>/dev/null && break; sleep 2; done
    tail -2 /tmp/prep.log
    CUDA_VISIBLE_DEVICES=0 timeout 540 python -m bamql.cli bench --rows "${1:?rows}" --queries "${2:?queries}" \
      --engines bamql-gpu-gpu,bamql-gpu-host,rapids-resident,rapids,duckdb --page-sizes 512 \
      --selectivity 0.0005 --modes warm --reps 5 --workdir /tmp/bench-data --no-plots \
      --out "$out/bench-s44" 2>&1 | tail -64 ;;
  *) echo "verify, keep, rapids or bench" >&2; exit 2 ;;
esac
