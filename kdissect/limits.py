"""Every resource bound of the core in one place, with its default and why.

A capture is untrusted input: nothing it says may cost more than a fixed amount of memory or
more than linear time. Each stage takes its bounds from one :class:`Budget`, which every engine
(local, live, Spark) passes down, so a bound changed here holds on every entry point. A bound that
cuts something is reported as an anomaly row of kind ``cap`` saying what was cut, where and how
much; sizes and counts stay right where only payload bytes were dropped.

The defaults keep peak RSS under 1 GB for any input (lower with ``--no-payloads``) while leaving
real traffic untouched: Kafka's own limits (1 MiB messages, 50 MiB fetches, five requests in
flight per connection) sit far below them.
"""

from __future__ import annotations

from dataclasses import dataclass

MiB = 1 << 20
GiB = 1 << 30
CAP = "cap"  # the anomaly kind of every cut a bound makes


@dataclass(frozen=True, slots=True)
class Budget:
    """The bounds of one run. Memory figures are bytes; times are capture time, not wall time."""

    # -- capture sources --------------------------------------------------------------------
    gunzip_ratio: int = 200  # a gzip capture may inflate this many times its compressed size...
    gunzip_free: int = 64 * MiB  # ...once it has produced this much (real captures gzip 3-20x)
    fragment_bytes: int = 4 * MiB  # IP fragments held, all datagrams together
    fragment_datagrams: int = 1024  # datagrams being reassembled at once
    fragment_holes: int = 128  # holes in one datagram (64 KiB at 576-byte MTU makes ~120 pieces)

    # -- TCP reassembly ---------------------------------------------------------------------
    connections: int = 16_384  # connections tracked at once (~8 KB each); more end the least recently active
    idle_ns: int = 600_000_000_000  # silent this long (capture time, Kafka's connections.max.idle.ms): ended
    ooo_bytes: int = 8 * MiB  # out-of-order bytes held per direction

    # -- Kafka layer ------------------------------------------------------------------------
    pending_requests: int = 4096  # requests awaiting an answer per connection (Kafka allows 5 in flight)

    # -- record batches ---------------------------------------------------------------------
    decompressed_batch: int = 64 * MiB  # one batch's (or legacy wrapper's) decompressed bytes
    batches_per_field: int = 50_000  # batches (or legacy messages) decoded per records field; the rest counted
    decompressed_run: int = 16 * GiB  # all batches of the run together; past it payloads are not inflated

    # -- tables -----------------------------------------------------------------------------
    payload_bytes: int = 256 * MiB  # keys/values/headers held in tables not yet written out
    spill_rows: int = 50_000  # rows of a growing table written out at once (with ``--out``)
    spill_bytes: int = 64 * MiB  # payload bytes of a growing table written out at once (with ``--out``)
    anomaly_rows: int = 100  # rows of one anomaly kind per connection and direction; the rest are counted


DEFAULT_BUDGET = Budget()
