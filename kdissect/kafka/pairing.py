"""Pair requests with responses by correlation id, per connection.

Kafka answers requests on a connection in order, each response echoing its request's
correlation id. The response body can only be decoded once its request's api key and
version are known, so pairing also tells the decoder what to expect.

Produce requests with acks=0 expect no answer, but some brokers (tansu) send one anyway.
They are held like other requests and settled as ``no_response_expected`` once a later
request is answered (answers come in order, so theirs will not come), when too many pile up,
or at the end of the connection; an answer that does come pairs with them instead of being
reported as an orphan.
"""

from __future__ import annotations

from collections.abc import Iterator

from kdissect.decoders import apis
from kdissect.events import Exchange, KafkaMessage

_SILENT_IF_ACKS0 = apis.keys_with(apis.SILENT_IF_ACKS0)
MAX_SILENT = 256  # acks=0 requests held for a possible answer; older ones are settled


def expects_response(request: KafkaMessage) -> bool:
    """Produce with acks=0 is the one request the broker never answers."""
    return not (request.api_key in _SILENT_IF_ACKS0 and request.body is not None and request.body.get("acks") == 0)


class Pairer:
    """Outstanding requests of one connection, oldest first."""

    def __init__(self) -> None:
        self._pending: dict[int, KafkaMessage] = {}
        self._silent = 0  # how many of the pending requests are acks=0 Produce requests

    def __contains__(self, correlation_id: int) -> bool:
        return correlation_id in self._pending

    def request_for(self, correlation_id: int) -> KafkaMessage | None:
        return self._pending.get(correlation_id)

    def add_request(self, request: KafkaMessage) -> list[Exchange]:
        """Register a request; returns exchanges it completes or supersedes."""
        cid = request.correlation_id
        assert cid is not None
        out: list[Exchange] = []
        old = self._pop(cid)
        if old is not None:  # the id was reused before an answer came: the old one never got one
            out.append(_unanswered(old))
        self._pending[cid] = request
        if not expects_response(request):
            self._silent += 1
            if self._silent > MAX_SILENT:
                oldest = next(c for c, r in self._pending.items() if not expects_response(r))
                out.append(_unanswered(self._pop(oldest)))
        return out

    def take(self, correlation_id: int) -> tuple[KafkaMessage | None, bool, list[Exchange]]:
        """Remove and return the request a response answers, whether it overtook older requests
        that expect an answer, and the older acks=0 requests this answer settles."""
        if correlation_id not in self._pending:
            return None, False, []
        settled: list[Exchange] = []
        overtook = False
        for cid in list(self._pending):  # requests wait in arrival order
            if cid == correlation_id:
                break
            if expects_response(self._pending[cid]):
                overtook = True
            else:
                settled.append(_unanswered(self._pop(cid)))
        return self._pop(correlation_id), overtook, settled

    def drain(self) -> Iterator[Exchange]:
        """End of the connection: whatever is still outstanding was never answered."""
        for request in self._pending.values():
            yield _unanswered(request)
        self._pending.clear()
        self._silent = 0

    def _pop(self, correlation_id: int) -> KafkaMessage | None:
        request = self._pending.pop(correlation_id, None)
        if request is not None and not expects_response(request):
            self._silent -= 1
        return request


def _unanswered(request: KafkaMessage | None) -> Exchange:
    assert request is not None
    status = "unanswered" if expects_response(request) else "no_response_expected"
    return Exchange(request.conn_id, request, None, status)
