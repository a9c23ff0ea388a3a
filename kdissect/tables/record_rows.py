"""Rows for the ``records`` and ``batches`` tables from Produce requests and Fetch responses.

Produce batches carry client-side offsets (usually from 0); the paired response's
``base_offset`` turns them into the log offsets the broker assigned. Which records are
``aborted`` (and by which rule) is decided in :mod:`kdissect.tables.transactions`.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from functools import partial
from typing import TYPE_CHECKING, Any

from kdissect.dataclass import dataclass
from kdissect.decoders.codecs import CODEC_NAMES
from kdissect.decoders.entities import Entry
from kdissect.decoders.records import (
    CONTROL_TYPES,
    ArenaColumns,
    Limits,
    RecordArena,
    RecordSet,
    clean_inflate,
    decode_records,
    native_enabled,
)
from kdissect.native import native_module
from kdissect.options import Options
from kdissect.tables.blocks import MAX_MS, WIRE
from kdissect.tables.rows import TableRows, native_columns, typed, typed_rows
from kdissect.tables.transactions import BROKER_LIST, TransactionMarks, listed_as_aborted

if TYPE_CHECKING:
    from kdissect.tables.repeats import Repeats

_TIMESTAMP_TYPES = {0: "create_time", 1: "log_append_time"}
_native_rows = native_module("tables._native")


@dataclass(slots=True)
class PartitionRecords:
    """One ``records`` field located in a message, with its topic-partition context."""

    topic: str | None
    topic_id: Any
    partition: int | None
    records: RecordSet
    base_offset: int | None  # produce: what the broker assigned; fetch: None (batches carry it)
    aborted: list[tuple[int, int]]  # fetch: (producer id, first offset) of aborted transactions


# A ``records`` field found in a message: topic, topic id, partition, its bytes and the
# aborted_transactions of the struct it sits in (what the schema walk, Python or native, finds).
Located = tuple[str | None, Any, int | None, bytes, list[dict[str, Any]] | None]


def located_records(entries: list[Entry]) -> Iterator[Located]:
    """The non-empty ``records`` fields among a message's entries (the Python walk's)."""
    for e in entries:
        raw = e.scalars.get("records")
        if isinstance(raw, bytes) and raw:
            yield e.context.topic, e.context.topic_id, e.context.partition, raw, e.value.get("aborted_transactions")


def record_fields(located: Iterable[Located], options: Options, arena: RecordArena | None = None
                  ) -> list[PartitionRecords]:  # fmt: skip
    """Decode every ``records`` field of a message (its records as columns, in ``arena`` if given)."""
    columns = True if arena is None else arena
    return [PartitionRecords(topic, topic_id, partition,
                             decode_records(raw, limits=options.limits, payloads=options.payloads, columns=columns),
                             None, [(a["producer_id"], a["first_offset"]) for a in (aborted or [])])
            for topic, topic_id, partition, raw, aborted in located]


def produce_base_offsets(resp_entries: list[Entry]) -> dict[tuple[str | None, int | None], int]:
    """(topic, partition) -> base offset the broker assigned, from a Produce response."""
    return {(e.context.topic, e.context.partition): e.scalars["base_offset"]
            for e in resp_entries if e.has_partition and e.scalars.get("base_offset", -1) >= 0}


def null_payloads(table: TableRows) -> None:
    """Keys, values and header values of the records table as null (sizes and header keys kept):
    how ``--no-payloads`` shows that a payload was there but not kept."""
    for name in ("key", "value"):
        column = table.listed(name)
        column[:] = [None] * len(column)
    headers = table.listed("headers")
    headers[:] = [[(k, None) for k, _ in h] if h else h for h in headers]


# The batches table's columns in the order :func:`batch_rows` gives them (the rest are None).
BATCH_PREFIX = ("connection_id", "correlation_id", "direction")
BATCH_NAMES = (
    *BATCH_PREFIX, "topic", "_topic_id", "partition", "position", "base_offset", "last_offset", "magic", "compression",
    "record_count", "records_decoded", "batch_bytes", "compressed_bytes", "decompressed_bytes", "compression_ratio",
    "crc_ok", "complete", "is_control", "transactional", "producer_id", "producer_epoch", "base_sequence", "warnings")


def batch_rows(parts: list[PartitionRecords]) -> list[tuple[Any, ...]]:
    """The batches table's rows of a message's records fields, as values in ``BATCH_NAMES``' order
    after its prefix (:meth:`TableRows.append_values`: no dict per batch)."""
    out = []
    for part in parts:
        batches = list(part.records.batches)
        if part.records.partial is not None:
            batches.append(part.records.partial)
        for b in batches:
            decompressed = b.decompressed_size or None
            out.append((
                part.topic, part.topic_id, part.partition, b.position, b.base_offset, b.last_offset, b.magic,
                b.codec_name, b.record_count, b.records_decoded, b.size, b.compressed_size or None, decompressed,
                (decompressed / b.compressed_size) if decompressed and b.compressed_size else None,
                b.crc_ok, b.complete, b.is_control, b.is_transactional, b.producer_id, b.producer_epoch,
                b.base_sequence, "; ".join(w.message for w in b.warnings) or None,
            ))
    return out


# The records table's values shared by a batch's rows (add_records' ``same``), in the order
# tables/_record_rows.c numbers them.
SAME = ("connection_id", "correlation_id", "direction", "topic", "_topic_id", "partition", "batch_base_offset", "magic",
        "compression", "batch_bytes", "batch_compressed_bytes", "crc_ok", "is_control", "producer_id",
        "producer_epoch", "base_sequence", "transactional", "aborted", "aborted_by", "timestamp_type")
_spec: tuple[Limits, tuple] | None = None  # the last limits' spec (one per run)
_slots: tuple[list[str], tuple[int, ...]] | None = None  # the last run columns' SAME slots


def _spec_of(limits: Limits) -> tuple:
    global _spec
    if _spec is None or _spec[0] is not limits:
        codecs = tuple(CODEC_NAMES.get(c, str(c)) for c in range(8))
        kinds = (_TIMESTAMP_TYPES[0], _TIMESTAMP_TYPES[1])
        _spec = (limits, (ArenaColumns, codecs, kinds, partial(clean_inflate, limits), limits.max_batches, limits.run))
    return _spec[1]


def _slots_of(names: list[str]) -> tuple[int, ...]:
    global _slots
    if _slots is None or _slots[0] is not names:
        _slots = (names, tuple(SAME.index(name) if name in SAME else -1 for name in names))
    return _slots[1]


_NO_RECORDS = ()  # what _target gives for a run writing batches without records: C's target None


def rows_made_in_c() -> bool:
    """Whether the records and batches rows may be made in C (built, and not turned off)."""
    return _native_rows is not None and native_enabled()


def _target(records: TableRows | None, repeats: Repeats | None) -> tuple | None:
    """What the C code appends a records table's rows to (:meth:`TableRows.record_target`, its runs'
    SAME slots, and ``repeats``' hook); ``_NO_RECORDS`` without a records table (batches alone); or None:
    not built, or the table not steady."""
    if not rows_made_in_c():
        return None
    if records is None:
        return _NO_RECORDS
    target = records.record_target()
    if target is None:
        return None
    lists, names, counts, block = target
    return (lists, _slots_of(names), counts, block.batches, block.first_offsets, block.counts,
            None if repeats is None else repeats.target())


def _cut(options: Options, target: tuple) -> int:
    """Payload bytes kept per key, value and header value: none for a scratch arena (no records table)."""
    if target is _NO_RECORDS:
        return 0
    return sys.maxsize if options.payloads.keep is None else options.payloads.keep


def rows_in_c(located: list[Located], options: Options, arena: RecordArena, records: TableRows | None,
              batches: TableRows | None, prefix: tuple[int, int | None, str],
              base_offsets: dict[tuple[str | None, int | None], int], repeats: Repeats | None = None) -> int | None:
    """:func:`record_fields`, :func:`batch_rows` and :func:`add_records` of one message at once, in C
    (``tables/_record_rows.c``), when every batch it carries is plain (see there) and the records table
    is steady (:meth:`TableRows.record_target`) or not written (``records`` None: ``arena`` is scratch,
    emptied after each call): the payload bytes its records hold; else None, with nothing changed (the
    decompression budget restored), for the reference to decode the message. ``repeats``: the task's
    :class:`~kdissect.tables.repeats.Repeats`, its ``base`` set to the rows before this call's."""
    target = _target(records, repeats)
    if target is None:
        return None
    meter = options.limits.run
    left = meter.left if meter is not None else 0
    columns = batch_columns() if batches is not None else None
    found = _native_rows.record_rows(_spec_of(options.limits), located, _cut(options, target),  # type: ignore[union-attr]
                                     arena.buffers, prefix, base_offsets, prefix[2] == "fetch", columns,
                                     None if target is _NO_RECORDS else target)
    if found is None:
        if meter is not None:
            meter.left = left
        if repeats is not None:
            repeats.commit(0)
        return None
    added, held = found
    if repeats is not None:
        repeats.commit(added)
    _add_batches(batches, columns)
    if records is not None:
        records.added_records(added)
    return held


def lane_rows_in_c(left: list[tuple], start: int, options: Options, arena: RecordArena, records: TableRows | None,
                   batches: TableRows | None, errors: bool, brokers: bool, allowance: int,
                   repeats: Repeats | None = None) -> tuple[int, int]:  # fmt: skip
    """The records and batches rows of the native pairing's ``left`` exchanges (``LaneParts.left``) from
    ``start`` on, in C, up to the first whose rows the sink makes itself (see ``lane_records`` in
    ``tables/_record_rows.c``; ``errors``/``brokers``: whether those tables are written, ``allowance``:
    payload bytes the sink may still hold, -1 unbounded; ``records`` None, ``repeats``: as in
    :func:`rows_in_c`): the index of that exchange and the payload bytes the records hold."""
    target = _target(records, repeats)
    if target is None:
        return start, 0
    columns = batch_columns() if batches is not None else None
    end, added, held = _native_rows.lane_records(_spec_of(options.limits), left, start,  # type: ignore[union-attr]
                                                 _cut(options, target), arena.buffers, columns,
                                                 None if target is _NO_RECORDS else target,
                                                 errors, brokers, allowance)
    if repeats is not None:
        repeats.commit(added)
    _add_batches(batches, columns)
    if records is not None:
        records.added_records(added)
    return end, held


def batch_columns() -> tuple[list[Any] | bytearray, ...]:
    """Columns for the batches rows C makes, one per ``BATCH_NAMES`` name: typed buffers for the integer
    columns (no Python object per cell), lists for the others."""
    return native_columns("batches", BATCH_NAMES)


def _add_batches(batches: TableRows | None, columns: tuple[list[Any] | bytearray, ...] | None) -> None:
    if batches is not None and columns is not None and (n := typed_rows(columns[0])):
        batches.add_columns(typed(dict(zip(BATCH_NAMES, columns, strict=True))), n)


def add_records(table: TableRows, conn_id: int, correlation_id: int | None, direction: str,
                parts: list[PartitionRecords], base_offsets: dict[tuple[str | None, int | None], int],
                marks: TransactionMarks, spilled: int = 0) -> None:
    """Add a row per record of an exchange to the ``records`` table, a batch at a time (see :mod:`.rows`);
    ``spilled``: rows of the table already handed on, so ``marks`` can number rows."""
    for part in parts:
        assigned = base_offsets.get((part.topic, part.partition))
        index = 0
        for b in part.records.batches:
            n = b.records_decoded
            if not n:
                continue
            aborted = listed_as_aborted(b, part.aborted)
            if b.is_control and direction == "fetch":
                marks.control(part.topic, part.topic_id, part.partition, b)
            elif b.is_transactional and not aborted:
                last = b.last_offset if direction == "fetch" else (assigned + index + n - 1 if assigned is not None
                                                                   else None)
                marks.batch(direction, part.topic, part.topic_id, part.partition, b, last, spilled + len(table), n)
            # A produce request's offsets are placeholders until the broker assigns them: absolute
            # only when the paired response gave the base offset, else unknown (not the placeholder).
            first_offset = assigned + index if assigned is not None else (WIRE if direction == "fetch" else None)
            index += n
            same = {
                "connection_id": conn_id, "correlation_id": correlation_id, "direction": direction,
                "topic": part.topic, "_topic_id": part.topic_id, "partition": part.partition,
                "batch_base_offset": b.base_offset, "magic": b.magic, "compression": b.codec_name,
                "batch_bytes": b.decompressed_size or b.size, "batch_compressed_bytes": b.compressed_size or None,
                "crc_ok": b.crc_ok, "is_control": b.is_control, "producer_id": b.producer_id,
                "producer_epoch": b.producer_epoch, "base_sequence": b.base_sequence,
                "transactional": b.is_transactional, "aborted": aborted,
                "aborted_by": BROKER_LIST if aborted else None,
                "timestamp_type": _TIMESTAMP_TYPES.get(b.timestamp_type) if b.timestamp_type is not None else None,
            }
            if b.columns is not None:
                table.add_record_columns(same, b.columns, first_offset)
                continue
            offsets, timestamps, keys, values, headers, key_sizes, value_sizes = list(zip(*b.records, strict=True))[:7]
            if first_offset is None:
                offsets = (None,) * n
            elif first_offset != WIRE:
                offsets = range(first_offset, first_offset + n)
            controls = {c.offset: CONTROL_TYPES.get(c.type, str(c.type)) for c in b.control}
            table.add_block(n, same, {
                "offset": offsets,
                "timestamp": [t * 1_000_000 if t is not None and 0 <= t <= MAX_MS else None for t in timestamps],
                "key": keys, "value": values, "key_size": key_sizes, "value_size": value_sizes,
                "headers": list(map(list, headers)),
                "control_type": [controls.get(r.offset) for r in b.records] if controls else (None,) * n,
            })
