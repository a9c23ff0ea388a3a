"""Trial decryption: TLS 1.3 connections whose handshake the capture does not hold.

A TLS 1.3 key log line holds a traffic secret but not which connection it belongs to, nor how many
records that connection had sent before the capture started (the record sequence number, which
the nonce mixes in). AEAD authentication proves a guess, so a direction's first records are tried
against the key log's application traffic secrets with sequence numbers searched in a window that
grows as records arrive (0-63 first, then four times wider each time, up to ``max_seq``). A match
is certain (a false 128-bit tag match is out of reach) and gives the connection's session, so the
other direction then only tries that session's other secret.

TLS 1.2 cannot be done this way: its record keys come from the master secret *and* both hello
randoms, which only the handshake carries. The cost is bounded by a budget of attempts per
connection and per run (one attempt is one record open, a few microseconds for a small record).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import field

from kdissect.dataclass import dataclass
from kdissect.tls.ciphers import TLS13_SUITES, RecordCipher, Suite
from kdissect.tls.keys import tls13_cipher
from kdissect.tls.records import APPLICATION_DATA, Record

FIRST_WINDOW = 64
GROWTH = 4
PROBES = 8  # the first records of a direction, among which the smallest is the one tried
HOLD_BYTES = 1 << 20  # records held per direction while its key is searched for...
RUN_HOLD_BYTES = 64 << 20  # ...and by all directions of the run together (past it, only a first probe each)
MAX_CACHED = 65_536  # derived trial ciphers kept for the run (two HKDF expansions each)

Candidate = tuple[bytes, str, bytes]  # (client random, key log label, secret)


@dataclass(slots=True)
class TrialRun:
    """The run's side of trial decryption: its budget and the ciphers derived from the key log."""

    per_connection: int
    per_run: int
    max_seq: int
    spent: int = 0
    held: int = 0  # record bytes all directions hold for their search
    # Sessions another connection of the run was decrypted with (its handshake, or a trial): they
    # are no candidates, so a capture's own handshakes narrow the search for the others.
    claimed: set[bytes] = field(default_factory=set)
    _ciphers: dict[tuple[bytes, str, int], RecordCipher] = field(default_factory=dict)

    def __repr__(self) -> str:  # the cache holds keys
        return f"TrialRun(spent={self.spent}, per_connection={self.per_connection}, per_run={self.per_run})"

    def cipher(self, candidate: Candidate, suite: Suite) -> RecordCipher:
        client_random, label, secret = candidate
        key = (client_random, label, suite.code)
        cached = self._ciphers.get(key)
        if cached is None:
            cached = tls13_cipher(suite, secret)
            if len(self._ciphers) < MAX_CACHED:
                self._ciphers[key] = cached
        return cached


@dataclass(frozen=True, slots=True)
class Found:
    candidate: Candidate = field(repr=False)  # holds the secret
    suite: Suite
    first_seq: int  # the sequence number of the direction's first held record


class Allowance:
    """One connection's share of the budget (both directions draw on it)."""

    __slots__ = ("left", "run")

    def __init__(self, run: TrialRun) -> None:
        self.run = run
        self.left = run.per_connection

    def spend(self, n: int = 1) -> int:
        """Up to ``n`` attempts, as many as the budgets allow (0 once spent)."""
        granted = max(0, min(n, self.left, self.run.per_run - self.run.spent))
        self.left -= granted
        self.run.spent += granted
        return granted

    @property
    def exhausted(self) -> bool:
        return self.left <= 0 or self.run.spent >= self.run.per_run


class DirectionTrial:
    """One direction's held records and how far its search went."""

    __slots__ = ("count", "dropped", "held", "held_bytes", "run", "tried_hi")

    def __init__(self, run: TrialRun) -> None:
        self.run = run
        self.held: list[tuple[int, Record]] = []  # (index in the direction, record)
        self.held_bytes = 0
        self.count = 0  # records seen
        self.dropped = 0
        self.tried_hi = 0  # every first_seq below this was tried against every candidate

    def add(self, record: Record) -> None:
        if record.content_type == APPLICATION_DATA:
            if self.held and self.run.held + len(record.fragment) > RUN_HOLD_BYTES:
                self.dropped += 1  # the run holds enough: this direction searches with what it has
            else:
                self.held.append((self.count, record))
                self._hold(len(record.fragment))
            while len(self.held) > PROBES and self.held_bytes > HOLD_BYTES:
                _, old = self.held.pop(PROBES)  # the probes stay; the oldest of the rest goes
                self._hold(-len(old.fragment))
                self.dropped += 1
        self.count += 1

    def release(self) -> list[tuple[int, Record]]:
        """The held records, no longer counted against the run's bound."""
        held, self.held = self.held, []
        self._hold(-self.held_bytes)
        return held

    def _hold(self, n: int) -> None:
        self.held_bytes += n
        self.run.held += n

    def search(self, candidates: Iterable[Candidate], allowance: Allowance, max_seq: int,
               final: bool = False) -> Found | None:  # fmt: skip
        """Widen the window once (``final``: until ``max_seq`` or the budget) and try it."""
        if not self.held:
            return None
        index, probe = min(self.held[:PROBES], key=lambda held: len(held[1].fragment))
        pool = list(candidates)
        while self.tried_hi < max_seq and not allowance.exhausted:
            hi = min(max_seq, max(FIRST_WINDOW, self.tried_hi * GROWTH))
            found = self._window(pool, probe, index, self.tried_hi, hi, allowance)
            if found is not None:
                return found
            if not allowance.exhausted:
                self.tried_hi = hi
            if not final:
                break
        return None

    def _window(self, pool: list[Candidate], probe: Record, index: int, lo: int, hi: int,
                allowance: Allowance) -> Found | None:  # fmt: skip
        for candidate in pool:
            for suite in TLS13_SUITES:
                if suite.hash_len != len(candidate[2]):
                    continue
                cipher = allowance.run.cipher(candidate, suite)
                granted = allowance.spend(hi - lo)
                seq = cipher.first_opening(range(lo + index, lo + index + granted), probe.version, probe.fragment)
                if seq is not None:
                    return Found(candidate, suite, seq - index)
                if granted < hi - lo:
                    return None
        return None
