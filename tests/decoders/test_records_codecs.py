"""Codecs: every framing clients write, bounded output, and decompression bombs stopped at the cap."""

from __future__ import annotations

import struct
import tracemalloc
import zlib

import cramjam
import lz4.frame
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from kdissect.decoders.codecs import (
    CODEC_GZIP,
    CODEC_LZ4,
    CODEC_NAMES,
    CODEC_SNAPPY,
    CODEC_ZSTD,
    XERIAL_MAGIC,
    compress,
    decompress,
    xxh32,
)
from kdissect.decoders.records import Limits, decode_records
from kdissect.testing.records_encode import encode_batch, encode_message, new_record, wrapper

COMPRESSED = [c for c in sorted(CODEC_NAMES) if c]
TEXT = b"".join(b"record %d says hello to the broker; " % i for i in range(5000))
GiB = 1 << 30
MiB = 1 << 20


def codes(result) -> list[str]:
    return [w.code for w in result.warnings]


@pytest.mark.parametrize("codec", COMPRESSED, ids=[CODEC_NAMES[c] for c in COMPRESSED])
def test_round_trip_and_cap(codec: int) -> None:
    packed = compress(codec, TEXT)
    whole = decompress(codec, packed)
    assert whole.data == TEXT and whole.complete and whole.warnings == ()
    capped = decompress(codec, packed, limit=10_000)
    assert capped.data == TEXT[:10_000] and not capped.complete
    assert codes(capped) == ["decompression_capped"]


@pytest.mark.parametrize("codec", COMPRESSED, ids=[CODEC_NAMES[c] for c in COMPRESSED])
def test_cut_stream_keeps_what_came_out(codec: int) -> None:
    packed = compress(codec, TEXT)
    result = decompress(codec, packed[: len(packed) * 3 // 4])
    assert codes(result) == ["decompression_failed"] and not result.complete
    assert TEXT.startswith(result.data)


def test_gzip_members_back_to_back() -> None:
    assert decompress(CODEC_GZIP, compress(CODEC_GZIP, b"one ") + compress(CODEC_GZIP, b"two")).data == b"one two"


def test_gzip_trailing_garbage_is_reported() -> None:
    result = decompress(CODEC_GZIP, compress(CODEC_GZIP, b"payload") + b"junk")
    assert result.data == b"payload" and codes(result) == ["decompression_failed"]


def test_snappy_raw_and_xerial_framings() -> None:
    xerial = compress(CODEC_SNAPPY, TEXT)
    raw = compress(CODEC_SNAPPY, TEXT, xerial=False)
    assert xerial.startswith(XERIAL_MAGIC) and not raw.startswith(XERIAL_MAGIC)
    assert struct.unpack_from(">i", xerial, 16)[0] > 0  # first block length after the 16-byte header
    assert decompress(CODEC_SNAPPY, raw).data == TEXT
    assert decompress(CODEC_SNAPPY, xerial + compress(CODEC_SNAPPY, b"!")).data == TEXT + b"!"


def test_snappy_block_claiming_more_than_it_can_hold_is_refused_without_allocating() -> None:
    lying = bytes(cramjam.snappy.compress_raw(b"x" * 100))
    preamble = bytes([0x80, 0x80, 0x80, 0x80, 0x0F])  # 0xF0000000: about 4 GiB
    result = decompress(CODEC_SNAPPY, preamble + lying[1:])
    assert result.data == b"" and codes(result) == ["decompression_failed"]
    assert "claims" in result.warnings[0].message


def test_lz4_frames_back_to_back_and_linked_blocks() -> None:
    linked = lz4.frame.compress(TEXT, block_linked=True, content_checksum=True)
    assert decompress(CODEC_LZ4, linked + compress(CODEC_LZ4, b"tail")).data == TEXT + b"tail"


def test_lz4_kafka_08_header_checksum_is_fixed() -> None:
    legacy = compress(CODEC_LZ4, TEXT, legacy_lz4=True)
    good = compress(CODEC_LZ4, TEXT)
    assert legacy[:6] == good[:6] and legacy[6] != good[6] and legacy[7:] == good[7:]
    with pytest.raises(RuntimeError):
        lz4.frame.decompress(legacy)  # what a strict reader does with it
    assert decompress(CODEC_LZ4, legacy, legacy_lz4=True) == decompress(CODEC_LZ4, good)
    noted = decompress(CODEC_LZ4, legacy)
    assert noted.data == TEXT and codes(noted) == ["lz4_legacy_header_checksum"]


def test_lz4_any_wrong_header_checksum_is_fixed_and_noted() -> None:
    bad = bytearray(compress(CODEC_LZ4, TEXT))
    bad[6] ^= 0x5A
    result = decompress(CODEC_LZ4, bytes(bad))
    assert result.data == TEXT and codes(result) == ["lz4_header_checksum"]


def test_xxh32_matches_reference() -> None:
    xxhash = pytest.importorskip("xxhash")
    for n in range(40):
        data = bytes(range(n))
        assert xxh32(data) == xxhash.xxh32(data).intdigest()
        assert xxh32(data, 7) == xxhash.xxh32(data, seed=7).intdigest()


def test_zstd_frames_without_content_size_back_to_back() -> None:
    plain = zstandard.ZstdCompressor(write_content_size=False)
    frames = plain.compress(TEXT[:1000]) + plain.compress(TEXT[1000:])
    assert zstandard.get_frame_parameters(frames).content_size == zstandard.CONTENTSIZE_UNKNOWN
    assert decompress(CODEC_ZSTD, frames).data == TEXT


def test_unknown_codec() -> None:
    result = decompress(6, b"anything")
    assert result.data == b"" and codes(result) == ["unknown_codec"]


@given(codec=st.sampled_from([*COMPRESSED, 5]), data=st.binary(max_size=200), limit=st.integers(0, 5000))
@settings(max_examples=300, deadline=None)
def test_garbage_never_raises_and_respects_the_cap(codec: int, data: bytes, limit: int) -> None:
    result = decompress(codec, data, limit)
    assert len(result.data) <= limit


# -- bombs --------------------------------------------------------------------------------------


def gzip_bomb(total: int) -> bytes:
    """gzip members of 16 MiB of zeros, repeated until they inflate to ``total`` bytes."""
    member = zlib.compress(b"\0" * (16 * MiB), level=9, wbits=31)
    return member * (total // (16 * MiB))


def zstd_bomb(total: int) -> bytes:
    """One zstd frame declaring ``total`` bytes of content, made of RLE blocks of 128 KiB."""
    header = struct.pack("<IBB", 0xFD2FB528, 0xC0, 0x38) + struct.pack("<Q", total)  # 8-byte size, 128 KiB window
    blocks = total // (128 * 1024)
    block = ((128 * 1024) << 3 | 1 << 1).to_bytes(3, "little") + b"\0"  # RLE block of 128 KiB zeros
    last = ((128 * 1024) << 3 | 1 << 1 | 1).to_bytes(3, "little") + b"\0"
    return header + block * (blocks - 1) + last


@pytest.mark.parametrize(("codec", "bomb"), [(CODEC_GZIP, gzip_bomb), (CODEC_ZSTD, zstd_bomb)], ids=["gzip", "zstd"])
def test_bomb_claiming_10_gib_stops_at_the_cap_in_bounded_memory(codec: int, bomb) -> None:
    payload = bomb(10 * GiB)
    if codec == CODEC_ZSTD:
        assert zstandard.frame_content_size(payload) == 10 * GiB
    data = encode_batch([], codec=codec, record_count=1, compressor=lambda _: payload)
    cap = 8 * MiB
    tracemalloc.start()
    try:
        rs = decode_records(data, limits=Limits(max_decompressed=cap))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    (b,) = rs.batches
    assert b.decompressed_size == cap and b.compressed_size == len(payload)
    assert "decompression_capped" in [w.code for w in b.warnings]
    assert peak < 5 * cap, f"peak {peak / MiB:.1f} MiB for an {cap / MiB:.0f} MiB cap"


def test_cap_is_shared_by_nested_legacy_wrappers() -> None:
    inner = [new_record(None, b"\0" * 50_000, offset=i) for i in range(4)]
    nested = [wrapper(inner[:2], magic=1, codec=CODEC_GZIP, offset=1), wrapper(inner[2:], magic=1, codec=CODEC_GZIP)]
    raw = encode_message(wrapper(nested, magic=1, codec=CODEC_GZIP), magic=1)
    b = decode_records(raw, limits=Limits(max_decompressed=150_000)).batches[0]
    assert len(b.records) < 4
    assert sum(len(r.value or b"") for r in b.records) <= 150_000
    assert "decompression_capped" in [w.code for w in b.warnings]
