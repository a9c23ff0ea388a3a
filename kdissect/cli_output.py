"""What the analyze/show commands print: the summary table and the per-exchange dump.

Wire strings pass through :func:`kdissect.render.safe_text` before reaching a terminal.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from .decoders.records import decode_records
from .events import Exchange, KafkaMessage
from .render import safe_text, to_jsonable, tree_lines
from .tables.columns import TABLES, cells
from .tables.sink import Columns, exchange_row

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


def _row(row: tuple) -> str:
    name, *rest = row
    return f"{name:<28} {rest[0]:>7} {rest[1]:>9} {rest[2]:>9} {rest[3]:>9} {rest[4]:>7} {rest[5]:>10}"


def summary_lines(tables: Mapping[str, Columns], packets: int) -> list[str]:
    """Exchanges by API with latency percentiles and error counts, then what went wrong.

    Works on the sink's columns, so printing it needs neither pandas nor numpy."""
    ex, conns, an = tables.get("exchanges"), tables.get("connections"), tables.get("anomalies")
    lines: list[str] = []
    n_conn = len(cells(conns["connection_id"])) if conns is not None else 0
    n_kafka = sum(1 for v in cells(conns["is_kafka"]) if v) if conns is not None else 0
    n_ex = len(cells(ex["status"])) if ex is not None else 0
    lines.append(f"{packets:,} packets, {n_conn} TCP connections ({n_kafka} Kafka), {n_ex:,} exchanges")
    if n_kafka == 0 and not n_ex:
        lines.append("no Kafka traffic found")
    if ex is not None and n_ex:
        lines.append("")
        lines.append(_row(("api", "count", "p50 ms", "p99 ms", "max ms", "errors", "unanswered")))
        statuses = cells(ex["status"])
        by_api: dict[str, list[int]] = {}
        for i, name in enumerate(cells(ex["api_name"])):
            if name is not None:
                by_api.setdefault(name, []).append(i)
        latency = cells(ex["latency_ms"])
        for name in sorted(by_api):
            rows = by_api[name]
            lat = sorted(latency[i] for i in rows if latency[i] is not None)
            p50 = p99 = mx = "-"
            if lat:
                p50, p99, mx = (f"{v:.2f}" for v in (_quantile(lat, 0.5), _quantile(lat, 0.99), lat[-1]))
            errors = sum(1 for i in rows if statuses[i] == "error")
            unanswered = sum(1 for i in rows if statuses[i] == "unanswered")
            lines.append(_row((safe_text(name), len(rows), p50, p99, mx, errors, unanswered)))
        other = {k: v for k, v in Counter(statuses).items() if k not in ("ok", "error")}
        if other:
            ordered = sorted(other.items(), key=lambda kv: str(kv[0]))
            lines.append("status: " + ", ".join(f"{k} {v}" for k, v in ordered))
    if an is not None and cells(an["kind"]):
        lines.append("")
        lines.append("not decoded / anomalies (see the anomalies table):")
        kinds: dict[str, list[int]] = {}  # kind -> [anomalies, bytes]
        for kind, length, count in zip(cells(an["kind"]), cells(an["length"]), cells(an["count"]), strict=True):
            totals = kinds.setdefault(kind, [0, 0])
            totals[0] += count or 1
            totals[1] += length or 0
        for kind in sorted(kinds):
            n, total = kinds[kind]
            extra = f", {total:,} bytes" if total else ""
            why = f" — {_WHY[kind]}" if kind in _WHY else ""
            lines.append(f"  {safe_text(str(kind))}: {n}{extra}{why}")
    return lines


def _quantile(ordered: list[float], q: float) -> float:
    """The ``q`` quantile of sorted values, interpolated linearly (as pandas and numpy do by default)."""
    h = (len(ordered) - 1) * q
    lo = int(h)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (h - lo) * (ordered[hi] - ordered[lo])


class TableWriter:
    """Writes tables to ``out/<table>.<fmt>``, each possibly in several pieces (a sink's spills).

    Parquet pieces go through one writer per table with the table's fixed Arrow schema, on a
    background thread: Parquet encoding and compression run without the GIL, so they overlap
    the decoding of what follows (one piece at a time, so memory stays bounded). Text formats
    append (CSV writes its header once). Bytes become hex in text formats.
    """

    def __init__(self, out: Path, fmt: str) -> None:
        out.mkdir(parents=True, exist_ok=True)
        self.out, self.fmt = out, fmt
        self.rows: dict[str, int] = {}
        self._parquet: dict[str, Any] = {}
        self._pool: ThreadPoolExecutor | None = None
        self._pending: Future | None = None

    def write(self, name: str, columns: Columns) -> None:
        path = self.out / f"{name}.{self.fmt}"
        first = name not in self.rows
        if self.fmt == "parquet":  # straight from the columns to Arrow: no pandas
            from .tables.arrow import to_arrow

            table = to_arrow(name, columns)
            self.rows[name] = self.rows.get(name, 0) + table.num_rows
            self._wait()
            if self._pool is None:
                self._pool = ThreadPoolExecutor(1, thread_name_prefix="parquet")
            self._pending = self._pool.submit(self._write_parquet, name, path, table)
            return
        from .tables.frames import to_dataframe

        text_df = to_dataframe(name, columns)
        self.rows[name] = self.rows.get(name, 0) + len(text_df)
        for col in text_df.columns:
            if text_df[col].dtype == object:
                text_df[col] = text_df[col].map(lambda v: json.dumps(to_jsonable(v)) if isinstance(
                    v, list | dict | tuple) else (bytes(v).hex() if isinstance(v, bytes | bytearray) else v))
        with path.open("w" if first else "a", newline="") as f:
            if self.fmt == "csv":
                text_df.to_csv(f, index=False, header=first)
            else:
                text_df.to_json(f, orient="records", lines=True, date_format="iso", date_unit="ns")

    def _write_parquet(self, name: str, path: Path, table: Any) -> None:
        import pyarrow.parquet as pq

        if name not in self._parquet:  # the table's schema carries pandas' metadata: dtypes survive a round trip
            self._parquet[name] = pq.ParquetWriter(path, table.schema)
        self._parquet[name].write_table(table)

    def _wait(self) -> None:
        """Let the piece being written finish (re-raising what it raised, e.g. a full disk)."""
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.result()

    def close(self) -> list[tuple[Path, int]]:
        """Finish every file; (path, rows written) per table, in the order first written."""
        try:
            self._wait()
        finally:
            if self._pool is not None:
                self._pool.shutdown()
            for writer in self._parquet.values():
                writer.close()
        order = [name for name in TABLES if name in self.rows]
        return [(self.out / f"{name}.{self.fmt}", self.rows[name]) for name in order]


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


def exchange_rows(exchanges: Iterable[Exchange]) -> Iterable[tuple[Exchange, dict]]:
    for ex in exchanges:
        yield ex, exchange_row(ex)
