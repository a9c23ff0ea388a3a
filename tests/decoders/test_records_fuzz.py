"""Bad input is normal input: random bytes, cuts and flips never make decode_records raise."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kdissect.decoders.codecs import CODEC_NAMES
from kdissect.decoders.records import LENGTHS_ONLY, Limits, Payloads, RecordSet, decode_records
from kdissect.testing.records_encode import (
    control_record,
    encode_batch,
    encode_message,
    encode_message_set,
    new_record,
    wrapper,
)

SMALL = Limits(max_decompressed=64 * 1024, max_depth=3)
modes = st.sampled_from([None, LENGTHS_ONLY, Payloads.preview(3)])


def check(data: bytes, payloads: Payloads | None = None) -> RecordSet:
    """Decode and check the accounting: batches, skipped and truncated bytes never exceed the input."""
    rs = (
        decode_records(data, limits=SMALL)
        if payloads is None
        else decode_records(data, limits=SMALL, payloads=payloads)
    )
    assert sum(b.size for b in rs.batches) + rs.truncated <= len(data)
    assert all(b.position + b.size <= len(data) for b in rs.batches)
    for b in rs.batches:
        assert len(b.records) <= b.size  # each record takes at least one byte of the wire
        assert b.decompressed_size <= SMALL.max_decompressed
    return rs


@st.composite
def valid_field(draw: st.DrawFn) -> bytes:
    """A records field of several batches in any format and codec."""
    parts = []
    payload = st.none() | st.binary(max_size=30)
    headers = st.lists(st.tuples(st.text(max_size=4), payload), max_size=2)
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["v2", "control", "legacy", "wrapper"]))
        recs = [
            new_record(draw(payload), draw(payload), draw(headers), offset=i, timestamp=draw(st.integers(0, 2**33)))
            for i in range(draw(st.integers(1, 4)))
        ]
        if kind == "v2":
            parts.append(encode_batch(recs, codec=draw(st.sampled_from(sorted(CODEC_NAMES))), base_offset=10))
        elif kind == "control":
            parts.append(encode_batch([control_record(draw(st.integers(0, 3)))], control=True, transactional=True))
        else:
            magic = draw(st.integers(0, 1))
            plain = [r._replace(headers=()) for r in recs]
            if kind == "legacy":
                parts.append(encode_message_set(plain, magic=magic))
            else:
                codec = draw(st.integers(1, 3))
                parts.append(encode_message(wrapper(plain, magic=magic, codec=codec, offset=20), magic=magic))
    return b"".join(parts)


@given(data=st.binary(max_size=400), payloads=modes)
@settings(max_examples=300, deadline=None)
def test_random_bytes_never_raise(data: bytes, payloads: Payloads | None) -> None:
    check(data, payloads)


@given(data=st.binary(min_size=61, max_size=300), magic=st.integers(0, 2), length=st.integers(0, 300))
@settings(max_examples=300, deadline=None)
def test_random_bytes_behind_a_plausible_header_never_raise(data: bytes, magic: int, length: int) -> None:
    """Random bodies behind a sane length and magic reach the batch decoders, not just the framing."""
    head = bytearray(data)
    head[8:12] = length.to_bytes(4, "big")
    head[16] = magic
    check(bytes(head))


@given(field=valid_field(), cut=st.integers(0, 10_000))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_cuts_keep_every_whole_batch(field: bytes, cut: int) -> None:
    full = check(field)
    assert not list(full.all_warnings()) and full.truncated == 0
    cut %= len(field) + 1
    part = check(field[:cut])
    whole = [b for b in full.batches if b.position + b.size <= cut]
    assert [(b.position, b.records, b.crc_ok) for b in part.batches] == [
        (b.position, b.records, b.crc_ok) for b in whole
    ]
    assert part.truncated == cut - sum(b.size for b in whole)
    assert list(part.all_warnings()) == []


@given(
    field=valid_field(), flips=st.lists(st.tuples(st.integers(0, 10_000), st.integers(1, 255)), min_size=1, max_size=4)
)
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_flipped_bytes_never_raise(field: bytes, flips: list[tuple[int, int]]) -> None:
    damaged = bytearray(field)
    for at, mask in flips:
        damaged[at % len(damaged)] ^= mask
    rs = check(bytes(damaged))
    if any(b.crc_ok is False for b in rs.batches):
        assert "crc_mismatch" in [w.code for w in rs.all_warnings()]
