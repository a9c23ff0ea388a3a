"""What the capture layer hands out besides TCP segments: records, anomalies, counters.

Kept apart from the parsers so front ends (CLI, live, Spark) can import the shapes
without pulling in any parsing code.
"""

from __future__ import annotations

from dataclasses import field

from kdissect.dataclass import dataclass
from kdissect.sources.segment import TcpSegment


class CaptureFormatError(ValueError):
    """The input is not a capture file at all (no pcap or pcapng header).

    The only exception the capture layer raises for bad input: everything wrong *inside*
    a recognised capture becomes a ``SourceAnomaly`` instead. ``str()`` is one line.
    """


@dataclass(frozen=True, slots=True)
class SourceAnomaly:
    """Something wrong in the capture that did not stop reading.

    ``kind`` is a short machine-readable code (see ``AnomalyKind``); ``offset`` is the
    byte offset in the (decompressed) capture stream of the record or block concerned.
    """

    kind: str
    message: str
    offset: int | None = None
    ts_ns: int | None = None


class AnomalyKind:
    """The anomaly codes, so tests and front ends need not repeat string literals."""

    TRUNCATED_FILE = "truncated_file"  # the stream ended inside a header, record or block
    CORRUPT_RECORD = "corrupt_record"  # a pcap record or pcapng block whose framing is impossible
    RESYNC = "resync"  # bytes skipped to find the next plausible record or block
    BAD_RECORD = "bad_record"  # a well-framed pcap record or pcapng block whose contents make no sense
    BAD_HEADER = "bad_header"  # a link, IP or TCP header that contradicts itself
    TRUNCATED_PACKET = "truncated_packet"  # the snap length cut a header we need
    UNSUPPORTED_LINK = "unsupported_link"  # first record of a link type we cannot decode
    FRAGMENT_OVERLAP = "fragment_overlap"  # IP fragments covering the same bytes (first copy kept)
    FRAGMENT_INVALID = "fragment_invalid"  # a fragment that cannot belong to its datagram
    FRAGMENT_INCOMPLETE = "fragment_incomplete"  # a datagram given up (timeout, memory bound, end)
    DECOMPRESSION = "decompression"  # the compressed container is damaged
    CAP = "cap"  # a resource bound cut the input (the bounds: ``kdissect.options``)
    UNREADABLE_FILE = "unreadable_file"  # a file of the inputs that is not a capture (skipped, the rest read)


@dataclass(slots=True)
class CaptureRecord:
    """One packet as the capture file stored it, before any protocol decoding.

    Not frozen: one is built per packet on the hot path and frozen dataclasses cost
    about 2.5x more to construct. ``ts_ns`` of a pcapng Simple Packet Block (which has
    no timestamp) is that of the previous record in its section.
    """

    link_type: int
    ts_ns: int
    data: bytes  # captured bytes (possibly cut by the snap length)
    orig_len: int  # length of the packet on the wire
    offset: int  # stream offset of the record header / block
    interface: int = 0  # pcapng interface id (0 for classic pcap)


@dataclass(slots=True)
class SourceStats:
    """Running counters of one capture source, updated as events are produced."""

    bytes_read: int = 0  # capture-stream bytes consumed (after decompression)
    packets: int = 0  # capture records seen
    captured_bytes: int = 0  # sum of the records' captured lengths
    tcp_segments: int = 0  # segments produced (reassembled fragments count once)
    non_tcp: int = 0  # records carrying something other than TCP (skipped)
    ip_fragments: int = 0  # records that were IP fragments of TCP datagrams
    anomalies: int = 0


@dataclass(frozen=True, slots=True)
class DecryptionSecrets:
    """Key material the capture carries (a pcapng Decryption Secrets Block): handed to the TLS
    stage, never shown (``data`` is out of ``repr``)."""

    secrets_type: int  # TLS_KEY_LOG for NSS key log text
    data: bytes = field(repr=False)


TLS_KEY_LOG = 0x544C534B  # "TLSK": the secrets type of NSS key log text (pcapng spec, DSB)

SourceEvent = TcpSegment | SourceAnomaly | DecryptionSecrets
RecordEvent = CaptureRecord | SourceAnomaly | DecryptionSecrets
