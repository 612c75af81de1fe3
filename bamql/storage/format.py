"""The page store's on-disk format: manifest, column metadata and encodings.

A table directory holds ``manifest.json``, ``pages.npz`` (per-page checksum, zone-map
min/max and null count over the global page-id space) and ``vol-NNN.bin`` volume files.
Global page ``p`` (below ``total_pages``) lives in volume ``p % n_volumes`` at byte
``(p // n_volumes) * page_size``.

Optional row groups (``grp-NNN.bin``) hold second copies of some columns, laid out so that
a row's values of every member sit in one block (``storage.groups``); their pages take the
global ids from ``total_pages`` on.

Float columns whose values are all decimals of at most ``MAX_DECIMALS`` digits are stored as
scaled integers (``ColumnMeta.scale``): ``value = stored / 10**scale``, exact because the
writer checks that every value round-trips. A 2-decimal fare is then 2 bytes instead of 8,
which is what a sequential stream pays for.

Nulls are stored in-band as a sentinel (``storage.encoding``).

Integer-stored columns may be bit-packed (``ColumnMeta.bits > 0``, ``ingest(pack=True)``):
``bits``-bit codes over a per-page frame of reference, the references in ``pages.npz``
(``ref``, one int64 per global page, 0 outside packed columns); ``storage.packing`` has the
exact layout. ``bits`` and the manifest's ``pack`` are written only when set, so plain stores
read as before.

A table ingested from files records them (``Origin``: the specs as given, and each file's
path, size and modification time) for ``ingest.refresh``; the field is optional and written
only when present, so stores made before it, or from rows in memory, read as they were.

The manifest is sealed (``sha256``: ``digest`` of every other field) and holds the sha256 of
``pages.npz``, so damage to either is refused at open; every page holds its checksum in
``pages.npz``. Anyone can compute that digest again after an edit, so from format version 5
the manifest also holds ``hmac``, the same body signed with this machine's key
(``storage.seal``), and ``pages.npz`` holds a digest of each column's description
(``desc:NAME``, :func:`column_digest`). ``Manifest.load`` checks that the manifest is
consistent in itself (widths, extents, dictionaries, row groups), which a manifest sealed again
after an edit must still pass; a store whose keyed seal is not this machine's must also pass
``PageStore``'s checks against ``pages.npz`` and its full ``verify`` (which compares the
metadata with the pages) before it opens. Stores of format 4 (no keyed seal, no column
digests) are read so. The store's files are read only as regular files directly inside its
directory (``open_member``).
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
from dataclasses import MISSING, asdict, dataclass, field, fields
from pathlib import Path

import numpy as np

from bamql.config import ClusterOrder, FloatEncoding
from bamql.errors import StoreError
from bamql.storage import seal as _seal
from bamql.storage.encoding import sentinel_for
from bamql.storage.packing import MAX_BITS, PACKABLE_TYPES, rows_per_page

FORMAT_NAME = "bamql-pagestore"
FORMAT_VERSION = 5
#: Versions this bamql reads. Versions 1-3 have no seal (and 1 and 2 store a float's NULL and
#: NaN alike): such stores are refused with "re-ingest". Version 4 has an unkeyed seal only:
#: such a store opens after the checks a store sealed elsewhere gets (``storage.seal``).
READABLE_VERSIONS = (4, 5, 6)
#: The first version with a keyed seal and column digests in ``pages.npz``.
KEYED_VERSION = 5
#: The version of a store holding a 16-byte DECIMAL column (``ColumnMeta.wide``): a bamql
#: that does not know that storage type refuses the store as newer than itself, not corrupt
WIDE_VERSION = 6


def format_version(columns) -> int:
    """The format version a store of ``columns`` is written with: the oldest that holds it."""
    return WIDE_VERSION if any(c.wide for c in columns) else FORMAT_VERSION
MANIFEST = "manifest.json"
PAGES_META = "pages.npz"
DEFAULT_PAGE_SIZE = 4096
MIN_PAGE_SIZE = 512
MAX_PAGE_SIZE = 1 << 20
#: Small integer domains get an exact histogram in the manifest (for selectivity estimates).
HISTOGRAM_MAX_DOMAIN = 4096

#: Most decimal digits a float column may have to be stored as a scaled integer.
MAX_DECIMALS = 4

#: Logical kinds a column may have.
KINDS = ("int", "float", "timestamp", "string")
#: Storage types of each kind (a string's are those of its dictionary codes; an int's
#: ``V16``: a DECIMAL of more than 18 digits, ``sqltypes.WIDE_DTYPE``).
STORAGE_TYPES = {"int": ("int8", "int16", "int32", "int64", "V16"),
                 "float": ("float32", "float64"),
                 "timestamp": ("int64",), "string": ("int8", "int16", "int32")}
#: Storage types of a float column stored as scaled integers (``scale >= 1``).
SCALED_TYPES = ("int16", "int32")
#: Most volumes a store may have.
MAX_VOLUMES = 256
#: The OS page: members of a row group's block within it share one disk read.
OS_PAGE = 4096
#: Widths (bytes per value) a compressed copy's chunks may be byte-shuffled by.
SHUFFLE_WIDTHS = (2, 4, 8)


def digest(doc: dict) -> str:
    """The hash that seals a JSON metadata document: every field but ``sha256`` and ``hmac``
    (where the seals are kept), canonically (sorted keys), so that any edit of a value
    changes it."""
    return hashlib.sha256(_seal.body(doc)).hexdigest()


def open_member(root: Path, name: str, what: str) -> int:
    """Open the store file ``name`` (``what`` it is, for errors) of the store at ``root`` for
    reading; return its descriptor.

    ``name`` must be a plain file name and the file a regular file, not a symlink: a store's
    files lie directly inside its directory, and a name with a directory part, a link, a FIFO
    or a device would read something that is not the store, or block. ``O_NONBLOCK`` keeps the
    open of a FIFO from waiting for a writer; ``O_NOFOLLOW`` refuses a link. A file that
    vanishes between the check and the open raises ``FileNotFoundError`` (``open_table``
    reports a store changed while it was opened).
    """
    if (not isinstance(name, str) or name in ("", ".", "..") or "/" in name or "\\" in name
            or "\0" in name):
        raise StoreError(f"store {root}: its {what} {name!r} is not a file name inside the store")
    path = root / name
    if not os.path.lexists(path):
        raise StoreError(f"store {root}: {what} {name} is missing")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        if e.errno == errno.ENOENT:
            raise
        why = "a symbolic link" if e.errno == errno.ELOOP else e.strerror
        raise StoreError(f"store {root}: {what} {name} cannot be opened ({why}); a store's "
                         "files are regular files inside it") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise StoreError(f"store {root}: {what} {name} is not a regular file; a store's files "
                         "are regular files inside it")
    return fd


def read_member(root: Path, name: str, what: str) -> bytes:
    """The bytes of store file ``name``, opened as ``open_member`` does."""
    with os.fdopen(open_member(root, name, what), "rb") as fh:
        return fh.read()


def check_page_size(page_size: int) -> int:
    """Return ``page_size`` if it is a power of two within 512 B..1 MiB, else raise."""
    if page_size < MIN_PAGE_SIZE or page_size > MAX_PAGE_SIZE or page_size & (page_size - 1):
        raise StoreError(
            f"page size {page_size} is not a power of two between {MIN_PAGE_SIZE} and {MAX_PAGE_SIZE}"
        )
    return page_size


def volume_name(i: int) -> str:
    """File name of volume ``i``."""
    return f"vol-{i:03d}.bin"


@dataclass(frozen=True)
class ColumnMeta:
    """One column of a stored table.

    ``kind`` is the logical type (int, float, timestamp as int64 microseconds, string as
    dictionary codes); ``dtype`` the fixed-width storage type; pages
    ``first_page .. first_page + n_pages - 1`` hold it, ``rows_per_page`` values each. A
    float column with ``scale > 0`` is stored as integers: ``value = stored / 10**scale``.
    """

    name: str
    kind: str
    dtype: str
    first_page: int
    n_pages: int
    rows_per_page: int
    nulls: int = 0
    #: smallest and largest value; exact integers for integer-stored columns
    min: int | float | None = None
    max: int | float | None = None
    dictionary: tuple[str, ...] | None = None
    #: exact value -> row count, for small domains
    histogram: dict[str, int] | None = None
    #: decimal digits (1 or more) of a float column stored as scaled integers (0: as is)
    scale: int = 0
    #: bits per code of a bit-packed column (``storage.packing``); 0: plain fixed-width pages
    bits: int = 0
    #: a float column's SQL type: True where some source holds it as DECIMAL (ROUND and CAST
    #: round its exact decimal value), False for a DOUBLE whatever its storage (a scaled
    #: integer too); None where the store does not say (written before it was recorded:
    #: a scaled column is taken as a DECIMAL)
    decimal: bool | None = None
    #: the SQL type of an integer column that is no BIGINT: ``"DECIMAL(p,s)"`` (stored as
    #: its unscaled integers, ``value = stored / 10**s`` exactly; ``storage.sqltypes``) or
    #: ``"BOOLEAN"`` (0/1); None: the kind's own (and in stores written before it)
    sql_type: str | None = None

    @property
    def packed(self) -> bool:
        return self.bits > 0

    @property
    def wide(self) -> bool:
        """Whether the column is a DECIMAL of more than 18 digits held in 16 bytes a value
        (``sqltypes.WIDE_DTYPE``), which only the plan tree's Arrow operators read."""
        from bamql.storage.sqltypes import WIDE_DTYPE

        return self.dtype == WIDE_DTYPE

    @property
    def value_bits(self) -> int:
        """Bits a value takes in the column's pages (what a read of one row costs)."""
        return self.bits or 8 * self.itemsize

    @property
    def np_dtype(self) -> np.dtype:
        return np.dtype(self.dtype)

    @property
    def itemsize(self) -> int:
        return self.np_dtype.itemsize

    @property
    def sentinel(self):
        return sentinel_for(self.np_dtype)

    @property
    def divisor(self) -> float:
        """What a stored value is divided by to give the column's value (1.0 if unscaled)."""
        return float(10**self.scale)

    @property
    def shuffle_width(self) -> int:
        """The width the column's compressed chunks may be byte-shuffled by: its values'
        bytes, or 1 (never shuffled) for 1-byte values and bit-packed columns."""
        return 1 if self.packed or self.itemsize not in SHUFFLE_WIDTHS else self.itemsize

    def decode(self, stored: np.ndarray) -> np.ndarray:
        """Stored values -> the column's values (scaled floats divided, their nulls NaN;
        see ``null_mask`` for telling the nulls of unscaled floats from their NaNs)."""
        if not self.scale:
            return stored
        out = np.divide(stored, self.divisor, dtype=np.float64)
        out[stored == self.sentinel] = np.nan
        return out

    def page_of(self, rows: np.ndarray) -> np.ndarray:
        """Global page ids holding ``rows``."""
        return self.first_page + rows // self.rows_per_page


#: ``pages.npz``'s key of column ``NAME``'s digest (:func:`column_digest`), from version 5
DESC_PREFIX = "desc:"


#: a column's statistics, which its pages' metadata is checked against instead of its digest
_STATISTICS = ("nulls", "min", "max", "histogram")


def column_digest(c: ColumnMeta) -> np.ndarray:
    """The sha256 (32 uint8) of column ``c``'s description: every field but its statistics
    (checked against the pages' zone maps and counts) that differs from its default,
    canonically. Written to ``pages.npz`` beside the manifest, so that a manifest edited
    alone (a name, a scale, a dictionary, an extent) no longer matches its pages' metadata; a
    field added later, left at its default, does not change the digest of older columns."""
    desc = {}
    for f in fields(c):
        v = getattr(c, f.name)
        if f.name not in _STATISTICS and (f.default is MISSING or v != f.default):
            desc[f.name] = list(v) if isinstance(v, tuple) else v
    raw = hashlib.sha256(json.dumps(desc, sort_keys=True).encode()).digest()
    return np.frombuffer(raw, np.uint8).copy()


def block_bytes(members: int, page_size: int) -> int:
    """Bytes per row-group block: padded to the OS page when the members fit in one."""
    b = members * page_size
    return OS_PAGE if b <= OS_PAGE else b


def group_file_name(i: int) -> str:
    """File name of row group ``i``."""
    return f"grp-{i:03d}.bin"


@dataclass(frozen=True)
class GroupMeta:
    """A row group: copies of the ``members`` columns (equal rows per page) interleaved page
    by page. Member ``j``'s page ``i`` has global id ``first_page + j * n_pages + i`` and lies
    in the group's file at byte ``i * block_bytes + j * page_size``."""

    file: str
    members: tuple[str, ...]
    first_page: int
    n_pages: int
    rows_per_page: int
    block_bytes: int

    @property
    def total_pages(self) -> int:
        return len(self.members) * self.n_pages


@dataclass(frozen=True)
class StreamMeta:
    """The compressed copy of every column (``storage.streams``): chunks of ``chunk_pages``
    pages compressed with ``codec``, a column's chunks one after another in ``file``; the
    chunk offsets and lengths are in the page metadata (``zst:off``, ``zst:len``).
    ``shuffle`` maps each column whose chunks are byte-shuffled to its width (one of
    ``SHUFFLE_WIDTHS``); a column absent from it is not shuffled. It is written only when
    set: stores made before it read as they were, and a bamql that predates it refuses a
    store with shuffled chunks as malformed instead of misreading it."""

    file: str
    codec: str
    chunk_pages: int
    first_chunk: dict[str, int]
    file_bytes: int
    shuffle: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Origin:
    """Where a table's rows came from, for ``ingest.refresh``: the source specs as the user
    named them (paths, directories and globs made absolute; URIs as given), and per file
    ingested its path (resolved; a URI as listed), size and modification time (ns), as
    ``storage.filecache`` keys files. ``floats`` is the ``ingest(floats=...)`` the table was
    made with (a ``config.FloatEncoding`` value), which its stored types do not tell."""

    specs: tuple[str, ...]
    files: tuple[str, ...]
    sizes: tuple[int, ...]
    mtimes: tuple[int, ...]
    floats: str = "auto"


@dataclass(frozen=True)
class Manifest:
    """The table's description; written last, atomically, by ingest."""

    table: str
    rows: int
    page_size: int
    n_volumes: int
    total_pages: int
    columns: tuple[ColumnMeta, ...]
    pages_meta_sha256: str
    sources: tuple[str, ...] = ()
    format: str = FORMAT_NAME
    format_version: int = FORMAT_VERSION
    extra: dict = field(default_factory=dict)
    groups: tuple[GroupMeta, ...] = ()
    streams: StreamMeta | None = None
    #: the clustering keys its rows are sorted by (``storage.cluster``); () for source order
    cluster_by: tuple[str, ...] = ()
    #: where the rows came from (files ingested by name); None for rows from memory and for
    #: stores made before bamql recorded it, which a refresh refuses
    origin: Origin | None = None
    #: made with ``ingest(pack=True)``: eligible columns bit-packed (kept by appends)
    pack: bool = False
    #: how ``cluster_by`` orders the rows (``config.ClusterOrder``: sort or zorder)
    cluster_order: str = "sort"

    @property
    def all_pages(self) -> int:
        """Pages of the global id space: the volumes' and the row groups'."""
        return self.total_pages + sum(g.total_pages for g in self.groups)

    def column(self, name: str) -> ColumnMeta:
        for c in self.columns:
            if c.name == name:
                return c
        raise KeyError(name)

    def volume_bytes(self, i: int) -> int:
        """Expected size of volume ``i``."""
        pages = self.total_pages // self.n_volumes + (i < self.total_pages % self.n_volumes)
        return pages * self.page_size

    def to_json(self) -> str:
        """The manifest as written: its fields and their seal (``digest``)."""
        d = asdict(self)
        if d["origin"] is None:  # absent, as in stores made before the field
            del d["origin"]
        if not d["pack"]:  # plain stores are written as before packing existed
            del d["pack"]
        if d["streams"] is not None and not d["streams"]["shuffle"]:  # as before shuffling
            del d["streams"]["shuffle"]
        if d["cluster_order"] == "sort":  # as written before Z-order existed
            del d["cluster_order"]
        else:
            d["cluster_order"] = str(d["cluster_order"])
        for c in d["columns"]:
            if not c["bits"]:
                del c["bits"]
            if c["sql_type"] is None:  # as written before SQL types were recorded
                del c["sql_type"]
        d["sha256"] = digest(d)
        tag = _seal.seal(d)  # none where this machine has no key: checked at every open
        if tag is not None:
            d[_seal.FIELD] = tag
        return json.dumps(d, indent=1)

    @classmethod
    def load(cls, path: Path) -> Manifest:
        """Read, unseal and check the manifest of the store at ``path``; StoreError (one line)
        if it is missing, of another format or version, damaged, or inconsistent."""
        return cls.load_sealed(path)[0]

    @classmethod
    def load_sealed(cls, path: Path) -> tuple[Manifest, Seal]:
        """:meth:`load`, and how the manifest is sealed: whether this machine trusts it (its
        keyed seal, or a record of a full verify here; ``storage.seal``)."""
        if not path.exists():
            raise StoreError(f"store {path} does not exist")
        if not path.is_dir() or not os.path.lexists(path / MANIFEST):
            raise StoreError(f"{path} is not a bamql table: no {MANIFEST}")
        try:
            d = json.loads(read_member(path, MANIFEST, "manifest"))
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise StoreError(f"store {path}: {MANIFEST} is corrupt ({e})") from None
        if not isinstance(d, dict) or d.get("format") != FORMAT_NAME:
            raise StoreError(f"store {path}: {MANIFEST} is not a bamql page-store manifest")
        v = d.get("format_version")
        if _is_int(v) and 1 <= v < min(READABLE_VERSIONS):
            raise StoreError(f"store {path}: format version {v} was written by an older bamql "
                             "and is not sealed against edits; re-ingest the table")
        if v not in READABLE_VERSIONS:
            raise StoreError(
                f"store {path}: format version {v} is not supported "
                f"(this bamql reads version {', '.join(map(str, READABLE_VERSIONS))}); "
                "re-ingest the table"
            )
        if d.pop("sha256", None) != digest(d):
            raise StoreError(f"{MANIFEST} of {path} does not match its checksum: the store was "
                             "modified after ingest; re-ingest it")
        tag = _seal.seal(d)
        sealed = Seal(_seal.trusted(d, tag), tag, v, _seal.FIELD in d)
        d.pop(_seal.FIELD, None)
        try:
            cols = []
            for c in d.pop("columns"):
                if c.get("dictionary") is not None:
                    c["dictionary"] = tuple(c["dictionary"])
                cols.append(ColumnMeta(**c))
            d["sources"] = tuple(d.get("sources", ()))
            d["cluster_by"] = tuple(d.get("cluster_by", ()))
            d["groups"] = tuple(GroupMeta(**{**g, "members": tuple(g["members"])})
                                for g in d.get("groups", ()))
            if d.get("streams") is not None:
                d["streams"] = StreamMeta(**d["streams"])
            if d.get("origin") is not None:
                o = d["origin"]
                d["origin"] = Origin(**{**o, **{k: tuple(o[k]) for k in
                                                 ("specs", "files", "sizes", "mtimes")}})
            m = cls(columns=tuple(cols), **d)
        except (TypeError, KeyError, AttributeError) as e:
            raise StoreError(f"store {path}: {MANIFEST} is malformed ({e})") from None
        try:
            problem = _inconsistency(m)
        except (TypeError, ValueError, AttributeError) as e:  # a field of the wrong shape
            problem = f"malformed ({e})"
        if problem:
            raise StoreError(f"store {path}: {MANIFEST} is inconsistent: {problem}; the store "
                             "is corrupt")
        return m, sealed


@dataclass(frozen=True)
class Seal:
    """How a manifest is sealed, as found at open (``storage.seal``)."""

    #: sealed with this machine's key, or verified in full here before
    trusted: bool
    #: this machine's seal of the manifest (the name of its record once verified here);
    #: None where this machine has no key
    tag: str | None
    version: int
    #: whether the manifest carries a keyed seal at all (made where there was a key)
    keyed: bool

    def why(self) -> str:
        """Why a store is not trusted here, for its note or its refusal."""
        if self.version < KEYED_VERSION:
            return f"was written by an older bamql (format {self.version}, no keyed seal)"
        if self.tag is None:
            return "cannot be checked against a seal: this machine has no key (its cache " \
                   "directory is not usable)"
        if not self.keyed:
            return "has no keyed seal (made where bamql had no key)"
        return "is not sealed with this machine's key (made on another machine or by " \
               "another user, or edited after ingest)"


def _is_int(*values) -> bool:
    return all(isinstance(v, int) and not isinstance(v, bool) for v in values)


def _inconsistency(m: Manifest) -> str | None:
    """What makes manifest ``m`` inconsistent in itself, or None: checks that cost no read of
    the pages, so that a manifest edited and sealed again fails at open instead of giving
    wrong answers (``PageStore.verify`` compares it with the pages)."""
    if not (_is_int(m.rows, m.page_size, m.n_volumes, m.total_pages) and isinstance(m.table, str)
            and isinstance(m.pages_meta_sha256, str) and isinstance(m.pack, bool)):
        return "a field has the wrong type"
    if m.rows < 0 or not 1 <= m.n_volumes <= MAX_VOLUMES:
        return f"{m.rows} rows over {m.n_volumes} volumes"
    try:
        check_page_size(m.page_size)
    except StoreError as e:
        return str(e)
    names = [c.name for c in m.columns]
    if len(set(names)) != len(names) or not all(isinstance(n, str) for n in names):
        return "column names are not unique strings"
    for c in m.columns:
        problem = _column_inconsistency(m, c)
        if problem:
            return f"column {c.name!r}: {problem}"
    nxt = 0  # the columns' extents tile the volumes' pages, in order
    for c in sorted(m.columns, key=lambda c: c.first_page):
        if c.first_page != nxt:
            return f"column {c.name!r} starts at page {c.first_page}, not {nxt}"
        nxt += c.n_pages
    if nxt != m.total_pages:
        return f"the columns hold {nxt} pages, the volumes {m.total_pages}"
    if any(k not in names for k in m.cluster_by) or len(set(m.cluster_by)) != len(m.cluster_by):
        return f"clustering keys {list(m.cluster_by)} are not distinct columns"
    orders = tuple(o.value for o in ClusterOrder)
    if m.cluster_order not in orders or (m.cluster_order != "sort" and not m.cluster_by):
        return f"cluster order {m.cluster_order!r} of keys {list(m.cluster_by)}"
    by_name = {c.name: c for c in m.columns}
    seen: set[str] = set()
    nxt = m.total_pages  # the row groups' pages follow, group after group
    for g in m.groups:
        if not (_is_int(g.first_page, g.n_pages, g.rows_per_page, g.block_bytes)
                and isinstance(g.file, str)):
            return "a row group field has the wrong type"
        members = [by_name.get(n) for n in g.members]
        if (len(members) < 2 or None in members or seen & set(g.members)
                or len(set(g.members)) != len(members)):
            return f"row group {g.file!r} has members {list(g.members)}"
        seen |= set(g.members)
        if (any(c.rows_per_page != g.rows_per_page or c.n_pages != g.n_pages or c.bits
                for c in members)
                or g.first_page != nxt
                or g.block_bytes != block_bytes(len(members), m.page_size)):
            return f"row group {g.file!r} does not match its members' pages"
        nxt += g.total_pages
    s = m.streams
    if s is not None and not (
            isinstance(s.file, str) and s.codec == "zstd" and _is_int(s.chunk_pages, s.file_bytes)
            and s.chunk_pages >= 1 and s.file_bytes >= 0 and isinstance(s.first_chunk, dict)
            and set(s.first_chunk) == set(names) and _is_int(*s.first_chunk.values())
            and isinstance(s.shuffle, dict) and set(s.shuffle) <= set(names)
            and all(_is_int(w) and w in SHUFFLE_WIDTHS for w in s.shuffle.values())):
        return "the compressed copy's description is malformed"
    for n, w in s.shuffle.items() if s is not None else ():
        if w != by_name[n].shuffle_width:
            return f"column {n!r}: its compressed copy is shuffled by {w} bytes, not its values' width"
    o = m.origin
    if o is not None and not (
            all(isinstance(x, str) for x in (*o.specs, *o.files)) and _is_int(*o.sizes, *o.mtimes)
            and len(o.files) == len(o.sizes) == len(o.mtimes) and o.floats in tuple(FloatEncoding)):
        return "the record of its source files is malformed"
    return None


def _packing_inconsistency(m: Manifest, c: ColumnMeta) -> str | None:
    """What makes packed column ``c`` of manifest ``m`` inconsistent, or None."""
    if c.dtype not in PACKABLE_TYPES or not 1 <= c.bits <= MAX_BITS or c.bits >= 8 * c.itemsize:
        return f"{c.bits} bits per value do not pack a column stored as {c.dtype}"
    if c.rows_per_page != rows_per_page(m.page_size, c.bits):
        return (f"{c.rows_per_page} rows of {c.bits} bits per page do not fill "
                f"{m.page_size} B pages")
    lo, hi = c.min, c.max
    if c.scale and isinstance(lo, int | float) and isinstance(hi, int | float):
        lo, hi = round(lo * 10**c.scale), round(hi * 10**c.scale)  # in stored units
    if _is_int(lo, hi) and hi - lo >= (1 << c.bits) - 1:
        return f"its range [{c.min}, {c.max}] does not fit {c.bits} bits"
    return None


def _sql_type_ok(c: ColumnMeta) -> bool:
    """Whether the ``sql_type`` of integer column ``c`` is one it may have: BOOLEAN over 0
    and 1, or a DECIMAL whose range has at most its precision's digits."""
    from bamql.storage.sqltypes import BOOLEAN, parse_decimal

    if c.sql_type == BOOLEAN:
        return all(v is None or v in (0, 1) for v in (c.min, c.max))
    d = parse_decimal(c.sql_type)
    return d is not None and all(v is None or abs(v) < 10 ** d[0] for v in (c.min, c.max))


def _timestamp_type_ok(c: ColumnMeta) -> bool:
    """Whether the ``sql_type`` of timestamp column ``c`` is one it may have: TIMESTAMP WITH
    TIME ZONE, or DATE over midnights (multiples of a day's microseconds)."""
    from bamql.storage.sqltypes import DATE, DAY_US, TIMESTAMPTZ

    if c.sql_type == DATE:
        return all(v is None or (isinstance(v, int) and v % DAY_US == 0) for v in (c.min, c.max))
    return c.sql_type == TIMESTAMPTZ


def _column_inconsistency(m: Manifest, c: ColumnMeta) -> str | None:
    """What makes column ``c`` of manifest ``m`` inconsistent, or None."""
    if not _is_int(c.first_page, c.n_pages, c.rows_per_page, c.nulls, c.scale, c.bits):
        return "a field has the wrong type"
    if c.kind not in KINDS:
        return f"kind {c.kind!r} is not one of {', '.join(KINDS)}"
    if c.decimal is not None and (c.kind != "float" or not isinstance(c.decimal, bool)):
        return "only a float column records whether it is a DECIMAL, as true or false"
    if c.sql_type is not None and not (_sql_type_ok(c) if c.kind == "int" else
                                       c.kind == "timestamp" and _timestamp_type_ok(c)):
        return f"SQL type {c.sql_type!r} does not fit a {c.kind} column"
    if c.wide and (c.sql_type is None or c.sql_type == "BOOLEAN" or c.bits or c.scale
                   or c.min is not None or c.max is not None or c.histogram is not None):
        return "a 16-byte column is a DECIMAL of no recorded range, stored plain"
    scaled = c.kind == "float" and c.dtype in SCALED_TYPES
    if c.dtype not in STORAGE_TYPES[c.kind] and not scaled:
        return f"storage type {c.dtype!r} is not one of a {c.kind} column's"
    if (c.scale != 0 or scaled) and not (scaled and 1 <= c.scale <= MAX_DECIMALS):
        return f"scale {c.scale} does not fit a {c.kind} column stored as {c.dtype}"
    if c.bits:
        problem = _packing_inconsistency(m, c)
        if problem:
            return problem
    elif c.rows_per_page * c.itemsize != m.page_size:
        return f"{c.rows_per_page} rows of {c.dtype} per page do not fill {m.page_size} B pages"
    if c.n_pages != -(-m.rows // c.rows_per_page) or c.first_page < 0:
        return f"{c.n_pages} pages do not hold {m.rows} rows of {c.rows_per_page}"
    if not 0 <= c.nulls <= m.rows:
        return f"{c.nulls} NULLs in {m.rows} rows"
    if c.histogram is not None and (
            not isinstance(c.histogram, dict) or not _is_int(*c.histogram.values())
            or sum(c.histogram.values()) != m.rows - c.nulls):
        return "its histogram does not count its non-NULL rows"
    # a bound is None where no value is finite (a float's NaN makes its maximum None)
    if not all(isinstance(v, int | float | None) for v in (c.min, c.max)) or (
            c.min is not None and c.max is not None and c.min > c.max):
        return f"its range [{c.min}, {c.max}] is malformed"
    if c.kind != "string":
        return None if c.dictionary is None else "a dictionary on a column that is no string"
    d = c.dictionary
    if d is None or not all(isinstance(x, str) for x in d) or any(
            a >= b for a, b in zip(d, d[1:], strict=False)):
        return "its dictionary is not sorted, unique strings"
    if len(d) > np.iinfo(c.np_dtype).max or c.min is not None and not (
            _is_int(c.min) and 0 <= c.min) or c.max is not None and not (
            _is_int(c.max) and c.max < len(d)):
        return f"its codes [{c.min}, {c.max}] or its dictionary of {len(d)} do not fit"
    return None
