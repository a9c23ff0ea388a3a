"""Exchanges as the live figures and metrics take them: a batch's events become one
:class:`~kdissect.analysis.rolling.Exchanged` piece (the ``exchanges`` rows' values the figures read as
arrays, each exchange's label set, the names of every error code in each response, and the topics the
requests name, those given by id named from the Metadata responses seen so far, counted).

The native pairing's pieces (:class:`~kdissect.events.ExchangeRows`, asked for with
``Options.exchange_topics``) bring their rows as columns and each exchange's request topics, error codes
and the topic ids its response names, found by the exchange scan in C: their number columns are read as
the machine values they are, their text once per label set. An :class:`Exchange` the Python session
paired gives the same from its decoded messages (``tables.sink.exchange_row``, ``decoders.named_topics``).
"""

from __future__ import annotations

import math
import uuid
from array import array
from collections import Counter
from collections.abc import Iterable
from itertools import chain, compress, count, repeat
from operator import eq
from typing import Any

from kdissect.analysis.expected import is_expected
from kdissect.analysis.rolling import Exchanged, Labels, numbered
from kdissect.decoders.error_codes import error_name
from kdissect.decoders.named_topics import Context, contexts, id_names, request_topics
from kdissect.events import EXCHANGE_ROW, EXCHANGE_TYPED, Exchange, ExchangeRows, KafkaEvent, KafkaMessage
from kdissect.lazy import lazy_module
from kdissect.tables.sink import _entries, _has_error, exchange_errors, exchange_row

np = lazy_module("numpy")

METADATA = 3  # the answers whose topic ids name topics for later requests
# The exchanges row's columns an exchange's label set is made of, and the text ones the figures read.
KEYS = ("api_name", "broker_ip", "broker_port", "client_ip", "client_id")
TEXT = ("status", "error_name")
# The number columns the figures read, as the native pairing's typed buffers hold them (events.EXCHANGE_TYPED).
NUMBERS = {"response_ts": "q", "request_ts": "q", "latency_ms": "d", "request_bytes": "q", "response_bytes": "q"}
_AT = {name: k for k, name in enumerate(EXCHANGE_ROW)}  # a column's place in a piece's lists


def _contexts(msg: KafkaMessage | None, kind: str) -> list[Context]:
    return [] if msg is None else contexts(msg.api_key, msg.api_version, kind, msg.body)


class _Piece:
    """What a batch's exchanges bring, in their order: text columns as lists, number columns as the machine
    values of the native pairing's buffers (the Python session's rows as arrays of them)."""

    def __init__(self) -> None:
        self.columns: dict[str, list[Any]] = {name: [] for name in (*KEYS, *TEXT)}
        self.numbers: dict[str, list[Any]] = {name: [] for name in NUMBERS}  # buffers, joined at the end
        self.loose: list[tuple[int | None, ...]] = []  # (a number column's cells) of each Python-paired row
        self.errors: list[tuple[int, tuple[str, ...]]] = []
        self.topics: Counter[str] = Counter()

    def __len__(self) -> int:
        return len(self.columns["status"])

    def row(self, row: dict[str, Any], names: tuple[str, ...], topics: tuple[str, ...]) -> None:
        """One exchange of the Python session: its ``exchanges`` row, error names and topics."""
        if names:
            self.errors.append((len(self), names))
        for name, column in self.columns.items():
            column.append(row[name])
        self.loose.append(tuple(row[name] for name in NUMBERS))
        self.topics.update(topics)

    def rows(self, piece: ExchangeRows) -> None:
        """The columns of a piece of the native pairing."""
        self._gather()
        first = len(self)
        if any(piece.codes):
            self.errors.extend([(first + i, tuple(map(error_name, codes)))
                                for i, codes in compress(enumerate(piece.codes), piece.codes)])  # fmt: skip
        lists = piece.lists
        for name, column in self.columns.items():
            found = lists[_AT[name]]
            column.extend(found if type(found) is list else memoryview(found).cast(EXCHANGE_TYPED[name]).tolist())
        for name, buffers in self.numbers.items():
            buffers.append(lists[_AT[name]])

    def _gather(self) -> None:
        """The Python-paired rows met since the last native piece, as machine values (no value: 0, or NaN)."""
        if self.loose:
            for name, cells in zip(NUMBERS, zip(*self.loose, strict=True), strict=True):
                code = NUMBERS[name]
                empty = math.nan if code == "d" else 0
                self.numbers[name].append(array(code, [empty if v is None else v for v in cells]))
            self.loose = []

    def made(self) -> Exchanged:
        """The piece for the figures: label sets numbered as first met, failures found among the errors."""
        self._gather()
        n = len(self)
        c = self.columns
        label, keys = numbered(zip(*(c[name] for name in KEYS), strict=True), n)
        labels = [Labels(api or "?", f"{ip}:{port}" if ip else "?",
                         f"{cid or '-'} @ {client_ip}" if client_ip else (cid or "?"), cid or "-")
                  for api, ip, port, client_ip, cid in keys]  # fmt: skip
        numbers = {name: np.frombuffer(b"".join(buffers), dtype=NUMBERS[name])
                   for name, buffers in self.numbers.items()}  # fmt: skip
        response_ts, request_ts = numbers["response_ts"], numbers["request_ts"]
        statuses = Counter(c["status"])
        failed, unanswered = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
        if "error" in statuses:  # (answered with an error that is not a normal protocol step)
            api, error = c["api_name"], c["error_name"]
            for row in compress(count(), map(eq, c["status"], repeat("error"))):
                failed[row] = not is_expected(api[row], error[row])
        if "unanswered" in statuses:
            unanswered[list(compress(count(), map(eq, c["status"], repeat("unanswered"))))] = True
        return Exchanged(labels, label, np.where(response_ts != 0, response_ts, request_ts), numbers["latency_ms"],
                         numbers["request_bytes"], numbers["response_bytes"], failed, unanswered, dict(statuses),
                         self.errors, dict(self.topics))  # fmt: skip


class ExchangeReader:
    """Turns a batch's exchanges into an :class:`Exchanged` piece; remembers at most ``max_topic_ids``
    topic ids."""

    def __init__(self, max_topic_ids: int = 100_000) -> None:
        self.max_topic_ids = max_topic_ids
        self.topic_names: dict[uuid.UUID, str] = {}
        self._ids: dict[bytes, uuid.UUID] = {}  # the scan's 16 bytes of an id -> the id (as many as names)
        self._piece = _Piece()  # what was added since the last piece was taken

    def read(self, events: Iterable[KafkaEvent]) -> Exchanged:
        """The piece of ``events``' exchanges."""
        for ev in events:
            self.add(ev)
        return self.take()

    def add(self, ev: KafkaEvent) -> None:
        """An event of the batch, as it comes (exchanges are read then, the rest passed over): the engine
        need not hold the batch's events until the piece is taken."""
        if type(ev) is Exchange:
            self._exchange(ev, self._piece)
        elif type(ev) is ExchangeRows and len(ev):
            self._rows(ev, self._piece)

    @property
    def pending(self) -> int:
        """Exchanges added since the last piece was taken."""
        return len(self._piece)

    def take(self) -> Exchanged:
        """The piece of the exchanges added since the last one was taken."""
        piece, self._piece = self._piece, _Piece()
        return piece.made()

    def _exchange(self, ex: Exchange, piece: _Piece) -> None:
        req, resp = ex.request, ex.response
        errors = exchange_errors(ex, _entries(resp, errors_only=True) if _has_error(resp) else [])
        names = tuple(error_name(code) for _, _, code in errors)
        if resp is not None and resp.api_key == METADATA:
            self._learn(id_names(_contexts(resp, "response")))
        piece.row(exchange_row(ex, errors), names, self._named(request_topics(_contexts(req, "request"))))

    def _rows(self, rows: ExchangeRows, piece: _Piece) -> None:
        piece.rows(rows)
        topics, start = rows.topics, 0
        if any(rows.named):  # a Metadata answer names topic ids: learnt before the requests after it are named
            api_keys = rows.listed("api_key")
            for row in compress(count(), rows.named):
                if api_keys[row] == METADATA:
                    self._count(piece, topics[start:row])
                    self._learn([(self._id(raw), topic) for topic, raw in rows.named[row]])
                    start = row
        self._count(piece, topics[start:] if start else topics)

    def _count(self, piece: _Piece, topics: list[tuple[str | bytes, ...]]) -> None:
        """The topics of requests (each naming a topic once), counted as first met."""
        counted = Counter(chain.from_iterable(topics))
        if all(type(topic) is str for topic in counted):
            piece.topics.update(counted)
            return
        for found, times in Counter(topics).items():  # topic ids among them: named per distinct request's list
            for topic in self._named(found):  # (an id and its name in one request count once)
                piece.topics[topic] += times

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
