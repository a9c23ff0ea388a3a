"""One TCP connection seen as Kafka: roles, framing, decoding, SASL, pairing.

Fed with the reassembler's byte runs and gaps for both directions, it emits exchanges,
anomalies and, at the end, a connection summary. Pure: no I/O, no global state, so the
local, live and Spark engines all drive the same code.

Roles: the broker is the endpoint on a configured port. On any other port the roles are
learned from the bytes: the first direction whose bytes decode as a complete Kafka request
is the client's. A connection that shows no Kafka request within ``probe_limit`` bytes is
declared not Kafka and dropped, so unrelated traffic costs little. Which of these phases a
connection is in (probing, kafka, sasl-raw, not-kafka, closed) is kept by a
:class:`~kdissect.kafka.lifecycle.Lifecycle`, whose rules are stated in that module.

TLS is not this module's business: the pipeline wraps a connection that looks like TLS in the TLS
stage (:mod:`kdissect.tls`), which feeds this one the decrypted bytes, if any.

Anomalies are Kafka's only once the connection is: until a frame proves it, what framing gives up
(gaps, skipped bytes) is held, with a bound, and reported only if Kafka turns up. A connection
never identified as Kafka yields no anomaly (it is a row of the connections table, ``is_kafka``
false), except one ``not_kafka`` when it sits on a broker port. A direction picked up mid-stream
is one ``midstream`` anomaly whose length is what was skipped before its first frame boundary.

Responses to requests the capture does not hold (orphans) are decoded by inference
(:mod:`kdissect.kafka.inference`) from every request kind seen on the connection: they wait for
its end, within a bound (beyond it, they are inferred from the requests seen so far).
"""

from __future__ import annotations

import contextlib
import struct

from kdissect.decoders import api as decode_api
from kdissect.decoders import apis, compiler
from kdissect.decoders.error_codes import error_name
from kdissect.decoders.errors import CAP, DecodeError
from kdissect.decoders.named_topics import contexts, scanned_topics
from kdissect.decoders.sasl import guess_mechanism
from kdissect.events import Anomaly, ConnectionSummary, Endpoint, Exchange, KafkaEvent, KafkaMessage, new_rows
from kdissect.kafka.framing import PROOF_CREDIT, Frame, FrameSplitter, FramingEvent, Lost, Skipped, Validator
from kdissect.kafka.inference import Pair, infer_request
from kdissect.kafka.lifecycle import Lifecycle, State
from kdissect.kafka.pairing import _SILENT_IF_ACKS0, Pairer, expects_response
from kdissect.kafka.sasl import SASL_APIS, SASL_HANDSHAKE, SaslSession, answer_fits_sasl, withheld
from kdissect.kafka.validators import RequestValidator, ResponseValidator
from kdissect.options import Options
from kdissect.reassembly.streams import DirectionStats, StreamConflict

API_VERSIONS = apis.key_of("ApiVersions")
_I = struct.Struct(">i")
ANSWERED_ACKS0 = "the broker answered a Produce request sent with acks=0 (Kafka brokers never do)"
MAX_HELD = 256  # framing anomalies held while a connection is not yet known to be Kafka
MAX_HELD_ORPHANS = 64  # orphan responses waiting for the connection's end to infer their request
MAX_HELD_ORPHAN_BYTES = 4 << 20
SHORT_PAIRING = 16  # a lane's pairing that took fewer frames than this before it was handed back was short
MAX_PAIRING_WAIT = 1024  # frames the session takes itself, at most, after short pairings


_PAIRING_SHARED: tuple | None = None


def _pairing_shared() -> tuple:
    """What every native pairing (``kafka/_pairing.c``) reads from the registries: the frame programs,
    api names by key, the apis whose exchanges the session must see itself (SASL's, which it redacts
    and learns from; ApiVersions, which names the client software), the apis silent at acks=0, error
    names, and where rows go."""
    global _PAIRING_SHARED
    if _PAIRING_SHARED is None:
        names = [apis.name_of(key) for key in range(max(apis.registry()) + 1)]
        _PAIRING_SHARED = (compiler.FRAME_PROGRAMS["request"], compiler.FRAME_PROGRAMS["response"], names,
                           frozenset({*SASL_APIS, API_VERSIONS}), _SILENT_IF_ACKS0, error_name, new_rows, "ok", "error")
    return _PAIRING_SHARED


def _cut_reason(frame: Frame) -> str:
    assert frame.wire_size is not None
    return f"only {len(frame.data) + 4} of {frame.wire_size + 4} bytes captured: body not decoded"


class KafkaConnection:
    """The Kafka view of one TCP connection (both directions)."""

    def __init__(self, conn_id: int, a: Endpoint, b: Endpoint, ts_ns: int, syn_seen: bool, options: Options) -> None:
        self.conn_id = conn_id
        self.options = options
        self.endpoints = (a, b)
        self.syn_seen = syn_seen
        self.pairer = Pairer(options.pending_requests)
        self.life = Lifecycle()
        self.sasl = SaslSession()
        self._response_validator = ResponseValidator(self.pairer)
        self.request_dir: int | None = None  # 0: a -> b carries requests; 1: b -> a
        if b[1] in options.ports and a[1] not in options.ports:
            self.request_dir = 0
        elif a[1] in options.ports and b[1] not in options.ports:
            self.request_dir = 1
        elif b[1] in options.ports and syn_seen:
            self.request_dir = 0
        self.summary = ConnectionSummary(
            conn_id=conn_id, client=None, broker=None, endpoints=(a, b), first_ts=ts_ns, last_ts=ts_ns, is_kafka=False
        )
        self.splitters = [self._make_splitter(d) for d in (0, 1)]
        self._probed = [0, 0]
        self._undecodable_run = [0, 0]
        # Frames the session takes itself before a lane may pair again: after a pairing that took only a few
        # frames before a lost packet handed it back (a capture losing packets often), twice the last wait.
        self._pairing_wait = self._pairing_backoff = 0
        self._lost = False  # a gap since the pairing last started
        self._held: list[tuple[int, Skipped | Lost | StreamConflict]] = []  # anomalies before Kafka was proven
        self._held_dropped = 0
        # direction -> its midstream start and the bytes skipped since, until its first frame boundary
        self._midstream: dict[int, tuple[Lost, int]] = {}
        self._pairs: dict[Pair, None] = {}  # (key, version) of the requests seen, in order
        self._orphans: list[tuple[KafkaMessage, Frame]] = []  # waiting for the end of the connection
        self._orphan_bytes = 0
        if self.request_dir is not None:
            self._set_roles(self.request_dir)
        else:
            for s in self.splitters:
                s.start_hunting()
                s.retain = True  # kept until the roles are known and the right validator can look

    # -- setup --------------------------------------------------------------------------
    def _make_splitter(self, direction: int) -> FrameSplitter:
        validator: Validator
        if self.request_dir is None or direction == self.request_dir:
            validator = RequestValidator()
        else:
            validator = self._response_validator
        return FrameSplitter(
            validator,
            max_frame=self.options.max_frame,
            min_frame=4,
        )

    def _set_roles(self, request_dir: int) -> None:
        self.request_dir = request_dir
        self.life.move(State.KAFKA)
        self.summary.client = self.endpoints[request_dir]
        self.summary.broker = self.endpoints[1 - request_dir]
        self.splitters[request_dir].validator = RequestValidator()
        self.splitters[1 - request_dir].validator = self._response_validator
        for s in self.splitters:
            s.retain = False

    def _role(self, direction: int) -> str | None:
        if self.request_dir is None:
            return None
        return "request" if direction == self.request_dir else "response"

    # -- input --------------------------------------------------------------------------
    def data(self, direction: int, offset: int, data: bytes, ts_ns: int) -> list[KafkaEvent]:
        if self.life.done:
            return []
        self.summary.last_ts = max(self.summary.last_ts, ts_ns)
        if self.life.state is State.PROBING:
            self._probed[direction] += len(data)
        events = self._handle_framing(direction, self.splitters[direction].feed(offset, data, ts_ns))
        self._emit(events)
        if (self.life.state is State.PROBING and sum(self._probed) > 2 * self.options.probe_limit
                and not any(s.awaiting_candidate for s in self.splitters)):
            # A plausible frame still arriving (a big Produce picked up mid-stream) is waited
            # for; the splitter bounds that wait by its hunt buffer.
            events.extend(self._not_kafka())
        return events

    def frames(self, direction: int, frames: list[Frame], pairing: bool
               ) -> tuple[list[KafkaEvent], bool, tuple | None]:  # fmt: skip
        """Frames a native lane cut from the direction's bytes (``kafka/_framing.c``; the lane updated
        ``summary.last_ts``): what :meth:`data` does with the frames its splitter cuts. Also says whether
        the connection is still one a lane may frame (:meth:`framing_settled`), and, when the lane asks
        (``pairing``: its pairing is off), whether and how it may pair (:meth:`lane_pairing`, which takes
        the pairer's waiting requests over; an orphan answer handed here by a pairing still on asks not)."""
        self.splitters[direction].frames += len(frames)
        # _handle_framing then _frame would do just this: a lane frames a connection only once it is
        # proven Kafka, roles known, no mid-stream start pending, and no frame brings any of that back.
        events: list[KafkaEvent] = []
        for frame in frames:
            events.extend(self._decoded(direction, frame))
        settled = self.framing_settled()
        return self._emit(events), settled, self.lane_pairing() if settled and pairing else None

    def lane_pairing(self) -> tuple | None:
        """What a native lane needs to pair this connection's frames into exchanges rows itself
        (``kafka/_pairing.c``; with their detail rows too, ``Options.exchange_details``), taking over the
        requests the pairer holds; or None when it may not: the engine takes no rows (``Options.exchange_rows``
        or ``exchange_details``), frames are kept, an authentication is under way, or a request waiting is
        acks=0, cut or undecoded, or warned about. The lane holds as many as the pairer may
        (``Options.pending_requests``); the overtaken requests stay with the pairer, whose dict of them the lane
        reads."""
        opts = self.options
        if not (opts.exchange_rows or opts.exchange_details) or opts.keep_frames or self.sasl.pending:
            return None
        if self._pairing_wait:
            return None
        pairer = self.pairer
        in_order = pairer.in_order()
        if not all(m.body is not None and not m.warnings for m in in_order):
            self._pairing_wait = len(in_order)  # (a step per request: asked again only after as many frames)
            return None
        waiting = pairer.take_waiting()
        if waiting is None:
            return None
        names = opts.exchange_topics
        return (_pairing_shared(), opts.pending_requests, self.summary.client, self.summary.broker, self.conn_id,
                self.summary.client_ids, self._pairs, self.resume_pairing, names,
                [(m.correlation_id, m.api_key, m.api_version, m.offset, m.ts_first, m.ts_last, m.size,
                  m.header.get("client_id") if m.header else None, m,
                  scanned_topics(contexts(m.api_key, m.api_version, "request", m.body)) if names else None)
                 for m in waiting],
                opts.exchange_details, pairer.overtaken())

    def resume_pairing(self, counts: tuple[int, ...], waiting: list[tuple[Frame | KafkaMessage, bool]],
                       ) -> list[KafkaEvent]:
        """A native pairing hands back: what its frames add to the connection (frames and bytes each
        way, frames cut per direction), then the requests still waiting, oldest first, each as overtaken
        or not: those it took over back into the pairer, the others replayed as the frames they were (the
        pairer takes them as it took them before the pairing: no event)."""
        # A pairing handed back after a few frames with a packet lost meanwhile (each hand-back and start costs
        # a replay and a new piece of rows): the session keeps the next frames, more each time, so a capture
        # losing many packets costs no more than the Python path alone; a pairing that lasted resets the wait.
        short = self._lost and counts[0] + counts[2] < SHORT_PAIRING
        self._pairing_backoff = min(max(2 * self._pairing_backoff, 8), MAX_PAIRING_WAIT) if short else 0
        self._pairing_wait = self._pairing_backoff
        self._lost = False
        summary = self.summary
        summary.frames_to_broker += counts[0]
        summary.bytes_to_broker += counts[1]
        summary.frames_to_client += counts[2]
        summary.bytes_to_client += counts[3]
        for splitter, cut in zip(self.splitters, counts[4:], strict=True):
            splitter.frames += cut
        assert self.request_dir is not None
        if counts[4 + self.request_dir]:  # requests decoded, and answers (as _request and _answer do)
            self._undecodable_run[0] = 0
        if counts[2]:
            self._undecodable_run[1] = 0
        events: list[KafkaEvent] = []
        for item, overtaken in waiting:
            if isinstance(item, KafkaMessage):
                self.pairer.restore(item, overtaken)
                continue
            events.extend(self._decoded(self.request_dir, item))
            if overtaken:
                self.pairer.overtake(struct.unpack_from(">i", item.data, 4)[0])
        # A hand-back costs a step per request waiting (a deep pipeline: up to pending_requests), and so does the
        # next start: the session keeps as many frames first, less those the pairing took, so that a connection
        # handed back at every frame (an answer overtaking too many, the bound reached) costs at most about twice
        # the Python path, whatever its depth.
        self._pairing_wait = max(self._pairing_wait, len(waiting) - counts[4] - counts[5])
        return self._emit(events)

    def framing_settled(self) -> bool:
        """Whether a native lane may frame this connection: Kafka proven, roles known, no mid-stream
        start pending, both directions framed in sync with frame heads vetted (no hunt, no cut frame, no
        bare SASL tokens)."""
        if self.life.state is not State.KAFKA or not self.summary.is_kafka or self._midstream:
            return False
        first, second = self.splitters
        return first.plainly_in_sync and second.plainly_in_sync

    def lane_framing(self, offsets: tuple[int, int]) -> tuple | None:
        """What a native lane needs to frame this connection from the stream ``offsets`` on (each direction's
        next byte), or None when it may not: not :meth:`framing_settled`, or a splitter holds bytes."""
        if not self.framing_settled():
            return None
        for s, offset in zip(self.splitters, offsets, strict=True):
            if s.pending() != (offset, 0):
                return None
        first, second = self.splitters
        return (self.frames, self.summary, Frame, self.request_dir, first.min_frame, first.max_frame,
                (offsets[0], first.validator.sane, first.validator.native_sane()),
                (offsets[1], second.validator.sane, second.validator.native_sane()), self.lane_pairing())

    def release_framing(self, states: tuple[tuple, tuple]) -> None:
        """A native lane hands the framing back: each splitter takes what the lane held (FrameSplitter.adopt)."""
        for s, state in zip(self.splitters, states, strict=True):
            s.adopt(*state)

    def gap(self, direction: int, offset: int, length: int | None, ts_ns: int, reason: str) -> list[KafkaEvent]:
        if self.life.done:
            return []
        self._lost = True
        return self._emit(self._handle_framing(direction, self.splitters[direction].gap(offset, length, ts_ns, reason)))

    def conflict(self, ev: StreamConflict) -> list[KafkaEvent]:
        """A retransmission carried other bytes than the copy kept (and decoded)."""
        if self.life.done:
            return []
        return self._emit(self._handle_framing(ev.direction, [ev]))

    def end(self, ts_ns: int, reason: str, stats: tuple[DirectionStats, DirectionStats] | None = None,
            ) -> list[KafkaEvent]:
        """The TCP connection is over: unanswered requests, then the summary (with the
        reassembler's counters per direction, ``stats``, client to broker first)."""
        events: list[KafkaEvent] = []
        self.summary.last_ts = max(self.summary.last_ts, ts_ns)
        self.summary.end_reason = reason
        done = self.life.done
        if not done:  # requests first: responses proven at the end may answer them
            for d in sorted((0, 1), key=lambda d: d != self.request_dir):
                events.extend(self._handle_framing(d, self.splitters[d].finish()))
        events.extend(self._release_orphans())
        for d, s in enumerate(self.splitters):
            at, left = s.pending()
            if left and not s.stopped:
                if self.summary.is_kafka:
                    events.extend(self._midstream_boundary(d))
                    events.append(
                        Anomaly("truncated_frame", self.conn_id, self._role(d), at, left, ts_ns,
                                f"{left} bytes of an incomplete frame at the end of the connection")
                    )
                self.summary.skipped_bytes += left
            if s.starved:
                events.append(Anomaly(CAP, self.conn_id, self._role(d), None, None, ts_ns,
                                      f"{s.starved} candidate frames left unproven: hunting's proofs had spent the "
                                      f"{PROOF_CREDIT} decoding steps per byte hunted they may"))  # fmt: skip
        if self.summary.is_kafka:
            for d in sorted(self._midstream):
                events.extend(self._midstream_boundary(d))
        skipped = sum(s.skipped_bytes for s in self.splitters)
        unread = skipped + self.summary.skipped_bytes
        if not done and self.request_dir is not None and not self.summary.is_kafka and unread:
            # Once, on a Kafka port (elsewhere a connection that is not Kafka is only a connections row)
            events.append(Anomaly("not_kafka", self.conn_id, None, None, unread, ts_ns,
                                  f"no Kafka frame in this connection's {unread} bytes"))
        if stats is not None:
            for st in stats:
                self.summary.retransmissions += st.retransmissions
            to_broker = self.request_dir or 0  # unknown roles: the table shows endpoint a as the client
            self.summary.tcp = (stats[to_broker], stats[1 - to_broker])
        events.extend(self.pairer.drain())
        self._emit(events)
        self.summary.sasl = self.sasl.close()
        self.summary.skipped_bytes += skipped
        self.life.move(State.CLOSED)
        events.append(self.summary)
        return events

    # -- framing events -----------------------------------------------------------------
    def _emit(self, events: list[KafkaEvent]) -> list[KafkaEvent]:
        """Where exchanges leave the connection, each once: endpoints named, SASL tokens redacted."""
        for ev in events:
            if isinstance(ev, Exchange):
                ev.client, ev.broker = self.summary.client, self.summary.broker
                self.sasl.exchange(ev)
        return events

    def _handle_framing(self, direction: int, framing: list[FramingEvent | StreamConflict]) -> list[KafkaEvent]:
        out: list[KafkaEvent] = []
        for ev in framing:
            if isinstance(ev, Frame):
                out.extend(self._frame(direction, ev))
            elif not self.summary.is_kafka:  # reported only if this turns out to be Kafka
                if len(self._held) < MAX_HELD:
                    self._held.append((direction, ev))
                else:
                    self._held_dropped += 1
            else:
                out.extend(self._framing_anomaly(direction, ev))
        return out

    def _framing_anomaly(self, direction: int, ev: Skipped | Lost | StreamConflict) -> list[KafkaEvent]:
        if isinstance(ev, StreamConflict):
            return [Anomaly("retransmission_conflict", self.conn_id, self._role(direction), ev.offset, ev.length,
                            ev.ts_ns, f"a retransmitted copy of {ev.length} bytes differs from the copy decoded "
                            "(the first copy was kept)")]
        if isinstance(ev, Lost):
            if ev.reason == "midstream":  # reported with what its first boundary skipped
                self._midstream[direction] = (ev, 0)
                return []
            self.summary.gaps += 1
            self.summary.gap_bytes += ev.length or 0
            length = "unknown" if ev.length is None else f"{ev.length}"
            return [Anomaly("gap", self.conn_id, self._role(direction), ev.offset, ev.length, ev.ts_ns,
                            f"{length} bytes missing from the capture ({ev.reason})")]
        pending = self._midstream.get(direction)
        if pending is not None and ev.reason == "resync" and ev.offset == pending[0].offset + pending[1]:
            self._midstream[direction] = (pending[0], pending[1] + ev.length)  # still before the first boundary
            return []
        return [*self._midstream_boundary(direction), self._skipped(direction, ev)]

    def _midstream_boundary(self, direction: int) -> list[KafkaEvent]:
        """The midstream anomaly of a direction, once its first boundary is known, with the bytes
        skipped before it (the rest of a frame whose beginning was not captured) as its length."""
        pending = self._midstream.pop(direction, None)
        if pending is None:
            return []
        start, skipped = pending
        return [Anomaly("midstream", self.conn_id, self._role(direction), start.offset, skipped, start.ts_ns,
                        f"picked up mid-stream: {skipped} bytes before the first frame boundary skipped")]

    def _release_held(self) -> list[KafkaEvent]:
        """The connection proved to be Kafka: the framing anomalies held until now, in order."""
        out: list[KafkaEvent] = []
        for direction, ev in self._held:
            out.extend(self._framing_anomaly(direction, ev))
        if self._held_dropped:
            out.append(Anomaly("overflow", self.conn_id, None, None, None, self.summary.first_ts,
                               f"{self._held_dropped} framing anomalies before the first Kafka frame not kept"))
        self._held.clear()
        self._held_dropped = 0
        return out

    def _frame(self, direction: int, frame: Frame) -> list[KafkaEvent]:
        probing = self.life.state is State.PROBING
        events: list[KafkaEvent] = []
        if probing:
            # The first frame a request validator accepted tells us who the client is.
            self._set_roles(direction)
            if self.syn_seen:  # the answers start at the stream's first byte: no need to hunt
                self.splitters[1 - direction].sync_at_start()
        if not self.summary.is_kafka:
            self.summary.is_kafka = self._response_validator.proven = True
            events.extend(self._release_held())
        events.extend(self._midstream_boundary(direction))
        events.extend(self._decoded(direction, frame))
        if probing:
            events.extend(self._handle_framing(1 - direction, self.splitters[1 - direction].rescan()))
        return events

    def _decoded(self, direction: int, frame: Frame) -> list[KafkaEvent]:
        if self._pairing_wait:
            self._pairing_wait -= 1
        if direction == self.request_dir:
            self.summary.bytes_to_broker += 4 + frame.size
            self.summary.frames_to_broker += 1
            return self._request(frame) if frame.complete else self._cut_request(frame)
        self.summary.bytes_to_client += 4 + frame.size
        self.summary.frames_to_client += 1
        return self._response(frame) if frame.complete else self._cut_response(frame)

    def _skipped(self, direction: int, ev: Skipped) -> Anomaly:
        return Anomaly(ev.reason.split(":")[0], self.conn_id, self._role(direction), ev.offset, ev.length, ev.ts_ns,
                       f"skipped {ev.length} bytes ({ev.reason})")

    def _message(self, frame: Frame, is_request: bool) -> KafkaMessage:
        return KafkaMessage(
            conn_id=self.conn_id,
            is_request=is_request,
            offset=frame.offset,
            size=frame.size,
            ts_first=frame.ts_first,
            ts_last=frame.ts_last,
            raw=frame.data if self.options.keep_frames else None,
        )

    def _request(self, frame: Frame) -> list[KafkaEvent]:
        msg = self._message(frame, True)
        data = frame.data
        if len(data) >= 8:
            msg.api_key, msg.api_version, msg.correlation_id = struct.unpack_from(">hhi", data, 0)
        try:
            decoded = decode_api.decode_request_frame(data)
        except DecodeError as exc:
            if self.life.state is State.SASL_RAW:
                return self._raw_token(frame, True)
            return self._undecodable(msg, frame, exc)
        self._set_sasl_raw(False)
        self._undecodable_run[0] = 0
        msg.header, msg.body = decoded["header"], decoded["body"]
        msg.warnings = decoded.get("warnings", [])
        if msg.warnings:
            msg.raw = data
        self._learn_from_request(msg)
        assert msg.api_key is not None and msg.api_version is not None
        self._pairs[(msg.api_key, msg.api_version)] = None
        return list(self.pairer.add_request(msg))

    def _response(self, frame: Frame) -> list[KafkaEvent]:
        msg = self._message(frame, False)
        data = frame.data
        if len(data) < 4:
            return self._undecodable(msg, frame, DecodeError("response shorter than a correlation id"))
        msg.correlation_id = _I.unpack_from(data, 0)[0]
        request, overtook, settled = self.pairer.take(msg.correlation_id)
        early: list[KafkaEvent] = []
        if request is None and self.life.state is not State.SASL_RAW:
            # A response cannot come before its request is complete: if the request direction
            # still waits on a frame, that frame's size field may be garbage hiding the request.
            assert self.request_dir is not None
            early = self._handle_framing(self.request_dir, self.splitters[self.request_dir].doubt())
            if early:
                request, overtook, settled = self.pairer.take(msg.correlation_id)
        return [*early, *self._paired(msg, request, overtook, settled, frame)]

    def _paired(self, msg: KafkaMessage, request: KafkaMessage | None, overtook: bool,
                settled: list[Exchange], frame: Frame) -> list[KafkaEvent]:
        data = frame.data
        if request is None:
            if self.life.state is State.SASL_RAW:
                return self._raw_token(frame, False)
            self._keep_raw(msg, data, frame.size)  # judged where it arrived in the SASL exchange
            if len(self._orphans) < MAX_HELD_ORPHANS and self._orphan_bytes + len(data) <= MAX_HELD_ORPHAN_BYTES:
                self._orphans.append((msg, frame))  # inferred at the end, from every request seen
                self._orphan_bytes += len(data)
                return []
            return [self._orphan(msg, frame)]
        return [*settled, *self._answer(request, msg, data, frame, overtook)]

    def _release_orphans(self) -> list[KafkaEvent]:
        out: list[KafkaEvent] = [self._orphan(msg, frame) for msg, frame in self._orphans]
        self._orphans.clear()
        self._orphan_bytes = 0
        return out

    def _orphan(self, msg: KafkaMessage, frame: Frame) -> Exchange:
        """An orphan response, decoded when exactly one request explains it (marked ``inferred``)."""
        pair = infer_request(frame.data, self._pairs)
        if pair is None or (msg.raw is None and pair[0] not in SASL_APIS):  # withheld: not decoded either
            return Exchange(self.conn_id, None, msg, "orphan_response")
        msg.api_key, msg.api_version = pair
        decoded = decode_api.decode_response_frame(frame.data, *pair)
        msg.header, msg.body = decoded["header"], decoded["body"]
        msg.warnings = [{"code": "inferred", "message": f"request not captured: answers {apis.name_of(pair[0])} "
                         f"v{pair[1]} (inferred: the one request whose response decodes to these bytes)"}]
        return Exchange(self.conn_id, None, msg, "orphan_response", inferred=True)

    def _answer(self, request: KafkaMessage, msg: KafkaMessage, data: bytes, frame: Frame,
                overtook: bool) -> list[KafkaEvent]:
        assert request.api_key is not None and request.api_version is not None
        msg.api_key, msg.api_version = request.api_key, request.api_version
        try:
            decoded = decode_api.decode_response_frame(data, request.api_key, request.api_version)
        except DecodeError as exc:
            msg.raw = data
            msg.error = str(exc)
            anomaly = Anomaly("decode_error", self.conn_id, "response", frame.offset, len(data), frame.ts_first,
                              str(exc))
            return [anomaly, Exchange(self.conn_id, request, msg, "undecodable", overtook)]
        self._undecodable_run[1] = 0
        msg.header, msg.body = decoded["header"], decoded["body"]
        msg.warnings = decoded.get("warnings", [])
        if msg.warnings:
            msg.raw = data
        if not expects_response(request):
            msg.warnings.append({"code": "acks0_answered", "message": ANSWERED_ACKS0})
        self._learn_from_response(request, msg)
        return [Exchange(self.conn_id, request, msg, "ok", overtook)]

    # -- frames the capture holds only the start of (snap length) ---------------------------
    def _cut_request(self, frame: Frame) -> list[KafkaEvent]:
        """Header fields from the captured head; the request still pairs with its response."""
        if self.life.state is State.SASL_RAW and not self._request_head(frame.data):
            return self._cut_token()
        msg = self._cut_message(frame, True)
        if len(frame.data) < 8:
            return [self._head_lost(frame, "request")]
        msg.api_key, msg.api_version, msg.correlation_id = struct.unpack_from(">hhi", frame.data, 0)
        with contextlib.suppress(DecodeError):  # if the client id itself was cut, the rest stands
            # The body's leading fields, when captured, keep Produce's acks: an acks=0 request is
            # then settled as no_response_expected instead of left unanswered.
            msg.header, msg.body = decode_api.decode_request_head(frame.data)
        return list(self.pairer.add_request(msg))

    def _cut_response(self, frame: Frame) -> list[KafkaEvent]:
        if self.life.state is State.SASL_RAW and (len(frame.data) < 4
                                                   or _I.unpack_from(frame.data, 0)[0] not in self.pairer):
            return self._cut_token()  # no request waits for it: a bare server token
        msg = self._cut_message(frame, False)
        if len(frame.data) < 4:
            return [self._head_lost(frame, "response")]
        msg.correlation_id = _I.unpack_from(frame.data, 0)[0]
        request, overtook, settled = self.pairer.take(msg.correlation_id)
        if request is not None:
            msg.api_key, msg.api_version = request.api_key, request.api_version
        return [*settled, Exchange(self.conn_id, request, msg, "truncated", overtook)]

    @staticmethod
    def _request_head(data: bytes) -> bool:
        """Whether a frame starts like a request (a known API at a version it has): in SASL_RAW, what
        tells a Kafka request from a bare token."""
        if len(data) < 4:
            return False
        key, version = struct.unpack_from(">hh", data, 0)
        versions = apis.version_range(key, "request") if apis.name_of(key) is not None else None
        return versions is not None and versions[0] <= version <= versions[1]

    def _cut_token(self) -> list[KafkaEvent]:
        self.sasl.cut_token()
        return []

    def _keep_raw(self, msg: KafkaMessage, data: bytes, size: int) -> None:
        """Keep an undecoded frame's bytes for show --raw, unless they could be a SASL token (they may
        hold a password, proof or signature): shown as ``redacted, N bytes`` instead."""
        if self._could_be_token(msg.is_request, data, size):
            msg.raw = None
            msg.warnings.append({"code": "sasl", "message": withheld(size)})
        else:
            msg.raw = data

    def _could_be_token(self, is_request: bool, data: bytes, size: int) -> bool:
        """By position: an authentication under way, or v0's bare tokens; by shape: a bare client
        token (a v0 token whose SaslHandshake the capture missed), or an answer that fits
        SaslAuthenticate (its request not captured, nor inferable)."""
        if self.sasl.pending or self.life.state is State.SASL_RAW:
            return True
        return guess_mechanism(data) is not None if is_request else answer_fits_sasl(data, size)

    def _cut_message(self, frame: Frame, is_request: bool) -> KafkaMessage:
        msg = self._message(frame, is_request)
        msg.error = _cut_reason(frame)
        msg.warnings = [{"code": "cut", "message": msg.error}]
        self._keep_raw(msg, frame.data, frame.size)
        return msg

    def _head_lost(self, frame: Frame, role: str) -> Anomaly:
        """A cut frame whose captured head is too short to name the request or its answer."""
        assert frame.wire_size is not None
        return Anomaly("partial_frame", self.conn_id, role, frame.offset, 4 + frame.wire_size,
                       frame.ts_first, f"{_cut_reason(frame)}; too little to pair")

    def _undecodable(self, msg: KafkaMessage, frame: Frame, exc: DecodeError) -> list[KafkaEvent]:
        self._keep_raw(msg, frame.data, frame.size)
        msg.error = str(exc)
        role = "request" if msg.is_request else "response"
        events: list[KafkaEvent] = [
            Anomaly("decode_error", self.conn_id, role, frame.offset, len(frame.data), frame.ts_first, str(exc))
        ]
        if msg.is_request:
            events.append(Exchange(self.conn_id, msg, None, "undecodable"))
        else:
            events.append(Exchange(self.conn_id, None, msg, "undecodable"))
        # Two undecodable frames in a row: the size fields are probably not frame boundaries.
        run = 0 if msg.is_request else 1
        self._undecodable_run[run] += 1
        if self._undecodable_run[run] >= 2:
            self._undecodable_run[run] = 0
            assert self.request_dir is not None
            self.splitters[self.request_dir if msg.is_request else 1 - self.request_dir].start_hunting()
        return events

    # -- what requests and responses teach us --------------------------------------------
    def _learn_from_request(self, msg: KafkaMessage) -> None:
        assert msg.header is not None and msg.body is not None
        cid = msg.header.get("client_id")
        if cid is not None and cid not in self.summary.client_ids:
            self.summary.client_ids.append(cid)
        if msg.api_key == API_VERSIONS and "client_software_name" in msg.body:
            self.summary.software_name = msg.body.get("client_software_name")
            self.summary.software_version = msg.body.get("client_software_version")

    def _learn_from_response(self, request: KafkaMessage, msg: KafkaMessage) -> None:
        if request.api_key == SASL_HANDSHAKE and request.api_version == 0 and msg.body is not None:
            # Handshake v0: the SASL tokens that follow travel as bare size-prefixed frames.
            self._set_sasl_raw(msg.body.get("error_code") == 0)

    def _raw_token(self, frame: Frame, from_client: bool) -> list[KafkaEvent]:
        """A bare SASL token (after SaslHandshake v0): into the connection's SASL facts, nowhere
        else; a failure it reports is an anomaly, since no exchange stands for it."""
        token = self.sasl.raw_token(frame.data, from_client)
        if token.error is None:
            return []
        return [Anomaly("auth_failed", self.conn_id, "request" if from_client else "response", frame.offset,
                        4 + frame.size, frame.ts_first, f"SASL {token.mechanism} authentication failed: {token.error}")]

    def _set_sasl_raw(self, raw: bool) -> None:
        """Raw tokens are size-prefixed but are not requests: let them through unvetted."""
        if raw:
            self.life.move(State.SASL_RAW)
        elif self.life.state is State.SASL_RAW:
            self.life.move(State.KAFKA)
        if self.request_dir is not None:
            self.splitters[self.request_dir].vetting = not raw

    # -- giving up ----------------------------------------------------------------------
    def _not_kafka(self) -> list[KafkaEvent]:
        """Probing found no Kafka: the connections table says so (``is_kafka`` false); no anomaly."""
        self.life.move(State.NOT_KAFKA)
        self._stop_all()
        self._held.clear()
        return []

    def _stop_all(self) -> None:
        for s in self.splitters:
            s.stop()
