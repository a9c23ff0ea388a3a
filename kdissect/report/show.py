"""What ``kdissect show`` prints: each exchange as an indented tree or one JSON object.

Record batches inside a message are decoded for display. Wire strings pass through
:func:`kdissect.report.render.safe_text` before reaching a terminal. Times in JSON are ISO 8601 UTC
strings with nanoseconds, as in the table files; bytes are hex.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterable

from kdissect.decoders.jsonable import iso_ns, to_jsonable
from kdissect.decoders.records import decode_records
from kdissect.events import Exchange, KafkaMessage
from kdissect.report.render import safe_text, tree_lines

TIMESTAMPS = ("request_ts", "response_ts")  # the exchanges row's times (ns), shown as ISO strings


def _message_dict(msg: KafkaMessage | None, raw: bool) -> dict | None:
    if msg is None:
        return None
    d = {"ts_first": iso_ns(msg.ts_first), "ts_last": iso_ns(msg.ts_last), "size": msg.size, "header": msg.header,
         "body": msg.body}
    if msg.error:
        d["error"] = msg.error
    if msg.raw is not None and (raw or msg.error or msg.body is None):
        d["raw"] = msg.raw  # the frame's bytes (without the size prefix), when not decoded or asked for
    if msg.warnings:
        d["warnings"] = msg.warnings
    return d


def exchange_json(ex: Exchange, row: dict, raw: bool = False) -> str:
    payload = {k: (iso_ns(v) if k in TIMESTAMPS and v is not None else v) for k, v in row.items()}
    payload["request"] = _message_dict(ex.request, raw)
    payload["response"] = _message_dict(ex.response, raw)
    return json.dumps(to_jsonable(payload), default=str)


def frame_files(ex: Exchange) -> list[tuple[str, bytes]]:
    """(file name, frame bytes with the size prefix) of each message of an exchange whose bytes were
    kept: what ``show --save-frames`` writes for ``kdissect decode @FILE``."""
    out = []
    for label, msg in (("request", ex.request), ("response", ex.response)):
        if msg is not None and msg.raw is not None:
            out.append((f"c{ex.conn_id}-{msg.correlation_id}-{label}.bin", struct.pack(">i", len(msg.raw)) + msg.raw))
    return out


def with_records_decoded(value: object) -> object:
    """A copy of a decoded body where each ``records`` bytes field shows its batches and records."""
    if isinstance(value, dict):
        return {k: (_records_view(v) if k == "records" and isinstance(v, bytes) else with_records_decoded(v))
                for k, v in value.items()}
    if isinstance(value, list):
        return [with_records_decoded(v) for v in value]
    return value


def _records_view(raw: bytes) -> list[dict]:
    rs = decode_records(raw)
    out: list[dict] = []
    for b in rs.batches + ([rs.partial] if rs.partial is not None else []):
        batch: dict = {"base_offset": b.base_offset, "magic": b.magic, "compression": b.codec_name,
                       "crc_ok": b.crc_ok, "record_count": b.record_count, "complete": b.complete}
        if b.producer_id is not None and b.producer_id >= 0:
            batch.update(producer_id=b.producer_id, producer_epoch=b.producer_epoch, transactional=b.is_transactional)
        if b.is_control:
            batch["control"] = [{"type": c.type, "coordinator_epoch": c.coordinator_epoch} for c in b.control]
        batch["records"] = [{"offset": r.offset, "timestamp": r.timestamp, "key": r.key, "value": r.value,
                             **({"headers": {k: v for k, v in r.headers}} if r.headers else {})} for r in b.records]
        if b.warnings:
            batch["warnings"] = [w.message for w in b.warnings]
        out.append(batch)
    if rs.truncated:
        out.append({"truncated_bytes": rs.truncated})
    return out


def exchange_text(ex: Exchange, row: dict, full: bool, raw: bool = False) -> Iterable[str]:
    client = f"{row['client_ip']}:{row['client_port']}" if row["client_ip"] else "?"
    broker = f"{row['broker_ip']}:{row['broker_port']}" if row["broker_ip"] else "?"
    latency = f"{row['latency_ms']:.3f} ms" if row["latency_ms"] is not None else "-"
    yield (f"=== conn {row['connection_id']} {safe_text(client)} -> {safe_text(broker)}  {row['api_name']} "
           f"v{row['api_version']} corr={row['correlation_id']}  latency {latency}  status {row['status']}")
    limit = None if full else 64
    for label, msg in (("request", ex.request), ("response", ex.response)):
        if msg is None:
            continue
        yield f"  {label} ({msg.size + 4} bytes)"
        if msg.error:
            yield f"    undecodable: {safe_text(msg.error)}"
        elif msg.body is None:
            yield "    not decoded: its request is not in the capture (its bytes: --raw or --save-frames)"
        if msg.header is not None:  # a cut request still has its header and leading fields
            yield from tree_lines({"header": msg.header, "body": with_records_decoded(msg.body)}, "    ", limit)
        if msg.raw is not None and raw:
            yield f"    raw: {struct.pack('>i', len(msg.raw)).hex()}{msg.raw.hex()}"
