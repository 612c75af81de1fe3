"""What keeps one client of ``bamql serve`` from starving the others: the nesting of a query's
parentheses (or a command's JSON), and queries run in threads of their own under a time limit,
at most so many at once."""

from __future__ import annotations

import ctypes
import itertools
import json
import re
import sys
import threading
from collections.abc import Callable

import numpy as np
import pyarrow.flight as fl

from bamql.server.errors import FORMAT_LOCK

#: what hides parentheses from the nesting count of SQL: string literals, quoted names,
#: comments, dollar-quoted strings (each may run to the end of the text unclosed, so that no
#: match is tried again from a later start)
_SQL_QUOTED = re.compile(r"'[^']*(?:''[^']*)*'?|\"[^\"]*(?:\"\"[^\"]*)*\"?|--[^\n]*"
                         r"|/\*(?:.*?\*/|.*)|\$\$(?:.*?\$\$|.*)", re.DOTALL)
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"?', re.DOTALL)


def _depth(data: bytes, opens: bytes, closes: bytes) -> int:
    """The deepest nesting of the brackets ``opens``/``closes`` in ``data``."""
    a = np.frombuffer(data, np.uint8)
    step = np.isin(a, list(opens)).astype(np.int32) - np.isin(a, list(closes))
    return int(np.cumsum(step).max(initial=0))


def sql_nesting(text: str) -> int:
    """How deeply the parentheses of a query nest (outside its strings, quoted names and
    comments)."""
    return _depth(_SQL_QUOTED.sub(" ", text).encode("utf-8", "surrogatepass"), b"(", b")")


def json_nesting(data: bytes) -> int:
    """How deeply the arrays and objects of a JSON text nest."""
    return _depth(_JSON_STRING.sub(b" ", data), b"[{", b"]}")


#: seconds between the interrupts of a query that runs on past its first
_AGAIN_S = 1.0


class _Interrupted(BaseException):
    """Raised in a query's thread to stop it (past its time): no ``except Exception`` of the
    engine holds it up."""


def quiet_lost_interrupts() -> None:
    """Have ``sys.unraisablehook`` pass over an interrupt that Python dropped (raised in a
    finalizer or a callback of C code; the query is interrupted again) instead of printing
    its traceback; everything else as before."""
    with FORMAT_LOCK:
        hook = sys.unraisablehook
        if getattr(hook, "bamql_quiet", False):
            return

        def unraisable(u):
            if not isinstance(u.exc_value, _Interrupted):
                hook(u)

        unraisable.bamql_quiet = True  # type: ignore[attr-defined]
        sys.unraisablehook = unraisable


def _raise_in(thread: threading.Thread, exc: type[BaseException] | None) -> None:
    """Raise ``exc`` in ``thread`` at its next Python step (None: take back one not yet
    raised)."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident),
                                               ctypes.py_object(exc) if exc else None)


class _Query:
    """One query run in a thread of its own, so that the call waiting for it can answer in
    time while it runs on, and stop it."""

    _ids = itertools.count(1)

    def __init__(self, fn: Callable, args: tuple, ended: Callable[[_Query], None]) -> None:
        self._fn, self._args, self._ended = fn, args, ended
        self._lock = threading.Lock()
        self._state = "running"  # -> "interrupted" -> "finished"
        self.done = threading.Event()
        self.value: object = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._main, daemon=True,
                                       name=f"bamql-query-{next(self._ids)}")

    def _main(self) -> None:
        try:
            try:
                try:
                    self.value = self._fn(*self._args)
                except BaseException as e:  # handed to the call that waits
                    self.error = e
                self._settle()
            except _Interrupted:  # it came after the work, while settling: settle again
                self._settle()
        finally:
            self.done.set()
            self._ended(self)

    def _settle(self) -> None:
        """Mark the work finished and take back an interrupt not yet raised: none comes
        after."""
        with self._lock:
            self._state = "finished"
            _raise_in(self.thread, None)

    def interrupt(self) -> bool:
        """Stop the query at its next Python step; False where it has already finished.

        An exception raised where Python drops it (in a callback of C code, a finalizer) is
        lost: the query is interrupted again each second until its thread has stopped."""
        with self._lock:
            if self._state != "running":
                return False
            self._state = "interrupted"
            _raise_in(self.thread, _Interrupted)
        threading.Thread(target=self._again, daemon=True, name=f"{self.thread.name}-stop").start()
        return True

    def _again(self) -> None:
        while not self.done.wait(_AGAIN_S) and self.thread.is_alive():
            with self._lock:
                if self._state != "interrupted":
                    return
                _raise_in(self.thread, _Interrupted)

    def result(self):
        if self.error is not None:
            raise self.error
        return self.value


class Runner:
    """Runs queries under the server's time limit, at most so many at once."""

    def __init__(self, timeout: float, most: int) -> None:
        self.timeout = timeout or None
        self.most = most
        self._lock = threading.Lock()
        self._running: set[_Query] = set()

    def running(self) -> int:
        """The queries running now, interrupted ones that have not yet stopped included."""
        with self._lock:
            return len(self._running)

    def _ended(self, q: _Query) -> None:
        with self._lock:
            self._running.discard(q)

    def run(self, fn: Callable, *args):
        q = _Query(fn, args, self._ended)
        with self._lock:
            if len(self._running) >= self.most:
                raise fl.FlightUnavailableError(
                    f"the server is running as many queries as it takes ({self.most}, "
                    "BAMQL_SERVER_MAX_QUERIES); try again shortly",
                    extra_info=info("ServerError", "busy"))
            self._running.add(q)
        try:
            q.thread.start()
        except BaseException:
            self._ended(q)
            raise
        if not q.done.wait(self.timeout) and q.interrupt():
            msg = (f"the query ran past this server's limit of {self.timeout:g} s "
                   "(BAMQL_SERVER_QUERY_TIMEOUT) and was stopped")
            raise fl.FlightTimedOutError(msg, extra_info=info("ServerError", msg))
        q.done.wait()
        return q.result()


def info(cls: str, message: str) -> bytes:
    """The ``extra_info`` of a Flight error that a bamql client raises as ``cls``."""
    return json.dumps({"class": cls, "message": message}).encode()
