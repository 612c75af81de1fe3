"""A store's ``pages.npz`` read in one pass: its arrays taken from the bytes read.

``numpy.load`` of an ``.npz`` reads each member through ``zipfile``, computing its CRC on the
way, and copies it more than once; a store of a million pages spends a good part of a
one-shot query there. The page metadata is sealed by the sha256 of the file's bytes (the
manifest's ``pages_meta_sha256``), which covers what the members' CRCs would, so
:func:`read_npz` reads the file once into one buffer, a chunk at a time, while another
thread hashes the chunks already read (``hashlib`` lets go of the GIL); the members are found
from their headers meanwhile, and once the digest matches each is a view of the buffer. A
member's data that is not aligned for its dtype (numba types an unaligned array as another
type, and would compile its kernels again for it) is first moved back onto the alignment,
over the end of its own header. An archive this reader does not take as it is (a
compressed member, a ``.npy`` format version beyond 2.0) is read by ``numpy.load``, from the
same bytes. Arrays of Python objects (pickles) are refused, as ``numpy.load`` refuses them.
"""

from __future__ import annotations

import ctypes
import hashlib
import io
import os
import queue
import struct
import threading
import zipfile

import numpy as np

#: The most bytes a ``.npy`` header may hold (``numpy.load``'s own limit).
_MAX_HEADER = 10_000


class DigestMismatch(ValueError):
    """The file's sha256 is not the one it was sealed with."""


class _Buffer(io.RawIOBase):
    """A seekable file over a buffer that reads without copying the buffer first."""

    def __init__(self, buf: np.ndarray) -> None:
        super().__init__()
        self._mv = memoryview(buf).cast("B")
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: len(self._mv)}[whence]
        if base + offset < 0:
            raise ValueError("negative seek position")
        self._pos = base + offset
        return self._pos

    def tell(self) -> int:
        return self._pos

    def readinto(self, b) -> int:
        chunk = self._mv[self._pos : self._pos + len(b)]
        memoryview(b).cast("B")[: len(chunk)] = chunk
        self._pos += len(chunk)
        return len(chunk)


#: Bytes read per call: the digest thread hashes each chunk while the next one is read.
_CHUNK = 8 << 20


def read_npz(fd: int, sha256: str) -> dict[str, np.ndarray]:
    """The arrays of the ``.npz`` file open at ``fd`` (closed here), by member name without
    ``.npy``, once the sha256 of its bytes is ``sha256``.

    Raises
    ------
    DigestMismatch
        The file's digest is another: it is corrupt, whatever its members look like.
    ValueError
        The archive or a member is malformed, or holds Python objects.
    """
    chunks: queue.SimpleQueue[tuple[int, int] | None] = queue.SimpleQueue()
    digest: list[str] = []
    with os.fdopen(fd, "rb", buffering=0) as f:
        raw = np.empty(os.fstat(f.fileno()).st_size, np.uint8)
        mv = memoryview(raw)

        def hash_chunks() -> None:
            h = hashlib.sha256()
            while (span := chunks.get()) is not None:
                h.update(mv[span[0] : span[1]])
            digest.append(h.hexdigest())

        hasher = threading.Thread(target=hash_chunks, name="bamql-npz-digest", daemon=True)
        hasher.start()
        got = 0
        try:  # the bytes the file has at its size when opened: a later append is not read
            while got < len(raw):
                n = f.readinto(mv[got : got + _CHUNK])
                if not n:
                    break
                chunks.put((got, got + n))
                got += n
        finally:
            chunks.put(None)
    raw = raw[:got]
    try:
        found = _members(raw)
    except (ValueError, KeyError, IndexError, OSError, struct.error, zipfile.BadZipFile) as e:
        hasher.join()
        if digest[0] != sha256:  # a corrupt file says so before any of its malformations
            raise DigestMismatch("checksum mismatch") from None
        raise ValueError(str(e) or type(e).__name__) from None
    hasher.join()
    if digest[0] != sha256:
        raise DigestMismatch("checksum mismatch")
    if isinstance(found, dict):  # numpy.load's arrays
        return found
    return {name: _placed(raw, *where) for name, where in found}


def _members(raw: np.ndarray) -> list[tuple[str, tuple]] | dict[str, np.ndarray]:
    """Where each member of the ``.npz`` archive ``raw`` lies (``(name, (offset, shape,
    fortran order, dtype, the header's first byte))``), read from its headers alone; or
    numpy.load's arrays where this reader does not take a member as it is."""
    with zipfile.ZipFile(_Buffer(raw)) as zf:
        infos = zf.infolist()
    out = []
    for info in infos:
        where = _member(raw, info)
        if where is None:
            return _numpy_load(raw)
        out.append((info.filename.removesuffix(".npy"), where))
    return out


def _member(raw: np.ndarray, info: zipfile.ZipInfo) -> tuple | None:
    """Where the data of member ``info`` of archive ``raw`` lies and what it holds, or None
    where it is not a stored (uncompressed) ``.npy`` of format 1.0 or 2.0."""
    if info.compress_type != zipfile.ZIP_STORED or info.flag_bits & 0x1:  # encrypted
        return None
    h = info.header_offset
    head = raw[h : h + 30].tobytes()
    if len(head) < 30 or head[:4] != b"PK\x03\x04":
        raise ValueError(f"member {info.filename!r} has no local header")
    n_name, n_extra = struct.unpack("<HH", head[26:30])
    start = h + 30 + n_name + n_extra
    end = start + info.file_size
    if end > len(raw):
        raise ValueError(f"member {info.filename!r} runs past the end of the archive")
    f = _Buffer(raw[start:end])
    version = np.lib.format.read_magic(f)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(f, max_header_size=_MAX_HEADER)
    elif version == (2, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(f, max_header_size=_MAX_HEADER)
    else:
        return None
    if dtype.hasobject:
        raise ValueError(f"member {info.filename!r} holds Python objects, which are refused")
    count = int(np.prod(shape, dtype=np.int64))
    offset = start + f.tell()
    if count < 0 or offset + count * dtype.itemsize > end:
        raise ValueError(f"member {info.filename!r} is shorter than its header says")
    return offset, shape, fortran, dtype, start


def _placed(raw: np.ndarray, offset: int, shape: tuple, fortran: bool, dtype: np.dtype,
            header: int) -> np.ndarray:
    """The member whose data is at ``offset`` of ``raw`` as an array over ``raw``.

    Data not aligned for its dtype is moved back onto the alignment below it, over the end
    of its own ``.npy`` header (at least ten bytes, and parsed by now): the digest is known
    by then, and every array stays a view of the one buffer rather than a copy beside it.
    """
    n = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    align = max(dtype.alignment, 1)
    shift = (raw.ctypes.data + offset) % align
    if shift and offset - shift >= header:
        ctypes.memmove(raw.ctypes.data + offset - shift, raw.ctypes.data + offset, n)
        offset -= shift
    arr = raw[offset : offset + n].view(dtype)
    if (raw.ctypes.data + offset) % align:  # no room before it: one aligned copy
        arr = arr.copy()
    return arr.reshape(shape, order="F" if fortran else "C")


def _numpy_load(raw: np.ndarray) -> dict[str, np.ndarray]:
    """Every member of archive ``raw`` through ``numpy.load`` (pickles refused)."""
    with np.load(io.BytesIO(raw.tobytes())) as z:
        return {k: z[k] for k in z.files}


__all__ = ["DigestMismatch", "read_npz"]
