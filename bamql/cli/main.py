"""The ``bamql`` command: gen, ingest, verify, info, sql, shell, serve, demo."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from bamql.config import Config
from bamql.errors import BamqlError

_EPILOG = "Errors print one line; set BAMQL_DEBUG=1 or pass --debug for a traceback."


def _version() -> str:
    """The installed package's version (the source tree's when it is not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("bamql")
    except PackageNotFoundError:
        return "unknown (not installed)"


class _Version(argparse.Action):
    """``--version``: looked up when asked for (``importlib.metadata`` takes a twentieth of a
    second, which every other command would pay when the parser is built)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS,
                 help=None):
        super().__init__(option_strings, dest, nargs=0, default=default, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"bamql {_version()}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``bamql`` command."""
    p = argparse.ArgumentParser(
        prog="bamql",
        description="SQL over NYC-taxi tables that fetches dependent columns only for matching "
        "rows, through a page cache (BaM-style), on GPU or CPU.",
        epilog=_EPILOG,
    )
    p.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    p.add_argument("--version", action=_Version, help="print the version and exit")
    sub = p.add_subparsers(dest="cmd", metavar="COMMAND", required=True)

    from bamql.cli.benchmarks import add_bench_commands
    from bamql.cli.data import add_data_commands
    from bamql.cli.serve import add_serve_command
    from bamql.cli.sql import add_sql_commands

    add_data_commands(sub)
    add_bench_commands(sub)
    add_sql_commands(sub)
    add_serve_command(sub)

    return p


def _one_line_notes() -> None:
    """bamql's own warnings (``KernelCacheWarning``, ``StoreWarning``) print as one line,
    ``bamql: note: ...``; other warnings as Python prints them."""
    import warnings

    from bamql.errors import KernelCacheWarning, StoreWarning

    default = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, (KernelCacheWarning, StoreWarning)):
            print(f"bamql: note: {message}", file=sys.stderr)
        else:
            default(message, category, filename, lineno, file, line)

    warnings.showwarning = show


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``bamql`` command; returns the exit code. Run as the command
    (``argv`` None), a ``bamql sql`` leaves its objects to the OS at exit (``_skip_teardown``)."""
    _one_line_notes()
    parser = build_parser()
    a = parser.parse_args(argv)
    if argv is None and a.cmd in ("sql", "shell"):  # the command itself: no pandas object
        from bamql.storage.arrownp import without_pandas  # here, none for pyarrow to look for

        without_pandas()
    rc = _run(a)
    if argv is None and a.cmd == "sql":  # one query, answered: the process ends next
        _skip_teardown()
    return rc


def _run(a: argparse.Namespace) -> int:
    """Run the parsed command ``a``; its exit code, its errors one line each."""
    debug = a.debug
    try:
        debug = debug or Config.from_env().debug  # BAMQL_DEBUG
        return a.func(a)
    except BamqlError as e:
        if debug:
            raise
        print(f"bamql: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("bamql: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # unexpected: still one line unless debugging
        if debug:
            raise
        print(f"bamql: internal error: {type(e).__name__}: {e} (rerun with --debug)", file=sys.stderr)
        return 2


def _skip_teardown() -> None:
    """Leave what a one-shot command made to the OS at exit, not to the garbage collector.

    The interpreter's exit collects every cycle of objects left, numba's and LLVM's among
    them, which takes longer than a small query; once ``bamql sql`` has printed its answer
    and closed its session, nothing is left that needs it. The collector is stopped and the
    objects moved where it never looks (``gc.freeze``); the exit still runs the ``atexit``
    handlers, waits for threads and flushes the output as always.
    """
    import gc

    gc.disable()
    gc.freeze()


if __name__ == "__main__":
    sys.exit(main())
