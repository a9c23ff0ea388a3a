"""Every knob of a run, in one object: built by the CLI and by ``open_capture`` alike, and
handed unchanged to an engine, which gives each stage the part it reads.

The resource bounds are knobs too. A capture is untrusted input: nothing it says may cost more
than a fixed amount of memory or more than linear time, and since every engine (local, live,
Spark) hands the same object down to the sources, reassembly, Kafka layer and tables, a bound
changed here holds on every entry point. A bound that cuts something is reported as an anomaly
row of kind ``cap`` saying what was cut, where and how much; sizes and counts stay right where
only payload bytes were dropped. The defaults keep peak RSS under 1 GB for any input (lower with
``--no-payloads``) while leaving real traffic untouched: Kafka's own limits (1 MiB messages,
50 MiB fetches, five requests in flight per connection) sit far below them.
"""

from __future__ import annotations

from dataclasses import field

from kdissect.dataclass import dataclass
from kdissect.decoders.records import DEFAULT_LIMITS, FULL, Limits, Payloads
from kdissect.decoders.records import LENGTHS_ONLY as LENGTHS_ONLY  # a knob's value, for the faces
from kdissect.sources.defrag import DefragLimits
from kdissect.sources.gunzip import GUNZIP_FREE, GUNZIP_RATIO
from kdissect.tls.keylog import KeyLog

MiB = 1 << 20
_DEFRAG = DefragLimits()  # the sources stage cannot see these options: its own defaults are the run's
DEFAULT_PORTS = (9092, 9093, 9094)
DEFAULT_MAX_FRAME = 100 * 1024 * 1024  # Kafka's socket.request.max.bytes default
DEFAULT_PROBE_LIMIT = 256 * 1024
DEFAULT_PENDING_REQUESTS = 4096  # requests awaiting an answer per connection (Kafka allows 5 in flight)


@dataclass(frozen=True, slots=True)
class Options:
    """How to read a capture as Kafka, how much of each record to keep, and what any of it may cost.

    ``ports`` are where brokers listen; with ``auto_detect`` any other TCP connection whose bytes
    decode as Kafka requests within ``probe_limit`` bytes per direction is analysed too.
    ``max_frame`` is the largest size field believed. ``payloads`` says how much of each record key
    and value the records table keeps; ``limits`` bound record decoding (``max_decompressed``: one
    batch's decompressed bytes, ``max_batches``: batches decoded per records field).
    ``keep_frames`` keeps every frame's bytes on its message (``raw``), not only those that did not
    decode (``show --raw`` and ``--save-frames``). The other fields are the resource bounds of the
    other stages (memory in bytes, times in capture time).
    """

    def defrag(self) -> DefragLimits:
        """The IP defragmenter's bounds (its timeouts stay the sources' own)."""
        return DefragLimits(
            max_datagrams=self.fragment_datagrams, max_bytes=self.fragment_bytes, max_holes=self.fragment_holes
        )

    ports: tuple[int, ...] = DEFAULT_PORTS
    auto_detect: bool = True
    max_frame: int = DEFAULT_MAX_FRAME
    probe_limit: int = DEFAULT_PROBE_LIMIT
    payloads: Payloads = FULL
    limits: Limits = DEFAULT_LIMITS
    keep_frames: bool = False

    # -- capture sources --------------------------------------------------------------------
    gunzip_ratio: int = GUNZIP_RATIO  # a gzip capture may inflate this many times its compressed size...
    gunzip_free: int = GUNZIP_FREE  # ...once it has produced this much
    fragment_bytes: int = _DEFRAG.max_bytes  # IP fragments held, all datagrams together
    fragment_datagrams: int = _DEFRAG.max_datagrams  # datagrams being reassembled at once
    fragment_holes: int = _DEFRAG.max_holes  # holes in one IP datagram

    # -- TCP reassembly ---------------------------------------------------------------------
    max_connections: int = 16_384  # tracked at once (~8 KB each); more end the least recently active
    idle_ns: int = 600_000_000_000  # silent this long (Kafka's connections.max.idle.ms): ended
    ooo_bytes: int = 8 * MiB  # out-of-order bytes held per direction

    # -- TLS ------------------------------------------------------------------------------------
    # The key log (``--tls-keylog``; pcapng Decryption Secrets Blocks add to it). Kept out of repr and
    # comparisons: key material never reaches an output, and two runs differ in keys, not in options.
    tls_keylog: KeyLog | None = field(default=None, repr=False, compare=False)
    tls_trial_connection: int = 1_000_000  # trial decryption attempts per connection (TLS 1.3 without handshake)
    tls_trial_run: int = 10_000_000  # ...and for the whole run (one attempt: a record open, about 2 µs)
    tls_trial_max_seq: int = 1 << 20  # the highest record sequence number tried

    # -- Kafka layer ------------------------------------------------------------------------
    pending_requests: int = DEFAULT_PENDING_REQUESTS
    # Set by an engine that takes exchanges rows as column pieces (events.ExchangeRows: its table sink, or
    # live's figures): the native lanes then pair the common case into rows (kafka/_pairing.c) instead of
    # Exchange events.
    exchange_rows: bool = False
    # ...and its rows also bring each request's topics, every error code and the topic ids a response
    # names (ExchangeRows.topics/codes/named): what the live engine's figures take of an exchange.
    exchange_topics: bool = False
    # Set by an engine whose table sink also takes the detail rows of those exchanges from the lane
    # (TableSink.lane_details: the spec kafka/_details.c reads); rows then come with detail parts.
    exchange_details: tuple | None = field(default=None, repr=False, compare=False)

    # -- record batches and tables ------------------------------------------------------------
    decompressed_run: int = 16 * 1024 * MiB  # all batches of the run together; past it payloads are not inflated
    payload_bytes: int = 256 * MiB  # keys/values/headers held in tables not yet written out
    spill_rows: int = 50_000  # rows of a growing table written out at once (with ``--out``)
    spill_bytes: int = 64 * MiB  # payload bytes of a growing table written out at once (with ``--out``)
    anomaly_rows: int = 100  # rows of one anomaly kind per connection and direction; the rest are counted

    # -- the report ------------------------------------------------------------------------------
    # The transactions section's journal (kdissect.analysis.journal): the first this many transactional
    # records and transaction events in capture order are kept; past them, the rest are only counted.
    # None: the journal's own defaults (RECORD_LIMIT, EVENT_LIMIT: 100,000 and 10,000).
    journal_records: int | None = None
    journal_events: int | None = None
