"""Exchanges as the live figures and metrics take them: a batch's events become one
:class:`~kdissect.analysis.rolling.Exchanged` piece (the ``exchanges`` rows' values, the names of every
error code in each response, and the topics each request names, those given by id named from the
Metadata responses seen so far).

The native pairing's pieces (:class:`~kdissect.events.ExchangeRows`, asked for with
``Options.exchange_topics``) bring their rows as columns and each exchange's request topics, error codes
and the topic ids its response names, found by the exchange scan in C; an :class:`Exchange` the Python
session paired gives the same from its decoded messages (``tables.sink.exchange_row``,
``decoders.named_topics``). Either way the piece is then derived a column at a time.
"""

from __future__ import annotations

import uuid
from typing import Any

from kdissect.analysis.expected import is_expected
from kdissect.analysis.rolling import Exchanged
from kdissect.decoders.error_codes import error_name
from kdissect.decoders.named_topics import Context, contexts, id_names, request_topics
from kdissect.events import Exchange, ExchangeRows, KafkaEvent, KafkaMessage
from kdissect.tables.sink import _entries, _has_error, exchange_errors, exchange_row

METADATA = 3  # the answers whose topic ids name topics for later requests
# The exchanges row's columns the live figures read.
READ = ("response_ts", "request_ts", "api_name", "broker_ip", "broker_port", "client_id", "client_ip",
        "latency_ms", "status", "request_bytes", "response_bytes", "error_name")


def _contexts(msg: KafkaMessage | None, kind: str) -> list[Context]:
    return [] if msg is None else contexts(msg.api_key, msg.api_version, kind, msg.body)


class ExchangeReader:
    """Turns a batch's exchanges into an :class:`Exchanged` piece; remembers at most ``max_topic_ids``
    topic ids."""

    def __init__(self, max_topic_ids: int = 100_000) -> None:
        self.max_topic_ids = max_topic_ids
        self.topic_names: dict[uuid.UUID, str] = {}
        self._ids: dict[bytes, uuid.UUID] = {}  # the scan's 16 bytes of an id -> the id (as many as names)

    def read(self, events: list[KafkaEvent]) -> Exchanged:
        columns: dict[str, list[Any]] = {name: [] for name in READ}
        names: list[tuple[str, ...]] = []
        topics: list[tuple[str, ...]] = []
        for ev in events:
            if type(ev) is Exchange:
                self._exchange(ev, columns, names, topics)
            elif type(ev) is ExchangeRows:
                self._rows(ev, columns, names, topics)
        return _piece(columns, names, topics)

    def _exchange(self, ex: Exchange, columns: dict[str, list[Any]], names: list[tuple[str, ...]],
                  topics: list[tuple[str, ...]]) -> None:
        req, resp = ex.request, ex.response
        errors = exchange_errors(ex, _entries(resp, errors_only=True) if _has_error(resp) else [])
        row = exchange_row(ex, errors)
        for name in READ:
            columns[name].append(row[name])
        names.append(tuple(error_name(code) for _, _, code in errors))
        if resp is not None and resp.api_key == METADATA:
            self._learn(id_names(_contexts(resp, "response")))
        topics.append(self._named(request_topics(_contexts(req, "request"))))

    def _rows(self, piece: ExchangeRows, columns: dict[str, list[Any]], names: list[tuple[str, ...]],
              topics: list[tuple[str, ...]]) -> None:
        for name in READ:
            columns[name].extend(piece.listed(name))
        names.extend([tuple(map(error_name, codes)) if codes else () for codes in piece.codes])
        named = self._named
        if not any(piece.named):  # (no answer names a topic id: nothing to learn on the way)
            topics.extend([found if len(found) == 1 and type(found[0]) is str else named(found)
                           for found in piece.topics])  # fmt: skip
            return
        for api_key, found, ids in zip(piece.listed("api_key"), piece.topics, piece.named, strict=True):
            if ids and api_key == METADATA:
                self._learn([(self._id(raw), topic) for topic, raw in ids])
            topics.append(named(found))

    def _id(self, raw: bytes) -> uuid.UUID:
        found = self._ids.get(raw)
        if found is None:
            found = uuid.UUID(bytes=raw)
            if len(self._ids) < self.max_topic_ids:
                self._ids[raw] = found
        return found

    def _learn(self, pairs: list[tuple[uuid.UUID, str]]) -> None:
        for topic_id, topic in pairs:
            if len(self.topic_names) < self.max_topic_ids:
                self.topic_names.setdefault(topic_id, topic)

    def _named(self, found: tuple | list) -> tuple[str, ...]:
        """Topic names as given, topic ids (the scan's bytes or ids) by the name a Metadata answer gave."""
        if all(type(t) is str for t in found):
            return tuple(found)
        names: dict[str, None] = {}
        for t in found:
            if type(t) is not str:
                topic_id = self._id(t) if type(t) is bytes else t
                t = self.topic_names.get(topic_id, str(topic_id))
            names[t] = None
        return tuple(names)


def _piece(c: dict[str, list[Any]], names: list[tuple[str, ...]], topics: list[tuple[str, ...]]) -> Exchanged:
    """The figures' piece from the rows' columns, a column at a time."""
    broker_ip, client_ip, client_id = c["broker_ip"], c["client_ip"], c["client_id"]
    return Exchanged(
        ts_ns=[r or q or 0 for r, q in zip(c["response_ts"], c["request_ts"], strict=True)],
        api=[a or "?" for a in c["api_name"]],
        broker=[f"{ip}:{port}" if ip else "?" for ip, port in zip(broker_ip, c["broker_port"], strict=True)],
        client=[f"{cid or '-'} @ {ip}" if ip else (cid or "?") for cid, ip in zip(client_id, client_ip, strict=True)],
        client_id=[cid or "-" for cid in client_id],
        latency_ms=c["latency_ms"],
        status=c["status"],
        request_bytes=[n or 0 for n in c["request_bytes"]],
        response_bytes=[n or 0 for n in c["response_bytes"]],
        error_names=names,
        topics=topics,
        failed=[status == "error" and not is_expected(api, error)
                for status, api, error in zip(c["status"], c["api_name"], c["error_name"], strict=True)],
    )
