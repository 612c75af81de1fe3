"""An ingest's scratch directory and processes: locked while in use, cleaned when stale,
removed on SIGTERM as on Ctrl-C, and worker processes that die with their parent.

An ingest writes into a hidden directory beside its target (``.NAME.ingest-PID-TOKEN``) and
holds an exclusive ``flock`` on a file inside it for as long as it runs. A later ingest of
the same name removes only the scratch directories whose lock it can take: their owner is
gone. A process ID says nothing across PID namespaces (containers, other hosts on a shared
file system), a lock does: the kernel drops it when its holder dies, however it dies.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import secrets
import shutil
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

LOCK = ".lock"
#: a scratch directory without a lock file (written by an older bamql, or caught between
#: its creation and its lock) is left alone for this long before it counts as stale
UNLOCKED_GRACE_S = 600.0


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


def clean_stale(out: Path) -> None:
    """Remove the scratch directories of ingests into ``out`` whose owner is gone."""
    for d in out.parent.glob(f".{out.name}.ingest-*"):
        try:
            fd = os.open(d / LOCK, os.O_RDWR)
        except FileNotFoundError:
            try:
                old = time.time() - d.stat().st_mtime > UNLOCKED_GRACE_S
            except OSError:
                continue
            if old:
                shutil.rmtree(d, ignore_errors=True)
            continue
        except OSError:
            continue  # not ours to judge (permissions): leave it
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            continue  # held: a live ingest, in this namespace or another
        else:
            shutil.rmtree(d, ignore_errors=True)
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
