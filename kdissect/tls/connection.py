"""One TCP connection through the TLS stage: a :class:`~kdissect.reassembly.streams.RunSink` that
reads TLS records per direction, follows the handshake, decrypts with keys from the key log, and
feeds the plaintext to the sink it wraps (Kafka framing) with plaintext offsets.

How a connection is decrypted ends up in its summary (``decryption``):

- ``handshake``: the hellos were captured and the key log held the session's secrets.
- ``trial``: TLS 1.3 picked up after its handshake, its session found by trial (:mod:`.trial`).
- ``no key``: the handshake was captured, the key log holds nothing for it (or no key log).
- ``no handshake``: picked up after the handshake and no trial succeeded (TLS 1.2 never can).
- ``failed``: keys were found but records did not authenticate (a wrong or damaged key log).

A connection picked up mid-stream comes here once :mod:`.probe` found TLS records in it; its
readers hunt for the record boundary again from the first byte.

Records that cannot be decrypted become gaps of unknown plaintext length (reason
``undecrypted``), so framing resynchronises as it does after lost packets. Secrets stay here: the
events this emits carry names, counts and offsets only.
"""

from __future__ import annotations

from kdissect.dataclass import dataclass
from kdissect.events import Anomaly, ConnectionSummary
from kdissect.reassembly.streams import DirectionStats, RunSink, StreamConflict
from kdissect.tls import handshake as hs
from kdissect.tls.alerts import alert_text
from kdissect.tls.ciphers import SUITES, DecryptError, RecordCipher, Suite, suite_name
from kdissect.tls.keylog import (
    CLIENT_HANDSHAKE,
    CLIENT_TRAFFIC,
    SERVER_HANDSHAKE,
    SERVER_TRAFFIC,
    TLS12_MASTER,
    KeyLog,
)
from kdissect.tls.keys import next_secret, tls12_ciphers, tls13_cipher
from kdissect.tls.records import (
    ALERT,
    APPLICATION_DATA,
    CHANGE_CIPHER_SPEC,
    HANDSHAKE,
    BadHeader,
    Record,
    RecordEvent,
    RecordReader,
    RecordsLost,
)
from kdissect.tls.trial import Allowance, Candidate, DirectionTrial, Found, TrialRun

# Anomaly kinds of this stage (described, for the reports, in report/terminal.py's registry).
NO_KEY, DECRYPT_ERROR, ALERT_KIND, MALFORMED = "tls_no_key", "tls_decrypt_error", "tls_alert", "tls_malformed"
CAP = "cap"  # a resource bound cut something (here: the trial decryption budget)
MAX_REPORTED = 8  # decrypt errors reported one by one per direction; the rest in one row at the end
SEEK = 256  # sequence numbers tried after records were lost with their boundary


@dataclass(slots=True)
class TlsInfo:
    """What the connections table shows of a TLS connection (names only, never key material)."""

    version: str | None = None
    suite: str | None = None
    sni: str | None = None
    alpn: str | None = None
    resumed: bool | None = None
    decryption: str | None = None


class _Direction:
    __slots__ = ("changed", "cipher", "dead", "errors", "finished", "gap_reason", "joiner", "midstream", "offset",
                 "pending", "reader", "secret", "seek", "started", "trial")  # fmt: skip

    def __init__(self, midstream: bool) -> None:
        self.reader = RecordReader(hunting=midstream)
        self.joiner = hs.MessageJoiner()
        self.cipher: RecordCipher | None = None
        self.pending: RecordCipher | None = None  # TLS 1.2: in force after this direction's CCS
        self.secret: bytes | None = None  # TLS 1.3: the current traffic secret (for KeyUpdate)
        self.finished = False  # this side's Finished was read (TLS 1.3: traffic keys from here)
        self.dead = False  # renegotiated: nothing more is decrypted
        self.changed = False  # TLS 1.2: this side sent its ChangeCipherSpec (encrypted from here, keys or not)
        self.midstream = midstream
        self.offset = 0  # plaintext offset of the next byte handed on
        self.started = False
        self.gap_reason: str | None = None  # a gap to hand on before the next plaintext
        self.seek = False  # records were lost with their boundary: the next sequence number is unknown
        self.errors = 0
        self.trial: DirectionTrial | None = None


class TlsConnection:
    """The TLS stage for one connection, wrapping the sink that reads its plaintext."""

    def __init__(self, conn_id: int, inner: RunSink, keylog: KeyLog, trials: TrialRun, *,
                 midstream: bool, report: bool) -> None:  # fmt: skip
        self.conn_id = conn_id
        self.inner = inner
        self.keylog = keylog
        self.trials = trials
        self.allowance = Allowance(trials)
        self.report = report  # on a broker port: "not decrypted" is worth an anomaly row
        self.dirs = (_Direction(midstream), _Direction(midstream))
        self.info = TlsInfo()
        self.client_dir: int | None = None
        self.client_hello: hs.Hello | None = None
        self.server_hello: hs.Hello | None = None
        self._looked_up = -1  # the key log's version when this session's keys were last looked for
        self.suite: Suite | None = None
        self.tls13 = False
        self.keyed = False  # the key log held this session's keys
        self.decrypted = 0  # records decrypted
        self.by_trial = False
        self.session: bytes | None = None  # the client random a trial matched
        self.established = False
        self._budget_reported = False

    # -- RunSink --------------------------------------------------------------------------
    def data(self, direction: int, offset: int, data: bytes, ts_ns: int) -> list:
        return self._records(direction, self.dirs[direction].reader.feed(offset, data, ts_ns))

    def gap(self, direction: int, offset: int, length: int | None, ts_ns: int, reason: str) -> list:
        return self._records(direction, self.dirs[direction].reader.gap(offset, length, ts_ns, reason))

    def conflict(self, ev: StreamConflict) -> list:
        """A retransmission that differs: in ciphertext it means nothing Kafka framing could use."""
        return []

    def end(self, ts_ns: int, reason: str, stats: tuple[DirectionStats, DirectionStats] | None = None) -> list:
        events: list = []
        for d, dr in enumerate(self.dirs):
            events.extend(self._records(d, dr.reader.finish(ts_ns)))
        events.extend(self._last_trials(ts_ns))
        events.extend(self._closing_anomalies(ts_ns))
        inner = self.inner.end(ts_ns, reason, stats)
        for ev in inner:
            if isinstance(ev, ConnectionSummary):
                self._fill(ev)
        return events + inner

    # -- records ----------------------------------------------------------------------------
    def _records(self, d: int, records: list[RecordEvent]) -> list:
        events: list = []
        for rec in records:
            if isinstance(rec, Record):
                events.extend(self._record(d, rec))
            elif isinstance(rec, RecordsLost):
                self._lost(d, rec)
            elif isinstance(rec, BadHeader):
                events.append(self._anomaly(MALFORMED, d, rec.offset, rec.ts_ns, rec.detail))
        return events

    def _record(self, d: int, rec: Record) -> list:
        dr = self.dirs[d]
        ct = rec.content_type
        if ct == CHANGE_CIPHER_SPEC:
            if not self.tls13:
                dr.cipher, dr.pending = (None if dr.dead else dr.pending), None
                dr.changed = True
            return []
        if dr.cipher is None:
            if dr.changed:  # TLS 1.2 after this side's ChangeCipherSpec: encrypted, alerts too
                return self._undecrypted(d, rec)
            if ct == HANDSHAKE:
                return self._handshake(d, rec.fragment, rec)
            if ct == ALERT:
                return self._alert(d, rec.fragment, rec)
            return self._undecrypted(d, rec)
        opened = self._open(d, rec)
        if opened is None and self.tls13 and not dr.finished and self.keyed:
            # This side's Finished went by unread (its keys came late): its records may be under
            # its application traffic secret already.
            dr.finished = True
            self._traffic_keys(d)
            dr.seek = True
            opened = None if dr.cipher is None else self._open(d, rec)
        if opened is None:
            return self._decrypt_error(d, rec)
        inner_type, plain = opened
        self.decrypted += 1
        if inner_type == APPLICATION_DATA:
            return self._deliver(d, plain, rec.ts_ns)
        if inner_type == HANDSHAKE:
            return self._handshake(d, plain, rec)
        if inner_type == ALERT:
            return self._alert(d, plain, rec)
        return []

    def _open(self, d: int, rec: Record) -> tuple[int, bytes] | None:
        dr = self.dirs[d]
        cipher = dr.cipher
        assert cipher is not None
        if not dr.seek:
            try:
                return cipher.open(rec.content_type, rec.version, rec.fragment)
            except DecryptError:
                return None
        base = cipher.seq
        for seq in range(base, base + SEEK):
            if not self.allowance.spend():
                break
            cipher.seq = seq
            try:
                opened = cipher.open(rec.content_type, rec.version, rec.fragment)
            except DecryptError:
                continue
            dr.seek = False
            return opened
        cipher.seq = base + 1
        return None

    def _lost(self, d: int, rec: RecordsLost) -> None:
        dr = self.dirs[d]
        if dr.started:
            dr.gap_reason = dr.gap_reason or rec.reason
        if dr.trial is not None:
            dr.trial.release()  # the records before the hole are no use once it is there
            dr.trial = DirectionTrial(self.trials)
        if dr.cipher is not None:
            if rec.count is None:
                dr.seek = True
            else:
                dr.cipher.seq += rec.count

    def _deliver(self, d: int, plain: bytes, ts_ns: int) -> list:
        dr = self.dirs[d]
        events: list = []
        if not plain:
            return events
        if not dr.started:
            dr.started = True
            if dr.midstream:
                events.extend(self.inner.gap(d, 0, None, ts_ns, "midstream"))
        if dr.gap_reason is not None:
            events.extend(self.inner.gap(d, dr.offset, None, ts_ns, dr.gap_reason))
            dr.gap_reason = None
        events.extend(self.inner.data(d, dr.offset, plain, ts_ns))
        dr.offset += len(plain)
        return events

    def _decrypt_error(self, d: int, rec: Record) -> list:
        dr = self.dirs[d]
        dr.errors += 1
        if dr.started:
            dr.gap_reason = "undecrypted"
        if dr.errors > MAX_REPORTED:
            return []
        return [self._anomaly(DECRYPT_ERROR, d, rec.offset, rec.ts_ns,
                              f"a {len(rec.fragment)}-byte record did not authenticate with the key log's keys")]

    def _undecrypted(self, d: int, rec: Record) -> list:
        """An encrypted record with no key in force: trial decryption, or nothing to do."""
        dr = self.dirs[d]
        if dr.started:
            dr.gap_reason = "undecrypted"
        if self.client_hello is not None:
            # The handshake was seen and its keys were not in the key log. A followed key log
            # (live) may have them by now: the first encrypted record of a side still can be read.
            if self.server_hello is not None and not self.keyed and self.keylog.version != self._looked_up:
                self._keys()
                dr.cipher = dr.cipher or (dr.pending if dr.changed else None)
                if dr.cipher is not None:
                    dr.seek = True  # records of this side may have gone by without a key
                    return self._record(d, rec)
            return []
        if dr.trial is None:
            if self._budget_reported:
                return []  # the search gave up: nothing is held any more
            dr.trial = DirectionTrial(self.trials)
        dr.trial.add(rec)
        return self._try(d, final=False, ts_ns=rec.ts_ns)

    # -- trial decryption -------------------------------------------------------------------
    def _candidates(self, d: int) -> list[Candidate]:
        if self.session is None:
            return list(self.keylog.traffic_secrets(skip=self.trials.claimed))
        label = CLIENT_TRAFFIC if d == self.client_dir else SERVER_TRAFFIC
        secret = self.keylog.secret(self.session, label)
        return [] if secret is None else [(self.session, label, secret)]

    def _try(self, d: int, final: bool, ts_ns: int) -> list:
        trial = self.dirs[d].trial
        assert trial is not None
        candidates = self._candidates(d)
        if not candidates:
            return []
        found = trial.search(candidates, self.allowance, self.trials.max_seq, final=final)
        if found is not None:
            return self._adopt(d, found)
        if self.allowance.exhausted:
            for dr in self.dirs:
                if dr.trial is not None:
                    dr.trial.release()
                    dr.trial = None
            return self._budget_spent(d, ts_ns)
        return []

    def _adopt(self, d: int, found: Found) -> list:
        """A trial authenticated: this direction decrypts from its first held record on."""
        dr = self.dirs[d]
        client_random, label, secret = found.candidate
        self.by_trial = True
        self.session = client_random
        self.trials.claimed.add(client_random)
        self.suite = found.suite
        self.tls13 = True
        if self.client_dir is None:
            self.client_dir = d if label == CLIENT_TRAFFIC else 1 - d
        dr.secret = secret
        dr.finished = True
        trial = dr.trial
        assert trial is not None
        dr.trial = None
        dr.cipher = tls13_cipher(found.suite, secret)
        events: list = []
        previous = None
        held = trial.release()
        for index, rec in held:
            if previous is not None and index != previous + 1 and dr.started:
                dr.gap_reason = "undecrypted"  # records dropped while the key was searched for
            previous = index
            dr.cipher.seq = found.first_seq + index
            events.extend(self._record(d, rec))
        other = self.dirs[1 - d]
        if other.trial is not None and other.cipher is None:
            events.extend(self._try(1 - d, final=False, ts_ns=held[-1][1].ts_ns))
        return events

    def _last_trials(self, ts_ns: int) -> list:
        events: list = []
        for d, dr in enumerate(self.dirs):
            if dr.trial is not None and dr.cipher is None:
                events.extend(self._try(d, final=True, ts_ns=ts_ns))
            if dr.trial is not None:
                dr.trial.release()
                dr.trial = None
        return events

    def _budget_spent(self, d: int, ts_ns: int) -> list:
        if self._budget_reported:
            return []
        self._budget_reported = True
        run = self.trials
        return [self._anomaly(CAP, d, None, ts_ns,
                              f"trial decryption gave up: the budget of {run.per_connection} attempts per connection "
                              f"and {run.per_run} per run was spent")]  # fmt: skip

    # -- handshake --------------------------------------------------------------------------
    def _handshake(self, d: int, data: bytes, rec: Record) -> list:
        try:
            messages = self.dirs[d].joiner.feed(data)
            events: list = []
            for kind, body in messages:
                events.extend(self._message(d, kind, body, rec))
            return events
        except hs.HandshakeError as exc:
            return [self._anomaly(MALFORMED, d, rec.offset, rec.ts_ns, f"handshake message: {exc}")]

    def _message(self, d: int, kind: int, body: bytes, rec: Record) -> list:
        dr = self.dirs[d]
        if kind in (hs.CLIENT_HELLO, hs.HELLO_REQUEST) and self.established:
            return self._renegotiation(d, rec)
        if kind == hs.CLIENT_HELLO:
            if self.client_hello is None:
                self.client_hello = hs.client_hello(body)
                self.client_dir = d
                self.info.sni = self.client_hello.sni
        elif kind == hs.SERVER_HELLO and self.client_hello is not None:
            hello = hs.server_hello(body)
            if not hello.retry:
                return self._server_hello(hello, rec)
        elif kind == hs.ENCRYPTED_EXTENSIONS:
            alpn = hs.encrypted_extensions(body)
            self.info.alpn = alpn[0] if alpn else None
        elif kind == hs.FINISHED:
            dr.finished = True
            if self.tls13 and self.keyed:
                self._traffic_keys(d)
            self.established = all(x.finished for x in self.dirs)
        elif kind == hs.KEY_UPDATE and self.tls13 and dr.secret is not None and self.suite is not None:
            dr.secret = next_secret(self.suite, dr.secret)
            dr.cipher = tls13_cipher(self.suite, dr.secret)
        return []

    def _server_hello(self, hello: hs.Hello, rec: Record) -> list:
        client = self.client_hello
        assert client is not None and self.client_dir is not None
        self.info.version = hs.VERSION_NAMES.get(hello.version, f"0x{hello.version:04X}")
        self.info.suite = suite_name(hello.suites[0])
        self.tls13 = hello.version == hs.TLS13
        if self.tls13:
            self.info.resumed = hello.psk
        else:
            self.info.resumed = bool(client.session_id) and hello.session_id == client.session_id
            if hello.alpn:
                self.info.alpn = hello.alpn[0]
        suite = SUITES.get(hello.suites[0])
        server = 1 - self.client_dir
        if suite is None or suite.tls13 != self.tls13 or hello.version not in (hs.TLS12, hs.TLS13):
            return [self._anomaly(DECRYPT_ERROR, server, rec.offset, rec.ts_ns,
                                  f"{self.info.version} with {self.info.suite} is not decrypted (unsupported)")]
        self.suite = suite
        self.server_hello = hello
        self._keys()
        return []

    def _keys(self) -> None:
        """The session's record ciphers, if the key log has its secrets."""
        client, hello, suite = self.client_hello, self.server_hello, self.suite
        assert client is not None and hello is not None and suite is not None and self.client_dir is not None
        self._looked_up = self.keylog.version
        server = 1 - self.client_dir
        cr = client.random
        if self.tls13:
            c_secret = self.keylog.secret(cr, CLIENT_HANDSHAKE)
            s_secret = self.keylog.secret(cr, SERVER_HANDSHAKE)
            if c_secret is None or s_secret is None:
                return
            self.keyed = True
            self.trials.claimed.add(cr)
            for d, secret in ((self.client_dir, c_secret), (server, s_secret)):
                self.dirs[d].cipher = tls13_cipher(suite, secret)
            return
        master = self.keylog.secret(cr, TLS12_MASTER)
        if master is None:
            return
        self.keyed = True
        self.trials.claimed.add(cr)
        etm = client.etm and hello.etm and suite.mode == "cbc"
        c_cipher, s_cipher = tls12_ciphers(suite, master, cr, hello.random, etm)
        self.dirs[self.client_dir].pending = c_cipher
        self.dirs[server].pending = s_cipher

    def _traffic_keys(self, d: int) -> None:
        """TLS 1.3: after a side's Finished, its records use its application traffic secret."""
        assert self.client_hello is not None and self.suite is not None
        label = CLIENT_TRAFFIC if d == self.client_dir else SERVER_TRAFFIC
        secret = self.keylog.secret(self.client_hello.random, label)
        dr = self.dirs[d]
        dr.secret = secret
        dr.cipher = None if secret is None else tls13_cipher(self.suite, secret)

    def _renegotiation(self, d: int, rec: Record) -> list:
        """Renegotiation is not followed (Kafka brokers refuse it): what comes after its change of
        keys is reported undecrypted."""
        for dr in self.dirs:
            dr.dead = True
        return [self._anomaly(DECRYPT_ERROR, d, rec.offset, rec.ts_ns,
                              "TLS renegotiation: records after it are not decrypted")]

    def _alert(self, d: int, body: bytes, rec: Record) -> list:
        if len(body) < 2:
            return [self._anomaly(MALFORMED, d, rec.offset, rec.ts_ns, f"an alert of {len(body)} bytes")]
        level, description = body[0], body[1]
        if description == 0:  # close_notify: the normal end
            return []
        return [self._anomaly(ALERT_KIND, d, rec.offset, rec.ts_ns, alert_text(level, description))]

    # -- the end ----------------------------------------------------------------------------
    def _decryption(self) -> str:
        if self.decrypted:
            return "trial" if self.by_trial else "handshake"
        if self.keyed:
            return "failed"
        if self.client_hello is not None or not len(self.keylog):
            return "no key"
        return "no handshake"

    def _closing_anomalies(self, ts_ns: int) -> list:
        events: list = []
        for d, dr in enumerate(self.dirs):
            if dr.errors > MAX_REPORTED:
                events.append(self._anomaly(DECRYPT_ERROR, d, None, ts_ns,
                                            f"{dr.errors - MAX_REPORTED} more records did not authenticate"))
        status = self._decryption()
        if self.report and status in ("no key", "no handshake"):
            why = ("the key log holds no secret for this session" if status == "no key" and self.client_hello
                   else "no key log was given" if status == "no key"
                   else "its handshake was not captured and no key log secret decrypted it by trial")
            events.append(self._anomaly(NO_KEY, self.client_dir, None, ts_ns, f"TLS connection not decrypted: {why}"))
        return events

    def _fill(self, summary: ConnectionSummary) -> None:
        info = self.info
        info.decryption = self._decryption()
        if self.by_trial and self.suite is not None:
            info.version, info.suite = "TLS 1.3", self.suite.name
        summary.encrypted = True
        summary.tls_version, summary.cipher_suite = info.version, info.suite
        summary.sni, summary.alpn, summary.tls_resumed = info.sni, info.alpn, info.resumed
        summary.decryption = info.decryption

    def _anomaly(self, kind: str, d: int | None, offset: int | None, ts_ns: int, detail: str) -> Anomaly:
        role = None if d is None or self.client_dir is None else ("request" if d == self.client_dir else "response")
        return Anomaly(kind, self.conn_id, role, offset, None, ts_ns, detail)
