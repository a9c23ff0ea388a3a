"""Kafka ``records`` fields: legacy message sets (magic 0/1) and record batches (magic 2).

Produce requests, fetch responses and their relatives carry records as one opaque byte field
holding batches back to back, in any mix of formats. :func:`decode_records` turns such a field
into :class:`Batch` objects holding :class:`Record` tuples. Bad bytes never raise: each problem
becomes a :class:`~kdissect.decoders.errors.DecodeWarning` on the batch (or the set) and decoding
goes on with what is left, because a dissector must show everything that can be shown. A batch
cut short at the end of the field is normal (brokers cut fetch responses at the size limit), so
it is reported as ``truncated`` rather than as a problem.

Records are tuples built with ``tuple.__new__`` in a loop that reads varints inline: a fetch
response can carry millions of records and per-record overhead is what limits throughput. The
magic 2 loop also exists in C (``_native.v2_records``, used when the extension is built); the
Python loop below stays the reference, and redoes any batch the C loop does not finish. For the
records table, ``decode_records(columns=True)`` has C write a batch's records into column buffers
instead (:class:`RecordColumns`), with no object per record.
"""

from __future__ import annotations

import struct
import sys
import zlib
from collections.abc import Iterator
from dataclasses import field
from functools import cache
from typing import NamedTuple

from kdissect.dataclass import dataclass

from .codecs import CODEC_NAMES, CODEC_NONE, Decompressed, decompress
from .errors import CAP, DecodeWarning
from .inflate_cache import InflateCache
from .program import native_module, require_native
from .wire import Malformed, read_varint, read_varlong

LOG_OVERHEAD = 12  # offset (int64) + length (int32), common to every format
MAGIC_AT = 16  # the magic byte sits here in every format
V2_HEADER = struct.Struct(">qiibIhiqqqhii")  # the 61-byte record batch header
_V2_CRC_FROM = 21  # the CRC-32C covers attributes up to the end of the batch
_LEGACY = struct.Struct(">qiIbb")  # offset, size, crc, magic, attributes
_I64 = struct.Struct(">q")
_I32 = struct.Struct(">i")
CONTROL_KEY = struct.Struct(">hh")
END_TXN_MARKER = struct.Struct(">hi")
_LEGACY_KEY_AT = {0: 18, 1: 26}  # where the key length sits in a message of each magic
_MIN_SIZE = {0: 14, 1: 22, 2: V2_HEADER.size - LOG_OVERHEAD}  # smallest valid length field per magic
_HEADER_SIZE = {0: _LEGACY.size, 1: _LEGACY.size + 8, 2: V2_HEADER.size}  # bytes before the payload
_MIN_RECORD = 6  # attributes, timestamp delta, offset delta, key, value, header count: a byte each

ATTR_CODEC = 0x07
ATTR_LOG_APPEND_TIME = 0x08
ATTR_TRANSACTIONAL = 0x10
ATTR_CONTROL = 0x20
ATTR_DELETE_HORIZON = 0x40

CONTROL_TYPES = {0: "abort", 1: "commit"}

Header = tuple[str, bytes | None]


class Record(NamedTuple):
    """One record, in the same shape whatever the format it came from.

    ``offset`` and ``timestamp`` are absolute (a log-append-time batch's timestamp applied);
    ``wire_offset`` and ``wire_timestamp`` are the fields as written: deltas in magic 2, the
    message's own fields in magic 0/1 (relative offsets inside magic 1 wrappers). Sizes are the
    wire lengths whatever the payload mode (negative: null). ``crc_ok`` is a legacy message's own
    checksum; magic 2 records have none (the batch CRC covers them) and hold None.
    """

    offset: int
    timestamp: int | None  # None: magic 0 messages have no timestamp
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...]
    key_size: int
    value_size: int
    attributes: int
    size: int  # the record's length field (magic 2) or message size (magic 0/1)
    wire_offset: int
    wire_timestamp: int | None
    crc_ok: bool | None


class RecordColumns(NamedTuple):
    """A magic 2 batch's records as column buffers (native byte order), from ``_native.v2_columns``:
    what the records table is built from without an object per record. Lengths are of the bytes
    kept (-1: null); payload bytes of each kind sit end to end; ``headers`` counts each record's."""

    offset: bytes  # int64 per record
    timestamp: bytes  # int64 per record (ms)
    key_size: bytes  # int32 per record, as on the wire
    value_size: bytes  # int32 per record
    key_len: bytes  # int32 per record
    key: bytes
    value_len: bytes  # int32 per record
    value: bytes
    headers: bytes  # int32 per record
    header_key_len: bytes  # int32 per header
    header_key: bytes  # UTF-8
    header_value_len: bytes  # int32 per header
    header_value: bytes

    @property
    def count(self) -> int:
        return len(self.offset) >> 3


class RecordArena:
    """Column buffers that consecutive batches' records are appended to, in :class:`RecordColumns`'
    order (``decode_records(columns=arena)``): the records table's columns end to end as they are
    decoded, so that its Arrow arrays are made without joining (a copy of every payload byte,
    a tenth of a record-heavy run). The table's owner starts new buffers (:meth:`renew`) when it hands
    the table on, since its arrays may still point into the old ones; a batch decoded while they are
    (a bytearray shared with an array cannot grow) starts new ones too."""

    __slots__ = ("buffers",)

    def __init__(self) -> None:
        self.buffers: tuple[bytearray, ...] = ()
        self.renew()

    def renew(self) -> None:
        self.buffers = tuple(bytearray() for _ in RecordColumns._fields)

    def lengths(self) -> tuple[int, ...]:
        return tuple(map(len, self.buffers))


class ArenaColumns(NamedTuple):
    """A batch's records held in an arena's buffers: its :class:`RecordColumns` field ``i`` is
    ``buffers[i][starts[i]:ends[i]]``."""

    buffers: tuple[bytearray, ...]
    starts: tuple[int, ...]
    ends: tuple[int, ...]
    count: int


class ControlMarker(NamedTuple):
    """The control record of a control batch: what kind of marker, and for transaction markers
    (abort/commit) the EndTxnMarker value."""

    offset: int
    version: int
    type: int  # 0 abort, 1 commit, others as written
    value_version: int | None
    coordinator_epoch: int | None

    @property
    def kind(self) -> str | None:
        """``"abort"``, ``"commit"``, or None for a type this decoder does not name."""
        return CONTROL_TYPES.get(self.type)


@dataclass(frozen=True, slots=True)
class Limits:
    """Bounds that keep hostile input cheap."""

    max_decompressed: int = 64 << 20  # per top-level batch or message, nested wrappers included
    max_depth: int = 4  # legacy wrappers inside wrappers (Kafka itself allows one level)
    # batches (or legacy messages) decoded per records field; as many again of the inner messages of
    # compressed legacy wrappers (a few KiB of gzip inflate to millions of 26-byte messages)
    max_batches: int = 50_000
    run: RunMeter | None = None  # decompressed bytes left for the whole run, shared by every call


class RunMeter:
    """Decompressed bytes a whole run may still produce, spent by every batch decoded with it:
    past it, payloads are not inflated (a ``cap`` warning each; sizes from the headers stay). It
    also keeps the run's recently inflated payloads (``inflated``): a payload met again (a batch
    read back by a consumer) is inflated once, and spends the budget as if inflated again."""

    __slots__ = ("inflated", "left", "total")

    def __init__(self, total: int, inflated: InflateCache | None = None) -> None:
        self.total = self.left = total
        self.inflated = InflateCache() if inflated is None else inflated  # (one a process keeps: a Spark worker's)


@dataclass(frozen=True, slots=True)
class Payloads:
    """How much of each key, value and header value to keep: all (``keep`` None) or the first
    ``keep`` bytes; 0 keeps sizes only (payloads ``b""``). Null stays None whatever the mode, and
    header keys are always kept whole. ``null`` (with ``keep`` 0): tables show the payloads as null,
    not as empty bytes (``--no-payloads``: there is a value, it was not kept)."""

    keep: int | None = None
    null: bool = False

    @classmethod
    def preview(cls, n: int) -> Payloads:
        if n < 0:
            raise ValueError(f"a preview cannot keep {n} bytes")
        return cls(n)


DEFAULT_LIMITS = Limits()
FULL = Payloads(None)
LENGTHS_ONLY = Payloads(0, null=True)


@dataclass(slots=True)
class Batch:
    """One record batch (magic 2) or one top-level legacy message (magic 0/1).

    A legacy message is a batch of one record, or, when compressed, a wrapper whose records are
    the inner messages. Fields a format lacks are None. For legacy messages ``base_offset`` is
    the message's offset field (for a wrapper, the offset of its last inner message) and
    ``max_timestamp`` its timestamp field (magic 1).
    """

    position: int  # where the batch starts, in bytes from the start of the field (plus ``origin``)
    size: int  # bytes on the wire, offset and length fields included
    magic: int
    base_offset: int
    length: int
    crc: int
    crc_ok: bool | None  # None when the batch is cut short and cannot be checked
    attributes: int
    partition_leader_epoch: int | None = None
    last_offset_delta: int | None = None
    base_timestamp: int | None = None
    max_timestamp: int | None = None
    producer_id: int | None = None
    producer_epoch: int | None = None
    base_sequence: int | None = None
    record_count: int | None = None
    compressed_size: int = 0  # bytes of the compressed payload (0 when not compressed)
    decompressed_size: int = 0
    complete: bool = True
    records: list[Record] = field(default_factory=list)
    control: list[ControlMarker] = field(default_factory=list)
    warnings: list[DecodeWarning] = field(default_factory=list)
    # the records, when asked for as columns (then ``records`` is empty)
    columns: RecordColumns | ArenaColumns | None = None

    @property
    def records_decoded(self) -> int:
        """Records decoded, held as Records or as columns."""
        return len(self.records) if self.columns is None else self.columns.count

    @property
    def codec(self) -> int:
        return self.attributes & ATTR_CODEC

    @property
    def codec_name(self) -> str:
        return CODEC_NAMES.get(self.codec, str(self.codec))

    @property
    def timestamp_type(self) -> int | None:
        """0 create time, 1 log append time; None for magic 0, which has no timestamps."""
        return (self.attributes & ATTR_LOG_APPEND_TIME) >> 3 if self.magic >= 1 else None

    @property
    def is_transactional(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & ATTR_TRANSACTIONAL)

    @property
    def is_control(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & ATTR_CONTROL)

    @property
    def has_delete_horizon(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & ATTR_DELETE_HORIZON)

    @property
    def last_offset(self) -> int:
        if self.last_offset_delta is None:
            return self.base_offset
        return self.base_offset + self.last_offset_delta

    def warn(self, code: str, message: str, offset: int | None = None) -> None:
        self.warnings.append(DecodeWarning(code, message, self.position if offset is None else offset))


@dataclass(slots=True)
class RecordSet:
    """Everything found in one ``records`` field."""

    batches: list[Batch] = field(default_factory=list)
    truncated: int = 0  # bytes of a batch cut short at the end (normal in fetch responses)
    partial: Batch | None = None  # what could be read of that cut batch (complete=False)
    warnings: list[DecodeWarning] = field(default_factory=list)  # problems outside any batch

    def records(self) -> Iterator[Record]:
        """Records of every complete batch, in order."""
        for batch in self.batches:
            yield from batch.records

    def all_warnings(self) -> Iterator[DecodeWarning]:
        """Set-level warnings, then each batch's."""
        yield from self.warnings
        for batch in self.batches:
            yield from batch.warnings

    @property
    def crc_ok(self) -> bool:
        return all(b.crc_ok for b in self.batches)


class _Corrupt(Exception):
    """Internal: the bytes break the format here (message says how)."""


_CORRUPT = (_Corrupt, Malformed, IndexError, struct.error)


@cache
def _zigzag() -> tuple[int, ...]:
    """Every one- and two-byte zig-zag varint, decoded, indexed by its 14 payload bits: a lookup is
    cheaper than the arithmetic in the hot loop (the table costs about half a megabyte). Built on
    the Python loop's first use: a run whose batches all decode in C never needs it, and building
    it took a tenth of the decoders' import."""
    return tuple((v >> 1) ^ -(v & 1) for v in range(1 << 14))


def decode_records(
    data: bytes | bytearray | memoryview,
    *,
    limits: Limits = DEFAULT_LIMITS,
    payloads: Payloads = FULL,
    origin: int = 0,
    columns: bool | RecordArena = False,
) -> RecordSet:
    """Decode a ``records`` field. Never raises on bad bytes: problems become warnings.

    ``origin`` is added to every reported position, so a caller can pass the field's offset in
    its frame and get positions that point into a hex dump of the frame. With ``columns`` (and the
    C extension), a magic 2 batch that is not a control batch holds its records in
    :attr:`Batch.columns` instead of :attr:`Batch.records` when they decode cleanly: bytes of its
    own, or (``columns`` a :class:`RecordArena`) spans of the arena's buffers.
    """
    buf = data if isinstance(data, bytes) else bytes(data)
    decoder = _Decoder(buf, limits, payloads, origin, columns)
    return decoder.run()


class _Decoder:
    """State for one call: the buffer, the options, and the set being filled."""

    def __init__(self, buf: bytes, limits: Limits, payloads: Payloads, origin: int,
                 columns: bool | RecordArena = False) -> None:  # fmt: skip
        self.buf = buf
        self.columns = columns and native_enabled()
        self.arena = columns if isinstance(columns, RecordArena) else None
        self.view = memoryview(buf)
        self.limits = limits
        self.cut = sys.maxsize if payloads.keep is None else payloads.keep
        self.origin = origin
        self.out = RecordSet()
        self.inner_left = limits.max_batches  # inner messages of wrappers this field may still decode

    def run(self) -> RecordSet:
        buf, n, out = self.buf, len(self.buf), self.out
        pos = 0
        while pos < n:
            if n - pos < LOG_OVERHEAD:
                out.truncated = n - pos
                break
            (length,) = _I32.unpack_from(buf, pos + 8)
            magic = buf[pos + MAGIC_AT] if pos + MAGIC_AT < n else None
            if length < _MIN_SIZE.get(magic, _MIN_SIZE[0]):
                out.warnings.append(
                    DecodeWarning(
                        "bad_batch_length",
                        f"length {length} is too small for a magic {magic} batch; "
                        f"the {n - pos} bytes from here on cannot be split into batches",
                        self.origin + pos,
                    )
                )
                break
            end = pos + LOG_OVERHEAD + length
            if end > n:
                out.truncated = n - pos
                if magic in _MIN_SIZE and n - pos >= _HEADER_SIZE[magic]:
                    out.partial = self._batch(magic, pos, n, complete=False)
                break
            if len(out.batches) >= self.limits.max_batches:
                self._skip_rest(pos)
                break
            if magic in _MIN_SIZE:
                out.batches.append(self._batch(magic, pos, end, complete=True))
            else:
                out.warnings.append(
                    DecodeWarning("unknown_magic", f"magic {magic}: skipped {end - pos} bytes", self.origin + pos)
                )
            pos = end
        return out

    def _skip_rest(self, pos: int) -> None:
        """The batch bound is reached: count what is left (by its length fields) without decoding it."""
        buf, n, skipped = self.buf, len(self.buf), 0
        start = pos
        while n - pos >= LOG_OVERHEAD and (length := _I32.unpack_from(buf, pos + 8)[0]) >= 0:
            pos += LOG_OVERHEAD + length
            skipped += 1
        self.out.warnings.append(
            DecodeWarning(CAP, f"only the first {self.limits.max_batches} batches decoded; {skipped} more "
                          f"({n - start} bytes) counted, not decoded", self.origin + start)
        )  # fmt: skip

    def _batch(self, magic: int, pos: int, end: int, *, complete: bool) -> Batch:
        """Decode the batch in ``buf[pos:end]``, whose header bytes are known to be there."""
        return self._v2(pos, end, complete) if magic == 2 else self._legacy(pos, end, complete)

    # -- magic 2 --------------------------------------------------------------------------------

    def _v2(self, pos: int, end: int, complete: bool) -> Batch:
        (base_offset, length, epoch, magic, crc, attrs, last_delta, base_ts, max_ts, pid, pepoch, base_seq,
         count) = V2_HEADER.unpack_from(self.buf, pos)  # fmt: skip
        batch = Batch(
            self.origin + pos, end - pos, magic, base_offset, length, crc,
            _crc32c(self.view[pos + _V2_CRC_FROM : end]) == crc if complete else None, attrs,
            epoch, last_delta, base_ts, max_ts, pid, pepoch, base_seq, count, complete=complete,
        )  # fmt: skip
        if batch.crc_ok is False:
            _warn_crc(batch, crc, "CRC-32C")
        body = pos + V2_HEADER.size
        codec = attrs & ATTR_CODEC
        if codec == CODEC_NONE:
            buf, start, stop, at = self.buf, body, end, self.origin
        elif not complete:
            return batch  # a cut compressed payload: nothing reliable comes out of it
        else:
            buf = self._inflate(batch, self.view[body:end], self.limits.max_decompressed, codec)
            batch.compressed_size, batch.decompressed_size = end - body, len(buf)
            start, stop, at = 0, len(buf), None
        cut = sys.maxsize if batch.is_control else self.cut
        log_append_time = attrs & ATTR_LOG_APPEND_TIME
        if self.columns and not batch.is_control:
            batch.columns = _native_v2_columns(buf, start, stop, batch, cut, log_append_time, self.arena)
        problem = None
        if batch.columns is None:
            problem = _decode_v2_records(buf, start, stop, batch, cut, log_append_time)
        if complete:
            if problem is not None and not _capped(batch):
                where, reason = problem
                _warn_corrupt_record(batch, len(batch.records), where, at, reason)
            if batch.records_decoded != count:
                batch.warn("record_count_mismatch", f"header says {count} records, found {batch.records_decoded}")
        if batch.is_control:
            self._control(batch)
        return batch

    def _inflate(self, batch: Batch, payload: bytes | memoryview, limit: int, codec: int, legacy_lz4: bool = False,
                 where: str = "") -> bytes:  # fmt: skip
        """Decompress a payload of ``batch``, noting problems on it (``where`` names a nested wrapper)."""
        result = inflated(self.limits, codec, payload, limit, legacy_lz4)
        if result is None:
            batch.warn(CAP, f"{where}the run's {self.limits.run.total}-byte decompression budget is spent: "  # type: ignore[union-attr]
                       "not inflated")
            return b""
        for w in result.warnings:
            batch.warn(w.code, where + w.message)
        return result.data

    def _control(self, batch: Batch) -> None:
        """Decode control records' keys and values, then trim payloads to the requested mode."""
        for i, rec in enumerate(batch.records):
            if rec.key is None or len(rec.key) < CONTROL_KEY.size:
                batch.warn(
                    "control_key_invalid", f"control record at offset {rec.offset} has a {rec.key_size}-byte key"
                )
                continue
            version, ctype = CONTROL_KEY.unpack_from(rec.key)
            value_version = epoch = None
            if ctype in CONTROL_TYPES:
                if rec.value is not None and len(rec.value) >= END_TXN_MARKER.size:
                    value_version, epoch = END_TXN_MARKER.unpack_from(rec.value)
                else:
                    batch.warn(
                        "control_value_invalid", f"{CONTROL_TYPES[ctype]} marker with a {rec.value_size}-byte value"
                    )
            batch.control.append(ControlMarker(rec.offset, version, ctype, value_version, epoch))
            if self.cut != sys.maxsize:
                batch.records[i] = rec._replace(key=_trim(rec.key, self.cut), value=_trim(rec.value, self.cut))

    # -- magic 0 and 1 --------------------------------------------------------------------------

    def _legacy(self, pos: int, end: int, complete: bool) -> Batch:
        buf = self.buf
        offset, size, crc, magic, attrs = _LEGACY.unpack_from(buf, pos)
        timestamp = _I64.unpack_from(buf, pos + 18)[0] if magic == 1 else None
        batch = Batch(
            self.origin + pos, end - pos, magic, offset, size, crc,
            zlib.crc32(self.view[pos + MAGIC_AT : end]) == crc if complete else None, attrs,
            max_timestamp=timestamp, complete=complete,
        )  # fmt: skip
        if not complete:
            return batch
        if not batch.crc_ok:
            _warn_crc(batch, crc, "CRC-32")
        try:
            msg = _message(buf, pos, end)
        except _CORRUPT as exc:
            batch.warn("corrupt_message", f"message at offset {offset}: {_reason(exc)}")
            return batch
        if msg.attributes & ATTR_CODEC:
            self._unwrap(batch, buf, msg, offset, 0, self.limits.max_decompressed)
        else:
            batch.records.append(self._legacy_record(buf, msg, offset, timestamp, batch.crc_ok))
        return batch

    def _legacy_record(self, buf: bytes, msg: _Message, offset: int, timestamp: int | None, crc_ok: bool) -> Record:
        cut = self.cut
        return Record(
            offset, timestamp,
            _take(buf, msg.key_at, msg.key_size, cut), _take(buf, msg.value_at, msg.value_size, cut), (),
            msg.key_size, msg.value_size, msg.attributes, msg.size, msg.offset, msg.timestamp, crc_ok,
        )  # fmt: skip

    def _unwrap(self, batch: Batch, buf: bytes, wrapper: _Message, wrapper_offset: int, depth: int,
                budget: int) -> int:  # fmt: skip
        """Add the inner messages of a compressed wrapper to ``batch``; return the budget left.

        Magic 1 inner offsets are relative and the wrapper's offset is that of the last inner
        message; when that would make offsets negative (a produce request whose client left the
        wrapper offset at 0) the relative offsets are kept, as Kafka's own reader does.
        """
        if wrapper.key_size >= 0:
            batch.warn("wrapper_key", f"compressed wrapper carries a {wrapper.key_size}-byte key (ignored)")
        if wrapper.value_size < 0:
            batch.warn("wrapper_value_null", "compressed wrapper has a null value: no inner messages")
            return budget
        payload = memoryview(buf)[wrapper.value_at : wrapper.value_at + wrapper.value_size]
        where = f"nested wrapper at offset {wrapper_offset}: " if depth else ""
        inner = self._inflate(batch, payload, budget, wrapper.attributes & ATTR_CODEC, wrapper.magic == 0, where)
        if not depth:
            batch.compressed_size, batch.decompressed_size = wrapper.value_size, len(inner)
        budget -= len(inner)
        found = _messages(inner, self.inner_left)
        self.inner_left -= len(found.kept)
        if found.problem is not None and not _capped(batch):
            at, reason = found.problem
            batch.warn("corrupt_message", f"inner message at byte {at} of the decompressed wrapper: {reason}")
        if found.more:
            batch.warn(CAP, f"{where}only {self.limits.max_batches} inner messages of wrappers decoded per records "
                       f"field: {found.more} more ({len(inner) - found.kept_end} bytes) counted, not decoded")
        base = wrapper_offset - found.last_offset if wrapper.magic > 0 and found.last_offset is not None else -1
        log_append_time = wrapper.magic == 1 and bool(wrapper.attributes & ATTR_LOG_APPEND_TIME)
        mixed = False
        tally = _Tally()
        for msg in found.kept:
            offset = msg.offset + base if base >= 0 else msg.offset
            mixed = mixed or msg.magic != wrapper.magic
            crc_ok = zlib.crc32(memoryview(inner)[msg.position + MAGIC_AT : msg.end]) == msg.crc
            if not crc_ok:
                tally.add("crc_mismatch", f"inner message at offset {offset}: CRC-32 {msg.crc:#010x} does not match")
            if msg.attributes & ATTR_CODEC:
                tally.add("nested_compression", f"inner message at offset {offset} is itself compressed")
                if depth + 1 >= self.limits.max_depth:
                    tally.add("max_depth", f"wrappers nested deeper than {self.limits.max_depth}: not opened")
                else:
                    budget = self._unwrap(batch, inner, msg, offset, depth + 1, budget)
                continue
            timestamp = wrapper.timestamp if log_append_time else msg.timestamp
            batch.records.append(self._legacy_record(inner, msg, offset, timestamp, crc_ok))
        tally.report(batch)
        if mixed:
            batch.warn("inner_magic_mismatch", f"a magic {wrapper.magic} wrapper holds messages of another magic")
        return budget


def inflated(limits: Limits, codec: int, payload: bytes | memoryview, limit: int,
             legacy_lz4: bool = False) -> Decompressed | None:  # fmt: skip
    """``codecs.decompress``'s result within the run's decompression budget (spent by it; the run's
    inflate cache asked first), or None when the budget is spent."""
    meter = limits.run
    if meter is None:
        return decompress(codec, payload, limit, legacy_lz4=legacy_lz4)
    if meter.left <= 0:
        return None
    result = meter.inflated.inflate(codec, payload, min(limit, meter.left), legacy_lz4)
    meter.left -= len(result.data)
    return result


def clean_inflate(limits: Limits, codec: int, payload: bytes) -> bytes | None:
    """A magic 2 batch's payload as :class:`_Decoder` inflates it, or None where it would warn (the
    budget spent, a bad or capped payload): what the records rows in C (``tables/_record_rows.c``)
    decode, leaving every warning to the Python decoder."""
    result = inflated(limits, codec, payload, limits.max_decompressed)
    return None if result is None or result.warnings else result.data


class _Tally:
    """Warnings about the inner messages of one wrapper, one per kind: the first said, the others counted.
    A wrapper inflates to millions of messages that may all share a fault (a formatted warning each
    took more memory than the records)."""

    __slots__ = ("first",)

    def __init__(self) -> None:
        self.first: dict[str, list] = {}  # code -> [first message, how many]

    def add(self, code: str, message: str) -> None:
        seen = self.first.get(code)
        if seen is None:
            self.first[code] = [message, 1]
        else:
            seen[1] += 1

    def report(self, batch: Batch) -> None:
        for code, (message, count) in self.first.items():
            batch.warn(code, message if count == 1 else f"{message} (and {count - 1} more inner messages alike)")


class _Message(NamedTuple):
    """A legacy message's fields and where its key and value sit (``position`` = its offset field)."""

    position: int
    offset: int
    size: int
    crc: int
    magic: int
    attributes: int
    timestamp: int | None
    key_size: int
    key_at: int
    value_size: int
    value_at: int
    end: int


def _message(buf: bytes, pos: int, end: int) -> _Message:
    """Parse the legacy message at ``pos``, which must fit before ``end``."""
    offset, size, crc, magic, attrs = _LEGACY.unpack_from(buf, pos)
    key_at = _LEGACY_KEY_AT.get(magic)
    if key_at is None:
        raise _Corrupt(f"magic {magic} where a message belongs")
    msg_end = pos + LOG_OVERHEAD + size
    if size < _MIN_SIZE[magic] or msg_end > end:
        raise _Corrupt(f"message size {size} does not fit in the {end - pos - LOG_OVERHEAD} bytes there")
    timestamp = _I64.unpack_from(buf, pos + 18)[0] if magic == 1 else None
    (key_size,) = _I32.unpack_from(buf, pos + key_at)
    p = pos + key_at + 4
    if key_size > msg_end - p - 4:
        raise _Corrupt(f"key of {key_size} bytes overruns the message")
    p += max(key_size, 0)
    (value_size,) = _I32.unpack_from(buf, p)
    value_at = p + 4
    if value_size > msg_end - value_at:
        raise _Corrupt(f"value of {value_size} bytes overruns the message")
    used = value_at + max(value_size, 0)
    if used != msg_end:
        raise _Corrupt(f"message size {size} but its fields take {used - pos - LOG_OVERHEAD} bytes")
    return _Message(
        pos, offset, size, crc, magic, attrs, timestamp, key_size, pos + key_at + 4, value_size, value_at, msg_end
    )


class _Inner(NamedTuple):
    """An inner message set read with a bound: the messages kept, and what the rest held."""

    kept: list[_Message]
    kept_end: int  # where the kept messages end in the set
    more: int  # messages after them, counted by their size fields, not parsed
    last_offset: int | None  # offset field of the last message (kept or counted)
    problem: tuple[int, str] | None  # where and why reading stopped early


_OFFSET_SIZE = struct.Struct(">qi")


def _messages(buf: bytes, keep: int) -> _Inner:
    """The first ``keep`` messages of an inner message set, parsed; the others only counted, by their
    size fields (as the batches past the batch bound are); and where and why reading stopped early."""
    kept: list[_Message] = []
    pos, n = 0, len(buf)
    while pos < n and len(kept) < keep:
        try:
            msg = _message(buf, pos, n)
        except _CORRUPT as exc:
            return _Inner(kept, pos, 0, kept[-1].offset if kept else None, (pos, _reason(exc)))
        kept.append(msg)
        pos = msg.end
    kept_end, more, last = pos, 0, kept[-1].offset if kept else None
    while pos < n:
        if n - pos < LOG_OVERHEAD:
            return _Inner(kept, kept_end, more, last, (pos, f"{n - pos} bytes cannot hold a message"))
        offset, size = _OFFSET_SIZE.unpack_from(buf, pos)
        if size < _MIN_SIZE[0] or pos + LOG_OVERHEAD + size > n:
            return _Inner(kept, kept_end, more, last, (pos, f"message size {size} does not fit"))
        more, last, pos = more + 1, offset, pos + LOG_OVERHEAD + size
    return _Inner(kept, kept_end, more, last, None)


def _v2_records(buf: bytes, p: int, end: int, batch: Batch, cut: int, log_append_time: int) -> tuple[int, str] | None:
    """Append the records in ``buf[p:end]`` to ``batch.records``.

    Returns None when the bytes held whole records only, else where the bad record starts and
    why. This is the hot loop: one- and two-byte varints (nearly all of them) are decoded inline by
    table lookup, and each length is checked against the record's end before anything is copied.
    """
    append = batch.records.append
    new = tuple.__new__
    zz = _zigzag()
    base_offset = batch.base_offset
    base_ts = batch.base_timestamp
    append_ts = batch.max_timestamp if log_append_time else None
    start = p
    try:
        while p < end:
            start = p
            v = buf[p]
            if v < 0x80:
                length = zz[v]
                p += 1
            elif buf[p + 1] < 0x80:
                length = zz[(v & 0x7F) | buf[p + 1] << 7]
                p += 2
            else:
                length, p = read_varint(buf, p)
            rec_end = p + length
            if length < _MIN_RECORD or rec_end > end:
                raise _Corrupt(f"record length {length} with {end - p} bytes left")
            attrs = buf[p]
            v = buf[p + 1]
            if v < 0x80:
                ts_delta = zz[v]
                p += 2
            elif buf[p + 2] < 0x80:
                ts_delta = zz[(v & 0x7F) | buf[p + 2] << 7]
                p += 3
            else:
                ts_delta, p = read_varlong(buf, p + 1)
            v = buf[p]
            if v < 0x80:
                offset_delta = zz[v]
                p += 1
            elif buf[p + 1] < 0x80:
                offset_delta = zz[(v & 0x7F) | buf[p + 1] << 7]
                p += 2
            else:
                offset_delta, p = read_varint(buf, p)
            v = buf[p]
            if v < 0x80:
                key_size = zz[v]
                p += 1
            elif buf[p + 1] < 0x80:
                key_size = zz[(v & 0x7F) | buf[p + 1] << 7]
                p += 2
            else:
                key_size, p = read_varint(buf, p)
            if key_size < 0:
                key = None
            else:
                q = p + key_size
                if q > rec_end:
                    raise _Corrupt(f"key of {key_size} bytes overruns the record")
                key = buf[p:q] if key_size <= cut else buf[p : p + cut]
                p = q
            v = buf[p]
            if v < 0x80:
                value_size = zz[v]
                p += 1
            elif buf[p + 1] < 0x80:
                value_size = zz[(v & 0x7F) | buf[p + 1] << 7]
                p += 2
            else:
                value_size, p = read_varint(buf, p)
            if value_size < 0:
                value = None
            else:
                q = p + value_size
                if q > rec_end:
                    raise _Corrupt(f"value of {value_size} bytes overruns the record")
                value = buf[p:q] if value_size <= cut else buf[p : p + cut]
                p = q
            if buf[p] == 0:
                headers = ()
                p += 1
            else:
                headers, p = _headers(buf, p, rec_end, cut, batch)
            if p != rec_end:
                raise _Corrupt(f"record length {length} but its fields take {length + p - rec_end} bytes")
            append(
                new(
                    Record,
                    (base_offset + offset_delta, base_ts + ts_delta if append_ts is None else append_ts, key, value,
                     headers, key_size, value_size, attrs, length, offset_delta, ts_delta, None),
                )
            )  # fmt: skip
    except _CORRUPT as exc:
        return start, _reason(exc)
    return None


def _native_v2_records(
    buf: bytes, p: int, end: int, batch: Batch, cut: int, log_append_time: int
) -> tuple[int, str] | None:
    """:func:`_v2_records` in C; whatever the C loop leaves (bad bytes, a header key that is not
    UTF-8, numbers wider than 64 bits) is redone from the start by the Python loop, so records,
    warnings and the reported problem are exactly the Python loop's."""
    append_ts = batch.max_timestamp if log_append_time else None
    if _native.v2_records(
        buf, p, end, batch.records, Record, batch.base_offset, batch.base_timestamp, append_ts, cut
    ):
        return None
    return _v2_records(buf, p, end, batch, cut, log_append_time)


def _native_v2_columns(
    buf: bytes, p: int, end: int, batch: Batch, cut: int, log_append_time: int, arena: RecordArena | None = None
) -> RecordColumns | ArenaColumns | None:
    """The records in ``buf[p:end]`` as columns (in ``arena`` when given), or None when they must be
    decoded into Records."""
    args = (buf, p, end, batch.base_offset, batch.base_timestamp,
            batch.max_timestamp if log_append_time else None, cut)  # fmt: skip
    if arena is None:
        columns = _native.v2_columns(*args)
        return None if columns is None else RecordColumns(*columns)
    starts = arena.lengths()
    try:
        count = _native.v2_columns(*args, arena.buffers)
    except BufferError:  # an array still points into the buffers: new ones (the C call put nothing)
        arena.renew()
        starts = arena.lengths()
        count = _native.v2_columns(*args, arena.buffers)
    return None if count is None else ArenaColumns(arena.buffers, starts, arena.lengths(), count)


_native = native_module()
_decode_v2_records = _v2_records if _native is None else _native_v2_records


def use_native(enabled: bool) -> None:
    """Decode record batches in C or in Python (tests and benchmarks compare the two)."""
    global _decode_v2_records
    _decode_v2_records = _native_v2_records if require_native(enabled) else _v2_records


def native_enabled() -> bool:
    return _decode_v2_records is _native_v2_records


def _headers(buf: bytes, p: int, end: int, cut: int, batch: Batch) -> tuple[tuple[Header, ...], int]:
    """The header count at ``p`` and the headers after it, all inside ``buf[:end]`` (varints inline,
    as in the record loop: tracing headers are on every record in some deployments)."""
    zz = _zigzag()
    v = buf[p]
    if v < 0x80:
        count = zz[v]
        p += 1
    else:
        count, p = read_varint(buf, p)
    if count < 0 or count > (end - p) >> 1:  # each header takes at least two bytes
        raise _Corrupt(f"{count} headers in {end - p} bytes")
    headers = []
    for _ in range(count):
        v = buf[p]
        if v < 0x80:
            n = zz[v]
            p += 1
        else:
            n, p = read_varint(buf, p)
        q = p + n
        if n < 0 or q > end:
            raise _Corrupt(f"header key of {n} bytes")
        try:
            key = buf[p:q].decode()
        except UnicodeDecodeError:
            key = buf[p:q].decode(errors="backslashreplace")
            batch.warn("header_key_not_utf8", f"header key {key!r} is not UTF-8 (shown escaped)")
        p = q
        v = buf[p]
        if v < 0x80:
            n = zz[v]
            p += 1
        else:
            n, p = read_varint(buf, p)
        if n < 0:
            headers.append((key, None))
            continue
        q = p + n
        if q > end:
            raise _Corrupt(f"header value of {n} bytes overruns the record")
        headers.append((key, buf[p:q] if n <= cut else buf[p : p + cut]))
        p = q
    return tuple(headers), p


def _take(buf: bytes, at: int, size: int, cut: int) -> bytes | None:
    """A nullable payload, at most ``cut`` bytes of it."""
    return None if size < 0 else buf[at : at + min(size, cut)]


def _trim(payload: bytes | None, cut: int) -> bytes | None:
    return None if payload is None else payload[:cut]


def _reason(exc: BaseException) -> str:
    if isinstance(exc, _Corrupt | Malformed):
        return str(exc)
    return "runs past the end of the data"


def _crc32c(data: memoryview) -> int:
    """CRC-32C of a batch: in C with the record loops (``_native.crc32c``), else by the crc32c
    module, the reference. That module is loaded on first use: importing it takes longer than
    decoding a small capture (or checking every batch of a large one in C), and a run that writes
    only the exchanges table never needs it."""
    if native_enabled():
        return _native.crc32c(data)
    from crc32c import crc32c

    return crc32c(data)


def _warn_crc(batch: Batch, crc: int, kind: str) -> None:
    zero = " (zero: never set)" if crc == 0 else ""
    batch.warn("crc_mismatch", f"{kind} {crc:#010x}{zero} does not match the bytes; records decoded anyway")


def _capped(batch: Batch) -> bool:
    """Whether a bound cut the batch's payload (its last record is then cut too, not corrupt)."""
    return any(w.code in ("decompression_capped", CAP) for w in batch.warnings)


def _warn_corrupt_record(batch: Batch, index: int, where: int, origin: int | None, reason: str) -> None:
    """Flag the record that stopped a batch; ``origin`` None means ``where`` is in decompressed data."""
    if origin is None:
        batch.warn("corrupt_record", f"record #{index} (byte {where} of the decompressed records): {reason}")
    else:
        batch.warn("corrupt_record", f"record #{index}: {reason}", origin + where)
