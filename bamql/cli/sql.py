"""The query commands of the CLI: ``bamql sql``, ``bamql shell`` and ``bamql serve``.

Building the parser imports nothing heavy: each command imports the session, the output
and the server when it runs, so that ``bamql --help`` stays quick."""

from __future__ import annotations

import argparse
import sys

from bamql.cli.output import FORMATS
from bamql.config import Backend, Device
from bamql.errors import UsageError


def _connect(a: argparse.Namespace):
    if getattr(a, "server", None):  # the server holds the tables and the settings
        from bamql.api.remote_session import RemoteSession

        if a.data is not None or a.device != "auto" or a.backend or a.cache or a.cluster \
                or a.cache_files:
            raise UsageError("with --server, the tables and the device are the server's "
                             "(bamql serve DIR --device ...): give no DIR, --device, --backend, "
                             "--cache or --cluster")
        return RemoteSession(a.server, token=a.token, tls_root_certs=a.tls_root_certs)
    from bamql.api.connection import connect
    from bamql.progress import ingest_progress

    s = connect(a.data, device=a.device, backend=a.backend, cache=a.cache, cluster=a.cluster,
                cache_files=a.cache_files)
    s.file_progress = ingest_progress  # files named in FROM: their first ingest's bars
    if getattr(a, "verbose", False):  # quiet by default, as DuckDB
        engine = f"using the GPU engine ({s.backend.value} backend)" if s.gpu is not None \
            else "using the CPU engine"
        print(f"bamql: {s.note or engine}", file=sys.stderr)
    return s


def cmd_sql(a: argparse.Namespace) -> int:
    from bamql.cli.output import render

    if a.backend is None and not getattr(a, "server", None):
        # one query: reading the pages it needs from the files beats pinning the table
        a.backend = Backend.FILE.value
    with _connect(a) as s:
        res = s.sql(a.query)
        if res.is_explain:
            print("\n".join(res.table["explain"].to_pylist()))
        else:
            print(render(res.table, a.format))
            if a.stats and res.stats is not None:
                print(res.stats.table_text(), file=sys.stderr)
    return 0


def cmd_shell(a: argparse.Namespace) -> int:
    from bamql.cli.shell import Shell

    with _connect(a) as s:
        # --debug adds a traceback to the shell's one-line internal errors
        return Shell(s, debug=getattr(a, "debug", False) or None, config=s.config,
                     interactive=sys.stdin.isatty()).loop()


def add_engine_options(p: argparse.ArgumentParser) -> None:
    """``--device``, ``--backend`` and ``--cache``, as every command that opens a session
    takes them."""
    p.add_argument("--device", default="auto", choices=[d.value for d in Device],
                   help="auto (GPU if one works, else CPU), cpu or gpu")
    p.add_argument("--backend", default=None, choices=[b.value for b in Backend],
                   help="GPU: where page misses come from: host (the table pinned in host memory), "
                   "gpu (resident in GPU memory) or file (read from disk as pages are needed); "
                   "default file for a one-shot `bamql sql`, host for a shell or a server")
    p.add_argument("--cache", default=None, metavar="SIZE",
                   help="GPU page-cache size per table: bytes, or e.g. 8GiB (8 * 2**30 B); "
                   "8GB is 8 * 10**9 B, as in DuckDB (default: a quarter of free GPU memory, "
                   "at most 8 GiB)")
    p.add_argument("--cache-files", action="store_true", default=None,
                   help="files named in FROM: ingest them whole, once, into a page store under "
                   "BAMQL_FILE_CACHE (default ~/.cache/bamql/files), reused while unchanged "
                   "(default: each query reads only the columns and row groups it needs)")


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("data", nargs="?", default=None,
                   help="a table directory or a directory of tables (optional: a query may "
                   "name files in FROM, e.g. 'trips/*.parquet', read_csv('x.csv'), a directory)")
    add_engine_options(p)
    p.add_argument("--cluster", default=None, metavar="ADDRESS",
                   help="Dask scheduler address, or local-gpus[:N] for one worker per GPU here: "
                   "partitioned tables run on its workers")
    p.add_argument("--server", default=None, metavar="URL",
                   help="run on a bamql server (bamql serve) at grpc://HOST:PORT or "
                   "grpc+tls://HOST:PORT instead of in this process")
    p.add_argument("--token", default=None,
                   help="the server's token (default: BAMQL_SERVER_TOKEN)")
    p.add_argument("--tls-root-certs", default=None, metavar="PEM",
                   help="the certificate that signed a TLS server's (e.g. its self-signed one)")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="say which engine runs the queries (the CPU, or which GPU and backend)")


def add_sql_commands(sub) -> None:
    """Register ``sql`` and ``shell`` on the CLI's subparsers."""
    q = sub.add_parser("sql", help="run one query", description="Run one SQL query (or EXPLAIN "
                       "[ANALYZE] of one) and print the result. FROM takes a table, or files in "
                       "place: 'trips/*.parquet' (globs: *, **, ?), a directory, "
                       "read_parquet(['a.parquet', 'b.parquet']), read_csv('x.csv'), "
                       "read_orc('x.orc'); each query reads only the columns and (Parquet) row "
                       "groups it needs of them (--cache-files: ingested whole once, reused).")
    _common(q)
    q.add_argument("query", help="the SQL text, e.g. \"SELECT AVG(trip_distance) FROM trips\"")
    q.add_argument("--format", default="table", choices=FORMATS, help="output format (default table)")
    q.add_argument("--stats", action="store_true", help="print I/O statistics to stderr")
    q.set_defaults(func=cmd_sql)
    sh = sub.add_parser("shell", help="interactive SQL shell",
                        description="Interactive SQL: statements end with ';'; .help lists commands.")
    _common(sh)
    sh.set_defaults(func=cmd_shell)
