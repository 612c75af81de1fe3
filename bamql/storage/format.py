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

Nulls are stored in-band as a sentinel (the storage type's minimum for integers,
timestamps, dictionary codes and scaled floats), not as a validity bitmap: a gather then
costs one page per value instead of two, which is what late materialization is for. A
float64 or float32 column's NULL is one NaN bit pattern (``NULL_F64_BITS``,
``NULL_F32_BITS``: a quiet NaN with a payload) and a real NaN is stored as the canonical
NaN, so the two stay apart (from version 3 on; before, both were NaN). A column holding real
NaNs is never stored as scaled integers, and a scaled column has at least one decimal
(``scale >= 1``): ``scale`` 0 always means "stored as is".
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from bamql.errors import StoreError

FORMAT_NAME = "bamql-pagestore"
FORMAT_VERSION = 3
#: Versions this bamql reads (1 has no scaled floats; every ``scale`` is then 0). Versions 1
#: and 2 store a float's NULL and NaN alike, and version 2 wrote whole-number floats as
#: integers with ``scale`` 0 and their NULLs as 0: ``Manifest.load`` refuses such columns.
READABLE_VERSIONS = (1, 2, 3)
#: The NULL of a float64 / float32 column: a quiet NaN with a payload ("NULL" in ASCII) that
#: ingest never stores for a value (real NaNs are stored as the canonical NaN).
NULL_F64_BITS = 0x7FF8_0000_4E55_4C4C
NULL_F32_BITS = 0x7FC0_4E55
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


def sentinel_for(dtype: np.dtype):
    """The null sentinel of a storage dtype: for floats the NaN of bits ``NULL_F64_BITS`` /
    ``NULL_F32_BITS`` (a NumPy scalar of the dtype, which keeps the bits), for integers the
    minimum."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        bits = np.array([_null_bits(dtype)], dtype=_bits_dtype(dtype))
        return bits.view(dtype)[0]
    return int(np.iinfo(dtype).min)


def _bits_dtype(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.int64) if np.dtype(dtype).itemsize == 8 else np.dtype(np.int32)


def _null_bits(dtype: np.dtype) -> int:
    if np.dtype(dtype) not in (np.dtype(np.float64), np.dtype(np.float32)):
        raise StoreError(f"float storage type {np.dtype(dtype)} is not supported (float32/64)")
    return NULL_F64_BITS if np.dtype(dtype).itemsize == 8 else NULL_F32_BITS


def null_mask(values: np.ndarray) -> np.ndarray:
    """Where stored ``values`` are NULL: the NULL bit pattern for floats (a real NaN is not
    NULL), the sentinel otherwise."""
    if values.dtype.kind == "f":
        return values.view(_bits_dtype(values.dtype)) == _null_bits(values.dtype)
    return values == sentinel_for(values.dtype)


def float_storage(values: np.ndarray, nulls: np.ndarray | None, dtype: np.dtype) -> np.ndarray:
    """Float ``values`` as stored (a new array of ``dtype``): every NaN made the canonical NaN
    and the rows where ``nulls`` is true (a boolean mask, or None) the NULL bit pattern."""
    out = np.array(values, dtype=dtype, copy=True)
    out[np.isnan(out)] = np.nan  # any sign or payload: the canonical quiet NaN
    if nulls is not None and nulls.any():
        out.view(_bits_dtype(dtype))[nulls] = _null_bits(dtype)
    return out


def narrow_int_dtype(lo: int, hi: int) -> np.dtype:
    """Smallest signed integer dtype holding ``[lo, hi]`` with its minimum kept for null."""
    for dt in (np.int8, np.int16, np.int32, np.int64):
        info = np.iinfo(dt)
        if info.min < lo and hi <= info.max:
            return np.dtype(dt)
    raise StoreError(f"integer range [{lo}, {hi}] does not fit int64 with a null sentinel")


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

    def decode(self, stored: np.ndarray) -> np.ndarray:
        """Stored values -> the column's values (scaled floats divided, their nulls NaN;
        see ``null_mask`` for telling the nulls of unscaled floats from their NaNs)."""
        if not self.scale:
            return stored
        out = stored.astype(np.float64) / self.divisor
        out[stored == self.sentinel] = np.nan
        return out

    def page_of(self, rows: np.ndarray) -> np.ndarray:
        """Global page ids holding ``rows``."""
        return self.first_page + rows // self.rows_per_page


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
    chunk offsets and lengths are in the page metadata (``zst:off``, ``zst:len``)."""

    file: str
    codec: str
    chunk_pages: int
    first_chunk: dict[str, int]
    file_bytes: int


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
        d = asdict(self)
        return json.dumps(d, indent=1)

    @classmethod
    def load(cls, path: Path) -> Manifest:
        mpath = path / MANIFEST
        if not path.exists():
            raise StoreError(f"store {path} does not exist")
        if not mpath.exists():
            raise StoreError(f"{path} is not a bamql table: no {MANIFEST}")
        try:
            d = json.loads(mpath.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise StoreError(f"store {path}: {MANIFEST} is corrupt ({e})") from None
        if not isinstance(d, dict) or d.get("format") != FORMAT_NAME:
            raise StoreError(f"store {path}: {MANIFEST} is not a bamql page-store manifest")
        if d.get("format_version") not in READABLE_VERSIONS:
            raise StoreError(
                f"store {path}: format version {d.get('format_version')} is not supported "
                f"(this bamql reads versions {', '.join(map(str, READABLE_VERSIONS))}); "
                "re-ingest the table"
            )
        try:
            cols = []
            for c in d.pop("columns"):
                if c.get("dictionary") is not None:
                    c["dictionary"] = tuple(c["dictionary"])
                cols.append(ColumnMeta(**c))
                _check_float(path, cols[-1], old=d["format_version"] < 3)
            d["sources"] = tuple(d.get("sources", ()))
            d["groups"] = tuple(GroupMeta(**{**g, "members": tuple(g["members"])})
                                for g in d.get("groups", ()))
            if d.get("streams") is not None:
                d["streams"] = StreamMeta(**d["streams"])
            return cls(columns=tuple(cols), **d)
        except (TypeError, KeyError) as e:
            raise StoreError(f"store {path}: {MANIFEST} is malformed ({e})") from None


def _check_float(path: Path, c: ColumnMeta, old: bool) -> None:
    """Refuse a float column whose values are ambiguous: one stored as integers with scale 0
    (version 2 wrote whole numbers so, their NULLs as 0), or, in a version 1 or 2 store
    (``old``), one with NULLs (a NULL and a NaN were both stored as NULL)."""
    if c.kind != "float":
        return
    if np.dtype(c.dtype).kind == "i" and not c.scale:
        raise StoreError(f"store {path}: column {c.name!r} was ingested by an older bamql that "
                         "stored its NULLs as 0; re-ingest the table")
    if old and c.nulls:
        raise StoreError(f"store {path}: column {c.name!r} was ingested by an older bamql that "
                         "stored NaN as NULL; re-ingest the table")
