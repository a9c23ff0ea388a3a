"""The lifecycle of one connection seen as Kafka, as rules in one place (as h11 keeps its states).

``PROBING``: the roles are unknown (no broker port); bytes are searched for a Kafka request.
``KAFKA``: the roles are known (a broker port, or a proven request); frames are decoded and paired.
``SASL_RAW``: after an accepted SaslHandshake v0, bare size-prefixed SASL tokens travel until a
frame decodes as a Kafka request again (back to ``KAFKA``).
``NOT_KAFKA``: probing found no Kafka request within the probe limit: nothing more is read.
``CLOSED``: the TCP connection ended; its summary has been emitted.
"""

from __future__ import annotations

from enum import Enum


class State(Enum):
    PROBING = "probing"
    KAFKA = "kafka"
    SASL_RAW = "sasl-raw"
    NOT_KAFKA = "not-kafka"
    CLOSED = "closed"


# Where each state may go next; staying put is always allowed.
RULES: dict[State, frozenset[State]] = {
    State.PROBING: frozenset({State.KAFKA, State.NOT_KAFKA, State.CLOSED}),
    State.KAFKA: frozenset({State.SASL_RAW, State.CLOSED}),
    State.SASL_RAW: frozenset({State.KAFKA, State.CLOSED}),
    State.NOT_KAFKA: frozenset({State.CLOSED}),
    State.CLOSED: frozenset(),
}
# States in which no more bytes are decoded.
FINAL = frozenset({State.NOT_KAFKA, State.CLOSED})


class Lifecycle:
    """The current state of one connection; every change goes through :meth:`move`."""

    __slots__ = ("state",)

    def __init__(self, state: State = State.PROBING) -> None:
        self.state = state

    def move(self, to: State) -> None:
        if to is not self.state:
            assert to in RULES[self.state], f"no transition {self.state.value} -> {to.value}"
            self.state = to

    @property
    def done(self) -> bool:
        return self.state in FINAL
