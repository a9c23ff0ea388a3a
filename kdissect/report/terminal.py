"""The terminal summary of ``kdissect analyze``: the figures of :mod:`kdissect.analysis.summary` as text.

API names and anomaly kinds come from the wire: they pass through ``safe_text``.
"""

from __future__ import annotations

from kdissect.analysis.summary import Summary
from kdissect.report.render import safe_text

# Why each kind of anomaly happens, for the summary (kinds not listed are shown bare).
_WHY = {
    "gap": "bytes missing from the capture: packet loss, snap length, late start",
    "midstream": "directions picked up mid-stream",
    "partial_frame": "frames cut by a gap",
    "truncated_frame": "frames cut by the end of the capture",
    "desync": "size fields that cannot start a frame",
    "resync": "bytes skipped while looking for the next provable frame",
    "overflow": "bytes given up while hunting (search window full)",
    "decode_error": "frames that did not decode",
    "tls": "encrypted connections",
    "not_kafka": "connections on Kafka ports that carried no Kafka",
    "truncated_file": "capture file cut short",
    "corrupt_record": "capture records with impossible framing",
    "crc_mismatch": "record batches whose checksum is wrong",
    "decompression_capped": "record batches inflating past the memory cap",
    "cap": "cut by a resource bound (see the README's table of bounds)",
}
# The reassembler's counters worth a word when not zero (the others are in the connections table).
_TCP = {
    "retransmissions": "retransmitted segments",
    "overlap_bytes": "bytes received twice",
    "out_of_order": "segments out of order",
    "keepalives": "keep-alives",
    "zero_window_probes": "zero-window probes",
    "anomalies": "segments past FIN or with RST",
    "ignored_bytes": "bytes in them, ignored",
    "stray_segments": "segments of no connection",
}


def _row(row: tuple) -> str:
    name, *rest = row
    return f"{name:<28} {rest[0]:>7} {rest[1]:>9} {rest[2]:>9} {rest[3]:>9} {rest[4]:>7} {rest[5]:>10}"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def summary_lines(s: Summary) -> list[str]:
    """Exchanges by API with latency percentiles and error counts, then what went wrong, then
    what the capture and TCP layers counted."""
    lines = [
        f"{s.packets:,} packets, {s.connections} TCP connections ({s.kafka_connections} Kafka), "
        f"{s.exchanges:,} exchanges"
    ]
    if s.kafka_connections == 0 and not s.exchanges:
        lines.append("no Kafka traffic found")
    if s.exchanges:
        lines.append("")
        lines.append(_row(("api", "count", "p50 ms", "p99 ms", "max ms", "errors", "unanswered")))
        for a in s.apis:
            lines.append(
                _row((safe_text(a.name), a.count, _ms(a.p50_ms), _ms(a.p99_ms), _ms(a.max_ms), a.errors, a.unanswered))
            )
        if s.other_statuses:
            lines.append("status: " + ", ".join(f"{k} {v}" for k, v in s.other_statuses.items()))
    if s.anomalies:
        lines.append("")
        lines.append("not decoded / anomalies (see the anomalies table):")
        for a in s.anomalies:
            extra = f", {a.bytes:,} bytes" if a.bytes else ""
            why = f" — {_WHY[a.kind]}" if a.kind in _WHY else ""
            lines.append(f"  {safe_text(str(a.kind))}: {a.count}{extra}{why}")
    lines.append("")
    c = s.capture
    lines.append(
        f"capture: {c['captured_bytes']:,} bytes captured in {c['packets']:,} packets "
        f"({c['tcp_segments']:,} TCP segments, {c['ip_fragments']:,} IP fragments, {c['non_tcp']:,} not TCP)"
    )
    counted = [f"{s.tcp[name]:,} {label}" for name, label in _TCP.items() if s.tcp.get(name)]
    if counted:
        lines.append("TCP: " + ", ".join(counted))
    return lines
