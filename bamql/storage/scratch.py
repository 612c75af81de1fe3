"""An ingest's scratch directory and processes: locked while in use, cleaned when stale,
removed on SIGTERM as on Ctrl-C, and worker processes that die with their parent.

An ingest writes into a hidden directory beside its target (``.NAME.ingest-PID-TOKEN``) and
holds an exclusive ``flock`` on a file inside it for as long as it runs. A later ingest of
the same name, and every open of the table (``partitioned.open_table``), removes only the
scratch directories whose lock it can take: their owner is gone. A process ID says nothing
across PID namespaces (containers, other hosts on a shared file system), a lock does: the
kernel drops it when its holder dies, however it dies. The PID only holds back the removal
of a directory whose lock is free while that process lives here (it may be between making
its lock file and taking the lock) until the lock file is ``LIVE_GRACE_S`` old.

Appends to a table take ``.NAME.append.lock`` (:func:`append_lock`); the lock file goes when
the append ends, and one left by a killed append (its lock free) goes at the next open.

A partitioned ingest's workers (spawned processes) die with it: each asks the kernel for
SIGKILL when its parent dies (``PR_SET_PDEATHSIG``, Linux) once it has started, and until
then a watchdog (:class:`Lifeline`, a small process started first, blocked on a pipe that
only the ingest holds) kills them the moment the ingest is gone, however it dies: a spawned
worker takes long to start (it imports the main module and bamql) and would otherwise run
on, orphaned, until it could take its first instruction.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

LOCK = ".lock"
#: a scratch directory without a lock file (written by an older bamql, or caught between
#: its creation and its lock) is left alone for this long before it counts as stale
UNLOCKED_GRACE_S = 600.0
#: a scratch directory whose lock is free but whose PID lives here, or without a lock file
#: and whose PID is dead here, is left alone for this long (its lock file's or its own age)
LIVE_GRACE_S = 10.0
_PID = re.compile(r"\.ingest-(\d+)-")


class Scratch:
    """The scratch directory of one ingest into ``out``, locked until :meth:`release`."""

    def __init__(self, out: Path) -> None:
        self.path = out.parent / f".{out.name}.ingest-{os.getpid()}-{secrets.token_hex(4)}"
        self.path.mkdir()
        self._fd = -1
        try:
            self._fd = os.open(self.path / LOCK, os.O_CREAT | os.O_RDWR, 0o600)
            fcntl.flock(self._fd, fcntl.LOCK_EX)
        except BaseException:  # a full or read-only file system: leave nothing behind
            self.release()
            shutil.rmtree(self.path, ignore_errors=True)
            raise

    def finish(self) -> None:
        """Drop the lock file before the directory becomes the table."""
        os.unlink(self.path / LOCK)

    def release(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)  # the lock goes with the descriptor
            self._fd = -1


def _alive(pid: int | None) -> bool:
    """Whether process ``pid`` lives in this PID namespace (None: unknown, taken as alive)."""
    if pid is None:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's
        return True
    return True


def clean_stale(out: Path) -> None:
    """Remove the scratch directories of ingests into ``out`` whose owner is gone: their lock
    is free (held back while their PID lives here and the lock is young), or they have no
    lock file and are old (sooner where their PID is dead here)."""
    for d in out.parent.glob(f".{out.name}.ingest-*"):
        m = _PID.search(d.name)
        pid = int(m.group(1)) if m else None
        try:
            fd = os.open(d / LOCK, os.O_RDWR)
        except FileNotFoundError:
            try:
                age = time.time() - d.lstat().st_mtime
            except OSError:
                continue
            if age > UNLOCKED_GRACE_S or (age > LIVE_GRACE_S and not _alive(pid)):
                shutil.rmtree(d, ignore_errors=True)
            continue
        except OSError:
            continue  # not ours to judge (permissions): leave it
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            continue  # held: a live ingest, in this namespace or another
        else:
            if not _alive(pid) or time.time() - os.fstat(fd).st_mtime > LIVE_GRACE_S:
                shutil.rmtree(d, ignore_errors=True)
        finally:
            os.close(fd)


def append_lock_path(out: Path) -> Path:
    """The lock file that appends to the table ``out`` take, beside it."""
    return out.parent / f".{out.name}.append.lock"


def _same_file(fd: int, path: Path) -> bool:
    try:
        a, b = os.fstat(fd), os.stat(path)
    except FileNotFoundError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


@contextlib.contextmanager
def append_lock(out: Path) -> Iterator[None]:
    """An exclusive lock beside ``out`` for the length of one append; its file is removed when
    the append ends (while still locked, so that a waiter retries on a new file)."""
    path = append_lock_path(out)
    while True:
        fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except BaseException:
            os.close(fd)
            raise
        if _same_file(fd, path):  # not removed by the append or the open before us
            break
        os.close(fd)
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)
        os.close(fd)


def clean_leftovers(out: Path) -> None:
    """Remove what dead ingests and appends into the table ``out`` left beside it: their
    scratch directories (:func:`clean_stale`) and an append lock file nobody holds. Nothing
    of a live one; nothing at all where the directory cannot be written (a read-only table)."""
    with contextlib.suppress(OSError):
        clean_stale(out)
    path = append_lock_path(out)
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        if _same_file(fd, path):  # held by us now: no append runs
            os.unlink(path)
    except OSError:
        pass  # held: an append runs
    finally:
        os.close(fd)


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM raises ``KeyboardInterrupt`` (as Ctrl-C does), so cleanup
    runs; only where this thread may set handlers and SIGTERM has its default action."""
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL):
        yield
        return

    def interrupt(signum, frame):
        raise KeyboardInterrupt("terminated")

    signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


_PR_SET_PDEATHSIG = 1

#: The watchdog's program (``python -I -S -c``: no site, nothing imported but os and signal):
#: PIDs come in on stdin, a line each; ``done`` ends it quietly; end of file (its parent gone,
#: however it died) kills every process named, through a pidfd taken while it lived where
#: the system has them (a PID reused meanwhile is then never hit).
_WATCHDOG = """
import os, signal
signal.signal(signal.SIGINT, signal.SIG_IGN)
procs, buf = [], b""
while True:
    try:
        data = os.read(0, 4096)
    except InterruptedError:
        continue
    if not data:
        break
    buf += data
    *lines, buf = buf.split(b"\\n")
    for line in lines:
        if line == b"done":
            raise SystemExit(0)
        pid = int(line)
        try:
            procs.append((pid, os.pidfd_open(pid)))
        except (AttributeError, OSError):
            procs.append((pid, None))
for pid, fd in procs:
    try:
        if fd is None:
            os.kill(pid, signal.SIGKILL)
        else:
            signal.pidfd_send_signal(fd, signal.SIGKILL)
    except OSError:
        pass
"""


class Lifeline:
    """A watchdog that kills the processes :meth:`watch` names the moment this process dies
    (``kill -9`` too), before they could notice it themselves; :meth:`close` stops it."""

    def __init__(self) -> None:
        try:
            self._proc: subprocess.Popen | None = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _WATCHDOG], stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, close_fds=True)
        except OSError:  # no watchdog: the workers still die once started (die_with_parent)
            self._proc = None

    def watch(self, pids: Iterable[int]) -> None:
        """Kill the processes ``pids`` when this process dies."""
        data = b"".join(b"%d\n" % p for p in pids)
        if self._proc is not None and data:
            try:
                self._proc.stdin.write(data)
                self._proc.stdin.flush()
            except OSError:  # the watchdog died: the workers' own requests remain
                pass

    def close(self) -> None:
        """Stop the watchdog without it killing anything."""
        if self._proc is None:
            return
        with contextlib.suppress(OSError):
            self._proc.stdin.write(b"done\n")
            self._proc.stdin.close()
        try:
            self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._proc = None

    def __enter__(self) -> Lifeline:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def die_with_parent(parent: int) -> None:
    """Worker initializer: the kernel kills this process when its parent dies (Linux), so a
    killed ingest leaves no orphaned workers; elsewhere a thread watches the parent."""
    if sys.platform == "linux":
        try:
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)
    if sys.platform != "linux":

        def watch() -> None:
            while os.getppid() == parent:
                time.sleep(1.0)
            os._exit(1)

        threading.Thread(target=watch, daemon=True, name="bamql-parent-watch").start()
