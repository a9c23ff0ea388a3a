"""An exchange, as the live figures and metrics take it: its ``exchanges`` row, the names of every
error code in its response, and the topics its request names (those given by id named from the
Metadata responses seen so far)."""

from __future__ import annotations

import uuid

from kdissect.analysis.expected import is_expected
from kdissect.analysis.rolling import Exchanged
from kdissect.decoders.entities import Entry
from kdissect.decoders.error_codes import error_name
from kdissect.events import Exchange
from kdissect.tables.sink import _entries, _has_error, exchange_errors, exchange_row

METADATA = 3


class ExchangeReader:
    """Turns exchanges into :class:`Exchanged`; remembers at most ``max_topic_ids`` topic ids."""

    def __init__(self, max_topic_ids: int = 100_000) -> None:
        self.max_topic_ids = max_topic_ids
        self.topic_names: dict[uuid.UUID, str] = {}

    def read(self, ex: Exchange) -> Exchanged:
        req, resp = ex.request, ex.response
        errors = exchange_errors(ex, _entries(resp, errors_only=True) if _has_error(resp) else [])
        row = exchange_row(ex, errors)
        if resp is not None and resp.api_key == METADATA:
            self._learn(_entries(resp))
        return Exchanged(
            ts_ns=row["response_ts"] or row["request_ts"] or 0,
            api=row["api_name"] or "?",
            broker=f"{row['broker_ip']}:{row['broker_port']}" if row["broker_ip"] else "?",
            client=f"{row['client_id'] or '-'} @ {row['client_ip']}" if row["client_ip"] else (row["client_id"] or "?"),
            client_id=row["client_id"] or "-",
            latency_ms=row["latency_ms"],
            status=row["status"],
            request_bytes=row["request_bytes"] or 0,
            response_bytes=row["response_bytes"] or 0,
            error_names=[error_name(code) for _, _, code in errors],
            failed=row["status"] == "error" and not is_expected(row["api_name"], row["error_name"]),
            topics=self._topics(_entries(req)) if req is not None else [],
        )

    def _learn(self, entries: list[Entry]) -> None:
        for e in entries:
            ctx = e.context
            known = ctx.topic is not None and ctx.topic_id is not None and ctx.topic_id.int
            if known and len(self.topic_names) < self.max_topic_ids:
                self.topic_names.setdefault(ctx.topic_id, ctx.topic)

    def _topics(self, entries: list[Entry]) -> list[str]:
        found: dict[str, None] = {}
        for e in entries:
            ctx = e.context
            name = ctx.topic
            if name is None and ctx.topic_id is not None and ctx.topic_id.int:
                name = self.topic_names.get(ctx.topic_id, str(ctx.topic_id))
            if name is not None:
                found[name] = None
        return list(found)
