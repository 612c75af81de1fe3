"""An ingest's scratch directory and processes: locks rather than PIDs, SIGTERM cleans up,
workers die with their parent, a table replaced while opening is a clear error."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from bamql.errors import StoreError
from bamql.storage.scratch import LOCK, Scratch, clean_stale

ROOT = Path(__file__).resolve().parents[2]


def test_a_live_ingest_in_another_pid_namespace_keeps_its_scratch_directory(tmp_path):
    # a PID this process cannot see (another container, another host on a shared file
    # system) used to count as dead, and the live ingest's directory was deleted
    out = tmp_path / "trips"
    live = tmp_path / f".trips.ingest-{2**22 + 12345}-abcd"
    live.mkdir()
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import fcntl, os, sys, time
        fd = os.open({str(live / LOCK)!r}, os.O_CREAT | os.O_RDWR)
        fcntl.flock(fd, fcntl.LOCK_EX)
        print("locked", flush=True)
        time.sleep(60)
    """)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        clean_stale(out)
        assert live.exists()
    finally:
        holder.kill()
        holder.wait()
    clean_stale(out)  # its holder is gone: the lock is free, the directory stale
    assert not live.exists()


def test_own_scratch_is_locked_until_released(tmp_path):
    out = tmp_path / "trips"
    s = Scratch(out)
    clean_stale(out)
    assert s.path.exists()
    fd = os.open(s.path / LOCK, os.O_RDWR)
    with pytest.raises(OSError):
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    os.close(fd)
    s.release()
    # free, but its PID (this process) lives: it could be between making its lock file and
    # taking the lock, so the directory stays while the lock file is young
    clean_stale(out)
    assert s.path.exists()
    old = time.time() - 60
    os.utime(s.path / LOCK, (old, old))
    clean_stale(out)
    assert not s.path.exists()


def test_a_lock_that_cannot_be_made_leaves_no_directory(tmp_path, monkeypatch):
    import bamql.storage.scratch as scratch_mod

    real = os.open

    def full(path, *a, **k):
        if str(path).endswith(LOCK):
            raise OSError(28, "No space left on device", str(path))
        return real(path, *a, **k)

    monkeypatch.setattr(scratch_mod.os, "open", full)
    with pytest.raises(OSError):
        Scratch(tmp_path / "trips")
    assert list(tmp_path.iterdir()) == []


def test_an_unlocked_scratch_directory_is_left_alone_while_young(tmp_path):
    out = tmp_path / "trips"
    young = tmp_path / ".trips.ingest-1-abcd"
    young.mkdir()
    clean_stale(out)
    assert young.exists()
    old = time.time() - 3600
    os.utime(young, (old, old))
    clean_stale(out)
    assert not young.exists()


SLOW_INGEST = textwrap.dedent("""
    import sys
    from pathlib import Path
    from bamql.datasets.generator import GenParams, generate_chunk
    import pyarrow.parquet as pq
    import importlib
    ing = importlib.import_module("bamql.storage.ingest")

    d = Path(sys.argv[1])
    pq.write_table(generate_chunk(GenParams(rows=20_000, seed=1), 0), d / "t.parquet")
    real = ing.to_storage

    def slow(a, pl):  # an ingest that takes long enough to be signalled mid-way
        import time
        time.sleep(0.05)
        return real(a, pl)

    ing.to_storage = slow
    print("start", flush=True)
    ing.ingest([d / "t.parquet"], d / "out" / "trips")
""")


def test_sigterm_removes_the_scratch_directory_as_ctrl_c_does(tmp_path):
    p = subprocess.Popen([sys.executable, "-c", SLOW_INGEST, str(tmp_path)], cwd=ROOT,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "start"
    deadline = time.time() + 60
    while not list((tmp_path / "out").glob(".trips.ingest-*")) and time.time() < deadline:
        time.sleep(0.05)
    assert list((tmp_path / "out").glob(".trips.ingest-*")), "the ingest never started writing"
    p.send_signal(signal.SIGTERM)
    p.wait(timeout=60)
    assert p.returncode != 0
    assert not list((tmp_path / "out").glob(".trips.ingest-*"))
    assert not (tmp_path / "out" / "trips").exists()


ORPHAN = textwrap.dedent("""
    import os, time
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context
    from bamql.storage.scratch import die_with_parent

    if __name__ == "__main__":
        ex = ProcessPoolExecutor(1, mp_context=get_context("spawn"), initializer=die_with_parent,
                                 initargs=(os.getpid(),))
        print(ex.submit(os.getpid).result(), flush=True)
        ex.submit(time.sleep, 120)
        time.sleep(120)
""")


@pytest.mark.skipif(sys.platform != "linux", reason="PR_SET_PDEATHSIG is Linux's")
def test_ingest_workers_die_with_a_killed_parent(tmp_path):
    script = tmp_path / "orphan.py"  # spawned workers re-import the main module from a file
    script.write_text(ORPHAN)
    p = subprocess.Popen([sys.executable, str(script)], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    worker = int(p.stdout.readline())
    os.kill(worker, 0)  # alive
    p.kill()
    p.wait()
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            os.kill(worker, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    os.kill(worker, signal.SIGKILL)
    pytest.fail("the worker outlived its killed parent")


def test_a_table_removed_while_opening_is_a_clear_error(taxi_store, monkeypatch):
    from bamql.storage import store as store_mod
    from bamql.storage.partitioned import open_table

    real = store_mod.os.open

    def vanished(path, *a, **k):
        if str(path).endswith(".bin"):
            raise FileNotFoundError(2, "No such file or directory", str(path))
        return real(path, *a, **k)

    monkeypatch.setattr(store_mod.os, "open", vanished)
    with pytest.raises(StoreError, match="changed or was removed while it was being opened"):
        open_table(taxi_store / "trips")


# -- issue 41: no leftovers after kill -9 ---------------------------------------------------

PARTITIONED = textwrap.dedent("""
    import sys, time
    if __name__ == "__mp_main__":  # a spawned worker: its start takes long (heavy imports)
        time.sleep(float(sys.argv[2]))
    from pathlib import Path

    if __name__ == "__main__":
        import pyarrow.parquet as pq
        from bamql.datasets.generator import GenParams, generate_chunk
        from bamql.storage.ingest import ingest

        d = Path(sys.argv[1])
        pq.write_table(generate_chunk(GenParams(rows=20_000, seed=1), 0), d / "t.parquet")
        print("start", flush=True)
        ingest([d / "t.parquet"], d / "out" / "trips", partitions=4)
""")


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (Linux /proc)."""
    out = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                stat = (p / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(p.name))
    return out


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state in ("Z", "X")


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
@pytest.mark.skipif(os.cpu_count() == 1, reason="one core: the partitions are written in-process")
def test_partition_workers_die_at_once_with_a_killed_ingest_even_while_starting(tmp_path):
    """Issue 41: after kill -9 of a partitioned ingest, its workers ran on until they had
    started (imported the main module and bamql: ~1.5 s) and could see their parent gone.
    Here a worker takes 20 s to start; it must be gone within moments of the kill."""
    script = tmp_path / "ingest4.py"  # spawned workers re-import the main module from a file
    script.write_text(PARTITIONED)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # this tree's bamql, in the workers too
    p = subprocess.Popen([sys.executable, str(script), str(tmp_path), "20"], cwd=ROOT, env=env,
                         stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "start"
        deadline = time.time() + 60
        workers: list[int] = []
        while time.time() < deadline:
            workers = [c for c in _children(p.pid)
                       if b"multiprocessing" in Path(f"/proc/{c}/cmdline").read_bytes()]
            if len(workers) >= 2:
                break
            time.sleep(0.02)
        assert len(workers) >= 2, "the workers never started"
        time.sleep(0.3)  # the watchdog has been told of them
        kids = _children(p.pid)
    finally:
        p.kill()
        p.wait()
    t0 = time.time()
    left = set(kids)
    while left and time.time() - t0 < 5:
        left = {k for k in left if not _gone(k)}
        time.sleep(0.02)
    for k in left:
        os.kill(k, signal.SIGKILL)
    assert not left, f"{len(left)} process(es) outlived the killed ingest by 5 s"
    assert time.time() - t0 < 2


SLOW_APPEND = textwrap.dedent("""
    import sys
    from pathlib import Path
    import importlib
    import pyarrow.parquet as pq
    from bamql.datasets.generator import GenParams, generate_chunk
    ing = importlib.import_module("bamql.storage.ingest")

    d = Path(sys.argv[1])
    pq.write_table(generate_chunk(GenParams(rows=20_000, seed=2), 0), d / "more.parquet")
    real = ing.to_storage

    def slow(a, pl):  # an append that takes long enough to be killed mid-way
        import time
        time.sleep(0.05)
        return real(a, pl)

    ing.to_storage = slow
    print("start", flush=True)
    ing.append([d / "more.parquet"], d / "out" / "trips")
""")


def test_what_a_killed_append_leaves_goes_at_the_next_open_not_while_it_runs(tmp_path):
    """Issue 41: a killed ingest's scratch directory and the append lock stayed until the
    next ingest into the table; now the next open of the table removes them, and an open
    while the append runs leaves them be."""
    import pyarrow.parquet as pq

    from bamql.datasets.generator import GenParams, generate_chunk
    from bamql.storage.ingest import ingest
    from bamql.storage.partitioned import open_table

    pq.write_table(generate_chunk(GenParams(rows=3000, seed=1), 0), tmp_path / "t.parquet")
    out = tmp_path / "out" / "trips"
    ingest([tmp_path / "t.parquet"], out)
    lock = out.parent / ".trips.append.lock"
    p = subprocess.Popen([sys.executable, "-c", SLOW_APPEND, str(tmp_path)], cwd=ROOT,
                         stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "start"
        deadline = time.time() + 60
        while not list(out.parent.glob(".trips.ingest-*")) and time.time() < deadline:
            time.sleep(0.05)
        scratch = list(out.parent.glob(".trips.ingest-*"))
        assert scratch and lock.exists(), "the append never started writing"
        time.sleep(0.2)
        with open_table(out) as t:  # a live append's files stay
            assert t.rows == 3000
        assert scratch[0].exists() and lock.exists()
    finally:
        p.kill()
        p.wait()
    assert scratch[0].exists() and lock.exists()  # left behind, as before
    with open_table(out) as t:
        assert t.rows == 3000
    assert not scratch[0].exists() and not lock.exists()
    assert sorted(x.name for x in out.parent.iterdir()) == ["trips"]


def test_an_append_leaves_no_lock_file_and_waiters_take_turns(tmp_path):
    import threading

    from bamql.storage.scratch import append_lock, append_lock_path, clean_leftovers

    out = tmp_path / "trips"
    inside, order = threading.Event(), []

    def second():
        inside.wait()
        with append_lock(out):
            order.append("second")

    th = threading.Thread(target=second)
    th.start()
    with append_lock(out):
        inside.set()
        time.sleep(0.2)
        clean_leftovers(out)  # held: not removed
        assert append_lock_path(out).exists()
        order.append("first")
    th.join(10)
    assert order == ["first", "second"]
    assert not append_lock_path(out).exists()
