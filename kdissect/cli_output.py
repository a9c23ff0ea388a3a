"""What the analyze/show commands print: the summary table and the per-exchange dump.

Wire strings pass through :func:`kdissect.render.safe_text` before reaching a terminal.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from .decoders.records import decode_records
from .events import Exchange, KafkaMessage
from .render import safe_text, to_jsonable, tree_lines
from .tables.columns import TABLES, arrow_schema
from .tables.sink import exchange_row

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
}


def _row(cells: tuple) -> str:
    name, *rest = cells
    return f"{name:<28} {rest[0]:>7} {rest[1]:>9} {rest[2]:>9} {rest[3]:>9} {rest[4]:>7} {rest[5]:>10}"


def summary_lines(tables: dict[str, pd.DataFrame], packets: int) -> list[str]:
    """Exchanges by API with latency percentiles and error counts, then what went wrong."""
    ex = tables.get("exchanges")
    conns = tables.get("connections")
    lines: list[str] = []
    n_conn = len(conns) if conns is not None else 0
    n_kafka = int(conns["is_kafka"].fillna(False).sum()) if conns is not None and n_conn else 0
    n_ex = len(ex) if ex is not None else 0
    lines.append(f"{packets:,} packets, {n_conn} TCP connections ({n_kafka} Kafka), {n_ex:,} exchanges")
    if n_kafka == 0 and not n_ex:
        lines.append("no Kafka traffic found")
    if ex is not None and n_ex:
        lines.append("")
        head = ("api", "count", "p50 ms", "p99 ms", "max ms", "errors", "unanswered")
        lines.append(_row(head))
        for name, group in ex.groupby("api_name", observed=True, sort=True):
            lat = group["latency_ms"].dropna()
            p50 = f"{lat.quantile(0.5):.2f}" if len(lat) else "-"
            p99 = f"{lat.quantile(0.99):.2f}" if len(lat) else "-"
            mx = f"{lat.max():.2f}" if len(lat) else "-"
            errors = int((group["status"] == "error").sum())
            unanswered = int((group["status"] == "unanswered").sum())
            lines.append(_row((safe_text(str(name)), len(group), p50, p99, mx, errors, unanswered)))
        statuses = Counter(ex["status"].astype(str))
        other = {k: v for k, v in statuses.items() if k not in ("ok", "error")}
        if other:
            lines.append("status: " + ", ".join(f"{k} {v}" for k, v in sorted(other.items())))
    an = tables.get("anomalies")
    if an is not None and len(an):
        lines.append("")
        lines.append("not decoded / anomalies (see the anomalies table):")
        for kind, group in an.groupby("kind", observed=True, sort=True):
            total = group["length"].dropna().sum()
            extra = f", {int(total):,} bytes" if total else ""
            why = f" — {_WHY[str(kind)]}" if str(kind) in _WHY else ""
            lines.append(f"  {safe_text(str(kind))}: {len(group)}{extra}{why}")
    return lines


class TableWriter:
    """Writes tables to ``out/<table>.<fmt>``, each possibly in several pieces (a sink's spills).

    Parquet pieces go through one writer per table with the table's fixed Arrow schema; text
    formats append (CSV writes its header once). Bytes become hex in text formats.
    """

    def __init__(self, out: Path, fmt: str) -> None:
        out.mkdir(parents=True, exist_ok=True)
        self.out, self.fmt = out, fmt
        self.rows: dict[str, int] = {}
        self._parquet: dict[str, object] = {}

    def write(self, name: str, df: pd.DataFrame) -> None:
        path = self.out / f"{name}.{self.fmt}"
        first = name not in self.rows
        self.rows[name] = self.rows.get(name, 0) + len(df)
        if self.fmt == "parquet":
            import pyarrow as pa
            import pyarrow.parquet as pq

            table = pa.Table.from_pandas(df, schema=arrow_schema(name), preserve_index=False)
            if first:  # the table's schema carries pandas' metadata, so dtypes survive a round trip
                self._parquet[name] = pq.ParquetWriter(path, table.schema)
            self._parquet[name].write_table(table)  # type: ignore[attr-defined]
            return
        text_df = df.copy()
        for col in text_df.columns:
            if text_df[col].dtype == object:
                text_df[col] = text_df[col].map(lambda v: json.dumps(to_jsonable(v)) if isinstance(
                    v, list | dict | tuple) else (bytes(v).hex() if isinstance(v, bytes | bytearray) else v))
        with path.open("w" if first else "a", newline="") as f:
            if self.fmt == "csv":
                text_df.to_csv(f, index=False, header=first)
            else:
                text_df.to_json(f, orient="records", lines=True, date_format="iso", date_unit="ns")

    def close(self) -> list[tuple[Path, int]]:
        """Finish every file; (path, rows written) per table, in the order first written."""
        for writer in self._parquet.values():
            writer.close()  # type: ignore[attr-defined]
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
