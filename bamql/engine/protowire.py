"""The protobuf wire format, as much of it as Flight SQL's messages use.

A message is a sequence of fields, each a key (``field number << 3 | wire type``, a varint)
and a value: a varint (type 0), a length-delimited byte string (type 2: strings, bytes,
embedded messages, packed repeated scalars) or a fixed 64/32-bit word (types 1 and 5, only
stepped over here). Encoding them by hand keeps bamql free of a protobuf dependency.
"""

from __future__ import annotations

from enum import IntEnum

from bamql.errors import UsageError


class WireType(IntEnum):
    """The wire types of a field's key."""

    VARINT = 0
    FIXED64 = 1
    BYTES = 2
    FIXED32 = 5


_FIXED = {WireType.FIXED64: 8, WireType.FIXED32: 4}


def varint(n: int) -> bytes:
    """``n`` (0 <= n < 2**64; a negative int64 as its two's complement) as a varint."""
    n &= (1 << 64) - 1
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def read_varint(data: bytes, at: int) -> tuple[int, int]:
    """The varint at ``data[at:]`` and the position after it."""
    n = shift = 0
    while True:
        if at >= len(data) or shift > 63:
            raise UsageError("a Flight SQL message is cut short or malformed (a varint)")
        b = data[at]
        at += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return n, at


def field(number: int, value: bytes | str | int | bool) -> bytes:
    """One field: an int or bool as a varint, bytes or str as a length-delimited string."""
    if isinstance(value, bool | int):
        return varint(number << 3 | WireType.VARINT) + varint(int(value))
    raw = value.encode() if isinstance(value, str) else bytes(value)
    return varint(number << 3 | WireType.BYTES) + varint(len(raw)) + raw


def fields(data: bytes) -> list[tuple[int, WireType, int | bytes]]:
    """A message's fields in order: (number, wire type, value); fixed-width values are
    their raw bytes. Malformed input is a UsageError."""
    out: list[tuple[int, WireType, int | bytes]] = []
    at = 0
    while at < len(data):
        key, at = read_varint(data, at)
        number, kind = key >> 3, key & 7
        if number == 0 or kind not in WireType._value2member_map_:
            raise UsageError("a Flight SQL message is malformed (a field key)")
        wt = WireType(kind)
        if wt is WireType.VARINT:
            value, at = read_varint(data, at)
        else:
            size = _FIXED.get(wt)
            if size is None:
                size, at = read_varint(data, at)
            if at + size > len(data):
                raise UsageError("a Flight SQL message is cut short (a field's length)")
            value, at = bytes(data[at:at + size]), at + size
        out.append((number, wt, value))
    return out


def packed_varints(value: int | bytes) -> list[int]:
    """A repeated varint field's values: one unpacked value, or a packed run."""
    if isinstance(value, int):
        return [value]
    out, at = [], 0
    while at < len(value):
        n, at = read_varint(value, at)
        out.append(n)
    return out
