"""The differential corpus in CI: bamql against DuckDB on the same rows.

- CPU engine: a deterministic third of the corpus (every third query of each file order)
  on every shape of ``CI_SHAPES`` (each page size, row-group, float, compression and
  partition setting) over the generated trips and the hostile table, and a third of that
  over the other data sets (real sample, other selectivities, CSV, one row, empty).
  Kernels compile per query (~1 s each here), so the whole corpus does not fit CI's time
  on a 2-core machine: ``python -m tests.sql.corpus --device cpu --shapes ci --spread 5``
  runs all of it.
- GPU engine in numba's CUDA simulator (a subprocess with ``NUMBA_ENABLE_CUDASIM=1``): the
  ``host``, ``gpu`` and ``file`` backends with a 4-slot and a default page cache, on tiny
  tables, over a subset of the corpus.
- The refused queries: one line from ``bamql.errors``, never a traceback or an answer.

The CPU matrix and the simulator's part are marked ``slow`` (``python -m pytest -m slow``);
the default run takes a sample of the CPU matrix, over every data set and store setting.

A failing test lists every mismatch of its configuration (query, data set, ours, DuckDB's).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import bamql
from tests.sql.corpus import (
    BASE_SHAPE,
    CI_SHAPES,
    FILES_SHAPE,
    Engine,
    Outcome,
    References,
    build_datasets,
    ci_plan,
    dataset_names,
    load_queries,
    run_queries,
    store,
)

QUERIES = load_queries()
#: a multiple of 3: the sample's queries are among the third of the corpus that the slow
#: run's matrix (``PLAN``) checks (87: about 15 queries of each schema on each data set of
#: the two main ones, and at least one on every other, in the default run's time)
SAMPLE_EVERY = 87
REFUSED = load_queries(include_refused=True)
#: (shape, data set, queries) of the CPU matrix: a third of the corpus on every CI shape
#: (``corpus.ci_plan`` says why a third; the command line runs all of it).
PLAN = ci_plan(QUERIES, dataset_names())
#: The default run's sample of that matrix: every data set on the first four CI shapes
#: (every page size, row-group, float, compression and partition setting) and the first
#: bit-packed one, fewer queries.
SAMPLE = ci_plan(QUERIES, dataset_names(), (*CI_SHAPES[:4], next(s for s in CI_SHAPES if s.pack)),
                 every=SAMPLE_EVERY)
#: A data set's cases share one pytest-xdist worker: the CPU kernels of a query are the same
#: on most shapes (and read in place), so the first shape compiles them and the others load
#: them from the disk cache (on two workers at once, both would compile them).
CPU_CASES = [pytest.param(s, n, qs, id=f"sample-{s.name}-{n}", marks=pytest.mark.xdist_group(f"corpus-{n}"))
             for s, n, qs in SAMPLE] + [
    pytest.param(s, n, qs, id=f"{s.name}-{n}", marks=pytest.mark.slow) for s, n, qs in PLAN]
GEN_ROWS = 8_000
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("corpus")


@pytest.fixture(scope="module")
def datasets(workdir):
    return {d.name: d for d in build_datasets(workdir, GEN_ROWS)}


@pytest.fixture(scope="module")
def refs() -> References:
    return References()


def _report(bad: list[Outcome], limit: int = 40) -> str:
    lines = [o.brief()[:500] for o in bad[:limit]]
    more = f"\n... and {len(bad) - limit} more" if len(bad) > limit else ""
    return f"{len(bad)} of the checks failed:\n" + "\n".join(lines) + more


def test_the_corpus_has_three_hundred_queries_over_both_schemas():
    assert len(QUERIES) >= 300
    assert len({q.id for q in QUERIES}) == len(QUERIES)
    assert {q.schema for q in QUERIES} == {"trips", "hostile"}
    assert sum(q.schema == "hostile" for q in QUERIES) >= 100
    # every shape of the CI matrix sees the CI subset over both schemas
    for shape in CI_SHAPES:
        for name in ("gen-0.01", "hostile"):
            assert any(s == shape and n == name and len(qs) >= 150 for s, n, qs in PLAN)


@pytest.mark.parametrize("ds_name", ["sample", "hostile"])
def test_every_corpus_query_is_accepted(workdir, datasets, ds_name):
    """The corpus is of queries bamql plans; those it refuses belong in refused*.sql."""
    ds = datasets[ds_name]
    with bamql.connect(store(ds, BASE_SHAPE, workdir), device="cpu") as con:
        refused = []
        for q in QUERIES:
            if q.schema == ds.schema:
                try:
                    con.explain(q.sql)
                except bamql.errors.BamqlError as e:
                    refused.append(f"{q.id}: {e}")
    assert not refused, "\n".join(refused)


@pytest.mark.parametrize("ds_name", ["sample", "hostile"])
def test_refused_queries_fail_with_one_line(workdir, datasets, ds_name):
    ds = datasets[ds_name]
    answered, crashed = [], []
    with bamql.connect(store(ds, BASE_SHAPE, workdir), device="cpu") as con:
        for q in REFUSED:
            if q.schema != ds.schema:
                continue
            try:
                con.sql(q.sql)
                answered.append(q.id)
            except bamql.errors.BamqlError as e:
                if not str(e) or "\n" in str(e):
                    crashed.append(f"{q.id}: not one line: {e!r}")
            except Exception as e:  # noqa: BLE001 - the finding this test exists for
                crashed.append(f"{q.id}: {type(e).__name__}: {e}")
    assert not answered and not crashed, (answered, crashed)


@pytest.mark.parametrize(("shape", "ds_name", "queries"), CPU_CASES)
def test_cpu_matches_duckdb(workdir, datasets, refs, shape, ds_name, queries):
    ds = datasets[ds_name]
    out = run_queries(queries, ds, shape, Engine(), workdir, refs)
    assert out, "no query ran"
    bad = [o for o in out if o.status != "ok"]
    assert not bad, _report(bad)


#: Parquet read in place (the ``files`` shape): every 9th query over the data sets with
#: NULLs, NaN and row groups to prune, split in ``FILES_PARTS``: every 4th one of them in the
#: default run and the other three quarters in the slow run (``python -m tests.sql.corpus
#: --shapes files`` runs all of them over every data set)
FILES_EVERY = 9
FILES_PARTS = 4


@pytest.mark.parametrize("part", [pytest.param(0, id="sample"),
                                  *(pytest.param(k, marks=pytest.mark.slow, id=f"rest{k}")
                                    for k in range(1, FILES_PARTS))])
@pytest.mark.parametrize("ds_name", [
    # on the worker of the data set's CPU cases (``CPU_CASES``): a table read in place runs
    # the kernels of the stored table, which loads those of the queries the two have in common
    pytest.param(n, marks=pytest.mark.xdist_group(f"corpus-{n}"))
    for n in ("gen-0.01", "hostile", "hostile-empty")])
def test_files_in_place_match_duckdb(workdir, datasets, refs, ds_name, part):
    out = run_queries(QUERIES[::FILES_EVERY][part::FILES_PARTS], datasets[ds_name], FILES_SHAPE, Engine(),
                      workdir, refs)
    assert out, "no query ran"
    bad = [o for o in out if o.status != "ok"]
    assert not bad, _report(bad)


#: The simulator's part: tiny tables, two shapes (each query on both), every 25th query and
#: a few with more dependent columns than a 4-slot cache holds (Q1, Q5, an OR, a full scan).
#: In the simulator every CUDA thread is a Python thread: a 4-slot cache's waiters and loader
#: take turns on the GIL, and one query's time varies more than tenfold from run to run, so
#: only a long wait counts as a hang.
SIM_ARGS = ["--device", "gpu", "--shapes", "p4096-gnone-fauto-cnone-x1,p512-gauto-fauto-czstd-x3",
            "--spread", "1", "--datasets", "gen-0.01,hostile,hostile-one", "--gen-rows", "1500",
            "--hostile-scale", "0.25", "--every", "25", "--include",
            "selectivity:1,selectivity:5,selectivity:9,aggregates:7",
            "--quiet", "--hang-s", "300"]


@pytest.mark.slow
@pytest.mark.parametrize("cache", ["4", "default"], ids=["4slots", "default-cache"])
@pytest.mark.parametrize("backend", ["host", "gpu", "file"])
def test_simulated_gpu_matches_duckdb(tmp_path, backend, cache):
    """One process per engine: a hung kernel (logged as such) ends only its own run."""
    log = tmp_path / "sim.jsonl"
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", PYTHONWARNINGS="ignore")
    r = subprocess.run([sys.executable, "-m", "tests.sql.corpus", *SIM_ARGS, "--backends", backend,
                        "--caches", cache, "--log", str(log), "--workdir", str(tmp_path / "w")],
                       env=env, capture_output=True, text=True, timeout=900, cwd=REPO)
    lines = [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []
    summary = next((x for x in lines if x.get("summary")), None)
    assert summary is not None, r.stdout[-2000:] + r.stderr[-3000:]
    bad = [Outcome(**{k: v for k, v in x.items() if k in Outcome.__dataclass_fields__})
           for x in lines if x.get("status") not in (None, "ok")]
    assert not bad, _report(bad)
    assert summary["checks"] > 0 and summary["configurations"] == 2, summary
