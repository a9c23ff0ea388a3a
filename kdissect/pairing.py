"""Pair requests with responses by correlation id, per connection.

Kafka answers requests on a connection in order, each response echoing its request's
correlation id. The response body can only be decoded once its request's api key and
version are known, so pairing also tells the decoder what to expect.
"""

from __future__ import annotations

from collections.abc import Iterator

from .events import Exchange, KafkaMessage

PRODUCE = 0


def expects_response(request: KafkaMessage) -> bool:
    """Produce with acks=0 is the one request the broker never answers."""
    return not (request.api_key == PRODUCE and request.body is not None and request.body.get("acks") == 0)


class Pairer:
    """Outstanding requests of one connection, oldest first."""

    def __init__(self) -> None:
        self._pending: dict[int, KafkaMessage] = {}

    def __contains__(self, correlation_id: int) -> bool:
        return correlation_id in self._pending

    def request_for(self, correlation_id: int) -> KafkaMessage | None:
        return self._pending.get(correlation_id)

    def add_request(self, request: KafkaMessage) -> list[Exchange]:
        """Register a decoded request; returns exchanges it completes or supersedes."""
        out: list[Exchange] = []
        if not expects_response(request):
            out.append(Exchange(request.conn_id, request, None, "no_response_expected"))
            return out
        cid = request.correlation_id
        assert cid is not None
        old = self._pending.pop(cid, None)
        if old is not None:  # the id was reused before an answer came: the old one never got one
            out.append(Exchange(old.conn_id, old, None, "unanswered"))
        self._pending[cid] = request
        return out

    def take(self, correlation_id: int) -> tuple[KafkaMessage | None, bool]:
        """Remove and return the request a response answers, and whether it overtook older ones."""
        if correlation_id not in self._pending:
            return None, False
        overtook = next(iter(self._pending)) != correlation_id  # requests wait in arrival order
        return self._pending.pop(correlation_id), overtook

    def drain(self) -> Iterator[Exchange]:
        """End of the connection: whatever is still outstanding was never answered."""
        for request in self._pending.values():
            yield Exchange(request.conn_id, request, None, "unanswered")
        self._pending.clear()
