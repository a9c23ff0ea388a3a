"""The records table's per-batch columns staged run-end encoded: a batch's records share their
connection, partition, batch offsets and header fields, so a Spark task staged those values once per
record (about 70 of a row's 130 bytes besides its payloads, 17 MB of ``large-60MB.pcap``'s 81 MB of
staged records); as runs they take 0.3 MB. Encoding and decoding them cost about 9 ms per such file,
less than the kernel's time writing the 17 MB (reports/spark-dedupe-2026-11-30.md).

Dictionary columns (direction, topic, codec names) stay as they are (``run_end_encode`` takes no
dictionary arrays), and so do the narrow ones; so does the staged file's other run-end encoded column
(``repeats.BACK``), which its reader resolves first."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from .record_rows import SAME

_ENCODED = frozenset(SAME)  # the columns a batch's rows share (tables/_record_rows.c makes them runs)


def _wide(field: pa.Field) -> bool:
    """A shared column worth encoding: 4 bytes a row or more (booleans, ``magic`` and the epoch cost
    more to encode than the kernel's time writing them: 23 M instructions a 50 MB file for 0.1 MB)."""
    t = field.type
    return field.name in _ENCODED and (pa.types.is_string(t) or (pa.types.is_integer(t) and t.bit_width >= 32))


def encoded(table: pa.Table) -> pa.Table:
    """A records piece with its wide shared columns run-end encoded."""
    for i, field in enumerate(table.schema):
        if _wide(field):
            table = table.set_column(i, field.name, pc.run_end_encode(table.column(i)))
    return table


def encoded_in(schema: pa.Schema) -> bool:
    """Whether a staged stream's pieces are :func:`encoded`."""
    return any(f.name in _ENCODED and pa.types.is_run_end_encoded(f.type) for f in schema)


def decoded(table: pa.Table) -> pa.Table:
    """An :func:`encoded` piece as it was."""
    for i, field in enumerate(table.schema):
        if field.name in _ENCODED and pa.types.is_run_end_encoded(field.type):
            table = table.set_column(i, field.name, pc.run_end_decode(table.column(i)))
    return table
