"""Kafka compression codecs, decompressed under a size cap.

A record batch is a few kilobytes on the wire but can claim gigabytes once inflated, so every
codec here produces output in bounded steps and stops at ``limit`` bytes: memory stays near the
cap whatever the compressed bytes claim. Problems (corrupt streams, the cap, Kafka's old LZ4
header) come back as warnings next to whatever output was produced before them, never as
exceptions, so the caller can still decode the records that did come out.

The compressors are here too because the encoder (tests, synthetic captures) must write exactly
the framings real clients write: xerial-framed snappy (Java), independent-block LZ4 frames, and
the LZ4 frame with the wrong header checksum that Kafka 0.8–0.9 wrote for magic 0 messages.
"""

from __future__ import annotations

import struct
import zlib

from kdissect.dataclass import dataclass
from kdissect.lazy import lazy_module

from .errors import DecodeWarning

cramjam = lazy_module("cramjam")  # (loaded by the first compressed batch)
lz4_frame = lazy_module("lz4.frame")

CODEC_NONE = 0
CODEC_GZIP = 1
CODEC_SNAPPY = 2
CODEC_LZ4 = 3
CODEC_ZSTD = 4
CODEC_NAMES = {CODEC_NONE: "none", CODEC_GZIP: "gzip", CODEC_SNAPPY: "snappy", CODEC_LZ4: "lz4", CODEC_ZSTD: "zstd"}

DEFAULT_LIMIT = 256 * 1024 * 1024
_STEP = 1 << 20  # output produced per decompressor call: the overshoot past the cap is at most this
_FEED = 64 * 1024  # compressed bytes handed over per call, so no call copies the whole input

XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = XERIAL_MAGIC + struct.pack(">ii", 1, 1)  # version 1, compatible back to 1
_XERIAL_BLOCK = 32 * 1024  # snappy-java's default block size
_I32 = struct.Struct(">i")
_U32LE = struct.Struct("<I")
# A snappy copy op of 3 bytes emits at most 64 bytes; nothing expands more per input byte.
_SNAPPY_MAX_RATIO = 22
# A zstd RLE block (4 bytes) emits up to 128 KiB; feeding input in pieces of this many bytes per
# byte of room keeps each call's output near the room left.
_ZSTD_MAX_RATIO = 32 * 1024
_ZSTD_MIN_FEED = 64

LZ4_MAGIC = b"\x04\x22\x4d\x18"


@dataclass(frozen=True, slots=True)
class Decompressed:
    """Output of one decompression: all bytes produced, and what went wrong (if anything)."""

    data: bytes
    warnings: tuple[DecodeWarning, ...] = ()

    @property
    def complete(self) -> bool:
        """True when ``data`` is the whole decompressed payload (no error, no cap)."""
        return not any(w.code in ("decompression_failed", "decompression_capped") for w in self.warnings)


class _Sink:
    """Collects output up to a cap; remembers whether more was offered than fits."""

    __slots__ = ("capped", "chunks", "limit", "size")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.chunks: list[bytes] = []
        self.size = 0
        self.capped = False

    @property
    def room(self) -> int:
        return self.limit - self.size

    def add(self, chunk: bytes) -> None:
        room = self.limit - self.size
        if len(chunk) > room:
            chunk = chunk[:room]
            self.capped = True
        self.chunks.append(chunk)
        self.size += len(chunk)

    def result(self, codec: int, error: str | None, extra: tuple[DecodeWarning, ...] = ()) -> Decompressed:
        warnings = list(extra)
        name = CODEC_NAMES.get(codec, str(codec))
        if error is not None:
            warnings.append(
                DecodeWarning("decompression_failed", f"{name}: {error} (kept {self.size} bytes produced before)")
            )
        if self.capped:
            warnings.append(
                DecodeWarning("decompression_capped", f"{name}: output stopped at the {self.limit}-byte cap")
            )
        return Decompressed(b"".join(self.chunks), tuple(warnings))


def decompress(
    codec: int, data: bytes | memoryview, limit: int = DEFAULT_LIMIT, *, legacy_lz4: bool = False
) -> Decompressed:
    """Decompress ``data`` written with Kafka codec id ``codec``, producing at most ``limit`` bytes.

    ``legacy_lz4`` says the payload comes from a magic 0 message, where Kafka 0.8–0.9's wrong LZ4
    header checksum is expected and so not reported.
    """
    sink = _Sink(limit)
    if codec == CODEC_GZIP:
        return sink.result(codec, _inflate(memoryview(data), sink))
    if codec == CODEC_SNAPPY:
        return sink.result(codec, _unsnappy(bytes(data), sink))
    if codec == CODEC_LZ4:
        error, notes = _unlz4(bytes(data), sink, legacy_lz4)
        return sink.result(codec, error, notes)
    if codec == CODEC_ZSTD:
        return sink.result(codec, _unzstd(memoryview(data), sink))
    return Decompressed(b"", (DecodeWarning("unknown_codec", f"compression codec {codec} is not defined"),))


def _inflate(view: memoryview, sink: _Sink) -> str | None:
    """gzip (or zlib) members, one after another as Java's GZIPInputStream reads them."""
    pos, n = 0, len(view)
    while pos < n:
        d = zlib.decompressobj(47)  # 32 + 15: accept a gzip or zlib header
        tail: bytes | memoryview = b""
        try:
            while not d.eof:
                if not tail:
                    if pos >= n:
                        return "compressed data ends early"
                    tail, pos = view[pos : pos + _FEED], pos + _FEED
                sink.add(d.decompress(tail, min(_STEP, sink.room + 1)))
                tail = d.unconsumed_tail
                if sink.capped:
                    return None
        except zlib.error as exc:
            return str(exc)
        pos = min(pos, n) - len(d.unused_data)  # the next member starts where this one ended
    return None


def _unsnappy(data: bytes, sink: _Sink) -> str | None:
    """Raw snappy, or the xerial framing (header, then big-endian length + raw block, repeated)."""
    if not data.startswith(XERIAL_MAGIC):
        return _snappy_block(data, sink)
    p, n = 0, len(data)
    while p < n:
        if data.startswith(XERIAL_MAGIC, p):  # snappy-java also reads streams written back to back
            p += len(_XERIAL_HEADER)
            continue
        if n - p < 4:
            return f"{n - p} stray bytes where a xerial block length belongs"
        (size,) = _I32.unpack_from(data, p)
        p += 4
        if size < 0 or size > n - p:
            return f"xerial block of {size} bytes, {n - p} left"
        error = _snappy_block(data[p : p + size], sink)
        if error is not None or sink.capped:
            return error
        p += size
    return None


def _snappy_block(block: bytes, sink: _Sink) -> str | None:
    """One raw snappy block; its length preamble is checked before anything is allocated."""
    try:
        size = cramjam.snappy.decompress_raw_len(block)
    except cramjam.DecompressionError as exc:
        return str(exc)
    if size > len(block) * _SNAPPY_MAX_RATIO:
        return f"block claims {size} bytes, more than {len(block)} snappy bytes can hold"
    if size > sink.room + _STEP:
        sink.capped = True  # cramjam cannot stop part-way through a block: skip one far past the cap
        return None
    try:
        sink.add(bytes(cramjam.snappy.decompress_raw(block)))
    except cramjam.DecompressionError as exc:
        return str(exc)
    return None


def _unlz4(data: bytes, sink: _Sink, legacy: bool) -> tuple[str | None, tuple[DecodeWarning, ...]]:
    """LZ4 frames, one after another; a frame whose header checksum is wrong is retried with it fixed.

    Each frame is cut out by walking its block sizes first, so the decompressor never sees (nor
    copies back as unused data) the bytes after it: a payload of a million tiny frames is linear.
    """
    pos, n = 0, len(data)
    notes: list[DecodeWarning] = []
    while pos < n and not sink.capped:
        end = _lz4_frame_end(data, pos)
        frame = data[pos:end]
        try:
            rest = _lz4_frame(frame, sink)
        except _HeaderChecksum:
            fixed, note = _fix_lz4_header(frame, legacy)
            if note is not None:
                notes.append(note)
            try:
                rest = _lz4_frame(fixed, sink)
            except (RuntimeError, _HeaderChecksum) as exc:
                return str(exc), tuple(notes)
        except RuntimeError as exc:
            return str(exc), tuple(notes)
        pos += len(frame) - len(rest)
    return None, tuple(notes)


def _lz4_frame_end(data: bytes, at: int) -> int | None:
    """Where the LZ4 frame starting at ``at`` ends, from its header flags and block sizes; None
    when that cannot be told (not a frame, or cut short): the decompressor then gets the rest."""
    n = len(data)
    if n - at < 7 or data[at : at + 4] != LZ4_MAGIC:
        return None
    flg = data[at + 4]
    p = at + 7 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0)
    block_checksum = 4 if flg & 0x10 else 0
    while p + 4 <= n:
        size = _U32LE.unpack_from(data, p)[0] & 0x7FFFFFFF
        p += 4
        if not size:
            return min(n, p + (4 if flg & 0x04 else 0))
        p += size + block_checksum
    return None


class _HeaderChecksum(Exception):
    """Internal: the LZ4 frame header checksum does not match (Kafka 0.8–0.9 wrote it wrong)."""


def _lz4_frame(frame: bytes, sink: _Sink) -> bytes:
    """Decompress the LZ4 frame at the start of ``frame`` into ``sink``; return the bytes after it."""
    d = lz4_frame.LZ4FrameDecompressor()
    try:
        chunk = d.decompress(frame, max_length=min(_STEP, sink.room + 1))
    except RuntimeError as exc:
        if "headerChecksum" in str(exc):
            raise _HeaderChecksum(str(exc)) from None
        raise
    while True:
        sink.add(chunk)
        if sink.capped or d.eof:
            return d.unused_data or b""
        if d.needs_input:
            raise RuntimeError("compressed data ends early")
        chunk = d.decompress(b"", max_length=min(_STEP, sink.room + 1))


def _lz4_descriptor_end(frame: bytes) -> int | None:
    """Index of the header checksum byte of the LZ4 frame at the start of ``frame`` (None if unreadable)."""
    if len(frame) < 7 or not frame.startswith(LZ4_MAGIC):
        return None
    flg = frame[4]
    end = 6 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0)  # content size, dictionary id
    return end if end < len(frame) else None


def _lz4_header_checksum(descriptor: bytes) -> int:
    return (xxh32(descriptor) >> 8) & 0xFF


def _fix_lz4_header(frame: bytes, legacy: bool) -> tuple[bytes, DecodeWarning | None]:
    """Return the frame with a correct header checksum byte, and a note when it had to change.

    Kafka 0.8–0.9 hashed the 4 magic bytes along with the descriptor; that is expected in magic 0
    messages (``legacy``) and noted elsewhere. Any other wrong value is noted as bad and fixed too,
    so the blocks still get decoded.
    """
    hc_at = _lz4_descriptor_end(frame)
    if hc_at is None:
        return frame, None
    good = _lz4_header_checksum(frame[4:hc_at])
    found = frame[hc_at]
    if found == good:
        return frame, None
    fixed = frame[:hc_at] + bytes((good,)) + frame[hc_at + 1 :]
    if found == _lz4_header_checksum(frame[:hc_at]):
        if legacy:
            return fixed, None
        return fixed, DecodeWarning(
            "lz4_legacy_header_checksum", "LZ4 header checksum written the Kafka 0.8–0.9 way in a newer message"
        )
    return fixed, DecodeWarning(
        "lz4_header_checksum", f"LZ4 header checksum {found:#04x}, expected {good:#04x}; decoded anyway"
    )


def _unzstd(view: memoryview, sink: _Sink) -> str | None:
    """zstd frames, one after another, with or without a content size.

    The decompression object has no output limit, so input goes in pieces small enough that
    even the most compressible block cannot push the output far past the room left.
    """
    import zstandard  # loaded on first use: its import costs more than a short run's decoding

    pos, n = 0, len(view)
    dctx = zstandard.ZstdDecompressor()
    while pos < n:
        d = dctx.decompressobj()
        try:
            while not d.eof:
                if pos >= n:
                    return "compressed data ends early"
                feed = min(_FEED, max(_ZSTD_MIN_FEED, sink.room // _ZSTD_MAX_RATIO))
                sink.add(d.decompress(view[pos : pos + feed]))
                pos += feed
                if sink.capped:
                    return None
        except zstandard.ZstdError as exc:
            return str(exc)
        pos = min(pos, n) - len(d.unused_data)
    return None


def compress(codec: int, data: bytes, *, xerial: bool = True, legacy_lz4: bool = False) -> bytes:
    """Compress ``data`` the way Kafka clients do (for the encoder and tests).

    ``xerial`` writes snappy in the xerial framing Java clients use (else one raw block);
    ``legacy_lz4`` writes the wrong LZ4 header checksum of Kafka 0.8–0.9 magic 0 messages.
    """
    if codec == CODEC_GZIP:
        return zlib.compress(data, wbits=31)
    if codec == CODEC_SNAPPY:
        if not xerial:
            return bytes(cramjam.snappy.compress_raw(data))
        blocks = [_XERIAL_HEADER]
        for i in range(0, len(data), _XERIAL_BLOCK):
            block = bytes(cramjam.snappy.compress_raw(data[i : i + _XERIAL_BLOCK]))
            blocks += (_I32.pack(len(block)), block)
        return b"".join(blocks)
    if codec == CODEC_LZ4:
        frame = lz4_frame.compress(data, block_linked=False, store_size=False)
        if legacy_lz4:
            hc_at = 6  # no content size, no dictionary id
            frame = frame[:hc_at] + bytes((_lz4_header_checksum(frame[:hc_at]),)) + frame[hc_at + 1 :]
        return frame
    if codec == CODEC_ZSTD:
        import zstandard

        return zstandard.ZstdCompressor().compress(data)
    raise ValueError(f"cannot compress with codec {codec}")


_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def _round(acc: int, lane: int) -> int:
    return (_rotl((acc + lane * _P2) & _M32, 13) * _P1) & _M32


def xxh32(data: bytes, seed: int = 0) -> int:
    """XXH32 of a few bytes: only LZ4 frame header checksums need it, so plain Python is fine."""
    n = len(data)
    p = 0
    if n >= 16:
        v = [(seed + _P1 + _P2) & _M32, (seed + _P2) & _M32, seed & _M32, (seed - _P1) & _M32]
        while p + 16 <= n:
            for i in range(4):
                v[i] = _round(v[i], int.from_bytes(data[p : p + 4], "little"))
                p += 4
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _M32
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while p + 4 <= n:
        h = (_rotl((h + int.from_bytes(data[p : p + 4], "little") * _P3) & _M32, 17) * _P4) & _M32
        p += 4
    while p < n:
        h = (_rotl((h + data[p] * _P5) & _M32, 11) * _P1) & _M32
        p += 1
    h = ((h ^ (h >> 15)) * _P2) & _M32
    h = ((h ^ (h >> 13)) * _P3) & _M32
    return h ^ (h >> 16)
