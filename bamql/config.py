"""bamql's settings in one place: the names it accepts, sizes, and one validated ``Config``.

A :class:`Config` is built from keyword arguments (``bamql.connect``'s) and the ``BAMQL_*``
environment variables, which are read when a Config is built (:meth:`Config.from_env`),
never at import time; no other module of bamql reads them. Every invalid value is one
``bamql.errors`` error that names its setting (the keyword, or the variable it came from).

The environment variables:

``BAMQL_CACHE_DIR``
    Where the generated kernels are kept (``<dir>/kernels``); by default
    ``$XDG_CACHE_HOME/bamql``, else ``~/.cache/bamql``.
``BAMQL_CACHE_FILES``
    ``1`` keeps files queried in place (``FROM 'x.parquet'``) whole in a page store under
    ``BAMQL_FILE_CACHE``, reused while they are unchanged; by default each query reads only
    the columns and row groups it needs.
``BAMQL_GPU_PREPARED``
    ``0`` turns off the GPU engine's prepared launches (every launch goes through numba's
    argument conversion); on by default.
``BAMQL_DEBUG``
    ``1`` makes the CLI and the shell show a traceback instead of a one-line error.
``BAMQL_HISTORY``
    The shell's history file; by default ``$XDG_DATA_HOME/bamql/history``, else
    ``~/.local/share/bamql/history``.
``BAMQL_SERVER_TOKEN``
    The bearer token of ``bamql serve`` (clients send it, the server requires it); none by
    default.
``BAMQL_SERVER_MAX_TICKET``
    The largest request ``bamql serve`` reads: a ticket, a command, an action's body, a
    prepared statement's parameters (a size, as below); 1 MiB by default.
``BAMQL_SERVER_MAX_SQL``
    The longest query text ``bamql serve`` takes, in bytes of UTF-8 (a size); 1 MiB by
    default.
``BAMQL_SERVER_MAX_NESTING``
    How deeply a query's parentheses (and a command's JSON) may nest on ``bamql serve``;
    200 by default.
``BAMQL_SERVER_QUERY_TIMEOUT``
    Seconds one query may run on ``bamql serve`` before the server answers
    DEADLINE_EXCEEDED and interrupts it; 300 by default, 0 for no limit.
``BAMQL_SERVER_MAX_QUERIES``
    How many queries ``bamql serve`` runs at once (interrupted ones count until they
    stop); a query beyond them is answered UNAVAILABLE at once. 32 by default.
``BAMQL_DASK_DISPATCH``
    How a session on a Dask cluster sends each query to the workers: ``actor`` (the
    default) calls a long-lived actor on each worker directly; ``task`` submits one task
    per worker through the scheduler, so that the dashboard's task stream shows every
    query, at a few milliseconds more per query. Dask does not retire a worker that holds
    an actor: with ``actor``, an adaptive cluster scales down only the workers of no open
    session.

A variable set to the empty string counts as not set. Booleans take 1/0, true/false,
yes/no or on/off, in any case.

Sizes (:func:`parse_size`) read as DuckDB reads ``memory_limit``: ``KB``, ``MB``, ``GB``,
``TB`` (and ``K``, ``M``, ``G``, ``T``) are powers of 1000; ``KiB``, ``MiB``, ``GiB``,
``TiB`` powers of 1024. A plain number is bytes.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from decimal import Decimal
from enum import StrEnum
from pathlib import Path

from bamql.errors import BamqlError, ConfigError, DeviceError, IngestError, PlanError, UsageError


# -- names ---------------------------------------------------------------------------------
class _Choice(StrEnum):
    """A closed set of names: ``Kind(value)`` of anything else is one clean error that
    lists the choices (not a ``ValueError`` from ``enum``). Members are ``str``, so they
    compare, hash, format and serialize as their values."""

    @classmethod
    def _missing_(cls, value):
        raise cls._error()(f"{cls._setting()} must be one of "
                           f"{', '.join(m.value for m in cls)}, not {value!r}")

    @classmethod
    def _setting(cls) -> str:  # the setting named in errors
        return cls.__name__.lower()

    @classmethod
    def _error(cls) -> type[BamqlError]:  # the error class of an invalid value
        return ConfigError


class Device(_Choice):
    """The engine a session runs on: ``auto`` picks the GPU when one works."""

    AUTO = "auto"
    CPU = "cpu"
    GPU = "gpu"

    @classmethod
    def _error(cls) -> type[BamqlError]:
        return DeviceError


class Backend(_Choice):
    """Where the GPU engine's page misses are served from (the CPU engine reads ``file``)."""

    HOST = "host"  # pinned, mapped host memory
    GPU = "gpu"  # the whole store resident in GPU memory
    FILE = "file"  # the volume files, through GPU-initiated I/O queues

    @classmethod
    def _error(cls) -> type[BamqlError]:
        return DeviceError


class Medium(_Choice):
    """The storage the cost model plans for (its figures: ``physical.cost.MEDIA``)."""

    FILE = "file"  # a disk read by the CPU engine, slow at random reads
    QUEUE = "queue"  # the same disk with thousands of reads in flight (GPU file backend)
    NVCOMP = "nvcomp"  # the queue's disk, compressed copies decompressed on the GPU (nvCOMP)
    CACHED = "cached"  # files in the OS page cache
    HOST = "host"  # pinned host memory read by the GPU over PCIe
    GPU = "gpu"  # GPU memory

    @classmethod
    def _error(cls) -> type[BamqlError]:
        return DeviceError


class AccessPath(_Choice):
    """How a query reads one column."""

    SCAN = "scan"  # the candidate pages of a first-stage predicate column, whole
    GATHER = "gather"  # only the pages that hold a row still alive
    STREAM = "stream"  # the whole column, sequentially
    DIRECT = "direct"  # GPU: read in place from host or GPU memory (statistics only)
    CACHE = "cache"  # GPU: read through the page cache (statistics only)

    @classmethod
    def _setting(cls) -> str:
        return "access path"


class Role(_Choice):
    """What a query reads a column for."""

    PREDICATE = "predicate"  # evaluated by the filter
    DEPENDENT = "dependent"  # read only for rows that pass it (group keys, aggregates)


class ClusterOrder(_Choice):
    """How a clustered table orders its rows by its keys (``storage.cluster``)."""

    SORT = "sort"  # lexicographic: the first key, then the next among its ties
    ZORDER = "zorder"  # the keys' rank codes with their bits interleaved (a Z curve)

    @classmethod
    def _setting(cls) -> str:
        return "cluster order"

    @classmethod
    def _error(cls) -> type[BamqlError]:
        return UsageError


class DaskDispatch(_Choice):
    """How a session on a Dask cluster sends a query's calls to the workers."""

    ACTOR = "actor"  # straight to a long-lived actor on each worker: no scheduler in the way
    TASK = "task"  # one scheduled task per worker: the dashboard's task stream shows it

    @classmethod
    def _setting(cls) -> str:
        return "dask dispatch"


class FloatEncoding(_Choice):
    """How ingest stores float64 columns (``ingest(floats=...)``, ``storage.decimals``)."""

    AUTO = "auto"  # decimals of at most 4 digits as scaled int16/int32, found by a pass over them
    PLAIN = "plain"  # every float as it comes
    DECIMALS = "decimals"  # scaled only the columns some source holds as DECIMAL, with no pass

    @classmethod
    def _setting(cls) -> str:
        return "--floats"

    @classmethod
    def _error(cls) -> type[BamqlError]:
        return IngestError


class Compression(_Choice):
    """Whether ingest also writes a compressed copy of every column (``storage.streams``)."""

    ZSTD = "zstd"  # pages and a zstd copy, which cold streams and scans may read instead
    NONE = "none"  # pages only

    @classmethod
    def _setting(cls) -> str:
        return "--compress"

    @classmethod
    def _error(cls) -> type[BamqlError]:
        return IngestError


# -- sizes ---------------------------------------------------------------------------------
_UNITS = {"": 1, "b": 1, "byte": 1, "bytes": 1,
          **{u: 1000 ** (i + 1) for i, names in enumerate(
              (("k", "kb", "kilobyte", "kilobytes"), ("m", "mb", "megabyte", "megabytes"),
               ("g", "gb", "gigabyte", "gigabytes"), ("t", "tb", "terabyte", "terabytes")))
             for u in names},
          **{u: 1024 ** (i + 1) for i, u in enumerate(("kib", "mib", "gib", "tib"))}}
_SIZE = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([a-z]*)\s*", re.IGNORECASE)


def parse_size(value: int | str, setting: str | None = "size",
               error: type[BamqlError] = ConfigError) -> int:
    """Bytes of a size: an int, or text such as ``"4096"``, ``"4KiB"``, ``"1.5GiB"``, ``"8GB"``.

    Units follow DuckDB's ``memory_limit``: ``KB``/``MB``/``GB``/``TB`` and their one-letter
    forms ``K``/``M``/``G``/``T`` are powers of 1000 (``"8GB"`` is 8,000,000,000 bytes);
    ``KiB``/``MiB``/``GiB``/``TiB`` powers of 1024 (``"8GiB"`` is 8 * 2**30). Units are
    read in any case; a plain number is bytes. A fraction of a byte is dropped.

    Parameters
    ----------
    value
        The size.
    setting
        The setting's name, for the error message (None: the message does not name it).
    error
        The error class raised for a value that is not a size.

    Returns
    -------
    int
        The size in bytes (0 or more).

    Raises
    ------
    BamqlError
        ``error``, one line naming ``setting``, when ``value`` is not a size.
    """
    what = f"{setting}: not a size" if setting else "not a size"
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise error(f"{what}: {value!r} (a size is 0 bytes or more)")
        return value
    m = _SIZE.fullmatch(value) if isinstance(value, str) else None
    mult = _UNITS.get(m.group(2).lower()) if m else None
    if mult is None:
        raise error(f"{what}: {value!r} (try 4096, '4KiB' or '8GiB'; KiB/MiB/GiB are powers "
                    "of 1024, KB/MB/GB of 1000)")
    return int(Decimal(m.group(1)) * mult)


# -- values of the environment -------------------------------------------------------------
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def _flag(value: bool | str, setting: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
        return value.strip().lower() in _TRUE
    raise ConfigError(f"{setting} takes 1 or 0 (true/false, yes/no, on/off), not {value!r}")


def _path(value: str | os.PathLike, setting: str) -> Path:
    if isinstance(value, bytes) or not isinstance(value, (str, os.PathLike)) \
            or not os.fspath(value):
        raise ConfigError(f"{setting} takes a path, not {value!r}")
    return Path(value).expanduser()


def _token(value: str, setting: str) -> str:
    if not isinstance(value, str) or not value.isprintable() or value != value.strip():
        raise ConfigError(f"{setting} takes a token of printable characters without spaces "
                          "around it")
    return value


def _positive_size(value: int | str, setting: str) -> int:
    n = parse_size(value, setting)
    if n < 1:
        raise ConfigError(f"{setting} takes a size of 1 byte or more, not {value!r}")
    return n


def _count(value: int | str, setting: str) -> int:
    text = value.strip() if isinstance(value, str) else value
    if isinstance(text, str) and text.isdigit():
        text = int(text)
    if not isinstance(text, int) or isinstance(text, bool) or text < 1:
        raise ConfigError(f"{setting} takes a whole number of 1 or more, not {value!r}")
    return text


def _seconds(value: float | int | str, setting: str) -> float:
    try:
        s = float(value.strip() if isinstance(value, str) else value)
        ok = not isinstance(value, bool) and s >= 0 and s != float("inf")
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ConfigError(f"{setting} takes seconds (a number of 0 or more; 0: no limit), "
                          f"not {value!r}")
    return s


def _dispatch(value: str, setting: str) -> DaskDispatch:
    try:
        return DaskDispatch(value.strip().lower() if isinstance(value, str) else value)
    except ConfigError:
        raise ConfigError(f"{setting} takes actor or task, not {value!r}") from None


def _default_cache_dir(xdg: str | None = None) -> Path:
    return Path(xdg) / "bamql" if xdg else Path.home() / ".cache" / "bamql"


def _default_history(xdg: str | None = None) -> Path:
    return (Path(xdg) if xdg else Path.home() / ".local" / "share") / "bamql" / "history"


# -- the configuration ---------------------------------------------------------------------
@dataclass(frozen=True)
class Config:
    """One validated set of bamql's settings.

    Built directly it holds the keywords given and the built-in defaults, and reads no
    environment variable; built by :meth:`from_env` the ``BAMQL_*`` variables (and
    ``XDG_CACHE_HOME``, for ``cache_dir``) come in between. Values are checked and
    normalized as it is built: names become their enums, sizes bytes, paths ``Path``.

    Attributes
    ----------
    device
        ``auto`` (the GPU if one works, else the CPU), ``cpu`` or ``gpu``.
    backend
        GPU page source (``host``, ``gpu`` or ``file``); None: the engine's default
        (``host`` on the GPU, ``file`` on the CPU).
    cache
        Bytes of GPU page cache per table; None: a quarter of free GPU memory, at most 8 GiB.
    medium
        The storage the cost model plans for; None: the backend's.
    page_size
        The page size every table must have (bytes); None: any.
    cluster
        A Dask ``Client``, a scheduler address or ``"local-gpus[:N]"``; None: no cluster
        (checked when the session connects to it).
    cache_dir
        The kernel cache's base directory (``BAMQL_CACHE_DIR``).
    file_cache
        Where files queried in place (``FROM 'x.parquet'``) are kept as page stores
        (``BAMQL_FILE_CACHE``); None: ``cache_dir / "files"`` (see :attr:`file_cache_dir`).
    cache_files
        Whether files queried in place are ingested whole, once, into a page store under
        ``file_cache`` and reused while unchanged (``BAMQL_CACHE_FILES``); False: each query
        reads only the columns and row groups it needs (``storage.inplace``).
    gpu_prepared
        Whether GPU launches reuse numba's prepared arguments (``BAMQL_GPU_PREPARED``).
    debug
        Tracebacks instead of one-line errors in the CLI and the shell (``BAMQL_DEBUG``).
    history
        The shell's history file (``BAMQL_HISTORY``).
    server_token
        The bearer token of a bamql server and its clients (``BAMQL_SERVER_TOKEN``); None: none.
    server_max_ticket
        Bytes of the largest request a bamql server reads (``BAMQL_SERVER_MAX_TICKET``).
    server_max_sql
        Bytes (UTF-8) of the longest query text a bamql server takes (``BAMQL_SERVER_MAX_SQL``).
    server_max_nesting
        How deeply a query's parentheses and a command's JSON may nest on a bamql server
        (``BAMQL_SERVER_MAX_NESTING``).
    server_query_timeout
        Seconds a query may run on a bamql server (``BAMQL_SERVER_QUERY_TIMEOUT``); 0: no limit.
    server_max_queries
        Queries a bamql server runs at once (``BAMQL_SERVER_MAX_QUERIES``).
    dask_dispatch
        How queries on a Dask cluster reach the workers (``BAMQL_DASK_DISPATCH``): ``actor``
        calls a long-lived actor on each worker directly, a round trip of its own per query;
        ``task`` submits one task per worker through the scheduler, whose batched messages
        add milliseconds to every query, and shows each query on the dashboard.
    """

    device: Device = Device.AUTO
    backend: Backend | None = None
    cache: int | None = None
    medium: Medium | None = None
    page_size: int | None = None
    cluster: object = field(default=None, compare=False, repr=False)
    cache_dir: Path = field(default_factory=_default_cache_dir)
    file_cache: Path | None = None
    cache_files: bool = False
    gpu_prepared: bool = True
    debug: bool = False
    history: Path = field(default_factory=_default_history)
    server_token: str | None = field(default=None, repr=False)
    server_max_ticket: int = 1 << 20
    server_max_sql: int = 1 << 20
    server_max_nesting: int = 200
    server_query_timeout: float = 300.0
    server_max_queries: int = 32
    dask_dispatch: DaskDispatch = DaskDispatch.ACTOR

    def __post_init__(self) -> None:
        def put(name: str, value) -> None:  # frozen: normalized values go in this way
            object.__setattr__(self, name, value)

        put("device", Device(self.device))
        if self.backend is not None:
            put("backend", Backend(self.backend))
        if self.medium is not None:
            put("medium", Medium(self.medium))
        if self.cache is not None:
            put("cache", parse_size(self.cache, "cache", DeviceError))
        if self.page_size is not None:
            put("page_size", parse_size(self.page_size, "page_size", PlanError))
        for name, check in _CHECKS.items():
            if getattr(self, name) is not None or name not in _OPTIONAL:
                put(name, check(getattr(self, name), name))

    @property
    def file_cache_dir(self) -> Path:
        """The directory of the page stores made from files queried in place."""
        return self.file_cache if self.file_cache is not None else self.cache_dir / "files"

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **settings) -> Config:
        """A Config from keyword settings, then the ``BAMQL_*`` variables, then defaults.

        Parameters
        ----------
        environ
            The environment to read (default: ``os.environ``, read now).
        **settings
            Settings by attribute name; None leaves a setting to its variable or default.

        Raises
        ------
        BamqlError
            One line naming the setting (the variable, for a value that came from one) of
            an invalid value; :class:`bamql.errors.UsageError` for a keyword that is no
            setting.
        """
        env = os.environ if environ is None else environ
        known = [f.name for f in fields(cls)]
        unknown = sorted(set(settings) - set(known))
        if unknown:
            raise UsageError(f"unknown setting(s): {', '.join(unknown)} "
                             f"(settings: {', '.join(known)})")
        values = {k: v for k, v in settings.items() if v is not None}
        for name, var in ENV_VARS.items():
            raw = env.get(var)
            if name not in values and raw:  # checked here, to name the variable in errors
                values[name] = _CHECKS[name](raw, var)
        if "cache_dir" not in values and env.get("XDG_CACHE_HOME"):
            values["cache_dir"] = _default_cache_dir(env["XDG_CACHE_HOME"])
        if "history" not in values and env.get("XDG_DATA_HOME"):
            values["history"] = _default_history(env["XDG_DATA_HOME"])
        return cls(**values)


#: setting -> the environment variable it is read from
ENV_VARS = {"cache_dir": "BAMQL_CACHE_DIR", "file_cache": "BAMQL_FILE_CACHE",
            "cache_files": "BAMQL_CACHE_FILES",
            "gpu_prepared": "BAMQL_GPU_PREPARED", "debug": "BAMQL_DEBUG", "history": "BAMQL_HISTORY",
            "server_token": "BAMQL_SERVER_TOKEN", "server_max_ticket": "BAMQL_SERVER_MAX_TICKET",
            "server_max_sql": "BAMQL_SERVER_MAX_SQL", "server_max_nesting": "BAMQL_SERVER_MAX_NESTING",
            "server_query_timeout": "BAMQL_SERVER_QUERY_TIMEOUT",
            "server_max_queries": "BAMQL_SERVER_MAX_QUERIES",
            "dask_dispatch": "BAMQL_DASK_DISPATCH"}
#: settings whose None (the default) is left as it is
_OPTIONAL = frozenset({"file_cache", "server_token"})
#: setting -> its check, (value, the name an error gives it) -> the normalized value
_CHECKS = {"cache_dir": _path, "file_cache": _path, "cache_files": _flag, "gpu_prepared": _flag,
           "debug": _flag,
           "history": _path, "server_token": _token, "server_max_ticket": _positive_size,
           "server_max_sql": _positive_size, "server_max_nesting": _count,
           "server_query_timeout": _seconds, "server_max_queries": _count,
           "dask_dispatch": _dispatch}
