"""Write Kafka ``records`` fields: the inverse of :mod:`kdissect.decoders.records`.

Tests and synthetic captures need batches in every format, including the odd ones real
clients send (compressed legacy wrappers, Kafka 0.8's LZ4 framing, control batches) and broken
ones (bad or zero CRCs, counts that lie). Records go in as the decoder's own :class:`Record`
tuples, so ``encode_decoded(batch)`` rebuilds the bytes of any valid decoded batch.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable, Sequence

from crc32c import crc32c

from kdissect.decoders.codecs import CODEC_NONE, compress
from kdissect.decoders.records import (
    ATTR_CONTROL,
    ATTR_DELETE_HORIZON,
    ATTR_TRANSACTIONAL,
    CONTROL_KEY,
    END_TXN_MARKER,
    LOG_OVERHEAD,
    V2_HEADER,
    Batch,
    Header,
    Record,
)
from kdissect.decoders.wire import write_varint

_V2_PREFIX = struct.Struct(">qiibI")  # base offset, length, leader epoch, magic, crc
_V2_REST = struct.Struct(">hiqqqhii")  # attributes .. record count: what the CRC covers before the records
_LEGACY_PREFIX = struct.Struct(">qiI")  # offset, size, crc
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")

Compressor = Callable[[bytes], bytes]


def new_record(
    key: bytes | None = None,
    value: bytes | None = None,
    headers: Sequence[Header] = (),
    *,
    offset: int = 0,
    timestamp: int | None = 0,
    attributes: int = 0,
) -> Record:
    """A record to encode. ``offset`` and ``timestamp`` are the wire fields: deltas in magic 2,
    the message's own offset and timestamp in magic 0/1 (``timestamp`` is ignored by magic 0)."""
    return Record(
        offset, timestamp, key, value, tuple(headers), _size(key), _size(value), attributes, 0, offset, timestamp, None
    )


def control_record(
    kind: int, *, coordinator_epoch: int = 0, version: int = 0, value_version: int = 0, offset: int = 0
) -> Record:
    """A control record (kind 0 abort, 1 commit) with its EndTxnMarker value."""
    return new_record(
        CONTROL_KEY.pack(version, kind), END_TXN_MARKER.pack(value_version, coordinator_epoch), offset=offset
    )


def encode_record(record: Record) -> bytes:
    """One magic 2 record: length varint, then attributes to headers."""
    parts = [
        bytes((record.attributes & 0xFF,)),
        write_varint(record.wire_timestamp or 0),
        write_varint(record.wire_offset),
        _varbytes(record.key),
        _varbytes(record.value),
        write_varint(len(record.headers)),
    ]
    for name, value in record.headers:
        raw = name.encode()
        parts += (write_varint(len(raw)), raw, _varbytes(value))
    body = b"".join(parts)
    return write_varint(len(body)) + body


def encode_batch(
    records: Sequence[Record],
    *,
    base_offset: int = 0,
    partition_leader_epoch: int = -1,
    codec: int = CODEC_NONE,
    timestamp_type: int = 0,
    transactional: bool = False,
    control: bool = False,
    delete_horizon: bool = False,
    last_offset_delta: int | None = None,
    base_timestamp: int = 0,
    max_timestamp: int | None = None,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    record_count: int | None = None,
    crc: int | None = None,
    compressor: Compressor | None = None,
) -> bytes:
    """A magic 2 record batch. Fields left None are computed as a producer would; ``crc`` forces
    the checksum field (e.g. 0 or a wrong value); ``compressor`` replaces the codec's compressor
    (e.g. with a crafted bomb) while the attributes still name ``codec``."""
    attributes = (
        codec
        | timestamp_type << 3
        | (ATTR_TRANSACTIONAL if transactional else 0)
        | (ATTR_CONTROL if control else 0)
        | (ATTR_DELETE_HORIZON if delete_horizon else 0)
    )
    if last_offset_delta is None:
        last_offset_delta = records[-1].wire_offset if records else 0
    if max_timestamp is None:
        max_timestamp = base_timestamp + max(r.wire_timestamp or 0 for r in records) if records else -1
    payload = _compressed(b"".join(encode_record(r) for r in records), codec, compressor)
    rest = (
        _V2_REST.pack(
            attributes,
            last_offset_delta,
            base_timestamp,
            max_timestamp,
            producer_id,
            producer_epoch,
            base_sequence,
            len(records) if record_count is None else record_count,
        )
        + payload
    )
    length = V2_HEADER.size - LOG_OVERHEAD + len(payload)
    checksum = crc32c(rest) if crc is None else crc
    return _V2_PREFIX.pack(base_offset, length, partition_leader_epoch, 2, checksum) + rest


def encode_message(record: Record, *, magic: int, crc: int | None = None) -> bytes:
    """One magic 0 or 1 message (with its offset and size), from a record or a :func:`wrapper`."""
    head = struct.pack(">bb", magic, record.attributes)
    if magic == 1:
        head += _I64.pack(record.wire_timestamp or 0)
    body = head + _bytes(record.key) + _bytes(record.value)
    checksum = zlib.crc32(body) if crc is None else crc
    return _LEGACY_PREFIX.pack(record.wire_offset, 4 + len(body), checksum) + body


def encode_message_set(records: Sequence[Record], *, magic: int) -> bytes:
    """Messages back to back, as a legacy produce request or an inner message set carries them."""
    return b"".join(encode_message(r, magic=magic) for r in records)


def wrapper(
    records: Sequence[Record],
    *,
    magic: int,
    codec: int,
    offset: int | None = None,
    timestamp: int | None = None,
    timestamp_type: int = 0,
    legacy_lz4: bool | None = None,
    xerial: bool = True,
    compressor: Compressor | None = None,
) -> Record:
    """A compressed wrapper message holding ``records`` (which may include wrappers, to nest).

    Its offset defaults to the last inner offset (what Kafka writes); its timestamp to the
    largest inner one. ``legacy_lz4`` (default: when magic is 0) writes Kafka 0.8–0.9's LZ4 header.
    """
    inner = encode_message_set(records, magic=magic)
    lz4_old = magic == 0 if legacy_lz4 is None else legacy_lz4
    payload = compressor(inner) if compressor else compress(codec, inner, xerial=xerial, legacy_lz4=lz4_old)
    if offset is None:
        offset = records[-1].wire_offset if records else 0
    if timestamp is None:
        timestamp = max((r.wire_timestamp or 0 for r in records), default=0)
    attributes = codec | (timestamp_type << 3 if magic >= 1 else 0)
    return new_record(None, payload, offset=offset, timestamp=timestamp, attributes=attributes)


def encode_decoded(batch: Batch) -> bytes:
    """Rebuild the bytes of a decoded batch (decoded with full payloads).

    For a valid uncompressed batch the result equals the original bytes; compressed payloads
    are recompressed, so they hold the same records but may differ byte for byte.
    """
    if batch.magic == 2:
        return encode_batch(
            batch.records,
            base_offset=batch.base_offset,
            partition_leader_epoch=batch.partition_leader_epoch or 0,
            codec=batch.codec,
            timestamp_type=batch.timestamp_type or 0,
            transactional=batch.is_transactional,
            control=batch.is_control,
            delete_horizon=batch.has_delete_horizon,
            last_offset_delta=batch.last_offset_delta,
            base_timestamp=batch.base_timestamp or 0,
            max_timestamp=batch.max_timestamp,
            producer_id=batch.producer_id or 0,
            producer_epoch=batch.producer_epoch or 0,
            base_sequence=batch.base_sequence or 0,
            record_count=batch.record_count,
        )
    if batch.codec == CODEC_NONE:
        return encode_message(batch.records[0], magic=batch.magic)
    wrapped = wrapper(
        batch.records,
        magic=batch.magic,
        codec=batch.codec,
        offset=batch.base_offset,
        timestamp=batch.max_timestamp,
        timestamp_type=batch.timestamp_type or 0,
    )
    return encode_message(wrapped, magic=batch.magic)


def _compressed(data: bytes, codec: int, compressor: Compressor | None) -> bytes:
    if compressor is not None:
        return compressor(data)
    return data if codec == CODEC_NONE else compress(codec, data)


def _size(payload: bytes | None) -> int:
    return -1 if payload is None else len(payload)


def _varbytes(payload: bytes | None) -> bytes:
    return write_varint(-1) if payload is None else write_varint(len(payload)) + payload


def _bytes(payload: bytes | None) -> bytes:
    return _I32.pack(-1) if payload is None else _I32.pack(len(payload)) + payload
