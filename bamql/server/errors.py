"""The errors a client of ``bamql serve`` sees: one line each, without a traceback, a path of
the server's install or its process id, with the gRPC status that says whose it is."""

from __future__ import annotations

import functools
import json
import logging
import re
import site
import sys
import sysconfig
import threading
import traceback
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.flight as fl

from bamql.api import wire
from bamql.errors import BamqlError, OutOfRangeError, PlanError, UsageError

log = logging.getLogger("bamql.server")

#: the bamql errors that are a client's own (INVALID_ARGUMENT: ADBC's ProgrammingError)
_CLIENTS = (PlanError, UsageError, OutOfRangeError)


class OneLine(Exception):
    """An error of the server's own that pyarrow turns into an Arrow status itself: an
    INVALID_ARGUMENT or UNIMPLEMENTED answer, or any error of ``get_schema`` (whose pyarrow
    callback takes no Flight error). pyarrow appends the traceback of such an exception to
    the message it sends; :func:`one_line_details` makes that one word instead."""

    detail = "failed"


class Refused(OneLine, pa.ArrowInvalid):
    """A request that is the client's mistake (INVALID_ARGUMENT: ADBC raises
    ProgrammingError): one beyond a limit of the server, or a query's PlanError, UsageError
    or OutOfRangeError. Its message is ``Class: message`` of the bamql error a bamql client
    raises."""

    detail = "refused"


class NotFound(OneLine, pa.ArrowKeyError):
    """A ticket or prepared statement the server does not hold (NOT_FOUND: ADBC raises
    ProgrammingError); its message is ``Class: message`` as :class:`Refused`'s."""

    detail = "not found"


class Unsupported(OneLine, NotImplementedError):
    """A call the server does not take (UNIMPLEMENTED)."""

    detail = "unsupported"


class Failed(OneLine):
    """Any other error of ``get_schema`` (UNKNOWN)."""


#: held while the hooks of ``traceback`` and ``sys`` are replaced
FORMAT_LOCK = threading.Lock()


def one_line_details() -> None:
    """Have ``traceback.format_exception`` give one word (``OneLine.detail``) for the
    server's ``OneLine`` errors, and everything else as before.

    pyarrow's Flight server turns a Python exception of a handler (other than a Flight error)
    into the message it sends with ``traceback.format_exception``: a traceback holding the
    paths of the server's install. Its ``get_schema`` callback takes no Flight error at
    all, and INVALID_ARGUMENT and UNIMPLEMENTED come only from such exceptions."""
    with FORMAT_LOCK:
        fmt = traceback.format_exception
        if getattr(fmt, "bamql_one_line", False):
            return

        def format_exception(exc, /, *args, **kw):
            value = args[0] if args else kw.get("value", exc)
            if isinstance(value, OneLine):
                return [type(value).detail]
            return fmt(exc, *args, **kw)

        format_exception.__doc__ = fmt.__doc__
        format_exception.bamql_one_line = True  # type: ignore[attr-defined]
        traceback.format_exception = format_exception


@functools.cache
def _install_dirs() -> list[str]:
    """The directories of bamql's and Python's install (longest first), which no error sent
    to a client names."""
    here = Path(__file__).parent.parent  # the bamql package
    dirs = {str(here), str(here.resolve()), *site.getsitepackages()}
    if site.ENABLE_USER_SITE:
        dirs.add(site.getusersitepackages())
    dirs.update(v for k, v in sysconfig.get_paths().items() if k in ("stdlib", "platstdlib",
                                                                     "purelib", "platlib"))
    dirs.update((sys.prefix, sys.base_prefix, sys.exec_prefix))
    # a prefix of one level (/usr) would hide every path beneath it
    return sorted((d for d in dirs if d and len(Path(d).parts) > 2), key=len, reverse=True)


_PROC = re.compile(r"/proc/\d+")


def _scrub(text: str) -> str:
    """``text`` without the paths of the server's install and its process id."""
    for d in _install_dirs():
        text = re.sub(re.escape(d) + r"(?![^/\s'\":,)])[^\s'\":,)]*", "<server path>", text)
    return _PROC.sub("/proc/<pid>", text)


def _first_line(e: BaseException) -> str:
    return _scrub((str(e).strip().splitlines() or [""])[0])


def client_error(e: Exception, one_line: bool = False) -> Exception:
    """The one-line error a client is sent for ``e``. ``one_line``: for ``get_schema``,
    whose pyarrow callback sends a Flight error with its traceback (UNKNOWN then, as any
    other error there)."""
    if isinstance(e, OneLine):
        return e
    if isinstance(e, fl.FlightError):  # the server's own (time, load), or pyarrow's
        text = _first_line(e)
        return Failed(text) if one_line else type(e)(text, extra_info=e.extra_info)
    if isinstance(e, BamqlError):
        msg, info = wire.error_info(e)
        d = json.loads(info)
        d["message"] = _scrub(d["message"])
        msg = _scrub(msg)
        if isinstance(e, _CLIENTS):  # Class: message on one line, as the client reads it
            return Refused(" ".join(msg.split("\n")))
        return Failed(msg) if one_line else fl.FlightServerError(msg,
                                                                    extra_info=json.dumps(d).encode())
    log.error("a call failed", exc_info=e)
    text = f"internal error: {type(e).__name__}: {_first_line(e)}"
    return Failed(text) if one_line else fl.FlightInternalError(text)


def guard(fn: Callable, *args, one_line: bool = False):
    """``fn(*args)``, its failures as errors of one line (:func:`client_error`)."""
    try:
        return fn(*args)
    except Exception as e:
        raise client_error(e, one_line) from None
