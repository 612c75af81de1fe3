"""``bamql.connect``: a session on a directory of tables, or on a bamql server.

Apart from ``api.session`` so that connecting to a server (``grpc://host:port``) imports
the client (``api.remote_session``: pyarrow.flight and the result types) and nothing of the
engine; a local session imports the engine when it is made.
"""

from __future__ import annotations

import os

from bamql.errors import UsageError


def connect(path: str | os.PathLike | None = None, device: str = "auto", backend: str | None = None,
            cache: int | str | None = None, medium: str | None = None, cluster=None,
            page_size: int | str | None = None, token: str | None = None,
            tls_root_certs: str | os.PathLike | bytes | None = None,
            cache_files: bool | None = None):
    """Open a directory of bamql tables, or a bamql server's session.

    Parameters
    ----------
    path
        A table directory (made by ``bamql ingest``) or a directory of them; None: no
        stored tables. Either way a query may name files in FROM (``'trips/*.parquet'``,
        ``read_parquet([...])``, ``read_csv(...)``, ``read_orc(...)``, a directory): each
        query reads only the columns it names and, of Parquet, only the row groups whose
        statistics can hold a row its WHERE keeps (see ``cache_files``).
    device
        ``"auto"`` (the GPU if one works, else the CPU; ``session.note`` says which),
        ``"cpu"`` or ``"gpu"``.
    backend
        GPU only: where page misses are served from: ``"host"`` (pinned host memory),
        ``"file"`` (the volume files, through I/O queues) or ``"gpu"`` (all resident).
    cache
        GPU page-cache size per table: bytes, or text such as ``"8GiB"`` (8 * 2**30 bytes) or
        ``"8GB"`` (8 * 10**9 bytes, as DuckDB reads sizes); by default a quarter of the
        free GPU memory, at most 8 GiB.
    medium
        The cost model's idea of the storage (``file``: a disk slow at random reads, the
        default on CPU; ``queue``: the same disk with thousands of reads in flight, the
        default of the GPU ``file`` backend; ``cached``: files in the OS page cache); it
        picks gather vs stream per column.
    cluster
        A Dask ``Client``, a scheduler address, or ``"local-gpus"`` (one worker per GPU of
        this machine): partitioned tables then run on the cluster's workers (partition
        ``i`` on worker ``i mod n``, one task per worker and query), on the CPU or GPU
        engine as ``device`` says (otherwise one after another here).
    page_size
        The page size the tables must have (e.g. ``4096`` or ``"4KiB"``); a table ingested
        with another is a clear error. Pages are laid out at ingest (``--page-size``).
    cache_files
        True: files named in FROM are ingested whole on first use into a page store cached
        under ``BAMQL_FILE_CACHE`` (default ``~/.cache/bamql/files``) and read from it
        while they are unchanged (default ``BAMQL_CACHE_FILES``, else False).

    Every value is checked here (``bamql.config.Config``): a typo in a name or a size is
    one clear error. The ``BAMQL_*`` environment variables are read now, too.

    A ``path`` of ``grpc://host:port`` (``grpc+tls://`` for TLS) connects to a server
    (``bamql serve``) and returns a :class:`bamql.api.remote_session.RemoteSession`, whose
    ``sql``, ``explain``, ``tables`` and ``schema`` run there; ``token`` is the server's
    (default ``BAMQL_SERVER_TOKEN``) and ``tls_root_certs`` a PEM file of the certificate
    that signed its own. The other settings are the server's.
    """
    if isinstance(path, str) and path.startswith(("grpc://", "grpc+tcp://", "grpc+tls://")):
        from bamql.api.remote_session import RemoteSession

        if device != "auto" or any(v is not None for v in (backend, cache, medium, cluster,
                                                            page_size, cache_files)):
            raise UsageError("a server's session has the server's settings (bamql serve "
                             "--device ...); connect() to it takes token= and tls_root_certs=")
        return RemoteSession(path, token=token, tls_root_certs=tls_root_certs)
    if token is not None or tls_root_certs is not None:
        raise UsageError("token= and tls_root_certs= are for a server's URL (grpc://host:port)")
    if path == ":memory:":  # DuckDB's name for a session without stored tables
        path = None
    from bamql.api.session import Session

    return Session(path, device=device, backend=backend, cache=cache, medium=medium,
                   cluster=cluster, page_size=page_size, cache_files=cache_files)
