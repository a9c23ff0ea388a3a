"""Variable-length integer primitives shared by compiled decoders, the encoder and record batches.

Kafka uses unsigned LEB128 varints for compact lengths and tags, and zig-zag signed varints
inside record batches. Readers bound the number of bytes they consume, so a run of 0xff bytes
can't make them loop or build huge integers.
"""

from __future__ import annotations


class Malformed(Exception):
    """Internal signal from compiled code: the bytes break a protocol rule (turned into
    :class:`~kdissect.decoders.errors.DecodeError` with a field path by the caller)."""


def read_uvarint(b: bytes, p: int, max_bytes: int = 5) -> tuple[int, int]:
    """Unsigned varint at ``p`` -> (value, next position). 5 bytes max for 32-bit, 10 for 64-bit."""
    result = 0
    shift = 0
    end = p + max_bytes
    while p < end:
        byte = b[p]  # IndexError past the end is a short read for the caller
        p += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, p
        shift += 7
    raise Malformed(f"varint longer than {max_bytes} bytes")


def read_uvarlong(b: bytes, p: int) -> tuple[int, int]:
    return read_uvarint(b, p, 10)


def read_varint(b: bytes, p: int) -> tuple[int, int]:
    """Zig-zag signed 32-bit varint."""
    n, p = read_uvarint(b, p, 5)
    return (n >> 1) ^ -(n & 1), p


def read_varlong(b: bytes, p: int) -> tuple[int, int]:
    """Zig-zag signed 64-bit varint."""
    n, p = read_uvarint(b, p, 10)
    return (n >> 1) ^ -(n & 1), p


def write_uvarint(n: int) -> bytes:
    if n < 0:
        raise ValueError(f"unsigned varint cannot hold {n}")
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def write_varint(n: int) -> bytes:
    """Zig-zag signed varint (32 or 64 bit: the encoding is the same)."""
    return write_uvarint((n << 1) ^ (n >> 63))
