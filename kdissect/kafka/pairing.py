"""Pair requests with responses by correlation id, per connection.

Kafka answers requests on a connection in order, each response echoing its request's
correlation id. The response body can only be decoded once its request's api key and
version are known, so pairing also tells the decoder what to expect.

Produce requests with acks=0 expect no answer, but some brokers (tansu) send one anyway.
They are held like other requests and settled as ``no_response_expected`` once a later
request is answered (answers come in order, so theirs will not come), when too many pile up,
or at the end of the connection; an answer that does come pairs with them instead of being
reported as an orphan.

A request an answer overtook waits too (``_overtaken``), in case a broker answers out of order,
but answers come in order, so its own answer was most likely lost from the capture: only the
last ``MAX_OVERTAKEN`` wait, older ones are settled as ``unanswered`` when more are overtaken.
Otherwise every lost answer would keep its request waiting to the end of the connection, and a
capture that drops a packet now and then would end each long connection holding thousands.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator, ValuesView

from kdissect.decoders import apis
from kdissect.decoders.errors import CAP
from kdissect.events import Anomaly, Exchange, KafkaMessage
from kdissect.options import DEFAULT_PENDING_REQUESTS

_SILENT_IF_ACKS0 = apis.keys_with(apis.SILENT_IF_ACKS0)
MAX_OVERTAKEN = 32  # overtaken requests still waiting for a late answer (kafka/_pairing.h holds the same)
MAX_SILENT = 256  # acks=0 requests held for a possible answer; older ones are settled


def expects_response(request: KafkaMessage) -> bool:
    """Produce with acks=0 is the one request the broker never answers."""
    return not (request.api_key in _SILENT_IF_ACKS0 and request.body is not None and request.body.get("acks") == 0)


class Pairer:
    """Outstanding requests of one connection, oldest first.

    Every operation is O(1) amortised, whatever the order of the answers: requests wait in
    arrival order (``OrderedDict``, whose front is reached in O(1)); a response that overtakes
    older requests moves those expecting an answer to ``_overtaken`` (older than every request
    still in ``_pending``) once, so no later response walks past them again. At most
    ``max_pending`` requests wait; one more settles the oldest as unanswered, with a ``cap`` anomaly.
    """

    def __init__(self, max_pending: int = DEFAULT_PENDING_REQUESTS) -> None:
        self._pending: OrderedDict[int, KafkaMessage] = OrderedDict()
        self._overtaken: OrderedDict[int, KafkaMessage] = OrderedDict()
        self._silent: OrderedDict[int, None] = OrderedDict()  # the pending acks=0 Produce requests, oldest first
        self._max_pending = max_pending
        self._capped = 0  # requests settled by the cap so far

    def __len__(self) -> int:
        return len(self._pending) + len(self._overtaken)

    def __contains__(self, correlation_id: int) -> bool:
        return correlation_id in self._pending or correlation_id in self._overtaken

    def in_order(self) -> ValuesView[KafkaMessage]:
        """The requests waiting that no answer overtook, oldest first (a view: nothing copied)."""
        return self._pending.values()

    def overtaken(self) -> dict[int, KafkaMessage]:
        """The overtaken requests by correlation id, itself (not a copy): a native pairing holding the others
        reads how many there are and which, and leaves an answer to one of them to this pairer."""
        return self._overtaken

    def take_waiting(self) -> list[KafkaMessage] | None:
        """:meth:`in_order`, taken out, when none of them may go unanswered (acks=0): what a native pairing
        (``kafka/_pairing.c``) takes over, and gives back with :meth:`restore`; else None. The overtaken
        requests stay here (:meth:`overtaken`), so that a pairing handed back after each lost packet does not
        move up to ``MAX_OVERTAKEN`` of them back and forth."""
        if self._silent:
            return None
        waiting = list(self._pending.values())
        self._pending.clear()
        return waiting

    def restore(self, request: KafkaMessage, overtaken: bool) -> None:
        """A request waiting, given back oldest first (every overtaken one before the others)."""
        assert request.correlation_id is not None
        (self._overtaken if overtaken else self._pending)[request.correlation_id] = request

    def overtake(self, correlation_id: int) -> None:
        """A request just added (the newest) was overtaken: where a native pairing left it."""
        self._overtaken[correlation_id] = self._pending.pop(correlation_id)

    def request_for(self, correlation_id: int) -> KafkaMessage | None:
        return self._pending.get(correlation_id) or self._overtaken.get(correlation_id)

    def add_request(self, request: KafkaMessage) -> list[Exchange | Anomaly]:
        """Register a request; returns exchanges it completes or supersedes (and a cap anomaly)."""
        cid = request.correlation_id
        assert cid is not None
        out: list[Exchange | Anomaly] = []
        old = self._pop(cid)
        if old is not None:  # the id was reused before an answer came: the old one never got one
            out.append(_unanswered(old))
        self._pending[cid] = request
        if not expects_response(request):
            self._silent[cid] = None
            if len(self._silent) > MAX_SILENT:
                out.append(_unanswered(self._pop(next(iter(self._silent)))))
        if len(self._pending) + len(self._overtaken) > self._max_pending:
            oldest = next(iter(self._overtaken or self._pending))
            out.append(_unanswered(self._pop(oldest)))
            self._capped += 1
            if self._capped == 1:
                out.append(Anomaly(CAP, request.conn_id, "request", request.offset, None, request.ts_first,
                                   f"more than {self._max_pending} requests awaiting an answer: the oldest are "
                                   "settled as unanswered"))  # fmt: skip
        return out

    def take(self, correlation_id: int) -> tuple[KafkaMessage | None, bool, list[Exchange]]:
        """Remove and return the request a response answers, whether it overtook older requests
        that expect an answer (requests an earlier answer overtook already do not count again: after
        one lost answer, the answers that follow in order are not out of order), and the requests this
        answer settles: older acks=0 ones, and the oldest overtaken ones past ``MAX_OVERTAKEN``."""
        if correlation_id in self._overtaken:
            overtook = next(iter(self._overtaken)) != correlation_id
            return self._pop(correlation_id), overtook, []
        if correlation_id not in self._pending:
            return None, False, []
        settled: list[Exchange] = []
        overtook = False
        pending, overtaken = self._pending, self._overtaken
        while (cid := next(iter(pending))) != correlation_id:  # requests wait in arrival order
            request = pending.pop(cid)
            if expects_response(request):
                overtook = True
                overtaken[cid] = request
            else:
                del self._silent[cid]
                settled.append(_unanswered(request))
        while len(overtaken) > MAX_OVERTAKEN:
            settled.append(_unanswered(overtaken.popitem(last=False)[1]))
        return self._pop(correlation_id), overtook, settled

    def drain(self) -> Iterator[Exchange]:
        """End of the connection: whatever is still outstanding was never answered."""
        for request in self._overtaken.values():
            yield _unanswered(request)
        for request in self._pending.values():
            yield _unanswered(request)
        self._overtaken.clear()
        self._pending.clear()
        self._silent.clear()

    def _pop(self, correlation_id: int) -> KafkaMessage | None:
        request = self._pending.pop(correlation_id, None) or self._overtaken.pop(correlation_id, None)
        self._silent.pop(correlation_id, None)
        return request


def _unanswered(request: KafkaMessage | None) -> Exchange:
    assert request is not None
    status = "unanswered" if expects_response(request) else "no_response_expected"
    return Exchange(request.conn_id, request, None, status)
