"""The SASL side of one connection: which mechanism, who logged in, whether it worked, how often.

Fed every exchange of its connection (and, after a SaslHandshake v0, the bare tokens), it swaps
each SaslAuthenticate ``auth_bytes`` for its decoded, redacted view (:mod:`kdissect.decoders.sasl`)
and drops the frame's bytes, so no later stage (tables, show, reports, live, Spark) ever holds a
password, proof or token signature. Pure: no I/O.

Outcome rules: a non-zero error code in SaslHandshake/SaslAuthenticate, or a failure the token
itself reports (SCRAM ``e=``, an OAUTHBEARER error), is ``failed``; the server's final token of a
success (SCRAM ``v=``, PLAIN's or OAUTHBEARER's empty answer), or any other request answered after
authentication began (brokers answer nothing else before it succeeds), is ``ok``; a connection
that ends between the two is ``incomplete``. A SaslHandshake after a finished authentication is a
re-authentication (KIP-368).
"""

from __future__ import annotations

from kdissect.decoders import api as decode_api
from kdissect.decoders import apis
from kdissect.decoders.error_codes import error_name
from kdissect.decoders.sasl import Token, decode_token, guess_mechanism, redacted
from kdissect.decoders.sasl.token import MAX_TOKEN
from kdissect.events import Exchange, KafkaMessage, SaslFacts

SASL_HANDSHAKE = apis.key_of("SaslHandshake")
SASL_AUTHENTICATE = apis.key_of("SaslAuthenticate")
SASL_APIS = frozenset({SASL_HANDSHAKE, SASL_AUTHENTICATE})
NOT_KEPT = "bytes not kept: SASL tokens may hold credentials"
_HEADROOM = 64  # a SaslAuthenticate answer's fields around its token, at most (error, message length, lifetime)


def withheld(size: int) -> str:
    """The warning of a frame whose bytes were not kept because they could be a SASL token."""
    return f"could be a SASL token: {redacted(size)}"


def answer_fits_sasl(data: bytes, size: int) -> bool:
    """Whether a response no request explains could be a SaslAuthenticate answer (a SCRAM server
    signature, a server token): its captured bytes, completed with zeros to the frame's ``size`` when
    the snap length cut it, decode exactly as one at some version. Frames longer than any token the
    decoders read are not tried (no padding of a huge cut frame)."""
    if size > MAX_TOKEN + _HEADROOM:
        return False
    whole = data if len(data) >= size else data + bytes(size - len(data))
    low, high = apis.version_range(SASL_AUTHENTICATE, "response")
    return any(decode_api.frame_fits(whole, SASL_AUTHENTICATE, v, "response") for v in range(low, high + 1))


class SaslSession:
    """Tracks one connection's SASL exchanges; see the module's outcome rules."""

    def __init__(self) -> None:
        self.facts = SaslFacts()
        self._pending = False  # an authentication began and has no outcome yet

    @property
    def pending(self) -> bool:
        """An authentication began and has no outcome yet: any frame now may be a token."""
        return self._pending

    # -- exchanges ------------------------------------------------------------------------
    def exchange(self, ex: Exchange) -> None:
        """Redact and learn from one exchange leaving the connection (any API)."""
        first = ex.request or ex.response
        key = first.api_key if first is not None else None
        if key == SASL_HANDSHAKE:
            self._handshake(ex)
        elif key == SASL_AUTHENTICATE:
            self._authenticate(ex)
        elif self._pending and ex.response is not None and ex.response.body is not None:
            self._succeeded()

    def _begin(self) -> None:
        if self.facts.result is not None and not self._pending:
            self.facts.reauths += 1
            self.facts.principal = None
        self._pending = True
        self.facts.result = None
        self.facts.error = None

    def _handshake(self, ex: Exchange) -> None:
        self._begin()
        req, resp = ex.request, ex.response
        if req is not None and req.body is not None and req.body.get("mechanism"):
            self.facts.mechanism = str(req.body["mechanism"])
        code = resp.body.get("error_code") if resp is not None and resp.body is not None else None
        if code:
            self._failed(error_name(code))

    def _authenticate(self, ex: Exchange) -> None:
        if not self._pending:
            self._begin()  # the handshake is not in the capture
        req, resp = ex.request, ex.response
        token = self._redact(req, from_client=True) if req is not None else None
        if token is not None and token.user is not None:
            self.facts.user = token.user
        if resp is None:
            return
        reply = self._redact(resp, from_client=False)
        body = resp.body or {}
        if body.get("session_lifetime_ms"):
            self.facts.session_lifetime_ms = body["session_lifetime_ms"]
        code = body.get("error_code")
        if code:
            message = body.get("error_message")
            self._failed(f"{error_name(code)}: {message}" if message else error_name(code))
        elif reply is not None and reply.error is not None:
            ex.auth_error = f"{reply.mechanism}: {reply.error}"
            self._failed(ex.auth_error)
        elif reply is not None and reply.final:
            self._succeeded()

    def _redact(self, msg: KafkaMessage, from_client: bool) -> Token | None:
        """The message's token decoded in place of its bytes; its frame bytes dropped."""
        msg.raw = None
        if msg.body is None or not isinstance(msg.body.get("auth_bytes"), bytes):
            if msg.body is None:
                msg.warnings.append({"code": "sasl", "message": NOT_KEPT})
            return None
        token = self.token(msg.body["auth_bytes"], from_client)
        msg.body["auth_bytes"] = token.view()
        msg.warnings.extend({"code": "sasl", "message": w} for w in token.warnings)
        return token

    # -- v0: bare tokens ------------------------------------------------------------------
    def token(self, data: bytes, from_client: bool) -> Token:
        """One token (a SaslAuthenticate body's, or a bare v0 frame), decoded; a v0 token also
        decides the outcome, as a SaslAuthenticate exchange would."""
        self.facts.tokens += 1
        if self.facts.mechanism is None and from_client:
            self.facts.mechanism = guess_mechanism(data)
        return decode_token(self.facts.mechanism, data, from_client)

    def raw_token(self, data: bytes, from_client: bool) -> Token:
        """A bare v0 token: decoded, and what it says about the outcome kept."""
        if not self._pending:
            self._begin()
        token = self.token(data, from_client)
        if token.user is not None:
            self.facts.user = token.user
        if token.error is not None:
            self._failed(f"{token.mechanism}: {token.error}")
        elif token.final:
            self._succeeded()
        return token

    def cut_token(self) -> None:
        """A bare token cut by the snap length: counted; neither decoded nor kept (it may hold a secret)."""
        self.facts.tokens += 1

    # -- outcome --------------------------------------------------------------------------
    def _failed(self, error: str) -> None:
        self._pending = False
        self.facts.result = "failed"
        self.facts.error = error
        self.facts.principal = None

    def _succeeded(self) -> None:
        self._pending = False
        self.facts.result = "ok"
        self.facts.principal = self.facts.user

    def close(self) -> SaslFacts:
        """The connection ended: an authentication still waiting for its outcome is ``incomplete``."""
        if self._pending:
            self._pending = False
            self.facts.result = "incomplete"
        return self.facts
