"""A realistic TCP conversation from a list of application messages.

Handshake, MSS-sized segments with cumulative ACKs and PSH on each message's last
segment, then a FIN exchange: the shape a reassembler and a Kafka decoder see in a
real capture, without a real network.
"""

from __future__ import annotations

from collections.abc import Iterable

from kdissect.sources.segment import ACK, FIN, PSH, SYN, TcpSegment

CLIENT_TO_SERVER = 0
SERVER_TO_CLIENT = 1
MSS_ETHERNET = 1448  # 1500-byte MTU less IPv4, TCP and timestamp option
MSS_LOOPBACK = 65483  # Linux loopback (65536 MTU)

Message = tuple[int, bytes, int]  # (direction, payload, ts_ns)


def tcp_conversation(
    messages: Iterable[Message],
    *,
    client: tuple[str, int] = ("10.0.0.1", 40000),
    server: tuple[str, int] = ("10.0.0.2", 9092),
    mss: int = MSS_ETHERNET,
    isn: tuple[int, int] = (1_000_000, 2_000_000),
    handshake: bool = True,
    close: bool = True,
    step_ns: int = 10_000,
    window: int = 65_535,
) -> list[TcpSegment]:
    """Segments of one connection. Each message is cut into ``mss``-sized segments
    that share its timestamp; handshake and FIN segments sit ``step_ns`` apart before
    the first and after the last message."""
    messages = list(messages)
    ends = (client, server)
    next_seq = [isn[0], isn[1]]
    segments: list[TcpSegment] = []

    def send(direction: int, flags: int, payload: bytes, ts_ns: int) -> None:
        (src_ip, src_port), (dst_ip, dst_port) = ends[direction], ends[1 - direction]
        ack = next_seq[1 - direction] if flags & ACK else 0
        segments.append(
            TcpSegment(
                ts_ns,
                src_ip,
                src_port,
                dst_ip,
                dst_port,
                next_seq[direction] & 0xFFFFFFFF,
                ack & 0xFFFFFFFF,
                flags,
                window,
                payload,
                len(payload),
            )
        )
        next_seq[direction] += len(payload) + (1 if flags & (SYN | FIN) else 0)

    first_ts = messages[0][2] if messages else 0
    if handshake:
        start = max(0, first_ts - 3 * step_ns)
        send(CLIENT_TO_SERVER, SYN, b"", start)
        send(SERVER_TO_CLIENT, SYN | ACK, b"", start + step_ns)
        send(CLIENT_TO_SERVER, ACK, b"", start + 2 * step_ns)
    for direction, payload, ts_ns in messages:
        chunks = [payload[i : i + mss] for i in range(0, len(payload), mss)] or [b""]
        for i, chunk in enumerate(chunks):
            send(direction, ACK | (PSH if i == len(chunks) - 1 else 0), chunk, ts_ns)
    if close:
        last_ts = max((ts for _, _, ts in messages), default=first_ts)
        send(CLIENT_TO_SERVER, FIN | ACK, b"", last_ts + step_ns)
        send(SERVER_TO_CLIENT, FIN | ACK, b"", last_ts + 2 * step_ns)
        send(CLIENT_TO_SERVER, ACK, b"", last_ts + 3 * step_ns)
    return segments
