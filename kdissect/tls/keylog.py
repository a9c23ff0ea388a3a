"""Key material in the NSS key log format (what ``SSLKEYLOGFILE`` and ``editcap --inject-secrets`` hold).

Each line is ``LABEL <client_random hex> <secret hex>``; ``#`` lines are comments. A key log may
hold thousands of sessions, so lines are indexed by client random (one dict lookup per handshake),
and it is untrusted input like a capture: junk lines are counted, not fatal, and the number of
sessions kept is bounded. Fed with text as it arrives (a file read once, a file followed as clients
append to it, a pcapng Decryption Secrets Block), so a partial last line waits for its end.

The secrets never leave this object and :mod:`kdissect.tls`: ``repr`` shows counts only, and no
event carries a byte of them.
"""

from __future__ import annotations

from collections.abc import Iterator

TLS12_MASTER = "CLIENT_RANDOM"
CLIENT_HANDSHAKE = "CLIENT_HANDSHAKE_TRAFFIC_SECRET"
SERVER_HANDSHAKE = "SERVER_HANDSHAKE_TRAFFIC_SECRET"
CLIENT_TRAFFIC = "CLIENT_TRAFFIC_SECRET_0"
SERVER_TRAFFIC = "SERVER_TRAFFIC_SECRET_0"
LABELS = frozenset({TLS12_MASTER, CLIENT_HANDSHAKE, SERVER_HANDSHAKE, CLIENT_TRAFFIC, SERVER_TRAFFIC,
                    "EXPORTER_SECRET", "CLIENT_EARLY_TRAFFIC_SECRET", "EARLY_EXPORTER_SECRET"})  # fmt: skip
RANDOM_BYTES = 32
SECRET_BYTES = (32, 48)  # SHA-256 and SHA-384 suites (a TLS 1.2 master secret is 48 bytes)
MAX_SESSIONS = 1_000_000  # ~200 bytes each: a key log past this is cut (counted in ``dropped``)
MAX_LINE = 1024  # a longer "line" is junk; its bytes are skipped up to the next newline


class KeyLog:
    """Secrets by client random, from key log text fed in any pieces."""

    __slots__ = ("_partial", "_sessions", "_skipping", "dropped", "junk_lines", "lines", "version")

    def __init__(self, text: bytes | str = b"") -> None:
        self._sessions: dict[bytes, dict[str, bytes]] = {}
        self._partial = b""
        self._skipping = False  # inside an over-long line
        self.lines = 0  # key lines kept
        self.junk_lines = 0  # lines that are neither comments nor key lines
        self.dropped = 0  # key lines past MAX_SESSIONS
        self.version = 0  # changes whenever a key line is added (for connections waiting on a key)
        if text:
            self.feed(text)
            self.close()

    def __repr__(self) -> str:
        return f"KeyLog(sessions={len(self._sessions)}, junk_lines={self.junk_lines}, dropped={self.dropped})"

    def __len__(self) -> int:
        return len(self._sessions)

    def feed(self, text: bytes | str) -> None:
        """More key log text; complete lines are indexed, a trailing partial line waits."""
        data = self._partial + (text.encode("utf-8", "replace") if isinstance(text, str) else text)
        lines = data.split(b"\n")
        self._partial = lines.pop()
        for line in lines:
            if self._skipping:
                self._skipping = False
                continue
            self._line(line)
        if len(self._partial) > MAX_LINE:
            self.junk_lines += 1
            self._partial = b""
            self._skipping = True

    def close(self) -> None:
        """The text is complete: a last line without a newline counts too."""
        if self._partial and not self._skipping:
            self._line(self._partial)
        self._partial = b""
        self._skipping = False

    def _line(self, raw: bytes) -> None:
        line = raw.strip()
        if not line or line.startswith(b"#"):
            return
        parts = line.split()
        try:
            label = parts[0].decode("ascii")
            client_random = bytes.fromhex(parts[1].decode("ascii"))
            secret = bytes.fromhex(parts[2].decode("ascii"))
        except (IndexError, ValueError, UnicodeDecodeError):
            self.junk_lines += 1
            return
        well_formed = len(parts) == 3 and label in LABELS and len(client_random) == RANDOM_BYTES
        if not well_formed or len(secret) not in SECRET_BYTES:
            self.junk_lines += 1
            return
        session = self._sessions.get(client_random)
        if session is None:
            if len(self._sessions) >= MAX_SESSIONS:
                self.dropped += 1
                return
            session = self._sessions[client_random] = {}
        session[label] = secret
        self.lines += 1
        self.version += 1

    def secret(self, client_random: bytes, label: str) -> bytes | None:
        session = self._sessions.get(client_random)
        return None if session is None else session.get(label)

    def traffic_secrets(self, skip: set[bytes] | frozenset[bytes] = frozenset()) -> Iterator[tuple[bytes, str, bytes]]:
        """(client random, label, secret) of every TLS 1.3 application traffic secret, oldest first
        (a trial decryption's candidates: the connections still open when a capture starts are the
        long-lived ones, whose keys were logged first), except the sessions in ``skip``."""
        for client_random, session in self._sessions.items():
            if client_random in skip:
                continue
            for label in (CLIENT_TRAFFIC, SERVER_TRAFFIC):
                secret = session.get(label)
                if secret is not None:
                    yield client_random, label, secret
