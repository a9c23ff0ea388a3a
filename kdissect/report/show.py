"""What ``kdissect show`` prints: each exchange as an indented tree or one JSON object.

Record batches inside a message are decoded for display. Wire strings pass through
:func:`kdissect.report.render.safe_text` before reaching a terminal. Times in JSON are ISO 8601 UTC
strings with nanoseconds, as in the table files; bytes are hex.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterable
from datetime import UTC, datetime

from kdissect.dataclass import dataclass
from kdissect.decoders.apis import name_of
from kdissect.decoders.entities import is_error_field
from kdissect.decoders.error_codes import error_name
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
    kept: what ``show --save-frames`` writes for ``kdissect decode @FILE``. The name says the API and
    version (``c0-7-Metadata-v12-response.bin``), which is what decoding a response needs."""
    api = ex.request or ex.response
    named = ""
    if api is not None and api.api_key is not None and api.api_version is not None:
        named = f"-{name_of(api.api_key)}-v{api.api_version}"
    out = []
    for label, msg in (("request", ex.request), ("response", ex.response)):
        if msg is not None and msg.raw is not None:
            name = f"c{ex.conn_id}-{msg.correlation_id}{named}-{label}.bin"
            out.append((name, struct.pack(">i", len(msg.raw)) + msg.raw))
    return out


@dataclass(frozen=True)
class Named:
    """A value printed with what it means beside it, unquoted: ``79 MEMBER_ID_REQUIRED``."""

    text: str

    def __str__(self) -> str:
        return self.text


def _iso_ms(ms: int | None) -> object:
    """A record timestamp (ms since the epoch) as ISO 8601 UTC; -1 or null (none: a magic 0 message
    has no timestamp) and absurd values as they are."""
    try:
        when = datetime.fromtimestamp(ms / 1000, UTC) if ms is not None and ms >= 0 else None
    except (OverflowError, OSError, ValueError):
        when = None
    return ms if when is None else Named(f"{when:%Y-%m-%dT%H:%M:%S}.{ms % 1000:03d}Z")


def display_view(value: object) -> object:
    """A copy of a decoded message for people: each ``records`` bytes field as its batches and records
    (timestamps as ISO times), each error code with its name from the error registry."""
    if isinstance(value, dict):
        return {k: _display_field(k, v) for k, v in value.items()}
    if isinstance(value, list):
        return [display_view(v) for v in value]
    return value


def _display_field(key: str, value: object) -> object:
    if key == "records" and isinstance(value, bytes):
        return _records_view(value)
    if is_error_field(key) and isinstance(value, int) and not isinstance(value, bool):
        return Named(f"{value} {error_name(value)}")
    return display_view(value)


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
        batch["records"] = [{"offset": r.offset, "timestamp": _iso_ms(r.timestamp), "key": r.key, "value": r.value,
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
            kept = " (its bytes: --raw or --save-frames)" if msg.raw is not None else ""
            yield f"    not decoded: its request is not in the capture{kept}"
        yield from (f"    {safe_text(w['message'])}" for w in msg.warnings if w.get("code") == "sasl")
        if msg.header is not None:  # a cut request still has its header and leading fields
            yield from tree_lines({"header": msg.header, "body": display_view(msg.body)}, "    ", limit)
        if msg.raw is not None and raw:
            yield f"    raw: {struct.pack('>i', len(msg.raw)).hex()}{msg.raw.hex()}"
