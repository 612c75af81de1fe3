"""Shared fixtures: small generated taxi tables, as ORC and as page stores."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.orc as paorc
import pytest
from hypothesis import is_hypothesis_test, settings

from bamql.datasets.generator import GenParams, generate_chunk
from bamql.datasets.orc import write_orc
from bamql.storage.ingest import ingest

# Hypothesis example counts: "quick" in the default run, "full" in a run that selects the
# slow tests (``-m slow``); a test that names its own ``max_examples`` keeps it in both, or
# names both counts with :func:`examples`. Both draw the same examples on every run (a
# landing is judged on a reproducible suite); ``--hypothesis-profile explore`` draws fresh
# random examples, many of them, to hunt bugs.
settings.register_profile("quick", max_examples=6, derandomize=True, database=None)
settings.register_profile("full", max_examples=40, derandomize=True, database=None)
settings.register_profile("explore", max_examples=400, print_blob=True)


def examples(quick: int, full: int) -> int:
    """A test's own example count: ``quick`` in the default run, ``full`` where a run takes
    more than the quick profile's counts (``-m slow``, which runs every Hypothesis test
    again, or another ``--hypothesis-profile``). Read when the test's module is imported,
    after ``pytest_configure`` loaded the run's profile."""
    return quick if settings.default.max_examples <= settings.get_profile("quick").max_examples else full


# numba's parallel kernels run on GNU OpenMP, whose idle threads spin before they sleep: on
# a machine whose cores the pytest-xdist workers share, one worker's spinning threads take
# the CPU that the other's tests (the CUDA simulator's Python threads most) wait for. Passive
# threads sleep at once; the kernels and their thread counts stay the same.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def selects_slow(config) -> bool:
    """Whether this run's ``-m`` expression selects a test marked only ``slow``."""
    from _pytest.mark.expression import Expression

    expr = config.option.markexpr
    return bool(expr) and Expression.compile(expr).evaluate(lambda name, **kw: name == "slow" and not kw)


#: The kernel cache directory this process made for the run (removed when the run ends)
_OWN_CACHE = pytest.StashKey[str]()


def pytest_unconfigure(config):
    made = config.stash.get(_OWN_CACHE, None)
    if made is not None:
        shutil.rmtree(made, ignore_errors=True)


def pytest_configure(config):
    # generated kernels' disk cache (kernels.diskcache): one per test run, never the user's;
    # subprocesses started by tests share it
    if "BAMQL_CACHE_DIR" not in os.environ:
        os.environ["BAMQL_CACHE_DIR"] = tempfile.mkdtemp(prefix="bamql-test-cache-")
        config.stash[_OWN_CACHE] = os.environ["BAMQL_CACHE_DIR"]
    if getattr(config.option, "loadgroup", False):  # a pytest-xdist worker
        config.pluginmanager.register(_GroupsInNodeIds(), "bamql-xdist-groups")
    if not config.getoption("hypothesis_profile", None):
        settings.load_profile("full" if selects_slow(config) else "quick")
    if selects_slow(config):  # the slow matrix runs every CPU kernel with numba's parallel loops
        from bamql.kernels import cpu_loops

        cpu_loops.PARALLEL_ROWS = 0


def _named(config) -> list[str]:
    """The test ids named on the command line (``file::test`` or ``file::test[param]``), as
    node ids relative to the root directory."""
    out = []
    for arg in config.args:
        if "::" in arg:
            path, rest = arg.split("::", 1)
            full = (Path(config.invocation_params.dir) / path).resolve()
            try:
                out.append(f"{full.relative_to(config.rootpath).as_posix()}::{rest}")
            except ValueError:
                continue
    return out


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """The default run (no ``-m``) leaves out the tests marked ``slow`` unless they are named
    by id; ``-m`` chooses by its expression alone (``-m slow``: the slow rest, ``-m gpu``:
    every GPU test, slow or not). A run that selects slow tests also runs the Hypothesis
    tests again, with the full profile's example counts. Under pytest-xdist
    (``--dist loadgroup``) the GPU tests share one worker: one process at a time holds a
    page cache on the card."""
    for item in items:
        if item.get_closest_marker("gpu"):
            item.add_marker(pytest.mark.xdist_group("gpu"))
    if config.option.markexpr:
        if selects_slow(config):
            for item in items:
                if is_hypothesis_test(getattr(item, "obj", None)):
                    item.add_marker(pytest.mark.slow)
        return
    named = _named(config)
    keep, slow = [], []
    for item in items:
        wanted = any(item.nodeid == n or item.nodeid.startswith((n + "[", n + "::")) for n in named)
        (slow if item.get_closest_marker("slow") and not wanted else keep).append(item)
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = keep


def _group(item) -> str:
    """The pytest-xdist group of ``item`` as ``--dist loadgroup`` names it ("" for none); a
    GPU test's is "gpu" alone, whatever its module groups."""
    if item.get_closest_marker("gpu"):
        return "gpu"
    names = {str(m.args[0] if m.args else m.kwargs.get("name", "default"))
             for m in item.iter_markers("xdist_group")}
    return "_".join(sorted(names))


class _GroupsInNodeIds:
    """On a ``--dist loadgroup`` worker, each grouped test's node id ends in ``@<group>``:
    the scheduler groups tests by that suffix alone. pytest-xdist writes it into the node's
    ``_nodeid``, which pytest 9.2 no longer reads (pytest-xdist issue 1386): here it goes
    into the node's structured id, else every group is lost (the GPU tests' included)."""

    @pytest.hookimpl(wrapper=True)
    def pytest_collection_modifyitems(self, config, items):
        out = yield
        for item in items:
            group, nodeid = _group(item), item.nodeid
            if "@" in nodeid.rpartition("]")[2]:  # xdist's own suffix (pytest before 9.2)
                nodeid = nodeid.rpartition("@")[0]
            if not group or item.nodeid == f"{nodeid}@{group}":
                continue
            try:  # pytest internals: where they differ, the groups are lost, not the run
                if hasattr(item, "_id"):
                    item._id = type(item._id).parse(f"{nodeid}@{group}")
                else:
                    item._nodeid = f"{nodeid}@{group}"
            except Exception:
                return out
        return out


SAMPLE_DIR = Path(__file__).resolve().parents[1] / "tests" / "data" / "tlc-sample"
SAMPLES = sorted(SAMPLE_DIR.glob("yellow_tripdata_sample_2019-*.csv"))


@pytest.fixture(autouse=True)
def _plans_for_the_disk(monkeypatch):
    """Plans do not depend on what the OS page cache holds of a test's stores (a store just
    written is all in it): the planner assumes each medium as configured.
    ``tests/storage/test_residency.py`` turns the page cache back on."""
    monkeypatch.setattr("bamql.storage.residency._LIBC", None)


@pytest.fixture
def session(tmp_path):
    """A CPU session whose file cache is the test's own (files in FROM, registered tables);
    modules that query a store define their own ``session``. On a GPU machine
    ``BAMQL_TEST_DEVICE=gpu`` (and ``BAMQL_TEST_BACKEND``) runs the same tests on the GPU
    engine."""
    from bamql.api.session import Session
    from bamql.config import Config

    s = Session(config=Config(device=os.environ.get("BAMQL_TEST_DEVICE", "cpu"),
                              backend=os.environ.get("BAMQL_TEST_BACKEND") or None,
                              file_cache=tmp_path / "cache"))
    yield s
    s.close()


@pytest.fixture(scope="session")
def taxi_table() -> pa.Table:
    """60,000 generated trips, 0.5% in Williamsburg so that filters have matches."""
    return generate_chunk(GenParams(rows=60_000, seed=7, williamsburg_share=0.005), 0)


@pytest.fixture(scope="session")
def taxi_orc(tmp_path_factory, taxi_table) -> list[Path]:
    """The generated trips as two ORC files (rows split 2:1)."""
    d = tmp_path_factory.mktemp("orc")
    paths = [d / "a.orc", d / "b.orc"]
    write_orc([taxi_table.slice(0, 40_000)], paths[0])
    write_orc([taxi_table.slice(40_000)], paths[1])
    return paths


@pytest.fixture(scope="session")
def taxi_store(tmp_path_factory, taxi_orc) -> Path:
    """The generated trips as a page store (4 KiB pages, one volume); returns the data dir."""
    d = tmp_path_factory.mktemp("data")
    ingest(taxi_orc, d / "trips")
    return d


@pytest.fixture(scope="session")
def sample_store(tmp_path_factory) -> Path:
    """The real TLC sample (20,000 trips of 2019) as a page store of 512 B pages."""
    d = tmp_path_factory.mktemp("sample")
    ingest(SAMPLES, d / "trips", page_size=512)
    return d


def read_orc(paths) -> pa.Table:
    return pa.concat_tables(paorc.read_table(str(p)) for p in paths)


def edit_manifest(store: Path, change, keyed: bool = True) -> None:
    """Let ``change`` edit the manifest of ``store`` (a dict, in place) and seal it again, as
    someone who knows the format would: what the store then holds passes the seal. With
    ``keyed`` the keyed seal too, as one holding this machine's key would (the store is then
    trusted here: what a bug in bamql's own writer would leave); without it the keyed seal
    is left as it was (``storage.seal``: the store is then checked at open)."""
    import json

    from bamql.storage import seal
    from bamql.storage.format import MANIFEST, digest

    m = json.loads((store / MANIFEST).read_text())
    change(m)
    m["sha256"] = digest(m)
    if keyed and m.get("format_version", 0) >= 5 and seal.seal(m) is not None:
        m[seal.FIELD] = seal.seal(m)
    (store / MANIFEST).write_text(json.dumps(m))


def edit_pages_meta(store: Path, change, keyed: bool = True) -> None:
    """Let ``change`` edit the arrays of ``pages.npz`` of ``store`` (a dict, in place) and seal
    the file and the manifest again (``keyed``: as :func:`edit_manifest`)."""
    import hashlib
    import io

    import numpy as np

    from bamql.storage.format import PAGES_META

    with np.load(store / PAGES_META) as z:
        arrays = {k: z[k] for k in z.files}
    change(arrays)
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    (store / PAGES_META).write_bytes(buf.getvalue())
    edit_manifest(store, lambda m: m.update(pages_meta_sha256=hashlib.sha256(buf.getvalue()).hexdigest()),
                  keyed)
