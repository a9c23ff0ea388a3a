"""What the Kafka layer emits: decoded messages, paired exchanges, anomalies, connection summaries.

These are the only objects sinks (tables, reports, live display, Spark rows) consume.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any

from kdissect.dataclass import dataclass
from kdissect.reassembly.streams import DirectionStats

Endpoint = tuple[str, int]


@dataclass(slots=True)
class KafkaMessage:
    """One frame of a Kafka connection, decoded or not."""

    conn_id: int
    is_request: bool
    offset: int  # stream offset of the size prefix in its direction
    size: int  # frame size without the prefix
    ts_first: int  # ns: first packet carrying the frame
    ts_last: int  # ns: packet that completed it
    api_key: int | None = None
    api_version: int | None = None
    correlation_id: int | None = None
    header: dict[str, Any] | None = None
    body: dict[str, Any] | None = None
    raw: bytes | None = None  # frame bytes, kept when not decodable (orphans, errors, tokens)
    error: str | None = None  # why it could not be decoded
    warnings: list[dict[str, Any]] = field(default_factory=list)


@dataclass(slots=True)
class Exchange:
    """A request with its response, or one of them alone (``status`` says which case)."""

    conn_id: int
    request: KafkaMessage | None
    response: KafkaMessage | None
    status: str  # ok, unanswered, no_response_expected, orphan_response, undecodable (tables add "error")
    out_of_order: bool = False  # the response overtook an older request still waiting in order (pairing.Pairer.take)
    inferred: bool = False  # an orphan response decoded as the answer to a request inferred, not seen
    client: Endpoint | None = None
    broker: Endpoint | None = None
    # An authentication failure only the response's SASL token reports (SCRAM ``e=``, an OAUTHBEARER
    # error) while its error code says none: counted as SASL_AUTHENTICATION_FAILED by the tables.
    auth_error: str | None = None


@dataclass(frozen=True, slots=True)
class Anomaly:
    """Something the capture did not let us decode, or that looks wrong on the wire."""

    kind: str  # gap, resync, desync, overflow, decode_error, tls, not_kafka, crc_failure, ...
    conn_id: int | None
    direction: str | None  # "request" (client to broker), "response", or None when unknown
    offset: int | None  # stream offset in that direction
    length: int | None
    ts_ns: int | None
    detail: str
    source: str | None = None  # the capture file, for anomalies of the file itself (no connection)


@dataclass(slots=True)
class SaslFacts:
    """What a connection showed of its SASL authentication (filled by :mod:`kdissect.kafka.sasl`)."""

    mechanism: str | None = None  # from the SaslHandshake, else guessed from the first client token
    user: str | None = None  # the identity the client claimed
    principal: str | None = None  # that identity, once authentication succeeded
    result: str | None = None  # ok, failed, incomplete (None: no SASL seen)
    error: str | None = None
    reauths: int = 0  # authentications after the first on this connection (KIP-368)
    session_lifetime_ms: int | None = None  # SaslAuthenticate v1+: when the broker wants a re-authentication
    tokens: int = 0  # SASL tokens seen (SaslAuthenticate bodies and v0 bare frames)


@dataclass(slots=True)
class ConnectionSummary:
    """Everything known about one TCP connection once it is over."""

    conn_id: int
    client: Endpoint | None  # None when the roles could not be told apart
    broker: Endpoint | None
    endpoints: tuple[Endpoint, Endpoint]
    first_ts: int
    last_ts: int
    is_kafka: bool
    encrypted: bool = False
    sasl: SaslFacts = field(default_factory=SaslFacts)
    client_ids: list[str] = field(default_factory=list)
    software_name: str | None = None
    software_version: str | None = None
    bytes_to_broker: int = 0
    bytes_to_client: int = 0
    frames_to_broker: int = 0
    frames_to_client: int = 0
    gaps: int = 0
    gap_bytes: int = 0
    retransmissions: int = 0
    skipped_bytes: int = 0
    end_reason: str = ""
    # TLS (kdissect.tls fills these on encrypted connections): names and outcomes, never key material.
    tls_version: str | None = None
    cipher_suite: str | None = None
    sni: str | None = None
    alpn: str | None = None
    tls_resumed: bool | None = None
    decryption: str | None = None  # handshake, trial, no key, no handshake, failed
    # The reassembler's counters per direction (client to broker, broker to client), once ended.
    tcp: tuple[DirectionStats, DirectionStats] | None = None


# The exchanges table's columns (tables/columns.py), in the order the native pairing fills them.
EXCHANGE_ROW = ("connection_id", "client_ip", "client_port", "broker_ip", "broker_port", "api_key", "api_name",
                "api_version", "correlation_id", "client_id", "request_ts", "response_ts", "latency_ms", "total_ms",
                "request_bytes", "response_bytes", "error_code", "error_name", "error_count", "throttle_time_ms",
                "status", "out_of_order", "inferred", "warnings")


# The columns the native pairing writes as typed buffers (a bytearray of native machine values, no Python
# object per cell; ``_pairing.c``'s KIND table): numpy's type code per column. Never null in its rows.
EXCHANGE_TYPED = {"connection_id": "q", "client_port": "q", "broker_port": "q", "api_key": "q", "api_version": "q",
                  "correlation_id": "q", "request_ts": "q", "response_ts": "q", "latency_ms": "d", "total_ms": "d",
                  "request_bytes": "q", "response_bytes": "q", "error_code": "q", "error_count": "q",
                  "out_of_order": "?", "inferred": "?"}  # fmt: skip
_LISTED = next(k for k, name in enumerate(EXCHANGE_ROW) if name not in EXCHANGE_TYPED)  # a list column: the count


@dataclass(slots=True)
class ExchangeRows:
    """Exchanges the native pairing (``kafka/_pairing.c``) turned straight into rows of the exchanges
    table: a column per ``EXCHANGE_ROW`` name, no object per exchange: the ``EXCHANGE_TYPED`` columns as
    bytearrays of machine values, the others (text, and the nullable throttle time) as lists. Only for an
    engine that asked (``Options.exchange_rows``): its table sink takes them as a piece; the rows are what
    ``tables.sink.exchange_row`` makes of the Exchange events they stand for, in their place.

    With ``Options.exchange_topics`` (the live engine's figures) three more lists, an item per row, from
    the exchange scan: ``topics``, what the request's structs name (``named_topics.request_topics``: a
    topic, or a topic id's 16 bytes); ``codes``, every non-zero error code of the response in
    ``entities.walk`` order; ``named``, the (topic, topic id's 16 bytes) pairs its structs name. Else
    they stay empty."""

    lists: tuple[list[Any] | bytearray, ...] = field(
        default_factory=lambda: tuple(bytearray() if name in EXCHANGE_TYPED else [] for name in EXCHANGE_ROW))
    topics: list[tuple[str | bytes, ...]] = field(default_factory=list)
    codes: list[tuple[int, ...]] = field(default_factory=list)
    named: list[tuple[tuple[str, bytes], ...]] = field(default_factory=list)
    # In a run whose sink writes detail tables too (``Options.exchange_details``): the detail rows of the
    # same exchanges, as the sink's piece factory made them (tables/detail_walk.py's LaneParts).
    details: Any = None

    def __len__(self) -> int:
        return len(self.lists[_LISTED])

    def columns(self) -> dict[str, list[Any] | bytearray]:
        """Each column's list, or (an ``EXCHANGE_TYPED`` column) its buffer."""
        return dict(zip(EXCHANGE_ROW, self.lists, strict=True))

    def listed(self, name: str) -> list[Any]:
        """Column ``name``'s cells as Python values."""
        k = EXCHANGE_ROW.index(name)
        column = self.lists[k]
        return memoryview(column).cast(EXCHANGE_TYPED[name]).tolist() if type(column) is bytearray else column


def new_rows() -> tuple[ExchangeRows, tuple[list[Any] | bytearray, ...], tuple[list[Any], ...]]:
    """A piece for the native pairing: the piece, the columns it fills, and its three scan lists."""
    rows = ExchangeRows()
    return rows, rows.lists, (rows.topics, rows.codes, rows.named)


KafkaEvent = Exchange | Anomaly | ConnectionSummary | ExchangeRows
