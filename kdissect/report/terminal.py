"""The terminal summary of ``kdissect analyze``: the figures of :mod:`kdissect.analysis.summary` as text.

API names, error names and anomaly kinds come from the wire: they pass through ``safe_text``
(control, bidi and zero-width characters escaped), so a hostile string cannot move the cursor.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from kdissect.analysis.bounded import KEY_LIMIT
from kdissect.analysis.expected import WAIT_ON_PURPOSE
from kdissect.analysis.summary import Summary
from kdissect.report.render import safe_text
from kdissect.report.units import ms_text

# Why each kind of anomaly happens, for the summary and the report (kinds not listed are shown bare).
ANOMALY_MEANING = {
    "gap": "bytes missing from the capture: packet loss, snap length, late start",
    "midstream": "directions picked up mid-stream",
    "partial_frame": "frames cut by a gap",
    "truncated_frame": "frames cut by the end of the capture",
    "desync": "size fields that cannot start a frame",
    "resync": "bytes skipped while looking for the next provable frame",
    "overflow": "bytes given up while hunting (search window full)",
    "decode_error": "frames that did not decode",
    "tls_no_key": "TLS connections not decrypted (no key for them, or their handshake not captured)",
    "tls_decrypt_error": "TLS records that did not authenticate with the key log's keys",
    "tls_alert": "TLS alerts other than close_notify",
    "tls_malformed": "bytes that are no valid TLS record or handshake message",
    "auth_failed": "SASL logins refused in SaslHandshake v0's bare-token framing (no exchange stands for them)",
    "not_kafka": "connections on Kafka ports that carried no Kafka",
    "truncated_file": "capture file cut short",
    "unreadable_file": "files that are not captures (skipped; the others were read)",
    "corrupt_record": "capture records with impossible framing",
    "crc_mismatch": "record batches whose checksum is wrong",
    "decompression_capped": "record batches inflating past the memory cap",
    "retransmission_conflict": "retransmitted bytes that differ from the copy decoded",
    "duplicate_packets": "packets read twice (an input repeating another's): read once",
    # the brokers table keeps KEY_LIMIT brokers (tables.sink.BROKER_ROWS; a test holds them equal): the summary
    # must not import the report figures (and pandas) for the number
    "brokers_not_kept": f"brokers announced past the brokers table's bound (the first {KEY_LIMIT:,} are kept)",
    "cap": "cut by a resource bound (see docs/decoding-and-robustness.md, Resource bounds)",
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
    # Bare ACK/FIN/RST segments of no open connection (reassembly's ignored_segments): the last ACK of
    # a close, or the tail of a connection begun before the capture. Normal, so said as such.
    "stray_segments": "bare ACK/FIN/RST segments outside any connection (normal around a close)",
}


_API_COLUMNS = ("api", "count", "p50 ms", "p90 ms", "p99 ms", "max ms", "errors", "unanswered")


def row_text(row: tuple) -> str:
    """A fixed-width API row (the live console's table)."""
    name, *rest = row
    return f"{name:<28} {rest[0]:>7} {rest[1]:>9} {rest[2]:>9} {rest[3]:>9} {rest[4]:>7} {rest[5]:>10}"


def _table(header: Sequence[str], rows: list[Sequence[str]]) -> list[str]:
    """Left-aligned first column, right-aligned numbers, widths fitted to the content."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    return [
        "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True))).rstrip()
        for r in [header, *rows]
    ]


def summary_lines(s: Summary, captures: Sequence[str] = ()) -> list[str]:
    """Exchanges by API (slowest first) with latency percentiles and error counts, errors by name,
    then what went wrong, what the capture and TCP layers counted, and where to read more
    (``captures``: the report command's inputs, as the user named them).

    The API table comes right after the first line and a blank one, and is the only block whose
    lines start with a letter and hold no colon."""
    lines = [
        f"{s.packets:,} packets, {s.connections} TCP connections ({s.kafka_connections} Kafka), "
        f"{s.exchanges:,} exchanges"
    ]
    if s.tls_connections:
        lines.append(f"TLS: {s.tls_connections} encrypted connections, {s.decrypted_connections} decrypted"
                     + ("" if s.decrypted_connections == s.tls_connections else " (why not: the connections "
                        "table's decryption column; keys come from --tls-keylog FILE)"))  # fmt: skip
    if s.kafka_connections == 0 and not s.exchanges:
        lines.append("no Kafka traffic found")
    if s.apis:
        lines.append("")
        rows = [
            (
                safe_text(a.name),
                str(a.count),
                ms_text(a.p50_ms),
                ms_text(a.p90_ms),
                ms_text(a.p99_ms),
                ms_text(a.max_ms),
                str(a.errors),
                str(a.unanswered),
            )
            for a in s.apis
        ]
        lines.extend(_table(_API_COLUMNS, rows))
        if s.other_statuses:
            lines.append("status: " + ", ".join(f"{safe_text(str(k))} {v}" for k, v in s.other_statuses.items()))
        waiting = [a.name for a in s.apis if a.name in WAIT_ON_PURPOSE]
        if waiting:
            lines.append(
                f"note: {' and '.join(waiting)} wait on purpose ({', '.join(WAIT_ON_PURPOSE[a] for a in waiting)}): "
                "kdissect report judges them by their bounds"
            )
    if s.errors:
        lines.append("")
        lines.append("errors by name (exchanges, by their first error):")
        real = [(f"  {safe_text(e.api)}", safe_text(e.error), str(e.count)) for e in s.errors if not e.expected]
        if real:
            lines.extend(_table(("  api", "error", "count"), real))
        for e in s.errors:
            if e.expected:
                lines.append(
                    f"  normal protocol step, not an error: {safe_text(e.api)} {safe_text(e.error)} x{e.count}"
                )
    if s.anomalies:
        lines.append("")
        lines.append("not decoded / anomalies (see the anomalies table):")
        for a in s.anomalies:
            extra = f", {a.bytes:,} bytes" if a.bytes else ""
            why = f" — {ANOMALY_MEANING[a.kind]}" if a.kind in ANOMALY_MEANING else ""
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
    if s.exchanges:
        target = " ".join(shlex.quote(safe_text(p)) for p in captures) if 0 < len(captures) <= 4 else "CAPTURES"
        lines.append(f"more (groups, lag, transactions, topology, plots): kdissect report {target} -o report.html")
    return lines
