"""What ``kdissect show`` prints: each exchange as an indented tree or one JSON object.

Record batches inside a message are decoded for display. Wire strings pass through
:func:`kdissect.report.render.safe_text` before reaching a terminal.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from kdissect.decoders.jsonable import to_jsonable
from kdissect.decoders.records import decode_records
from kdissect.events import Exchange, KafkaMessage
from kdissect.report.render import safe_text, tree_lines


def _message_dict(msg: KafkaMessage | None) -> dict | None:
    if msg is None:
        return None
    d = {"ts_first_ns": msg.ts_first, "ts_last_ns": msg.ts_last, "size": msg.size, "header": msg.header,
         "body": msg.body}
    if msg.error:
        d["error"] = msg.error
        d["raw"] = msg.raw
    if msg.warnings:
        d["warnings"] = msg.warnings
    return d


def exchange_json(ex: Exchange, row: dict) -> str:
    payload = dict(row)
    payload["request"] = _message_dict(ex.request)
    payload["response"] = _message_dict(ex.response)
    return json.dumps(to_jsonable(payload), default=str)


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


def exchange_text(ex: Exchange, row: dict, full: bool) -> Iterable[str]:
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
            continue
        yield from tree_lines({"header": msg.header, "body": with_records_decoded(msg.body)}, "    ", limit)
